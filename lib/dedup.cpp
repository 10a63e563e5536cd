// Deduplication keys (docs/design.md, "Deduplication"): the fields a keyed event
// carries, the keyed publish's insert and its duplicate resolution (dedup.read,
// dedup.expire), the record an ack or a dead letter leaves of a keyed event
// (ack.record, claim.dead_record), and the exported mq_queue_set_dedup_window,
// mq_queue_set_dedup_scope and mq_batch_outcome.
//
// The one idea: the event itself holds its key, under a unique sparse index on
// {dedup_key: 1} of the messages. Taking the key and adding the event are then one
// write (the insert), and removing the event (ack, dead letters) turns it into a
// record of the key in the same single-document write: from the first insert until
// the record expires, exactly one document of the collection holds the key.
#include "dedup.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "error.hpp"
#include "guard.hpp"
#include "locks.hpp"
#include "store.hpp"

namespace mongomq {

namespace {

int64_t epoch_ms(double epoch_s) { return static_cast<int64_t>(std::llround(epoch_s * 1000.0)); }

// The key as stored: the string (queue scope) or {group, key} (group scope).
void append_key(bson_t *doc, const char *field, const Outgoing &e, int scope) {
    if (scope == MQ_DEDUP_SCOPE_GROUP) {
        bson_t sub;
        bson_append_document_begin(doc, field, -1, &sub);
        BSON_APPEND_UTF8(&sub, "group", e.group->c_str());
        BSON_APPEND_UTF8(&sub, "key", e.dedup_key->c_str());
        bson_append_document_end(doc, &sub);
    } else {
        BSON_APPEND_UTF8(doc, field, e.dedup_key->c_str());
    }
}

// One string per stored key, to match what dedup.read finds with what was refused.
std::string key_of(const Outgoing &e, int scope) {
    if (scope == MQ_DEDUP_SCOPE_GROUP) return "g" + *e.group + '\0' + *e.dedup_key;
    return "q" + *e.dedup_key;
}

bool key_of(const bson_t *doc, std::string *out) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, "dedup_key")) return false;
    if (BSON_ITER_HOLDS_UTF8(&it)) {
        uint32_t len;
        const char *k = bson_iter_utf8(&it, &len);
        *out = "q" + std::string(k, len);
        return true;
    }
    bson_iter_t sub;
    if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &sub)) return false;
    std::string group, key;
    bool has_group = false, has_key = false;
    while (bson_iter_next(&sub)) {
        if (!BSON_ITER_HOLDS_UTF8(&sub)) continue;
        uint32_t len;
        const char *v = bson_iter_utf8(&sub, &len);
        if (strcmp(bson_iter_key(&sub), "group") == 0) group.assign(v, len), has_group = true;
        if (strcmp(bson_iter_key(&sub), "key") == 0) key.assign(v, len), has_key = true;
    }
    if (!has_group || !has_key) return false;
    *out = "g" + group + '\0' + key;
    return true;
}

// The holder of a refused key, as dedup.read found it.
struct Holder {
    int64_t seq = 0;
    bool queued = false;     // an event (it has a group_id), not a record
    int64_t expires_ms = 0;  // a record's dedup_expires
    std::string group;       // an event's
    int priority = 0;        // an event's, for the lock its publish may not have made
    double not_before = 0;
    double published_at = 0;
};

Holder holder_of(const bson_t *doc) {
    Holder h;
    h.seq = get_int64(doc, "_id", "dedup.read");
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "group_id") && BSON_ITER_HOLDS_UTF8(&it)) {
        uint32_t len;
        const char *g = bson_iter_utf8(&it, &len);
        h.group.assign(g, len);
        h.queued = true;
        h.priority = get_int_or(doc, "priority", 0);
        if (h.priority < MQ_PRIORITY_MIN || h.priority > MQ_PRIORITY_MAX) h.priority = 0;
        h.not_before = get_double_or(doc, "not_before", 0);
        h.published_at = get_double_or(doc, "published_at", 0);
    } else if (bson_iter_init_find(&it, doc, "dedup_expires") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
        h.expires_ms = bson_iter_date_time(&it);
    }
    return h;
}

}  // namespace

void append_dedup_fields(bson_t *msg, const Outgoing &e, double now, double window, int scope) {
    append_key(msg, "dedup_key", e, scope);
    BSON_APPEND_DATE_TIME(msg, "dedup_until", epoch_ms(now + window));
}

