// The C boundary. Every exported function is noexcept: it checks its arguments, calls
// into the C++ inside through guard(), and turns whatever was thrown into a status and
// an mq_error. Nothing C++ crosses the line.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "attrs.hpp"
#include "cancel.hpp"
#include "client.hpp"
#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "mongomq.h"
#include "partition.hpp"
#include "queue.hpp"
#include "validate.hpp"
#include "wait.hpp"

using mongomq::check_queue;
using mongomq::default_worker_id;
using mongomq::fail_arg;
using mongomq::guard;
using mongomq::guard_queue;
using mongomq::null_out;
using mongomq::unknown_version;

static_assert(sizeof(mq_error) == 512, "mq_error is part of the ABI");

namespace {

void check_lease(const char *fn, const mq_queue *queue, const mq_lease *lease) {
    if (queue == nullptr) fail_arg(fn, "queue is NULL");
    if (lease == nullptr) fail_arg(fn, "lease is NULL");
    if (lease->ns != queue->ns)
        fail_arg(fn, "lease belongs to queue \"" + lease->ns + "\", not to \"" + queue->ns + "\"");
}

// The message a LEASE_LOST carries.
mq_status lost_or_ok(mq_status status, const char *fn, const mq_lease *lease) {
    if (status == MQ_LEASE_LOST)
        mongomq::fail(MQ_LEASE_LOST,
                      std::string(fn) + ": lease on group \"" + lease->group +
                          "\" was lost: the group is no longer held by it (its lease expired and another claim "
                          "took the group, or it was given back, purged, or drained and dropped); " +
                          // An ack removes the events first, whoever holds the group (mq_ack's comment).
                          (std::strcmp(fn, "mq_ack") == 0 ? "the events were removed all the same (they were "
                                                            "processed), nothing else was changed"
                                                          : "nothing was changed"));
    return status;
}

// mq_publish, mq_publish_at and mq_publish_with: one event, a batch of one.
mq_status publish_one(const char *fn, mq_queue *queue, const char *group_id, const void *event, size_t event_len,
                      const mq_publish_opts *opts, int64_t *seq_out, mq_error *err) {
    if (seq_out != nullptr) *seq_out = 0;
    return guard_queue(err, queue, [&] {
        const mq_publish_opts o = mongomq::publish_opts_of(fn, opts);
        const int priority = o.priority;
        const double not_before_epoch_s = o.not_before;
        check_queue(fn, queue);
        mongomq::check_group_id(fn, group_id);
        mongomq::check_event(fn, event, event_len);
        mongomq::check_priority(fn, "priority", priority);
        mongomq::check_epoch(fn, "not_before_epoch_s", not_before_epoch_s);
        const mongomq::Attrs attrs = mongomq::check_attrs(fn, o.attrs, o.attr_count);
        std::string group(group_id);
        std::string key(o.dedup_key != nullptr ? o.dedup_key : "");
        std::vector<mongomq::Outgoing> one{{&group, event, event_len, mongomq::event_is_text(event, event_len),
                                            priority, not_before_epoch_s, o.dedup_key != nullptr ? &key : nullptr,
                                            &attrs}};
        std::vector<mongomq::Published> outcome;
        mongomq::queue_publish(queue, one, &outcome);
        if (seq_out != nullptr) *seq_out = outcome.at(0).seq;
        return outcome.at(0).duplicate ? MQ_DUPLICATE : MQ_OK;
    });
}

// The plain claim (mq_claim, mq_claim_batch, mq_claim_with without a wait).
mq_status claim_now(const char *fn, mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                    size_t max_events, mq_lease **out, mq_error *err, const int *partitions = nullptr,
                    size_t partition_count = 0) {
    null_out(out);
    return guard_queue(err, queue, [&] {
        check_queue(fn, queue);
        if (out == nullptr) fail_arg(fn, "out is NULL");
        if (worker_id != nullptr) mongomq::check_worker_id(fn, worker_id);
        mongomq::check_seconds(fn, "visibility_s", visibility_s, false);
        mongomq::check_priority(fn, "min_priority", min_priority);
        mongomq::check_max_events(fn, max_events);
        const std::vector<int> only = mongomq::check_partition_list(fn, queue, partitions, partition_count);
        *out = mongomq::queue_claim(queue, worker_id != nullptr ? worker_id : default_worker_id(), visibility_s,
                                    min_priority, max_events, only);
        return *out != nullptr ? MQ_OK : MQ_EMPTY;
    });
}

}  // namespace

