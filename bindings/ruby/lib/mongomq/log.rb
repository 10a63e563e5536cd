# frozen_string_literal: true

require "logger"

module MongoMQ
  # libmongoc's log, routed to a Ruby callable, by default MongoMQ.logger (see
  # MongoMQ.log_handler=). Process-wide.
  module Log
    @lock = Mutex.new
    @handler = nil
    @decided = false # log_handler= was called, or the default was installed (or kept out)
    @thread = nil

    class << self
      attr_reader :handler, :thread

      # An explicit choice: the default is never installed after it.
      def handler=(handler)
        unless handler.nil? || handler.respond_to?(:call)
          raise MongoMQ::ArgumentError, "the log handler must respond to call, or be nil (got #{handler.inspect[0, 60]})"
        end

        @lock.synchronize do
          @decided = true
          install(handler)
        end
      end

      # Called as each Client is made: the first one installs the default handler
      # (MongoMQ.log_to_logger) unless a handler was set before or
      # MONGOMQ_LIBMONGOC_LOG=keep leaves libmongoc's own; later ones start the log
      # thread again where a fork left the child without it.
      def client_made
        return if @decided && (@handler.nil? || @thread&.alive?)

        @lock.synchronize do
          unless @decided
            @decided = true
            install(MongoMQ.method(:log_to_logger)) unless ENV["MONGOMQ_LIBMONGOC_LOG"] == "keep"
          end
          @thread = start_thread if @handler && !@thread&.alive?
        end
      end

      private

      def install(handler)
        @handler = handler
        if handler.nil?
          Raw.mqs_log_silence
        else
          Raw.mqs_log_capture
          # (a fork leaves the child without the parent's thread: start another)
          @thread = start_thread unless @thread&.alive?
        end
      end

      # The thread takes what is buffered (mqs_log_next without waiting) and then
      # sleeps POLL seconds in Ruby, not in C: a Ruby thread asleep in Ruby is one that
      # delivers signals to the main thread, whose waiting claim (in C, without the
      # GVL) Ctrl-C must end. Were it waiting in C too, nobody would: the signal would
      # wait for the claim's end.
      POLL = 0.1

      def start_thread
        Thread.new do
          Thread.current.name = "mongomq log"
          loop do
            # silenced: this thread ends (the next handler starts another)
            silenced = @lock.synchronize do
              next false unless @handler.nil?

              @thread = nil
              true
            end
            break if silenced

            line = Raw.mqs_log_next(0)
            line.nil? ? sleep(POLL) : deliver(line)
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

  # libmongoc's levels (0 error, 1 critical, 2 warning, 3 message, 4 info, 5 debug,
  # 6 trace) as Logger's.
  LOG_SEVERITIES = [Logger::ERROR, Logger::ERROR, Logger::WARN, Logger::INFO, Logger::INFO, Logger::DEBUG,
                    Logger::DEBUG].freeze
  private_constant :LOG_SEVERITIES

  class << self
    # The gem's Logger: libmongoc's lines (by default) and the worker's reports (its
    # default on_error) go there. Default: a Logger on $stderr at WARN, progname
    # "mongomq"; set MongoMQ.logger.level = Logger::DEBUG to see libmongoc's debug
    # lines, or another Logger (Rails.logger, say).
    def logger
      @logger ||= Logger.new($stderr, level: Logger::WARN, progname: "mongomq")
    end

    def logger=(logger)
      raise MongoMQ::ArgumentError, "logger must respond to add (got #{logger.inspect[0, 60]})" unless logger.respond_to?(:add)

      @logger = logger
    end

    # The default log handler: a libmongoc line to MongoMQ.logger, its level mapped
    # (0, 1 ERROR; 2 WARN; 3, 4 INFO; 5, 6 DEBUG), as "domain: message".
    def log_to_logger(level, domain, message)
      logger.add(LOG_SEVERITIES.fetch(level, Logger::DEBUG), "#{domain}: #{message}", "mongomq")
    end

    # Routes libmongoc's log (its warnings about URI options, connection errors,
    # server monitoring...) to `handler`, called as handler.call(level, domain, message)
    # on a thread of the gem's ("mongomq log"), one line at a time: level as
    # libmongoc's (0 error ... 6 trace), domain ("mongoc", "cluster", ...) and message
    # are Strings. An exception in the handler is reported with warn and delivery goes
    # on. nil silences libmongoc and stops delivery.
    #
    # Without this call the first Client installs MongoMQ.method(:log_to_logger)
    # (MongoMQ.logger, WARN and above), unless the environment has
    # MONGOMQ_LIBMONGOC_LOG=keep: then the gem never touches libmongoc's handler (for a
    # program that sets its own through libmongoc). The handler is libmongoc's
    # **process-wide** one: it affects every user of libmongoc in the process. Lines
    # come through a buffer of 1024: beyond, the oldest are dropped (log_dropped).
    def log_handler=(handler)
      Log.handler = handler
    end

    # The handler set last (nil: none, or libmongoc's own kept).
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
