# frozen_string_literal: true

module MongoMQ
  # One claimed group: its head event (or, from a batch claim, up to max_events
  # consecutive events of the group), with their attributes. A plain value: it may
  # outlive its queue. Close it (or let the GC) to free its memory; after #close every
  # reader raises MongoMQ::ClosedError.
  #
  # Events come back as binary Strings (Encoding::ASCII_8BIT) holding exactly the
  # published bytes, whatever the encoding of the String published; #text gives the
  # head as UTF-8 and #json parses it.
  class Lease
    include RawHandle # #close frees the lease; closing twice does nothing

    # The visibility (Float seconds) the lease was claimed with: the default of
    # Queue#extend_lease.
    attr_reader :visibility

    # @api private
    def initialize(raw, visibility)
      @raw = raw
      @visibility = visibility
    end

    # The head event's sequence number.
    def seq
      Raw.mq_lease_seq(@raw)
    end

    # The group id (a UTF-8 String).
    def group
      Raw.mq_lease_group(@raw)
    end

    # Deliveries of the head so far: 1 on the first.
    def attempts
      Raw.mq_lease_attempts(@raw)
    end

    # The partition of the lease's group (0.8.0): MongoMQ.group_partition(group,
    # queue.partitions); 0 in a queue of one partition.
    def partition
      Raw.mq_lease_partition(@raw)
    end

    # The head event: a new binary String.
    def event
      Raw.mqs_lease_event_at(@raw, 0)
    end

    # The head event as a UTF-8 String (the same bytes); Encoding::InvalidByteSequenceError
    # when they are not valid UTF-8.
    def text
      Lease.utf8(event)
    end

    # The head event parsed as JSON (#text, then JSON.parse with `options`, e.g.
    # symbolize_names: true); JSON::ParserError when it is not JSON.
    def json(**options)
      JSON.parse(text, **options)
    end

    # @api private: bytes as a UTF-8 String, or the encoding error (Lease, StoredEvent).
    def self.utf8(bytes)
      s = bytes.dup.force_encoding(Encoding::UTF_8)
      raise Encoding::InvalidByteSequenceError, "the event is not valid UTF-8" unless s.valid_encoding?

      s
    end

    # Events in the lease (1 unless claimed with max_events > 1).
    def count
      Raw.mq_lease_count(@raw)
    end
    alias size count

    # Every event of the lease, in FIFO order (binary Strings).
    def events
      Array.new(count) { |i| Raw.mqs_lease_event_at(@raw, i) }
    end

    # Every event's sequence number, in FIFO order.
    def seqs
      Array.new(count) { |i| Raw.mq_lease_seq_at(@raw, i) }
    end

    # The head event's attributes (0.7.0): a new Hash of UTF-8 Strings in publish
    # order ({} when it has none). Read from the lease: no server command.
    def attrs
      attrs_at(0)
    end

    # Event i's attributes (0 is the head; negative counts from the end, as #events
    # does), a new Hash in publish order. IndexError out of range.
    def attrs_at(i)
      Check.integer(i, :i)
      n = count
      raise IndexError, "event #{i} of a lease of #{n}" unless i >= -n && i < n

      i %= n
      Array.new(Raw.mq_lease_attr_count(@raw, i)) do |j|
        [Raw.mqs_lease_attr_key(@raw, i, j), Raw.mqs_lease_attr_value(@raw, i, j)]
      end.to_h
    end

    # The value of the head event's attribute `key` (a String or a Symbol), or nil when
    # it has none.
    def attr(key)
      key = key.name if key.is_a?(Symbol)
      key = Check.group(key, :key)
      return nil if key.include?("\0") # no key holds a NUL

      Raw.mq_lease_attr(@raw, 0, key)
    end

    # The token that fences this lease's ack, nack, unclaim and extend.
    def token
      Raw.mq_lease_token(@raw)
    end

    # When the lease runs out, a Time on the queue's clock (Queue#now): the claim's
    # time plus its visibility, moved by extend_lease.
    def deadline
      Check.to_time(Raw.mq_lease_deadline(@raw))
    end

    def inspect
      return "#<#{self.class.name} (closed)>" if closed?

      "#<#{self.class.name} seq=#{seq} group=#{group.inspect} attempts=#{attempts} count=#{count}>"
    end
  end
end
