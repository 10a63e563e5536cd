// Opening a queue and its clock: queue_open's commands (open.collation,
// open.indexes, open.clock, open.sharding; docs/design.md, "open") and the time every
// operation runs on, the server's (mq_queue::now: the wall clock corrected by the
// offset open.clock measured, or the clock a caller set).
#include <cmath>
#include <ctime>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "client.hpp"
#include "error.hpp"
#include "partition.hpp"
#include "queue.hpp"
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

std::string sharded_refusal(const mq_queue *q, const std::vector<BsonPtr> &entries) {
    for (const BsonPtr &entry : entries) {
        bson_iter_t it;
        if (bson_iter_init_find(&it, entry.get(), "dropped") && bson_iter_as_bool(&it)) continue;
        if (!bson_iter_init_find(&it, entry.get(), "_id") || !BSON_ITER_HOLDS_UTF8(&it)) continue;
        const std::string ns = bson_iter_utf8(&it, nullptr);
        const bool locks = ns == q->db + "." + q->locks;
        if (!locks && ns != q->db + "." + q->counters) continue;
        std::string key = "?";
        std::string first;  // the shard key's first field
        bson_iter_t k;
        if (bson_iter_init_find(&k, entry.get(), "key") && BSON_ITER_HOLDS_DOCUMENT(&k)) {
            const uint8_t *data;
            uint32_t len;
            bson_iter_document(&k, &len, &data);
            bson_t doc;
            if (bson_init_static(&doc, data, len)) {
                char *json = bson_as_relaxed_extended_json(&doc, nullptr);
                if (json != nullptr) key = json;
                bson_free(json);
                bson_iter_t f;
                if (bson_iter_init(&f, &doc) && bson_iter_next(&f)) first = bson_iter_key(&f);
            }
        }
        // A partitioned queue's locks and counters sharded on a key that starts with
        // the partition: what `mongomq shard-plan` makes (design.md, "Partitioned
        // queues"); every claim and counter command then goes to one shard.
        if (q->partitions > 1 && first == "partition") continue;
        return "mq_queue_new: collection " + ns + " is sharded (key " + key + "): mongomq's " +
               (locks ? "claim is one sorted findAndModify over every lock, which a mongos refuses (before "
                        "MongoDB 7.1) or sends to every shard"
                      : "counter is one document that every publish updates") +
               "; keep " + q->db + "." + q->locks + " and " + q->db + "." + q->counters +
               " unsharded (move the queue to a new prefix, or unshardCollection on 8.0+), and shard only " + q->db +
               "." + q->messages +
               ", on {group_id: 1, _id: 1} (docs/design.md, \"Deployments\"); or make a "
               "partitioned queue, whose locks and counters are sharded on {partition: 1, _id: 1} (mongomq "
               "shard-plan; docs/design.md, \"Partitioned queues\")";
    }
    return {};
}

namespace {

// On a mongos (hello's msg "isdbgrid"): open.sharding reads config.collections for the
// queue's locks and counters, and refuses a queue whose locks or counter are sharded
// (sharded_refusal). A user who may not read config (13 Unauthorized) gets a warning
// in the log, and the queue opens.
void check_unsharded(mq_queue *q, const Conn &c) {
    Collection config(mongoc_client_get_collection(c.client(), "config", "collections"));
    if (!config) throw std::bad_alloc();
    mongoc_collection_set_read_prefs(config.get(), c.owner()->read_prefs);
    BsonPtr filter = own(BCON_NEW("_id", "{", "$in", "[", BCON_UTF8((q->db + "." + q->locks).c_str()),
                                  BCON_UTF8((q->db + "." + q->counters).c_str()), "]", "}"));
    std::vector<BsonPtr> entries;
    try {
        entries = find("open.sharding", config.get(), filter.get(), nullptr);
    } catch (const Failure &f) {
        if (f.status != MQ_ERR_SERVER) throw;
        log_warning("mq_queue_new(" + q->ns + "): could not read config.collections on this mongos (" + f.message +
                    "): not checked that " + q->locks + " and " + q->counters + " are unsharded");
        return;
    }
    std::string refusal = sharded_refusal(q, entries);
    if (!refusal.empty()) fail(MQ_ERR_SERVER, refusal);
}

}  // namespace

