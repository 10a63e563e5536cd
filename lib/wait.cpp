// Waiting claims: mq_claim_wait and mq_queue_interrupt (docs/design.md, "Waiting
// claims"). A waiter claims; when nothing is due it asks when the next group will be
// (queue_next_due) and sleeps until then, the timeout, a hint that the locks changed,
// or an interrupt, whichever comes first. The hints come from one change stream per
// queue, watched by a thread of its own (Waiters below); where the server has no
// change streams, waiters back off instead (5 ms doubling to 50 ms). Sleeping is
// local: no server command is sent while a waiter sleeps.
#include "wait.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "bson.hpp"
#include "error.hpp"
#include "fault.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "mongomq.h"
#include "queue.hpp"
#include "store.hpp"
#include "validate.hpp"

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

// The watcher: how long the server may hold an empty getMore, and how often it
// sends one at most when the server does not hold it (mongo-java-server answers at
// once: without this the watcher would send thousands of getMores a second).
constexpr int64_t kMaxAwaitMs = 200;
constexpr milliseconds kGetMorePeriod{30};  // a hint within ~30 ms there
// Pauses before reopening a stream that failed: doubling, capped.
constexpr milliseconds kReopenFirst{100};
constexpr milliseconds kReopenMax{5000};

// Server error codes that mean "no change streams here": 40573 ($changeStream on a
// standalone), 115 CommandNotSupported, 20 IllegalOperation.
bool means_unsupported(int code) { return code == 40573 || code == 115 || code == 20; }

