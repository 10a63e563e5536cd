# frozen_string_literal: true

# The matrix's Ruby agent: the line protocol of tests/matrix/README.md over the Ruby
# gem (bindings/ruby), installed where GEM_HOME points. tpublish and twork (traces,
# issue 22) load, at their first use, the OpenTelemetry of the gem's test support,
# bindings/ruby/test/support/otel.rb (found from this file's place in the repository):
# the real SDK with its in-memory exporter when its gems are installed, else the
# stand-in of the API and SDK there, with its W3C trace-context propagator.
require "mongomq"
require "timeout"

FNV_MASK = 0xffffffffffffffff

def fnv(data)
  h = 0xcbf29ce484222325
  data.each_byte { |b| h = ((h ^ b) * 0x100000001b3) & FNV_MASK }
  format("%016x", h)
end

def spec_bytes(spec)
  return "".b if spec == "-"
  return Array.new(Integer(spec[4..]), &->(i) { i % 251 }).pack("C*") if spec.start_with?("big:")

  [spec].pack("H*")
end

def hex(str) = str.unpack1("H*")

def unhex_utf8(hex) = [hex].pack("H*").force_encoding(Encoding::UTF_8)

# The protocol's ATTRS (KEYHEX=VALUEHEX joined by ';', "-" for none) as a Hash in its order.
def spec_attrs(word)
  return {} if word == "-"

  word.split(";").to_h { |pair| pair.split("=", 2).map { |x| unhex_utf8(x.to_s) } }
end

def attrs_word(attrs)
  return "-" if attrs.empty?

  attrs.map { |k, v| "#{hex(k.b)}=#{hex(v.b)}" }.join(";")
end

@client = MongoMQ::Client.new(ARGV[0])
@queues = {}
@held = nil
@traced = {} # queues with telemetry (tpublish, twork), apart from @queues: those inject nothing

OTEL_SUPPORT = File.expand_path("../../../bindings/ruby/test/support/otel.rb", __dir__)

# The SDK set up at the first traced command (an in-memory exporter, simple processor).
def otel
  @otel ||= begin
    require OTEL_SUPPORT
    MongoMQTest::OTel::Setup.new
  end
end

def traced_queue(db, prefix)
  @traced[[db, prefix]] ||= @client.queue(db, prefix).tap { |q| q.telemetry = otel.telemetry }
end

