// Batch publish: the exported mq_batch_* functions and mq_publish_batch. A batch is
// checked event by event as it is built, so publishing it sends nothing bad.
#include <memory>
#include <string>
#include <vector>

#include "attrs.hpp"
#include "guard.hpp"
#include "queue.hpp"
#include "validate.hpp"

using mongomq::fail_arg;
using mongomq::guard;
using mongomq::guard_queue;
using mongomq::null_out;

extern "C" {

mq_status mq_batch_new(mq_batch **out, mq_error *err) {
    null_out(out);
    return guard(err, nullptr, [&] {
        if (out == nullptr) fail_arg("mq_batch_new", "out is NULL");
        *out = new mq_batch();
        return MQ_OK;
    });
}

namespace {

// mq_batch_add and mq_batch_add_with: the checks mq_publish_with makes, nothing sent.
mq_status batch_add(const char *fn, mq_batch *batch, const char *group_id, const void *event, size_t event_len,
                    const mq_publish_opts *opts, mq_error *err) {
    return guard(err, nullptr, [&] {
        const mq_publish_opts o = mongomq::publish_opts_of(fn, opts);
        const int priority = o.priority;
        const double not_before = o.not_before;
        if (batch == nullptr) fail_arg(fn, "batch is NULL");
        mongomq::check_group_id(fn, group_id);
        mongomq::check_event(fn, event, event_len);
        mongomq::check_priority(fn, "priority", priority);
        mongomq::check_epoch(fn, "not_before", not_before);
        mongomq::Attrs attrs = mongomq::check_attrs(fn, o.attrs, o.attr_count);
        if (batch->events.size() >= MQ_BATCH_MAX)
            fail_arg(fn, "batch is full: it holds MQ_BATCH_MAX (" + std::to_string(MQ_BATCH_MAX) + ") events");
        batch->events.push_back({group_id, std::string(static_cast<const char *>(event), event_len),
                                 mongomq::event_is_text(event, event_len), priority, not_before, o.dedup_key != nullptr,
                                 o.dedup_key != nullptr ? o.dedup_key : "", std::move(attrs)});
        batch->outcome_seqs.clear();  // the batch changed: its last publish's outcome no longer says
        batch->outcome_duplicate.clear();
        return MQ_OK;
    });
}

}  // namespace

mq_status mq_batch_add(mq_batch *batch, const char *group_id, const void *event, size_t event_len, int priority,
                       mq_error *err) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.priority = priority;
    return batch_add("mq_batch_add", batch, group_id, event, event_len, &o, err);
}

mq_status mq_batch_add_with(mq_batch *batch, const char *group_id, const void *event, size_t event_len,
                            const mq_publish_opts *opts, mq_error *err) {
    return batch_add("mq_batch_add_with", batch, group_id, event, event_len, opts, err);
}

size_t mq_batch_count(const mq_batch *batch) { return batch != nullptr ? batch->events.size() : 0; }

void mq_batch_destroy(mq_batch *batch) { delete batch; }

mq_status mq_publish_batch(mq_queue *queue, const mq_batch *batch, int64_t *first_seq, mq_error *err) {
    if (first_seq != nullptr) *first_seq = 0;
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_publish_batch";
        mongomq::check_queue(fn, queue);
        if (batch == nullptr) fail_arg(fn, "batch is NULL");
        if (batch->events.empty()) fail_arg(fn, "batch is empty");
        std::vector<mongomq::Outgoing> events;
        events.reserve(batch->events.size());
        for (const mq_batch::Event &e : batch->events)
            events.push_back({&e.group, e.bytes.data(), e.bytes.size(), e.text, e.priority, e.not_before,
                              e.keyed ? &e.dedup_key : nullptr, &e.attrs});
        batch->outcome_seqs.clear();
        batch->outcome_duplicate.clear();
        std::vector<mongomq::Published> outcome;
        int64_t first = mongomq::queue_publish(queue, events, &outcome);
        if (first_seq != nullptr) *first_seq = first;
        bool any_duplicate = false;
        for (const mongomq::Published &p : outcome) {
            batch->outcome_seqs.push_back(p.seq);
            batch->outcome_duplicate.push_back(p.duplicate);
            any_duplicate = any_duplicate || p.duplicate;
        }
        return any_duplicate ? MQ_DUPLICATE : MQ_OK;
    });
}

}  // extern "C"
