# frozen_string_literal: true

module MongoMQ
  # libmongoc's log, routed to a Ruby callable. Process-wide: see MongoMQ.log_handler=.
  module Log
    @lock = Mutex.new
    @handler = nil
    @thread = nil

    class << self
      attr_reader :handler

      def handler=(handler)
        unless handler.nil? || handler.respond_to?(:call)
          raise MongoMQ::ArgumentError, "the log handler must respond to call, or be nil (got #{handler.inspect[0, 60]})"
        end

        @lock.synchronize do
          @handler = handler
          if handler.nil?
            Raw.mqs_log_silence
          else
            Raw.mqs_log_capture
            # (a fork leaves the child without the parent's thread: start another)
            @thread = start_thread unless @thread&.alive?
          end
        end
      end

      # The log thread (nil while no handler is set).
      attr_reader :thread

      private

      def start_thread
        Thread.new do
          Thread.current.name = "mongomq log"
          loop do
            line = Raw.mqs_log_next(0.25)
            # silenced: this thread ends (the next handler starts another)
            silenced = @lock.synchronize do
              next false unless @handler.nil?

              @thread = nil
              true
            end
            break if silenced

            deliver(line)
          end
        end
      end

      def deliver(line)
        return if line.nil?

        handler = @handler # (nil: silenced since the line was taken)
        return if handler.nil?

        level, domain, message = line.split("\t", 3)
        begin
          handler.call(Integer(level, 10), domain.to_s, message.to_s)
        rescue StandardError, ScriptError => e
          warn("mongomq log handler: #{e.class}: #{e.message}")
        end
      end
    end
  end
  private_constant :Log

  class << self
    # Routes libmongoc's log (its warnings about URI options, connection errors,
    # server monitoring...) to `handler`, called as handler.call(level, domain, message)
    # on a thread of the gem's ("mongomq log"), one line at a time: level as
    # libmongoc's (0 error, 1 critical, 2 warning, 3 message, 4 info, 5 debug, 6 trace),
    # domain ("mongoc", "cluster", ...) and message are Strings. An exception in the
    # handler is reported with warn and delivery goes on.
    #
    # nil silences libmongoc and stops delivery. This replaces libmongoc's
    # **process-wide** handler (its default prints to stdout/stderr): it affects every
    # user of libmongoc in the process. Lines come through a buffer of 1024: beyond,
    # the oldest are dropped and counted (log_dropped).
    def log_handler=(handler)
      Log.handler = handler
    end

    # The handler set last (nil: none).
    def log_handler
      Log.handler
    end

    # log_handler= with a block: MongoMQ.on_log { |level, domain, message| ... }.
    # Returns the block.
    def on_log(&block)
      raise MongoMQ::ArgumentError, "on_log needs a block (use log_handler = nil to silence)" if block.nil?

      Log.handler = block
      block
    end

    # libmongoc lines dropped because the buffer was full, since the process started.
    def log_dropped
      Raw.mqs_log_dropped
    end
  end
end
