// Partitioned queues (lib/partition.hpp; docs/design.md, "Partitioned queues"): the
// hash that places a group, the partition's field in filters, the counters of
// partitions and their seqs, the order a claim tries partitions in, and the record of
// P that every opener checks.
#include "partition.hpp"

#include <algorithm>

#include "error.hpp"
#include "store.hpp"

namespace mongomq {

int group_partition(const char *bytes, size_t len, int partitions) {
    if (partitions <= 1) return 0;
    // FNV-1a 64: simple and stable, but its low bits mix poorly for short keys that
    // differ in their last byte ("g1", "g2", ...), and a modulo reads the low bits; so
    // MurmurHash3's finalizer mixes every bit into every other first. Widths that
    // share a factor (4 and 16) then spread groups independently.
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= static_cast<unsigned char>(bytes[i]);
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return static_cast<int>(h % static_cast<uint64_t>(partitions));
}

void append_partition(const mq_queue *q, bson_t *filter, int partition) {
    if (q->partitions > 1) BSON_APPEND_INT32(filter, "partition", partition);
}

BsonPtr seq_counter_filter(const mq_queue *q, int partition) {
    if (q->partitions <= 1) return own(BCON_NEW("_id", BCON_UTF8("seq")));
    const std::string id = "seq." + std::to_string(partition);
    return own(BCON_NEW("_id", BCON_UTF8(id.c_str()), "partition", BCON_INT32(partition)));
}

std::vector<int> claim_order(mq_queue *q, const std::vector<int> &only, int hinted, size_t *start_out) {
    if (start_out != nullptr) *start_out = 0;
    std::vector<int> all;
    if (only.empty()) {
        all.resize(static_cast<size_t>(q->partitions));
        for (int k = 0; k < q->partitions; k++) all[static_cast<size_t>(k)] = k;
    } else {
        all = only;
    }
    if (all.size() <= 1) return all;
    size_t start;
    auto at = std::find(all.begin(), all.end(), hinted);
    if (hinted >= 0 && at != all.end())
        start = static_cast<size_t>(at - all.begin());  // a hint says where a group became due
    else
        start = static_cast<size_t>(q->claim_turn.load(std::memory_order_relaxed) % all.size());
    if (start_out != nullptr) *start_out = start;
    std::rotate(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(start), all.end());
    return all;
}

std::vector<int> check_partition_list(const char *fn, const mq_queue *q, const int *list, size_t count) {
    std::vector<int> out;
    if (list == nullptr) {
        if (count != 0) fail_arg(fn, "partitions is NULL but partition_count is " + std::to_string(count));
        return out;
    }
    const auto p = static_cast<size_t>(q->partitions);
    if (count == 0) fail_arg(fn, "partitions is not NULL but partition_count is 0 (NULL: every partition)");
    if (count > p)
        fail_arg(fn, "partition_count is " + std::to_string(count) + ", more than the queue's " + std::to_string(p) +
                         " partitions");
    std::vector<bool> seen(p, false);
    for (size_t i = 0; i < count; i++) {
        const int k = list[i];
        if (k < 0 || static_cast<size_t>(k) >= p)
            fail_arg(fn, "partitions[" + std::to_string(i) + "] is " + std::to_string(k) + ", outside 0.." +
                             std::to_string(p - 1) + " (the queue has " + std::to_string(p) + " partitions)");
        if (seen[static_cast<size_t>(k)])
            fail_arg(fn, "partitions[" + std::to_string(i) + "] is " + std::to_string(k) + ", given twice");
        seen[static_cast<size_t>(k)] = true;
        out.push_back(k);
    }
    return out;
}

void claim_took(mq_queue *q, size_t start, size_t i, size_t n) {
    if (n > 1) q->claim_turn.store(static_cast<uint64_t>((start + i + 1) % n), std::memory_order_relaxed);
}

void check_partitions(const Conn &c, mq_queue *q, const char *name) {
    const int want = q->partitions;
    // The record, and the counter of a queue of one partition (which says it holds,
    // or held, events of P = 1).
    BsonPtr filter = own(BCON_NEW("_id", "{", "$in", "[", BCON_UTF8("partitions"), BCON_UTF8("seq"), "]", "}"));
    bool has_seq = false;
    int64_t recorded = 0;
    for (const BsonPtr &doc : find(name, c.counters(), filter.get(), nullptr)) {
        const std::string id = get_string(doc.get(), "_id", name);
        if (id == "seq") has_seq = true;
        if (id == "partitions") {
            recorded = get_int64_or(doc.get(), "n", 0);
            if (recorded < 1 || recorded > MQ_PARTITIONS_MAX)
                fail(MQ_ERR_SERVER, std::string(name) + ": the record of partitions in " + q->db + "." + q->counters +
                                        " holds n " + std::to_string(recorded) + ", outside 1..1024");
        }
    }
    auto other = [&](int64_t n) {
        fail(MQ_ERR_ARG, "mq_queue_new: queue " + q->ns + " has " + std::to_string(n) + " partitions (recorded in " +
                             q->counters + "), not " + std::to_string(want) +
                             ": open it with partitions = " + std::to_string(n) +
                             " (mq_queue_new_with); the number of partitions cannot change in place "
                             "(docs/design.md, \"Partitioned queues\")");
    };
    if (recorded > 0) {
        if (recorded != want) other(recorded);
        return;
    }
    if (want == 1) return;  // one partition: today's schema, no record
    if (has_seq)
        fail(MQ_ERR_ARG, "mq_queue_new: queue " + q->ns + " already holds events of one partition (its counter " +
                             q->counters + " {_id: \"seq\"}), not " + std::to_string(want) +
                             ": the number of partitions cannot change in place; open it with partitions = 1, or "
                             "make the partitioned queue under a new prefix (docs/design.md, \"Partitioned queues\")");
    // The first opener with P > 1 records it; an opener with another P racing it
    // finds the record and fails.
    BsonPtr record = own(BCON_NEW("_id", BCON_UTF8("partitions"), "partition", BCON_INT32(0)));
    BsonPtr set = own(BCON_NEW("$setOnInsert", "{", "n", BCON_INT64(want), "}"));
    FamSpec spec;
    spec.query = record.get();
    spec.update = set.get();
    spec.upsert = true;
    spec.return_new = true;
    const std::string record_name = std::string(name) + "_record";
    BsonPtr doc = retry_duplicate_key([&] { return find_and_modify(record_name.c_str(), c.counters(), spec); });
    const int64_t n = doc ? get_int64_or(doc.get(), "n", 0) : 0;
    if (n != want) other(n);
}

}  // namespace mongomq
