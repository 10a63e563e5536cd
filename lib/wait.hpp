// Waiting claims (mq_claim_wait, mq_queue_interrupt): lib/wait.cpp.
#pragma once

#include <string>

#include "handles.hpp"

namespace mongomq {

// Claims up to max_events, waiting up to timeout seconds. Sets *status to MQ_OK (and
// returns the lease), MQ_EMPTY at the timeout, MQ_INTERRUPTED, or MQ_CANCELLED when
// `cancel` (may be null) is triggered before a lease is taken. Throws Failure.
mq_lease *queue_claim_wait(mq_queue *q, const std::string &worker, double visibility, int min_priority,
                           size_t max_events, double timeout, const mq_cancel *cancel, mq_status *status);

// Stops and frees q->waiters (the watcher thread, if any). Called by mq_queue_destroy;
// no mq_claim_wait may be running on q then.
void waiters_destroy(mq_queue *q) noexcept;

}  // namespace mongomq
