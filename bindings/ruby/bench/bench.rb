# frozen_string_literal: true

# The bench/ workload (bench/README.md) through the Ruby gem: its events/s beside the C
# bench's on the same server are the binding's overhead.
#
#   ruby bench/bench.rb [--uri URI] [--events N] [--groups G] [--workers W]
#                       [--visibility S] [--batch B] [--wait]
#
# Modes, each on a fresh queue of a fresh database: single (publish, claim: one event
# per lease) and batch(10) (publish_batch of 10, claim with max_events 10); --batch B
# runs only the mode with that B. Phase 1: one thread publishes N events round-robin
# over G groups (group g has priority g % 5, event i is {"i":i}). Phase 2: W threads,
# each with its own Client (as separate machines would), claim and ack until every
# event is acked; after an empty claim a worker sleeps 2 ms, or with --wait waits in
# the claim (1 s) instead. Prints events/s, claim/ack latencies and server commands
# per event; exits 1 unless every event was acked exactly once. Not a test: it
# asserts nothing about timing.
require "mongomq"
require "optparse"

options = { uri: ENV.fetch("MONGOMQ_URI", nil), events: 2000, groups: 50, workers: 4, visibility: 30, batch: nil,
            wait: false }
OptionParser.new do |o|
  o.on("--uri URI") { |v| options[:uri] = v }
  o.on("--events N", Integer) { |v| options[:events] = v }
  o.on("--groups G", Integer) { |v| options[:groups] = v }
  o.on("--workers W", Integer) { |v| options[:workers] = v }
  o.on("--visibility S", Float) { |v| options[:visibility] = v }
  o.on("--batch B", Integer) { |v| options[:batch] = v }
  o.on("--wait") { options[:wait] = true }
end.parse!
abort "bench.rb: --uri or MONGOMQ_URI is needed" unless options[:uri]

def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def percentile(sorted, pct)
  return 0.0 if sorted.empty?

  sorted[[(sorted.size * pct / 100.0).ceil - 1, 0].max] * 1000
end

def run_mode(opts, db, batch_size)
  n = opts[:events]
  prefix = "bench_rb_#{batch_size == 1 ? "single" : "batch#{batch_size}"}"
  publisher = MongoMQ::Client.new(opts[:uri])
  queue = publisher.queue(db, prefix)
  clients = Array.new(opts[:workers]) { MongoMQ::Client.new(opts[:uri]) }
  queues = clients.map { |c| c.queue(db, prefix) }
  expected = {}

  # phase 1: publish
  commands0 = publisher.command_count
  t0 = monotonic
  if batch_size == 1
    n.times do |i|
      g = i % opts[:groups]
      expected[queue.publish("g#{g}", %({"i":#{i}}), priority: g % 5)] = i
    end
  else
    (0...n).each_slice(batch_size) do |slice|
      first = queue.publish_batch do |b|
        slice.each { |i| b.add("g#{i % opts[:groups]}", %({"i":#{i}}), priority: (i % opts[:groups]) % 5) }
      end
      slice.each_with_index { |i, k| expected[first + k] = i }
    end
  end
  publish_s = monotonic - t0
  publish_commands = publisher.command_count - commands0

  # phase 2: drain
  lock = Mutex.new
  acked = Hash.new(0)
  done = 0
  claim_lat = []
  ack_lat = []
  empty = 0
  worker_commands0 = clients.sum(&:command_count)
  t1 = monotonic
  threads = queues.map do |q|
    Thread.new do
      my_claims = []
      my_acks = []
      my_empty = 0
      until lock.synchronize { done >= n }
        c0 = monotonic
        lease = q.claim(visibility: opts[:visibility], max_events: batch_size, wait: opts[:wait] ? 1.0 : 0)
        unless lease
          my_empty += 1
          sleep 0.002 unless opts[:wait]
          next
        end
        my_claims << (monotonic - c0)
        seqs = lease.seqs
        a0 = monotonic
        q.ack(lease)
        my_acks << (monotonic - a0)
        lease.close
        lock.synchronize do
          seqs.each { |s| acked[s] += 1 }
          done += seqs.size
        end
      end
      lock.synchronize do
        claim_lat.concat(my_claims)
        ack_lat.concat(my_acks)
        empty += my_empty
      end
    end
  end
  threads.each(&:join)
  drain_s = monotonic - t1
  worker_commands = clients.sum(&:command_count) - worker_commands0

  lost = expected.keys.count { |s| acked[s].zero? }
  duplicated = acked.values.count { |c| c > 1 }
  unknown = acked.keys.count { |s| !expected.key?(s) }
  claim_lat.sort!
  ack_lat.sort!
  name = batch_size == 1 ? "single" : "batch(#{batch_size})"
  puts "== #{name}: #{db}.#{prefix}_*  events #{n}  groups #{opts[:groups]}  workers #{opts[:workers]}" \
       "#{opts[:wait] ? "  (waiting claims)" : ""}"
  printf("publish  %8.3f s  %10.1f events/s  %5.2f commands/event\n", publish_s, n / publish_s, publish_commands.to_f / n)
  printf("drain    %8.3f s  %10.1f events/s  %5.2f commands/event\n", drain_s, n / drain_s, worker_commands.to_f / n)
  printf("claim p50 %.3f ms  p99 %.3f ms   ack p50 %.3f ms  p99 %.3f ms   empty claims %d\n",
         percentile(claim_lat, 50), percentile(claim_lat, 99), percentile(ack_lat, 50), percentile(ack_lat, 99), empty)
  ok = lost.zero? && duplicated.zero? && unknown.zero?
  puts "every event acked exactly once: #{ok ? "yes" : "NO"} (lost #{lost}, duplicated #{duplicated}, unknown #{unknown})"
  queue.drop
  (queues + [queue] + clients + [publisher]).each(&:close)
  ok
end

db = "mongomq_bench_rb_#{Process.pid}_#{Time.now.to_i}"
modes = options[:batch] ? [options[:batch]] : [1, 10]
puts "mongomq #{MongoMQ::VERSION} (libmongomq #{MongoMQ.library_version}), Ruby #{RUBY_VERSION}"
results = modes.map { |b| run_mode(options, db, b) }
exit(results.all? ? 0 : 1)
