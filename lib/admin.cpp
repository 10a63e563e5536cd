// Stats, repair, purge and drop: the calls for monitoring and maintenance
// (docs/design.md, "Stats, repair and purge"). Each exported function checks its
// arguments before anything is sent, then runs the named commands of store.hpp.
#include <jansson.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "json.hpp"
#include "locks.hpp"
#include "mongomq.h"
#include "partition.hpp"
#include "queue.hpp"
#include "store.hpp"
#include "read.hpp"
#include "validate.hpp"
#include "wait.hpp"

using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::null_out;

namespace mongomq {
namespace {

constexpr int kPriorities = MQ_PRIORITY_MAX - MQ_PRIORITY_MIN + 1;

// ---- reading aggregate results ----

// A numeric field as int64, or `fallback` when it is missing or not a number.
int64_t int_or(const bson_t *doc, const char *field, int64_t fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return bson_iter_as_int64(&it);
}

// The priority bucket (0..4) of a $group _id or a $first, or -1 when the value is no
// whole number in 0..4 (a harel message has no priority; a foreign document may have
// anything).
int priority_of(const bson_t *doc, const char *field) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return -1;
    if (BSON_ITER_HOLDS_DOUBLE(&it)) {
        double d = bson_iter_double(&it);
        if (!(d >= MQ_PRIORITY_MIN && d <= MQ_PRIORITY_MAX) || d != static_cast<double>(static_cast<int>(d))) return -1;
        return static_cast<int>(d);
    }
    int64_t p = bson_iter_as_int64(&it);
    return p >= MQ_PRIORITY_MIN && p <= MQ_PRIORITY_MAX ? static_cast<int>(p) : -1;
}

// The priority p of a paused lock's bucket (its stored priority is -1 - p), or -1.
int paused_priority_of(const bson_t *doc, const char *field) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_INT(&it)) return -1;
    int64_t stored = bson_iter_as_int64(&it);
    int64_t p = -1 - stored;
    return p >= MQ_PRIORITY_MIN && p <= MQ_PRIORITY_MAX ? static_cast<int>(p) : -1;
}

// ---- building the stats text with jansson ----

void put_int(json_t *obj, const char *key, int64_t n) { json_put(obj, key, json_integer(static_cast<json_int_t>(n))); }

// Key order is sorted and the text has no spaces, so equal stats are equal strings.
// Reals are printed with jansson's default precision (17 significant digits), which
// reads back as the same double.
constexpr size_t kStatsFlags = JSON_COMPACT | JSON_SORT_KEYS;

// ---- stats ----

struct GroupCounts {
    int64_t total = 0, ready = 0, leased = 0, paused = 0;  // parked = total - ready - leased - paused
};

// stats.messages: one aggregate on messages, by the priority each was published
// with: how many, and the smallest _id of each priority with its published_at (the
// $sort on _id makes $first the oldest; MongoDB serves it from the _id index).
// Returns the counts per priority (messages without a priority count only in the
// total) and the oldest message overall.
struct MessageStats {
    int64_t total = 0;
    int64_t by_priority[kPriorities] = {};
    bool any = false;
    int64_t oldest_id = 0;
    bool oldest_has_published_at = false;
    double oldest_published_at = 0;
};

