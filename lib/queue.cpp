// The queue algorithm: harel's MongoTransport (docs/design.md), with its races closed.
// One function per operation; each lists its server commands by the names used in
// docs/design.md, and the race it guards against is written beside the step. The lock
// protocol they share (fenced writes, a new group's lock, dropping a lock with its
// re-check, retries after a lost reply) is lib/locks.cpp; opening a queue and its
// clock, lib/open.cpp.
#include "queue.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "attrs.hpp"
#include "client.hpp"
#include "dedup.hpp"
#include "error.hpp"
#include "fault.hpp"
#include "locks.hpp"
#include "partition.hpp"
#include "store.hpp"

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

}  // namespace

// publish (one event or a batch): publish.seq (findAndModify $inc by the count; one
// per partition the events fall in), publish.insert (insertMany), publish.lock (one
// unordered bulk of upserts).
int64_t queue_publish(mq_queue *q, const std::vector<Outgoing> &events, std::vector<Published> *outcome) {
    Conn c(q);
    return queue_publish(c, q, events, outcome);
}

int64_t queue_publish(const Conn &c, mq_queue *q, const std::vector<Outgoing> &events,
                      std::vector<Published> *outcome) {
    if (q->indexes_pending.load()) {  // after mq_queue_drop: publish.indexes first
        std::lock_guard<std::mutex> lock(q->index_mu);
        if (q->indexes_pending.load()) {
            q->set_dedup_refusal("");
            create_indexes(c, q, "publish.indexes");
            // The record of P > 1 went with the counters: made again (one partition has none).
            if (q->partitions > 1) check_partitions(c, q, "publish.partitions");
            q->indexes_pending.store(false);
        }
    }
    if (q->dedup_refused.load())
        for (const Outgoing &e : events)
            if (e.dedup_key != nullptr)
                fail(MQ_ERR_SERVER,
                     "publish: this queue cannot take dedup keys: the server refused their unique "
                     "index when the queue was opened (" +
                         q->dedup_refusal_text() + "); docs/design.md, \"Deduplication\"");

    // 1. Seqs: each partition's counter, $inc by its events' count. We ask for the
    //    counter as it was before the $inc and add ourselves: the same numbers on
    //    MongoDB, and mongo-java-server serialises a "new" document after releasing its
    //    lock, so a concurrent $inc can show through it (two publishers then get one
    //    seq). No document before: the upsert made n = count. The first upsert can race
    //    another publisher's. With one partition this is the one counter {_id: "seq"}
    //    and the seqs are first..first+count-1; with P, partition k's n-th event gets
    //    (n - 1) * P + k + 1 (lib/partition.hpp): unique in the queue, increasing in a
    //    group.
    std::vector<int64_t> seqs(events.size());
    {
        std::vector<int> part(events.size());
        std::vector<int64_t> count_of(static_cast<size_t>(q->partitions), 0);
        for (size_t i = 0; i < events.size(); i++) {
            part[i] = group_partition(q, *events[i].group);
            count_of[static_cast<size_t>(part[i])]++;
        }
        std::vector<int64_t> next(static_cast<size_t>(q->partitions), 0);  // the counter's n before, per partition
        for (int k = 0; k < q->partitions; k++) {
            const int64_t n = count_of[static_cast<size_t>(k)];
            if (n == 0) continue;
            BsonPtr filter = seq_counter_filter(q, k);
            BsonPtr inc = own(BCON_NEW("$inc", "{", "n", BCON_INT64(n), "}"));
            FamSpec spec;
            spec.query = filter.get();
            spec.update = inc.get();
            spec.upsert = true;
            spec.return_new = false;
            BsonPtr before = retry_duplicate_key([&] { return find_and_modify("publish.seq", c.counters(), spec); });
            next[static_cast<size_t>(k)] = before ? get_int64(before.get(), "n", "publish.seq") : 0;
        }
        for (size_t i = 0; i < events.size(); i++)
            seqs[i] = partition_seq(q, part[i], ++next[static_cast<size_t>(part[i])]);
    }
    const int64_t first = seqs[0];

    // 2. The messages, before the locks: a lock never points at a group whose message
    //    is not yet visible, and drop_lock's re-check relies on this order. A keyed
    //    event carries its key (lib/dedup.cpp).
    double now = q->now();
    const double window = q->dedup_window.load();
    const int scope = q->dedup_scope.load();
    bool keyed = false;
    std::vector<BsonPtr> docs;
    docs.reserve(events.size());
    for (size_t i = 0; i < events.size(); i++) {
        const Outgoing &e = events[i];
        BsonPtr msg = own(bson_new());
        BSON_APPEND_INT64(msg.get(), "_id", seqs[i]);
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
        if (e.attrs != nullptr) append_attrs(msg.get(), *e.attrs);
        if (e.dedup_key != nullptr) {
            append_dedup_fields(msg.get(), e, now, window, scope);
            keyed = true;
        }
        docs.push_back(std::move(msg));
    }
    // 3. Ready each new group: one upsert per distinct group, from its first event in
    //    add order that was added (its priority wins, a scheduled first event starts it
    //    parked, and its seq is the head the lock's attempts count); with keys, also
    //    the group of each duplicate still queued (its own publish may have died
    //    before its lock).
    std::vector<std::pair<BsonPtr, BsonPtr>> upserts;
    auto lock_upserts = [&](const std::vector<Published> *added) {
        std::unordered_set<std::string_view> seen;
        for (size_t i = 0; i < events.size(); i++) {
            const Outgoing &e = events[i];
            if (added != nullptr && (*added)[i].duplicate) continue;
            if (!seen.insert(*e.group).second) continue;
            upserts.emplace_back(lock_filter(q, *e.group), lock_insert(e.priority, e.not_before, seqs[i], now));
        }
    };
    // Two publishers creating one group race on the new _id: the loser's retry finds
    // the lock; every upsert is $setOnInsert only, so repeating the bulk is harmless,
    // and so is repeating it after a lost reply (retry_connect).
    auto lock_groups = [&] {
        if (upserts.empty()) return;
        retry_connect(
            [&] { return retry_duplicate_key([&] { return bulk_upsert("publish.lock", c.locks(), upserts); }); });
    };
    std::vector<Published> added;
    std::vector<std::pair<BsonPtr, BsonPtr>> dup_locks;
    try {
        if (keyed)
            added = insert_keyed(c, q, events, docs, seqs, now, dup_locks);
        else
            insert_many("publish.insert", c.messages(), docs);
    } catch (const Failure &f) {
        // A lost reply: the events may be in. Lock their groups all the same (a lock
        // without events is harmless: the next claim drops it), so none is stranded,
        // then report the failure: a retry publishes them again (new seqs), or, with
        // their keys, finds them (MQ_DUPLICATE).
        // With keys, an earlier round of the insert may have added events before this
        // failure, whatever it was: lock them too.
        if (!outcome_unknown(f) && !keyed) throw;
        lock_upserts(nullptr);
        for (auto &d : dup_locks) upserts.push_back(std::move(d));
        try {
            lock_groups();
        } catch (const Failure &) {  // still down: the automatic repair heals them
        }
        throw;
    }
    lock_upserts(keyed ? &added : nullptr);
    for (auto &d : dup_locks) upserts.push_back(std::move(d));
    lock_groups();
    if (outcome != nullptr) {
        if (keyed) {
            *outcome = std::move(added);
        } else {
            outcome->clear();
            for (int64_t seq : seqs) outcome->push_back({seq, false});
        }
    }
    return first;
}

