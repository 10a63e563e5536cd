// The eventfd that wakes a waiting claim at once (lib/cancel.cpp): the queue's
// interrupt_fd (mq_queue_interrupt) and each mq_cancel's fd (mq_cancel_trigger) are
// made and written by this one helper; lib/wait.cpp polls them.
#pragma once

namespace mongomq {

// A non-blocking, close-on-exec eventfd. Throws Failure MQ_ERR_INTERNAL "<fn>: eventfd
// failed" when none can be made.
int wake_fd_new(const char *fn);

// Makes fd readable, for every poller now and later (nobody drains the interrupt's;
// mq_cancel_reset drains a cancel's). Async-signal-safe: one write(2), errno kept.
// Nothing when fd < 0.
void wake_fd_signal(int fd) noexcept;

}  // namespace mongomq