extern "C" {

const char *mq_version(void) { return MONGOMQ_VERSION_STRING; }

const char *mq_status_name(mq_status status) {
    switch (status) {
        case MQ_OK:
            return "MQ_OK";
        case MQ_EMPTY:
            return "MQ_EMPTY";
        case MQ_LEASE_LOST:
            return "MQ_LEASE_LOST";
        case MQ_INTERRUPTED:
            return "MQ_INTERRUPTED";
        case MQ_CANCELLED:
            return "MQ_CANCELLED";
        case MQ_DUPLICATE:
            return "MQ_DUPLICATE";
        case MQ_ERR_ARG:
            return "MQ_ERR_ARG";
        case MQ_ERR_CONNECT:
            return "MQ_ERR_CONNECT";
        case MQ_ERR_SERVER:
            return "MQ_ERR_SERVER";
        case MQ_ERR_NOMEM:
            return "MQ_ERR_NOMEM";
        case MQ_ERR_INTERNAL:
            return "MQ_ERR_INTERNAL";
    }
    return "MQ_UNKNOWN";
}

mq_status mq_client_new(const char *uri, mq_client **out, mq_error *err) {
    null_out(out);
    return guard(err, nullptr, [&] {
        if (out == nullptr) fail_arg("mq_client_new", "out is NULL");
        if (uri == nullptr) fail_arg("mq_client_new", "uri is NULL");
        *out = mongomq::client_new(uri);
        return MQ_OK;
    });
}

void mq_client_destroy(mq_client *client) { mongomq::client_destroy(client); }

uint64_t mq_client_command_count(const mq_client *client) {
    return client != nullptr ? client->commands.load(std::memory_order_relaxed) : 0;
}

mq_status mq_queue_new(mq_client *client, const char *db_name, const char *prefix, mq_queue **out, mq_error *err) {
    return mq_queue_new_with(client, db_name, prefix, nullptr, out, err);
}

mq_status mq_queue_opts_init(mq_queue_opts *opts, unsigned int version) {
    if (opts == nullptr || version != MQ_QUEUE_OPTS_VERSION) return MQ_ERR_ARG;
    const mq_queue_opts defaults = MQ_QUEUE_OPTS_INIT;
    *opts = defaults;
    return MQ_OK;
}

mq_status mq_queue_new_with(mq_client *client, const char *db_name, const char *prefix, const mq_queue_opts *opts,
                            mq_queue **out, mq_error *err) {
    null_out(out);
    return guard(err, client, [&] {
        const char *fn = opts != nullptr ? "mq_queue_new_with" : "mq_queue_new";
        if (client == nullptr) fail_arg(fn, "client is NULL");
        if (out == nullptr) fail_arg(fn, "out is NULL");
        mq_queue_opts o = MQ_QUEUE_OPTS_INIT;
        if (opts != nullptr) {
            if (opts->version != MQ_QUEUE_OPTS_VERSION)
                fail_arg(fn, unknown_version(opts->version, MQ_QUEUE_OPTS_VERSION));
            o = *opts;
        }
        if (o.partitions < 1 || o.partitions > MQ_PARTITIONS_MAX)
            fail_arg(fn, "partitions is " + std::to_string(o.partitions) + ", outside 1..1024 (MQ_PARTITIONS_MAX)");
        auto queue = std::make_unique<mq_queue>();
        queue->partitions = o.partitions;
        queue->client = client;
        queue->db = db_name != nullptr ? db_name : "mongomq";
        queue->prefix = prefix != nullptr ? prefix : "mq";
        mongomq::check_db_name(fn, queue->db);
        mongomq::check_prefix(fn, queue->db, queue->prefix);
        queue->ns = queue->db + "." + queue->prefix;
        queue->messages = queue->prefix + "_messages";
        queue->locks = queue->prefix + "_locks";
        queue->counters = queue->prefix + "_counters";
        queue->dead = queue->prefix + "_dead";
        queue->interrupt_fd = mongomq::wake_fd_new("mq_queue_new");
        mongomq::queue_open(queue.get());
        *out = queue.release();
        return MQ_OK;
    });
}

void mq_queue_destroy(mq_queue *queue) {
    if (queue == nullptr) return;
    mongomq::waiters_destroy(queue);
    delete queue;  // closes interrupt_fd
}

mq_status mq_publish(mq_queue *queue, const char *group_id, const void *event, size_t event_len, int priority,
                     int64_t *seq_out, mq_error *err) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.priority = priority;
    return publish_one("mq_publish", queue, group_id, event, event_len, &o, seq_out, err);
}