namespace {

// {priority: {$in: [floor..4]}, available_at: {<op>: t}}: the shape the claim index
// {priority: 1, available_at: 1} serves with one short scan per allowed priority,
// merged on available_at (docs/design.md, "Deployments"); a $gte on priority would
// walk every due lower-priority lock first. With partitions, {partition: k, ...} first
// (partition >= 0; the index {partition: 1, priority: 1, available_at: 1}), or
// {partition: {$in: list}, ...} for next.due.
BsonPtr floor_filter(const mq_queue *q, int partition, const std::vector<int> *list, int min_priority, const char *op,
                     double t) {
    BsonPtr query = own(bson_new());
    if (q->partitions > 1) {
        if (partition >= 0) {
            BSON_APPEND_INT32(query.get(), "partition", partition);
        } else {
            bson_t part, in;
            BSON_APPEND_DOCUMENT_BEGIN(query.get(), "partition", &part);
            BSON_APPEND_ARRAY_BEGIN(&part, "$in", &in);
            for (size_t i = 0; i < list->size(); i++) {
                char key[16];
                const char *k;
                bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
                BSON_APPEND_INT32(&in, k, (*list)[i]);
            }
            bson_append_array_end(&part, &in);
            bson_append_document_end(query.get(), &part);
        }
    }
    bson_t prio, in, due;
    BSON_APPEND_DOCUMENT_BEGIN(query.get(), "priority", &prio);
    BSON_APPEND_ARRAY_BEGIN(&prio, "$in", &in);
    for (int p = min_priority, i = 0; p <= MQ_PRIORITY_MAX; p++, i++) {
        char key[16];
        const char *k;
        bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
        BSON_APPEND_INT32(&in, k, p);
    }
    bson_append_array_end(&prio, &in);
    bson_append_document_end(query.get(), &prio);
    if (op == nullptr) return query;  // no bound on available_at
    BSON_APPEND_DOCUMENT_BEGIN(query.get(), "available_at", &due);
    BSON_APPEND_DOUBLE(&due, op, t);
    bson_append_document_end(query.get(), &due);
    return query;
}

}  // namespace

