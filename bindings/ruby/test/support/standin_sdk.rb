# frozen_string_literal: true

# A test-only stand-in for the few pieces of the OpenTelemetry Ruby SDK the tests use
# (the gems opentelemetry-sdk and opentelemetry-metrics-sdk cannot be installed on the
# machine the suite was written on: RubyGems is unreachable there): a TracerProvider
# whose spans record, a SimpleSpanProcessor and an InMemorySpanExporter, and a
# MeterProvider whose counters and histograms aggregate in memory, read with an
# InMemoryMetricPullExporter. It sits over the stand-in API (standin_api/) and mirrors
# the real SDK's class paths and the fields of its SpanData and MetricData, so that
# test/support/otel.rb reads either the same way; the real ones are in
# open-telemetry/opentelemetry-ruby: sdk/lib/opentelemetry/sdk/trace/{tracer_provider,
# tracer,span,span_data}.rb, sdk/lib/opentelemetry/sdk/trace/export/{simple_span_processor,
# in_memory_span_exporter}.rb, metrics_sdk/lib/opentelemetry/sdk/metrics/export/
# in_memory_metric_pull_exporter.rb (pull, metric_snapshots, reset).
#
# Stricter than the real SDK where that finds mistakes: an attribute of a type the API
# does not allow (a Symbol key, a nil or Symbol value), a negative counter increment and
# a call on a finished span are recorded in StandInSDK.problems (the real SDK logs and
# drops them), which the tracing tests check is empty.
module MongoMQTest
  module StandInSDK
    @problems = []
    @problems_lock = Mutex.new

    def self.problem(text)
      @problems_lock.synchronize { @problems << text }
    end

    def self.problems
      @problems_lock.synchronize { @problems.dup }
    end

    def self.clear_problems
      @problems_lock.synchronize { @problems.clear }
    end

    # The API's attribute rule: String keys; String, Boolean, Numeric values (or
    # Arrays of one of those).
    def self.check_attributes(where, attributes)
      return if attributes.nil?

      unless attributes.is_a?(Hash)
        problem("#{where}: attributes #{attributes.inspect} are not a Hash")
        return
      end
      attributes.each do |k, v|
        problem("#{where}: attribute key #{k.inspect} is not a String") unless k.is_a?(String)
        problem("#{where}: attribute #{k.inspect} has a value the API does not allow: #{v.inspect}") unless valid_value?(v)
      end
    end

    def self.valid_value?(value)
      scalar = ->(x) { x.is_a?(String) || x == true || x == false || x.is_a?(Numeric) }
      scalar.call(value) || (value.is_a?(Array) && value.all?(&scalar))
    end

    # What a tracer or meter was made with: its instrumentation scope.
    InstrumentationScope = Struct.new(:name, :version)

    module Trace
      # The SDK's SpanData fields the tests read (ids binary, as the SDK's).
      SpanData = Struct.new(:name, :kind, :status, :parent_span_id, :attributes, :links, :events,
                            :instrumentation_scope, :span_id, :trace_id, :trace_flags, :tracestate) do
        def hex_trace_id = trace_id.unpack1("H*")
        def hex_span_id = span_id.unpack1("H*")
        def hex_parent_span_id = parent_span_id.unpack1("H*")
      end

      # An event of a span (the SDK's OpenTelemetry::SDK::Trace::Event).
      Event = Struct.new(:name, :attributes, :timestamp)

      # A span that records until it is finished, then goes to the processors.
      class Span < OpenTelemetry::Trace::Span
        def initialize(context, name, kind, parent_span_id, attributes, links, scope, processors)
          super(span_context: context)
          @mutex = Mutex.new
          @name = name
          @kind = kind
          @parent_span_id = parent_span_id
          @attributes = {}
          add_attributes(attributes) if attributes
          @links = (links || []).dup.freeze
          @scope = scope
          @processors = processors
          @events = []
          @status = OpenTelemetry::Trace::Status.unset
          @finished = false
        end

        def recording?
          !@finished
        end

        def set_attribute(key, value)
          StandInSDK.check_attributes("span #{@name.inspect}", { key => value })
          live("set_attribute") { @attributes[key] = value }
          self
        end
        alias []= set_attribute

        def add_attributes(attributes)
          StandInSDK.check_attributes("span #{@name.inspect}", attributes)
          live("add_attributes") { @attributes.merge!(attributes) }
          self
        end

        def add_event(name, attributes: nil, timestamp: nil)
          StandInSDK.check_attributes("event #{name.inspect}", attributes)
          live("add_event") { @events << Event.new(name, (attributes || {}).dup.freeze, timestamp || Time.now) }
          self
        end

        # The SDK's: an "exception" event with exception.type, .message, .stacktrace.
        def record_exception(exception, attributes: nil)
          event = { "exception.type" => exception.class.to_s, "exception.message" => exception.message,
                    "exception.stacktrace" => exception.full_message(highlight: false, order: :top) }
          add_event("exception", attributes: event.merge(attributes || {}))
        end

        def status=(status)
          problem = status.is_a?(OpenTelemetry::Trace::Status) ? nil : "status= #{status.inspect}"
          StandInSDK.problem("span #{@name.inspect}: #{problem}") if problem
          live("status=") { @status = status }
        end

        def name=(new_name)
          live("name=") { @name = new_name }
        end

        def finish(end_timestamp: nil) # rubocop:disable Lint/UnusedMethodArgument
          data = @mutex.synchronize do
            if @finished
              StandInSDK.problem("span #{@name.inspect}: finished twice")
              return self
            end
            @finished = true
            SpanData.new(@name, @kind, @status, @parent_span_id, @attributes.dup.freeze, @links, @events.dup.freeze,
                         @scope, context.span_id, context.trace_id, context.trace_flags, context.tracestate)
          end
          @processors.each { |p| p.on_finish(data) }
          self
        end

        private

        def live(call)
          @mutex.synchronize do
            if @finished
              StandInSDK.problem("span #{@name.inspect}: #{call} after finish")
            else
              yield
            end
          end
        end
      end

      # Makes recording spans: a child of the parent context's span, else a new trace.
      class Tracer < OpenTelemetry::Trace::Tracer
        def initialize(scope, processors)
          super()
          @scope = scope
          @processors = processors
        end

        def start_root_span(name, attributes: nil, links: nil, start_timestamp: nil, kind: nil)
          start_span(name, with_parent: OpenTelemetry::Context.empty, attributes: attributes, links: links,
                           start_timestamp: start_timestamp, kind: kind)
        end

        def start_span(name, with_parent: nil, attributes: nil, links: nil, start_timestamp: nil, kind: nil) # rubocop:disable Lint/UnusedMethodArgument
          parent = OpenTelemetry::Trace.current_span(with_parent).context
          StandInSDK.problem("span #{name.inspect}: kind #{kind.inspect}") unless kind.nil? || kind.is_a?(Symbol)
          Array(links).each do |l|
            StandInSDK.problem("span #{name.inspect}: link #{l.inspect}") unless l.is_a?(OpenTelemetry::Trace::Link)
          end
          context = OpenTelemetry::Trace::SpanContext.new(
            trace_id: parent.valid? ? parent.trace_id : OpenTelemetry::Trace.generate_trace_id,
            trace_flags: OpenTelemetry::Trace::TraceFlags::SAMPLED,
            tracestate: parent.valid? ? parent.tracestate : OpenTelemetry::Trace::Tracestate::DEFAULT
          )
          Span.new(context, name, kind || :internal, parent.valid? ? parent.span_id : OpenTelemetry::Trace::INVALID_SPAN_ID,
                   attributes, links, @scope, @processors)
        end
      end

      # Tracers by name and version, their spans going to the processors added.
      class TracerProvider < OpenTelemetry::Trace::TracerProvider
        def initialize
          super
          @lock = Mutex.new
          @processors = []
          @tracers = {}
        end

        def add_span_processor(processor)
          @lock.synchronize { @processors << processor }
        end

        def tracer(name = nil, version = nil)
          @lock.synchronize do
            @tracers[[name, version]] ||= Tracer.new(InstrumentationScope.new(name.to_s, version.to_s), @processors)
          end
        end
      end

      module Export
        # Hands each finished span to the exporter at once (the SDK's SimpleSpanProcessor).
        class SimpleSpanProcessor
          def initialize(exporter)
            @exporter = exporter
          end

          def on_finish(span_data)
            @exporter.export([span_data])
          end
        end

        # Keeps the finished spans in memory, in finish order.
        class InMemorySpanExporter
          def initialize
            @lock = Mutex.new
            @spans = []
          end

          def export(span_datas, timeout: nil) # rubocop:disable Lint/UnusedMethodArgument
            @lock.synchronize { @spans.concat(span_datas) }
            0 # the SDK's Export::SUCCESS
          end

          def finished_spans
            @lock.synchronize { @spans.dup.freeze }
          end

          def reset
            @lock.synchronize { @spans.clear }
          end
        end
      end
    end

    module Metrics
      # The SDK's MetricData and data points, the fields the tests read.
      MetricData = Struct.new(:name, :description, :unit, :instrument_kind, :instrumentation_scope, :data_points)
      NumberDataPoint = Struct.new(:attributes, :value)
      HistogramDataPoint = Struct.new(:attributes, :count, :sum)

      # An instrument's cumulative aggregate, one per attribute set.
      class Instrument
        def initialize(kind, name, unit, description, scope)
          @kind = kind
          @name = name
          @unit = unit
          @description = description
          @scope = scope
          @lock = Mutex.new
          @points = {} # frozen attributes => [sum, count]
        end

        def measure(amount, attributes)
          StandInSDK.check_attributes("instrument #{@name}", attributes)
          StandInSDK.problem("instrument #{@name}: #{amount.inspect} is not a number") unless amount.is_a?(Numeric)
          StandInSDK.problem("counter #{@name}: negative increment #{amount}") if @kind == :counter && amount.is_a?(Numeric) && amount.negative?
          key = (attributes || {}).dup.freeze
          @lock.synchronize do
            sum, count = @points.fetch(key, [0, 0])
            @points[key] = [sum + amount, count + 1]
          end
          nil
        end

        def snapshot
          points = @lock.synchronize { @points.dup }
          data = points.map do |attrs, (sum, count)|
            @kind == :counter ? NumberDataPoint.new(attrs, sum) : HistogramDataPoint.new(attrs, count, sum)
          end
          MetricData.new(@name, @description, @unit, @kind, @scope, data)
        end
      end

      # A monotonic sum.
      class Counter < OpenTelemetry::Metrics::Instrument::Counter
        def initialize(aggregate)
          super()
          @aggregate = aggregate
        end

        def add(increment, attributes: {})
          @aggregate.measure(increment, attributes)
        end
      end

      # A distribution (count and sum here; the tests read no buckets).
      class Histogram < OpenTelemetry::Metrics::Instrument::Histogram
        def initialize(aggregate)
          super()
          @aggregate = aggregate
        end

        def record(amount, attributes: {})
          @aggregate.measure(amount, attributes)
        end
      end

      # Instruments of one scope, over the API meter's name checks and duplicate warning.
      class Meter < OpenTelemetry::Metrics::Meter
        def initialize(scope, aggregates)
          super()
          @scope = scope
          @aggregates = aggregates
        end

        def create_counter(name, unit: nil, description: nil)
          create_instrument(:counter, name, unit, description) { Counter.new(aggregate(:counter, name, unit, description)) }
        end

        def create_histogram(name, unit: nil, description: nil)
          create_instrument(:histogram, name, unit, description) { Histogram.new(aggregate(:histogram, name, unit, description)) }
        end

        private

        def aggregate(kind, name, unit, description)
          a = Instrument.new(kind, name, unit, description, @scope)
          @aggregates << a
          a
        end
      end

      # Meters by name and version; readers added collect every instrument's points.
      class MeterProvider < OpenTelemetry::Metrics::MeterProvider
        def initialize
          super
          @lock = Mutex.new
          @meters = {}
          @aggregates = []
        end

        def meter(name, version: nil, schema_url: nil, attributes: nil) # rubocop:disable Lint/UnusedMethodArgument
          @lock.synchronize { @meters[[name, version]] ||= Meter.new(InstrumentationScope.new(name.to_s, version.to_s), @aggregates) }
        end

        def add_metric_reader(reader)
          reader.register(self)
        end

        # @api private
        def collect
          @lock.synchronize { @aggregates.dup }.map(&:snapshot)
        end
      end

      module Export
        # Pulls every instrument's cumulative points into metric_snapshots.
        class InMemoryMetricPullExporter
          attr_reader :metric_snapshots

          def initialize
            @metric_snapshots = []
            @providers = []
          end

          # @api private
          def register(provider)
            @providers << provider
          end

          def pull
            @metric_snapshots.concat(@providers.flat_map(&:collect))
          end

          def reset
            @metric_snapshots.clear
          end
        end
      end
    end
  end
end
