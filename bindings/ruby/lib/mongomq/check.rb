# frozen_string_literal: true

module MongoMQ
  # Argument checks of the Ruby layer: types, named as the caller named them. Ranges
  # are the C library's to check (its messages name the argument too).
  module Check
    module_function

    def fail!(name, want, value)
      raise MongoMQ::ArgumentError, "#{name} must be #{want} (got #{value.inspect[0, 60]})"
    end

    # A group id: a String, sent as UTF-8 (a String in another encoding is
    # transcoded; ASCII-8BIT bytes go as they are and must be UTF-8).
    def group(value, name = :group)
      fail!(name, "a String", value) unless value.is_a?(String)
      case value.encoding
      when Encoding::UTF_8, Encoding::US_ASCII, Encoding::BINARY then value
      else
        begin
          value.encode(Encoding::UTF_8)
        rescue EncodingError => e
          raise MongoMQ::ArgumentError, "#{name} cannot be converted to UTF-8: #{e.message}"
        end
      end
    end

    def optional_text(value, name)
      value.nil? ? nil : group(value, name)
    end

    # Attributes (0.7.0): a Hash of String keys and values (transcoded to UTF-8 as a
    # group is), packed as the extension takes them: "key NUL value NUL ..." in the
    # Hash's order ("" for nil or none). Types and NUL, which would split the packing,
    # are checked here; the rest (a key's characters and length, a value's length and
    # UTF-8, more than ATTR_MAX) is the library's MongoMQ::ArgumentError naming
    # attrs[i].
    def attrs(value)
      return "".b if value.nil?

      fail!(:attrs, "a Hash of String keys and values", value) unless value.is_a?(Hash)
      packed = String.new(capacity: 64, encoding: Encoding::BINARY)
      value.each_with_index do |(k, v), i|
        k = k.name if k.is_a?(Symbol) # { tenant: "t-1" }, Ruby's usual Hash
        k = group(k, "attrs[#{i}].key")
        v = group(v, "attrs[#{i}].value (key #{k.inspect})")
        raise MongoMQ::ArgumentError, "attrs[#{i}].key #{k.inspect} contains a NUL byte" if k.include?("\0")
        raise MongoMQ::ArgumentError, "attrs[#{i}].value (key #{k.inspect}) contains a NUL byte" if v.include?("\0")

        packed << k.b << "\0" << v.b << "\0"
      end
      packed
    end

    # Packed attributes with the trace context a propagator wrote into `carrier` (a
    # Hash of String keys and values) after them, each only where it keeps the event
    # within the attribute bounds: a key the event has is kept as given, and a pair
    # that would be the 17th, has a key outside [A-Za-z0-9_.-]{1,128} or a value over
    # ATTR_VALUE_MAX bytes (or not UTF-8, or with a NUL) is left out. Tracing never
    # fails a publish.
    def with_injected(packed, carrier)
      return packed if carrier.empty?

      fields = packed.split("\0", -1)
      fields.pop # after the last NUL
      keys = fields.each_slice(2).map(&:first)
      out = packed.dup
      carrier.each do |k, v|
        break if keys.size >= ATTR_MAX
        next unless k.is_a?(String) && v.is_a?(String)

        k = k.b
        next if !k.bytesize.between?(1, ATTR_KEY_MAX) || !INJECTED_KEY.match?(k) || keys.include?(k)

        v = injected_value(v)
        next unless v

        out << k << "\0" << v << "\0"
        keys << k
      end
      out
    end

    INJECTED_KEY = /\A[A-Za-z0-9_.\-]+\z/n

    # A value as packed bytes when it may be one (UTF-8, no NUL, short enough), else nil.
    def injected_value(value)
      value = value.encode(Encoding::UTF_8) unless value.encoding == Encoding::UTF_8 || value.encoding == Encoding::BINARY
      bytes = value.b
      return nil unless bytes.bytesize <= ATTR_VALUE_MAX && !bytes.include?("\0") &&
                        bytes.dup.force_encoding(Encoding::UTF_8).valid_encoding?

      bytes
    rescue EncodingError
      nil
    end

    def event(value, name = :event)
      fail!(name, "a String", value) unless value.is_a?(String)
      value
    end

    def integer(value, name)
      fail!(name, "an Integer", value) unless value.is_a?(Integer)
      value
    end

    # A C int: an Integer in -2**31...2**31 (its range is the C library's to check;
    # one that no C int holds would not reach it).
    def c_int(value, name, range_text)
      integer(value, name)
      fail!(name, range_text, value) unless value >= -2**31 && value < 2**31
      value
    end

    # The queue option partitions (0.8.0): an Integer, 1..PARTITIONS_MAX (the
    # library's check).
    def queue_partitions(value)
      c_int(value, :partitions, "1..#{PARTITIONS_MAX}")
    end

    # A claim's (or a worker's) partitions (0.8.0) as the extension takes them: an
    # Array (or a Range, any Enumerable but a Hash) of Integers packed as little-endian
    # int32s; "" for nil or none (every partition). Types are checked here; the
    # numbers (0..the queue's partitions - 1, each once) are the library's to check,
    # its MongoMQ::ArgumentError naming partitions[i].
    def partitions(value)
      return "".b if value.nil?

      unless value.is_a?(Enumerable) && !value.is_a?(Hash)
        fail!(:partitions, "an Array of Integers (nil: every partition)", value)
      end
      list = value.to_a
      fail!(:partitions, "at most #{PARTITIONS_MAX} partitions", value) if list.size > PARTITIONS_MAX
      list.each_with_index { |k, i| c_int(k, "partitions[#{i}]", "a partition number, 0..#{PARTITIONS_MAX - 1}") }
      list.pack("l<*")
    end

    # The library's check of packed partitions against a queue of `partitions`
    # partitions, in its words, for a worker when it is made: its claims run on
    # threads of their own, where a bad list would end it only once it ran.
    def partitions_of(packed, partitions)
      list = packed.unpack("l<*")
      if list.size > partitions
        raise MongoMQ::ArgumentError, "partitions.size is #{list.size}, more than the queue's #{partitions} partitions"
      end

      list.each_with_index do |k, i|
        unless k.between?(0, partitions - 1)
          raise MongoMQ::ArgumentError,
                "partitions[#{i}] is #{k}, outside 0..#{partitions - 1} (the queue has #{partitions} partitions)"
        end
        raise MongoMQ::ArgumentError, "partitions[#{i}] is #{k}, given twice" if list.index(k) < i
      end
    end

    def count(value, name)
      fail!(name, "a positive Integer", value) unless value.is_a?(Integer) && value.positive?
      value
    end

    # Rows per page of the group listing and the dead-letter pages, 1..1000 (the
    # library's mq_groups_opts.limit and mq_dead_list_opts.limit; its 0 would be 50).
    PAGE_MAX = 1000

    def page_limit(value)
      integer(value, :limit)
      fail!(:limit, "1..#{PAGE_MAX}", value) unless value.between?(1, PAGE_MAX)
      value
    end

    # An offset into a list: 0 or more (a size_t in C).
    def offset(value)
      integer(value, :offset)
      fail!(:offset, "0 or more", value) unless value >= 0 && value < 2**63
      value
    end

    # Seconds: an Integer or a Float (ranges are checked by the library).
    def seconds(value, name)
      fail!(name, "a number of seconds", value) unless value.is_a?(Integer) || value.is_a?(Float) || value.is_a?(Rational)
      value.to_f
    end

    # An instant: a Time (not before the epoch), as seconds since the epoch.
    def time(value, name)
      fail!(name, "a Time", value) unless value.is_a?(Time)
      seconds = value.to_f
      fail!(name, "a Time not before the epoch", value) unless seconds >= 0

      seconds
    end

    # An optional instant: nil is 0.0 (the C library's "now").
    def optional_time(value, name)
      value.nil? ? 0.0 : time(value, name)
    end

    # Seconds since the epoch from the C library as a Time (UTC); nil stays nil.
    def to_time(seconds)
      seconds.nil? ? nil : Time.at(seconds).utc
    end
  end
  private_constant :Check
end