// When the next group at this floor becomes due: next.due (find, sort, limit 1). With
// partitions (due_partition not null), over the claim's partitions (every one when
// `only` is empty) and without the lower bound: the lock that is or becomes due first,
// and its partition.
double queue_next_due(mq_queue *q, int min_priority, const std::vector<int> &only, int *due_partition) {
    Conn c(q);
    const bool parts = q->partitions > 1 && due_partition != nullptr;
    std::vector<int> all = only;
    if (all.empty())
        for (int k = 0; k < q->partitions; k++) all.push_back(k);
    BsonPtr filter = floor_filter(q, -1, &all, min_priority, parts ? nullptr : "$gt", q->now());
    BsonPtr opts = own(BCON_NEW("sort", "{", "available_at", BCON_INT32(1), "}", "limit", BCON_INT64(1), "projection",
                                "{", "available_at", BCON_INT32(1), "partition", BCON_INT32(1), "}"));
    std::vector<BsonPtr> next = find("next.due", c.locks(), filter.get(), opts.get());
    if (due_partition != nullptr) *due_partition = next.empty() ? -1 : get_int_or(next[0].get(), "partition", -1);
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
    for (const char *field : {"group_id", "event", "priority", "published_at", "dedup_key", "attrs"}) {
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
    bson_iter_t group;
    if (bson_iter_init_find(&group, head, "group_id")) bson_append_iter(id.get(), "group_id", -1, &group);
    // A keyed event within its window leaves the record of its key (lib/dedup.cpp):
    // a publisher's retry stays a duplicate after its event went to the dead letters.
    const int64_t until = dedup_until_of(head);
    if (until > 0 && static_cast<double>(until) > q->now() * 1000.0)
        update_one("claim.dead_record", c.messages(), id.get(), record_update().get(), false);
    else
        delete_one("claim.dead_delete", c.messages(), id.get());
}

// The automatic repair: when a claim finds nothing due and the queue's repair interval
// has passed since the last one (in this process), one claimer runs mq_repair's
// commands (repair.groups, repair.locks, maybe repair.lock). It heals what no retry
// covers: a publisher or a drop's re-check that died, or a network down past
// retry_connect's tries. True when it made a lock (the caller claims again). It runs on
// the claim's own connection (a second one from the pool could deadlock it). A repair
// that fails is counted and logged, and the claim reports what it found (nothing
// due): a repair is upkeep, and its failure must not fail the claim that ran it.
bool auto_repair(const Conn &c, mq_queue *q) {
    const double interval = q->repair_interval.load();
    if (interval <= 0) return false;
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    int64_t last = q->repair_last_ns.load();
    if (last == 0) {  // the first empty claim starts the period
        q->repair_last_ns.compare_exchange_strong(last, now);
        return false;
    }
    if (static_cast<double>(now - last) < interval * 1e9) return false;
    if (!q->repair_last_ns.compare_exchange_strong(last, now)) return false;  // another claimer runs it
    int64_t fixed = 0;
    try {
        fixed = queue_repair(c, q);
    } catch (const Failure &f) {
        q->repair_failures.fetch_add(1);
        log_warning("automatic repair of " + q->ns + " failed (it runs again in " + std::to_string(interval) +
                    " s; mq_repair runs it by hand): " + f.message);
        return false;
    }
    q->repair_runs.fetch_add(1);
    q->repair_fixed.fetch_add(static_cast<uint64_t>(fixed));
    return fixed > 0;
}

// Step 1 of the claim, as it found the lock: its pre-image (the lease's group and its
// count before this delivery), or none.
struct Leased {
    BsonPtr lock;              // null: no group is due
    int pre_attempts = 0;      // the lock's attempts before this delivery
    bool prior_known = false;  // the lock's available_at before our lease (for mq_unclaim)
    double prior_available_at = 0;
    bool look_again = false;  // claim.fix_attempts reset a foreign lock: lease again
};

// Step 1 of the claim: claim.lease (findAndModify on locks, sorted on available_at,
// returning the pre-image); only when needed claim.fix_attempts or claim.recover.
// The floor is an $in of the allowed priorities, not a $gte: with the index
// {priority: 1, available_at: 1} the server merges one short scan per priority, sorted
// on available_at (SORT_MERGE), instead of walking every due lower-priority lock
// (docs/design.md, "Deployments").
Leased lease_due_group(const Conn &c, const mq_queue *q, int partition, int min_priority, double now, double visibility,
                       const std::string &token, int &attempts_fixed) {
    BsonPtr query = floor_filter(q, partition, nullptr, min_priority, "$lte", now);
    BsonPtr sort = own(BCON_NEW("available_at", BCON_INT32(1)));
    // leased_at: when this lease was taken, for the group listing's "held for" (ours;
    // harel ignores it).
    BsonPtr update = own(BCON_NEW("$set", "{", "token", BCON_UTF8(token.c_str()),                                     //
                                  "available_at", BCON_DOUBLE(now + visibility), "leased_at", BCON_DOUBLE(now), "}",  //
                                  "$inc", "{", "attempts", BCON_INT32(1), "}"));
    FamSpec spec;
    spec.query = query.get();
    spec.sort = sort.get();
    spec.update = update.get();
    spec.return_new = false;
    Leased leased;
    try {
        leased.lock = find_and_modify("claim.lease", c.locks(), spec);
        if (leased.lock) {
            leased.pre_attempts = get_int_or(leased.lock.get(), "attempts", 0);  // harel's locks have none
            leased.prior_known = true;
            leased.prior_available_at = get_double_or(leased.lock.get(), "available_at", 0);
        }
    } catch (const Failure &f) {
        // A lost reply: the lease may have been taken, under a token only we know.
        // Look for it; found, it is ours (its attempts already counted this
        // delivery); not found, nothing was leased.
        if (f.status == MQ_ERR_SERVER && f.server_code == 14 && attempts_fixed < 8) {
            // TypeMismatch: a lock mongomq did not write has an attempts that is
            // no number, so the $inc fails for every claim and would block the
            // whole queue. Reset one such field (claim.fix_attempts) and look
            // again (issue 14, tests/test_hostile.c).
            BsonPtr bad = own(BCON_NEW("attempts", "{", "$exists", BCON_BOOL(true), "$not", "{", "$type",
                                       BCON_UTF8("number"), "}", "}"));
            append_partition(q, bad.get(), partition);
            BsonPtr reset = own(BCON_NEW("$set", "{", "attempts", BCON_INT32(0), "}"));
            if (update_one("claim.fix_attempts", c.locks(), bad.get(), reset.get(), false) > 0) {
                attempts_fixed++;
                leased.look_again = true;
                return leased;
            }
        }
        if (!outcome_unknown(f)) throw;
        // The lease, if taken, has the priority the claim's filter allowed and the
        // available_at it set: the claim index's fields (a point in one of the
        // $in's scans), then the token; a filter on the token alone would walk
        // every lock.
        BsonPtr mine = floor_filter(q, partition, nullptr, min_priority, "$eq", now + visibility);
        BSON_APPEND_UTF8(mine.get(), "token", token.c_str());
        BsonPtr one = own(BCON_NEW("limit", BCON_INT64(1)));
        std::vector<BsonPtr> found =
            retry_connect([&] { return find("claim.recover", c.locks(), mine.get(), one.get()); });
        if (found.empty()) throw;
        leased.lock = std::move(found[0]);
        leased.pre_attempts = get_int_or(leased.lock.get(), "attempts", 1) - 1;
    }
    return leased;
}

// Step 2 of the claim, its result: the group's next events and the delivery of the
// head this lease is.
struct Heads {
    std::vector<BsonPtr> docs;  // up to max_events + 1, head first; empty: none left
    int attempts = 0;           // this delivery of the head, counted from 1
    bool rehead = false;        // the lock's attempts counted another head: step 4 records this one
};

// Step 2 of the claim: claim.head, and the attempts: the lock's count + 1 while the head
// is the lock's `head` (lock_head), else 1. (The count is not added to when it is not
// used: a foreign lock's attempts may be INT_MAX.)
Heads read_counted_heads(const Conn &c, const std::string &group, size_t max_events, int pre_attempts,
                         int64_t lock_head) {
    Heads h;
    h.docs = read_heads(c, group, max_events + 1);
    h.rehead = !h.docs.empty() && get_int64(h.docs[0].get(), "_id", "claim.head") != lock_head;
    h.attempts = h.rehead ? 1 : pre_attempts + 1;
    return h;
}

// Dead letters (mq_queue_set_max_attempts), after step 2: for each head this lease
// would deliver once too often, claim.dead_insert, claim.dead_delete (move_to_dead),
// and claim.head again.
void dead_letter_heads(mq_queue *q, const Conn &c, const std::string &group, size_t max_events, Heads &h) {
    const int max_attempts = q->max_attempts.load();
    while (!h.docs.empty() && max_attempts > 0 && h.attempts > max_attempts) {
        // The head was delivered max_attempts times: dead-letter it and deliver the
        // next one on this lease, as its first delivery.
        int64_t seq = get_int64(h.docs[0].get(), "_id", "claim.head");
        move_to_dead(q, c, h.docs[0].get(), seq, h.attempts - 1);
        h.docs = read_heads(c, group, max_events + 1);
        h.attempts = 1;
        h.rehead = true;
    }
}

// Step 3 of the claim: claim.park (fenced) when the head is scheduled for later,
// restoring the attempts this lease counted. True when it parked the group.
bool park_if_scheduled(const Conn &c, const mq_queue *q, const std::string &group, const std::string &token,
                       const Heads &h, int64_t head, double now) {
    double not_before = get_double_or(h.docs[0].get(), "not_before", 0);
    if (not_before > now) {
        BsonPtr park = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(not_before), "token", BCON_NULL,  //
                                    "attempts", BCON_INT32(h.attempts - 1), "head", BCON_INT64(head), "}"));
        update_one("claim.park", c.locks(), fenced(q, group, token).get(), park.get(), false);
        return true;
    }
    return false;
}

