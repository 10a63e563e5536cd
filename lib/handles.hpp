// What the opaque handles of mongomq.h are. Only lib/ sees these.
#pragma once

#include <mongoc/mongoc.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "mongomq.h"

namespace mongomq {
class Waiters;  // lib/waiters.hpp: one queue's sleeping claimers
class Watcher;  // lib/watcher.cpp: one change stream per client and database, shared by its queues
}  // namespace mongomq

struct mq_client {
    mongoc_client_pool_t *pool = nullptr;
    mongoc_uri_t *uri = nullptr;
    std::string password;               // scrubbed from every message we produce
    std::atomic<uint64_t> commands{0};  // APM: commands started through this pool
    // What every command on a queue's collections uses, whatever the URI says
    // (docs/design.md, "Deployments"): the primary, read concern "local", and the
    // URI's write concern or w:"majority" when the URI sets no w.
    mongoc_read_prefs_t *read_prefs = nullptr;
    mongoc_read_concern_t *read_concern = nullptr;
    mongoc_write_concern_t *write_concern = nullptr;
    // Writes the server applied but whose write concern it could not confirm.
    mutable std::atomic<uint64_t> write_concern_errors{0};
    // The change-stream watchers, one per database with waiting queues (watcher.cpp).
    std::mutex watchers_mu;
    std::vector<std::pair<std::string, mongomq::Watcher *>> watchers;
};

struct mq_queue {
    mq_client *client = nullptr;
    std::string db;
    std::string prefix;
    std::string ns;                               // "db.prefix": whose leases these are
    std::string messages, locks, counters, dead;  // collection names
    // Partitions (mq_queue_new_with; lib/partition.hpp): fixed at open. claim_turn is
    // where this handle's next claim starts: after the partition its last one took from.
    int partitions = 1;
    std::atomic<uint64_t> claim_turn{0};

    std::atomic<int> max_attempts{0};  // 0: unlimited (dead letters off)
    // Deduplication (mq_queue_set_dedup_window, _scope): this handle's keyed publishes.
    std::atomic<double> dedup_window{MQ_DEDUP_WINDOW_DEFAULT};
    std::atomic<int> dedup_scope{MQ_DEDUP_SCOPE_QUEUE};
    // Why the server would not make the dedup_key index (open, drop), if it would not:
    // keyed publishes then fail naming it. The flag is read by every keyed publish.
    std::atomic<bool> dedup_refused{false};
    std::mutex dedup_mu;
    std::string dedup_refusal;  // guarded by dedup_mu
    // mq_queue_drop took the collections and their indexes: this handle's next publish
    // makes them again first (under index_mu, so no publish of this handle inserts a
    // keyed event before the unique index is back).
    std::atomic<bool> indexes_pending{false};
    std::mutex index_mu;
    void set_dedup_refusal(const std::string &why) {
        std::lock_guard<std::mutex> lock(dedup_mu);
        dedup_refusal = why;
        dedup_refused.store(!why.empty());
    }
    std::string dedup_refusal_text() {
        std::lock_guard<std::mutex> lock(dedup_mu);
        return dedup_refusal;
    }
    double clock_offset = 0;  // server clock - wall clock, set at open

    std::mutex clock_mu;
    double (*clock)(void *) = nullptr;  // nullptr: wall clock + clock_offset
    void *clock_ctx = nullptr;

    // mq_queue_interrupt: the flag, and an eventfd it writes once and nobody drains,
    // so every waiter polling it wakes now and later (async-signal-safe to set).
    std::atomic<bool> interrupted{false};
    int interrupt_fd = -1;

    // The automatic repair (mq_queue_set_repair_interval): its period in seconds (0:
    // off) and when it last ran, on the steady clock in ns (0: never).
    std::atomic<double> repair_interval{60.0};
    std::atomic<int64_t> repair_last_ns{0};
    std::atomic<uint64_t> repair_runs{0};
    std::atomic<uint64_t> repair_fixed{0};
    std::atomic<uint64_t> repair_failures{0};  // automatic repairs that failed (logged)

    std::mutex waiters_mu;                // guards the creation of waiters
    mongomq::Waiters *waiters = nullptr;  // made by the first mq_claim_wait

    double now();

    mq_queue() = default;
    mq_queue(const mq_queue &) = delete;
    mq_queue &operator=(const mq_queue &) = delete;
    ~mq_queue() {
        if (interrupt_fd >= 0) ::close(interrupt_fd);
    }
};

// mq_cancel: a flag one waiting claim watches, and an eventfd written on trigger so
// a waiter polling it wakes at once (both async-signal-safe to set).
struct mq_cancel {
    std::atomic<bool> triggered{false};
    int fd = -1;

    mq_cancel() = default;
    mq_cancel(const mq_cancel &) = delete;
    mq_cancel &operator=(const mq_cancel &) = delete;
    ~mq_cancel() {
        if (fd >= 0) ::close(fd);
    }
};

// Events to publish together (mq_publish_batch), checked as they are added.
struct mq_batch {
    struct Event {
        std::string group;
        std::string bytes;
        bool text;
        int priority;
        double not_before;  // 0: now
        bool keyed = false;
        std::string dedup_key;                                   // when keyed
        std::vector<std::pair<std::string, std::string>> attrs;  // checked (lib/attrs.cpp)
    };
    std::vector<Event> events;
    // The outcome of the last publish, per event (mq_batch_outcome): its seq, and
    // whether it was a duplicate (the seq is then the first publish's). Cleared by an
    // add; mutable: mq_publish_batch takes the batch as const.
    mutable std::vector<int64_t> outcome_seqs;
    mutable std::vector<bool> outcome_duplicate;
};

// One claimed group and the head event(s) it holds. A lease is a plain value: it
// keeps no pointer to its queue, only the queue's namespace, so it may outlive it.
struct mq_lease {
    struct Item {
        int64_t seq;
        std::string event;
        // A keyed event (its message has a dedup_key): until when its key must stay
        // taken (its dedup_until, epoch ms), so the ack leaves a record instead of
        // deleting it (docs/design.md, "Deduplication"). 0: no key.
        int64_t dedup_until_ms = 0;
        std::vector<std::pair<std::string, std::string>> attrs;  // in publish order (lib/attrs.cpp)
    };

    std::string ns;
    std::string group;
    std::string token;
    std::vector<Item> items;  // consecutive events of the group, the head first
    int attempts = 0;
    int priority = 0;
    int partition = 0;  // the group's (lib/partition.hpp)
    // When the lease runs out, on the queue clock; extend and a delayed nack move it
    // (through a const lease: the caller's handle is const in those calls).
    mutable std::atomic<double> deadline{0};
    bool more_after = false;  // the claim saw another event behind the last item
    int64_t next_seq = 0;     // that event's seq (when more_after): ack.release's new head
    // The lock as the claim found it: its available_at (the group's place in line) and
    // its attempts before this delivery, so mq_unclaim can put both back; prior_known
    // false when the claim found its lease by token after a lost reply (claim.recover).
    bool prior_known = false;
    double prior_available_at = 0;
    // An ack or nack of this lease failed with MQ_ERR_CONNECT after its lock write was
    // sent: the write may have been applied. A retry whose fenced write then matches
    // nothing is that write's own doing, not a lost lease (docs/design.md, "Lost
    // replies").
    mutable std::atomic<bool> outcome_unknown{false};
};