MessageStats message_stats(const Conn &c) {
    // Events only: the record a keyed event leaves after its ack has no group_id
    // (docs/design.md, "Deduplication").
    BsonPtr pipeline = own(BCON_NEW("pipeline", "[",  //
                                    "{", "$match", "{", "group_id", "{", "$exists", BCON_BOOL(true), "}", "}", "}", "{",
                                    "$sort", "{", "_id", BCON_INT32(1), "}", "}",                          //
                                    "{", "$group", "{",                                                    //
                                    "_id", BCON_UTF8("$priority"),                                         //
                                    "n", "{", "$sum", BCON_INT32(1), "}",                                  //
                                    "first_id", "{", "$first", BCON_UTF8("$_id"), "}",                     //
                                    "first_published_at", "{", "$first", BCON_UTF8("$published_at"), "}",  //
                                    "}", "}", "]"));
    MessageStats s;
    for (const BsonPtr &doc : aggregate("stats.messages", c.messages(), pipeline.get())) {
        int64_t n = int_or(doc.get(), "n", 0);
        s.total += n;
        int p = priority_of(doc.get(), "_id");
        if (p >= 0) s.by_priority[p] += n;

        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc.get(), "first_id") || !BSON_ITER_HOLDS_NUMBER(&it)) continue;
        int64_t id = bson_iter_as_int64(&it);
        if (s.any && id >= s.oldest_id) continue;
        s.any = true;
        s.oldest_id = id;
        s.oldest_has_published_at = bson_iter_init_find(&it, doc.get(), "first_published_at") &&
                                    BSON_ITER_HOLDS_NUMBER(&it) && std::isfinite(bson_iter_as_double(&it));
        s.oldest_published_at = s.oldest_has_published_at ? bson_iter_as_double(&it) : 0;
    }
    return s;
}

// stats.locks: one aggregate on locks, by priority: groups, and how many of them are
// ready (available_at <= now) or leased (available_at > now with a token). The rest
// are parked (available_at > now, token null). "token not null" stands for "token is
// a string": the test server has no $type expression, and we write nothing else.
void lock_stats(const Conn &c, double now, GroupCounts *all, GroupCounts by_priority[kPriorities]) {
    BsonPtr pipeline = own(BCON_NEW(
        "pipeline", "[", "{", "$group", "{",                                                                     //
        "_id", BCON_UTF8("$priority"),                                                                           //
        "total", "{", "$sum", BCON_INT32(1), "}",                                                                //
        "ready", "{", "$sum", "{", "$cond", "[",                                                                 //
        "{", "$lte", "[", BCON_UTF8("$available_at"), BCON_DOUBLE(now), "]", "}", BCON_INT32(1), BCON_INT32(0),  //
        "]", "}", "}",                                                                                           //
        "leased", "{", "$sum", "{", "$cond", "[",                                                                //
        "{", "$and", "[",                                                                                        //
        "{", "$gt", "[", BCON_UTF8("$available_at"), BCON_DOUBLE(now), "]", "}",                                 //
        "{", "$ne", "[", "{", "$ifNull", "[", BCON_UTF8("$token"), BCON_NULL, "]", "}", BCON_NULL, "]", "}",     //
        "]", "}",                                                                                                //
        BCON_INT32(1), BCON_INT32(0), "]", "}", "}",                                                             //
        "}", "}", "]"));
    for (const BsonPtr &doc : aggregate("stats.locks", c.locks(), pipeline.get())) {
        const int64_t total = int_or(doc.get(), "total", 0);
        const int64_t ready = std::min(int_or(doc.get(), "ready", 0), total);
        // One lock is ready or leased, never both; but the test server can evaluate
        // one document's two $cond against two versions of it while a claim updates it
        // (seen: ready 1, leased 1, total 1). Never more than the total, so parked is
        // never negative.
        const int64_t leased = std::min(int_or(doc.get(), "leased", 0), total - ready);
        all->total += total;
        // A paused lock keeps its priority p as -1 - p (lib/groups.cpp): it counts as
        // paused, whatever its available_at and token, under priority p.
        int paused = paused_priority_of(doc.get(), "_id");
        if (paused >= 0) {
            all->paused += total;
            by_priority[paused].total += total;
            continue;
        }
        all->ready += ready;
        all->leased += leased;
        // A lock without a priority in 0..4 (not ours) counts only in the totals.
        int p = priority_of(doc.get(), "_id");
        if (p >= 0) by_priority[p].total += total;
    }
}

