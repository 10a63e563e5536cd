// The queue operations, on arguments already checked by the exported functions. Each
// throws Failure. lib/queue.cpp, but for open and the clock (wall_clock, clock_offset,
// queue_open, sharded_refusal: lib/open.cpp) and the repair (lib/admin.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bson.hpp"
#include "handles.hpp"

namespace mongomq {

double wall_clock();  // seconds since the epoch

// An event to publish: checked bytes, and when it may first be delivered.
struct Outgoing {
    const std::string *group;
    const void *bytes;
    size_t len;
    bool text;  // store as a BSON string (valid UTF-8, no NUL) or binary
    int priority;
    double not_before;                                                        // 0: now
    const std::string *dedup_key = nullptr;                                   // nullptr: none
    const std::vector<std::pair<std::string, std::string>> *attrs = nullptr;  // nullptr or empty: none
};

// What a publish made of each event, in add order (lib/dedup.cpp): its seq, and
// whether its key was taken (the seq is then the first publish's).
struct Published {
    int64_t seq;
    bool duplicate;
};

// The server clock's offset to ours, in seconds, from our wall clock before (t0) and
// after (t1) a command that read the server's localTime (ms); 0 when the offset is
// within the measurement's error (half the round trip + half a millisecond).
double clock_offset(double t0, double t1, int64_t server_ms);

// open: open.collation (1 command), open.partitions (1, 2 the first time a queue of
// P > 1 is opened: lib/partition.hpp), open.indexes (2), open.clock (1, 2 where hello is
// unknown) and, on a mongos, open.sharding (1): sets q->clock_offset.
void queue_open(mq_queue *q);

// The refusal (a message; "" when none) for a queue whose locks or counters appear,
// not dropped, among these config.collections entries: sharded, which mongomq cannot
// work with (docs/design.md, "Deployments").
std::string sharded_refusal(const mq_queue *q, const std::vector<BsonPtr> &config_entries);

class Conn;  // store.hpp

// open.indexes's commands, under <name> (also publish.indexes, after mq_queue_drop).
void create_indexes(const Conn &c, mq_queue *q, const char *name);

// publish (one event or a batch): 3 commands. Returns the first seq; the others follow.
// The second form runs on a connection the caller holds (mq_dead_requeue): no call
// holds one pooled client while it takes another, or a pool of k slots deadlocks
// under k such calls at once.
// Returns the first seq. With keys, `outcome` (may be nullptr) gets one entry per event.
int64_t queue_publish(mq_queue *q, const std::vector<Outgoing> &events, std::vector<Published> *outcome = nullptr);
int64_t queue_publish(const Conn &c, mq_queue *q, const std::vector<Outgoing> &events,
                      std::vector<Published> *outcome = nullptr);

// claim up to max_events (>= 1) consecutive events of one due group; nullptr when
// no group is due. With partitions, only from `only` (every partition when empty),
// starting at `hinted` when it is one of them (a waiting claim's hint), else at the
// next partition in turn.
mq_lease *queue_claim(mq_queue *q, const std::string &worker, double visibility, int min_priority, size_t max_events,
                      const std::vector<int> &only = {}, int hinted = -1);

mq_status queue_ack(mq_queue *q, const mq_lease *lease);
mq_status queue_nack(mq_queue *q, const mq_lease *lease, double delay);
// mq_unclaim: the lease back as the claim found it (its place in line, its attempts).
mq_status queue_unclaim(mq_queue *q, const mq_lease *lease);
mq_status queue_extend(mq_queue *q, const mq_lease *lease, double visibility);

// mq_repair: re-creates the lock of every group that has events but none. Returns the
// locks it created. (lib/admin.cpp) The claim's automatic repair passes its own Conn.
int64_t queue_repair(mq_queue *q);
int64_t queue_repair(const Conn &c, mq_queue *q);

// When the next group at this priority floor becomes due (the smallest available_at
// above now: a lease, park or schedule running out), or 0 if none is waiting.
// With partitions and due_partition not null: the earliest available_at, due or not,
// and its lock's partition (-1 when none).
double queue_next_due(mq_queue *q, int min_priority, const std::vector<int> &only = {}, int *due_partition = nullptr);

}  // namespace mongomq
