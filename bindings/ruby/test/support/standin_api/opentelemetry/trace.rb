# frozen_string_literal: true

# The test-only stand-in (see ../opentelemetry.rb) of the OpenTelemetry Ruby API's
# Trace module: ids, TraceFlags, Tracestate, SpanContext, the no-op Span, Link, Status,
# SpanKind, the no-op Tracer and TracerProvider, and the helpers current_span,
# context_with_span, with_span, non_recording_span. Signatures as in the real gem,
# open-telemetry/opentelemetry-ruby, checked against:
#   api/lib/opentelemetry/trace.rb               current_span(context = nil),
#                                                context_with_span(span, parent_context:),
#                                                with_span(span) { |span, context| },
#                                                non_recording_span(span_context)
#   api/lib/opentelemetry/trace/span_context.rb  SpanContext.new(trace_id:, span_id:,
#                                                trace_flags:, tracestate:, remote:),
#                                                hex_trace_id, hex_span_id, valid?, remote?
#   api/lib/opentelemetry/trace/trace_flags.rb   TraceFlags.from_byte, sampled?, DEFAULT, SAMPLED
#   api/lib/opentelemetry/trace/tracestate.rb    Tracestate.from_string, from_hash, to_s, empty?
#   api/lib/opentelemetry/trace/span.rb          context, recording?, set_attribute,
#                                                add_attributes, add_event(name, attributes:,
#                                                timestamp:), record_exception(exception,
#                                                attributes:), status=, name=, finish(end_timestamp:)
#   api/lib/opentelemetry/trace/link.rb          Link.new(span_context, attributes = nil)
#   api/lib/opentelemetry/trace/status.rb        Status.error/ok/unset(description), code, OK/UNSET/ERROR
#   api/lib/opentelemetry/trace/span_kind.rb     :internal, :server, :client, :producer, :consumer
#   api/lib/opentelemetry/trace/tracer.rb        start_span(name, with_parent:, attributes:, links:,
#                                                start_timestamp:, kind:), start_root_span, in_span
#   api/lib/opentelemetry/trace/tracer_provider.rb  tracer(name = nil, version = nil)
require "securerandom"

