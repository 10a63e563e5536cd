# frozen_string_literal: true

# A test-only stand-in for the part of the OpenTelemetry Ruby API (the gem
# opentelemetry-api) that mongomq/otel uses: the globals (tracer_provider, propagation),
# Context and its text-map getter, setter and no-op propagator. Trace is in
# opentelemetry/trace.rb, the W3C propagator in opentelemetry/trace_context.rb, metrics
# in opentelemetry-metrics-api.rb. RubyGems cannot be reached from the machine the
# suite was written on, so the real gem could not be installed; test/support/otel.rb
# puts this directory on $LOAD_PATH only when the real opentelemetry-sdk is missing, so
# that `require "opentelemetry"` in lib/mongomq/otel.rb finds this file instead.
#
# Written for these tests (not copied); the method names, signatures and behaviour
# follow the real gem's source in open-telemetry/opentelemetry-ruby, checked against:
#   api/lib/opentelemetry.rb                      OpenTelemetry.tracer_provider(=), propagation(=),
#                                                 logger, handle_error
#   api/lib/opentelemetry/context.rb              Context.create_key, current, attach, detach,
#                                                 with_current, with_value, value, empty, ROOT,
#                                                 #value, #set_value
#   api/lib/opentelemetry/context/propagation.rb  Propagation.text_map_getter / text_map_setter
#   api/lib/opentelemetry/context/propagation/noop_text_map_propagator.rb
#   api/lib/opentelemetry/trace.rb and trace/*.rb, metrics_api/lib/... (see those files)
# Only that subset exists here: anything else mongomq/otel called would fail these
# tests with NoMethodError, which is the point.
require "logger"

module OpenTelemetry
  # The base of the API's own errors (api/lib/opentelemetry/error.rb).
  class Error < StandardError; end

  # Which implementation this is, for the test output (the real gem has no such thing).
  STANDIN = true

  extend self

  @mutex = Mutex.new

  attr_writer :propagation, :logger, :error_handler

  def logger
    @logger ||= Logger.new($stderr, level: Logger::WARN)
  end

  def error_handler
    @error_handler ||= ->(exception: nil, message: nil) { logger.error("OpenTelemetry error: #{[message, exception&.message].compact.join(" - ")}") }
  end

  def handle_error(exception: nil, message: nil)
    error_handler.call(exception: exception, message: message)
  end

  # The real API hands out a proxy that later delegates to the SDK's provider; the
  # stand-in has no proxy: a provider set later is seen by tracers taken later.
  def tracer_provider=(provider)
    @mutex.synchronize { @tracer_provider = provider }
  end

  def tracer_provider
    @mutex.synchronize { @tracer_provider ||= Trace::TracerProvider.new }
  end

  def propagation
    @propagation ||= Context::Propagation::NoopTextMapPropagator.new
  end

  # The values of a context: immutable, one per fiber current (a stack of them).
  class Context
    # A key of a context's values (api/lib/opentelemetry/context/key.rb).
    class Key
      attr_reader :name

      def initialize(name)
        @name = name
      end
    end

    STACK_KEY = :__opentelemetry_context_storage__
    private_constant :STACK_KEY

    DetachError = Class.new(OpenTelemetry::Error)

    class << self
      def create_key(name)
        Key.new(name)
      end

      def current
        stack.last || ROOT
      end

      def attach(context)
        s = stack
        s.push(context)
        s.size
      end

      def detach(token)
        s = stack
        matched = (token == s.size)
        OpenTelemetry.handle_error(exception: DetachError.new("calls to detach should match corresponding calls to attach.")) unless matched
        s.pop
        matched
      end

      def with_current(ctx)
        token = attach(ctx)
        yield ctx
      ensure
        detach(token)
      end

      def with_value(key, value)
        ctx = current.set_value(key, value)
        token = attach(ctx)
        yield ctx, value
      ensure
        detach(token)
      end

      def value(key)
        current.value(key)
      end

      def clear
        stack.clear
      end

      def empty
        new({})
      end

      private

      def stack
        Thread.current[STACK_KEY] ||= [] # Thread#[] is fiber-local, as the real one's
      end
    end

    def initialize(entries)
      @entries = entries.freeze
    end

    def value(key)
      @entries[key]
    end
    alias [] value

    def set_value(key, value)
      Context.new(@entries.merge(key => value))
    end

    ROOT = empty.freeze

    # Carrying a context across processes (api/lib/opentelemetry/context/propagation.rb).
    module Propagation
      # Reads a Hash-like carrier (text_map_getter.rb).
      class TextMapGetter
        def get(carrier, key)
          carrier[key]
        end

        def keys(carrier)
          carrier.keys
        end
      end

      # Writes a Hash-like carrier (text_map_setter.rb).
      class TextMapSetter
        def set(carrier, key, value)
          carrier[key] = value
        end
      end

      # The API's default propagator: injects nothing, extracts the context given
      # (noop_text_map_propagator.rb).
      class NoopTextMapPropagator
        EMPTY_LIST = [].freeze
        private_constant :EMPTY_LIST

        def inject(carrier, context: Context.current, setter: Context::Propagation.text_map_setter); end

        def extract(carrier, context: Context.current, getter: Context::Propagation.text_map_getter)
          context
        end

        def fields
          EMPTY_LIST
        end
      end

      extend self

      TEXT_MAP_GETTER = TextMapGetter.new
      TEXT_MAP_SETTER = TextMapSetter.new
      private_constant :TEXT_MAP_GETTER, :TEXT_MAP_SETTER

      def text_map_getter
        TEXT_MAP_GETTER
      end

      def text_map_setter
        TEXT_MAP_SETTER
      end
    end
  end
end

require "opentelemetry/trace"
require "opentelemetry/trace_context"
