// The change-stream watcher (docs/design.md, "Waiting claims"): one change stream per
// client and database, watched by a thread of its own and shared by every waiting
// queue handle of that client there; each change on a handle's locks collection is a
// hint for its Waiters (lib/waiters.hpp: it wakes one sleeper). Where the server has
// no change streams, or refuses them, the watcher sets its waiters' mode so that they
// back off instead (lib/wait.cpp), and says so once through libmongoc's log (and again
// when a stream opens after all). Here too: the watcher's own client, the server
// errors that mean "unsupported", "refused" or "try again", and the registry of
// watchers in mq_client.
#include "watcher.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "bson.hpp"
#include "client.hpp"
#include "error.hpp"
#include "fault.hpp"
#include "handles.hpp"
#include "mongomq.h"
#include "partition.hpp"
#include "store.hpp"
#include "waiters.hpp"

namespace mongomq {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The watcher: how long the server may hold an empty getMore, and how often it
// sends one at most when the server does not hold it (mongo-java-server answers at
// once: without this the watcher would send thousands of getMores a second).
constexpr int64_t kMaxAwaitMs = 200;
constexpr milliseconds kGetMorePeriod{30};  // a hint within ~30 ms there
// Pauses before reopening a stream that failed: doubling, capped.
constexpr milliseconds kReopenFirst{100};
constexpr milliseconds kReopenMax{5000};
// A refused open (below) is tried again this often, not never: an operator may grant
// the privilege or enable change streams, and one aggregate a minute costs nothing.
constexpr milliseconds kRefusedRetry{60000};
// A stream failing with transient errors for this long is logged (once): longer than
// an election (about 12 s), so a failover passes unlogged.
constexpr milliseconds kDownLogAfter{30000};

// The two above, shortened by tests (mongomq_watch_set_intervals); 0: the default.
std::atomic<int64_t> g_refused_retry_ms{0};
std::atomic<int64_t> g_down_log_after_ms{0};

milliseconds refused_retry() {
    int64_t ms = g_refused_retry_ms.load();
    return ms > 0 ? milliseconds(ms) : kRefusedRetry;
}

milliseconds down_log_after() {
    int64_t ms = g_down_log_after_ms.load();
    return ms > 0 ? milliseconds(ms) : kDownLogAfter;
}

// "60 s", "0.3 s": for the log.
std::string seconds_text(Clock::duration d) {
    double s = std::chrono::duration<double>(d).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
    return buf;
}

// Server error codes that mean "no change streams on this deployment", for good:
// 40573 ($changeStream on a standalone), 115 CommandNotSupported, 20
// IllegalOperation, 40324 unknown pipeline stage (servers before 3.6, FerretDB, Cosmos
// DB accounts before 3.6: "Unrecognized pipeline stage name: $changeStream").
bool means_unsupported(int code) { return code == 40573 || code == 115 || code == 20 || code == 40324; }

// Server error codes that mean "the server, or the way to it, failed this time", not
// "this deployment refuses change streams": the open is tried again with back-off.
// From MongoDB's src/mongo/base/error_codes.yml and its categories, and the change
// streams specification's resumable errors (libmongoc 1.23, _is_resumable_error).
bool means_transient(int code) {
    static constexpr int kCodes[] = {
        6, 7, 89, 9001, 202,       // NetworkError: HostUnreachable, HostNotFound, NetworkTimeout,
                                   // SocketException, NetworkInterfaceExceededTimeLimit
        10107, 13435, 13436, 189,  // NotPrimaryError: NotWritablePrimary, NotPrimaryNoSecondaryOk,
        11602,                     // NotPrimaryOrSecondary, PrimarySteppedDown, InterruptedDueToReplStateChange
        91, 11600,                 // ShutdownError: ShutdownInProgress, InterruptedAtShutdown
        11601, 24, 50, 262,        // Interruption: Interrupted, LockTimeout, MaxTimeMSExpired, ExceededTimeLimit
        133, 134, 216, 402,        // FailedToSatisfyReadPreference, ReadConcernMajorityNotAvailableYet,
                                   // ElectionInProgress, ResourceExhausted
        13388, 63, 150, 234,       // a mongos's stale routing (StaleConfig, StaleShardVersion,
                                   // StaleEpoch), RetryChangeStream
        43,                        // CursorNotFound
        26,                        // NamespaceNotFound: a dropped collection not made again yet
                                   // (MongoDB 3.6 refuses a stream on a missing collection)
    };
    return std::find(std::begin(kCodes), std::end(kCodes), code) != std::end(kCodes);
}

// The watcher's own connection: a single-threaded client on a copy of the queue's
// URI, not one of the pool's. It is held for as long as the queue lives, so it must
// not starve the pool; and its timeouts are the watcher's, so that waiters_destroy
// never waits long for a watcher stuck on an unreachable server: a pooled client
// would block for serverSelectionTimeoutMS (30 s by default), twice when libmongoc
// resumes the stream, and a getMore on a half-open connection for socketTimeoutMS
// (5 min). Its commands count in mq_client_command_count like the pool's.
constexpr int32_t kWatchConnectMs = 2000;  // connect, select a server
constexpr int32_t kWatchSocketMs = 5000;   // any one reply (> kMaxAwaitMs)

void count_watch_command(const mongoc_apm_command_started_t *event) {
    auto *client = static_cast<mq_client *>(mongoc_apm_command_started_get_context(event));
    client->commands.fetch_add(1, std::memory_order_relaxed);
    observe_command(event);
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
    // The primary, whatever the URI says, and no read concern of the URI's: a change
    // stream only ever returns majority-committed changes (docs/design.md,
    // "Deployments").
    mongoc_uri_set_read_prefs_t(uri.get(), owner->read_prefs);
    std::unique_ptr<mongoc_read_concern_t, void (*)(mongoc_read_concern_t *)> no_level(mongoc_read_concern_new(),
                                                                                       mongoc_read_concern_destroy);
    if (!no_level) throw std::bad_alloc();
    mongoc_uri_set_read_concern(uri.get(), no_level.get());
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

}  // namespace

// One change stream for every waiting queue handle of one client on one database (a
// thread and a connection of its own). It follows the locks collection of each: with
// one collection, a collection stream on it; with several, a database stream whose
// $match keeps their collections' events. Each event is a hint for the handles of its
// collection (for all of them when the event names none: mongo-java-server's don't).
class Watcher {
public:
    Watcher(mq_client *client, std::string db) : client_(client), db_(std::move(db)) {
        try {
            thread_ = std::thread([this] { run(); });
        } catch (...) {  // no thread: waiters back off without hints
            mode_ = Waiters::Mode::unsupported;
        }
    }