// Step 4 of the claim: claim.rehead (fenced): {attempts, head}. False when it matched
// nothing: our lease ran out meanwhile.
bool record_head(const Conn &c, const mq_queue *q, const std::string &group, const std::string &token, int attempts,
                 int64_t head) {
    BsonPtr set = own(BCON_NEW("$set", "{", "attempts", BCON_INT32(attempts), "head", BCON_INT64(head), "}"));
    return update_one("claim.rehead", c.locks(), fenced(q, group, token).get(), set.get(), false) != 0;
}

// Step 5 of the claim, no command: the lease handed out, with consecutive events up to
// max_events, and whether another waits behind them (ack.release's new head).
mq_lease *make_lease(const mq_queue *q, const Leased &leased, const std::string &group, const std::string &token,
                     int priority, const Heads &h, double now, double visibility, size_t max_events) {
    auto lease = std::make_unique<mq_lease>();
    lease->ns = q->ns;
    lease->group = group;
    lease->token = token;
    lease->attempts = h.attempts;
    lease->priority = priority;
    lease->partition = group_partition(q, group);
    lease->prior_known = leased.prior_known;
    lease->prior_available_at = leased.prior_available_at;
    lease->deadline.store(now + visibility);
    // Consecutive events up to max_events, stopping before one scheduled for later.
    const std::vector<BsonPtr> &heads = h.docs;
    size_t i = 0;
    for (; i < heads.size() && i < max_events; i++) {
        if (i > 0 && get_double_or(heads[i].get(), "not_before", 0) > now) break;
        int64_t seq = get_int64(heads[i].get(), "_id", "claim.head");
        lease->items.push_back(
            {seq, get_event_bytes(heads[i].get(), seq), dedup_until_of(heads[i].get()), attrs_of(heads[i].get())});
    }
    lease->more_after = i < heads.size();
    if (lease->more_after) lease->next_seq = get_int64(heads[i].get(), "_id", "claim.head");
    return lease.release();
}

