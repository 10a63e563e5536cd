# frozen_string_literal: true

# The worker's lifecycle and options beyond the contract's scenarios: work blocks and
# worker returns a running Worker (stop, wait); idle_timeout ends it by itself (not
# while a handler runs); max_events; the default on_error logs each failure with its
# backtrace to MongoMQ.logger; a fatal handler exception ends it and wait re-raises
# it; the options' checks.
require_relative "test_helper"
require "stringio"

class TestWorker < MongoMQTest::Case
  class Fatal < Exception; end # rubocop:disable Lint/InheritException

  def test_idle_timeout_ends_work
    seqs = Array.new(3) { |i| @queue.publish("g#{i}", "e#{i}") }
    seen = []
    elapsed = timed { assert_nil @queue.work(concurrency: 2, idle_timeout: 0.5) { |lease| seen << lease.seq } }
    assert_equal seqs, seen.sort
    assert_operator elapsed, :>=, 0.5
    assert_operator elapsed, :<, 5, "work returned soon after the queue went idle"
    assert_equal 0, @queue.stats["messages"]
  end

  def test_idle_timeout_not_while_a_handler_runs
    @queue.publish("g", "slow")
    done = false
    @queue.work(idle_timeout: 0.3, shutdown_timeout: 0.1) do
      sleep 1.5
      done = true
    end
    assert done, "the running handler counted as activity: it finished before the idle stop"
    assert_equal 0, @queue.stats["messages"], "and its lease was acked"
  end

  def test_worker_returns_running_handle
    handled = Thread::Queue.new
    worker = @queue.worker(concurrency: 2) { |lease| handled << lease.text }
    assert_kind_of MongoMQ::Worker, worker
    refute worker.wait(0.3), "it runs until stopped"
    refute worker.done?
    @queue.publish("g", "while it runs")
    assert_equal "while it runs", Timeout.timeout(10) { handled.pop }
    assert_same worker, worker.stop
    assert worker.stopping?
    assert worker.wait(10)
    assert worker.done?
    assert worker.wait(0), "wait after the end returns at once"
    worker.stop # again: nothing
    @queue.publish("g", "after")
    sleep 0.3
    assert_equal 1, @queue.stats["messages"], "nothing claims after the stop"
  end

  def test_worker_max_events
    seqs = Array.new(3) { |i| @queue.publish("g", "e#{i}") }
    leases = Thread::Queue.new
    worker = @queue.worker(max_events: 3) { |lease| leases << [lease.count, lease.seqs] }
    assert_equal [3, seqs], Timeout.timeout(10) { leases.pop }
    assert worker.stop.wait(10)
    assert_equal 3, worker.max_events
  end

  def test_on_error_default_logs_with_backtrace
    io = StringIO.new
    old = MongoMQ.logger
    MongoMQ.logger = Logger.new(io, level: Logger::WARN)
    seq = @queue.publish("g", "fails once")
    calls = 0
    worker = @queue.worker(backoff_base: 0.05) do |lease|
      calls += 1
      raise ArgumentError, "boom #{lease.seq}" if calls == 1
    end
    eventually(what: "the retry") { @queue.stats["messages"].zero? }
    assert worker.stop.wait(10)
    log = io.string
    assert_match(/ERROR -- .*worker .*\(group "g", seq #{seq}, attempt 1\): ArgumentError: boom #{seq}/, log)
    assert_match(/^    .*test_worker\.rb:\d+/, log, "with the handler's backtrace")
  ensure
    MongoMQ.logger = old
  end

  def test_fatal_handler_exception
    seq = @queue.publish("g", "fatal")
    errors = []
    worker = @queue.worker(on_error: ->(e, _) { errors << e.class }) { raise Fatal, "the end" }
    error = assert_raises(Fatal) { worker.wait(10) }
    assert_equal "the end", error.message
    assert worker.done?
    assert_equal [Fatal], errors
    lease = claim!(wait: 5)
    assert_equal [seq, 2], [lease.seq, lease.attempts], "its lease was nacked"
    @queue.ack(lease)
    @queue.publish("g", "again")
    assert_raises(Fatal) { @queue.work(on_error: ->(*) {}) { raise Fatal, "again" } }
  end

  def test_worker_option_checks
    {
      "idle_timeout" => [{ idle_timeout: 0 }, { idle_timeout: "1" }],
      "handle_signals" => [{ handle_signals: "yes" }, { handle_signals: nil }],
      "max_events" => [{ max_events: 0 }],
      "on_error" => [{ on_error: 42 }],
      "visibility" => [{ visibility: 0 }]
    }.each do |name, cases|
      cases.each do |options|
        error = assert_raises(MongoMQ::ArgumentError, options.inspect) { @queue.worker(**options) { nil } }
        assert_match(/\b#{name}\b/, error.message)
      end
    end
    error = assert_raises(::ArgumentError) { @queue.worker(batch: 2) { nil } }
    assert_match(/batch/, error.message, "the old name is gone: max_events")
    assert_raises(::ArgumentError) { @queue.work(trap: true) { nil } }
  end
end