char *stats_json(mq_queue *q) {
    Conn c(q);
    const double now = q->now();
    MessageStats messages = message_stats(c);
    GroupCounts groups;
    GroupCounts groups_by_priority[kPriorities];
    lock_stats(c, now, &groups, groups_by_priority);
    BsonPtr all = own(bson_new());
    int64_t dead = count_documents("stats.dead", c.dead(), all.get());
    // stats.seq: the seq counter, i.e. events ever published (0 before the first);
    // with partitions, every partition's counter (their sum).
    int64_t published = 0;
    if (q->partitions > 1) {
        BsonPtr counters = own(BCON_NEW("partition", "{", "$exists", BCON_BOOL(true), "}", "_id", "{", "$ne",
                                        BCON_UTF8("partitions"), "}"));
        for (const BsonPtr &doc : find("stats.seq", c.counters(), counters.get(), nullptr))
            published += int_or(doc.get(), "n", 0);
    } else {
        BsonPtr seq_id = own(BCON_NEW("_id", BCON_UTF8("seq")));
        BsonPtr one = own(BCON_NEW("limit", BCON_INT64(1)));
        std::vector<BsonPtr> seq = find("stats.seq", c.counters(), seq_id.get(), one.get());
        published = seq.empty() ? 0 : int_or(seq[0].get(), "n", 0);
    }

    Json root = json_owned(json_object());
    if (!utf8_valid(q->ns.data(), q->ns.size())) fail(MQ_ERR_INTERNAL, "mq_stats_json: queue name is not UTF-8");
    json_put(root.get(), "queue", json_stringn(q->ns.data(), q->ns.size()));
    json_put(root.get(), "now", json_real(now));
    put_int(root.get(), "messages", messages.total);
    put_int(root.get(), "dead", dead);
    put_int(root.get(), "published", published);
    put_int(root.get(), "partitions", q->partitions);

    json_t *g = json_object();
    json_put(root.get(), "groups", g);  // root holds it now; g stays valid while root lives
    put_int(g, "total", groups.total);
    put_int(g, "ready", groups.ready);
    put_int(g, "leased", groups.leased);
    put_int(g, "parked", groups.total - groups.ready - groups.leased - groups.paused);
    put_int(g, "paused", groups.paused);

    // This handle's own state, not the queue's: how its waiting claims learn of
    // changes (lib/wait.hpp: "none" until it waits) and its automatic repairs.
    json_t *handle = json_object();
    json_put(root.get(), "handle", handle);
    json_put(handle, "change_streams", json_string(change_stream_mode(q)));
    json_t *repair = json_object();
    json_put(handle, "repair", repair);
    put_int(repair, "runs", static_cast<int64_t>(q->repair_runs.load()));
    put_int(repair, "fixed", static_cast<int64_t>(q->repair_fixed.load()));
    put_int(repair, "failed", static_cast<int64_t>(q->repair_failures.load()));

    json_put(
        root.get(), "oldest_message_age_s",
        messages.any && messages.oldest_has_published_at ? json_real(now - messages.oldest_published_at) : json_null());

    json_t *priorities = json_object();
    json_put(root.get(), "priorities", priorities);
    for (int p = 0; p < kPriorities; p++) {
        json_t *entry = json_object();
        const std::string key = std::to_string(MQ_PRIORITY_MIN + p);
        json_put(priorities, key.c_str(), entry);
        put_int(entry, "groups", groups_by_priority[p].total);
        put_int(entry, "messages", messages.by_priority[p]);
    }
    return json_text(root.get(), kStatsFlags, "mq_stats_json");
}

}  // namespace

// ---- repair ----

// repair.groups: every group of messages with its head's seq, as a sort on the head
// index {group_id: 1, _id: 1} and a $group taking each group's $first _id: the shape
// MongoDB plans as a DISTINCT_SCAN (one index key per group, no document read), with
// allowDiskUse for a $group past 100 MB. repair.locks: every lock's _id (sorted on
// _id: a covered scan of the _id index). repair.heads, only when some group has no
// lock: those heads' priority, not_before and published_at (a find on _id $in). Then
// repair.lock: one unordered bulk of $setOnInsert upserts, the lock a publish makes,
// in line from the head's publish time. Returns the locks it created.
int64_t queue_repair(mq_queue *q) {
    Conn c(q);
    return queue_repair(c, q);
}

