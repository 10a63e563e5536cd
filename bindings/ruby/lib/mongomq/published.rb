# frozen_string_literal: true

# What Queue#publish and Queue#publish_batch return (0.6.0, dedup keys): Published, a
# seq with whether the publish was a duplicate, and PublishedBatch, each event's
# Published in add order. The C library reports a duplicate as MQ_DUPLICATE; the SWIG
# shims (mqs_publish, mqs_batch_outcome) give it as a negated seq, which these undo.
module MongoMQ
  # The seq side both results share: it converts where Ruby converts implicitly
  # (#to_int: Integer(x), Array#[], format("%d")), compares with Integers and with its
  # own kind by the seq (<, sort, between?; == also compares the other fields of its own
  # kind) and prints as the seq (#to_s), so code
  # that took publish's Integer mostly keeps working. It is no Integer: do arithmetic
  # and Hash keys with #seq (an Integer and a result are different Hash keys).
  module SeqValue
    include Comparable

    def to_i
      seq_value
    end
    alias to_int to_i

    def to_s
      seq_value.to_s
    end

    def <=>(other)
      case other
      when Integer then seq_value <=> other
      when SeqValue then seq_value <=> other.to_i
      end
    end

    # 1 + published, 1 < published: Integer's operators ask for this.
    def coerce(other)
      raise TypeError, "#{self.class} can't be coerced with #{other.class}" unless other.is_a?(Integer)

      [other, seq_value]
    end
  end
  private_constant :SeqValue

  # What Queue#publish returns (a frozen Struct): seq, the event's sequence number (an
  # Integer), and duplicate (also #duplicate?): true when the publish carried a
  # dedup_key an event of the queue already holds, so nothing was added and seq is
  # that event's. See SeqValue above for how it stands in for the Integer publish
  # returned before 0.6.0.
  Published = Struct.new(:seq, :duplicate) do
    include SeqValue

    def duplicate?
      duplicate
    end

    # Equal to an Integer equal to seq, and to a Published with the same seq and flag.
    def ==(other)
      return seq == other if other.is_a?(Integer)

      other.is_a?(Published) && seq == other.seq && duplicate == other.duplicate # (not Comparable's: seq only)
    end

    def inspect
      "#<MongoMQ::Published seq=#{seq}#{duplicate ? " duplicate" : ""}>"
    end

    # @api private: a shim's seq, negative for a duplicate of the event -raw.
    def self.from_c(raw)
      raw.negative? ? new(-raw, true).freeze : new(raw, false).freeze
    end

    private

    def seq_value
      seq
    end
  end

  # What Queue#publish_batch returns: first_seq, the first seq the publish took (what
  # publish_batch returned before 0.6.0: without duplicates event i has first_seq + i;
  # #to_i and the comparisons are first_seq's), outcomes (a frozen Array of each
  # event's Published, in add order: a duplicate's seq is the event that holds its key,
  # not first_seq + i), added (how many it added), size (events in the batch) and
  # duplicates? (whether any was one).
  class PublishedBatch
    include SeqValue

    attr_reader :first_seq, :size

    # @api private: raw, the shims' seqs of a batch with keys (mqs_batch_outcome),
    # else nil (every event added, in order).
    def initialize(first_seq, size, raw = nil)
      @first_seq = first_seq
      @size = size
      @raw = raw&.freeze
      @outcomes = raw && raw.map { |s| Published.from_c(s) }.freeze
    end

    def outcomes
      @outcomes ||= Array.new(@size) { |i| Published.new(@first_seq + i, false).freeze }.freeze
    end

    def added
      @raw ? @raw.count { |s| !s.negative? } : @size
    end

    def duplicates?
      added < @size
    end

    # Equal to an Integer equal to first_seq, and to a PublishedBatch with the same
    # outcomes.
    def ==(other)
      return first_seq == other if other.is_a?(Integer)

      other.is_a?(PublishedBatch) && first_seq == other.first_seq && outcomes == other.outcomes
    end

    def inspect
      "#<MongoMQ::PublishedBatch first_seq=#{@first_seq} size=#{@size} added=#{added}>"
    end

    private

    def seq_value
      @first_seq
    end
  end
end