// The claim in one partition (the queue's only one when P = 1): nullptr when no group
// of it is due.
mq_lease *claim_in(const Conn &c, mq_queue *q, int partition, const std::string &worker, double visibility,
                   int min_priority, size_t max_events) {
    int attempts_fixed = 0;  // foreign locks whose attempts was no number, reset here
    for (;;) {
        double now = q->now();
        std::string token = worker + ":" + random_hex128();

        // 1. Pick and lease the due group that has waited longest, atomically: two
        //    claimers never get the same group. available_at <= now also matches
        //    expired leases (crash recovery); $inc attempts counts the deliveries of
        //    the lock's head (step 2 checks it is still the group's head). We read the
        //    document as it was before our update (see publish.seq): what we wrote we
        //    know.
        Leased leased = lease_due_group(c, q, partition, min_priority, now, visibility, token, attempts_fixed);
        if (leased.look_again) continue;
        if (!leased.lock) return nullptr;
        std::string group = get_string(leased.lock.get(), "_id", "claim.lease");
        int priority = get_int_or(leased.lock.get(), "priority", 0);
        int64_t lock_head = get_int64_or(leased.lock.get(), "head", 0);  // 0: not recorded

        // 2. The events to hand out and whether another waits behind them: ack then
        //    knows without a read whether the group drains. attempts counts deliveries
        //    of the lock's head; a different head (the one before it was removed by
        //    someone else than the lease holder: a stale ack, a purge; or a lock that
        //    never recorded one) is on its first delivery. A head this lease would
        //    deliver more than max_attempts times goes to the dead letters first.
        Heads heads = read_counted_heads(c, group, max_events, leased.pre_attempts, lock_head);
        dead_letter_heads(q, c, group, max_events, heads);
        if (heads.docs.empty()) {
            // A lock without messages (a drained group whose ack re-locked it, a
            // harel peer's leftover, or the dead letters took the last event): drop
            // it, closing the orphan race, and go on.
            drop_lock("claim.drop", "claim.keep_paused", "claim.recheck", "claim.relock", c, q, group, token, priority);
            continue;
        }
        const int64_t head = get_int64(heads.docs[0].get(), "_id", "claim.head");

        // 3. A head scheduled for later holds its group (strict FIFO): park the group
        //    until then and undo this lease's attempt; go on with the next group.
        if (park_if_scheduled(c, q, group, token, heads, head, now)) continue;
        // 4. Record which event the attempts count, when that changed.
        if (heads.rehead && !record_head(c, q, group, token, heads.attempts, head))
            continue;  // our lease ran out meanwhile: the group is someone else's

        // 5. The lease: the events, and whether another waits behind them.
        return make_lease(q, leased, group, token, priority, heads, now, visibility, max_events);
    }
}

}  // namespace