// The queue's indexes (<name>: one createIndexes per collection, more only when one
// fails): at open, and again at the first publish after mq_queue_drop, whose dropped
// collections took them (a handle used after a drop must keep its unique dedup_key
// index).
void create_indexes(const Conn &c, mq_queue *q, const char *name) {
    // The claim: an equality ($in) on priority, then the range and sort on available_at
    // (docs/design.md, "Deployments": the server merges one short scan per allowed
    // priority). Queues opened by earlier versions also have
    // {available_at: 1, priority: 1}: it stays (it costs a key per lock write; drop it
    // once no older process claims), and it serves next.due.
    // With partitions the same behind an equality on the partition: each claim then
    // scans one partition's locks (and, sharded on {partition: 1, _id: 1}, one shard's).
    BsonPtr locks =
        q->partitions > 1
            ? own(BCON_NEW("createIndexes", BCON_UTF8(q->locks.c_str()), "indexes", "[", "{",                  //
                           "key", "{", "partition", BCON_INT32(1), "priority", BCON_INT32(1), "available_at",  //
                           BCON_INT32(1), "}", "name", BCON_UTF8("partition_1_priority_1_available_at_1"), "}", "]"))
            : own(BCON_NEW("createIndexes", BCON_UTF8(q->locks.c_str()), "indexes", "[", "{",  //
                           "key", "{", "priority", BCON_INT32(1), "available_at", BCON_INT32(1), "}", "name",
                           BCON_UTF8("priority_1_available_at_1"), "}", "]"));
    // The head lookup: without it, finding a group's head walks other groups' backlog.
    // Deduplication (docs/design.md, "Deduplication"): a unique index on the keys
    // (sparse: events without a key are not in it) makes taking a key and adding its
    // event one write, and a TTL index removes the records of acked keyed events once
    // their window is over (only records have dedup_expires).
    // One sparse index on `field`: the unique one, or the TTL one (expireAfterSeconds 0).
    auto sparse_index = [](bson_t *list, const char *idx, const char *field, const char *name, bool ttl) {
        bson_t index, key;
        BSON_APPEND_DOCUMENT_BEGIN(list, idx, &index);
        BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
        BSON_APPEND_INT32(&key, field, 1);
        bson_append_document_end(&index, &key);
        BSON_APPEND_UTF8(&index, "name", name);
        if (ttl)
            BSON_APPEND_INT32(&index, "expireAfterSeconds", 0);
        else
            BSON_APPEND_BOOL(&index, "unique", true);
        BSON_APPEND_BOOL(&index, "sparse", true);
        bson_append_document_end(list, &index);
    };
    auto messages_indexes = [&](bool with_head) {
        BsonPtr cmd = own(bson_new());
        BSON_APPEND_UTF8(cmd.get(), "createIndexes", q->messages.c_str());
        bson_t list;
        BSON_APPEND_ARRAY_BEGIN(cmd.get(), "indexes", &list);
        if (with_head)
            BSON_APPEND_DOCUMENT(&list, "0",
                                 own(BCON_NEW("key", "{", "group_id", BCON_INT32(1), "_id", BCON_INT32(1), "}", "name",
                                              BCON_UTF8("group_id_1__id_1")))
                                     .get());
        sparse_index(&list, with_head ? "1" : "0", "dedup_key", "dedup_key_1", false);
        sparse_index(&list, with_head ? "2" : "1", "dedup_expires", "dedup_expires_1", true);
        bson_append_array_end(cmd.get(), &list);
        return cmd;
    };
    try {
        write_command(name, c, q->db, locks.get());
    } catch (const Failure &f) {
        // 85 IndexOptionsConflict: the same keys exist under another name. That
        // index serves us as well as ours would.
        if (!(f.status == MQ_ERR_SERVER && f.server_code == 85)) throw;
    }
    auto head_only = [&] {
        BsonPtr cmd =
            own(BCON_NEW("createIndexes", BCON_UTF8(q->messages.c_str()), "indexes", "[", "{", "key", "{", "group_id",
                         BCON_INT32(1), "_id", BCON_INT32(1), "}", "name", BCON_UTF8("group_id_1__id_1"), "}", "]"));
        try {
            write_command(name, c, q->db, cmd.get());
        } catch (const Failure &f) {
            if (!(f.status == MQ_ERR_SERVER && f.server_code == 85)) throw;
        }
    };
    // One command for the three; only when it fails, the head index apart (85: it
    // exists under another name, and the dedup pair alone is sent). A server that
    // refuses the dedup pair (a messages collection sharded on another key; a
    // dedup_key index of the user's with other options) leaves the queue without
    // keys: every keyed publish then fails naming why (set_dedup_refusal).
    try {
        write_command(name, c, q->db, messages_indexes(true).get());
    } catch (const Failure &f) {
        if (f.status != MQ_ERR_SERVER) throw;
        try {
            if (f.server_code == 85)
                write_command(name, c, q->db, messages_indexes(false).get());
            else
                q->set_dedup_refusal(f.message);
        } catch (const Failure &g) {
            if (g.status != MQ_ERR_SERVER) throw;
            q->set_dedup_refusal(g.message);
        }
        if (f.server_code != 85) head_only();
    }
}

