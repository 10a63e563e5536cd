# frozen_string_literal: true

# What Queue#publish_with and Queue#publish_batch_with return (0.6.0, dedup keys):
# Published, a seq with whether the publish was a duplicate, and PublishedBatch, each
# event's Published in add order. Plain values (publish and publish_batch still return
# the Integer seq). The C library reports a duplicate as MQ_DUPLICATE; the SWIG shims
# (mqs_publish, mqs_publish_batch, mqs_batch_outcome) give it as a negated seq, which
# these undo.
module MongoMQ
  # What Queue#publish_with returns (a frozen Struct): seq, the event's sequence number
  # (an Integer; #to_i too), and duplicate (also #duplicate?): true when the publish
  # carried a dedup_key an event of the queue already holds, so nothing was added and
  # seq is that event's.
  Published = Struct.new(:seq, :duplicate) do
    def duplicate?
      duplicate
    end

    def to_i
      seq
    end

    def inspect
      "#<MongoMQ::Published seq=#{seq}#{duplicate ? " duplicate" : ""}>"
    end
    alias_method :to_s, :inspect

    # @api private: a shim's seq, negative for a duplicate of the event -raw.
    def self.from_c(raw)
      raw.negative? ? new(-raw, true).freeze : new(raw, false).freeze
    end
  end

  # What Queue#publish_batch_with returns (frozen): first_seq, the first event's seq
  # (what publish_batch returns: in a queue of one partition, without duplicates,
  # event i has first_seq + i), outcomes (a frozen Array of each event's Published, in
  # add order: a duplicate's seq is the event that holds its key, not first_seq + i;
  # over partitions, 0.8.0, each event's seq is its partition's), added (how
  # many it added), size (events in the batch) and duplicates? (whether any was one).
  # Two are == when their outcomes are.
  class PublishedBatch
    attr_reader :first_seq, :outcomes

    # @api private: first_seq as the library gives it; raw, the shims' seqs of a batch
    # with keys or over partitions (mqs_batch_outcome), else nil (every event added,
    # in order).
    def initialize(first_seq, size, raw = nil)
      @first_seq = first_seq
      @outcomes = if raw
                    raw.map { |s| Published.from_c(s) }.freeze
                  else
                    Array.new(size) { |i| Published.new(first_seq + i, false).freeze }.freeze
                  end
      freeze
    end

    def size
      @outcomes.size
    end

    def added
      @outcomes.count { |o| !o.duplicate? }
    end

    def duplicates?
      added < size
    end

    def ==(other)
      other.is_a?(PublishedBatch) && first_seq == other.first_seq && outcomes == other.outcomes
    end
    alias eql? ==

    def hash
      [PublishedBatch, first_seq, outcomes].hash
    end

    def inspect
      "#<MongoMQ::PublishedBatch first_seq=#{first_seq} size=#{size} added=#{added}>"
    end
    alias to_s inspect
  end
end