mq_status mq_publish_opts_init(mq_publish_opts *opts, unsigned int version) {
    if (opts == nullptr || version < 1 || version > MQ_PUBLISH_OPTS_VERSION) return MQ_ERR_ARG;
    if (version < MQ_PUBLISH_OPTS_VERSION) {  // an older struct ends before the later fields
        opts->version = version;
        opts->priority = 0;
        opts->not_before = 0;
        if (version == 2) opts->dedup_key = nullptr;
        return MQ_OK;
    }
    const mq_publish_opts defaults = MQ_PUBLISH_OPTS_INIT;
    *opts = defaults;
    return MQ_OK;
}

mq_status mq_publish_with(mq_queue *queue, const char *group_id, const void *event, size_t event_len,
                          const mq_publish_opts *opts, int64_t *seq_out, mq_error *err) {
    return publish_one("mq_publish_with", queue, group_id, event, event_len, opts, seq_out, err);
}

mq_status mq_publish_at(mq_queue *queue, const char *group_id, const void *event, size_t event_len, int priority,
                        double not_before_epoch_s, int64_t *seq_out, mq_error *err) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.priority = priority;
    o.not_before = not_before_epoch_s;
    return publish_one("mq_publish_at", queue, group_id, event, event_len, &o, seq_out, err);
}

mq_status mq_claim(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority, mq_lease **out,
                   mq_error *err) {
    return claim_now("mq_claim", queue, worker_id, visibility_s, min_priority, 1, out, err);
}

mq_status mq_claim_batch(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                         size_t max_events, mq_lease **out, mq_error *err) {
    return claim_now(max_events == 1 ? "mq_claim" : "mq_claim_batch", queue, worker_id, visibility_s, min_priority,
                     max_events, out, err);
}

mq_status mq_claim_opts_init(mq_claim_opts *opts, unsigned int version) {
    if (opts == nullptr || version < 1 || version > MQ_CLAIM_OPTS_VERSION) return MQ_ERR_ARG;
    const mq_claim_opts defaults = MQ_CLAIM_OPTS_INIT;
    if (version == 1) {  // a version 1 struct ends before partitions
        std::memcpy(opts, &defaults, offsetof(mq_claim_opts, partitions));
        opts->version = 1;
        return MQ_OK;
    }
    *opts = defaults;
    return MQ_OK;
}

mq_status mq_claim_with(mq_queue *queue, const mq_claim_opts *opts, mq_lease **out, mq_error *err) {
    const char *fn = "mq_claim_with";
    mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
    if (opts != nullptr) {
        if (opts->version < 1 || opts->version > MQ_CLAIM_OPTS_VERSION) {
            null_out(out);
            return guard_queue(err, queue, [&]() -> mq_status {
                fail_arg(fn, unknown_version(opts->version, MQ_CLAIM_OPTS_VERSION));
            });
        }
        // Each version reads its own fields only: a version 1 struct ends before
        // partitions.
        if (opts->version == 1)
            std::memcpy(&o, opts, offsetof(mq_claim_opts, partitions));
        else
            o = *opts;
    }
    if (o.timeout_s == 0 && o.cancel == nullptr)
        return claim_now(fn, queue, o.worker_id, o.visibility_s, o.min_priority, o.max_events, out, err, o.partitions,
                         o.partition_count);
    return mongomq::claim_wait(fn, queue, o.worker_id, o.visibility_s, o.min_priority, o.max_events, o.timeout_s,
                               o.cancel, out, err, o.partitions, o.partition_count);
}

mq_status mq_ack(mq_queue *queue, const mq_lease *lease, mq_error *err) {
    return guard_queue(err, queue, [&] {
        check_lease("mq_ack", queue, lease);
        return lost_or_ok(mongomq::queue_ack(queue, lease), "mq_ack", lease);
    });
}

mq_status mq_nack(mq_queue *queue, const mq_lease *lease, double delay_s, mq_error *err) {
    return guard_queue(err, queue, [&] {
        check_lease("mq_nack", queue, lease);
        mongomq::check_seconds("mq_nack", "delay_s", delay_s, true);
        return lost_or_ok(mongomq::queue_nack(queue, lease, delay_s), "mq_nack", lease);
    });
}