int64_t dedup_until_of(const bson_t *msg) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, msg, "dedup_key")) return 0;
    if (!bson_iter_init_find(&it, msg, "dedup_until") || !BSON_ITER_HOLDS_DATE_TIME(&it)) return 0;
    return bson_iter_date_time(&it);
}

std::vector<Published> insert_keyed(const Conn &c, mq_queue *q, const std::vector<Outgoing> &events,
                                    std::vector<BsonPtr> &docs, const std::vector<int64_t> &seqs, double now,
                                    std::vector<std::pair<BsonPtr, BsonPtr>> &dup_locks) {
    const int scope = q->dedup_scope.load();
    std::vector<Published> out(events.size());
    for (size_t i = 0; i < events.size(); i++) out[i] = {seqs[i], false};

    std::vector<size_t> pending(events.size());
    for (size_t i = 0; i < events.size(); i++) pending[i] = i;
    std::unordered_set<std::string> locked_dups;
    // Each round inserts what is pending; a refused key is either held (a duplicate),
    // or held by an expired record (removed, and the event tried again), or gone by
    // the time we read it (tried again). Three rounds: a key changing hands that often
    // within one publish is a fight, reported as such.
    for (int round = 0; round < 3; round++) {
        std::vector<BsonPtr> batch;
        batch.reserve(pending.size());
        for (size_t i : pending) batch.push_back(bson_copy_of(docs[i].get()));
        std::vector<size_t> refused = insert_many_keyed("publish.insert", c.messages(), batch);
        if (refused.empty()) return out;

        // dedup.read: who holds the refused keys (the unique index finds each).
        Bson filter;
        bson_t in, list;
        BSON_APPEND_DOCUMENT_BEGIN(filter.get(), "dedup_key", &in);
        BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
        std::unordered_set<std::string> asked;
        uint32_t n = 0;
        for (size_t r : refused) {
            const Outgoing &e = events[pending[r]];
            if (e.dedup_key == nullptr || !asked.insert(key_of(e, scope)).second) continue;
            char idx[16];
            const char *k;
            bson_uint32_to_string(n++, &k, idx, sizeof idx);
            append_key(&list, k, e, scope);
        }
        bson_append_array_end(&in, &list);
        bson_append_document_end(filter.get(), &in);
        if (n == 0)  // an _id refused: a seq handed out twice, which the counter never does
            fail(MQ_ERR_SERVER, "publish.insert: the server refused an event without a dedup_key as a duplicate");
        BsonPtr fields = own(BCON_NEW("projection", "{", "dedup_key", BCON_INT32(1), "group_id", BCON_INT32(1),
                                      "dedup_expires", BCON_INT32(1), "priority", BCON_INT32(1), "not_before",
                                      BCON_INT32(1), "published_at", BCON_INT32(1), "}"));
        std::unordered_map<std::string, Holder> holders;
        for (const BsonPtr &doc :
             retry_connect([&] { return find("dedup.read", c.messages(), filter.get(), fields.get()); })) {
            std::string key;
            if (key_of(doc.get(), &key)) holders[key] = holder_of(doc.get());
        }

        std::vector<size_t> again;
        std::vector<int64_t> expired;
        const int64_t now_ms = epoch_ms(now);
        for (size_t r : refused) {
            const size_t i = pending[r];
            auto h = holders.find(key_of(events[i], scope));
            if (h == holders.end()) {  // gone meanwhile (acked past its window, purged): ours to take
                again.push_back(i);
                continue;
            }
            const Holder &holder = h->second;
            if (!holder.queued && holder.expires_ms <= now_ms) {  // a record past its window
                expired.push_back(holder.seq);
                again.push_back(i);
                continue;
            }
            out[i] = {holder.seq, true};
            // The first publish may have died between its insert and its lock: make the
            // lock it would have made ($setOnInsert; nothing if the group has one).
            if (holder.queued && locked_dups.insert(holder.group).second)
                dup_locks.emplace_back(lock_filter(q, holder.group),
                                       lock_insert(holder.priority, holder.not_before, holder.seq,
                                                   holder.published_at > 0 ? holder.published_at : now));
        }
        if (again.empty()) return out;
        if (!expired.empty()) {
            // dedup.expire: records past their window that the TTL monitor has not
            // removed yet; only records (no group_id), only if still expired.
            Bson gone;
            bson_t ids, id_list;
            BSON_APPEND_DOCUMENT_BEGIN(gone.get(), "_id", &ids);
            BSON_APPEND_ARRAY_BEGIN(&ids, "$in", &id_list);
            for (size_t j = 0; j < expired.size(); j++) {
                char idx[16];
                const char *k;
                bson_uint32_to_string(static_cast<uint32_t>(j), &k, idx, sizeof idx);
                BSON_APPEND_INT64(&id_list, k, expired[j]);
            }
            bson_append_array_end(&ids, &id_list);
            bson_append_document_end(gone.get(), &ids);
            BSON_APPEND_DOCUMENT(gone.get(), "group_id", own(BCON_NEW("$exists", BCON_BOOL(false))).get());
            BSON_APPEND_DOCUMENT(gone.get(), "dedup_expires", own(BCON_NEW("$lte", BCON_DATE_TIME(now_ms))).get());
            retry_connect([&] { return delete_many("dedup.expire", c.messages(), gone.get()); });
        }
        pending = again;
    }
    fail(MQ_ERR_SERVER,
         "publish.insert: a dedup_key of this publish changed hands three times while it ran "
         "(other publishers and expiring records); nothing more was inserted, retry the publish");
}

