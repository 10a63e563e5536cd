# frozen_string_literal: true

# MongoMQ: a multi-machine queue with per-group FIFO exclusivity on MongoDB, over
# libmongomq. See README.md for the whole API.
#
#   client = MongoMQ::Client.new("mongodb://localhost:27017")
#   queue  = client.queue("shop", "orders")
#   queue.publish("customer-17", '{"order":1}', priority: 2)
#   if (lease = queue.claim(visibility: 30, wait: 5))
#     handle(lease.json)
#     queue.ack(lease)
#   end
#   queue.work(concurrency: 4, idle_timeout: 60) { |lease| handle(lease.json) }
module MongoMQ
end

require "json"
require "mongomq/version"
require "mongomq/errors"
require "mongomq/check"
require "mongomq/mongomq_raw" # MongoMQ::Raw, the SWIG-generated extension: private

module MongoMQ
  private_constant :Raw

  # The longest dedup_key, in bytes (UTF-8): the C library's MQ_DEDUP_KEY_MAX, 512.
  DEDUP_KEY_MAX = Raw::MQ_DEDUP_KEY_MAX

  # Attributes of one event at most (16), and the longest key (128) and value (4096),
  # in bytes: the C library's MQ_ATTR_MAX, MQ_ATTR_KEY_MAX, MQ_ATTR_VALUE_MAX (0.7.0).
  ATTR_MAX = Raw::MQ_ATTR_MAX
  ATTR_KEY_MAX = Raw::MQ_ATTR_KEY_MAX
  ATTR_VALUE_MAX = Raw::MQ_ATTR_VALUE_MAX

  # The most partitions a queue may have (1024): the C library's MQ_PARTITIONS_MAX
  # (0.8.0).
  PARTITIONS_MAX = Raw::MQ_PARTITIONS_MAX

  # The version of the libmongomq the extension loaded ("0.8.0").
  def self.library_version
    Raw.mq_version
  end

  # The partition of `group` in a queue of `partitions` partitions (0.8.0;
  # 1..PARTITIONS_MAX): the C library's mq_group_partition (a hash of the group's
  # UTF-8 bytes), the same in every language and on every machine; 0 with one
  # partition. A lease's partition is its group's. Touches no server.
  def self.group_partition(group, partitions)
    k = Raw.mq_group_partition(Check.group(group), Check.queue_partitions(partitions))
    raise MongoMQ::ArgumentError, "partitions is #{partitions}, outside 1..#{PARTITIONS_MAX}" if k.negative?

    k
  end

  # C handles made and destroyed so far in this process, per kind:
  # {"client" => [made, destroyed], "queue" => [...], "lease" => [...], "batch" => [...],
  # "clock" => [...]} (a clock's "destroyed" is its handle's release).
  # For leak checks: a handle is destroyed once, by #close or by the GC.
  def self.handle_counts
    Raw.mqr_counts
  end
end

require "mongomq/raw_handle"
require "mongomq/lease"
require "mongomq/stored_event"
require "mongomq/dead_page"
require "mongomq/groups"
require "mongomq/repair_counts"
require "mongomq/published"
require "mongomq/batch"
require "mongomq/manual_clock"
require "mongomq/log"
require "mongomq/worker"
require "mongomq/queue"
require "mongomq/client"
