# frozen_string_literal: true

module MongoMQ
  # A connection pool to one MongoDB deployment. Thread-safe: share one per process.
  class Client
    # #close: no new queues. Queues already open keep working; the connection pool goes
    # when the last of them is closed. Closing twice does nothing.
    include RawHandle

    # Opens a client; with a block, yields it and closes it when the block ends.
    def self.open(uri)
      client = new(uri)
      return client unless block_given?

      begin
        yield client
      ensure
        client.close
      end
    end

    # uri: a MongoDB URI ("mongodb://host:port/?options"). Does not contact the server
    # (the first queue does): a malformed URI raises MongoMQ::ArgumentError here, an
    # unreachable server MongoMQ::ConnectError from #queue. The first client routes
    # libmongoc's log to MongoMQ.logger (see MongoMQ.log_handler=).
    def initialize(uri)
      Check.event(uri, :uri)
      Log.client_made
      @raw = Raw.mq_client_new(uri)
    end

    # Opens the queue db_name.prefix_* (defaults: "mongomq", "mq"): creates its
    # indexes and measures the server's clock, so an unreachable server raises
    # MongoMQ::ConnectError here. worker_id names this process in leases (default:
    # the library's "host:pid"). partitions (0.8.0; 1..PARTITIONS_MAX, default 1): the
    # queue is spread over that many partitions (README, "Partitioned queues"); the
    # number is fixed when the queue is first opened with it, and opening it with
    # another is a MongoMQ::ArgumentError saying how many it has. With a block, yields
    # the queue and closes it after.
    def queue(db_name = nil, prefix = nil, worker_id: nil, partitions: 1, &block)
      Queue.open(self, db_name, prefix, worker_id: worker_id, partitions: partitions, &block)
    end

    # Commands this client has sent to the server so far (for benchmarks).
    def command_count
      Raw.mq_client_command_count(@raw)
    end

    # Writes this client sent that the server applied but whose write concern it
    # could not confirm (they may be rolled back if the primary fails). Monotonic.
    def write_concern_errors
      Raw.mq_client_write_concern_errors(@raw)
    end

    def inspect
      "#<#{self.class.name}#{closed? ? " (closed)" : ""}>"
    end
  end
end
