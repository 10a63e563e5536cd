# frozen_string_literal: true

# What the Ruby gem promises beyond the contract: the GVL is released while calls wait
# on the server; Thread#kill, Thread#raise, Timeout.timeout and Ctrl-C end a waiting
# claim and the queue goes on; encodings; the worker's signal traps; manual clocks'
# arguments and handles (closed, collected, carried to a worker's queue); the log
# thread going on after a handler raised.
require_relative "test_helper"
require "stringio"

class TestRuby < MongoMQTest::Case
  FIXTURES = File.join(__dir__, "fixtures")

  # While one thread waits in a claim, another runs Ruby code.
  def test_gvl_released_while_claim_waits
    waiter = Thread.new { @queue.claim(wait: 3) }
    sleep 0.2
    spins = 0
    elapsed = timed do
      t_end = monotonic + 0.3
      spins += 1 while monotonic < t_end
    end
    assert_operator elapsed, :<, 2, "the main thread ran while the claim waited"
    assert waiter.alive?, "the claim still waits"
    assert_operator spins, :>, 1000
    @queue.publish("g", "x")
    refute_nil waiter.value
  end

  # Opening a queue on an unreachable server blocks in libmongoc's server selection:
  # other threads run meanwhile.
  def test_gvl_released_while_connecting
    client = track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=1500"))
    opener = quiet_thread { client.queue("x", "q") }
    sleep 0.1
    elapsed = timed { sleep 0.2 }
    assert_operator elapsed, :<, 1.2, "the main thread ran during server selection"
    assert_raises(MongoMQ::ConnectError) { opener.join }
  end

  # Publishes from several threads at once run in parallel on the server round trips.
  def test_threads_publish_together
    threads = Array.new(4) { |t| Thread.new { Array.new(10) { |i| @queue.publish("g#{t}", i.to_s) } } }
    seqs = threads.flat_map(&:value)
    assert_equal 40, seqs.uniq.size
    assert_equal 40, @queue.stats["messages"]
  end

  def test_thread_raise_ends_claim
    waiter = quiet_thread { @queue.claim(wait: 30) }
    sleep 0.3
    elapsed = timed do
      waiter.raise(IOError, "from outside")
      error = assert_raises(IOError) { waiter.join(10) }
      assert_equal "from outside", error.message
    end
    assert_operator elapsed, :<, 5
    queue_still_works
  end

  def test_timeout_ends_claim
    elapsed = timed do
      assert_raises(Timeout::Error) { Timeout.timeout(0.3) { @queue.claim(wait: 30) } }
    end
    assert_operator elapsed, :<, 5
    queue_still_works
  end

  def test_thread_kill_ends_claim
    waiter = Thread.new { @queue.claim(wait: 30) }
    sleep 0.3
    elapsed = timed do
      waiter.kill
      refute_nil waiter.join(10)
    end
    assert_operator elapsed, :<, 5
    queue_still_works
  end

  # Ctrl-C: a child process waiting in a claim gets SIGINT; its claim ends at once
  # with Interrupt, and its queue works afterwards.
  def test_sigint_ends_claim
    spawn_ruby(File.join(FIXTURES, "sigint_claim.rb"), @db) do |out, pid|
      assert_equal "waiting\n", out.gets
      sleep 0.3
      elapsed = timed do
        Process.kill("INT", pid)
        Process.wait(pid)
      end
      assert_operator elapsed, :<, 5, "the claim ended promptly"
      assert_equal 0, $?.exitstatus
      lines = out.read.lines.map(&:chomp)
      assert_equal ["Interrupt", "after: published and claimed"], lines
    end
  end

  # handle_signals: true: SIGTERM, and SIGINT (Ctrl-C), stop the worker gracefully
  # (work and worker + wait); the running handler finishes and is acked; the handlers
  # the worker replaced come back; the child exits normally.
  def test_worker_handle_signals_term
    worker_stops_gracefully_on("TERM", "work")
  end

  def test_worker_handle_signals_int
    worker_stops_gracefully_on("INT", "worker")
  end

  def worker_stops_gracefully_on(signal, mode)
    3.times { |i| @queue.publish("g", "e#{i}") }
    spawn_ruby(File.join(FIXTURES, "signal_worker.rb"), @db, mode) do |out, pid|
      assert_equal "handling e0\n", out.gets
      Process.kill(signal, pid)
      Process.wait(pid)
      assert_equal 0, $?.exitstatus, "SIG#{signal}: the child exits normally"
      assert_equal ["handled e0", "stopped", "the previous INT and TERM handlers are back"], out.read.lines.map(&:chomp)
    end
    assert_equal 2, @queue.stats["messages"]
    assert_equal "e1", claim!.event
  end

  def test_close_wakes_waiting_claim
    queue = @client.queue(@db, "q")
    waiter = quiet_thread { queue.claim(wait: 30) }
    sleep 0.3
    elapsed = timed do
      queue.close
      assert_raises(MongoMQ::ClosedError) { waiter.join(10) }
    end
    assert_operator elapsed, :<, 5
    queue_still_works
  end

  def test_interrupt_stops_worker
    worker_thread = Thread.new { @queue.work(concurrency: 2) { nil } }
    sleep 0.3
    elapsed = timed do
      @queue.interrupt
      assert worker_thread.join(10), "work returned"
    end
    assert_operator elapsed, :<, 5
  end

  def test_event_encodings_are_bytes
    utf16 = "héllo".encode(Encoding::UTF_16LE)
    @queue.publish("g", utf16)
    lease = claim!
    assert_equal utf16.b, lease.event, "the String's bytes, not re-encoded"
    assert_equal Encoding::ASCII_8BIT, lease.event.encoding
    latin1 = "grüße".encode(Encoding::ISO_8859_1)
    @queue.publish(latin1, "x")
    @queue.ack(lease)
    assert_equal "grüße", claim!.group, "a group in another encoding goes as UTF-8"
  end

  def test_frozen_and_shared_strings
    big = ("x" * 100_000).freeze
    slice = big[10, 50_000]
    @queue.publish("g", big)
    @queue.publish("g", slice)
    assert_equal big, claim!(max_events: 2).events[0]
  end

  def test_extend_is_not_overridden
    assert_equal Kernel, MongoMQ::Queue.instance_method(:extend).owner
    assert_equal Kernel, MongoMQ::Lease.instance_method(:extend).owner
    mod = Module.new { def extra = :yes }
    assert_equal :yes, other_queue.extend(mod).extra
  end

  def test_raw_module_is_private
    assert_raises(NameError) { MongoMQ::Raw }
  end

  def test_block_forms_close
    queue = nil
    MongoMQ::Client.open(MongoMQTest.uri) do |client|
      client.queue(@db, "q") do |q|
        queue = q
        q.publish("g", "x")
      end
      assert queue.closed?
      assert_equal 1, @queue.stats["messages"]
    end
  end

  # Every handle kind made, used and dropped or closed in both orders, with the GC
  # running at every allocation.
  def test_gc_stress_handles
    @queue.publish("g", "x")
    collect # what earlier tests left
    before = live_handles
    Thread.new do
      GC.stress = true
      begin
        client = MongoMQ::Client.new(MongoMQTest.uri)
        queue = client.queue(@db, "q")
        lease = queue.claim
        client.close # before its queue
        lease.event
        queue.nack(lease, delay: 0)
        MongoMQ::Batch.new.add("h", "y").close
        queue.clock = MongoMQ::ManualClock.new(Time.at(2_000_000_000)) # dropped while the queue holds it
        MongoMQ::ManualClock.new(Time.at(0)).advance(1).close
        queue.close
        MongoMQ::Client.new(MongoMQTest.uri).queue(@db, "q").publish("h", "z") # dropped, not closed
      ensure
        GC.stress = false
      end
      nil
    end.join
    collect
    assert_equal before, live_handles
    assert_equal 2, @queue.stats["messages"]
  end

  # ManualClock's arguments, its closed state, and a handle released exactly once.
  def test_manual_clock_calls
    before = MongoMQ.handle_counts["clock"]
    start = Time.utc(2031, 1, 2, 3, 4, 5)
    clock = MongoMQ::ManualClock.new(start)
    assert_equal start, clock.now
    assert_kind_of Time, clock.now
    assert clock.now.utc?
    assert_same clock, clock.advance(Rational(3, 2))
    assert_equal start + 1.5, clock.now
    clock.now = Time.at(1_900_000_010)
    assert_equal Time.at(1_900_000_010), clock.now
    clock.advance(-10)
    assert_equal Time.at(1_900_000_000), clock.now
    {
      "start" => [-> { MongoMQ::ManualClock.new("now") }, -> { MongoMQ::ManualClock.new(1_900_000_000) },
                  -> { MongoMQ::ManualClock.new(Time.at(-1)) }],
      "time" => [-> { clock.now = nil }, -> { clock.now = 1_900_000_000 }],
      "seconds" => [-> { clock.advance("1") }, -> { clock.advance(Float::NAN) }],
      "clock" => [-> { @queue.clock = 12 }, -> { @queue.clock = Time.now }]
    }.each do |name, calls|
      calls.each_with_index do |call, i|
        error = assert_raises(MongoMQ::ArgumentError, "#{name} case #{i}") { call.call }
        assert_match(/\b#{name}\b/, error.message)
      end
    end
    assert_nil clock.close
    assert_nil clock.close
    assert clock.closed?
    [-> { clock.now }, -> { clock.now = Time.now }, -> { clock.advance(1) }, -> { @queue.clock = clock }].each do |call|
      error = assert_raises(MongoMQ::ClosedError) { call.call }
      assert_match(/clock/, error.message)
    end
    assert_match(/closed/, clock.inspect)
    after = MongoMQ.handle_counts["clock"]
    assert_equal [before[0] + 1, before[1] + 1], after, "one clock made, its handle released once"
    @queue.close
    assert_raises(MongoMQ::ClosedError) { @queue.clock = MongoMQ::ManualClock.new(Time.at(0)).tap { |c| track(c) } }
  end

  # A clock dropped to the GC while queues run on it: they keep reading it; a queue
  # reopened from one (a worker's own) runs on it too, and a worker works on it.
  def test_manual_clock_gc_and_worker
    t = Time.at(2_100_000_000).utc
    other = other_queue
    collect # what earlier tests left
    released = MongoMQ.handle_counts["clock"][1]
    Thread.new do
      clock = MongoMQ::ManualClock.new(t)
      @queue.clock = clock
      other.clock = clock
      clock.advance(5)
      nil
    end.join
    collect
    assert_equal t + 5, @queue.now
    assert_equal t + 5, other.now
    assert_equal released + 1, MongoMQ.handle_counts["clock"][1], "the GC released the dropped clock's handle"
    reopened = track(@queue.reopen)
    assert_equal t + 5, reopened.now, "a reopened queue runs on the same clock"
    @queue.clock = nil
    assert_equal t + 5, reopened.now, "setting the first queue's clock changes nothing of the reopened one's"
    assert_equal t + 5, other.now
    assert_in_delta Time.now, track(@queue.reopen).now, 60

    clock = track(MongoMQ::ManualClock.new(t))
    other.clock = clock
    other.publish("g", "due", not_before: t + 30)
    other.publish("g", "after")
    seen = Thread::Queue.new
    worker = other.worker(concurrency: 1, visibility: 10) { |lease| seen << [lease.text, lease.deadline] }
    sleep 0.3
    assert seen.empty?, "nothing due on the worker's clock yet"
    clock.advance(30)
    text, deadline = seen.pop
    assert_equal "due", text
    assert_in_delta t + 30 + 10, deadline, 1e-3, "the worker's leases are on the clock"
    assert_equal "after", seen.pop[0]
    assert worker.stop.wait(10)
    other.close # the last queue holding the first clock: it goes now
  end

  # A handler that raises is warned about and the log thread goes on; on_log takes a
  # block; only callables (or nil) are handlers.
  def test_log_handler_raises_and_on_log
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.log_handler = 42 }
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.on_log }
    seen = Thread::Queue.new
    calls = 0
    errors = StringIO.new
    old_stderr = $stderr
    $stderr = errors
    begin
      block = MongoMQ.on_log do |level, domain, message|
        next unless message.match?(/mongomqnosuchoption/i)

        calls += 1
        raise "handler failure #{calls}" if calls == 1

        seen << [level, domain]
      end
      assert_same block, MongoMQ.log_handler
      track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"))
      eventually(within: 10, what: "the warning about the failed handler") { errors.string.include?("handler failure 1") }
      track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=2"))
      eventually(within: 10, what: "the next line") { !seen.empty? }
      assert_equal [2, "mongoc"], seen.pop
      assert_match(/mongomq log handler: RuntimeError: handler failure 1/, errors.string)
      assert_kind_of Integer, MongoMQ.log_dropped
    ensure
      $stderr = old_stderr
      MongoMQ.log_handler = nil
    end
    # silenced, the log thread ends (within its 0.25 s wait)
    eventually(within: 5, what: "the log thread to end") do
      Thread.list.none? { |t| t.name == "mongomq log" && t.alive? }
    end
  end

  def test_versions
    assert_equal MongoMQ::VERSION, MongoMQ.library_version
  end

  private

  def collect
    4.times { GC.start(full_mark: true, immediate_sweep: true) }
  end

  def live_handles
    MongoMQ.handle_counts.transform_values { |made, destroyed| made - destroyed }
  end

  def queue_still_works
    seq = @queue.publish("after", "still works")
    lease = @queue.claim(wait: 5)
    refute_nil lease
    assert_equal seq, lease.seq
    @queue.ack(lease)
  end
end
