// Cancel and interrupt (docs/design.md, "Waiting claims"): mq_cancel_* (one waiting
// claim's cancel: a flag and an eventfd) and mq_queue_interrupt (every waiting claim
// of a queue handle: its flag and interrupt_fd), and the one eventfd helper both use
// (lib/cancel.hpp). Triggering either is async-signal-safe; the waiters that poll the
// eventfds, or look at the flags every tick, are lib/wait.cpp.
#include "cancel.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "mongomq.h"

namespace mongomq {

int wake_fd_new(const char *fn) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) fail(MQ_ERR_INTERNAL, std::string(fn) + ": eventfd failed");
    return fd;
}

void wake_fd_signal(int fd) noexcept {
    if (fd < 0) return;
    int saved = errno;
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one);
    (void)written;  // EAGAIN only when the counter is full: it is readable anyway
    errno = saved;
}

}  // namespace mongomq

using mongomq::fail_arg;
using mongomq::null_out;

extern "C" {

mq_status mq_cancel_new(mq_cancel **out, mq_error *err) {
    null_out(out);
    return mongomq::guard(err, nullptr, [&] {
        if (out == nullptr) fail_arg("mq_cancel_new", "out is NULL");
        auto cancel = std::make_unique<mq_cancel>();
        cancel->fd = mongomq::wake_fd_new("mq_cancel_new");
        *out = cancel.release();
        return MQ_OK;
    });
}

// Async-signal-safe, as mq_queue_interrupt.
void mq_cancel_trigger(mq_cancel *cancel) {
    if (cancel == nullptr) return;
    cancel->triggered.store(true);
    mongomq::wake_fd_signal(cancel->fd);
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
    mongomq::wake_fd_signal(queue->interrupt_fd);
}

}  // extern "C"
