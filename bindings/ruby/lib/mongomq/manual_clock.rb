# frozen_string_literal: true

module MongoMQ
  # A clock for tests and simulations, set and advanced by hand: a queue given one
  # (Queue#clock=) reads its time from it (scheduled publishes, claims, lease
  # deadlines, Queue#now) instead of the server's. The time lives in C: the library
  # reads it from any thread without calling into Ruby. Thread-safe.
  #
  #   clock = MongoMQ::ManualClock.new(Time.utc(2030, 1, 1))
  #   queue.clock = clock
  #   queue.publish("g", "later", not_before: clock.now + 60)
  #   clock.advance(61)   # now it is due
  #   queue.clock = nil   # back to the server's time
  #
  # A queue keeps every clock it was given until the queue is closed, so closing the
  # clock (or dropping it to the GC) while a queue still runs on it is safe: the queue
  # keeps reading its last time (which can then no longer be changed).
  class ManualClock
    # #close lets go of this handle; queues given the clock keep it. Closing twice does
    # nothing; other calls raise ClosedError after it.
    include RawHandle

    # start: a Time (not before the epoch).
    def initialize(start)
      @raw = Raw.mqs_clock_new(Check.time(start, :start))
    end

    # The clock's time, a Time (UTC).
    def now
      Check.to_time(Raw.mqs_clock_now(@raw))
    end

    # Sets the time (a Time).
    def now=(time)
      Raw.mqs_clock_set(@raw, Check.time(time, :time))
    end

    # Moves the time by `seconds` (Integer, Float or Rational; negative goes back).
    # Returns the clock.
    def advance(seconds)
      delta = Check.seconds(seconds, :seconds)
      Check.fail!(:seconds, "finite", seconds) unless delta.finite?
      Raw.mqs_clock_advance(@raw, delta)
      self
    end

    def inspect
      closed? ? "#<#{self.class.name} (closed)>" : "#<#{self.class.name} #{now}>"
    end
  end
end
