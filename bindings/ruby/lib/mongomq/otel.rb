# frozen_string_literal: true

# MongoMQ::OTel (issue 22): OpenTelemetry spans and metrics for mongomq's publishes,
# worker runs and settlements, and W3C trace context carried in the events' attributes,
# as bindings/CONTRACT.md ("Tracing") says for every binding. Loaded only on
# `require "mongomq/otel"`: `require "mongomq"` never loads OpenTelemetry, and a queue
# has no telemetry (and does what it always did) until it is given one:
#
#   require "mongomq/otel"
#   queue.telemetry = MongoMQ::OTel::Telemetry.new # the global providers and propagator
#
# Only the public API of the gems opentelemetry-api (and opentelemetry-metrics-api, for
# the metrics, when it is there) is used; an SDK is the application's to configure.
begin
  require "opentelemetry"
rescue LoadError => e
  raise LoadError, "mongomq/otel needs the opentelemetry-api gem (gem \"opentelemetry-api\" in your Gemfile, " \
                   "or gem install opentelemetry-api; opentelemetry-sdk brings it too): #{e.message}"
end
begin
  require "opentelemetry-metrics-api"
rescue LoadError
  nil # no metrics API: spans only (OpenTelemetry.meter_provider does not exist then)
end
require "mongomq"

