# frozen_string_literal: true

# The matrix's Ruby agent: the line protocol of tests/matrix/README.md over the Ruby
# gem (bindings/ruby), installed where GEM_HOME points.
require "mongomq"

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

def handle(w)
  if w[0] == "ack_held"
    queue, lease = @held
    @held = nil
    return "ok #{ack(queue, lease)}"
  end
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
