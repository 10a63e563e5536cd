# frozen_string_literal: true

module MongoMQ
  # The C library's statuses, by value, as the symbols Error#status returns.
  STATUSES = {
    0 => :ok, 1 => :empty, 2 => :lease_lost, 3 => :interrupted, 4 => :cancelled,
    -1 => :err_arg, -2 => :err_connect, -3 => :err_server, -4 => :err_nomem, -5 => :err_internal
  }.freeze

  # What MongoMQ's errors carry besides their message.
  module ErrorDetails
    # The status as a Symbol: :lease_lost, :interrupted, :err_arg, :err_connect,
    # :err_server, :err_nomem, :err_internal (or :closed for a closed object).
    attr_reader :status
    # MongoDB's error code when the server answered with an error, else 0.
    attr_reader :server_code

    # The C name of the status: "MQ_LEASE_LOST", "MQ_ERR_SERVER", ...
    def status_name
      "MQ_#{status.to_s.upcase}"
    end
  end

  # The base of every error of the library (but the argument error, which is an
  # ::ArgumentError as Ruby users expect).
  class Error < StandardError
    include ErrorDetails

    def initialize(message = nil, status: :err_internal, server_code: 0)
      super(message)
      @status = status
      @server_code = server_code
    end

    # The C library's argument names, as the Ruby layer calls them.
    ARGUMENT_NAMES = {
      "group_id" => "group", "visibility_s" => "visibility", "delay_s" => "delay",
      "timeout_s" => "wait", "not_before_epoch_s" => "at"
    }.freeze
    private_constant :ARGUMENT_NAMES

    # @api private: the extension raises what this returns for a C status.
    def self.from_c(status, server_code, message)
      sym = STATUSES.fetch(status, :err_internal)
      case sym
      when :err_arg
        message = message.gsub(/\b(#{ARGUMENT_NAMES.keys.join("|")})\b/) { ARGUMENT_NAMES[Regexp.last_match(1)] }
        MongoMQ::ArgumentError.new(message, server_code: server_code)
      when :lease_lost then LeaseLost.new(message, status: sym, server_code: server_code)
      when :err_connect then ConnectError.new(message, status: sym, server_code: server_code)
      when :err_server then ServerError.new(message, status: sym, server_code: server_code)
      when :interrupted then Interrupted.new(message, status: sym, server_code: server_code)
      else Error.new(message, status: sym, server_code: server_code)
      end
    end
  end

  # Ack, nack, unclaim or extend of a lease that ran out and was taken by another
  # worker (or whose group was purged). For an ack the event was processed all the
  # same (at-least-once); an unclaim changed nothing.
  class LeaseLost < Error; end

  # The server could not be reached (or timed out).
  class ConnectError < Error; end

  # The server answered with an error (#server_code is MongoDB's code).
  class ServerError < Error; end

  # The queue was interrupted (Queue#interrupt): every waiting claim ends, and later
  # waiting ones end at once (a plain claim, without wait:, still works).
  class Interrupted < Error; end

  # A call on a closed client, queue, lease or batch.
  class ClosedError < Error
    def initialize(message = "closed", status: :closed, server_code: 0)
      super
    end
  end

  # A bad argument; the message names it. An ::ArgumentError, with #status (:err_arg)
  # and #server_code like MongoMQ::Error.
  class ArgumentError < ::ArgumentError
    include ErrorDetails

    def initialize(message = nil, status: :err_arg, server_code: 0)
      super(message)
      @status = status
      @server_code = server_code
    end
  end
end
