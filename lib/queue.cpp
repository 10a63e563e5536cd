// The queue algorithm: harel's MongoTransport (docs/design.md), with its races closed.
// One function per operation; each lists its server commands by the names used in
// docs/design.md, and the race it guards against is written beside the step.
#include "queue.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <string_view>
#include <unordered_set>

#include "error.hpp"
#include "fault.hpp"
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
    return fn != nullptr ? fn(ctx) : mongomq::wall_clock() + clock_offset;
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

BsonPtr lock_filter(const std::string &group) { return own(BCON_NEW("_id", BCON_UTF8(group.c_str()))); }

// The upsert that makes a group claimable if it has no lock. $setOnInsert only: a
// group that is leased or parked keeps its available_at and token, and the priority
// of the publish that created the group stays (harel's rule). A group whose first
// event is scheduled starts parked until then.
BsonPtr lock_insert(int priority, double not_before) {
    return own(BCON_NEW("$setOnInsert", "{",                               //
                        "available_at", BCON_DOUBLE(not_before > 0 ? not_before : 0.0),  //
                        "token", BCON_NULL,                                 //
                        "priority", BCON_INT32(priority),                   //
                        "attempts", BCON_INT32(0), "}"));
}

void ensure_lock(const char *name, const Conn &c, const std::string &group, int priority) {
    BsonPtr filter = lock_filter(group);
    BsonPtr update = lock_insert(priority, 0);
    retry_duplicate_key([&] { return update_one(name, c.locks(), filter.get(), update.get(), true); });
}