    ~Watcher() {
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

    Watcher(const Watcher &) = delete;
    Watcher &operator=(const Watcher &) = delete;

    void subscribe(Waiters *w) {
        std::lock_guard<std::mutex> lock(mu_);
        const std::string &coll = w->queue()->locks;
        subs_.push_back(w);
        // Already followed by the open stream: live at once. Otherwise the stream is
        // reopened to follow it too, and the reopen makes it live. A handle joining a
        // watcher that is down or refused is so too (its next open decides for all).
        bool followed = std::find(streamed_.begin(), streamed_.end(), coll) != streamed_.end();
        if (mode_ != Waiters::Mode::starting && (mode_ != Waiters::Mode::live || followed)) w->set_mode(mode_);
        if (!followed) changed_ = true;
        cv_.notify_all();
    }

    // True when no handle is left (the caller then destroys the watcher).
    bool unsubscribe(Waiters *w) {
        std::lock_guard<std::mutex> lock(mu_);
        subs_.erase(std::remove(subs_.begin(), subs_.end(), w), subs_.end());
        return subs_.empty();
    }

private:
    enum class Outcome {
        stopped,      // destroyed: end
        idle,         // every handle is interrupted: give the connection back, wait
        changed,      // the collections to follow changed: reopen now
        unsupported,  // the server has no change streams: end
        refused,      // the server refused the open: try again after kRefusedRetry
        retry,        // reopen after a pause
    };

    // What the log has said last (the watcher thread's own): a line goes out once per
    // change, never per retry.
    enum class Said { nothing, down, refused };

    // Under mu_.
    void set_mode_locked(Waiters::Mode mode) {
        mode_ = mode;
        for (Waiters *w : subs_) w->set_mode(mode);
    }

    void set_mode(Waiters::Mode mode) {
        std::lock_guard<std::mutex> lock(mu_);
        set_mode_locked(mode);
    }

    bool stopping() {
        std::lock_guard<std::mutex> lock(mu_);
        return stop_;
    }

    // The locks collections of the handles not interrupted (interrupted ones never
    // sleep again), sorted and distinct.
    std::vector<std::string> wanted_locked() {
        std::vector<std::string> colls;
        for (Waiters *w : subs_)
            if (!w->queue()->interrupted.load()) colls.push_back(w->queue()->locks);
        std::sort(colls.begin(), colls.end());
        colls.erase(std::unique(colls.begin(), colls.end()), colls.end());
        return colls;
    }

    // Waits until `until` unless stopped first; false when stopped.
    bool pause_until(Clock::time_point until) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_until(lock, until, [this] { return stop_; });
        return !stop_;
    }

