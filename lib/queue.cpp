// The queue algorithm: harel's MongoTransport (docs/design.md), with its races closed.
// One function per operation; each lists its server commands by the names used in
// docs/design.md, and the race it guards against is written beside the step.
#include "queue.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <random>

#include "error.hpp"
#include "store.hpp"

namespace mongomq {

double wall_clock() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace mongomq

double mq_queue::now() {
    double (*fn)(void *);
    void *ctx;
    {
        std::lock_guard<std::mutex> lock(clock_mu);
        fn = clock;
        ctx = clock_ctx;
    }
    return fn != nullptr ? fn(ctx) : mongomq::wall_clock();
}

namespace mongomq {

namespace {

// 128 random bits in hex: a lease token's unique part.
std::string random_hex128() {
    thread_local std::mt19937_64 rng([] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), static_cast<unsigned>(getpid())};
        return std::mt19937_64(seq);
    }());
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()));
    return buf;
}

// The upsert that makes a group claimable if it has no lock. $setOnInsert only: a
// group that is leased or parked keeps its available_at and token, and the priority
// of the publish that created the group stays (harel's rule).
void ensure_lock(const char *name, const Conn &c, const std::string &group, int priority) {
    BsonPtr filter = own(BCON_NEW("_id", BCON_UTF8(group.c_str())));
    BsonPtr update = own(BCON_NEW("$setOnInsert", "{",  //
                                  "available_at", BCON_DOUBLE(0.0),             //
                                  "token", BCON_NULL,                           //
                                  "priority", BCON_INT32(priority),             //
                                  "attempts", BCON_INT32(0), "}"));
    // Two publishers creating one group race on the new _id: retry the loser.
    retry_duplicate_key([&] { return update_one(name, c.locks(), filter.get(), update.get(), true); });
}

// Deletes a lock we hold, then closes the orphan race (design.md, "Dropping a lock"):
// a publish may have inserted a message after we decided the group was empty. The
// publisher inserts its message *before* upserting the lock, so either our re-check
// below sees that message and we re-create the lock, or the message was inserted
// after the re-check, hence the publisher's upsert runs after our delete and creates
// the lock itself. Either way the message has a lock.
// Commands: <prefix>.drop (delete), <prefix>.recheck (find), maybe <prefix>.relock.
// `priority` is the dropped lock's. Returns false when the lock was not ours any more
// (token fenced).
bool drop_lock(const char *drop, const char *recheck, const char *relock, const Conn &c,
               const std::string &group, const std::string &token, int priority) {
    BsonPtr fenced = own(BCON_NEW("_id", BCON_UTF8(group.c_str()), "token", BCON_UTF8(token.c_str())));
    if (delete_one(drop, c.locks(), fenced.get()) == 0) return false;

    BsonPtr filter = own(BCON_NEW("group_id", BCON_UTF8(group.c_str())));
    BsonPtr opts = own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(1)));
    std::vector<BsonPtr> left = find(recheck, c.messages(), filter.get(), opts.get());
    // The re-created lock keeps the dropped lock's priority: a publish that raced the
    // drop belongs to the group's current life (as it would have a moment earlier),
    // not a new one. harel's messages carry no priority, so it could not come from them.
    if (!left.empty()) ensure_lock(relock, c, group, priority);
    return true;
}

}  // namespace

void queue_create_indexes(const mq_queue *q) {
    Conn c(q);
    // The claim's sorted findAndModify filters on available_at and priority.
    BsonPtr locks = own(BCON_NEW("createIndexes", BCON_UTF8(q->locks.c_str()), "indexes", "[", "{",  //
                                 "key", "{", "available_at", BCON_INT32(1), "priority", BCON_INT32(1), "}",
                                 "name", BCON_UTF8("available_at_1_priority_1"), "}", "]"));
    // The head lookup: without it, finding a group's head walks other groups' backlog.
    BsonPtr messages = own(BCON_NEW("createIndexes", BCON_UTF8(q->messages.c_str()), "indexes", "[", "{",  //
                                    "key", "{", "group_id", BCON_INT32(1), "_id", BCON_INT32(1), "}",
                                    "name", BCON_UTF8("group_id_1__id_1"), "}", "]"));
    for (const BsonPtr *cmd : {&locks, &messages}) {
        try {
            write_command("open.indexes", c.client(), q->db, cmd->get());
        } catch (const Failure &f) {
            // 85 IndexOptionsConflict: the same keys exist under another name. That
            // index serves us as well as ours would.
            if (!(f.status == MQ_ERR_SERVER && f.server_code == 85)) throw;
        }
    }
}

