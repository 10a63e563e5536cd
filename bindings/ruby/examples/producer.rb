# frozen_string_literal: true

# A producer: publishes orders, one group per customer, so that each customer's
# orders are handled in publish order and one at a time, while customers proceed in
# parallel. Run it, then worker.rb:
#
#   MONGOMQ_URI=mongodb://localhost:27017 ruby producer.rb
require "json"
require "mongomq"

uri = ENV.fetch("MONGOMQ_URI", "mongodb://localhost:27017")
db = ENV.fetch("MONGOMQ_DB", "shop")

MongoMQ::Client.open(uri) do |client|
  client.queue(db, "orders") do |queue|
    # One event: bytes (here JSON) in a group; the group's first publish sets its
    # priority (0..4), the floor claimers filter on.
    seq = queue.publish("customer-17", { order: 1, step: "charge" }.to_json, priority: 2)
    puts "published order 1 as seq #{seq}"

    # Not delivered before a Time on the queue's clock (the group waits for it).
    queue.publish("customer-17", { order: 1, step: "remind" }.to_json, not_before: queue.now + 3600)

    # Many at once: a batch is 3 server commands, whatever its size.
    first = queue.publish_batch do |batch|
      (2..5).each { |n| batch.add("customer-#{n * 10}", { order: n, step: "charge" }.to_json) }
    end
    puts "published orders 2..5 from seq #{first}"
    puts "events in the queue: #{queue.stats["messages"]}"
  rescue MongoMQ::ConnectError => e
    abort "cannot reach #{uri}: #{e.message}"
  end
end
