// Deduplication keys inside the library (lib/dedup.cpp; docs/design.md,
// "Deduplication"): what queue_publish, the claim, the ack and the dead letters call.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "bson.hpp"
#include "handles.hpp"
#include "queue.hpp"
#include "store.hpp"

namespace mongomq {

// A keyed event's fields: dedup_key (the key, or {group, key} in group scope) and
// dedup_until (a date: publish time + window), which the record an ack leaves renames
// to dedup_expires, the TTL index's field.
void append_dedup_fields(bson_t *msg, const Outgoing &e, double now, double window, int scope);

// A claimed message's dedup_until in epoch ms, 0 when it has no key.
int64_t dedup_until_of(const bson_t *msg);

// publish.insert for a publish with keys (unordered), and for each refused key
// dedup.read (and, for records past their window, dedup.expire and another insert).
// Returns each event's outcome; the locks a live duplicate's publish may not have
// made are added to dup_locks (the publish's lock bulk sends them).
std::vector<Published> insert_keyed(const Conn &c, mq_queue *q, const std::vector<Outgoing> &events,
                                    std::vector<BsonPtr> &docs, const std::vector<int64_t> &seqs, double now,
                                    std::vector<std::pair<BsonPtr, BsonPtr>> &dup_locks);

// The update that turns a keyed event into the record of its key: everything but
// _id, dedup_key and the expiry goes (ack.record, claim.dead_record).
BsonPtr record_update();

}  // namespace mongomq
