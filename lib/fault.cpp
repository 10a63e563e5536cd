#include "fault.hpp"

#include <atomic>
#include <string>
#include <utility>

#include "error.hpp"

namespace {

struct Hook {
    mongomq_fault_fn fn;
    void *ctx;
};

// The pair is swapped as a whole so a command never sees one hook's fn with another's ctx.
std::atomic<Hook *> g_hook{nullptr};

}  // namespace

extern "C" void mongomq_fault_set(mongomq_fault_fn hook, void *ctx) {
    Hook *fresh = hook != nullptr ? new Hook{hook, ctx} : nullptr;
    // The old hook is leaked on purpose: a command on another thread may still be
    // calling it. Tests install a handful of hooks per process.
    g_hook.exchange(fresh);
}

namespace mongomq {

void fault_point(const char *command) {
    Hook *hook = g_hook.load();
    if (hook == nullptr) return;
    int code = hook->fn(command, hook->ctx);
    if (code == 0) return;
    if (code < 0) fail(MQ_ERR_CONNECT, std::string(command) + ": injected connection failure");
    fail(MQ_ERR_SERVER, std::string(command) + ": injected server error " + std::to_string(code), code);
}

}  // namespace mongomq
