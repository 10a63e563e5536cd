# frozen_string_literal: true

module MongoMQ
  # What MongoMQ's errors carry besides their message. The status names are the C
  # library's (mq_status_name): the gem keeps no table of its own.
  module ErrorDetails
    # The C name of the status: "MQ_LEASE_LOST", "MQ_ERR_SERVER", ... (nil for
    # ClosedError, which is the gem's own and has no C status).
    attr_reader :status_name
    # MongoDB's error code when the server answered with an error, else 0.
    attr_reader :server_code

    # The status as a Symbol made from its C name: :lease_lost, :interrupted,
    # :err_arg, :err_connect, :err_server, :err_nomem, :err_internal (nil for
    # ClosedError).
    def status
      status_name&.delete_prefix("MQ_")&.downcase&.to_sym
    end
  end

  # The base of every error of the library (but the argument error, which is an
  # ::ArgumentError as Ruby users expect).
  class Error < StandardError
    include ErrorDetails

    def initialize(message = nil, status_name: nil, server_code: 0)
      super(message)
      @status_name = status_name
      @server_code = server_code
    end

    # The C library's argument names, as the Ruby layer calls them.
    ARGUMENT_NAMES = {
      "group_id" => "group", "visibility_s" => "visibility", "delay_s" => "delay",
      "timeout_s" => "wait", "not_before_epoch_s" => "not_before",
      "held_longer_than_s" => "held_longer_than", "parked_beyond_s" => "parked_beyond",
      "partition_count" => "partitions.size"
    }.freeze
    private_constant :ARGUMENT_NAMES

    # @api private: the extension raises what this returns for a C status (not
    # MQ_OK, MQ_EMPTY) and its name (mq_status_name).
    def self.from_c(status, name, server_code, message)
      details = { status_name: name, server_code: server_code }
      case status
      when Raw::MQ_ERR_ARG
        message = message.gsub(/\b(#{ARGUMENT_NAMES.keys.join("|")})\b/) { ARGUMENT_NAMES[Regexp.last_match(1)] }
        MongoMQ::ArgumentError.new(message, **details)
      when Raw::MQ_LEASE_LOST then LeaseLost.new(message, **details)
      when Raw::MQ_ERR_CONNECT then ConnectError.new(message, **details)
      when Raw::MQ_ERR_SERVER then ServerError.new(message, **details)
      when Raw::MQ_INTERRUPTED then Interrupted.new(message, **details)
      else Error.new(message, **details)
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

  # A call on a closed client, queue, lease, batch or clock: the gem's own error, with
  # no C status (#status and #status_name are nil).
  class ClosedError < Error
    def initialize(message = "closed")
      super
    end
  end

  # A bad argument; the message names it. An ::ArgumentError, with #status_name
  # ("MQ_ERR_ARG"), #status (:err_arg) and #server_code like MongoMQ::Error, whether
  # the C library or the Ruby layer found it.
  class ArgumentError < ::ArgumentError
    include ErrorDetails

    def initialize(message = nil, status_name: nil, server_code: 0)
      super(message)
      @status_name = status_name
      @server_code = server_code
    end

    def status_name
      @status_name ||= Raw.mq_status_name(Raw::MQ_ERR_ARG)
    end
  end
end