module OpenTelemetry
  module Trace
    extend self

    CURRENT_SPAN_KEY = Context.create_key("current-span")
    private_constant :CURRENT_SPAN_KEY

    # All-zero ids: invalid (16 and 8 bytes, binary).
    INVALID_TRACE_ID = ("\0" * 16).b.freeze
    INVALID_SPAN_ID = ("\0" * 8).b.freeze

    def generate_trace_id
      loop do
        id = SecureRandom.random_bytes(16)
        return id unless id == INVALID_TRACE_ID
      end
    end

    def generate_span_id
      loop do
        id = SecureRandom.random_bytes(8)
        return id unless id == INVALID_SPAN_ID
      end
    end

    def current_span(context = nil)
      context ||= Context.current
      context.value(CURRENT_SPAN_KEY) || Span::INVALID
    end

    def context_with_span(span, parent_context: Context.current)
      parent_context.set_value(CURRENT_SPAN_KEY, span)
    end

    def with_span(span)
      Context.with_value(CURRENT_SPAN_KEY, span) { |c, s| yield s, c }
    end

    def non_recording_span(span_context)
      Span.new(span_context: span_context)
    end

    # The trace's flags byte: only "sampled" (bit 0) is defined.
    class TraceFlags
      class << self
        private :new

        def from_byte(flags)
          flags = 0 unless (flags & ~0xFF).zero?
          new(flags)
        end
      end

      def initialize(flags)
        @flags = flags
      end

      def sampled?
        (@flags & 1) != 0
      end

      DEFAULT = from_byte(0)
      SAMPLED = from_byte(1)
    end

    # W3C tracestate: an immutable ordered list of vendor key=value members.
    class Tracestate
      # The W3C grammar (https://www.w3.org/TR/trace-context/#tracestate-header): a
      # simple key, or tenant@system; a value of printable ASCII without ',' and '='
      # whose last character is not a space.
      KEY = %r{\A(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})\z}
      VALUE = /\A[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]\z/
      MAX_MEMBERS = 32
      private_constant :KEY, :VALUE, :MAX_MEMBERS

      class << self
        private :new

        # Parses a tracestate header. A header that breaks the grammar (a bad member,
        # a key twice, more than 32 members) is discarded whole, as the W3C says:
        # DEFAULT.
        def from_string(header)
          return DEFAULT if header.nil? || header.empty?

          hash = {}
          header.split(",", -1).each do |member|
            member = member.strip
            next if member.empty? # empty list members are allowed

            key, value = member.split("=", 2)
            return DEFAULT unless value && KEY.match?(key) && VALUE.match?(value) && !hash.key?(key)

            hash[key] = value
          end
          return DEFAULT if hash.empty? || hash.size > MAX_MEMBERS

          new(hash)
        end

        # The members of a Hash that are valid (the others left out, as the real one
        # does).
        def from_hash(hash)
          new(hash.select { |k, v| KEY.match?(k) && VALUE.match?(v) }.first(MAX_MEMBERS).to_h)
        end
      end

      def initialize(hash)
        @hash = hash.freeze
      end

      def value(key)
        @hash[key]
      end
      alias [] value

      def to_s
        @hash.map { |k, v| "#{k}=#{v}" }.join(",")
      end

      def to_h
        @hash.dup
      end

      def empty?
        @hash.empty?
      end

      def ==(other)
        other.respond_to?(:to_h) && @hash == other.to_h
      end

      DEFAULT = new({})
    end

    # The ids and flags of a span, as they travel.
    class SpanContext
      attr_reader :trace_id, :span_id, :trace_flags, :tracestate

      def initialize(trace_id: Trace.generate_trace_id, span_id: Trace.generate_span_id,
                     trace_flags: TraceFlags::DEFAULT, tracestate: Tracestate::DEFAULT, remote: false)
        @trace_id = trace_id
        @span_id = span_id
        @trace_flags = trace_flags
        @tracestate = tracestate
        @remote = remote
      end

      def hex_trace_id
        @trace_id.unpack1("H*")
      end

      def hex_span_id
        @span_id.unpack1("H*")
      end

      def valid?
        @trace_id != INVALID_TRACE_ID && @span_id != INVALID_SPAN_ID
      end

      def remote?
        @remote
      end

      INVALID = new(trace_id: INVALID_TRACE_ID, span_id: INVALID_SPAN_ID)
    end

    # The API's span: records nothing (an SDK's spans are its subclasses).
    class Span
      attr_reader :context

      # @api private
      def initialize(span_context: nil)
        @context = span_context || SpanContext.new
      end

      def recording?
        false
      end

      def set_attribute(_key, _value)
        self
      end
      alias []= set_attribute

      def add_attributes(_attributes)
        self
      end

      def add_event(_name, attributes: nil, timestamp: nil) # rubocop:disable Lint/UnusedMethodArgument
        self
      end

      def record_exception(exception, attributes: nil); end

      def status=(status); end

      def name=(new_name); end

      def finish(end_timestamp: nil) # rubocop:disable Lint/UnusedMethodArgument
        self
      end

      INVALID = new(span_context: SpanContext::INVALID)
    end

    # A link from a span to another span's context.
    class Link
      EMPTY_ATTRIBUTES = {}.freeze
      private_constant :EMPTY_ATTRIBUTES

      attr_reader :context, :attributes

      def initialize(span_context, attributes = nil)
        @context = span_context
        @attributes = attributes.nil? ? EMPTY_ATTRIBUTES : attributes.dup.freeze
      end
    end

    # A finished span's status: a code and a description.
    class Status
      class << self
        private :new

        def unset(description = "")
          new(UNSET, description: description)
        end

        def ok(description = "")
          new(OK, description: description)
        end

        def error(description = "")
          new(ERROR, description: description)
        end
      end

      attr_reader :code, :description

      def initialize(code, description: "")
        @code = code
        @description = description
      end

      def ok?
        @code != ERROR
      end

      OK = 0
      UNSET = 1
      ERROR = 2
    end

    # The kinds of span; the API takes the Symbols (kind: :producer).
    module SpanKind
      INTERNAL = :internal
      SERVER = :server
      CLIENT = :client
      PRODUCER = :producer
      CONSUMER = :consumer
    end

    # The API's tracer: makes no spans. As the real one, start_span returns the
    # parent's span when it is valid (so a context passes through), else Span::INVALID.
    class Tracer
      def in_span(name, attributes: nil, links: nil, start_timestamp: nil, kind: nil)
        span = nil
        span = start_span(name, attributes: attributes, links: links, start_timestamp: start_timestamp, kind: kind)
        Trace.with_span(span) { |s, c| yield s, c }
      rescue Exception => e # rubocop:disable Lint/RescueException
        span&.record_exception(e)
        span&.status = Status.error("Unhandled exception of type: #{e.class}")
        raise e
      ensure
        span&.finish
      end

      def start_root_span(name, attributes: nil, links: nil, start_timestamp: nil, kind: nil) # rubocop:disable Lint/UnusedMethodArgument
        Span::INVALID
      end

      def start_span(name, with_parent: nil, attributes: nil, links: nil, start_timestamp: nil, kind: nil) # rubocop:disable Lint/UnusedMethodArgument
        span = Trace.current_span(with_parent)
        span.context.valid? ? span : Span::INVALID
      end
    end

    # The API's tracer provider: one no-op Tracer.
    class TracerProvider
      def tracer(name = nil, version = nil) # rubocop:disable Lint/UnusedMethodArgument
        @tracer ||= Tracer.new
      end
    end
  end
end