// claim: claim.lease (sorted findAndModify), claim.head (find, limit max_events + 1).
// On the way, only when needed: a group left without messages is dropped (claim.drop,
// claim.recheck, maybe claim.relock); a head scheduled for later parks its group
// (claim.park); a head delivered max_attempts times goes to the dead letters
// (claim.dead_insert, claim.dead_delete, claim.head again); a head the lock's
// attempts do not count yet is recorded (claim.rehead); a lost claim.lease reply is
// looked up by its token (claim.recover); and when nothing is due, the automatic
// repair may run (auto_repair).
mq_lease *queue_claim(mq_queue *q, const std::string &worker, double visibility, int min_priority, size_t max_events,
                      const std::vector<int> &only, int hinted) {
    Conn c(q);
    bool repaired = false;  // at most one automatic repair per call
    for (;;) {
        // With partitions: one partition after the other, from the handle's turn (the
        // one after the partition its last claim took from) or the one a hint named,
        // until one has a due group; one claim.lease per empty partition.
        size_t start = 0;
        const std::vector<int> order = claim_order(q, only, hinted, &start);
        for (size_t i = 0; i < order.size(); i++) {
            if (mq_lease *lease = claim_in(c, q, order[i], worker, visibility, min_priority, max_events)) {
                claim_took(q, start, i, order.size());
                return lease;
            }
        }
        if (!repaired && auto_repair(c, q)) {  // it made a group claimable: look again
            repaired = true;
            continue;
        }
        return nullptr;
    }
}

