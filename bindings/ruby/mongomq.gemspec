# frozen_string_literal: true

require_relative "lib/mongomq/version"

Gem::Specification.new do |spec|
  spec.name = "mongomq"
  spec.version = MongoMQ::VERSION
  spec.summary = "A multi-machine queue with per-group FIFO exclusivity on MongoDB (libmongomq)"
  spec.description = <<~DESC
    Ruby bindings of libmongomq: publish events to groups, claim leases with per-group
    FIFO and one worker per group at a time, ack/nack/extend, batches, scheduled
    events, dead letters, stats, and a threaded worker with back-off, heartbeat and
    graceful shutdown. A C extension over the installed libmongomq (found with
    pkg-config); calls that wait on the server release the GVL. Optional
    OpenTelemetry tracing and metrics (require "mongomq/otel") with the
    opentelemetry-api gem, which this gem does not depend on.
  DESC
  spec.authors = ["mongomq maintainers"]
  spec.metadata = { "rubygems_mfa_required" => "true" }

  spec.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/mongomq_raw/extconf.rb", "ext/mongomq_raw/mongomq_raw_wrap.c", "README.md"]
  end
  spec.extensions = ["ext/mongomq_raw/extconf.rb"]
  spec.require_paths = ["lib"]

  # SWIG 4.5.1's Ruby output uses the TypedData API (no untyped Data_*), so it builds
  # on Ruby 2.0 up to 4.1, which drops Data_*. The hand-written layer uses Ruby 3's
  # keyword arguments and Hash#to_h with a block: Ruby 3.0 and later (tested on 3.1).
  spec.required_ruby_version = ">= 3.0"
end
