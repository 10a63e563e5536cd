# frozen_string_literal: true

module MongoMQ
  # A page of the dead letters (Queue#dead_page, a frozen Struct): letters
  # (StoredEvent values, oldest seq first), offset (where the page starts) and total
  # (dead letters in all).
  DeadPage = Struct.new(:letters, :offset, :total, keyword_init: true) do
    # @api private
    def self.parse(json)
      obj = JSON.parse(json)
      new(letters: obj.fetch("letters").map { |e| StoredEvent.from_json(e) }.freeze, offset: obj.fetch("offset"),
          total: obj.fetch("total")).freeze
    end
  end
end
