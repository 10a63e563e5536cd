# frozen_string_literal: true

# The test-only stand-in (see opentelemetry.rb beside it) of the OpenTelemetry Ruby
# metrics API (the gem opentelemetry-metrics-api): OpenTelemetry.meter_provider(=), the
# no-op MeterProvider, Meter, Counter and Histogram. Signatures as in the real gem,
# open-telemetry/opentelemetry-ruby, checked against:
#   metrics_api/lib/opentelemetry-metrics-api.rb            OpenTelemetry.meter_provider(=)
#   metrics_api/lib/opentelemetry/metrics/meter_provider.rb meter(name, version:, schema_url:, attributes:)
#   metrics_api/lib/opentelemetry/metrics/meter.rb          create_counter(name, unit:, description:),
#                                                           create_histogram(name, unit:, description:),
#                                                           NAME_REGEX, the duplicate-registration warning
#   metrics_api/lib/opentelemetry/metrics/instrument/counter.rb    add(increment, attributes: {})
#   metrics_api/lib/opentelemetry/metrics/instrument/histogram.rb  record(amount, attributes: {})
require "opentelemetry"

module OpenTelemetry
  # The real API's default is a proxy that delegates once an SDK's provider is set; the
  # stand-in's is the no-op provider itself.
  def meter_provider=(provider)
    @mutex.synchronize { @meter_provider = provider }
  end

  def meter_provider
    @mutex.synchronize { @meter_provider ||= Metrics::MeterProvider.new }
  end

  # The metrics API: instruments that record nothing (an SDK's are its subclasses).
  module Metrics
    module Instrument
      # A monotonic sum.
      class Counter
        def add(increment, attributes: {}); end
      end

      # A distribution of values.
      class Histogram
        def record(amount, attributes: {}); end
      end
    end

    # Makes instruments; the no-op one's record nothing. As the real one: a name must
    # match NAME_REGEX (else InstrumentNameError), and a name registered twice on one
    # meter is logged as a warning.
    class Meter
      COUNTER = Instrument::Counter.new
      HISTOGRAM = Instrument::Histogram.new
      private_constant :COUNTER, :HISTOGRAM

      NAME_REGEX = /\A[a-zA-Z][-.\w]{0,62}\z/
      InstrumentNameError = Class.new(OpenTelemetry::Error)

      def initialize
        @mutex = Mutex.new
        @instrument_registry = {}
      end

      def create_counter(name, unit: nil, description: nil)
        create_instrument(:counter, name, unit, description) { COUNTER }
      end

      def create_histogram(name, unit: nil, description: nil)
        create_instrument(:histogram, name, unit, description) { HISTOGRAM }
      end

      private

      def create_instrument(_kind, name, _unit, _description)
        raise InstrumentNameError, name.inspect unless name.is_a?(String) && NAME_REGEX.match?(name)

        @mutex.synchronize do
          OpenTelemetry.logger.warn("duplicate instrument registration occurred for instrument #{name}") if @instrument_registry.include?(name)
          @instrument_registry[name] = yield
        end
      end
    end

    # One no-op Meter for every name.
    class MeterProvider
      def meter(name, version: nil, schema_url: nil, attributes: nil) # rubocop:disable Lint/UnusedMethodArgument
        @meter ||= Meter.new
      end
    end
  end
end
