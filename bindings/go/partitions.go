// partitions.go: partitioned queues (0.8.0): QueueOptions (Client.QueueWith's),
// Queue.Partitions, GroupPartition, and a claim's list of partitions as the shim
// takes it. (Lease.Partition is in lease.go.)

package mongomq

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// PartitionsMax is the most partitions a queue may have (QueueOptions.Partitions).
const PartitionsMax = 1024

// QueueOptions are the options of Client.QueueWith. The zero value is the
// defaults (what Client.Queue opens).
type QueueOptions struct {
	// Partitions spreads the queue over that many partitions (1..PartitionsMax): a
	// group belongs to partition GroupPartition(group, Partitions), and the commands
	// of its publishes, claims and settlements go to that partition's locks and
	// counters only, which a sharded cluster can place on a shard of their own
	// (`mongomq shard-plan`). FIFO within a group, one lease per group, priorities,
	// schedules and dead letters hold as with one partition; round-robin holds
	// within each partition, and claims take the partitions in turn. Seqs stay
	// unique and increase within a group, but are no longer consecutive across
	// groups.
	//
	// P is fixed by the first open with it (recorded in the queue's counters):
	// opening the queue again with another P, or a queue of one partition that
	// already holds events with P > 1, is ErrInvalidArgument naming both. 0 is the
	// default, 1: one partition, the schema of every queue before 0.8.0.
	Partitions int
}

// Partitions is the queue's number of partitions (1 unless it was opened with
// QueueOptions.Partitions > 1). Like Name, it is fixed when the queue is opened and
// still answers after Close.
func (q *Queue) Partitions() int {
	if q == nil {
		return 0
	}
	return q.partitions
}

// GroupPartition is the partition of group in a queue of partitions partitions
// (the library's mq_group_partition: the 64-bit FNV-1a hash of the group's bytes,
// mixed by MurmurHash3's fmix64, modulo partitions): the same in every language and
// on every machine, and 0 when partitions is 1. partitions outside 1..PartitionsMax
// or a group with a NUL byte is ErrInvalidArgument.
func GroupPartition(group string, partitions int) (int, error) {
	const op = "GroupPartition"
	if err := checkText(op, "group", group); err != nil {
		return 0, err
	}
	if partitions < 1 || partitions > PartitionsMax {
		return 0, argError(op, fmt.Sprintf("partitions is %d, outside 1..%d (PartitionsMax)", partitions, PartitionsMax))
	}
	k := raw.Mq_group_partition(group, partitions)
	if k < 0 {
		return 0, argError(op, fmt.Sprintf("mq_group_partition(%q, %d) refused them", group, partitions))
	}
	return k, nil
}

// packPartitions is a claim's partitions as mqs_claim_in takes them: little-endian
// int32s (none: every partition). The library checks the values (each in 0..P-1,
// none twice, at most P of them); only what an int32 cannot carry is refused here.
func packPartitions(op string, partitions []int) ([]byte, error) {
	if len(partitions) > PartitionsMax {
		return nil, argError(op, fmt.Sprintf("partitions holds %d partitions; a queue has at most %d (PartitionsMax)",
			len(partitions), PartitionsMax))
	}
	b := make([]byte, 4*len(partitions))
	for i, k := range partitions {
		if k < math.MinInt32 || k > math.MaxInt32 {
			return nil, argError(op, fmt.Sprintf("partitions[%d] is %d, outside 0..%d", i, k, PartitionsMax-1))
		}
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(k)))
	}
	return b, nil
}

// checkPartitions is the library's check of a claim's partitions (the same
// messages), for the worker, which refuses a bad option when it starts (as it does
// a bad MinPriority) rather than at its first claim; Claim leaves it to the library.
func checkPartitions(op string, partitions []int, p int) error {
	if len(partitions) > p {
		return argError(op, fmt.Sprintf("partition_count is %d, more than the queue's %d partitions", len(partitions), p))
	}
	seen := make(map[int]bool, len(partitions))
	for i, k := range partitions {
		if k < 0 || k >= p {
			return argError(op, fmt.Sprintf("partitions[%d] is %d, outside 0..%d (the queue has %d partitions)", i, k, p-1, p))
		}
		if seen[k] {
			return argError(op, fmt.Sprintf("partitions[%d] is %d, given twice", i, k))
		}
		seen[k] = true
	}
	return nil
}
