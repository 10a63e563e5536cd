// The queue operations, on arguments already checked by api.cpp. Each throws Failure.
#pragma once

#include <cstdint>
#include <string>

#include "handles.hpp"

namespace mongomq {

double wall_clock();  // seconds since the epoch

void queue_create_indexes(const mq_queue *q);
int64_t queue_publish(mq_queue *q, const std::string &group, const void *event, size_t len, int priority,
                      bool event_is_text);
mq_lease *queue_claim(mq_queue *q, const std::string &worker, double visibility, int min_priority);  // nullptr: none due
mq_status queue_ack(mq_queue *q, const mq_lease *lease);
mq_status queue_nack(mq_queue *q, const mq_lease *lease, double delay);
mq_status queue_extend(mq_queue *q, const mq_lease *lease, double visibility);

}  // namespace mongomq