int64_t queue_repair(const Conn &c, mq_queue *q) {
    BsonPtr pipeline = own(BCON_NEW("pipeline", "[",                                                               //
                                    "{", "$sort", "{", "group_id", BCON_INT32(1), "_id", BCON_INT32(1), "}", "}",  //
                                    "{", "$group", "{",                                                            //
                                    "_id", BCON_UTF8("$group_id"),                                                 //
                                    "head", "{", "$first", BCON_UTF8("$_id"), "}",                                 //
                                    "}", "}", "]"));
    BsonPtr disk = own(BCON_NEW("allowDiskUse", BCON_BOOL(true)));
    std::vector<BsonPtr> groups = aggregate("repair.groups", c.messages(), pipeline.get(), disk.get());
    if (groups.empty()) return 0;

    BsonPtr all = own(bson_new());
    BsonPtr ids_only =
        own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "projection", "{", "_id", BCON_INT32(1), "}"));
    std::unordered_set<std::string> locked;
    for (const BsonPtr &lock : find("repair.locks", c.locks(), all.get(), ids_only.get())) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, lock.get(), "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
        uint32_t len;
        const char *id = bson_iter_utf8(&it, &len);
        locked.emplace(id, len);
    }

    // The heads of the groups without a lock.
    Bson heads_filter;
    bson_t in, list;
    BSON_APPEND_DOCUMENT_BEGIN(heads_filter.get(), "_id", &in);
    BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
    uint32_t missing = 0;
    for (const BsonPtr &group : groups) {
        bson_iter_t it, head;
        if (!bson_iter_init_find(&it, group.get(), "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;  // not ours
        if (!bson_iter_init_find(&head, group.get(), "head") || !BSON_ITER_HOLDS_NUMBER(&head)) continue;
        uint32_t len;
        const char *id = bson_iter_utf8(&it, &len);
        if (locked.count(std::string(id, len)) != 0) continue;
        char key[16];
        const char *k;
        bson_uint32_to_string(missing++, &k, key, sizeof key);
        bson_append_iter(&list, k, -1, &head);
    }
    bson_append_array_end(&in, &list);
    bson_append_document_end(heads_filter.get(), &in);
    if (missing == 0) return 0;

    BsonPtr head_fields = own(BCON_NEW("projection", "{", "group_id", BCON_INT32(1), "priority", BCON_INT32(1),  //
                                       "not_before", BCON_INT32(1), "published_at", BCON_INT32(1), "}"));
    const double now = q->now();
    std::vector<std::pair<BsonPtr, BsonPtr>> upserts;
    for (const BsonPtr &head : find("repair.heads", c.messages(), heads_filter.get(), head_fields.get())) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, head.get(), "group_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
        uint32_t len;
        const char *id = bson_iter_utf8(&it, &len);
        int priority = priority_of(head.get(), "priority");
        double not_before = get_double_or(head.get(), "not_before", 0);
        double published_at = get_double_or(head.get(), "published_at", 0);  // harel's have none: now
        Bson filter;
        bson_append_utf8(filter.get(), "_id", 3, id, static_cast<int>(len));
        append_partition(q, filter.get(), group_partition(id, len, q->partitions));
        upserts.emplace_back(bson_copy_of(filter.get()),
                             lock_insert(priority >= 0 ? priority : 0, not_before, get_int64_or(head.get(), "_id", 0),
                                         published_at > 0 && std::isfinite(published_at) ? published_at : now));
    }
    if (upserts.empty()) return 0;
    // A publish creating one of these groups meanwhile races us on the new _id; the
    // retry finds its lock ($setOnInsert leaves it alone).
    return retry_duplicate_key([&] { return bulk_upsert("repair.lock", c.locks(), upserts); });
}