module MongoMQ
  # OpenTelemetry for mongomq: Telemetry, set on a queue with Queue#telemetry=.
  module OTel
    SYSTEM = "mongomq"
    # The instrumentation scope of the tracer and the meter (version: MongoMQ::VERSION).
    SCOPE = "mongomq"

    # The error.type of an exception: a library error's C status name ("MQ_LEASE_LOST"),
    # else the exception's class name.
    def self.error_type(error)
      (error.respond_to?(:status_name) && error.status_name) || error.class.name || error.class.to_s
    end

    # The four instruments of one meter provider, made once per provider (a second
    # registration of a name is a warning in the SDK).
    Instruments = Struct.new(:sent, :consumed, :operation_duration, :process_duration) do
      @by_provider = ObjectSpace::WeakMap.new
      @lock = Mutex.new

      def self.for(meter_provider)
        @lock.synchronize do
          @by_provider[meter_provider] ||= begin
            m = meter_provider.meter(SCOPE, version: MongoMQ::VERSION)
            new(m.create_counter("messaging.client.sent.messages", unit: "{message}",
                                                                   description: "Events published (duplicates included)"),
                m.create_counter("messaging.client.consumed.messages", unit: "{message}",
                                                                       description: "Events a worker claimed"),
                m.create_histogram("messaging.client.operation.duration", unit: "s",
                                                                          description: "Duration of a publish, ack or nack"),
                m.create_histogram("messaging.process.duration", unit: "s", description: "Duration of a handler run"))
          end
        end
      end
    end
    private_constant :Instruments

    # What a queue records through OpenTelemetry: spans from a tracer provider, metrics
    # from a meter provider, trace context through a text-map propagator. Immutable
    # and thread-safe; one may serve any number of queues.
    class Telemetry
      # tracer_provider: nil for OpenTelemetry.tracer_provider; meter_provider: nil for
      # OpenTelemetry.meter_provider (when opentelemetry-metrics-api is loaded; else no
      # metrics); propagator: nil for OpenTelemetry.propagation, read at each use (so
      # an SDK configured later is seen).
      def initialize(tracer_provider: nil, meter_provider: nil, propagator: nil)
        @tracer = (tracer_provider || ::OpenTelemetry.tracer_provider).tracer(SCOPE, MongoMQ::VERSION)
        meter_provider ||= ::OpenTelemetry.meter_provider if ::OpenTelemetry.respond_to?(:meter_provider)
        @instruments = meter_provider && Instruments.for(meter_provider)
        @propagator = propagator
      end

      # The producer's context of event i (0: the head) of a lease, from its attributes
      # (traceparent, tracestate: whatever the propagator reads), over `context`: for
      # code that claims by hand, as a parent or (better, as the worker does) a link:
      #
      #   producer = OpenTelemetry::Trace.current_span(telemetry.extract(lease)).context
      #   tracer.in_span("handle", links: [OpenTelemetry::Trace::Link.new(producer)]) { ... }
      #
      # `context` itself when the event carries none.
      def extract(lease, index = 0, context: ::OpenTelemetry::Context.current)
        propagator.extract(lease.attrs_at(index), context: context)
      end

      # One OpenTelemetry::Trace::Link per event of the lease whose attributes carry a
      # valid span context, in the lease's order: the links of the worker's process span.
      def links(lease)
        Array.new(lease.count) do |i|
          ctx = ::OpenTelemetry::Trace.current_span(extract(lease, i, context: ::OpenTelemetry::Context.empty)).context
          ctx.valid? ? ::OpenTelemetry::Trace::Link.new(ctx) : nil
        end.compact
      end

      def inspect
        "#<#{self.class.name}#{@instruments ? "" : " (no metrics)"}>"
      end

      # @api private: Queue's publishes. A span "send {db}.{prefix}" (a child of the
      # current context), whose context the propagator injects into a Hash yielded to
      # the block (the Queue adds it to the events' attributes, within their bounds);
      # the block returns a Published (single: group given) or anything (a batch of
      # `count`). Records sent.messages and operation.duration.
      def publish(queue, group, count)
        dest = destination(queue)
        attrs = base(dest).merge!("messaging.operation.type" => "send", "messaging.operation.name" => "publish")
        if group
          attrs["messaging.mongomq.message.group"] = group
        else
          attrs["messaging.batch.message_count"] = count
        end
        parent = ::OpenTelemetry::Context.current
        span = @tracer.start_span("send #{dest}", with_parent: parent, attributes: attrs, kind: :producer)
        own = own?(span, parent)
        carrier = {}
        propagator.inject(carrier, context: ::OpenTelemetry::Trace.context_with_span(span, parent_context: parent))
        started = monotonic
        error = nil
        begin
          result = yield carrier
          span.set_attribute("messaging.message.id", result.seq.to_s) if own && group
          result
        rescue Exception => e # rubocop:disable Lint/RescueException
          error = e
          failed(span, e) if own
          raise
        ensure
          if @instruments
            attrs = metric_attrs(dest, error).merge!("messaging.operation.name" => "publish")
            @instruments.sent.add(count, attributes: attrs)
            @instruments.operation_duration.record(monotonic - started, attributes: attrs)
          end
          span.finish if own
        end
      end

      # @api private: Queue#ack and #nack (op "ack"/"nack"): operation.duration (the
      # worker's settle spans are ProcessSpan#settle's).
      def settled(queue, op)
        started = monotonic
        error = nil
        begin
          yield
        rescue Exception => e # rubocop:disable Lint/RescueException
          error = e
          raise
        ensure
          if @instruments
            @instruments.operation_duration.record(monotonic - started,
                                                   attributes: metric_attrs(destination(queue), error).merge!("messaging.operation.name" => op))
          end
        end
      end

      # @api private: the worker claimed `count` events.
      def consumed(queue, count)
        @instruments&.consumed&.add(count, attributes: base(destination(queue)).merge!("messaging.operation.name" => "claim"))
      end

      # @api private: the worker's own context (its process spans' parent).
      def current_context
        ::OpenTelemetry::Context.current
      end

      # @api private: the worker's span of one lease (ProcessSpan).
      def process(queue, lease, parent)
        ProcessSpan.new(self, @tracer, @instruments, destination(queue), lease, parent)
      end

      # @api private
      def base(dest)
        { "messaging.system" => SYSTEM, "messaging.destination.name" => dest }
      end

      # @api private
      def metric_attrs(dest, error)
        attrs = base(dest)
        attrs["error.type"] = OTel.error_type(error) if error
        attrs
      end

      # @api private: error status, an "exception" event and error.type on a span.
      def failed(span, error)
        span.record_exception(error)
        span.set_attribute("error.type", OTel.error_type(error))
        span.status = ::OpenTelemetry::Trace::Status.error(error.message.to_s)
      end

      # @api private: whether the span is one the tracer made for us (the API's no-op
      # tracer hands back the parent's span, which is not ours to change or finish).
      def own?(span, parent)
        !span.equal?(::OpenTelemetry::Trace.current_span(parent))
      end

      private

      def propagator
        @propagator || ::OpenTelemetry.propagation
      end

      def destination(queue)
        "#{queue.db_name}.#{queue.prefix}"
      end

      def monotonic
        ::Process.clock_gettime(::Process::CLOCK_MONOTONIC)
      end
    end

    # @api private: the worker's span "process {db}.{prefix}" of one lease, linked to the
    # producers' contexts; #run runs the handler with it current, #settle records the
    # ack or nack as its child, #finish ends it.
    class ProcessSpan
      def initialize(telemetry, tracer, instruments, dest, lease, parent)
        @telemetry = telemetry
        @tracer = tracer
        @instruments = instruments
        @dest = dest
        count = lease.count
        attrs = telemetry.base(dest).merge!("messaging.operation.type" => "process", "messaging.operation.name" => "process",
                                            "messaging.mongomq.message.group" => lease.group,
                                            "messaging.mongomq.message.attempts" => lease.attempts)
        if count > 1
          attrs["messaging.batch.message_count"] = count
        else
          attrs["messaging.message.id"] = lease.seq.to_s
        end
        @span = tracer.start_span("process #{dest}", with_parent: parent, attributes: attrs, links: telemetry.links(lease),
                                                     kind: :consumer)
        @own = telemetry.own?(@span, parent)
        @context = ::OpenTelemetry::Trace.context_with_span(@span, parent_context: parent)
      end

      def run(&handler)
        started = ::Process.clock_gettime(::Process::CLOCK_MONOTONIC)
        error = nil
        begin
          ::OpenTelemetry::Context.with_current(@context, &handler)
        rescue Exception => e # rubocop:disable Lint/RescueException
          error = e
          @telemetry.failed(@span, e) if @own
          raise
        ensure
          @instruments&.process_duration&.record(::Process.clock_gettime(::Process::CLOCK_MONOTONIC) - started,
                                                 attributes: @telemetry.metric_attrs(@dest, error).merge!("messaging.operation.name" => "process"))
        end
      end

      def settle(op)
        attrs = @telemetry.base(@dest).merge!("messaging.operation.type" => "settle", "messaging.operation.name" => op)
        span = @tracer.start_span("#{op} #{@dest}", with_parent: @context, attributes: attrs, kind: :client)
        own = @telemetry.own?(span, @context)
        begin
          yield
        rescue Exception => e # rubocop:disable Lint/RescueException
          @telemetry.failed(span, e) if own
          raise
        ensure
          span.finish if own
        end
      end

      def finish
        @span.finish if @own
      end
    end
    private_constant :ProcessSpan
  end
end
