# frozen_string_literal: true

# Shared setup of the suite: the server (MONGOMQ_TEST_URI), a fresh database per test,
# and a few helpers. The suite runs against the installed gem (scripts/test-ruby.sh).
#
# Every contract scenario's queue has MongoMQTest.partitions partitions: the integer in
# MONGOMQ_TEST_PARTITIONS, default 1 (bindings/CONTRACT.md, "Twice: one partition and
# four": scripts/test-ruby.sh runs the scenarios again with 4). Case's @queue and
# #other_queue are opened so; a scenario that opens a queue of its own passes
# partitions: MongoMQTest.partitions.
require "minitest/autorun"
require "mongomq"
require "securerandom"
require "socket"
require "timeout"
require "rbconfig"

module MongoMQTest
  def self.uri
    ENV.fetch("MONGOMQ_TEST_URI") { raise "MONGOMQ_TEST_URI is not set: the suite needs a server" }
  end

  # MONGOMQ_TEST_PARTITIONS (default 1): the partitions of every contract scenario's queue.
  def self.partitions
    @partitions ||= begin
      raw = ENV.fetch("MONGOMQ_TEST_PARTITIONS", "")
      n = raw.empty? ? 1 : Integer(raw, 10, exception: false)
      raise "MONGOMQ_TEST_PARTITIONS is #{raw.inspect}: want 1..#{MongoMQ::PARTITIONS_MAX}" unless
        n&.between?(1, MongoMQ::PARTITIONS_MAX)

      n
    end
  end

  # A group like `name` in `group`'s partition of a queue of MongoMQTest.partitions
  # partitions: `name` itself with one partition, else the first of name, name + "1",
  # name + "2"... that hashes there. For the scenarios whose promise is an order
  # between groups (round-robin, a place in line): a partitioned queue keeps it within
  # each partition, and a claim starts at the next partition in turn
  # (include/mongomq.h, "Partitioned queues").
  def self.same_partition(group, name)
    want = MongoMQ.group_partition(group, partitions)
    (0...10_000).each do |i|
      candidate = i.zero? ? name : "#{name}#{i}"
      return candidate if candidate != group && MongoMQ.group_partition(candidate, partitions) == want
    end
    raise "no group like #{name.inspect} in the partition of #{group.inspect}"
  end

  # The seq of the n-th event (n from 1) given out in `group`'s partition of a fresh
  # queue of MongoMQTest.partitions partitions: (n - 1) * P + partition + 1
  # (include/mongomq.h); n with one partition.
  def self.nth_seq(group, n)
    ((n - 1) * partitions) + MongoMQ.group_partition(group, partitions) + 1
  end

  # A test with its own database, dropped at the end.
  class Case < Minitest::Test
    def setup
      @db = "mqt_rb_#{SecureRandom.hex(6)}"
      @closables = []
      @client = track(MongoMQ::Client.new(MongoMQTest.uri))
      @queue = track(@client.queue(@db, "q", partitions: MongoMQTest.partitions))
    end

    def teardown
      begin
        @queue.drop unless @queue.closed?
      rescue MongoMQ::Error
        nil
      end
      @closables.reverse_each(&:close)
    end

    def track(obj)
      @closables << obj
      obj
    end

    # Another queue object on the same collections (another worker, as it were).
    def other_queue(client = @client)
      track(client.queue(@db, "q", partitions: MongoMQTest.partitions))
    end

    def monotonic
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    # Seconds the block took.
    def timed
      t0 = monotonic
      yield
      monotonic - t0
    end

    # Waits (up to `within` seconds) until the block is true; fails otherwise.
    def eventually(within: 10, what: "the condition")
      deadline = monotonic + within
      until yield
        flunk "#{what} did not happen within #{within} s" if monotonic > deadline
        sleep 0.02
      end
    end

    # A thread whose exception is for the test to see (join/value), not to print.
    def quiet_thread(&block)
      Thread.new do
        Thread.current.report_on_exception = false
        block.call
      end
    end

    def claim!(queue = @queue, **options)
      lease = queue.claim(**options)
      refute_nil lease, "expected a lease"
      lease
    end

    # Runs a Ruby script in a child process (with this process's environment and
    # load path); yields its stdout reader and pid.
    def spawn_ruby(script, *args)
      r, w = IO.pipe
      pid = Process.spawn({ "MONGOMQ_TEST_URI" => MongoMQTest.uri }, RbConfig.ruby, *$LOAD_PATH.flat_map { |p| ["-I", p] },
                          script, *args, out: w, err: :err)
      w.close
      yield r, pid
    ensure
      r&.close
    end
  end

  # The few raw server commands the tests need that the queue API does not offer
  # (deleting a lock for the repair test): MongoDB's OP_MSG with a minimal BSON.
  module RawMongo
    module_function

    def delete_all(uri, db, collection)
      reply = command(uri, db, { "delete" => collection, "deletes" => [{ "q" => {}, "limit" => 0 }] })
      raise "delete failed: #{reply.inspect}" unless reply["ok"].to_f == 1.0

      reply["n"]
    end

    def command(uri, db, doc)
      host, port = uri[%r{\Amongodb://([^/?,]+)}, 1].split(":")
      body = bson(doc.merge("$db" => db))
      msg = [0].pack("L<") + "\x00".b + body
      header = [16 + msg.bytesize, 1, 0, 2013].pack("l<l<l<l<")
      Socket.tcp(host, Integer(port || 27_017), connect_timeout: 5) do |s|
        s.write(header + msg)
        len = s.read(4).unpack1("l<")
        rest = s.read(len - 4)
        # header rest (12) + flagBits (4) + section kind (1) + the document
        parse(rest.byteslice(17..), 0).first
      end
    end

    def bson(doc)
      body = doc.map { |k, v| element(k.to_s, v) }.join
      [body.bytesize + 5].pack("l<") + body + "\x00".b
    end

    def element(key, value)
      name = "#{key.b}\x00".b
      case value
      when String then "\x02".b + name + [value.bytesize + 1].pack("l<") + value.b + "\x00".b
      when Integer then "\x12".b + name + [value].pack("q<")
      when Float then "\x01".b + name + [value].pack("E")
      when true, false then "\x08".b + name + (value ? "\x01" : "\x00").b
      when Hash then "\x03".b + name + bson(value)
      when Array then "\x04".b + name + bson(value.each_with_index.to_h { |v, i| [i.to_s, v] })
      else raise ArgumentError, "no BSON for #{value.class}"
      end
    end

    def parse(bytes, pos)
      size = bytes.byteslice(pos, 4).unpack1("l<")
      stop = pos + size - 1
      pos += 4
      doc = {}
      while pos < stop
        type = bytes.getbyte(pos)
        pos += 1
        nul = bytes.index("\x00".b, pos)
        key = bytes.byteslice(pos...nul)
        pos = nul + 1
        doc[key], pos = value(bytes, pos, type)
      end
      [doc, stop + 1]
    end

    def value(bytes, pos, type)
      case type
      when 0x01 then [bytes.byteslice(pos, 8).unpack1("E"), pos + 8]
      when 0x02
        len = bytes.byteslice(pos, 4).unpack1("l<")
        [bytes.byteslice(pos + 4, len - 1).force_encoding("UTF-8"), pos + 4 + len]
      when 0x03, 0x04 then parse(bytes, pos)
      when 0x07 then [bytes.byteslice(pos, 12), pos + 12]
      when 0x08 then [bytes.getbyte(pos) == 1, pos + 1]
      when 0x09, 0x11 then [bytes.byteslice(pos, 8).unpack1("q<"), pos + 8]
      when 0x0A then [nil, pos]
      when 0x10 then [bytes.byteslice(pos, 4).unpack1("l<"), pos + 4]
      when 0x12 then [bytes.byteslice(pos, 8).unpack1("q<"), pos + 8]
      else raise "BSON type #{type} not handled by the test helper"
      end
    end
  end
end
