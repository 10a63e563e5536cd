# frozen_string_literal: true

# MongoMQTest::TraceCase: the tracing tests' setup (test_trace.rb, test_otel.rb): a
# queue whose telemetry comes from an SDK of the test's own (@otel, see otel.rb: the
# real SDK when its gems are installed, else the stand-in), and the names and
# attributes bindings/CONTRACT.md gives the spans. With the stand-in, a test fails too
# if the stand-in SDK saw a call the OpenTelemetry API does not allow.
require_relative "../test_helper"
require_relative "otel"

module MongoMQTest
  # A test whose queue has telemetry from an SDK of its own (@otel).
  class TraceCase < Case
    class Boom < StandardError; end

    def setup
      super
      StandInSDK.clear_problems unless OTel::REAL
      @otel = OTel::Setup.new
      @queue.telemetry = @otel.telemetry
    end

    def teardown
      super
      assert_empty StandInSDK.problems, "the stand-in SDK saw calls the API does not allow" unless OTel::REAL
    end

    def dest
      "#{@db}.q"
    end

    def base
      { "messaging.system" => "mongomq", "messaging.destination.name" => dest }
    end

    def send_attrs(extra)
      base.merge("messaging.operation.type" => "send", "messaging.operation.name" => "publish").merge(extra)
    end

    def process_attrs(extra)
      base.merge("messaging.operation.type" => "process", "messaging.operation.name" => "process").merge(extra)
    end

    def settle_attrs(op, extra = {})
      base.merge("messaging.operation.type" => "settle", "messaging.operation.name" => op).merge(extra)
    end

    def traceparent(span)
      "00-#{span.trace_id}-#{span.span_id}-01"
    end

    def the_one(name)
      spans = @otel.spans_named(name)
      assert_equal 1, spans.size, "one span #{name.inspect} (of #{@otel.spans.map(&:name).inspect})"
      spans.first
    end

    # Runs a worker with the options until the block is true (within 20 s), then stops it.
    def run_worker_until(**options, &until_true)
      handler = options.delete(:handler)
      worker = @queue.worker(**options, &handler)
      eventually(within: 20, what: "the worker's progress", &until_true)
    ensure
      worker&.stop
      assert worker.wait(20), "the worker stopped" if worker
    end
  end
end
