# frozen_string_literal: true

# What tracing (mongomq/otel) costs the Ruby gem: events/s and client CPU time per
# event of publish, of claim + ack by hand and of a worker, with tracing off and on,
# with and without attributes. Not a test: it asserts nothing about timing.
#
#   ruby bench/bench_otel.rb [--uri URI] [--events N] [--rounds R]
#
# Tracing three ways: "off" (no telemetry: the queue as it was), "api" (a Telemetry of
# the global providers with no SDK configured: the API's no-op, what a user who loads
# mongomq/otel but configures nothing gets) and "sdk" (a recording SDK: a simple span
# processor into an in-memory exporter, a meter provider with an in-memory reader, the
# W3C propagator). Both come from test/support/otel.rb: the real SDK when its gems are
# installed, else the stand-in of test/support, whose costs are not the real SDK's (the
# output says which). Attributes: none, or 3 of the event's own. Each round publishes N
# events in 20 groups from one thread, drains them with claim + ack from one thread,
# publishes them again and drains them with a worker (concurrency 1, a handler that
# does nothing), on a fresh queue of a fresh database, dropped at the end; modes
# alternate within a round; each figure is the best of the rounds.
require "mongomq"
require "optparse"
require_relative "../test/support/otel"

options = { uri: ENV.fetch("MONGOMQ_URI", nil), events: 500, rounds: 3 }
OptionParser.new do |o|
  o.on("--uri URI") { |v| options[:uri] = v }
  o.on("--events N", Integer) { |v| options[:events] = v }
  o.on("--rounds R", Integer) { |v| options[:rounds] = v }
end.parse!
abort "bench_otel.rb: --uri or MONGOMQ_URI is needed" unless options[:uri]

ATTRS = { "content-type" => "application/json", "tenant.id" => "t-42", "request.id" => "0" * 36 }.freeze

def clocks
  [Process.clock_gettime(Process::CLOCK_MONOTONIC), Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)]
end

# [wall seconds, CPU seconds] of the block.
def measured
  w0, c0 = clocks
  yield
  w1, c1 = clocks
  [w1 - w0, c1 - c0]
end

def publish_all(queue, n, attrs)
  n.times { |i| queue.publish("g#{i % 20}", %({"i":#{i}}), attrs: attrs) }
end

def one_round(client, telemetry, n, attrs)
  db = "mqt_rb_bench_otel_#{Process.pid}_#{rand(1 << 30)}"
  queue = client.queue(db, "q")
  queue.telemetry = telemetry
  out = {}
  out[:publish] = measured { publish_all(queue, n, attrs) }
  out[:claim_ack] = measured do
    while (lease = queue.claim)
      queue.ack(lease)
    end
  end
  publish_all(queue, n, attrs)
  out[:worker] = measured do
    done = Thread::Queue.new
    handled = 0
    worker = queue.worker(concurrency: 1) do
      handled += 1
      done << true if handled == n
    end
    done.pop
    worker.stop.wait
  end
  out
ensure
  queue&.drop
  queue&.close
end

client = MongoMQ::Client.new(options[:uri])
setup = MongoMQTest::OTel::Setup.new
modes = { "off" => nil, "api" => MongoMQ::OTel::Telemetry.new, "sdk" => setup.telemetry }
cases = modes.keys.product([false, true])
best = Hash.new { |h, k| h[k] = {} }
puts "mongomq #{MongoMQ::VERSION}, Ruby #{RUBY_VERSION}; OpenTelemetry: #{MongoMQTest::OTel::IMPLEMENTATION}"
puts "#{options[:events]} events a phase, best of #{options[:rounds]} rounds"
options[:rounds].times do
  cases.each do |mode, with_attrs|
    got = one_round(client, modes[mode], options[:events], with_attrs ? ATTRS : nil)
    setup.reset_spans
    got.each do |phase, (wall, cpu)|
      prev = best[[mode, with_attrs]][phase]
      best[[mode, with_attrs]][phase] = [[wall, prev&.first].compact.min, [cpu, prev&.last].compact.min]
    end
  end
end
n = options[:events].to_f
printf("%-5s %-6s %28s %28s %28s\n", "trace", "attrs", "publish ev/s (cpu us/ev)", "claim+ack ev/s (cpu us/ev)",
       "worker ev/s (cpu us/ev)")
cases.each do |mode, with_attrs|
  cols = %i[publish claim_ack worker].map do |phase|
    wall, cpu = best[[mode, with_attrs]][phase]
    format("%10.0f (%8.1f)", n / wall, cpu / n * 1e6)
  end
  printf("%-5s %-6s %28s %28s %28s\n", mode, with_attrs ? "3" : "none", *cols)
end
client.close
