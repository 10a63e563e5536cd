# frozen_string_literal: true

module MongoMQ
  # Events to publish together with Queue#publish_batch or #publish_batch_with (3
  # server commands for the whole batch). Not thread-safe while being filled. A batch
  # may be published again (new seqs; a keyed event is then a duplicate of its first
  # publish) or closed; the GC closes it otherwise.
  class Batch
    include RawHandle # close, closed?

    def initialize
      @raw = Raw.mq_batch_new
      @keyed = false # some event has a dedup_key: a publish reads each event's outcome
    end

    # Adds an event, with Queue#publish's options and checks (the bytes are copied):
    # priority (0..4), not_before (a Time on the queue clock; nil: now), dedup_key (a
    # String; nil: none; of two events of one batch with one key, the later is the
    # duplicate), attrs (0.7.0: a Hash of Strings, the event's own; nil: none).
    # Returns self.
    def add(group, event, priority: 0, not_before: nil, dedup_key: nil, attrs: nil)
      key = Check.optional_text(dedup_key, :dedup_key)
      Raw.mqs_batch_add_at(@raw, Check.group(group), Check.event(event), Check.integer(priority, :priority),
                           Check.optional_time(not_before, :not_before), key.nil? ? 0 : 1, key, Check.attrs(attrs))
      @keyed = true unless key.nil?
      self
    end

    # Events in the batch.
    def size
      Raw.mq_batch_count(@raw)
    end
    alias count size

    # @api private: Queue#publish_batch_with's result from the shim's first seq
    # (negated when some event was a duplicate): with keys, each event's outcome as the
    # batch keeps it from this publish (mqs_batch_outcome).
    def published(first)
      n = size
      return PublishedBatch.new(first, n) unless @keyed

      PublishedBatch.new(first.abs, n, Array.new(n) { |i| Raw.mqs_batch_outcome(@raw, i) })
    end
  end
end
