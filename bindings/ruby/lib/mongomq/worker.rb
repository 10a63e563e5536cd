# frozen_string_literal: true

module MongoMQ
  # Runs a handler on a queue's leases with N threads until stopped, as Sidekiq's
  # processors do (semantics: bindings/CONTRACT.md, "The worker helper"):
  #
  # - claims wait (slices of at most 1 s) on a queue object of the worker's own, so
  #   #stop ends them at once without interrupting the queue it was made from;
  # - the handler returning acks; raising nacks with a delay of
  #   min(backoff_cap, backoff_base * 2**(attempts - 1)) times a jitter factor drawn
  #   from [0.5, 1.0]; a LeaseLost ack or nack goes to on_error and the worker goes on;
  # - while a handler runs its lease is extended by `visibility` every visibility / 3
  #   (a heartbeat thread); an extend that reports LeaseLost stops that lease's
  #   heartbeat;
  # - max_attempts > 0 is set on the worker's queue: a head delivered that often goes
  #   to the dead letters on its next claim;
  # - errors of the queue itself (connect, server) back off 0.1 s doubling to 5 s;
  # - #stop (thread-safe and safe in a signal trap) is a graceful shutdown: no new
  #   claims, running handlers get shutdown_timeout seconds to finish and be acked or
  #   nacked; those still running then are killed (their leases run out and are
  #   redelivered: nothing is lost) and #run returns. A lease a claim returned just as
  #   the stop came, whose handler did not start, is given back with Queue#unclaim:
  #   not a delivery, so its attempts count stays as it was.
  #
  # A handler that raises something that is no StandardError (NoMemoryError, a
  # SignalException, ...) nacks its lease, stops the worker, and #run re-raises it.
  # A Worker runs once.
  class Worker
    attr_reader :queue, :concurrency, :visibility, :min_priority, :batch, :backoff_base, :backoff_cap,
                :max_attempts, :shutdown_timeout, :worker_id

    # on_error: called as on_error.call(error, lease_or_nil) for errors the worker
    # goes on after (a failed ack, nack or extend, a claim that failed); default: warn.
    # jitter: the back-off's factor, a callable returning a Float (default: a random
    # number in [0.5, 1.0]); tests pin it.
    def initialize(queue, concurrency: 1, visibility: 30, min_priority: 0, batch: 1, backoff_base: 1,
                   backoff_cap: 60, max_attempts: 0, shutdown_timeout: 30, worker_id: nil, on_error: nil,
                   jitter: nil, &handler)
      raise MongoMQ::ArgumentError, "a worker needs a handler block" unless handler
      raise MongoMQ::ArgumentError, "queue must be a MongoMQ::Queue" unless queue.is_a?(Queue)

      @queue = queue
      @concurrency = Check.count(concurrency, :concurrency)
      @visibility = Check.seconds(visibility, :visibility)
      raise MongoMQ::ArgumentError, "visibility must be more than 0" unless @visibility.positive?

      @min_priority = Check.integer(min_priority, :min_priority)
      @batch = Check.count(batch, :batch)
      @backoff_base = Check.seconds(backoff_base, :backoff_base)
      @backoff_cap = Check.seconds(backoff_cap, :backoff_cap)
      @max_attempts = Check.integer(max_attempts, :max_attempts)
      raise MongoMQ::ArgumentError, "max_attempts must be >= 0" if @max_attempts.negative?

      @shutdown_timeout = Check.seconds(shutdown_timeout, :shutdown_timeout)
      @worker_id = worker_id.nil? ? queue.worker_id : Check.group(worker_id, :worker_id)
      @on_error = on_error
      @jitter = jitter || -> { 0.5 + (rand * 0.5) }
      @handler = handler
      @stopping = false
      @started = false
      @stop_signal = Thread::Queue.new
      @lock = Mutex.new
      @in_flight = {} # lease => when its next extend is due (monotonic seconds)
    end

    # Runs until #stop (or Queue#interrupt on the queue). trap: true stops gracefully
    # on INT and TERM (an Array of signal names picks others); the previous handlers
    # come back when run returns. Returns nil.
    def run(trap: false)
      @lock.synchronize do
        raise MongoMQ::Error.new("a worker runs once", status: :err_arg) if @started

        @started = true
      end
      signals = case trap
                when true then %w[INT TERM]
                when false, nil then []
                else Array(trap).map(&:to_s)
                end
      own = @queue.reopen(worker_id: @worker_id)
      own.max_attempts = @max_attempts if @max_attempts.positive?
      @own = own
      @queue.add_worker(self)
      previous = signals.to_h { |sig| [sig, Signal.trap(sig) { stop }] }
      workers = []
      heartbeat = nil
      begin
        begin
          own.interrupt if @stopping # stopped before it started
          @concurrency.times { |i| workers << Thread.new { work_loop(i) } }
          heartbeat = Thread.new { heartbeat_loop }
          @stop_signal.pop
        ensure
          stop # also when run itself was interrupted (Ctrl-C without trap: true)
          shut_down(workers, heartbeat)
        end
      ensure
        previous.each { |sig, old| Signal.trap(sig, old || "DEFAULT") }
        @queue.remove_worker(self)
        own.close
      end
      raise @fatal if @fatal

      nil
    end

    # Stops the worker gracefully (see the class comment). Returns at once; #run
    # returns once running handlers are done. Thread-safe, safe in a signal trap, and
    # idempotent.
    def stop
      return if @stopping

      @stopping = true
      begin
        @own&.interrupt
      rescue ClosedError
        nil # run has finished
      end
      @stop_signal.push(:stop)
      nil
    end

    def stopping?
      @stopping
    end

    private

    def work_loop(_index)
      pause = 0.1
      until @stopping
        begin
          lease = @own.claim(visibility: @visibility, min_priority: @min_priority, max_events: @batch, wait: 1.0)
          pause = 0.1
        rescue Interrupted, ClosedError
          break
        rescue Error => e
          report(e, nil)
          nap(pause)
          pause = [pause * 2, 5.0].min
          next
        end
        next unless lease

        if @stopping
          give_back(lease) # claimed just as the stop came: no handler ran
          break
        end
        handle(lease)
      end
    rescue Exception => e # rubocop:disable Lint/RescueException
      fatal(e)
    end

    # A lease whose handler was not started goes back with unclaim: a nack would count
    # a delivery no handler saw.
    def give_back(lease)
      @own.unclaim(lease)
    rescue Error => e
      report(e, lease) # lease lost, or the server unreachable: it runs out and is redelivered
    ensure
      lease.close
    end

    def handle(lease)
      track(lease)
      failure = nil
      begin
        @handler.call(lease)
      rescue Exception => e # rubocop:disable Lint/RescueException
        failure = e
      ensure
        untrack(lease)
      end
      settle(lease, failure)
      lease.close
      fatal(failure) if failure && !failure.is_a?(StandardError)
    end

    def settle(lease, failure)
      if failure
        @own.nack(lease, delay: backoff(lease.attempts))
      else
        @own.ack(lease)
      end
    rescue Error => e
      report(e, lease)
    end

    def backoff(attempts)
      [@backoff_cap, @backoff_base * (2**[attempts - 1, 62].min)].min * @jitter.call
    end

    def track(lease)
      @lock.synchronize { @in_flight[lease] = monotonic + (@visibility / 3.0) }
    end

    def untrack(lease)
      @lock.synchronize { @in_flight.delete(lease) }
    end

    def heartbeat_loop
      tick = [@visibility / 6.0, 1.0].min
      until @heartbeat_done
        sleep tick
        now = monotonic
        due = @lock.synchronize { @in_flight.select { |_, at| at <= now }.keys }
        due.each { |lease| beat(lease) }
      end
    end

    def beat(lease)
      @own.extend_lease(lease, visibility: @visibility)
      @lock.synchronize { @in_flight[lease] = monotonic + (@visibility / 3.0) if @in_flight.key?(lease) }
    rescue LeaseLost => e
      untrack(lease)
      report(e, lease)
    rescue ClosedError
      untrack(lease) # its handler has finished and closed it
    rescue Error => e
      report(e, lease) # the next tick tries again
    end

    def shut_down(workers, heartbeat)
      deadline = monotonic + @shutdown_timeout
      workers.each { |t| t.join([deadline - monotonic, 0].max) }
      stragglers = workers.select(&:alive?)
      stragglers.each(&:kill)
      stragglers.each { |t| t.join(1) }
      @heartbeat_done = true
      return unless heartbeat

      heartbeat.wakeup if heartbeat.alive?
      heartbeat.join
    rescue ThreadError
      heartbeat.join # it ended between alive? and wakeup
    end

    def fatal(error)
      @lock.synchronize { @fatal ||= error }
      stop
    end

    def report(error, lease)
      if @on_error
        @on_error.call(error, lease)
      else
        warn("mongomq worker: #{error.class}: #{error.message}")
      end
    rescue StandardError => e
      warn("mongomq worker: on_error raised #{e.class}: #{e.message}")
    end

    def nap(seconds)
      deadline = monotonic + seconds
      sleep([deadline - monotonic, 0.05].min) while !@stopping && monotonic < deadline
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