    void run() noexcept {
        milliseconds pause = kReopenFirst;
        for (;;) {
            Outcome outcome;
            try {
                outcome = watch(pause);
            } catch (...) {  // bad_alloc and the like: try again later
                outcome = Outcome::retry;
                problem_ = "out of memory or a library error";
            }
            try {
                switch (outcome) {
                    case Outcome::stopped:
                        conn_.reset();
                        return;
                    case Outcome::unsupported:
                        conn_.reset();
                        log_warning("change streams are not available on database \"" + db_ + "\" (" + problem_ +
                                    "): waiting claims poll the locks instead, backing off 5 ms to 50 ms; not "
                                    "tried again until this client's waiting queue handles there are destroyed");
                        set_mode(Waiters::Mode::unsupported);
                        return;
                    case Outcome::changed:
                        break;
                    case Outcome::idle: {
                        // No handle will sleep again until a new one subscribes: give
                        // the connection back and send nothing meanwhile.
                        conn_.reset();
                        std::unique_lock<std::mutex> lock(mu_);
                        streamed_.clear();
                        cv_.wait(lock, [this] { return stop_ || changed_; });
                        if (stop_) return;
                        break;
                    }
                    case Outcome::refused: {
                        // Nothing to hold a connection for until the next try.
                        conn_.reset();
                        failing();
                        if (said_ != Said::refused) {
                            said_ = Said::refused;
                            log_warning("change streams refused on database \"" + db_ + "\" (" + problem_ +
                                        "): waiting claims poll the locks instead, backing off 5 ms to 50 ms; "
                                        "the stream is tried again every " +
                                        seconds_text(refused_retry()));
                        }
                        std::unique_lock<std::mutex> lock(mu_);
                        streamed_.clear();
                        if (mode_ != Waiters::Mode::refused) set_mode_locked(Waiters::Mode::refused);
                        lock.unlock();
                        if (!pause_until(Clock::now() + refused_retry())) return;
                        break;
                    }
                    case Outcome::retry: {
                        failing();
                        if (said_ == Said::nothing && Clock::now() - failing_since_ >= down_log_after()) {
                            said_ = Said::down;
                            log_warning("change stream on database \"" + db_ + "\" down for " +
                                        seconds_text(Clock::now() - failing_since_) + " (" + problem_ +
                                        "): waiting claims poll the locks meanwhile, backing off 5 ms to 50 ms; "
                                        "the stream is reopened with back-off up to 5 s");
                        }
                        std::unique_lock<std::mutex> lock(mu_);
                        streamed_.clear();
                        if (mode_ != Waiters::Mode::starting && mode_ != Waiters::Mode::down)
                            set_mode_locked(Waiters::Mode::down);
                        lock.unlock();
                        if (!pause_until(Clock::now() + pause)) return;
                        pause = std::min(pause * 2, kReopenMax);
                        break;
                    }
                }
            } catch (...) {
                return;
            }
        }
    }

    // The log's state, on the watcher thread: when the failures began (since the last
    // open stream, or the start), and the line that ends them.
    void failing() {
        if (!failing_) failing_since_ = Clock::now();
        failing_ = true;
    }

    // A stream opened: says so if the log said it was down or refused.
    void opened() {
        if (said_ != Said::nothing) {
            log_warning("change streams on database \"" + db_ + "\" are live again (" +
                        (said_ == Said::refused ? "refused" : "down") + " for " +
                        seconds_text(Clock::now() - failing_since_) + "): waiting claims are woken by changes again");
        }
        said_ = Said::nothing;
        failing_ = false;
    }