// {_id: group, token: token}: every lock mutation of a lease holder is fenced by it.
BsonPtr fenced(const std::string &group, const std::string &token) {
    return own(BCON_NEW("_id", BCON_UTF8(group.c_str()), "token", BCON_UTF8(token.c_str())));
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
    if (delete_one(drop, c.locks(), fenced(group, token).get()) == 0) return false;

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

double clock_offset(double t0, double t1, int64_t server_ms) {
    // localTime is truncated to the millisecond: the server's time was in [L, L + 1 ms).
    double server = static_cast<double>(server_ms) / 1000.0 + 0.0005;
    double offset = server - (t0 + t1) / 2;
    // An offset within the measurement's own error (half the round trip, plus the half
    // millisecond of localTime) cannot be told from 0, and a spurious one would put us
    // out of step with peers on the same clock (harel uses the wall clock).
    double error = (t1 - t0) / 2 + 0.0005;
    return std::fabs(offset) > error ? offset : 0;
}

// open: open.indexes (2 createIndexes), open.clock (isMaster).
void queue_open(mq_queue *q) {
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

    // The server's clock: leases compare times written by different machines, so the
    // queue runs on the server's time. localTime (ms) is read mid-way through the
    // round trip, so it is compared with the middle of our two readings. isMaster,
    // not hello: the test server answers only isMaster, and MongoDB answers both.
    fault_point("open.clock");
    BsonPtr cmd = own(BCON_NEW("isMaster", BCON_INT32(1)));
    Bson reply;
    bson_error_t error;
    double t0 = wall_clock();
    if (!mongoc_client_command_simple(c.client(), "admin", cmd.get(), nullptr, reply.get(), &error))
        fail_mongoc("open.clock", error);
    double t1 = wall_clock();
    bson_iter_t it;
    if (bson_iter_init_find(&it, reply.get(), "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
        q->clock_offset = clock_offset(t0, t1, bson_iter_date_time(&it));
}

// publish (one event or a batch): publish.seq (findAndModify $inc by the count),
// publish.insert (insertMany), publish.lock (one unordered bulk of upserts).
int64_t queue_publish(mq_queue *q, const std::vector<Outgoing> &events) {
    Conn c(q);
    const auto count = static_cast<int64_t>(events.size());

    // 1. Seqs first..first+count-1. We ask for the counter as it was before the $inc
    //    and add ourselves: the same numbers on MongoDB, and mongo-java-server
    //    serialises a "new" document after releasing its lock, so a concurrent $inc
    //    can show through it (two publishers then get one seq). No document before:
    //    the upsert made n = count. The first upsert can race another publisher's.
    BsonPtr filter = own(BCON_NEW("_id", BCON_UTF8("seq")));
    BsonPtr inc = own(BCON_NEW("$inc", "{", "n", BCON_INT64(count), "}"));
    FamSpec spec;
    spec.query = filter.get();
    spec.update = inc.get();
    spec.upsert = true;
    spec.return_new = false;
    BsonPtr before = retry_duplicate_key([&] { return find_and_modify("publish.seq", c.counters(), spec); });
    int64_t first = before ? get_int64(before.get(), "n", "publish.seq") + 1 : 1;

    // 2. The messages, before the locks: a lock never points at a group whose message
    //    is not yet visible, and drop_lock's re-check relies on this order.
    double now = q->now();
    std::vector<BsonPtr> docs;
    docs.reserve(events.size());
    for (size_t i = 0; i < events.size(); i++) {
        const Outgoing &e = events[i];
        BsonPtr msg = own(bson_new());
        BSON_APPEND_INT64(msg.get(), "_id", first + static_cast<int64_t>(i));
        BSON_APPEND_UTF8(msg.get(), "group_id", e.group->c_str());
        if (e.text)
            bson_append_utf8(msg.get(), "event", -1, e.len > 0 ? static_cast<const char *>(e.bytes) : "",
                             static_cast<int>(e.len));
        else
            bson_append_binary(msg.get(), "event", -1, BSON_SUBTYPE_BINARY, static_cast<const uint8_t *>(e.bytes),
                               static_cast<uint32_t>(e.len));
        BSON_APPEND_INT32(msg.get(), "priority", e.priority);
        BSON_APPEND_DOUBLE(msg.get(), "published_at", now);
        if (e.not_before > 0) BSON_APPEND_DOUBLE(msg.get(), "not_before", e.not_before);
        docs.push_back(std::move(msg));
    }
    insert_many("publish.insert", c.messages(), docs);

    // 3. Ready each new group: one upsert per distinct group, from its first event in
    //    add order (its priority wins, and a scheduled first event starts it parked).
    std::vector<std::pair<BsonPtr, BsonPtr>> upserts;
    std::unordered_set<std::string_view> seen;
    for (const Outgoing &e : events) {
        if (!seen.insert(*e.group).second) continue;
        upserts.emplace_back(lock_filter(*e.group), lock_insert(e.priority, e.not_before));
    }
    // Two publishers creating one group race on the new _id: the loser's retry finds
    // the lock; every upsert is $setOnInsert only, so repeating the bulk is harmless.
    retry_duplicate_key([&] { return bulk_upsert("publish.lock", c.locks(), upserts); });
    return first;
}

// When the next group at this floor becomes due: next.due (find, sort, limit 1).
double queue_next_due(mq_queue *q, int min_priority) {
    Conn c(q);
    BsonPtr filter = own(BCON_NEW("available_at", "{", "$gt", BCON_DOUBLE(q->now()), "}",  //
                                  "priority", "{", "$gte", BCON_INT32(min_priority), "}"));
    BsonPtr opts = own(BCON_NEW("sort", "{", "available_at", BCON_INT32(1), "}", "limit", BCON_INT64(1),
                                "projection", "{", "available_at", BCON_INT32(1), "}"));
    std::vector<BsonPtr> next = find("next.due", c.locks(), filter.get(), opts.get());
    return next.empty() ? 0 : get_double_or(next[0].get(), "available_at", 0);
}

namespace {

// The group's next events, head first: claim.head (find, sort _id, limit n).
std::vector<BsonPtr> read_heads(const Conn &c, const std::string &group, size_t n) {
    BsonPtr filter = own(BCON_NEW("group_id", BCON_UTF8(group.c_str())));
    BsonPtr opts = own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(static_cast<int64_t>(n))));
    return find("claim.head", c.messages(), filter.get(), opts.get());
}

// Moves a head that was delivered too often to {prefix}_dead: claim.dead_insert, then
// claim.dead_delete. Insert first, so a crash between the two leaves the event in both
// collections (the next claim repeats the move; the insert's duplicate key is fine),
// never in neither.
void move_to_dead(mq_queue *q, const Conn &c, const bson_t *head, int64_t seq, int delivered) {
    Bson dead;
    BSON_APPEND_INT64(dead.get(), "_id", seq);
    bson_iter_t it;
    for (const char *field : {"group_id", "event", "priority", "published_at"}) {
        if (bson_iter_init_find(&it, head, field)) bson_append_iter(dead.get(), field, -1, &it);
    }
    BSON_APPEND_INT32(dead.get(), "attempts", delivered);
    BSON_APPEND_DOUBLE(dead.get(), "dead_at", q->now());
    try {
        insert_one("claim.dead_insert", c.dead(), dead.get());
    } catch (const Failure &f) {
        if (!is_duplicate_key(f)) throw;  // already moved by a claim that died after its insert
    }
    BsonPtr id = own(BCON_NEW("_id", BCON_INT64(seq)));
    delete_one("claim.dead_delete", c.messages(), id.get());
}

}  // namespace

// claim: claim.lease (sorted findAndModify), claim.head (find, limit max_events + 1).
// On the way, only when needed: a group left without messages is dropped (claim.drop,
// claim.recheck, maybe claim.relock); a head scheduled for later parks its group
// (claim.park); a head delivered max_attempts times goes to the dead letters
// (claim.dead_insert, claim.dead_delete, claim.dead_reset, claim.head again).
mq_lease *queue_claim(mq_queue *q, const std::string &worker, double visibility, int min_priority,
                      size_t max_events) {
    Conn c(q);
    for (;;) {
        double now = q->now();
        std::string token = worker + ":" + random_hex128();

        // 1. Pick and lease the due group that has waited longest, atomically: two
        //    claimers never get the same group. available_at <= now also matches
        //    expired leases (crash recovery); $inc attempts counts the deliveries of
        //    the head, which ack resets. We read the document as it was before our
        //    update (see publish.seq): what we wrote we know.
        BsonPtr query = own(BCON_NEW("available_at", "{", "$lte", BCON_DOUBLE(now), "}",  //
                                     "priority", "{", "$gte", BCON_INT32(min_priority), "}"));
        BsonPtr sort = own(BCON_NEW("available_at", BCON_INT32(1)));
        BsonPtr update = own(BCON_NEW("$set", "{", "token", BCON_UTF8(token.c_str()),               //
                                      "available_at", BCON_DOUBLE(now + visibility), "}",           //
                                      "$inc", "{", "attempts", BCON_INT32(1), "}"));
        FamSpec spec;
        spec.query = query.get();
        spec.sort = sort.get();
        spec.update = update.get();
        spec.return_new = false;
        BsonPtr lock = find_and_modify("claim.lease", c.locks(), spec);
        if (!lock) return nullptr;
        std::string group = get_string(lock.get(), "_id", "claim.lease");
        int priority = get_int_or(lock.get(), "priority", 0);
        int attempts = get_int_or(lock.get(), "attempts", 0) + 1;  // harel's locks have none: $inc made it 1

        // 2. The events to hand out and whether another waits behind them: ack then
        //    knows without a read whether the group drains.
        std::vector<BsonPtr> heads = read_heads(c, group, max_events + 1);
        const int max_attempts = q->max_attempts.load();
        bool lost = false;
        while (!heads.empty() && max_attempts > 0 && attempts > max_attempts) {
            // The head was delivered max_attempts times: dead-letter it and deliver the
            // next one on this lease, as its first delivery.
            int64_t seq = get_int64(heads[0].get(), "_id", "claim.head");
            move_to_dead(q, c, heads[0].get(), seq, attempts - 1);
            BsonPtr reset = own(BCON_NEW("$set", "{", "attempts", BCON_INT32(1), "}"));
            if (update_one("claim.dead_reset", c.locks(), fenced(group, token).get(), reset.get(), false) == 0) {
                lost = true;  // our lease ran out meanwhile: the group is someone else's
                break;
            }
            attempts = 1;
            heads = read_heads(c, group, max_events + 1);
        }
        if (lost) continue;
        if (heads.empty()) {
            // A lock without messages (a drained group whose ack re-locked it, a
            // harel peer's leftover, or the dead letters took the last event): drop
            // it, closing the orphan race, and go on.
            drop_lock("claim.drop", "claim.recheck", "claim.relock", c, group, token, priority);
            continue;
        }

        // 3. A head scheduled for later holds its group (strict FIFO): park the group
        //    until then and undo this lease's attempt; go on with the next group.
        double not_before = get_double_or(heads[0].get(), "not_before", 0);
        if (not_before > now) {
            BsonPtr park = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(not_before), "token", BCON_NULL, "}",
                                        "$inc", "{", "attempts", BCON_INT32(-1), "}"));
            update_one("claim.park", c.locks(), fenced(group, token).get(), park.get(), false);
            continue;
        }

        auto lease = std::make_unique<mq_lease>();
        lease->ns = q->ns;
        lease->group = group;
        lease->token = token;
        lease->attempts = attempts;
        lease->priority = priority;
        lease->deadline.store(now + visibility);
        // Consecutive events up to max_events, stopping before one scheduled for later.
        size_t i = 0;
        for (; i < heads.size() && i < max_events; i++) {
            if (i > 0 && get_double_or(heads[i].get(), "not_before", 0) > now) break;
            int64_t seq = get_int64(heads[i].get(), "_id", "claim.head");
            lease->items.push_back({seq, get_event_bytes(heads[i].get(), seq)});
        }
        lease->more_after = i < heads.size();
        return lease.release();
    }
}