// publish: publish.seq (findAndModify $inc), publish.insert, publish.lock (upsert).
int64_t queue_publish(mq_queue *q, const std::string &group, const void *event, size_t len, int priority,
                      bool event_is_text) {
    Conn c(q);

    // 1. The next seq. The counter's first upsert can race another publisher's.
    BsonPtr filter = own(BCON_NEW("_id", BCON_UTF8("seq")));
    BsonPtr inc = own(BCON_NEW("$inc", "{", "n", BCON_INT64(1), "}"));
    //    We ask for the document as it was before the $inc and add 1 ourselves: the
    //    same number on MongoDB, and mongo-java-server serialises a "new" document
    //    after releasing its lock, so a concurrent $inc can show through it (two
    //    publishers then get one seq). No document before: the upsert made n = 1.
    FamSpec spec;
    spec.query = filter.get();
    spec.update = inc.get();
    spec.upsert = true;
    spec.return_new = false;
    BsonPtr before = retry_duplicate_key([&] { return find_and_modify("publish.seq", c.counters(), spec); });
    int64_t seq = before ? get_int64(before.get(), "n", "publish.seq") + 1 : 1;

    // 2. The message, before the lock: a lock never points at a group whose message
    //    is not yet visible, and drop_lock's re-check relies on this order.
    Bson msg;
    BSON_APPEND_INT64(msg.get(), "_id", seq);
    BSON_APPEND_UTF8(msg.get(), "group_id", group.c_str());
    if (event_is_text)
        bson_append_utf8(msg.get(), "event", -1, static_cast<const char *>(event), static_cast<int>(len));
    else
        bson_append_binary(msg.get(), "event", -1, BSON_SUBTYPE_BINARY, static_cast<const uint8_t *>(event),
                           static_cast<uint32_t>(len));
    BSON_APPEND_INT32(msg.get(), "priority", priority);
    insert_one("publish.insert", c.messages(), msg.get());

    // 3. Ready the group if it is new.
    ensure_lock("publish.lock", c, group, priority);
    return seq;
}

// claim: claim.lease (sorted findAndModify), claim.head (find, limit 2); a group left
// without messages is dropped (claim.drop, claim.recheck, maybe claim.relock) and the
// claim goes on with the next group.
mq_lease *queue_claim(mq_queue *q, const std::string &worker, double visibility, int min_priority) {
    Conn c(q);
    for (;;) {
        double now = q->now();
        std::string token = worker + ":" + random_hex128();

        // 1. Pick and lease the due group that has waited longest, atomically: two
        //    claimers never get the same group. available_at <= now also matches
        //    expired leases (crash recovery); $inc attempts counts the deliveries of
        //    the head, which ack resets.
        BsonPtr query = own(BCON_NEW("available_at", "{", "$lte", BCON_DOUBLE(now), "}",  //
                                     "priority", "{", "$gte", BCON_INT32(min_priority), "}"));
        BsonPtr sort = own(BCON_NEW("available_at", BCON_INT32(1)));
        BsonPtr update = own(BCON_NEW("$set", "{", "token", BCON_UTF8(token.c_str()),               //
                                      "available_at", BCON_DOUBLE(now + visibility), "}",           //
                                      "$inc", "{", "attempts", BCON_INT32(1), "}"));
        //    As with the counter, we read the document as it was before our update:
        //    what we wrote we know, and the rest (attempts, priority) cannot show a
        //    later writer's values.
        FamSpec spec;
        spec.query = query.get();
        spec.sort = sort.get();
        spec.update = update.get();
        spec.return_new = false;
        BsonPtr lock = find_and_modify("claim.lease", c.locks(), spec);
        if (!lock) return nullptr;
        std::string group = get_string(lock.get(), "_id", "claim.lease");

        // 2. The head and whether another event waits behind it: ack then knows
        //    without a read whether the group drains.
        BsonPtr filter = own(BCON_NEW("group_id", BCON_UTF8(group.c_str())));
        BsonPtr opts = own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(2)));
        std::vector<BsonPtr> heads = find("claim.head", c.messages(), filter.get(), opts.get());
        if (heads.empty()) {
            // A lock without messages (a drained group whose ack re-locked it, or a
            // harel peer's leftover): drop it, closing the orphan race, and go on.
            drop_lock("claim.drop", "claim.recheck", "claim.relock", c, group, token,
                      get_int_or(lock.get(), "priority", 0));
            continue;
        }

        auto lease = std::make_unique<mq_lease>();
        lease->ns = q->ns;
        lease->group = group;
        lease->token = token;
        lease->attempts = get_int_or(lock.get(), "attempts", 0) + 1;  // harel's locks have none: $inc made it 1
        lease->priority = get_int_or(lock.get(), "priority", 0);
        int64_t seq = get_int64(heads[0].get(), "_id", "claim.head");
        lease->items.push_back({seq, get_event_bytes(heads[0].get(), seq)});
        lease->more_after = heads.size() > 1;
        return lease.release();
    }
}