namespace {

// ---- purge ----

// purge.messages (deleteMany), purge.lock (deleteOne), purge.recheck (find), and
// purge.relock (upsert) when a publish inserted an event between the first two: the
// argument of "Dropping a lock" in docs/design.md, so that event is never left
// without a lock. Messages go first: a claim meanwhile finds no head and drops the
// lock itself.
void purge_group(mq_queue *q, const std::string &group) {
    Conn c(q);
    BsonPtr by_group = own(BCON_NEW("group_id", BCON_UTF8(group.c_str())));
    delete_many("purge.messages", c.messages(), by_group.get());
    BsonPtr by_id = lock_filter(q, group);
    BsonPtr unpaused = lock_filter(q, group);
    BSON_APPEND_DOCUMENT(unpaused.get(), "priority", not_paused().get());
    if (delete_one("purge.lock", c.locks(), unpaused.get()) == 0) {
        // A paused group stays paused (design.md, "Pausing a group"): its lock stays,
        // released (purge.unlease: a holder's ack, nack and extend then match nothing).
        BsonPtr paused = lock_filter(q, group);
        BSON_APPEND_DOCUMENT(paused.get(), "priority", own(BCON_NEW("$lt", BCON_INT32(0))).get());
        BsonPtr idle = own(BCON_NEW("$set", "{", "available_at", BCON_DOUBLE(q->now()), "token", BCON_NULL, "attempts",
                                    BCON_INT32(0), "}", "$unset", "{", "head", BCON_UTF8(""), "}"));
        update_one("purge.unlease", c.locks(), paused.get(), idle.get(), false);
    }

    BsonPtr head = own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(1),  //
                                "projection", "{", "priority", BCON_INT32(1), "not_before", BCON_INT32(1), "}"));
    std::vector<BsonPtr> left = find("purge.recheck", c.messages(), by_group.get(), head.get());
    if (left.empty()) return;
    // A new life of the group: the lock its publish would have made.
    int priority = priority_of(left[0].get(), "priority");
    double not_before = get_double_or(left[0].get(), "not_before", 0);
    BsonPtr relock =
        lock_insert(priority >= 0 ? priority : 0, not_before, get_int64_or(left[0].get(), "_id", 0), q->now());
    retry_duplicate_key([&] { return update_one("purge.relock", c.locks(), by_id.get(), relock.get(), true); });
}

// ---- drop ----

// drop.messages, drop.locks, drop.dead, drop.counters (drop_collection: a collection
// that is not there is no error). Messages before locks (a lock left without messages
// is harmless: the next claim drops it; the reverse would strand events). Dead letters
// before the counter: a dead letter is keyed by its seq, and once the counter is gone
// seqs start again at 1. The indexes go with the collections: this handle's next
// publish makes them again (publish.indexes), above all the unique dedup_key index,
// without which keyed publishes would not be deduplicated; the drop itself leaves no
// collection behind.
void drop_queue(mq_queue *q) {
    Conn c(q);
    drop_collection("drop.messages", c.messages());
    drop_collection("drop.locks", c.locks());
    drop_collection("drop.dead", c.dead());
    drop_collection("drop.counters", c.counters());
    q->indexes_pending.store(true);
}

}  // namespace

// lib/read.hpp: the readers above, for the fuzzers.
int64_t read_int_or(const bson_t *doc, const char *field, int64_t fallback) { return int_or(doc, field, fallback); }
int read_priority_of(const bson_t *doc, const char *field) { return priority_of(doc, field); }
}  // namespace mongomq

extern "C" {

mq_status mq_stats_json(mq_queue *queue, char **json_out, mq_error *err) {
    null_out(json_out);
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_stats_json";
        mongomq::check_queue(fn, queue);
        if (json_out == nullptr) fail_arg(fn, "json_out is NULL");
        *json_out = mongomq::stats_json(queue);
        return MQ_OK;
    });
}

void mq_free(void *ptr) { std::free(ptr); }

mq_status mq_repair(mq_queue *queue, int64_t *fixed, mq_error *err) {
    if (fixed != nullptr) *fixed = 0;
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_repair", queue);
        int64_t n = mongomq::queue_repair(queue);
        if (fixed != nullptr) *fixed = n;
        return MQ_OK;
    });
}

mq_status mq_purge_group(mq_queue *queue, const char *group_id, mq_error *err) {
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_purge_group";
        mongomq::check_queue(fn, queue);
        mongomq::check_group_id(fn, group_id);
        mongomq::purge_group(queue, group_id);
        return MQ_OK;
    });
}

mq_status mq_queue_drop(mq_queue *queue, mq_error *err) {
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_queue_drop", queue);
        mongomq::drop_queue(queue);
        return MQ_OK;
    });
}

}  // extern "C"
