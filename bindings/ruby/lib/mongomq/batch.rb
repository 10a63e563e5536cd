# frozen_string_literal: true

module MongoMQ
  # Events to publish together with Queue#publish_batch (3 server commands for the
  # whole batch). Not thread-safe while being filled. A batch may be published again
  # (new seqs) or closed; the GC closes it otherwise.
  class Batch
    include RawHandle # close, closed?

    def initialize
      @raw = Raw.mq_batch_new
    end

    # Adds an event, with Queue#publish's options and checks (the bytes are copied):
    # priority (0..4), not_before (a Time on the queue clock; nil: now). Returns self.
    def add(group, event, priority: 0, not_before: nil)
      Raw.mqs_batch_add_at(@raw, Check.group(group), Check.event(event), Check.integer(priority, :priority),
                           Check.optional_time(not_before, :not_before))
      self
    end

    # Events in the batch.
    def size
      Raw.mq_batch_count(@raw)
    end
    alias count size
  end
end