BsonPtr record_update() {
    return own(BCON_NEW("$unset", "{", "group_id", BCON_UTF8(""), "event", BCON_UTF8(""), "priority", BCON_UTF8(""),
                        "published_at", BCON_UTF8(""), "not_before", BCON_UTF8(""), "}",  //
                        "$rename", "{", "dedup_until", BCON_UTF8("dedup_expires"), "}"));
}

}  // namespace mongomq

using mongomq::fail_arg;
using mongomq::guard_queue;

extern "C" {

mq_status mq_queue_set_dedup_window(mq_queue *queue, double seconds, mq_error *err) {
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_queue_set_dedup_window";
        mongomq::check_queue(fn, queue);
        if (!std::isfinite(seconds) || seconds < MQ_DEDUP_WINDOW_MIN || seconds > MQ_DEDUP_WINDOW_MAX)
            fail_arg(fn, "seconds is " + std::to_string(seconds) + ", outside 1..604800 (1 s to 7 days)");
        queue->dedup_window.store(seconds);
        return MQ_OK;
    });
}

mq_status mq_queue_set_dedup_scope(mq_queue *queue, mq_dedup_scope scope, mq_error *err) {
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_queue_set_dedup_scope";
        mongomq::check_queue(fn, queue);
        // Read as the int a C caller passed: a value outside the enum's range (any int
        // from C or an FFI) must not be loaded as the C++ enum (undefined there).
        int value;
        static_assert(sizeof value == sizeof scope, "mq_dedup_scope is an int");
        std::memcpy(&value, &scope, sizeof value);
        if (value != MQ_DEDUP_SCOPE_QUEUE && value != MQ_DEDUP_SCOPE_GROUP)
            fail_arg(fn, "scope is " + std::to_string(value) +
                             ", neither MQ_DEDUP_SCOPE_QUEUE (0) nor MQ_DEDUP_SCOPE_GROUP (1)");
        queue->dedup_scope.store(value);
        return MQ_OK;
    });
}

mq_status mq_batch_outcome(const mq_batch *batch, size_t i, int64_t *seq, mq_error *err) {
    if (seq != nullptr) *seq = 0;
    return mongomq::guard(err, nullptr, [&] {
        const char *fn = "mq_batch_outcome";
        if (batch == nullptr) fail_arg(fn, "batch is NULL");
        if (seq == nullptr) fail_arg(fn, "seq is NULL");
        if (batch->outcome_seqs.size() != batch->events.size() || batch->events.empty())
            fail_arg(fn, "the batch has no outcome: it was not published since it was made or last added to");
        if (i >= batch->events.size())
            fail_arg(fn, "i is " + std::to_string(i) + ", the batch has " + std::to_string(batch->events.size()) +
                             " events");
        *seq = batch->outcome_seqs[i];
        return batch->outcome_duplicate[i] ? MQ_DUPLICATE : MQ_OK;
    });
}

}  // extern "C"