// ack: ack.delete (the leased events), then ack.release (updateOne) when more events
// wait, or ack.drop + ack.recheck (+ ack.relock) when the group drains.
mq_status queue_ack(mq_queue *q, const mq_lease *lease) {
    Conn c(q);

    // 1. The events first, without the token: the work was done (at-least-once), and a
    //    seq is never reused, so this deletes nothing but those events. Releasing the
    //    group first would let another worker claim the same head again. A keyed
    //    event within its window becomes the record of its key instead (ack.record,
    //    lib/dedup.cpp); a lease of both kinds sends both.
    const double now_ms = q->now() * 1000.0;
    std::vector<int64_t> gone, kept;
    for (const mq_lease::Item &item : lease->items)
        (item.dedup_until_ms > 0 && static_cast<double>(item.dedup_until_ms) > now_ms ? kept : gone)
            .push_back(item.seq);
    auto by_ids = [&](const std::vector<int64_t> &seqs) {
        BsonPtr ids = own(bson_new());
        bson_t in, list;
        BSON_APPEND_DOCUMENT_BEGIN(ids.get(), "_id", &in);
        BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
        for (size_t i = 0; i < seqs.size(); i++) {
            char key[16];
            const char *k;
            bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
            BSON_APPEND_INT64(&list, k, seqs[i]);
        }
        bson_append_array_end(&in, &list);
        bson_append_document_end(ids.get(), &in);
        // group_id too: on a messages collection sharded on {group_id, _id} the delete
        // goes to one shard (docs/design.md, "Deployments"); and a record (no group_id)
        // is never matched again.
        BSON_APPEND_UTF8(ids.get(), "group_id", lease->group.c_str());
        return ids;
    };
    // One event: deleteOne/updateOne, which libmongoc retries once after a network
    // error or a step-down (a retryable write); the *Many forms never are.
    if (!gone.empty()) {
        BsonPtr ids = by_ids(gone);
        if (gone.size() == 1)
            delete_one("ack.delete", c.messages(), ids.get());
        else
            delete_many("ack.delete", c.messages(), ids.get());
    }
    if (!kept.empty()) {
        BsonPtr ids = by_ids(kept);
        BsonPtr record = record_update();
        if (kept.size() == 1)
            update_one("ack.record", c.messages(), ids.get(), record.get(), false);
        else
            update_many("ack.record", c.messages(), ids.get(), record.get());
    }

    // 2. Release the group, fenced by the token (matching nothing = we lost it, or an
    //    earlier try of this ack whose reply was lost released it: outcome_unknown).
    try {
        if (lease->more_after) {
            // Round-robin: available_at = now puts the group behind every group that
            // has waited since before now, including never-claimed ones (0). The next
            // event becomes the head the attempts count.
            BsonPtr release = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now()), "token", BCON_NULL,
                                           "attempts", BCON_INT32(0), "head", BCON_INT64(lease->next_seq), "}"));
            if (update_one("ack.release", c.locks(), fenced(q, lease->group, lease->token).get(), release.get(),
                           false) > 0)
                return MQ_OK;
            return lease->outcome_unknown.load() ? MQ_OK : MQ_LEASE_LOST;
        }
        // The claim saw nothing behind its events: the group drains. The lock goes (so
        // the next publish sets the group's priority afresh); drop_lock re-checks for a
        // publish that landed meanwhile.
        if (drop_lock("ack.drop", "ack.keep_paused", "ack.recheck", "ack.relock", c, q, lease->group, lease->token,
                      lease->priority))
            return MQ_OK;
        if (!lease->outcome_unknown.load()) return MQ_LEASE_LOST;
        // An earlier try's drop may have been applied with its re-check failing after
        // it: re-check now, so a retry always heals the group.
        recheck_group("ack.recheck", "ack.relock", c, q, lease->group, lease->priority);
        return MQ_OK;
    } catch (const Failure &f) {
        if (outcome_unknown(f)) lease->outcome_unknown.store(true);
        throw;
    }
}

