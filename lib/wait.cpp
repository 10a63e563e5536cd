// Waiting claims: mq_claim_wait and its kin (docs/design.md, "Waiting claims"). A
// waiter claims; when nothing is due it asks when the next group will be
// (queue_next_due) and sleeps until then, the timeout, a hint that the locks changed,
// or an interrupt or cancel, whichever comes first. The hints come from the
// change-stream watcher (lib/watcher.cpp), one per client and database; each hint
// wakes one sleeper of the queue handle's Waiters (lib/waiters.hpp, defined here).
// Where the server has no change streams, or refuses them, waiters back off instead
// (5 ms doubling to 50 ms). Sleeping is local: no server command is sent while a
// waiter sleeps. Cancel and interrupt themselves are lib/cancel.cpp.
#include "wait.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "mongomq.h"
#include "queue.hpp"
#include "validate.hpp"
#include "waiters.hpp"
#include "partition.hpp"
#include "watcher.hpp"

namespace mongomq {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Without a live change stream: the first idle sleep, doubled each idle round up to
// the cap, so a publish is noticed within 50 ms.
constexpr double kFirstSlice = 0.005;
constexpr double kFallbackSlice = 0.050;
// With a live change stream the hints wake waiters; this is only the safety net.
constexpr double kStreamSlice = 1.0;
// Wall-clock slack added to a sleep until a known due time, so the claim that
// follows finds the group due rather than a hair early.
constexpr double kDueSlack = 0.001;
// The longest a waiter sleeps without looking at q->interrupted: the interrupt's
// latency (mq_queue_interrupt cannot notify a condition variable from a signal
// handler, so waiters look).
constexpr milliseconds kTick{10};

Clock::time_point after(Clock::time_point t, double seconds) {
    return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_until(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

bool cancelled(const mq_cancel *cancel) { return cancel != nullptr && cancel->triggered.load(); }

// Sleeps on the interrupt eventfd (and the cancel's) until `until` or until one is
// readable (the interrupt's never becomes unreadable once written; the cancel's only
// by mq_cancel_reset, which no running call may race). Used when no hint can come.
void sleep_on_interrupt_fd(mq_queue *q, const mq_cancel *cancel, Clock::time_point until) {
    for (;;) {
        if (q->interrupted.load() || cancelled(cancel)) return;
        Clock::time_point now = Clock::now();
        if (now >= until) return;
        auto ms = std::chrono::ceil<milliseconds>(until - now).count();
        // No eventfd (it could not be made): look at the flags every tick instead.
        if (q->interrupt_fd < 0 || (cancel != nullptr && cancel->fd < 0))
            ms = std::min<decltype(ms)>(ms, kTick.count());
        pollfd p[2] = {{q->interrupt_fd, POLLIN, 0}, {cancel != nullptr ? cancel->fd : -1, POLLIN, 0}};
        if (poll(p, 2, static_cast<int>(std::min<decltype(ms)>(ms, INT_MAX))) > 0) return;
        // 0: the time is up (the loop checks); -1: EINTR (a signal, maybe the one
        // whose handler interrupts or cancels us: the loop checks the flags).
    }
}

}  // namespace

int Waiters::sleep(uint64_t seen, Clock::time_point until, const mq_cancel *cancel, int floor,
                   const std::vector<int> *only) {
    if (mode() == Mode::unsupported) {  // no hint will ever come
        sleep_on_interrupt_fd(q_, cancel, until);
        return kSleptOut;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (gen_ != seen) return -1;
    Sleeper me;
    me.floor = floor;
    me.only = only;
    sleepers_.push_back(&me);
    for (;;) {
        if (me.woken || q_->interrupted.load() || cancelled(cancel)) break;
        Clock::time_point now = Clock::now();
        if (now >= until) break;
        me.cv.wait_until(lock, std::min(until, now + kTick));
    }
    if (!me.woken) {
        sleepers_.erase(std::find(sleepers_.begin(), sleepers_.end(), &me));
        return kSleptOut;
    }
    if (cancelled(cancel) && !q_->interrupted.load()) {
        wake_one_locked(me.hinted);  // picked, but leaving without a claim: pass the hint on
        return kSleptOut;
    }
    return me.hinted;
}

void Waiters::hint(int partition) {
    std::lock_guard<std::mutex> lock(mu_);
    gen_++;
    wake_one_locked(partition);
}

void Waiters::set_mode(Mode mode) {
    std::lock_guard<std::mutex> lock(mu_);
    gen_++;
    mode_ = mode;
    for (Sleeper *s : sleepers_) {
        s->woken = true;
        s->cv.notify_one();
    }
    sleepers_.clear();
}

void Waiters::wake_one_locked(int partition) {
    // Of the sleepers that claim from the partition, the one with the lowest floor.
    auto takes = [partition](const Sleeper *s) {
        return partition < 0 || s->only == nullptr || s->only->empty() ||
               std::find(s->only->begin(), s->only->end(), partition) != s->only->end();
    };
    auto lowest = sleepers_.end();
    for (auto it = sleepers_.begin(); it != sleepers_.end(); ++it)
        if (takes(*it) && (lowest == sleepers_.end() || (*it)->floor < (*lowest)->floor)) lowest = it;
    if (lowest == sleepers_.end()) return;
    Sleeper *s = *lowest;
    sleepers_.erase(lowest);
    s->woken = true;
    s->hinted = partition;
    s->cv.notify_one();
}

namespace {

// The queue handle's Waiters, made by its first waiting claim, and subscribed to its
// client's watcher for its database (made by the first such handle).
Waiters *waiters_of(mq_queue *q) {
    std::lock_guard<std::mutex> lock(q->waiters_mu);
    if (q->waiters != nullptr) return q->waiters;
    auto w = std::make_unique<Waiters>(q);
    watcher_subscribe(w.get());
    q->waiters = w.release();
    return q->waiters;
}

}  // namespace

mq_lease *queue_claim_wait(mq_queue *q, const std::string &worker, double visibility, int min_priority,
                           size_t max_events, double timeout, const mq_cancel *cancel, mq_status *status,
                           const std::vector<int> &only) {
    const Clock::time_point deadline = after(Clock::now(), timeout);
    if (q->interrupted.load()) {  // before a watcher is made for nothing
        *status = MQ_INTERRUPTED;
        return nullptr;
    }
    if (cancelled(cancel)) {  // before anything is sent
        *status = MQ_CANCELLED;
        return nullptr;
    }
    // A call that may not wait is a claim: no watcher for it.
    Waiters *w = timeout > 0 ? waiters_of(q) : nullptr;
    double backoff = kFirstSlice;
    bool was_due = false;  // the last round's next due time had passed already
    // With partitions (docs/design.md, "Waiting claims"): the first round claims from
    // every partition; later rounds claim only from the partition a hint named or
    // next.due found due, and a round with neither sends next.due alone, which says
    // whether and where a group is due: so an idle waiter costs what it costs with one
    // partition, not one claim.lease per partition per round.
    const bool parts = q->partitions > 1;
    bool claim_all = true;
    int target = -1;    // the partition to claim from next (parts)
    int due_part = -1;  // the partition of next.due's lock (parts)
    for (;;) {
        if (q->interrupted.load()) {
            *status = MQ_INTERRUPTED;
            return nullptr;
        }
        if (cancelled(cancel)) {
            *status = MQ_CANCELLED;
            return nullptr;
        }
        // Read before the claim: an event after it, however soon, moves it on and
        // the sleep below does not start.
        uint64_t seen = w != nullptr ? w->generation() : 0;
        if (!parts || claim_all || target >= 0) {
            const std::vector<int> one{target};
            if (mq_lease *lease =
                    queue_claim(q, worker, visibility, min_priority, max_events, parts && !claim_all ? one : only)) {
                *status = MQ_OK;
                return lease;
            }
        }
        claim_all = false;
        target = -1;
        if (w == nullptr || Clock::now() >= deadline) {
            *status = MQ_EMPTY;
            return nullptr;
        }

        // on the queue's clock; 0: none; with partitions it may be due already
        double next = queue_next_due(q, min_priority, only, parts ? &due_part : nullptr);
        Clock::time_point now = Clock::now();
        bool live = w->mode() == Waiters::Mode::live;
        Clock::time_point wake = std::min(deadline, after(now, live ? kStreamSlice : backoff));
        if (!live) backoff = std::min(backoff * 2, kFallbackSlice);
        bool due = false;
        if (next > 0) {
            double in = std::min(next - q->now(), seconds_until(now, deadline));
            if (in > 0) {
                wake = std::min(wake, after(now, in + kDueSlack));
            } else if (!was_due) {
                wake = now;  // it came due after the claim: claim again at once
                due = true;
                target = due_part;
            }
            // Due twice running and still not claimed (another worker took it, or the
            // claim refuses it): the slice bounds the rounds, no spinning.
        }
        was_due = due;
        if (wake > now) {
            const int woke = w->sleep(seen, wake, cancel, min_priority, &only);
            if (woke >= 0)
                target = woke;  // a hint named the partition
            else if (woke == -1)
                claim_all = true;  // a hint that did not, or a change of mode: claim everywhere
            else if (next > 0 && due_part >= 0)
                target = due_part;  // slept until next.due's time, or a slice: claim there
        }
    }
}

const char *change_stream_mode(mq_queue *q) {
    std::lock_guard<std::mutex> lock(q->waiters_mu);
    if (q->waiters == nullptr) return "none";
    switch (q->waiters->mode()) {
        case Waiters::Mode::starting:
            return "starting";
        case Waiters::Mode::live:
            return "live";
        case Waiters::Mode::down:
            return "down";
        case Waiters::Mode::refused:
            return "refused";
        case Waiters::Mode::unsupported:
            break;
    }
    return "unsupported";
}

void waiters_destroy(mq_queue *q) noexcept {
    if (q == nullptr) return;
    Waiters *w = nullptr;
    try {
        std::lock_guard<std::mutex> lock(q->waiters_mu);
        w = q->waiters;
        q->waiters = nullptr;
    } catch (...) {
        w = q->waiters;
        q->waiters = nullptr;
    }
    if (w == nullptr) return;
    // Unsubscribed, the watcher calls it no more; the last handle of the database
    // stops and joins the watcher (watcher_unsubscribe).
    if (!watcher_unsubscribe(w)) return;  // leak rather than free what a thread may use
    delete w;
}

}  // namespace mongomq

extern "C" const char *mongomq_change_stream_mode(mq_queue *queue) {
    try {
        return queue != nullptr ? mongomq::change_stream_mode(queue) : "none";
    } catch (...) {  // a mutex that cannot lock
        return "none";
    }
}

using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::null_out;

namespace mongomq {

// The waiting claim behind every exported one; `fn` names the caller in messages.
mq_status claim_wait(const char *fn, mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                     size_t max_events, double timeout_s, const mq_cancel *cancel, mq_lease **out, mq_error *err,
                     const int *partitions, size_t partition_count) {
    null_out(out);
    return guard_queue(err, queue, [&] {
        mongomq::check_queue(fn, queue);
        if (out == nullptr) fail_arg(fn, "out is NULL");
        if (worker_id != nullptr) mongomq::check_worker_id(fn, worker_id);
        mongomq::check_seconds(fn, "visibility_s", visibility_s, false);
        mongomq::check_priority(fn, "min_priority", min_priority);
        mongomq::check_max_events(fn, max_events);
        mongomq::check_seconds(fn, "timeout_s", timeout_s, true);
        const std::vector<int> only = mongomq::check_partition_list(fn, queue, partitions, partition_count);
        mq_status status = MQ_EMPTY;
        *out = mongomq::queue_claim_wait(queue, worker_id != nullptr ? worker_id : mongomq::default_worker_id(),
                                         visibility_s, min_priority, max_events, timeout_s, cancel, &status, only);
        if (status == MQ_INTERRUPTED)
            mongomq::fail(MQ_INTERRUPTED, std::string(fn) + ": the queue was interrupted (mq_queue_interrupt)");
        if (status == MQ_CANCELLED)
            mongomq::fail(MQ_CANCELLED, std::string(fn) + ": the claim was cancelled (mq_cancel_trigger)");
        return status;
    });
}

}  // namespace mongomq

extern "C" {

mq_status mq_claim_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority, double timeout_s,
                        mq_lease **out, mq_error *err) {
    return mq_claim_batch_wait(queue, worker_id, visibility_s, min_priority, 1, timeout_s, out, err);
}

mq_status mq_claim_batch_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                              size_t max_events, double timeout_s, mq_lease **out, mq_error *err) {
    return mongomq::claim_wait(max_events == 1 ? "mq_claim_wait" : "mq_claim_batch_wait", queue, worker_id,
                               visibility_s, min_priority, max_events, timeout_s, nullptr, out, err);
}

mq_status mq_claim_wait_cancel(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                               size_t max_events, double timeout_s, mq_cancel *cancel, mq_lease **out, mq_error *err) {
    return mongomq::claim_wait("mq_claim_wait_cancel", queue, worker_id, visibility_s, min_priority, max_events,
                               timeout_s, cancel, out, err);
}

}  // extern "C"
