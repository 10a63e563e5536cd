# frozen_string_literal: true

# mongomq/otel beyond the CONTRACT's six tracing scenarios (test_trace.rb): that
# `require "mongomq"` alone loads no OpenTelemetry and a missing gem is a LoadError
# naming it; the telemetry setter (nil turns it off); the attribute bounds of the
# injection (a 16th attribute, a tracestate over ATTR_VALUE_MAX, a batch's full event);
# a keyed batch's outcomes; Telemetry#extract and #links for hand claimers, whose own
# claim, ack and nack record metrics only; a lease-lost ack's settle span; the worker's
# starting context as the process spans' parent; the API's no-op tracer leaving the
# caller's span alone; instruments made once per meter provider.
require_relative "support/trace_case"
require "stringio"

class TestOTel < MongoMQTest::TraceCase
  def test_require_mongomq_loads_no_opentelemetry
    script = <<~'RUBY'
      require "mongomq"
      abort "OpenTelemetry loaded" if defined?(::OpenTelemetry) || $LOADED_FEATURES.any? { |f| f.include?("opentelemetry") }
      MongoMQ::Client.open(ENV["MONGOMQ_TEST_URI"]) do |c|
        q = c.queue("x", "q")
        abort "telemetry #{q.telemetry.inspect}" unless q.telemetry.nil?
        begin
          q.telemetry = Object.new
          abort "an Object was taken"
        rescue MongoMQ::ArgumentError => e
          puts e.message
        end
      end
      abort "OpenTelemetry loaded" if defined?(::OpenTelemetry)
      puts "ok"
    RUBY
    out = run_child(script)
    assert_match(/telemetry must be a MongoMQ::OTel::Telemetry \(require "mongomq\/otel"\) or nil/, out)
    assert_equal "ok", out.lines.last.chomp
  end

  def test_missing_opentelemetry_is_a_load_error_naming_the_gem
    script = <<~'RUBY'
      module Kernel
        alias_method :require_before_test, :require
        def require(name)
          raise LoadError, "cannot load such file -- #{name}" if name.start_with?("opentelemetry")

          require_before_test(name)
        end
      end
      begin
        require "mongomq/otel"
        puts "loaded"
      rescue LoadError => e
        puts e.message
      end
    RUBY
    out = run_child(script)
    assert_match(/mongomq\/otel needs the opentelemetry-api gem .*cannot load such file -- opentelemetry/, out)
  end

  def test_telemetry_setter_and_nil
    assert_instance_of MongoMQ::OTel::Telemetry, @queue.telemetry
    error = assert_raises(MongoMQ::ArgumentError) { @queue.telemetry = "otel" }
    assert_match(/telemetry must be/, error.message)
    @queue.publish("g", "traced")
    @queue.telemetry = nil
    assert_nil @queue.telemetry
    @queue.publish("g", "not traced")
    assert_equal [["traceparent"], []], @queue.peek(group: "g").map { |e| e.attrs.keys }
    assert_equal 1, @otel.spans.size, "the second publish made no span"
    assert_equal [1], @otel.points_named("messaging.client.sent.messages").map(&:sum)
  end

  def test_injection_within_the_attribute_bounds
    remote = "00-#{"ab" * 16}-#{"cd" * 8}-01"
    long_state = Array.new(20) { |i| "k#{i}=#{"v" * 250}" }.join(",") # > ATTR_VALUE_MAX bytes, valid W3C
    published = lambda do |group, attrs, tracestate|
      ctx = @otel.propagator.extract({ "traceparent" => remote, "tracestate" => tracestate },
                                     context: OpenTelemetry::Context.empty)
      OpenTelemetry::Context.with_current(ctx) { @queue.publish(group, "x", attrs: attrs) }
      @queue.peek(group: group).first.attrs
    end
    fifteen = Array.new(15) { |i| ["k#{i}", "v"] }.to_h
    got = published.call("fifteen", fifteen, "vendor=1")
    assert_equal 16, got.size, "traceparent is the 16th, tracestate would be the 17th"
    assert_match(/\A00-#{"ab" * 16}-[0-9a-f]{16}-01\z/, got["traceparent"])
    refute got.key?("tracestate")

    got = published.call("fourteen", fifteen.first(14).to_h, "vendor=1")
    assert_equal %w[traceparent tracestate], got.keys.last(2)
    assert_equal "vendor=1", got["tracestate"], "the parent's tracestate goes on"

    got = published.call("long", { "a" => "b" }, long_state)
    assert_operator long_state.bytesize, :>, MongoMQ::ATTR_VALUE_MAX
    assert_equal %w[a traceparent], got.keys, "a tracestate too long to be a value is left out"

    own_state = published.call("own", { "tracestate" => "mine=1" }, "vendor=1")
    assert_equal [%w[tracestate mine=1]], own_state.to_a.first(1)
    assert_equal %w[tracestate traceparent], own_state.keys

    full = Array.new(16) { |i| ["k#{i}", "v"] }.to_h
    first = @queue.publish_batch { |b| b.add("b", "1", attrs: full).add("b", "2", attrs: { "n" => "1" }).add("b", "3") }
    stored = @queue.peek(group: "b")
    assert_equal [first, first + 1, first + 2], stored.map(&:seq)
    assert_equal [16, 2, 1], stored.map { |e| e.attrs.size }
    assert_equal full, stored[0].attrs, "the full event keeps exactly its own"
    assert_equal %w[n traceparent], stored[1].attrs.keys
  end

  def test_batch_outcomes_and_reuse_with_telemetry
    batch = MongoMQ::Batch.new
    batch.add("g", "a", dedup_key: "k1").add("g", "b", dedup_key: "k1").add("h", "c")
    result = @queue.publish_batch_with(batch)
    assert_equal [false, true, false], result.outcomes.map(&:duplicate?)
    assert_equal result.outcomes[0].seq, result.outcomes[1].seq
    assert_equal 2, result.added
    again = @queue.publish_batch_with(batch)
    assert_equal [true, true, false], again.outcomes.map(&:duplicate?), "a batch published again: its keys are taken"
    assert_equal 2, @otel.spans_named("send #{dest}").size
    assert_equal [6], @otel.points_named("messaging.client.sent.messages").map(&:sum), "duplicates included"
    batch.close
    assert_raises(MongoMQ::ClosedError) { @queue.publish_batch(batch) }
    assert_raises(MongoMQ::ArgumentError) { @queue.publish_batch(MongoMQ::Batch.new) } # empty: the library's error
    failed = @otel.spans_named("send #{dest}").last
    assert failed.error?
    assert_equal "MQ_ERR_ARG", failed.attributes["error.type"]
  end

  def test_extract_and_links_for_hand_claimers
    telemetry = @queue.telemetry
    @queue.publish("g", "traced")
    send = the_one("send #{dest}")
    @queue.telemetry = nil
    @queue.publish("g", "not traced")
    @queue.telemetry = telemetry
    @otel.reset_spans

    lease = claim!(max_events: 2)
    assert_equal 2, lease.count
    ctx = telemetry.extract(lease, context: OpenTelemetry::Context.empty)
    producer = OpenTelemetry::Trace.current_span(ctx).context
    assert_equal [send.trace_id, send.span_id, true], [producer.hex_trace_id, producer.hex_span_id, producer.remote?]
    assert_equal [[send.trace_id, send.span_id]], telemetry.links(lease).map { |l| [l.context.hex_trace_id, l.context.hex_span_id] },
                 "one link: the second event carries no context"
    empty = OpenTelemetry::Context.empty
    assert_same empty, telemetry.extract(lease, 1, context: empty), "no context in the event: the one given"
    @queue.nack(lease)
    @queue.ack(claim!(max_events: 2))
    assert_empty @otel.spans, "a hand claim, nack and ack make no span"
    ops = @otel.points_named("messaging.client.operation.duration").map { |p| p.attributes["messaging.operation.name"] }
    assert_equal %w[ack nack publish], ops.sort, "but their durations are measured"
    assert_empty @otel.points_named("messaging.client.consumed.messages"), "consumed counts the worker's claims"
  end

  def test_lease_lost_settle_span
    @queue.publish("g", "purged under the handler")
    run_worker_until(on_error: ->(*) {}, handler: ->(_) { other_queue.purge_group("g") }) do
      @otel.spans_named("process #{dest}").size == 1
    end
    ack = the_one("ack #{dest}")
    assert ack.error?
    assert_equal "MQ_LEASE_LOST", ack.attributes["error.type"]
    assert_equal ["exception"], ack.event_names
    refute the_one("process #{dest}").error?, "the handler itself succeeded"
    lost = @otel.points_named("messaging.client.operation.duration").select { |p| p.attributes["error.type"] }
    assert_equal [%w[ack MQ_LEASE_LOST]], lost.map { |p| p.attributes.values_at("messaging.operation.name", "error.type") }
  end

  def test_worker_context_is_the_process_parent
    @queue.publish("g", "x")
    started_in = nil
    worker = nil
    @otel.tracer.in_span("W") do |span|
      started_in = span.context
      worker = @queue.worker { nil }
    end
    begin
      eventually(within: 20) { @otel.spans_named("process #{dest}").size == 1 }
    ensure
      assert worker.stop.wait(20)
    end
    process = the_one("process #{dest}")
    assert_equal [started_in.hex_trace_id, started_in.hex_span_id], [process.trace_id, process.parent_span_id]
  end

  def test_noop_tracer_leaves_the_callers_span_alone
    @queue.telemetry = MongoMQ::OTel::Telemetry.new(tracer_provider: OpenTelemetry::Trace::TracerProvider.new,
                                                    meter_provider: @otel.meter_provider, propagator: @otel.propagator)
    @otel.tracer.in_span("P") { @queue.publish("g", "x") }
    caller_span = the_one("P")
    assert_empty caller_span.attributes, "the no-op tracer's 'span' is P itself: mongomq set nothing on it"
    assert_equal [["traceparent", traceparent(caller_span)]], @queue.peek(group: "g").first.attrs.to_a,
                 "and the context passes through, as the API's no-op tracer means it to"
  end

  def test_instruments_made_once_per_meter_provider
    log = StringIO.new
    before = OpenTelemetry.logger
    OpenTelemetry.logger = Logger.new(log)
    begin
      3.times { @otel.telemetry }
      MongoMQ::OTel::Telemetry.new(tracer_provider: @otel.tracer_provider, meter_provider: @otel.meter_provider)
    ensure
      OpenTelemetry.logger = before
    end
    refute_match(/duplicate/i, log.string)
  end

  private

  # The script's stdout, in a child Ruby with this process's load path (the gem, and
  # test/support's stand-in when it is the one in use); fails unless it exits 0.
  def run_child(script)
    out = nil
    spawn_ruby("-e", script) do |r, pid|
      out = r.read
      Process.wait(pid)
    end
    assert $?.success?, "the child failed: #{out}"
    out
  end
end
