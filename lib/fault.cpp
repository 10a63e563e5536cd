#include "fault.hpp"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "error.hpp"
#include "queue.hpp"

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

}  // namespace

extern "C" void mongomq_fault_set(mongomq_fault_fn hook, void *ctx) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_hook = Hook{hook, ctx};
    g_enabled.store(hook != nullptr);
}

extern "C" double mongomq_clock_offset(double t0, double t1, int64_t server_ms) {
    return mongomq::clock_offset(t0, t1, server_ms);
}

namespace mongomq {

void fault_point(const char *command) {
    if (!g_enabled.load(std::memory_order_relaxed)) return;
    Hook hook;
    {
        std::lock_guard<std::mutex> lock(g_mu);
        hook = g_hook;
    }
    t_lose_reply = false;
    if (hook.fn == nullptr) return;
    int code = hook.fn(command, hook.ctx);
    if (code == 0) return;
    if (code == MONGOMQ_FAULT_LOSE_REPLY) {
        t_lose_reply = true;
        return;
    }
    if (code < 0) fail(MQ_ERR_CONNECT, std::string(command) + ": injected connection failure");
    fail(MQ_ERR_SERVER, std::string(command) + ": injected server error " + std::to_string(code), code);
}

void fault_reply(const char *command) {
    if (!t_lose_reply) return;
    t_lose_reply = false;
    fail(MQ_ERR_CONNECT, std::string(command) + ": injected connection failure (the server applied it; reply lost)");
}

}  // namespace mongomq
