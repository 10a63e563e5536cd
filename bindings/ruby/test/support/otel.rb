# frozen_string_literal: true

# The OpenTelemetry the tracing tests (test/test_trace.rb) and the matrix's Ruby agent
# (tests/matrix/agents/agent.rb) run against, and one way to read what it recorded.
#
# - When the real SDK gems can be loaded (opentelemetry-sdk and
#   opentelemetry-metrics-sdk, which bring opentelemetry-api and
#   opentelemetry-metrics-api), they are used: an SDK TracerProvider with a
#   SimpleSpanProcessor into an InMemorySpanExporter, an SDK MeterProvider read by an
#   InMemoryMetricPullExporter, and the API's W3C trace-context propagator.
# - Otherwise (the machine this was written on: RubyGems is unreachable, Debian has no
#   such gems) the stand-in: standin_api/ is put first on $LOAD_PATH, so that
#   `require "opentelemetry"` (and mongomq/otel's own require of it) loads the
#   stand-in of the API, and standin_sdk.rb gives the same SDK classes.
# MongoMQTest::OTel::IMPLEMENTATION says which one ran (the tests print it).
module MongoMQTest
  module OTel
    STANDIN_API = File.expand_path("standin_api", __dir__)

    def self.real_sdk?
      return false if ENV["MONGOMQ_OTEL_STANDIN"] == "1" # force the stand-in

      %w[opentelemetry-sdk opentelemetry-metrics-sdk].all? do |name|
        Gem::Specification.find_by_name(name)
      rescue Gem::MissingSpecError
        false
      end
    end

    REAL = real_sdk?

    if REAL
      require "opentelemetry-sdk"
      require "opentelemetry-metrics-sdk"
      SDK = ::OpenTelemetry::SDK
      IMPLEMENTATION = "the real OpenTelemetry SDK (opentelemetry-sdk #{Gem.loaded_specs["opentelemetry-sdk"]&.version}, " \
                       "opentelemetry-api #{Gem.loaded_specs["opentelemetry-api"]&.version})"
    else
      $LOAD_PATH.unshift(STANDIN_API) unless $LOAD_PATH.include?(STANDIN_API)
      require "opentelemetry"
      require "opentelemetry-metrics-api"
      require_relative "standin_sdk"
      SDK = StandInSDK
      IMPLEMENTATION = "the stand-in of the OpenTelemetry API and SDK in bindings/ruby/test/support " \
                       "(the opentelemetry gems are not installed)"
    end

    # A finished span, read the same way from either: ids as lowercase hex.
    Span = Struct.new(:name, :kind, :trace_id, :span_id, :parent_span_id, :attributes, :links, :events, :status_code,
                      :scope_name, :scope_version) do
      def error?
        status_code == ::OpenTelemetry::Trace::Status::ERROR
      end

      def event_names
        events.map(&:first)
      end
    end

    # A metric's point: sum (a counter's value, a histogram's sum), count (a
    # histogram's; nil for a counter).
    Point = Struct.new(:name, :unit, :attributes, :sum, :count, :scope_name)

    # One SDK set up for a test: providers, the propagator, and what they recorded.
    class Setup
      attr_reader :tracer_provider, :meter_provider, :propagator

      def initialize
        @exporter = SDK::Trace::Export::InMemorySpanExporter.new
        @tracer_provider = SDK::Trace::TracerProvider.new
        @tracer_provider.add_span_processor(SDK::Trace::Export::SimpleSpanProcessor.new(@exporter))
        @reader = SDK::Metrics::Export::InMemoryMetricPullExporter.new
        @meter_provider = SDK::Metrics::MeterProvider.new
        @meter_provider.add_metric_reader(@reader)
        @propagator = ::OpenTelemetry::Trace::Propagation::TraceContext.text_map_propagator
        @deltas = {}
      end

      # A MongoMQ::OTel::Telemetry over this setup.
      def telemetry
        MongoMQ::OTel::Telemetry.new(tracer_provider: @tracer_provider, meter_provider: @meter_provider,
                                     propagator: @propagator)
      end

      # A tracer of the test's own (for parent spans).
      def tracer
        @tracer_provider.tracer("mongomq-test", "0")
      end

      # The finished spans, in finish order.
      def spans
        @exporter.finished_spans.map do |s|
          scope = s.respond_to?(:instrumentation_scope) ? s.instrumentation_scope : s.instrumentation_library
          Span.new(s.name, s.kind, hex(s.trace_id), hex(s.span_id), hex(s.parent_span_id), (s.attributes || {}).to_h,
                   Array(s.links).map { |l| [l.context.hex_trace_id, l.context.hex_span_id] },
                   Array(s.events).map { |e| [e.name, (e.attributes || {}).to_h] }, s.status&.code,
                   scope&.name, scope&.version)
        end
      end

      def spans_named(name)
        spans.select { |s| s.name == name }
      end

      def reset_spans
        @exporter.reset
      end

      # Every metric point now, cumulative since the setup (a reader of delta
      # temporality has its deltas added up here).
      def points
        @reader.reset
        @reader.pull
        current = @reader.metric_snapshots.flat_map do |m|
          histogram = m.instrument_kind.to_s == "histogram" # (data points are Structs: #count, #sum are Enumerable's)
          delta = m.respond_to?(:aggregation_temporality) && m.aggregation_temporality.to_s == "delta"
          Array(m.data_points).map do |p|
            [Point.new(m.name, m.unit, (p.attributes || {}).to_h, histogram ? p[:sum] : p[:value], histogram ? p[:count] : nil,
                       m.instrumentation_scope&.name), delta]
          end
        end
        current.each do |point, delta|
          next unless delta

          key = [point.name, point.attributes]
          was = @deltas[key]
          @deltas[key] = was ? Point.new(*point.to_a).tap { |t| t.sum += was.sum; t.count &&= t.count + was.count.to_i } : point
        end
        current.reject(&:last).map(&:first) + @deltas.values
      end

      def points_named(name)
        points.select { |p| p.name == name }
      end

      private

      def hex(id)
        id.nil? || id == ::OpenTelemetry::Trace::INVALID_SPAN_ID ? nil : id.unpack1("H*")
      end
    end
  end
end

require "mongomq/otel"