// nack: nack.park or nack.retry (one fenced updateOne). attempts stay.
mq_status queue_nack(mq_queue *q, const mq_lease *lease, double delay) {
    Conn c(q);
    BsonPtr filter = fenced(q, lease->group, lease->token);
    try {
        if (delay > 0) {
            // Park: keep the token, so the group is held until the delay passes.
            double until = q->now() + delay;
            BsonPtr park = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(until), "}"));
            if (update_one("nack.park", c.locks(), filter.get(), park.get(), false) == 0) return MQ_LEASE_LOST;
            lease->deadline.store(until);
            return MQ_OK;
        }
        // Retry now: 0 puts the group first in line, as harel does. It clears the
        // token, so a retry after a lost reply matches nothing: outcome_unknown.
        BsonPtr retry = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(0.0), "token", BCON_NULL, "}"));
        if (update_one("nack.retry", c.locks(), filter.get(), retry.get(), false) > 0) return MQ_OK;
        return lease->outcome_unknown.load() ? MQ_OK : MQ_LEASE_LOST;
    } catch (const Failure &f) {
        if (outcome_unknown(f) && delay <= 0) lease->outcome_unknown.store(true);
        throw;
    }
}

// unclaim: unclaim.release (one fenced updateOne). Not a delivery: the lock gets back
// what the claim found (its available_at, so the group keeps its place in line, and its
// attempts), with the token cleared. The fence keeps it from touching a newer holder.
mq_status queue_unclaim(mq_queue *q, const mq_lease *lease) {
    Conn c(q);
    const double place = lease->prior_known ? lease->prior_available_at : q->now();
    BsonPtr back = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(place), "token", BCON_NULL,  //
                                "attempts", BCON_INT32(lease->attempts > 0 ? lease->attempts - 1 : 0), "}"));
    try {
        if (update_one("unclaim.release", c.locks(), fenced(q, lease->group, lease->token).get(), back.get(), false) >
            0)
            return MQ_OK;
        // It clears the token: a retry after an unknown outcome matches nothing.
        return lease->outcome_unknown.load() ? MQ_OK : MQ_LEASE_LOST;
    } catch (const Failure &f) {
        if (outcome_unknown(f)) lease->outcome_unknown.store(true);
        throw;
    }
}

// extend: extend.lease (one fenced updateOne).
mq_status queue_extend(mq_queue *q, const mq_lease *lease, double visibility) {
    Conn c(q);
    double until = q->now() + visibility;
    BsonPtr extend = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(until), "}"));
    if (update_one("extend.lease", c.locks(), fenced(q, lease->group, lease->token).get(), extend.get(), false) == 0)
        return MQ_LEASE_LOST;
    lease->deadline.store(until);
    return MQ_OK;
}

}  // namespace mongomq
