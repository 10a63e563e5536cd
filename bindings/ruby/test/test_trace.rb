# frozen_string_literal: true

# The six tracing scenarios of bindings/CONTRACT.md ("Tracing (issue 22)"), under their
# names, against the OpenTelemetry test/support/otel.rb loads (the real SDK when its
# gems are installed, else the stand-in of test/support; the output says which), with
# the queue's telemetry set from it (support/trace_case.rb).
require_relative "support/trace_case"

puts "tracing tests: against #{MongoMQTest::OTel::IMPLEMENTATION}"

class TestTrace < MongoMQTest::TraceCase
  def test_trace_publish_process
    parent = nil
    seq = nil
    @otel.tracer.in_span("P") do |span|
      parent = span.context
      seq = @queue.publish("g", "e1", attrs: { tenant: "t-1" })
    end
    send = the_one("send #{dest}")
    assert_equal :producer, send.kind
    assert_equal [parent.hex_trace_id, parent.hex_span_id], [send.trace_id, send.parent_span_id], "a child of P"
    assert_equal send_attrs("messaging.mongomq.message.group" => "g", "messaging.message.id" => seq.to_s), send.attributes
    assert_equal ["mongomq", MongoMQ::VERSION], [send.scope_name, send.scope_version]
    refute send.error?

    stored = @queue.peek(group: "g")
    assert_equal [seq], stored.map(&:seq)
    assert_equal [["tenant", "t-1"], ["traceparent", traceparent(send)]], stored.first.attrs.to_a

    seen = Thread::Queue.new
    run_worker_until(concurrency: 1, handler: lambda do |lease|
      span = OpenTelemetry::Trace.current_span
      seen << [lease.seq, span.context.hex_span_id, span.recording?]
    end) { @otel.spans_named("process #{dest}").size == 1 }
    process = the_one("process #{dest}")
    assert_equal :consumer, process.kind
    refute_equal parent.hex_trace_id, process.trace_id, "another trace than P's"
    assert_nil process.parent_span_id, "the worker's own context had no span: a new trace"
    assert_equal [[send.trace_id, send.span_id]], process.links, "exactly one link, to the send span"
    assert_equal process_attrs("messaging.message.id" => seq.to_s, "messaging.mongomq.message.group" => "g",
                               "messaging.mongomq.message.attempts" => 1), process.attributes
    assert_equal ["mongomq", MongoMQ::VERSION], [process.scope_name, process.scope_version]
    refute process.error?
    assert_equal [seq, process.span_id, true], seen.pop, "the handler ran with the process span current"

    ack = the_one("ack #{dest}")
    assert_equal :client, ack.kind
    assert_equal [process.trace_id, process.span_id], [ack.trace_id, ack.parent_span_id], "a child of the process span"
    assert_equal settle_attrs("ack"), ack.attributes
    assert_empty @otel.spans_named("nack #{dest}")
    assert_equal 0, @queue.stats["messages"]
  end

  def test_trace_handler_error
    seq = @queue.publish("g", "fails once")
    send = the_one("send #{dest}")
    calls = Thread::Queue.new
    run_worker_until(backoff_base: 0.01, on_error: ->(*) {}, handler: lambda do |lease|
      calls << lease.attempts
      raise Boom, "the first time" if lease.attempts == 1
    end) { @otel.spans_named("process #{dest}").size == 2 }
    assert_equal [1, 2], Array.new(calls.size) { calls.pop }

    first, second = @otel.spans_named("process #{dest}").sort_by { |s| s.attributes["messaging.mongomq.message.attempts"] }
    [first, second].each do |s|
      assert_equal [[send.trace_id, send.span_id]], s.links, "both link to the send span"
      assert_equal seq.to_s, s.attributes["messaging.message.id"]
    end
    assert first.error?, "the failed run's status is error"
    assert_equal "MongoMQTest::TraceCase::Boom", first.attributes["error.type"]
    assert_equal ["exception"], first.event_names
    exception = first.events.first[1]
    assert_equal ["MongoMQTest::TraceCase::Boom", "the first time"], exception.values_at("exception.type", "exception.message")
    assert_equal 1, first.attributes["messaging.mongomq.message.attempts"]

    refute second.error?
    assert_equal 2, second.attributes["messaging.mongomq.message.attempts"]
    assert_empty second.events
    refute second.attributes.key?("error.type")

    nack = the_one("nack #{dest}")
    assert_equal [:client, first.span_id], [nack.kind, nack.parent_span_id], "the nack follows the failed run"
    assert_equal settle_attrs("nack"), nack.attributes
    ack = the_one("ack #{dest}")
    assert_equal [:client, second.span_id], [ack.kind, ack.parent_span_id]
    refute ack.error?
  end

  def test_trace_batch_publish
    seqs = @queue.publish_batch_with { |b| b.add("g1", "a").add("g2", "b").add("g1", "c") }.outcomes.map(&:seq)
    send = the_one("send #{dest}")
    assert_equal :producer, send.kind
    assert_equal send_attrs("messaging.batch.message_count" => 3), send.attributes, "a count, no message id, no group"
    stored = @queue.peek(limit: 10)
    assert_equal seqs.sort, stored.map(&:seq)
    stored.each { |e| assert_equal [["traceparent", traceparent(send)]], e.attrs.to_a, "event #{e.seq}" }

    leases = Thread::Queue.new
    run_worker_until(max_events: 3, handler: ->(lease) { leases << [lease.group, lease.seqs] }) do
      @otel.spans_named("process #{dest}").size == 2
    end
    assert_equal [["g1", [seqs[0], seqs[2]]], ["g2", [seqs[1]]]], Array.new(leases.size) { leases.pop }.sort
    g1 = @otel.spans_named("process #{dest}").find { |s| s.attributes["messaging.mongomq.message.group"] == "g1" }
    assert_equal [[send.trace_id, send.span_id]] * 2, g1.links, "one link per event of the batch lease"
    assert_equal process_attrs("messaging.batch.message_count" => 2, "messaging.mongomq.message.group" => "g1",
                               "messaging.mongomq.message.attempts" => 1), g1.attributes, "and no message id"
  end

  def test_trace_attrs_kept
    own = Array.new(16) { |i| ["k#{i}", "v#{i}"] }.to_h
    seq = @queue.publish("g", "full", attrs: own)
    assert_equal own.to_a, @queue.peek(group: "g").first.attrs.to_a, "exactly its 16: nothing injected"
    assert_equal seq.to_s, the_one("send #{dest}").attributes["messaging.message.id"], "the publish was traced all the same"

    @otel.reset_spans
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    @otel.tracer.in_span("P") { @queue.publish("h", "own", attrs: { "traceparent" => mine, "x" => "y" }) }
    assert_equal [["traceparent", mine], %w[x y]], @queue.peek(group: "h").first.attrs.to_a, "the user's traceparent is kept"
    the_one("send #{dest}")
  end

  def test_trace_metrics
    3.times { |i| @queue.publish("g#{i}", "e#{i}") }
    failed = false
    acked = Thread::Queue.new
    run_worker_until(backoff_base: 0.01, on_error: ->(*) {}, handler: lambda do |lease|
      unless failed
        failed = true
        raise Boom, "once"
      end
      acked << lease.seq
    end) { acked.size == 3 && @otel.spans_named("ack #{dest}").size == 3 }

    sent = @otel.points_named("messaging.client.sent.messages")
    assert_equal 3, sent.sum(&:sum)
    sent.each { |p| assert_equal [dest, "mongomq", "{message}"], [p.attributes["messaging.destination.name"], p.scope_name, p.unit] }
    consumed = @otel.points_named("messaging.client.consumed.messages")
    assert_equal 4, consumed.sum(&:sum), "3 events, one of them twice"
    consumed.each { |p| assert_equal [dest, "claim"], p.attributes.values_at("messaging.destination.name", "messaging.operation.name") }
    sent.each { |p| assert_equal "publish", p.attributes["messaging.operation.name"] }

    ops = @otel.points_named("messaging.client.operation.duration")
    by_op = ops.group_by { |p| p.attributes["messaging.operation.name"] }.transform_values { |ps| ps.sum(&:count) }
    assert_equal({ "publish" => 3, "ack" => 3, "nack" => 1 }, by_op)
    ops.each { |p| assert_equal [dest, "mongomq", "s"], [p.attributes["messaging.destination.name"], p.attributes["messaging.system"], p.unit] }

    runs = @otel.points_named("messaging.process.duration")
    assert_equal 4, runs.sum(&:count)
    failed_runs = runs.select { |p| p.attributes.key?("error.type") }
    assert_equal [["MongoMQTest::TraceCase::Boom", 1]], failed_runs.map { |p| [p.attributes["error.type"], p.count] }
    runs.each { |p| assert_equal [dest, "s", "process"], [p.attributes["messaging.destination.name"], p.unit, p.attributes["messaging.operation.name"]] }
  end

  def test_trace_off_without_sdk
    plain = other_queue
    assert_nil plain.telemetry, "no telemetry by default"
    global = other_queue
    global.telemetry = MongoMQ::OTel::Telemetry.new # the global providers: the API's no-op, no SDK configured
    [[plain, "plain"], [global, "global"]].each do |queue, group|
      seq = queue.publish(group, "x", attrs: { "a" => "b" })
      later = queue.publish_batch { |b| b.add(group, "y") }
      assert_equal [[seq, [%w[a b]]], [later, []]], queue.peek(group: group).map { |e| [e.seq, e.attrs.to_a] },
                   "#{group}: no traceparent stored"
      seen = Thread::Queue.new
      worker = queue.worker do |lease|
        span = OpenTelemetry::Trace.current_span
        seen << [lease.seq, span.recording?, span.context.valid?]
      end
      begin
        assert_equal [seq, false, false], Timeout.timeout(20) { seen.pop }, "#{group}: no recording span current"
        assert_equal [later, false, false], Timeout.timeout(20) { seen.pop }
      ensure
        assert worker.stop.wait(20)
      end
      eventually(what: "#{group}: both acked") { queue.stats["messages"].zero? }
    end
    assert_empty @otel.spans, "nothing reached this test's SDK either"
  end
end