Clock::time_point after(Clock::time_point t, double seconds) {
    return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_until(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// The watcher's own connection: a single-threaded client on a copy of the queue's
// URI, not one of the pool's. It is held for as long as the queue lives, so it must
// not starve the pool; and its timeouts are the watcher's, so that waiters_destroy
// never waits long for a watcher stuck on an unreachable server: a pooled client
// would block for serverSelectionTimeoutMS (30 s by default), twice when libmongoc
// resumes the stream, and a getMore on a half-open connection for socketTimeoutMS
// (5 min). Its commands count in mq_client_command_count like the pool's.
constexpr int32_t kWatchConnectMs = 2000;                       // connect, select a server
constexpr int32_t kWatchSocketMs = 5000;                        // any one reply (> kMaxAwaitMs)

void count_watch_command(const mongoc_apm_command_started_t *event) {
    auto *client = static_cast<mq_client *>(mongoc_apm_command_started_get_context(event));
    client->commands.fetch_add(1, std::memory_order_relaxed);
}

struct ClientFree {
    void operator()(mongoc_client_t *c) const { mongoc_client_destroy(c); }
};
using Client = std::unique_ptr<mongoc_client_t, ClientFree>;

struct UriFree {
    void operator()(mongoc_uri_t *u) const { mongoc_uri_destroy(u); }
};

// nullptr when libmongoc refuses the URI copy (it took the original).
Client watch_client(mq_client *owner) {
    std::unique_ptr<mongoc_uri_t, UriFree> uri(mongoc_uri_copy(owner->uri));
    if (!uri) throw std::bad_alloc();
    auto at_most = [&](const char *option, int32_t ms) {
        int32_t given = mongoc_uri_get_option_as_int32(uri.get(), option, 0);
        if (given <= 0 || given > ms) mongoc_uri_set_option_as_int32(uri.get(), option, ms);
    };
    at_most(MONGOC_URI_CONNECTTIMEOUTMS, kWatchConnectMs);
    at_most(MONGOC_URI_SERVERSELECTIONTIMEOUTMS, kWatchConnectMs);
    // Not "at most": a shorter socket timeout than a getMore's await would fail it.
    mongoc_uri_set_option_as_int32(uri.get(), MONGOC_URI_SOCKETTIMEOUTMS, kWatchSocketMs);
    mongoc_uri_set_option_as_bool(uri.get(), MONGOC_URI_SERVERSELECTIONTRYONCE, true);
    Client client(mongoc_client_new_from_uri(uri.get()));
    if (!client) return client;
    mongoc_client_set_error_api(client.get(), MONGOC_ERROR_API_VERSION_2);
    mongoc_client_set_appname(client.get(), "mongomq");  // false if the URI names one: fine
    mongoc_apm_callbacks_t *callbacks = mongoc_apm_callbacks_new();
    mongoc_apm_set_command_started_cb(callbacks, count_watch_command);
    mongoc_client_set_apm_callbacks(client.get(), callbacks, owner);
    mongoc_apm_callbacks_destroy(callbacks);
    return client;
}

struct StreamFree {
    void operator()(mongoc_change_stream_t *s) const { mongoc_change_stream_destroy(s); }
};
using Stream = std::unique_ptr<mongoc_change_stream_t, StreamFree>;

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

// One queue's waiting claimers: the change-stream watcher thread and the generation
// counter it moves on every event, which sleeping waiters wait on.
class Waiters {
public:
    enum class Mode {
        starting,     // the watcher has not opened its stream yet: back off
        live,         // a stream is open: hints come, the 1 s slice is a safety net
        down,         // the stream failed and will be reopened: back off meanwhile
        unsupported,  // no change streams here (or no watcher): back off, for good
    };

    explicit Waiters(mq_queue *q) : q_(q) {
        try {
            thread_ = std::thread([this] { run(); });
        } catch (...) {  // no thread: waiters back off without hints
            mode_ = Mode::unsupported;
        }
    }

    ~Waiters() {
        try {
            {
                std::lock_guard<std::mutex> lock(mu_);
                stop_ = true;
            }
            cv_.notify_all();
            if (thread_.joinable()) thread_.join();
        } catch (...) {  // a mutex or join that fails: nothing sane is left to do
        }
    }

    Waiters(const Waiters &) = delete;
    Waiters &operator=(const Waiters &) = delete;

    uint64_t generation() {
        std::lock_guard<std::mutex> lock(mu_);
        return gen_;
    }

    Mode mode() {
        std::lock_guard<std::mutex> lock(mu_);
        return mode_;
    }

    // Sleeps until `until`, or until the generation moved past `seen` (a hint), or
    // the queue is interrupted, or `cancel` (may be null) is triggered.
    void sleep(uint64_t seen, Clock::time_point until, const mq_cancel *cancel) {
        if (mode() == Mode::unsupported) {  // no hint will ever come
            sleep_on_interrupt_fd(q_, cancel, until);
            return;
        }
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            if (gen_ != seen || q_->interrupted.load() || cancelled(cancel)) return;
            Clock::time_point now = Clock::now();
            if (now >= until) return;
            cv_.wait_until(lock, std::min(until, now + kTick));
        }
    }

private:
    enum class Outcome {
        stopped,      // waiters_destroy or mq_queue_interrupt: end
        unsupported,  // the server has no change streams: end
        retry,        // reopen after a pause
    };

    // Every event, and every change of mode, moves the generation and wakes the
    // sleepers: they claim again (and re-read the mode).
    void bump(Mode mode) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            gen_++;
            mode_ = mode;
        }
        cv_.notify_all();
    }

    // waiters_destroy, or mq_queue_interrupt: after it no waiter sleeps on this queue
    // again, so the watcher gives its connection back.
    bool stopping() {
        if (q_->interrupted.load()) return true;
        std::lock_guard<std::mutex> lock(mu_);
        return stop_;
    }

    // Waits until `until` unless stopped first; false when stopped.
    bool pause_until(Clock::time_point until) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_until(lock, until, [this] { return stop_; });
        return !stop_;
    }

    void run() noexcept {
        watch_until_done();
        client_.reset();  // the connection goes as the thread ends (interrupt or destroy)
    }

    void watch_until_done() noexcept {
        milliseconds pause = kReopenFirst;
        for (;;) {
            Outcome outcome;
            try {
                outcome = watch(pause);
            } catch (...) {  // bad_alloc and the like: try again later
                outcome = Outcome::retry;
            }
            try {
                if (outcome == Outcome::stopped) return;
                if (outcome == Outcome::unsupported) {
                    bump(Mode::unsupported);
                    return;
                }
                if (mode() != Mode::starting) bump(Mode::down);
                if (!pause_until(Clock::now() + pause)) return;
                pause = std::min(pause * 2, kReopenMax);
            } catch (...) {
                return;
            }
        }
    }

    // What a failed open or getMore means. Connection trouble says nothing about the
    // server's support; any other error before a stream ever opened means there are
    // no change streams here (mongo-java-server without --oplog answers "Unknown
    // error"); after one did, the stream is reopened.
    Outcome failed(bool connection, int code) const {
        if (connection) return Outcome::retry;
        if (means_unsupported(code) || !opened_) return Outcome::unsupported;
        return Outcome::retry;
    }

    Outcome failed(const bson_error_t &error) const {
        bool connection = error.domain == MONGOC_ERROR_SERVER_SELECTION || error.domain == MONGOC_ERROR_STREAM;
        return failed(connection, static_cast<int>(error.code));
    }

    // Opens the change stream on the locks collection and turns its events into
    // bumps until it fails or the queue is destroyed. Resets `pause` once it opened.
    Outcome watch(milliseconds &pause) {
        if (stopping()) return Outcome::stopped;
        if (!client_) {
            client_ = watch_client(q_->client);
            if (!client_) return Outcome::unsupported;
        }
        try {
            fault_point("wait.watch");
        } catch (const Failure &f) {
            return failed(f.status == MQ_ERR_CONNECT, f.server_code);
        }
        Collection locks(mongoc_client_get_collection(client_.get(), q_->db.c_str(), q_->locks.c_str()));
        Bson pipeline;  // every event: they are hints, their content is not read
        BsonPtr opts = own(BCON_NEW("maxAwaitTimeMS", BCON_INT64(kMaxAwaitMs)));
        Stream stream(mongoc_collection_watch(locks.get(), pipeline.get(), opts.get()));
        if (!stream) throw std::bad_alloc();
        bson_error_t error;
        if (mongoc_change_stream_error_document(stream.get(), &error, nullptr)) return failed(error);

        // Open. Whatever changed before the stream started is not in it: the bump
        // makes every waiter claim once more.
        opened_ = true;
        pause = kReopenFirst;
        bump(Mode::live);
        for (;;) {
            if (stopping()) return Outcome::stopped;
            Clock::time_point asked = Clock::now();
            const bson_t *event = nullptr;
            if (mongoc_change_stream_next(stream.get(), &event)) {
                // Only "invalidate" is read: on MongoDB it ends the stream (the
                // collection was dropped or renamed), so open a new one.
                bson_iter_t it;
                if (bson_iter_init_find(&it, event, "operationType") && BSON_ITER_HOLDS_UTF8(&it) &&
                    std::strcmp(bson_iter_utf8(&it, nullptr), "invalidate") == 0)
                    return Outcome::retry;
                bump(Mode::live);
                continue;
            }
            if (mongoc_change_stream_error_document(stream.get(), &error, nullptr)) return failed(error);
            // An empty batch the server did not hold for maxAwaitTimeMS: pace the
            // getMores ourselves.
            if (Clock::now() - asked < milliseconds(kMaxAwaitMs / 2) && !pause_until(asked + kGetMorePeriod))
                return Outcome::stopped;
        }
    }

    mq_queue *q_;
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t gen_ = 0;                 // under mu_
    Mode mode_ = Mode::starting;       // under mu_
    bool stop_ = false;                // under mu_
    bool opened_ = false;              // the watcher thread's own: a stream opened once
    Client client_;                    // the watcher thread's own: made by its first watch
    std::thread thread_;               // last: it starts with every member ready
};

