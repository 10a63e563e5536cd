# frozen_string_literal: true

module MongoMQ
  # Events to publish together with Queue#publish_batch (3 server commands for the
  # whole batch). Not thread-safe while being filled. A batch may be published again
  # (new seqs) or closed; the GC closes it otherwise.
  class Batch
    include RawHandle # close, closed?

    def initialize
      @raw = Raw.mqs_batch_new
    end

    # Adds an event (checked as Queue#publish checks it; the bytes are copied).
    # Returns self.
    def add(group, event, priority: 0)
      Raw.mqs_batch_add(@raw, Check.group(group), Check.event(event), Check.integer(priority, :priority))
      self
    end

    # Events in the batch.
    def size
      Raw.mqs_batch_count(@raw)
    end
    alias count size
  end
end
