# frozen_string_literal: true

# The test-only stand-in (see ../opentelemetry.rb) of the OpenTelemetry Ruby API's W3C
# Trace Context propagator, written from the W3C Trace Context recommendation
# (https://www.w3.org/TR/trace-context/): traceparent "00-{trace-id}-{parent-id}-{flags}"
# (lowercase hex, 32, 16 and 2 digits; all-zero ids invalid; version ff invalid; a later
# version may add "-..." fields after the 55 characters version 00 has) and tracestate.
# Its shape is the real gem's (open-telemetry/opentelemetry-ruby, checked against
# api/lib/opentelemetry/trace/propagation/trace_context.rb: text_map_propagator, and
# trace_context/text_map_propagator.rb: inject(carrier, context:, setter:),
# extract(carrier, context:, getter:), fields). This header is what crosses languages in
# the matrix, so it is strict where the W3C is.
module OpenTelemetry
  module Trace
    module Propagation
      # The W3C Trace Context format.
      module TraceContext
        # One traceparent header's fields.
        class TraceParent
          InvalidFormatError = Class.new(OpenTelemetry::Error)

          # version 00 exactly; another version: these 55 characters, then "-..." or nothing.
          FORMAT = /\A(?<version>[0-9a-f]{2})-(?<trace_id>[0-9a-f]{32})-(?<span_id>[0-9a-f]{16})-(?<flags>[0-9a-f]{2})(?<rest>.*)\z/m
          ZERO_TRACE = "0" * 32
          ZERO_SPAN = "0" * 16
          private_constant :FORMAT, :ZERO_TRACE, :ZERO_SPAN

          class << self
            private :new

            def from_span_context(ctx)
              new(trace_id: ctx.trace_id, span_id: ctx.span_id, flags: ctx.trace_flags)
            end

            # InvalidFormatError unless the header is one the W3C says to accept.
            def from_string(string)
              m = string.is_a?(String) && FORMAT.match(string.strip)
              raise InvalidFormatError, "traceparent: not version-traceid-parentid-flags" unless m
              raise InvalidFormatError, "traceparent: version ff" if m[:version] == "ff"
              raise InvalidFormatError, "traceparent: version 00 has no more fields" if m[:version] == "00" && !m[:rest].empty?
              raise InvalidFormatError, "traceparent: a later version's fields follow a '-'" unless m[:rest].empty? || m[:rest].start_with?("-")
              raise InvalidFormatError, "traceparent: all-zero trace id" if m[:trace_id] == ZERO_TRACE
              raise InvalidFormatError, "traceparent: all-zero parent id" if m[:span_id] == ZERO_SPAN

              new(trace_id: [m[:trace_id]].pack("H*"), span_id: [m[:span_id]].pack("H*"),
                  flags: TraceFlags.from_byte(m[:flags].to_i(16)))
            end
          end

          attr_reader :trace_id, :span_id, :flags

          def initialize(trace_id:, span_id:, flags:)
            @trace_id = trace_id
            @span_id = span_id
            @flags = flags
          end

          def sampled?
            @flags.sampled?
          end

          # Version 00: the only flag it defines is sampled.
          def to_s
            "00-#{@trace_id.unpack1("H*")}-#{@span_id.unpack1("H*")}-#{sampled? ? "01" : "00"}"
          end
        end

        # Injects and extracts traceparent and tracestate.
        class TextMapPropagator
          TRACEPARENT_KEY = "traceparent"
          TRACESTATE_KEY = "tracestate"
          FIELDS = [TRACEPARENT_KEY, TRACESTATE_KEY].freeze
          private_constant :TRACEPARENT_KEY, :TRACESTATE_KEY, :FIELDS

          # Writes the context's current span context (nothing when it is invalid);
          # tracestate only when not empty.
          def inject(carrier, context: Context.current, setter: Context::Propagation.text_map_setter)
            span_context = Trace.current_span(context).context
            return unless span_context.valid?

            setter.set(carrier, TRACEPARENT_KEY, TraceParent.from_span_context(span_context).to_s)
            setter.set(carrier, TRACESTATE_KEY, span_context.tracestate.to_s) unless span_context.tracestate.empty?
            nil
          end

          # The context given with the carrier's span context (remote, non-recording)
          # as its current span; the context given itself when there is no valid
          # traceparent.
          def extract(carrier, context: Context.current, getter: Context::Propagation.text_map_getter)
            tp = TraceParent.from_string(getter.get(carrier, TRACEPARENT_KEY))
            tracestate = Tracestate.from_string(getter.get(carrier, TRACESTATE_KEY))
            span_context = SpanContext.new(trace_id: tp.trace_id, span_id: tp.span_id, trace_flags: tp.flags,
                                           tracestate: tracestate, remote: true)
            Trace.context_with_span(Trace.non_recording_span(span_context), parent_context: context)
          rescue OpenTelemetry::Error
            context
          end

          def fields
            FIELDS
          end
        end

        extend self

        TEXT_MAP_PROPAGATOR = TextMapPropagator.new
        private_constant :TEXT_MAP_PROPAGATOR

        def text_map_propagator
          TEXT_MAP_PROPAGATOR
        end
      end
    end
  end
end