def hex_id(word, digits, what)
  raise ArgumentError, "#{what} must be #{digits} hex digits" unless word.match?(/\A[0-9a-f]{#{digits}}\z/)

  [word].pack("H*")
end

# tpublish DB PREFIX GROUPHEX EVENT TRACEID SPANID
def tpublish(w)
  queue = traced_queue(w[1], w[2])
  parent = OpenTelemetry::Trace::SpanContext.new(trace_id: hex_id(w[5], 32, "TRACEID"), span_id: hex_id(w[6], 16, "SPANID"),
                                                 trace_flags: OpenTelemetry::Trace::TraceFlags::SAMPLED, remote: true)
  ctx = OpenTelemetry::Trace.context_with_span(OpenTelemetry::Trace.non_recording_span(parent),
                                               parent_context: OpenTelemetry::Context.empty)
  seq = OpenTelemetry::Context.with_current(ctx) { queue.publish(unhex_utf8(w[3]), spec_bytes(w[4]), priority: 0) }
  send = otel.spans.find { |s| s.name == "send #{w[1]}.#{w[2]}" }
  return "err no finished send span" unless send

  "ok #{seq} #{send.trace_id} #{send.span_id} #{send.parent_span_id || "-"}"
ensure
  @otel&.reset_spans
end

# twork DB PREFIX WAIT_S
def twork(w)
  queue = traced_queue(w[1], w[2])
  handled = Thread::Queue.new
  worker = nil
  worker = queue.worker(concurrency: 1, visibility: 30, on_error: ->(e, _) { warn("ruby agent twork: #{e.class}: #{e.message}") }) do |lease|
    handled << lease.seq
    worker&.stop # one event: no claim after this one's ack
  end
  seq = begin
    Timeout.timeout(Float(w[3])) { handled.pop }
  rescue Timeout::Error
    nil
  end
  worker.stop
  worker.wait
  return "ok none" unless seq

  process = otel.spans.find { |s| s.name == "process #{w[1]}.#{w[2]}" && s.attributes["messaging.message.id"] == seq.to_s }
  return "err no finished process span for seq #{seq}" unless process

  link = process.links.first || %w[- -]
  "ok #{seq} #{process.trace_id} #{process.span_id} #{link[0]} #{link[1]} #{process.attributes["messaging.mongomq.message.attempts"]}"
ensure
  @otel&.reset_spans
end

def record(queue, lease)
  ev = lease.event
  format("%d,%s,%d,%d,%s,%.6f,%s", lease.seq, hex(lease.group.b), lease.attempts, ev.bytesize, fnv(ev), queue.now.to_f,
         attrs_word(lease.attrs))
end

def claim(queue, wait, vis)
  queue.claim(visibility: Float(vis), wait: Float(wait), worker_id: "ruby-agent")
end

def ack(queue, lease)
  queue.ack(lease)
  "acked"
rescue MongoMQ::LeaseLost
  "lease_lost"
ensure
  lease.close
end

# popen DB PREFIX P: a handle of P partitions in place of the one we had (kept when the
# open fails), which every later command on DB PREFIX uses.
def popen(w)
  queue = @client.queue(w[1], w[2], partitions: Integer(w[3]))
  old = @queues[[w[1], w[2]]]
  @queues[[w[1], w[2]]] = queue
  old.close if old && !(@held && @held[0].equal?(old))
  "ok #{queue.partitions}"
end

def handle(w)
  if w[0] == "ack_held"
    queue, lease = @held
    @held = nil
    return "ok #{ack(queue, lease)}"
  end
  return tpublish(w) if w[0] == "tpublish"
  return twork(w) if w[0] == "twork"
  return popen(w) if w[0] == "popen"

  queue = (@queues[[w[1], w[2]]] ||= @client.queue(w[1], w[2]))
  a = w[3..]
  case w[0]
  when "publish"
    group = unhex_utf8(a[0])
    data = spec_bytes(a[3])
    attrs = spec_attrs(a[4] || "-")
    delay = Float(a[2])
    if delay.positive?
      at = queue.now + delay
      seq = queue.publish(group, data, priority: Integer(a[1]), not_before: at, attrs: attrs)
      format("ok %d %.6f", seq, at.to_f)
    else
      "ok #{queue.publish(group, data, priority: Integer(a[1]), attrs: attrs)} 0"
    end
  when "claim"
    out = ["ok"]
    Integer(a[0]).times do
      lease = claim(queue, a[1], a[2]) or break
      out << record(queue, lease)
      st = ack(queue, lease)
      return "err ack: #{st}" unless st == "acked"
    end
    out.join(" ")
  when "drain"
    hold = Float(a[2]) / 1000.0
    out = ["ok"]
    while (lease = claim(queue, a[0], a[1]))
      t1 = Time.now.to_f
      sleep(hold)
      t2 = Time.now.to_f
      out << format("%d,%s,%.6f,%.6f,%s", lease.seq, hex(lease.group.b), t1, t2, fnv(lease.event))
      st = ack(queue, lease)
      return "err ack: #{st}" unless st == "acked"
    end
    out.join(" ")
  when "hold"
    lease = claim(queue, a[0], a[1])
    return "ok none" unless lease

    @held = [queue, lease]
    "ok #{record(queue, lease)}"
  when "drop"
    queue.drop
    "ok"
  else
    "err unknown op #{w[0]}"
  end
end

$stdout.sync = true
$stdin.each_line do |line|
  w = line.split
  next if w.empty?
  break if w[0] == "quit"

  reply = begin
    handle(w)
  rescue StandardError => e
    "err #{e.class}: #{e.message.tr("\n", ' ')}"
  end
  $stdout.write("#{reply}\n")
end
