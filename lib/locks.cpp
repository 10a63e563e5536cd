// The lock protocol (lib/locks.hpp, docs/design.md "Dropping a lock"): the lock a
// new group gets, the fence of a lease holder's writes, and dropping a lock with its
// re-check. Used by the operations in lib/queue.cpp and the repair in lib/admin.cpp.
#include "locks.hpp"

#include <algorithm>
#include <vector>

#include "partition.hpp"
#include "store.hpp"

namespace mongomq {

BsonPtr lock_filter(const mq_queue *q, const std::string &group) {
    BsonPtr filter = own(BCON_NEW("_id", BCON_UTF8(group.c_str())));
    append_partition(q, filter.get(), group_partition(q, group));
    return filter;
}

BsonPtr not_paused() { return own(BCON_NEW("$not", "{", "$lt", BCON_INT32(0), "}")); }

bool keep_paused(const char *keep, const Conn &c, mq_queue *q, const std::string &group, const std::string &token) {
    BsonPtr paused = fenced(q, group, token);
    BSON_APPEND_DOCUMENT(paused.get(), "priority", own(BCON_NEW("$lt", BCON_INT32(0))).get());
    BsonPtr idle = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now()), "token", BCON_NULL, "attempts",
                                BCON_INT32(0), "}", "$unset", "{", "head", BCON_UTF8(""), "}"));
    return update_one(keep, c.locks(), paused.get(), idle.get(), false) > 0;
}

namespace {

// The lock of a group that has events, made if it has none (<name>: an upsert of
// lock_insert, retried after a lost reply and after a raced upsert's duplicate key).
void ensure_lock(const char *name, const Conn &c, const mq_queue *q, const std::string &group, int priority,
                 int64_t head, double due) {
    BsonPtr filter = lock_filter(q, group);
    BsonPtr update = lock_insert(priority, 0, head, due);
    retry_connect([&] {
        return retry_duplicate_key([&] { return update_one(name, c.locks(), filter.get(), update.get(), true); });
    });
}

}  // namespace

BsonPtr fenced(const mq_queue *q, const std::string &group, const std::string &token) {
    BsonPtr filter = own(BCON_NEW("_id", BCON_UTF8(group.c_str()), "token", BCON_UTF8(token.c_str())));
    append_partition(q, filter.get(), group_partition(q, group));
    return filter;
}

void recheck_group(const char *recheck, const char *relock, const Conn &c, mq_queue *q, const std::string &group,
                   int priority) {
    // The head's seq and publish time only (an event may be 16 MiB): the group_id
    // index {group_id: 1, _id: 1} finds it (IXSCAN, one key, one document).
    BsonPtr filter = own(BCON_NEW("group_id", BCON_UTF8(group.c_str())));
    BsonPtr opts = own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(1),  //
                                "projection", "{", "_id", BCON_INT32(1), "published_at", BCON_INT32(1), "}"));
    std::vector<BsonPtr> left = retry_connect([&] { return find(recheck, c.messages(), filter.get(), opts.get()); });
    if (left.empty()) return;
    // In line from when the raced event was published (as its own publish's lock
    // would be); a harel event has no publish time: from now.
    double due = get_double_or(left[0].get(), "published_at", 0);
    ensure_lock(relock, c, q, group, priority, get_int64_or(left[0].get(), "_id", 0), due > 0 ? due : q->now());
}

bool drop_lock(const char *drop, const char *keep, const char *recheck, const char *relock, const Conn &c, mq_queue *q,
               const std::string &group, const std::string &token, int priority) {
    try {
        // A paused lock (priority < 0) is not dropped: the pause outlives the drain.
        BsonPtr unpaused = fenced(q, group, token);
        BSON_APPEND_DOCUMENT(unpaused.get(), "priority", not_paused().get());
        if (delete_one(drop, c.locks(), unpaused.get()) == 0) return keep_paused(keep, c, q, group, token);
    } catch (const Failure &f) {
        if (!outcome_unknown(f)) throw;
        recheck_group(recheck, relock, c, q, group, priority);
        throw;
    }
    recheck_group(recheck, relock, c, q, group, priority);
    return true;
}

// The upsert that makes a group claimable if it has no lock. $setOnInsert only: a
// group that is leased or parked keeps its available_at and token, and the priority
// of the publish that created the group stays (harel's rule). A new group joins the
// line at `due`, its first publish's time (fairness, design.md "Round-robin and
// fairness": harel's 0.0 would put every new group ahead of every group released
// since, so a stream of new groups could starve the old ones without bound). A group
// whose first event is scheduled starts parked until then. `head` (0: unknown, left
// out) is the event the lock's attempts count (design.md, "Attempts").
BsonPtr lock_insert(int priority, double not_before, int64_t head, double due) {
    Bson fields;
    BSON_APPEND_DOUBLE(fields.get(), "available_at", std::max(not_before, due > 0 ? due : 0.0));
    BSON_APPEND_NULL(fields.get(), "token");
    BSON_APPEND_INT32(fields.get(), "priority", priority);
    BSON_APPEND_INT32(fields.get(), "attempts", 0);
    if (head > 0) BSON_APPEND_INT64(fields.get(), "head", head);
    BsonPtr update = own(bson_new());
    BSON_APPEND_DOCUMENT(update.get(), "$setOnInsert", fields.get());
    return update;
}

}  // namespace mongomq
