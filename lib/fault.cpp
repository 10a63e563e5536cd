// Fault injection and observers for the tests (fault.hpp says what each does), and the
// test-only entry points to internal checks (collation, classification of a failed
// write, the mongos refusal, the clock offset). Linked into the static test library only.
#include "fault.hpp"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client.hpp"
#include "error.hpp"
#include "queue.hpp"
#include "store.hpp"

namespace {

struct Hook {
    mongomq_fault_fn fn;
    void *ctx;
};

// Read on every server command: the flag keeps the common case (no hook) to one
// relaxed load; the mutex keeps fn and ctx a pair.
std::atomic<bool> g_enabled{false};
std::mutex g_mu;
Hook g_hook{nullptr, nullptr};
// The command whose reply the hook asked to lose (set by fault_point, read by
// fault_reply on the same thread: one command runs at a time per thread).
thread_local bool t_lose_reply = false;
// The write-concern error code the hook asked this thread's command to end with.
thread_local int t_write_concern_code = 0;
// The server error the hook asked this thread's applied command to end with, and
// whether its reply carries the RetryableWriteError label.
thread_local int t_applied_code = 0;
thread_local bool t_applied_labelled = false;

// Fails as the server would have answered with `code`: through fail_mongoc, so an
// injected step-down error is classified as the library classifies a real one.
[[noreturn]] void fail_server_code(const char *command, int code, bool labelled, const char *how) {
    bson_error_t error;
    bson_set_error(&error, MONGOC_ERROR_SERVER, static_cast<uint32_t>(code), "injected server error %d%s", code, how);
    mongomq::BsonPtr reply = mongomq::own(labelled ? BCON_NEW("ok", BCON_INT32(0), "code", BCON_INT32(code),
                                                              "errorLabels", "[", BCON_UTF8("RetryableWriteError"), "]")
                                                   : BCON_NEW("ok", BCON_INT32(0), "code", BCON_INT32(code)));
    mongomq::fail_mongoc(command, error, reply.get());
}

// The test observers: a flag for the common case (none), the pair under a mutex.
struct CommandObserver {
    mongomq_command_fn fn;
    void *ctx;
};
struct ReadPrefsObserver {
    mongomq_read_prefs_fn fn;
    void *ctx;
};
std::atomic<bool> g_observing{false};
std::mutex g_observer_mu;
CommandObserver g_command_observer{nullptr, nullptr};
ReadPrefsObserver g_read_prefs_observer{nullptr, nullptr};

}  // namespace

extern "C" void mongomq_fault_set(mongomq_fault_fn hook, void *ctx) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_hook = Hook{hook, ctx};
    g_enabled.store(hook != nullptr);
}

extern "C" void mongomq_command_observer_set(mongomq_command_fn fn, void *ctx) {
    std::lock_guard<std::mutex> lock(g_observer_mu);
    g_command_observer = CommandObserver{fn, ctx};
    g_observing.store(g_command_observer.fn != nullptr || g_read_prefs_observer.fn != nullptr);
}

extern "C" void mongomq_read_prefs_observer_set(mongomq_read_prefs_fn fn, void *ctx) {
    std::lock_guard<std::mutex> lock(g_observer_mu);
    g_read_prefs_observer = ReadPrefsObserver{fn, ctx};
    g_observing.store(g_command_observer.fn != nullptr || g_read_prefs_observer.fn != nullptr);
}

extern "C" int mongomq_non_simple_collation(const bson_t *collection_info, char *buf, size_t size) {
    std::string collation = mongomq::non_simple_collation(collection_info);
    if (buf != nullptr && size > 0) bson_strncpy(buf, collation.c_str(), size);
    return collation.empty() ? 0 : 1;
}

extern "C" int mongomq_classify_error(uint32_t domain, uint32_t code, const bson_t *reply, int *server_code) {
    bson_error_t error;
    bson_set_error(&error, domain, code, "classified");
    try {
        mongomq::applied_or_fail("classify", error, reply);
        mongomq::write_concern_note().count = 0;  // applied: noted, nothing thrown
        if (server_code != nullptr) *server_code = static_cast<int>(code);
        return MQ_OK;
    } catch (const mongomq::Failure &f) {
        if (server_code != nullptr) *server_code = f.server_code;
        return f.status;
    }
}