// ack: ack.delete (the leased events), then ack.release (updateOne) when more events
// wait, or ack.drop + ack.recheck (+ ack.relock) when the group drains.
mq_status queue_ack(mq_queue *q, const mq_lease *lease) {
    Conn c(q);

    // 1. The events first, without the token: the work was done (at-least-once), and a
    //    seq is never reused, so this deletes nothing but those events. Releasing the
    //    group first would let another worker claim the same head again.
    Bson ids;
    bson_t in, list;
    BSON_APPEND_DOCUMENT_BEGIN(ids.get(), "_id", &in);
    BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
    for (size_t i = 0; i < lease->items.size(); i++) {
        char key[16];
        const char *k;
        bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
        BSON_APPEND_INT64(&list, k, lease->items[i].seq);
    }
    bson_append_array_end(&in, &list);
    bson_append_document_end(ids.get(), &in);
    delete_many("ack.delete", c.messages(), ids.get());

    // 2. Release the group, fenced by the token (matching nothing = we lost it).
    if (lease->more_after) {
        // Round-robin: available_at = now puts the group behind every group that has
        // waited since before now, including never-claimed ones (0).
        BsonPtr release = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now()), "token", BCON_NULL,
                                       "attempts", BCON_INT32(0), "}"));
        return update_one("ack.release", c.locks(), fenced(lease->group, lease->token).get(), release.get(), false) == 0
                   ? MQ_LEASE_LOST
                   : MQ_OK;
    }
    // The claim saw nothing behind its events: the group drains. The lock goes (so the
    // next publish sets the group's priority afresh); drop_lock re-checks for a
    // publish that landed meanwhile.
    return drop_lock("ack.drop", "ack.recheck", "ack.relock", c, lease->group, lease->token, lease->priority)
               ? MQ_OK
               : MQ_LEASE_LOST;
}

