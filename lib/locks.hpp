// The lock protocol (docs/design.md, "Dropping a lock", "Lost replies"): how the
// operations of lib/queue.cpp (and lib/admin.cpp's repair and purge) write a group's
// lock. A lease holder's writes are fenced by its token; a lock is made by a
// $setOnInsert upsert that never disturbs a lease; a lock is dropped only with the
// re-check that closes the race with a publish; commands that are harmless to repeat
// are retried after a lost reply. lib/locks.cpp; each function names its commands.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "bson.hpp"
#include "error.hpp"
#include "handles.hpp"

namespace mongomq {

class Conn;  // store.hpp

// {_id: group}: a lock by its group, whoever holds it; with partitions
// {_id: group, partition: k} (lib/partition.hpp), so the command goes to one shard.
BsonPtr lock_filter(const mq_queue *q, const std::string &group);

// {_id: group, token: token} (and the partition): every lock mutation of a lease
// holder is fenced by it.
BsonPtr fenced(const mq_queue *q, const std::string &group, const std::string &token);
// {$not: {$lt: 0}}, a priority that is not paused (a paused lock keeps its priority p
// as -1 - p, lib/groups.cpp; a lock without a priority is not paused).
BsonPtr not_paused();
// A paused lock the holder lets go of while its group drains stays, released and
// without a head (<keep>: an updateOne fenced by the token and priority < 0), so the
// pause outlives the drain. True when it was ours and paused.
bool keep_paused(const char *keep, const Conn &c, mq_queue *q, const std::string &group, const std::string &token);

// The lock a publish makes for a new group (a $setOnInsert update): in line from
// `due` (the publish's time: a new group waits behind groups released before it), or
// parked until not_before; `head` is the seq of the group's first event (0: unknown),
// the event its attempts count (docs/design.md, "Attempts", "Round-robin and fairness").
BsonPtr lock_insert(int priority, double not_before, int64_t head, double due);

// Commands whose outcome is unknown after MQ_ERR_CONNECT (a lost reply) are retried
// where repeating them is harmless: the re-check (a read) and the lock upserts
// ($setOnInsert). A few tries, 50 ms apart doubling: a network blip, not an outage;
// what outlasts them is healed by the automatic repair (mq_queue_set_repair_interval).
constexpr int kConnectTries = 4;
constexpr std::chrono::milliseconds kConnectPause{50};

template <typename Op>
auto retry_connect(Op op) -> decltype(op()) {
    std::chrono::milliseconds pause = kConnectPause;
    for (int attempt = 1;; attempt++) {
        try {
            return op();
        } catch (const Failure &f) {
            if (!outcome_unknown(f) || attempt >= kConnectTries) throw;
        }
        std::this_thread::sleep_for(pause);
        pause *= 2;
    }
}

// The re-check half of dropping a lock (design.md, "Dropping a lock"): a publish may
// have inserted a message after we decided the group was empty. The publisher inserts
// its message *before* upserting the lock, so either this re-check sees that message
// and we re-create the lock, or the message was inserted after the re-check, hence the
// publisher's upsert runs after our delete and creates the lock itself. Either way the
// message has a lock. Both commands are retried after a lost reply (retry_connect).
// The re-created lock keeps the dropped lock's priority: a publish that raced the drop
// belongs to the group's current life (as it would have a moment earlier), not a new
// one. harel's messages carry no priority, so it could not come from them.
void recheck_group(const char *recheck, const char *relock, const Conn &c, mq_queue *q, const std::string &group,
                   int priority);

// Deletes a lock we hold, then re-checks (recheck_group).
// Commands: <prefix>.drop (delete), <prefix>.recheck (find), maybe <prefix>.relock.
// `priority` is the dropped lock's. Returns false when the lock was not ours any more
// (token fenced). When the drop fails with MQ_ERR_CONNECT (its reply may have been
// lost after the server applied it), the re-check still runs before the failure is
// rethrown, so a publish that raced the drop is never left without a lock; if the drop
// was not applied, our lock stays until a retry drops it or it expires.
// A paused lock is not dropped but kept (keep_paused, command <keep>), and the result
// is then whether that matched.
bool drop_lock(const char *drop, const char *keep, const char *recheck, const char *relock, const Conn &c, mq_queue *q,
               const std::string &group, const std::string &token, int priority);

}  // namespace mongomq
