// Partitioned queues (docs/design.md, "Partitioned queues"): a group's partition, the
// partition's part of the filters on locks and counters, and its seqs. With one
// partition every function here leaves the documents and filters exactly as they were
// before partitions (harel's schema). lib/partition.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bson.hpp"
#include "handles.hpp"

namespace mongomq {

// mq_group_partition's hash: FNV-1a 64 of the bytes, fmix64, modulo partitions.
int group_partition(const char *bytes, size_t len, int partitions);
inline int group_partition(const mq_queue *q, const std::string &group) {
    return q->partitions > 1 ? group_partition(group.data(), group.size(), q->partitions) : 0;
}

// Appends {partition: k} to a filter on locks or counters when the queue has more
// than one partition; nothing with one.
void append_partition(const mq_queue *q, bson_t *filter, int partition);

// The counter document of partition k: {_id: "seq"} with one partition (harel's),
// {_id: "seq.<k>", partition: k} with more.
BsonPtr seq_counter_filter(const mq_queue *q, int partition);

// The seq of partition k's n-th event (n from 1): (n - 1) * P + k + 1.
inline int64_t partition_seq(const mq_queue *q, int partition, int64_t n) {
    return (n - 1) * q->partitions + partition + 1;
}

// The partitions a claim takes from, in the order it tries them: through the given
// list (every partition when empty) from the handle's turn (q->claim_turn: the one
// after the partition its last claim took from), or from `hinted` when it is in the
// list; with one partition, {0}. *start (may be null) gets the start's index in the
// list, for claim_took.
std::vector<int> claim_order(mq_queue *q, const std::vector<int> &only, int hinted = -1, size_t *start = nullptr);

// A claim over `order` (claim_order's, from index `start` of a list of n) took from
// order[i]: the handle's next claim starts after it, so every partition that has due
// groups is served in turn, however many empty ones lie between them.
void claim_took(mq_queue *q, size_t start, size_t i, size_t n);

// A claim's partitions (mq_claim_opts.partitions): NULL and 0 is every partition
// (an empty list); else 1..P distinct partitions in 0..P-1. MQ_ERR_ARG naming the
// first that is not.
std::vector<int> check_partition_list(const char *fn, const mq_queue *q, const int *list, size_t count);

// open.partitions (a find of the record and the P = 1 counter), and the record's
// first write (open.partitions_record) when a queue with P > 1 is new. MQ_ERR_ARG when
// the queue was created with another P. Also publish.partitions after mq_queue_drop.
void check_partitions(const class Conn &c, mq_queue *q, const char *name);

}  // namespace mongomq