namespace {

// The queue's Waiters, made by its first waiter.
Waiters *waiters_of(mq_queue *q) {
    std::lock_guard<std::mutex> lock(q->waiters_mu);
    if (q->waiters == nullptr) q->waiters = new Waiters(q);
    return q->waiters;
}

}  // namespace

mq_lease *queue_claim_wait(mq_queue *q, const std::string &worker, double visibility, int min_priority,
                           size_t max_events, double timeout, const mq_cancel *cancel, mq_status *status) {
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
        if (mq_lease *lease = queue_claim(q, worker, visibility, min_priority, max_events)) {
            *status = MQ_OK;
            return lease;
        }
        if (w == nullptr || Clock::now() >= deadline) {
            *status = MQ_EMPTY;
            return nullptr;
        }

        double next = queue_next_due(q, min_priority);  // on the queue's clock; 0: none
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
            }
            // Due twice running and still not claimed (another worker took it, or the
            // claim refuses it): the slice bounds the rounds, no spinning.
        }
        was_due = due;
        if (wake > now) w->sleep(seen, wake, cancel);
    }
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
    // Stops and joins the watcher: at most one getMore's maxAwaitTimeMS, or while the
    // server is unreachable the watcher client's timeouts (kWatchConnectMs,
    // kWatchSocketMs).
    delete w;
}

}  // namespace mongomq

using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::null_out;

