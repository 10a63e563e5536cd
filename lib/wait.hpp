// Waiting claims (mq_claim_wait and its kin): lib/wait.cpp, with the change-stream
// watcher they share in lib/watcher.cpp (mongomq_watch_set_intervals is there).
// Cancel and interrupt (mq_cancel_*, mq_queue_interrupt): lib/cancel.cpp.
#pragma once

#include <string>
#include <vector>

#include "handles.hpp"

namespace mongomq {

// Claims up to max_events, waiting up to timeout seconds. Sets *status to MQ_OK (and
// returns the lease), MQ_EMPTY at the timeout, MQ_INTERRUPTED, or MQ_CANCELLED when
// `cancel` (may be null) is triggered before a lease is taken. Throws Failure.
// With partitions, only from `only` (every one when empty).
mq_lease *queue_claim_wait(mq_queue *q, const std::string &worker, double visibility, int min_priority,
                           size_t max_events, double timeout, const mq_cancel *cancel, mq_status *status,
                           const std::vector<int> &only = {});

// The exported waiting claims' one body (argument checks, the wait, the statuses):
// mq_claim_wait, mq_claim_batch_wait, mq_claim_wait_cancel and mq_claim_with with a
// timeout or a cancel. `fn` names the caller in messages.
mq_status claim_wait(const char *fn, mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                     size_t max_events, double timeout_s, const mq_cancel *cancel, mq_lease **out, mq_error *err,
                     const int *partitions = nullptr, size_t partition_count = 0);

// The change-stream watcher as q's waiting claims last saw it (docs/design.md,
// "Waiting claims"): "none" (q never waited, so it has no watcher), "starting" (no
// stream opened yet), "live" (a stream is open: waiters are woken by changes), "down"
// (the stream failed and is being reopened), "refused" (the server refused to open
// one; tried again every 60 s), "unsupported" (no change streams here; not tried
// again). In every mode but "live" waiters poll. Thread-safe; a static string.
const char *change_stream_mode(mq_queue *q);

// Stops and frees q->waiters (the watcher thread, if any). Called by mq_queue_destroy;
// no mq_claim_wait may be running on q then.
void waiters_destroy(mq_queue *q) noexcept;

}  // namespace mongomq

// For tests, which link the static library and declare these themselves (not
// exported from the shared one): the retry interval of a refused stream and the time
// before a failing stream is logged, in seconds (0: the defaults, 60 and 30); and
// change_stream_mode for C.
extern "C" void mongomq_watch_set_intervals(double refused_retry_s, double down_log_after_s);
extern "C" const char *mongomq_change_stream_mode(mq_queue *queue);
