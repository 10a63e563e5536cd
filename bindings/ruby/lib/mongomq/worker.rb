# frozen_string_literal: true

module MongoMQ
  # Runs a handler on a queue's leases with N threads until stopped, as Sidekiq's
  # processors do (semantics: bindings/CONTRACT.md, "The worker helper"). Made by
  # Queue#work (runs it, blocking) and Queue#worker (starts it, returns it):
  #
  # - claims wait (slices of at most 1 s) on a queue object of the worker's own, so
  #   #stop ends them at once without interrupting the queue it was made from;
  # - the handler returning acks; raising nacks with a delay of
  #   min(backoff_cap, backoff_base * 2**(attempts - 1)) times a jitter factor drawn
  #   from [0.5, 1.0], and goes to on_error (whose default logs it, with the
  #   backtrace, to MongoMQ.logger); a LeaseLost ack or nack goes to on_error too, and
  #   the worker goes on;
  # - while a handler runs its lease is extended by `visibility` every visibility / 3
  #   (a heartbeat thread); an extend that reports LeaseLost stops that lease's
  #   heartbeat;
  # - max_attempts > 0 is set on the worker's queue: a head delivered that often goes
  #   to the dead letters on its next claim;
  # - errors of the queue itself (connect, server) go to on_error and back off 0.1 s
  #   doubling to 5 s;
  # - idle_timeout: the worker stops by itself once no lease was claimed and no
  #   handler ran for that many seconds (nil: never);
  # - partitions (0.8.0): its claims take only from these partitions of the queue (an
  #   Array of distinct Integers in 0..queue.partitions - 1; nil or empty: every
  #   partition), checked when the worker is made (a MongoMQ::ArgumentError naming
  #   partitions[i]);
  # - handle_signals: true makes INT and TERM stop it (the handlers they replaced come
  #   back when it ends);
  # - #stop (thread-safe and safe in a signal trap) is a graceful shutdown: no new
  #   claims, running handlers get shutdown_timeout seconds to finish and be acked or
  #   nacked; those still running then are killed (their leases run out and are
  #   redelivered: nothing is lost), and the worker has ended. A lease a claim
  #   returned just as the stop came, whose handler did not start, is given back with
  #   Queue#unclaim: not a delivery, so its attempts count stays as it was;
  # - with the queue's telemetry (mongomq/otel, when the worker started): each handler
  #   runs inside a span "process {db}.{prefix}", current, whose parent is the context
  #   the worker was started in and which links to each event's producer; the ack or
  #   nack is its child span (bindings/CONTRACT.md, "Tracing").
  #
  # A handler that raises something that is no StandardError (NoMemoryError, a
  # SignalException, ...) nacks its lease, goes to on_error, stops the worker, and
  # Queue#work (or #wait) re-raises it. A Worker runs once.
  class Worker
    attr_reader :queue, :concurrency, :visibility, :min_priority, :max_events, :backoff_base, :backoff_cap,
                :max_attempts, :shutdown_timeout, :worker_id, :idle_timeout, :handle_signals, :partitions

    # on_error: called as on_error.call(error, lease_or_nil) for each handler failure
    # and each queue error the worker goes on after (a failed ack, nack, unclaim or
    # extend, a claim that failed); default: logged with its backtrace at ERROR to
    # MongoMQ.logger. jitter: the back-off's factor, a callable returning a Float
    # (default: a random number in [0.5, 1.0]); tests pin it.
    def initialize(queue, concurrency: 1, visibility: 30, min_priority: 0, max_events: 1, backoff_base: 1,
                   backoff_cap: 60, max_attempts: 0, shutdown_timeout: 30, worker_id: nil, idle_timeout: nil,
                   handle_signals: false, on_error: nil, jitter: nil, partitions: nil, &handler)
      raise MongoMQ::ArgumentError, "a worker needs a handler block" unless handler
      raise MongoMQ::ArgumentError, "queue must be a MongoMQ::Queue" unless queue.is_a?(Queue)

      @queue = queue
      @concurrency = Check.count(concurrency, :concurrency)
      @visibility = positive(visibility, :visibility)
      @min_priority = Check.integer(min_priority, :min_priority)
      @max_events = Check.count(max_events, :max_events)
      @backoff_base = Check.seconds(backoff_base, :backoff_base)
      @backoff_cap = Check.seconds(backoff_cap, :backoff_cap)
      @max_attempts = Check.integer(max_attempts, :max_attempts)
      raise MongoMQ::ArgumentError, "max_attempts must be >= 0" if @max_attempts.negative?

      @shutdown_timeout = Check.seconds(shutdown_timeout, :shutdown_timeout)
      @worker_id = worker_id.nil? ? queue.worker_id : Check.group(worker_id, :worker_id)
      @idle_timeout = idle_timeout.nil? ? nil : positive(idle_timeout, :idle_timeout)
      Check.fail!(:handle_signals, "true or false", handle_signals) unless [true, false].include?(handle_signals)
      @handle_signals = handle_signals
      Check.fail!(:on_error, "a callable or nil", on_error) unless on_error.nil? || on_error.respond_to?(:call)
      @on_error = on_error || method(:log_error)
      @jitter = jitter || -> { 0.5 + (rand * 0.5) }
      packed = Check.partitions(partitions)
      Check.partitions_of(packed, queue.partitions) unless packed.empty?
      @partitions = packed.unpack("l<*").freeze # [] is every partition
      @handler = handler
      @stopping = false
      @started = false
      @done = false
      @stop_signal = Thread::Queue.new
      @lock = Mutex.new
      @ended = ConditionVariable.new
      @in_flight = {} # lease => when its next extend is due (monotonic seconds)
    end

    # @api private (Queue#work): runs in the calling thread until the worker stops;
    # re-raises a fatal handler exception. Returns nil.
    def run
      prepare
      begin
        body
      ensure
        finish
      end
    end

    # @api private (Queue#worker): runs on a thread of its own. Returns self.
    def start
      prepare
      @runner = Thread.new do
        Thread.current.name = "mongomq worker"
        Thread.current.report_on_exception = false # #wait re-raises it
        body
      rescue Exception => e # rubocop:disable Lint/RescueException
        @lock.synchronize { @fatal ||= e }
      ensure
        finish
      end
      self
    end

    # Stops the worker gracefully (see the class comment) and returns at once; #wait
    # (or Queue#work) returns once running handlers are done. Thread-safe, safe in a
    # signal trap, and idempotent. Returns self.
    def stop
      return self if @stopping

      @stopping = true
      begin
        @own&.interrupt
      rescue ClosedError
        nil # it has ended
      end
      @stop_signal.push(:stop)
      self
    end

    # Waits until the worker has ended (after #stop, idle_timeout, a signal, or
    # Queue#interrupt): true, or false if `timeout` seconds (nil: no limit) passed
    # first. Re-raises the exception that ended it, if a handler raised one that is no
    # StandardError.
    def wait(timeout = nil)
      deadline = timeout.nil? ? nil : monotonic + Check.seconds(timeout, :timeout)
      @lock.synchronize do
        until @done
          left = deadline && (deadline - monotonic)
          return false if left && left <= 0

          @ended.wait(@lock, left)
        end
      end
      raise @fatal if @fatal

      true
    end

    def stopping?
      @stopping
    end

    # True once the worker has ended.
    def done?
      @done
    end

    private

    def positive(value, name)
      seconds = Check.seconds(value, name)
      raise MongoMQ::ArgumentError, "#{name} must be more than 0" unless seconds.positive?

      seconds
    end

    # What run and start do in the calling thread: a queue of the worker's own, the
    # signal handlers. Raises (and the worker has ended) if the queue is closed.
    def prepare
      @lock.synchronize do
        raise MongoMQ::Error, "a worker runs once" if @started

        @started = true
      end
      begin
        own = @queue.reopen(worker_id: @worker_id)
        begin
          own.max_attempts = @max_attempts if @max_attempts.positive?
        rescue Exception # rubocop:disable Lint/RescueException
          own.close
          raise
        end
      rescue Exception # rubocop:disable Lint/RescueException
        finish
        raise
      end
      @own = own
      # OpenTelemetry (mongomq/otel): the queue's telemetry when the worker started, and
      # the context it started in, the parent of its process spans (none: new traces).
      @telemetry = own.telemetry
      @trace_parent = @telemetry&.current_context
      @last_active = monotonic
      @queue.add_worker(self)
      @previous_traps = @handle_signals ? %w[INT TERM].to_h { |sig| [sig, Signal.trap(sig) { stop }] } : {}
    end

    def body
      workers = []
      heartbeat = nil
      begin
        begin
          @own.interrupt if @stopping # stopped before it started
          @concurrency.times { workers << Thread.new { work_loop } }
          heartbeat = Thread.new { heartbeat_loop }
          @stop_signal.pop
        ensure
          stop # also when the wait itself was interrupted (Ctrl-C without handle_signals)
          shut_down(workers, heartbeat)
        end
      ensure
        @previous_traps.each { |sig, old| Signal.trap(sig, old || "DEFAULT") }
        @queue.remove_worker(self)
        @own.close
      end
      raise @fatal if @fatal

      nil
    end

    def finish
      @lock.synchronize do
        @done = true
        @ended.broadcast
      end
    end

    def work_loop
      pause = 0.1
      until @stopping
        begin
          lease = @own.claim(visibility: @visibility, min_priority: @min_priority, max_events: @max_events, wait: 1.0,
                             partitions: @partitions)
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

        @last_active = monotonic
        if @stopping
          give_back(lease) # claimed just as the stop came: no handler ran
          break
        end
        @telemetry&.consumed(@own, lease.count) # a delivery: the handler gets it
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

    # With telemetry the handler runs inside the lease's process span (current), and
    # the ack or nack is its child span; the span ends after the settlement.
    def handle(lease)
      span = @telemetry&.process(@own, lease, @trace_parent)
      begin
        track(lease)
        failure = nil
        begin
          span ? span.run { @handler.call(lease) } : @handler.call(lease)
        rescue Exception => e # rubocop:disable Lint/RescueException
          failure = e
        ensure
          untrack(lease)
        end
        settle(lease, failure, span)
        report(failure, lease) if failure
        lease.close
        fatal(failure) if failure && !failure.is_a?(StandardError)
      ensure
        span&.finish
      end
    end

    def settle(lease, failure, span)
      op = failure ? "nack" : "ack"
      call = failure ? -> { @own.nack(lease, delay: backoff(lease.attempts)) } : -> { @own.ack(lease) }
      span ? span.settle(op, &call) : call.call
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
      @last_active = monotonic
    end

    def heartbeat_loop
      tick = [@visibility / 6.0, 1.0, @idle_timeout && (@idle_timeout / 4.0)].compact.min
      until @heartbeat_done
        sleep tick
        now = monotonic
        due = @lock.synchronize { @in_flight.select { |_, at| at <= now }.keys }
        due.each { |lease| beat(lease) }
        stop if idle?
      end
    end

    def idle?
      return false if @idle_timeout.nil? || @stopping || monotonic - @last_active < @idle_timeout

      @lock.synchronize { @in_flight.empty? }
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
      @on_error.call(error, lease)
    rescue StandardError => e
      MongoMQ.logger.add(Logger::ERROR, "worker: on_error raised #{e.class}: #{e.message}", "mongomq")
    end

    # The default on_error: the error, the lease it came with and the backtrace, at
    # ERROR, to MongoMQ.logger.
    def log_error(error, lease)
      where = lease ? " (#{lease_text(lease)})" : ""
      trace = Array(error.backtrace).map { |l| "\n    #{l}" }.join
      who = @worker_id ? "worker #{@worker_id}" : "worker"
      MongoMQ.logger.add(Logger::ERROR, "#{who}#{where}: #{error.class}: #{error.message}#{trace}", "mongomq")
    end

    def lease_text(lease)
      "group #{lease.group.inspect}, seq #{lease.seq}, attempt #{lease.attempts}"
    rescue ClosedError
      "a closed lease"
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