namespace {

mq_status claim_wait(const char *fn, mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                     size_t max_events, double timeout_s, const mq_cancel *cancel, mq_lease **out, mq_error *err) {
    null_out(out);
    return guard_queue(err, queue, [&] {
        mongomq::check_queue(fn, queue);
        if (out == nullptr) fail_arg(fn, "out is NULL");
        if (worker_id != nullptr) mongomq::check_worker_id(fn, worker_id);
        mongomq::check_seconds(fn, "visibility_s", visibility_s, false);
        mongomq::check_priority(fn, "min_priority", min_priority);
        mongomq::check_max_events(fn, max_events);
        mongomq::check_seconds(fn, "timeout_s", timeout_s, true);
        mq_status status = MQ_EMPTY;
        *out = mongomq::queue_claim_wait(queue, worker_id != nullptr ? worker_id : mongomq::default_worker_id(),
                                         visibility_s, min_priority, max_events, timeout_s, cancel, &status);
        if (status == MQ_INTERRUPTED)
            mongomq::fail(MQ_INTERRUPTED, std::string(fn) + ": the queue was interrupted (mq_queue_interrupt)");
        if (status == MQ_CANCELLED)
            mongomq::fail(MQ_CANCELLED, std::string(fn) + ": the claim was cancelled (mq_cancel_trigger)");
        return status;
    });
}

}  // namespace

extern "C" {

mq_status mq_claim_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                        double timeout_s, mq_lease **out, mq_error *err) {
    return mq_claim_batch_wait(queue, worker_id, visibility_s, min_priority, 1, timeout_s, out, err);
}

mq_status mq_claim_batch_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                              size_t max_events, double timeout_s, mq_lease **out, mq_error *err) {
    return claim_wait(max_events == 1 ? "mq_claim_wait" : "mq_claim_batch_wait", queue, worker_id, visibility_s,
                      min_priority, max_events, timeout_s, nullptr, out, err);
}

mq_status mq_claim_wait_cancel(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                               size_t max_events, double timeout_s, mq_cancel *cancel, mq_lease **out,
                               mq_error *err) {
    return claim_wait("mq_claim_wait_cancel", queue, worker_id, visibility_s, min_priority, max_events, timeout_s,
                      cancel, out, err);
}

mq_status mq_cancel_new(mq_cancel **out, mq_error *err) {
    null_out(out);
    return mongomq::guard(err, nullptr, [&] {
        if (out == nullptr) fail_arg("mq_cancel_new", "out is NULL");
        auto cancel = std::make_unique<mq_cancel>();
        cancel->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (cancel->fd < 0) mongomq::fail(MQ_ERR_INTERNAL, "mq_cancel_new: eventfd failed");
        *out = cancel.release();
        return MQ_OK;
    });
}

// Async-signal-safe, as mq_queue_interrupt.
void mq_cancel_trigger(mq_cancel *cancel) {
    if (cancel == nullptr) return;
    cancel->triggered.store(true);
    if (cancel->fd >= 0) {
        int saved = errno;
        uint64_t one = 1;
        ssize_t written = write(cancel->fd, &one, sizeof one);
        (void)written;  // EAGAIN only when the counter is full: it is readable anyway
        errno = saved;
    }
}

int mq_cancel_triggered(const mq_cancel *cancel) { return cancel != nullptr && cancel->triggered.load() ? 1 : 0; }

void mq_cancel_reset(mq_cancel *cancel) {
    if (cancel == nullptr) return;
    if (cancel->fd >= 0) {
        uint64_t drained;
        ssize_t got = read(cancel->fd, &drained, sizeof drained);  // EAGAIN when never written
        (void)got;
    }
    cancel->triggered.store(false);
}

void mq_cancel_destroy(mq_cancel *cancel) { delete cancel; }

// Async-signal-safe: a lock-free atomic store and write(2), nothing else; errno is
// kept for the interrupted code.
void mq_queue_interrupt(mq_queue *queue) {
    static_assert(std::atomic<bool>::is_always_lock_free, "interrupted must be lock-free in a signal handler");
    if (queue == nullptr) return;
    queue->interrupted.store(true);
    if (queue->interrupt_fd >= 0) {
        int saved = errno;
        uint64_t one = 1;
        ssize_t written = write(queue->interrupt_fd, &one, sizeof one);
        (void)written;  // EAGAIN only when the counter is full: it is readable anyway
        errno = saved;
    }
}

}  // extern "C"