// open: open.collation (listCollections), open.indexes (2 createIndexes), open.clock
// (hello; isMaster after it where hello is unknown), and on a mongos open.sharding.
void queue_open(mq_queue *q) {
    Conn c(q);
    // A queue collection created with a non-simple collation compares group ids (and
    // the counter's _id) with it: "A" and "a" would be one group under strength 2.
    // Refused (MQ_ERR_SERVER: the arguments are fine, the server's collections are not).
    BsonPtr names = own(BCON_NEW("name", "{", "$in", "[", BCON_UTF8(q->messages.c_str()), BCON_UTF8(q->locks.c_str()),
                                 BCON_UTF8(q->counters.c_str()), BCON_UTF8(q->dead.c_str()), "]", "}"));
    for (const BsonPtr &info : list_collections("open.collation", c, q->db, names.get())) {
        std::string collation = non_simple_collation(info.get());
        if (!collation.empty())
            fail(MQ_ERR_SERVER, "mq_queue_new: collection " + q->db + "." +
                                    get_string(info.get(), "name", "open.collation") + " has the collation " +
                                    collation +
                                    ": mongomq needs the simple (binary) collation, or group ids that differ only by "
                                    "case or accents would be one group; move the queue to a new prefix");
    }

    check_partitions(c, q, "open.partitions");
    create_indexes(c, q, "open.indexes");

    // The server's clock: leases compare times written by different machines, so the
    // queue runs on the server's time. localTime (ms) is read mid-way through the
    // round trip, so it is compared with the middle of our two readings. hello first
    // (MongoDB 4.4.2+; isMaster is deprecated), isMaster where hello is unknown
    // (older servers, the test server: 59 CommandNotFound).
    BsonPtr reply;
    bson_iter_t it0;
    double t0 = 0, t1 = 0;
    for (const char *command : {"hello", "isMaster"}) {
        BsonPtr cmd = own(BCON_NEW(command, BCON_INT32(1)));
        t0 = wall_clock();
        try {
            reply = read_command("open.clock", c, "admin", cmd.get());
        } catch (const Failure &f) {
            if (f.status == MQ_ERR_SERVER && std::string_view(command) == "hello") continue;
            throw;
        }
        t1 = wall_clock();
        break;
    }
    if (reply && bson_iter_init_find(&it0, reply.get(), "msg") && BSON_ITER_HOLDS_UTF8(&it0) &&
        std::string_view(bson_iter_utf8(&it0, nullptr)) == "isdbgrid")
        check_unsharded(q, c);
    bson_iter_t it;
    if (reply && bson_iter_init_find(&it, reply.get(), "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
        q->clock_offset = clock_offset(t0, t1, bson_iter_date_time(&it));
    else
        log_warning("mq_queue_new(" + q->ns +
                    "): the server's hello/isMaster reply has no localTime: the queue runs "
                    "on this machine's clock, uncorrected (docs/design.md, \"Time\")");
}

}  // namespace mongomq