extern "C" int mongomq_sharded_refusal(const mq_queue *queue, const bson_t *entries, char *buf, size_t size) {
    std::vector<mongomq::BsonPtr> docs;
    bson_iter_t it;
    if (bson_iter_init(&it, entries)) {
        while (bson_iter_next(&it)) {
            if (!BSON_ITER_HOLDS_DOCUMENT(&it)) continue;
            const uint8_t *data;
            uint32_t len;
            bson_iter_document(&it, &len, &data);
            docs.emplace_back(bson_new_from_data(data, len));
        }
    }
    std::string refusal = mongomq::sharded_refusal(queue, docs);
    if (buf != nullptr && size > 0) bson_strncpy(buf, refusal.c_str(), size);
    return refusal.empty() ? 0 : 1;
}

extern "C" double mongomq_clock_offset(double t0, double t1, int64_t server_ms) {
    return mongomq::clock_offset(t0, t1, server_ms);
}

namespace mongomq {

void fault_point(const char *command) {
    t_write_concern_code = 0;  // a command before this one may have failed before its fault_reply
    t_applied_code = 0;
    if (!g_enabled.load(std::memory_order_relaxed)) return;
    Hook hook;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        hook = g_hook;
    }
    t_lose_reply = false;
    t_write_concern_code = 0;
    if (hook.fn == nullptr) return;
    int code = hook.fn(command, hook.ctx);
    if (code == 0) return;
    if (code <= MONGOMQ_FAULT_APPLIED_LABELLED(1)) {
        t_applied_code = -(code + 300000);
        t_applied_labelled = true;
        return;
    }
    if (code <= MONGOMQ_FAULT_APPLIED_ERROR(1)) {
        t_applied_code = -(code + 200000);
        t_applied_labelled = false;
        return;
    }
    if (code <= MONGOMQ_FAULT_WRITE_CONCERN(1)) {
        t_write_concern_code = -(code + 100000);
        return;
    }
    if (code == MONGOMQ_FAULT_LOSE_REPLY) {
        t_lose_reply = true;
        return;
    }
    if (code < 0) fail(MQ_ERR_CONNECT, std::string(command) + ": injected connection failure");
    fail_server_code(command, code, false, "");
}

void fault_reply(const char *command) {
    if (t_write_concern_code != 0) {
        int code = t_write_concern_code;
        t_write_concern_code = 0;
        note_write_concern_error(command, code, "injected write concern error " + std::to_string(code));
    }
    if (t_applied_code != 0) {
        int code = t_applied_code;
        t_applied_code = 0;
        fail_server_code(command, code, t_applied_labelled, " (the server applied the command)");
    }
    if (!t_lose_reply) return;
    t_lose_reply = false;
    fail(MQ_ERR_CONNECT, std::string(command) + ": injected connection failure (the server applied it; reply lost)");
}

}  // namespace mongomq

namespace mongomq {

void observe_command(const mongoc_apm_command_started_t *event) {
    if (!g_observing.load(std::memory_order_relaxed)) return;
    CommandObserver observer;
    {
        std::lock_guard<std::mutex> lock(g_observer_mu);
        observer = g_command_observer;
    }
    if (observer.fn == nullptr) return;
    observer.fn(mongoc_apm_command_started_get_command_name(event), mongoc_apm_command_started_get_database_name(event),
                mongoc_apm_command_started_get_command(event), observer.ctx);
}

void observe_read_prefs(const char *command, int read_mode) {
    if (!g_observing.load(std::memory_order_relaxed)) return;
    ReadPrefsObserver observer;
    {
        std::lock_guard<std::mutex> lock(g_observer_mu);
        observer = g_read_prefs_observer;
    }
    if (observer.fn != nullptr) observer.fn(command, read_mode, observer.ctx);
}

}  // namespace mongomq
