# frozen_string_literal: true

module MongoMQ
  # The gem's version: the libmongomq version it is made for.
  VERSION = "0.8.0"
end