    // What a failed open or getMore means (problem_ keeps its words for the log).
    // "No change streams here" ends the watcher: the codes of means_unsupported, and a
    // server error reply with no code at all (mongo-java-server without --oplog:
    // "Unknown error"). A connection error, or a transient server error
    // (means_transient, or labelled ResumableChangeStreamError), is retried with
    // back-off, before and after a stream ever opened: a step-down, a rolling restart.
    // Any other server error on an open is a refusal for this deployment (13
    // Unauthorized: no changeStream privilege; 376 ChangeStreamNotEnabled; Cosmos DB's
    // 2 BadValue for a pipeline it does not accept; DocumentDB without
    // modifyChangeStreams, whose code AWS does not document), tried again slowly. On
    // a stream that was open, such an error is retried with back-off: the deployment
    // has change streams, and the reopen decides.
    Outcome failed(bool server, int code, bool has_code, bool resumable, bool was_open, const std::string &message) {
        problem_ = server ? (has_code ? "server error " + std::to_string(code) + ": " : "server error without a code: ")
                          : std::string();
        problem_ = scrub(problem_ + message, client_->password);
        if (!server) return Outcome::retry;
        if (means_unsupported(code) || !has_code) return Outcome::unsupported;
        if (was_open || resumable || means_transient(code)) return Outcome::retry;
        return Outcome::refused;
    }

    Outcome failed(const bson_error_t &error, const bson_t *reply, bool was_open) {
        // Only the server's domains carry a server code; libmongoc's own errors (no
        // server selected, a dropped connection, a failed handshake) are retried.
        bool server = error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_QUERY;
        bson_iter_t it;
        bool has_code = reply == nullptr || bson_empty(reply) ||
                        (bson_iter_init_find(&it, reply, "code") && BSON_ITER_HOLDS_NUMBER(&it));
        bool resumable = reply != nullptr && mongoc_error_has_label(reply, "ResumableChangeStreamError");
        return failed(server, static_cast<int>(error.code), has_code, resumable, was_open, error.message);
    }

    // Opens the stream and turns its events into hints until it fails, the handles
    // change, or the watcher is destroyed. Resets `pause` once it opened.
    Outcome watch(milliseconds &pause) {
        std::vector<std::string> colls;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stop_) return Outcome::stopped;
            changed_ = false;
            colls = wanted_locked();
        }
        if (colls.empty()) return Outcome::idle;
        if (!conn_) {
            conn_ = watch_client(client_);
            if (!conn_) {
                problem_ = "libmongoc could not make the watcher's client from the queue's URI";
                return Outcome::unsupported;
            }
        }
        try {
            fault_point("wait.watch");
        } catch (const Failure &f) {
            return failed(f.status != MQ_ERR_CONNECT, f.server_code, true, false, false, f.message);
        }
        BsonPtr opts = own(BCON_NEW("maxAwaitTimeMS", BCON_INT64(kMaxAwaitMs)));
        Stream stream;
        if (colls.size() == 1) {
            Collection locks(mongoc_client_get_collection(conn_.get(), db_.c_str(), colls[0].c_str()));
            Bson pipeline;  // every event: they are hints, their content is not read
            stream.reset(mongoc_collection_watch(locks.get(), pipeline.get(), opts.get()));
        } else {
            // {pipeline: [{$match: {$or: [{"ns.coll": {$in: colls}}, {operationType:
            // {$in: ["invalidate", "dropDatabase"]}}]}}]}
            Bson in;
            for (size_t i = 0; i < colls.size(); i++) {
                char key[16];
                const char *k;
                bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
                BSON_APPEND_UTF8(in.get(), k, colls[i].c_str());
            }
            BsonPtr pipeline = own(BCON_NEW("pipeline", "[", "{", "$match", "{", "$or", "[",                 //
                                            "{", "ns.coll", "{", "$in", BCON_ARRAY(in.get()), "}", "}",      //
                                            "{", "operationType", "{", "$in", "[", BCON_UTF8("invalidate"),  //
                                            BCON_UTF8("dropDatabase"), "]", "}", "}", "]", "}", "}", "]"));
            std::unique_ptr<mongoc_database_t, void (*)(mongoc_database_t *)> database(
                mongoc_client_get_database(conn_.get(), db_.c_str()), mongoc_database_destroy);
            if (!database) throw std::bad_alloc();
            stream.reset(mongoc_database_watch(database.get(), pipeline.get(), opts.get()));
        }
        if (!stream) throw std::bad_alloc();
        bson_error_t error;
        const bson_t *reply = nullptr;
        if (mongoc_change_stream_error_document(stream.get(), &error, &reply)) return failed(error, reply, false);

