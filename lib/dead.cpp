// Dead letters: the exported mq_queue_set_max_attempts and mq_dead_* functions. The
// claim moves a head to {prefix}_dead (lib/queue.cpp, move_to_dead); these count,
// requeue and purge what is there.
#include <string>
#include <vector>

#include "attrs.hpp"
#include "guard.hpp"
#include "queue.hpp"
#include "store.hpp"

using mongomq::BsonPtr;
using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::own;

extern "C" {

mq_status mq_queue_set_max_attempts(mq_queue *queue, int max_attempts, mq_error *err) {
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_queue_set_max_attempts";
        mongomq::check_queue(fn, queue);
        if (max_attempts < 0) fail_arg(fn, "max_attempts is " + std::to_string(max_attempts) + "; it must be >= 0");
        queue->max_attempts.store(max_attempts);
        return MQ_OK;
    });
}

// dead.count (countDocuments).
mq_status mq_dead_count(mq_queue *queue, int64_t *count, mq_error *err) {
    if (count != nullptr) *count = 0;
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_dead_count", queue);
        if (count == nullptr) fail_arg("mq_dead_count", "count is NULL");
        mongomq::Conn c(queue);
        mongomq::Bson all;
        *count = mongomq::count_documents("dead.count", c.dead(), all.get());
        return MQ_OK;
    });
}

// dead.read (find), then a publish (3 commands), then dead.delete. Publish first: a
// crash between the two leaves the event in both places (delivered again, at least
// once), never in neither.
mq_status mq_dead_requeue(mq_queue *queue, int64_t seq, int64_t *new_seq, mq_error *err) {
    if (new_seq != nullptr) *new_seq = 0;
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_dead_requeue";
        mongomq::check_queue(fn, queue);
        mongomq::Conn c(queue);
        BsonPtr id = own(BCON_NEW("_id", BCON_INT64(seq)));
        std::vector<BsonPtr> found = mongomq::find("dead.read", c.dead(), id.get(), nullptr);
        if (found.empty()) fail_arg(fn, "seq " + std::to_string(seq) + " is not a dead letter of this queue");
        const bson_t *doc = found[0].get();
        std::string group = mongomq::get_string(doc, "group_id", "dead.read");
        std::string event = mongomq::get_event_bytes(doc, seq);
        bson_iter_t it;
        bool text = bson_iter_init_find(&it, doc, "event") && BSON_ITER_HOLDS_UTF8(&it);
        int priority = mongomq::get_int_or(doc, "priority", 0);
        const mongomq::Attrs attrs = mongomq::attrs_of(doc);  // the event's, kept (0.7.0)
        std::vector<mongomq::Outgoing> one{{&group, event.data(), event.size(), text, priority, 0, nullptr, &attrs}};
        int64_t fresh = mongomq::queue_publish(c, queue, one);  // on this call's connection
        mongomq::delete_one("dead.delete", c.dead(), id.get());
        if (new_seq != nullptr) *new_seq = fresh;
        return MQ_OK;
    });
}

// dead.purge (deleteMany).
mq_status mq_dead_purge(mq_queue *queue, int64_t *purged, mq_error *err) {
    if (purged != nullptr) *purged = 0;
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_dead_purge", queue);
        mongomq::Conn c(queue);
        mongomq::Bson all;
        int64_t n = mongomq::delete_many("dead.purge", c.dead(), all.get());
        if (purged != nullptr) *purged = n;
        return MQ_OK;
    });
}

}  // extern "C"
