# frozen_string_literal: true

# A worker: handles the orders producer.rb published, 4 at a time (one per customer at
# a time, each customer's in order). A handler that returns acks its event; one that
# raises gives it back, retried with back-off (the error is logged with its
# backtrace), and after 5 deliveries it goes to the dead letters. Ctrl-C or SIGTERM
# stop it gracefully: no new claims, running handlers finish. With IDLE_TIMEOUT=s it
# also stops by itself once no event came for that long.
#
#   MONGOMQ_URI=mongodb://localhost:27017 ruby worker.rb
require "mongomq"

uri = ENV.fetch("MONGOMQ_URI", "mongodb://localhost:27017")
db = ENV.fetch("MONGOMQ_DB", "shop")
idle = ENV["IDLE_TIMEOUT"]&.to_f

handled = 0
lock = Mutex.new
MongoMQ::Client.open(uri) do |client|
  client.queue(db, "orders") do |queue|
    queue.work(concurrency: 4, visibility: 30, max_attempts: 5, idle_timeout: idle, handle_signals: true) do |lease|
      order = lease.json # the event, parsed (lease.event: its bytes, lease.text: UTF-8)
      raise ArgumentError, "no step in #{lease.text}" unless order["step"]

      puts "#{lease.group}: order #{order["order"]} #{order["step"]} (attempt #{lease.attempts})"
      lock.synchronize { handled += 1 }
      # (a lease is extended while this runs, so a slow handler keeps its group)
    end
  end
end
puts "handled #{handled} events; stopped"
