# frozen_string_literal: true

module MongoMQ
  # One event as stored, from Queue#peek or Queue#dead_list: nothing claimed. A plain
  # value (a Struct, frozen).
  #
  # seq, group (UTF-8 String), priority (the group's at publish), attempts
  # (deliveries so far; nil when none was recorded), published_at, not_before (nil
  # unless scheduled), dead_at (dead letters only; else nil): times are Time values
  # (UTC) on the queue clock. event: a binary String (Encoding::ASCII_8BIT) of the
  # published bytes. attrs (0.7.0): the event's attributes, a frozen Hash of UTF-8
  # Strings in publish order ({} when it has none).
  StoredEvent = Struct.new(:seq, :group, :priority, :attempts, :published_at, :not_before, :dead_at, :event,
                           :attrs, keyword_init: true) do
    # The event as a UTF-8 String (the same bytes); Encoding::InvalidByteSequenceError
    # when they are not valid UTF-8.
    def text
      Lease.utf8(event)
    end

    # The event parsed as JSON (JSON.parse's options pass through).
    def json(**options)
      JSON.parse(text, **options)
    end

    # @api private: one element of the C library's peek / dead list JSON.
    def self.from_json(obj)
      event = obj["event"]
      bytes = if event.is_a?(Hash)
                event.fetch("base64").unpack1("m0") # strict base64
              else
                event.to_s.b
              end
      new(seq: obj["seq"], group: obj["group"], priority: obj["priority"], attempts: obj["attempts"],
          published_at: Check.to_time(obj["published_at"]), not_before: Check.to_time(obj["not_before"]),
          dead_at: Check.to_time(obj["dead_at"]), event: bytes.b.freeze,
          attrs: (obj["attrs"] || {}).to_h { |k, v| [k.freeze, v.to_s.freeze] }.freeze).freeze
    end

    # @api private
    def self.list(json)
      JSON.parse(json).map { |obj| from_json(obj) }
    end
  end
end