// ack: ack.delete (the head), then ack.release (updateOne) when more events wait, or
// ack.drop + ack.recheck (+ ack.relock) when the group drains.
mq_status queue_ack(mq_queue *q, const mq_lease *lease) {
    Conn c(q);

    // 1. The event first, without the token: the work was done (at-least-once), and a
    //    seq is never reused, so this deletes nothing but that event. Releasing the
    //    group first would let another worker claim the same head again.
    for (const mq_lease::Item &item : lease->items) {
        BsonPtr id = own(BCON_NEW("_id", BCON_INT64(item.seq)));
        delete_one("ack.delete", c.messages(), id.get());
    }

    // 2. Release the group, fenced by the token (matching nothing = we lost it).
    if (lease->more_after) {
        // Round-robin: available_at = now puts the group behind every group that has
        // waited since before now, including never-claimed ones (0).
        BsonPtr fenced = own(BCON_NEW("_id", BCON_UTF8(lease->group.c_str()), "token", BCON_UTF8(lease->token.c_str())));
        BsonPtr release = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now()), "token", BCON_NULL,
                                       "attempts", BCON_INT32(0), "}"));
        return update_one("ack.release", c.locks(), fenced.get(), release.get(), false) == 0 ? MQ_LEASE_LOST : MQ_OK;
    }
    // The claim saw nothing behind the head: the group drains. The lock goes (so the
    // next publish sets the group's priority afresh); drop_lock re-checks for a
    // publish that landed meanwhile.
    return drop_lock("ack.drop", "ack.recheck", "ack.relock", c, lease->group, lease->token, lease->priority)
               ? MQ_OK
               : MQ_LEASE_LOST;
}

// nack: nack.park or nack.retry (one fenced updateOne). attempts stay.
mq_status queue_nack(mq_queue *q, const mq_lease *lease, double delay) {
    Conn c(q);
    BsonPtr fenced = own(BCON_NEW("_id", BCON_UTF8(lease->group.c_str()), "token", BCON_UTF8(lease->token.c_str())));
    if (delay > 0) {
        // Park: keep the token, so the group is held until the delay passes.
        BsonPtr park = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now() + delay), "}"));
        return update_one("nack.park", c.locks(), fenced.get(), park.get(), false) == 0 ? MQ_LEASE_LOST : MQ_OK;
    }
    // Retry now: 0 puts the group first in line, as harel does.
    BsonPtr retry = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(0.0), "token", BCON_NULL, "}"));
    return update_one("nack.retry", c.locks(), fenced.get(), retry.get(), false) == 0 ? MQ_LEASE_LOST : MQ_OK;
}

// extend: extend.lease (one fenced updateOne).
mq_status queue_extend(mq_queue *q, const mq_lease *lease, double visibility) {
    Conn c(q);
    BsonPtr fenced = own(BCON_NEW("_id", BCON_UTF8(lease->group.c_str()), "token", BCON_UTF8(lease->token.c_str())));
    BsonPtr extend = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now() + visibility), "}"));
    return update_one("extend.lease", c.locks(), fenced.get(), extend.get(), false) == 0 ? MQ_LEASE_LOST : MQ_OK;
}

}  // namespace mongomq
