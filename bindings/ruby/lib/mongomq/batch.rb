# frozen_string_literal: true

module MongoMQ
  # Events to publish together with Queue#publish_batch or #publish_batch_with (3
  # server commands for the whole batch). Not thread-safe while being filled. A batch
  # may be published again (new seqs; a keyed event is then a duplicate of its first
  # publish) or closed; the GC closes it otherwise. A queue with telemetry publishes a
  # copy of it whose events carry the trace context too (#injected).
  class Batch
    include RawHandle # close, closed?

    def initialize
      @raw = Raw.mq_batch_new
      @keyed = false # some event has a dedup_key: a publish reads each event's outcome
      @added = [] # each add's checked arguments, for #injected
    end

    # Adds an event, with Queue#publish's options and checks (the bytes are copied):
    # priority (0..4), not_before (a Time on the queue clock; nil: now), dedup_key (a
    # String; nil: none; of two events of one batch with one key, the later is the
    # duplicate), attrs (0.7.0: a Hash of Strings, the event's own; nil: none).
    # Returns self.
    def add(group, event, priority: 0, not_before: nil, dedup_key: nil, attrs: nil)
      key = Check.optional_text(dedup_key, :dedup_key)
      add_checked([Check.group(group), Check.event(event), Check.integer(priority, :priority),
                   Check.optional_time(not_before, :not_before), key], Check.attrs(attrs))
      self
    end

    # @api private (a queue with telemetry): yields a new batch of this one's events,
    # each with the trace context in `carrier` added to its attributes
    # (Check.with_injected), and closes it: the C batch cannot change an event once
    # added. ClosedError when this batch is closed.
    def injected(carrier)
      size # ClosedError on a closed batch, as its publish would be
      copy = Batch.new
      begin
        @added.each { |args, packed| copy.add_checked(args, Check.with_injected(packed, carrier)) }
        yield copy
      ensure
        copy.close
      end
    end

    # Frees the C batch (closing twice does nothing); a closed batch refuses every call.
    def close
      @added.clear
      super
    end

    # Events in the batch.
    def size
      Raw.mq_batch_count(@raw)
    end
    alias count size

    # @api private: adds an event of checked arguments [group, event, priority,
    # not_before seconds, dedup_key or nil] and packed attributes, and keeps them (the
    # Strings as they are now: frozen copies, which share the bytes until the caller
    # changes theirs).
    def add_checked(args, packed)
      group, event, priority, not_before, key = args
      Raw.mqs_batch_add_at(@raw, group, event, priority, not_before, key.nil? ? 0 : 1, key, packed)
      @keyed = true unless key.nil?
      @added << [[frozen(group), frozen(event), priority, not_before, key && frozen(key)], packed.freeze]
    end

    # @api private: Queue#publish_batch_with's result from the shim's first seq
    # (negated when some event was a duplicate): with keys, or in a queue of more than
    # one partition (0.8.0: each has its own seqs, so event i's is not first + i), each
    # event's outcome as the batch keeps it from this publish (mqs_batch_outcome).
    def published(first, partitions = 1)
      n = size
      return PublishedBatch.new(first, n) unless @keyed || partitions > 1

      PublishedBatch.new(first.abs, n, Array.new(n) { |i| Raw.mqs_batch_outcome(@raw, i) })
    end

    private

    def frozen(str)
      str.frozen? ? str : str.dup.freeze
    end
  end
end