// nack: nack.park or nack.retry (one fenced updateOne). attempts stay.
mq_status queue_nack(mq_queue *q, const mq_lease *lease, double delay) {
    Conn c(q);
    BsonPtr filter = fenced(lease->group, lease->token);
    if (delay > 0) {
        // Park: keep the token, so the group is held until the delay passes.
        double until = q->now() + delay;
        BsonPtr park = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(until), "}"));
        if (update_one("nack.park", c.locks(), filter.get(), park.get(), false) == 0) return MQ_LEASE_LOST;
        lease->deadline.store(until);
        return MQ_OK;
    }
    // Retry now: 0 puts the group first in line, as harel does.
    BsonPtr retry = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(0.0), "token", BCON_NULL, "}"));
    return update_one("nack.retry", c.locks(), filter.get(), retry.get(), false) == 0 ? MQ_LEASE_LOST : MQ_OK;
}

// extend: extend.lease (one fenced updateOne).
mq_status queue_extend(mq_queue *q, const mq_lease *lease, double visibility) {
    Conn c(q);
    double until = q->now() + visibility;
    BsonPtr extend = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(until), "}"));
    if (update_one("extend.lease", c.locks(), fenced(lease->group, lease->token).get(), extend.get(), false) == 0)
        return MQ_LEASE_LOST;
    lease->deadline.store(until);
    return MQ_OK;
}

}  // namespace mongomq
