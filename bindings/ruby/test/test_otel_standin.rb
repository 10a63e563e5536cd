# frozen_string_literal: true

# The stand-in's W3C Trace Context propagator (support/standin_api/opentelemetry/
# trace_context.rb) against the W3C recommendation: the traceparent header is what
# crosses languages in the matrix, so it must be exactly "00-{trace-id}-{parent-id}-
# {flags}" out, and only what the W3C accepts in. Defined only when the stand-in is the
# OpenTelemetry in use (support/otel.rb): with the real gems these tests would test
# theirs, which are not this code (and, for one, are laxer: they take uppercase hex).
require_relative "support/otel"
require "minitest/autorun"

return if MongoMQTest::OTel::REAL

class TestOTelStandIn < Minitest::Test
  TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
  SPAN = "00f067aa0ba902b7"

  def propagator
    OpenTelemetry::Trace::Propagation::TraceContext.text_map_propagator
  end

  def extracted(headers)
    OpenTelemetry::Trace.current_span(propagator.extract(headers, context: OpenTelemetry::Context.empty)).context
  end

  def context_of(trace_id, span_id, flags, tracestate = OpenTelemetry::Trace::Tracestate::DEFAULT)
    sc = OpenTelemetry::Trace::SpanContext.new(trace_id: [trace_id].pack("H*"), span_id: [span_id].pack("H*"),
                                               trace_flags: flags, tracestate: tracestate, remote: true)
    OpenTelemetry::Trace.context_with_span(OpenTelemetry::Trace.non_recording_span(sc), parent_context: OpenTelemetry::Context.empty)
  end

  def test_inject_writes_version_00
    carrier = {}
    propagator.inject(carrier, context: context_of(TRACE, SPAN, OpenTelemetry::Trace::TraceFlags::SAMPLED))
    assert_equal({ "traceparent" => "00-#{TRACE}-#{SPAN}-01" }, carrier, "no tracestate when it is empty")
    carrier = {}
    propagator.inject(carrier, context: context_of(TRACE, SPAN, OpenTelemetry::Trace::TraceFlags.from_byte(0xfe)))
    assert_equal "00-#{TRACE}-#{SPAN}-00", carrier["traceparent"], "version 00 defines only the sampled flag"
    carrier = {}
    state = OpenTelemetry::Trace::Tracestate.from_string("congo=t61rcWkgMzE, rojo=00f067aa0ba902b7")
    propagator.inject(carrier, context: context_of(TRACE, SPAN, OpenTelemetry::Trace::TraceFlags::SAMPLED, state))
    assert_equal "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", carrier["tracestate"]
    carrier = {}
    propagator.inject(carrier, context: OpenTelemetry::Context.empty)
    assert_empty carrier, "no valid span context: nothing"
  end

  def test_extract_accepts_what_the_w3c_accepts
    ctx = extracted("traceparent" => "00-#{TRACE}-#{SPAN}-01", "tracestate" => "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
    assert_equal [TRACE, SPAN, true, true], [ctx.hex_trace_id, ctx.hex_span_id, ctx.trace_flags.sampled?, ctx.remote?]
    assert_equal({ "rojo" => "00f067aa0ba902b7", "congo" => "t61rcWkgMzE" }, ctx.tracestate.to_h)
    refute extracted("traceparent" => "00-#{TRACE}-#{SPAN}-00").trace_flags.sampled?
    later = extracted("traceparent" => "cc-#{TRACE}-#{SPAN}-01-what-the-future-will-be-like")
    assert_equal [TRACE, SPAN], [later.hex_trace_id, later.hex_span_id], "a later version: its first four fields"
    assert extracted("traceparent" => "01-#{TRACE}-#{SPAN}-01").valid?
    assert_equal ["tenant@vendor", "a-b*c/d"], extracted("traceparent" => "00-#{TRACE}-#{SPAN}-01",
                                                        "tracestate" => "tenant@vendor=1,,a-b*c/d=x y").tracestate.to_h.keys
  end

  def test_extract_refuses_what_the_w3c_refuses
    [
      "00-#{TRACE.upcase}-#{SPAN}-01", # hex is lowercase
      "00-#{TRACE}-#{SPAN.upcase}-01",
      "00-#{"0" * 32}-#{SPAN}-01",     # all-zero trace id
      "00-#{TRACE}-#{"0" * 16}-01",    # all-zero parent id
      "ff-#{TRACE}-#{SPAN}-01",        # version ff
      "00-#{TRACE}-#{SPAN}-01-extra",  # version 00 has four fields
      "cc-#{TRACE}-#{SPAN}-01extra",   # a later version's fields follow a '-'
      "00-#{TRACE[1..]}-#{SPAN}-01",   # lengths
      "00-#{TRACE}-#{SPAN}0-01",
      "00-#{TRACE}-#{SPAN}-1",
      "0-#{TRACE}-#{SPAN}-01",
      "00_#{TRACE}_#{SPAN}_01",
      "", "garbage"
    ].each do |header|
      refute extracted("traceparent" => header).valid?, header.inspect
    end
    refute extracted({}).valid?, "no header"
    ctx = OpenTelemetry::Context.empty
    assert_same ctx, propagator.extract({ "traceparent" => "garbage" }, context: ctx), "a bad header: the context given"
  end

  def test_tracestate_discarded_whole_when_invalid
    good = "00-#{TRACE}-#{SPAN}-01"
    ["UPPER=1", "a=1,a=2", "a=", "=1", "a=1=2", "a=x,b", Array.new(33) { |i| "k#{i}=v" }.join(",")].each do |state|
      ctx = extracted("traceparent" => good, "tracestate" => state)
      assert ctx.valid?, "the traceparent stands (#{state[0, 20]})"
      assert_empty ctx.tracestate.to_h, state[0, 40]
    end
    assert_equal 32, extracted("traceparent" => good, "tracestate" => Array.new(32) { |i| "k#{i}=v" }.join(",")).tracestate.to_h.size
  end

  def test_round_trip_of_a_new_span
    setup = MongoMQTest::OTel::Setup.new
    span = setup.tracer.start_span("x", kind: :producer)
    carrier = {}
    propagator.inject(carrier, context: OpenTelemetry::Trace.context_with_span(span, parent_context: OpenTelemetry::Context.empty))
    span.finish
    assert_match(/\A00-[0-9a-f]{32}-[0-9a-f]{16}-01\z/, carrier["traceparent"])
    back = extracted(carrier)
    assert_equal [span.context.hex_trace_id, span.context.hex_span_id], [back.hex_trace_id, back.hex_span_id]
  end
end