        // Open. The log says so first, so whoever reads the mode "live" finds the
        // line already written. Whatever changed before the stream started is not in
        // it: the change of mode makes every waiter claim once more.
        opened();
        {
            std::lock_guard<std::mutex> lock(mu_);
            streamed_ = colls;
            set_mode_locked(Waiters::Mode::live);
        }
        pause = kReopenFirst;
        for (;;) {
            {
                std::lock_guard<std::mutex> lock(mu_);
                if (stop_) return Outcome::stopped;
                if (changed_) return Outcome::changed;
                if (wanted_locked().empty()) return Outcome::idle;
            }
            Clock::time_point asked = Clock::now();
            const bson_t *event = nullptr;
            if (mongoc_change_stream_next(stream.get(), &event)) {
                // "invalidate" ends the stream on MongoDB (the collection or database
                // was dropped or renamed): open a new one.
                bson_iter_t it;
                if (bson_iter_init_find(&it, event, "operationType") && BSON_ITER_HOLDS_UTF8(&it) &&
                    std::strcmp(bson_iter_utf8(&it, nullptr), "invalidate") == 0)
                    return Outcome::retry;
                const char *coll = nullptr;
                if (bson_iter_init(&it, event) && bson_iter_find_descendant(&it, "ns.coll", &it) &&
                    BSON_ITER_HOLDS_UTF8(&it))
                    coll = bson_iter_utf8(&it, nullptr);
                // The lock's _id is its group: with partitions, the hint says which
                // partition changed, so a waiter claims there first (design.md,
                // "Waiting claims").
                const char *group = nullptr;
                uint32_t group_len = 0;
                bson_iter_t id;
                if (bson_iter_init(&id, event) && bson_iter_find_descendant(&id, "documentKey._id", &id) &&
                    BSON_ITER_HOLDS_UTF8(&id))
                    group = bson_iter_utf8(&id, &group_len);
                std::lock_guard<std::mutex> lock(mu_);
                for (Waiters *w : subs_) {
                    if (coll != nullptr && w->queue()->locks != coll) continue;
                    const int parts = w->queue()->partitions;
                    w->hint(parts > 1 && group != nullptr ? group_partition(group, group_len, parts) : -1);
                }
                continue;
            }
            if (mongoc_change_stream_error_document(stream.get(), &error, &reply)) return failed(error, reply, true);
            // An empty batch the server did not hold for maxAwaitTimeMS: pace the
            // getMores ourselves.
            if (Clock::now() - asked < milliseconds(kMaxAwaitMs / 2) && !pause_until(asked + kGetMorePeriod))
                return Outcome::stopped;
        }
    }

    mq_client *client_;
    const std::string db_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Waiters *> subs_;                   // under mu_
    std::vector<std::string> streamed_;             // under mu_: what the open stream follows
    Waiters::Mode mode_ = Waiters::Mode::starting;  // under mu_
    bool changed_ = false;                          // under mu_: a handle needs a reopen
    bool stop_ = false;                             // under mu_
    Client conn_;                                   // the watcher thread's own
    // The watcher thread's own, for the log: the last failure in words, what the log
    // said last, and since when opens have failed.
    std::string problem_;
    Said said_ = Said::nothing;
    bool failing_ = false;
    Clock::time_point failing_since_{};
    std::thread thread_;  // last: it starts with every member ready
};

void watcher_subscribe(Waiters *w) {
    mq_queue *q = w->queue();
    mq_client *client = q->client;
    std::lock_guard<std::mutex> registry(client->watchers_mu);
    Watcher *watcher = nullptr;
    for (auto &entry : client->watchers)
        if (entry.first == q->db) watcher = entry.second;
    if (watcher == nullptr) {
        auto made = std::make_unique<Watcher>(client, q->db);
        client->watchers.emplace_back(q->db, made.get());
        watcher = made.release();
    }
    watcher->subscribe(w);
}

bool watcher_unsubscribe(Waiters *w) noexcept {
    mq_queue *q = w->queue();
    Watcher *last = nullptr;
    try {
        mq_client *client = q->client;
        std::lock_guard<std::mutex> registry(client->watchers_mu);
        for (auto it = client->watchers.begin(); it != client->watchers.end(); ++it) {
            if (it->first != q->db) continue;
            if (it->second->unsubscribe(w)) {
                last = it->second;
                client->watchers.erase(it);
            }
            break;
        }
    } catch (...) {  // a mutex that cannot lock: leak rather than free what a thread may use
        return false;
    }
    delete last;
    return true;
}

}  // namespace mongomq

extern "C" void mongomq_watch_set_intervals(double refused_retry_s, double down_log_after_s) {
    auto ms = [](double s) { return s > 0 ? static_cast<int64_t>(s * 1000 + 0.5) : int64_t{0}; };
    mongomq::g_refused_retry_ms.store(ms(refused_retry_s));
    mongomq::g_down_log_after_ms.store(ms(down_log_after_s));
}