mq_status mq_unclaim(mq_queue *queue, const mq_lease *lease, mq_error *err) {
    return guard_queue(err, queue, [&] {
        check_lease("mq_unclaim", queue, lease);
        return lost_or_ok(mongomq::queue_unclaim(queue, lease), "mq_unclaim", lease);
    });
}

mq_status mq_extend(mq_queue *queue, const mq_lease *lease, double visibility_s, mq_error *err) {
    return guard_queue(err, queue, [&] {
        check_lease("mq_extend", queue, lease);
        mongomq::check_seconds("mq_extend", "visibility_s", visibility_s, false);
        return lost_or_ok(mongomq::queue_extend(queue, lease, visibility_s), "mq_extend", lease);
    });
}

int64_t mq_lease_seq(const mq_lease *lease) { return mq_lease_seq_at(lease, 0); }

const char *mq_lease_group(const mq_lease *lease) { return lease != nullptr ? lease->group.c_str() : nullptr; }

const void *mq_lease_event(const mq_lease *lease, size_t *len_out) { return mq_lease_event_at(lease, 0, len_out); }

size_t mq_lease_count(const mq_lease *lease) { return lease != nullptr ? lease->items.size() : 0; }

int64_t mq_lease_seq_at(const mq_lease *lease, size_t i) {
    return lease != nullptr && i < lease->items.size() ? lease->items[i].seq : 0;
}

const void *mq_lease_event_at(const mq_lease *lease, size_t i, size_t *len_out) {
    if (lease == nullptr || i >= lease->items.size()) {
        if (len_out != nullptr) *len_out = 0;
        return nullptr;
    }
    const std::string &event = lease->items[i].event;
    if (len_out != nullptr) *len_out = event.size();
    return event.data();
}

const char *mq_lease_token(const mq_lease *lease) { return lease != nullptr ? lease->token.c_str() : nullptr; }

int mq_lease_attempts(const mq_lease *lease) { return lease != nullptr ? lease->attempts : 0; }

int mq_lease_partition(const mq_lease *lease) { return lease != nullptr ? lease->partition : -1; }

int mq_queue_partitions(const mq_queue *queue) { return queue != nullptr ? queue->partitions : 0; }

int mq_group_partition(const char *group_id, int partitions) {
    if (group_id == nullptr || partitions < 1 || partitions > MQ_PARTITIONS_MAX) return -1;
    return mongomq::group_partition(group_id, std::strlen(group_id), partitions);
}

mq_status mq_queue_set_repair_interval(mq_queue *queue, double interval_s, mq_error *err) {
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_queue_set_repair_interval";
        check_queue(fn, queue);
        mongomq::check_seconds(fn, "interval_s", interval_s, true);
        queue->repair_interval.store(interval_s);
        return MQ_OK;
    });
}

void mq_queue_repair_counts(const mq_queue *queue, uint64_t *runs, uint64_t *fixed) {
    if (runs != nullptr) *runs = queue != nullptr ? queue->repair_runs.load() : 0;
    if (fixed != nullptr) *fixed = queue != nullptr ? queue->repair_fixed.load() : 0;
}

double mq_lease_deadline(const mq_lease *lease) { return lease != nullptr ? lease->deadline.load() : 0; }

void mq_lease_destroy(mq_lease *lease) { delete lease; }

void mq_queue_set_clock(mq_queue *queue, double (*clock)(void *ctx), void *ctx) {
    if (queue == nullptr) return;
    try {
        std::lock_guard<std::mutex> lock(queue->clock_mu);
        queue->clock = clock;
        queue->clock_ctx = ctx;
    } catch (...) {  // a mutex that cannot lock: nothing sane to do but keep the old clock
    }
}

double mq_queue_clock_offset(const mq_queue *queue) { return queue != nullptr ? queue->clock_offset : 0; }

double mq_queue_now(mq_queue *queue) {
    if (queue == nullptr) return 0;
    try {
        return queue->now();
    } catch (...) {  // the clock's mutex could not lock: nothing sane but the wall clock
        return mongomq::wall_clock() + queue->clock_offset;
    }
}

void mq_log_set_handler(mq_log_fn handler, void *ctx) {
    try {
        mongomq::log_set_handler(handler, ctx);
    } catch (...) {
    }
}

}  // extern "C"
