// partitions_test.go: the Partitions (0.8.0) scenarios of bindings/CONTRACT.md
// (partitions_open, partitions_group_hash, partitions_fifo, partitions_claim_subset,
// partitions_wait_hint; registered in contract_test.go), each on a queue it opens
// with the partitions it needs whatever MONGOMQ_TEST_PARTITIONS says, and
// TestPartitionsExtras (what the Go surface adds: the constant, bad values Go can
// express, a worker's bad list refused at its start).

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// partitionedQueue opens a queue of p partitions in a fresh database (dropped and
// closed at the end), and returns its client too (open for the test).
func partitionedQueue(t *testing.T, p int) (*Client, *Queue) {
	t.Helper()
	c, err := Connect(testURI(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	q, err := c.QueueWith(randomDB(t), "mq", QueueOptions{Partitions: p})
	if err != nil {
		t.Fatalf("QueueWith(Partitions %d): %v", p, err)
	}
	t.Cleanup(func() {
		if err := q.Drop(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Drop: %v", err)
		}
		q.Close()
	})
	return c, q
}

func groupPartition(t *testing.T, group string, p int) int {
	t.Helper()
	k, err := GroupPartition(group, p)
	if err != nil {
		t.Fatalf("GroupPartition(%q, %d): %v", group, p, err)
	}
	return k
}

func partitionsOpen(t *testing.T) {
	c, q := partitionedQueue(t, 4)
	if got := q.Partitions(); got != 4 {
		t.Fatalf("Partitions() = %d, want 4", got)
	}
	if s := stats(t, q); s.Partitions != 4 {
		t.Fatalf("stats partitions %d, want 4 (%s)", s.Partitions, s.JSON)
	}
	db, prefix := splitName(q.Name())
	again, err := c.Queue(db, prefix) // the default, 1
	if err == nil {
		again.Close()
	}
	wantArgError(t, "the 4-partition queue opened with the default (1)", err, "4 partitions")
	again, err = c.QueueWith(db, prefix, QueueOptions{Partitions: 8})
	if err == nil {
		again.Close()
	}
	wantArgError(t, "the 4-partition queue opened with 8", err, "4 partitions")

	// Go's 0 is the default (the zero value), so partitions 0 goes to the library
	// through the shim, as the other languages send it.
	var rq raw.SwigcptrStruct_SS_mq_queue
	err = call("test", func(e raw.Struct_SS_mq_error) { raw.Mqs_queue_new_with(c.c, randomDB(t), "mq", 0, &rq, e) })
	if rq != 0 {
		raw.Mqs_queue_destroy(rq)
	}
	wantArgError(t, "partitions 0", err, "partitions")
	for _, p := range []int{1025, -1} {
		bad, err := c.QueueWith(randomDB(t), "mq", QueueOptions{Partitions: p})
		if err == nil {
			bad.Close()
		}
		wantArgError(t, fmt.Sprintf("partitions %d", p), err, "partitions")
	}

	_, plain := newQueueWith(t, c, QueueOptions{})
	if got := plain.Partitions(); got != 1 {
		t.Fatalf("a queue opened without the option: Partitions() = %d, want 1", got)
	}
}

// newQueueWith opens a queue in a fresh database on c with opts; dropped and closed
// at the end.
func newQueueWith(t *testing.T, c *Client, opts QueueOptions) (*Client, *Queue) {
	t.Helper()
	q, err := c.QueueWith(randomDB(t), "mq", opts)
	if err != nil {
		t.Fatalf("QueueWith(%+v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := q.Drop(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Drop: %v", err)
		}
		q.Close()
	})
	return c, q
}

func partitionsGroupHash(t *testing.T) {
	for _, tc := range []struct {
		group string
		p     int
		want  int
	}{
		{"a", 4, 3}, {"b", 4, 0}, {"customer-17", 4, 1}, {"g1", 4, 1}, {"g2", 4, 3}, {"g3", 4, 0},
		{"a", 16, 11}, {"customer-17", 16, 9}, {"g2", 16, 7},
	} {
		if got := groupPartition(t, tc.group, tc.p); got != tc.want {
			t.Errorf("GroupPartition(%q, %d) = %d, want %d", tc.group, tc.p, got, tc.want)
		}
	}
	for _, g := range []string{"a", "b", "customer-17", "g1", "g2", "g3", "", "é"} {
		if got := groupPartition(t, g, 1); got != 0 {
			t.Errorf("GroupPartition(%q, 1) = %d, want 0", g, got)
		}
	}
}

func partitionsFifo(t *testing.T) {
	_, q := partitionedQueue(t, 4)
	const groups, events = 8, 5
	published := map[string][]int64{}
	for i := 0; i < events; i++ { // interleaved: g1 e0, g2 e0, ..., g8 e0, g1 e1, ...
		for g := 1; g <= groups; g++ {
			group := fmt.Sprintf("g%d", g)
			published[group] = append(published[group], publish(t, q, group, fmt.Sprintf("%s-e%d", group, i), 0))
		}
	}
	got := map[string][]int64{}
	seen := map[int64]bool{}
	for n := 0; n < groups*events; n++ {
		l := claim(t, q, ClaimOptions{})
		g := l.Group()
		if want := groupPartition(t, g, 4); l.Partition() != want {
			t.Fatalf("lease of %s: partition %d, want GroupPartition = %d", g, l.Partition(), want)
		}
		if i := len(got[g]); string(l.Event()) != fmt.Sprintf("%s-e%d", g, i) {
			t.Fatalf("claim %d: %s's event %q, want %s-e%d (publish order)", n, g, l.Event(), g, i)
		}
		if seen[l.Seq()] {
			t.Fatalf("seq %d delivered twice", l.Seq())
		}
		seen[l.Seq()] = true
		got[g] = append(got[g], l.Seq())
		ack(t, q, l)
	}
	claimEmpty(t, q, ClaimOptions{})
	for g, seqs := range got {
		for i := range seqs {
			if seqs[i] != published[g][i] || (i > 0 && seqs[i] <= seqs[i-1]) {
				t.Fatalf("%s's seqs %v, want %v (the publishes', increasing)", g, seqs, published[g])
			}
		}
	}
	if len(seen) != groups*events {
		t.Fatalf("%d distinct seqs, want %d", len(seen), groups*events)
	}
	if s := stats(t, q); s.Messages != 0 || s.Published != groups*events {
		t.Fatalf("after the acks: stats %d messages, published %d; want 0 and %d", s.Messages, s.Published, groups*events)
	}
}

func partitionsClaimSubset(t *testing.T) {
	_, q := partitionedQueue(t, 4)
	if groupPartition(t, "b", 4) != 0 || groupPartition(t, "customer-17", 4) != 1 {
		t.Fatal("b is not in partition 0 or customer-17 not in 1")
	}
	publish(t, q, "b", "b0", 0)
	publish(t, q, "b", "b1", 0)
	publish(t, q, "customer-17", "c0", 0)
	publish(t, q, "customer-17", "c1", 0)
	for i := 0; i < 2; i++ {
		l := claim(t, q, ClaimOptions{Partitions: []int{1}})
		if l.Group() != "customer-17" || string(l.Event()) != fmt.Sprintf("c%d", i) || l.Partition() != 1 {
			t.Fatalf("claim %d in [1]: %s %q (partition %d), want customer-17 c%d", i, l.Group(), l.Event(), l.Partition(), i)
		}
		ack(t, q, l)
	}
	claimEmpty(t, q, ClaimOptions{Partitions: []int{1}})
	wantMessages(t, "b's 2 still there", q, 2)

	// One more event in partition 1 than the contract publishes, so that a worker
	// claiming from every partition would be caught handling it.
	publish(t, q, "customer-17", "c2", 0)
	var mu sync.Mutex
	var handled []string
	w, err := q.Worker(WorkOptions{Partitions: []int{0}, IdleTimeout: time.Second}, func(_ context.Context, l *Lease) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, l.Group()+":"+string(l.Event()))
		return nil
	})
	if err != nil {
		t.Fatalf("Worker(Partitions [0]): %v", err)
	}
	if err := waitWorker(t, w, 30*time.Second); err != nil {
		t.Fatalf("the worker: %v", err)
	}
	if fmt.Sprint(handled) != "[b:b0 b:b1]" {
		t.Fatalf("the worker on [0] handled %v, want [b:b0 b:b1]", handled)
	}
	l := claim(t, q, ClaimOptions{Partitions: []int{1}})
	if l.Group() != "customer-17" || string(l.Event()) != "c2" {
		t.Fatalf("after the worker: %s %q, want customer-17 c2 still there", l.Group(), l.Event())
	}
	ack(t, q, l)

	_, err = q.Claim(context.Background(), ClaimOptions{Partitions: []int{4}})
	wantArgError(t, "partitions [4]", err, "partitions")
	_, err = q.Claim(context.Background(), ClaimOptions{Partitions: []int{0, 0}})
	wantArgError(t, "partitions [0, 0]", err, "partitions")
	_, err = q.Claim(context.Background(), ClaimOptions{Partitions: []int{4}, Wait: time.Second})
	wantArgError(t, "partitions [4], waiting", err, "partitions")
	_, err = q.Claim(context.Background(), ClaimOptions{Partitions: []int{0, 0}, MaxEvents: 5})
	wantArgError(t, "partitions [0, 0], a batch claim", err, "partitions")
}

// waitWorker is w.Wait, failing the test after limit.
func waitWorker(t *testing.T, w *Worker, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		w.Stop()
		t.Fatalf("the worker did not stop by itself within %s", limit)
		return nil
	}
}

func partitionsWaitHint(t *testing.T) {
	_, q := partitionedQueue(t, 4)
	if groupPartition(t, "a", 4) != 3 || groupPartition(t, "b", 4) != 0 {
		t.Fatal("a is not in partition 3 or b not in 0")
	}
	ch := claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second, Partitions: []int{3}})
	time.Sleep(100 * time.Millisecond)
	publish(t, q, "b", "not this", 0) // meanwhile, in partition 0
	time.Sleep(100 * time.Millisecond)
	publish(t, q, "a", "wake", 0)
	r := waitResult(t, ch, 15*time.Second, "waiting claim in [3]")
	if r.err != nil {
		t.Fatalf("waiting claim in [3]: %v", r.err)
	}
	if r.lease.Group() != "a" || string(r.lease.Event()) != "wake" || r.lease.Partition() != 3 {
		t.Fatalf("waiting claim in [3] got %s %q (partition %d), want a's wake", r.lease.Group(), r.lease.Event(), r.lease.Partition())
	}
	if r.took > 5*time.Second {
		t.Fatalf("woken after %v, want well before the 10 s wait", r.took)
	}
	ack(t, q, r.lease)
	l := claim(t, q, ClaimOptions{Partitions: []int{0}})
	if l.Group() != "b" {
		t.Fatalf("b's event: got %s", l.Group())
	}
	ack(t, q, l)
}

// ---- beyond the contract ----------------------------------------------------------------

func TestPartitionsExtras(t *testing.T) {
	t.Run("constants", func(t *testing.T) {
		if PartitionsMax != raw.MQ_PARTITIONS_MAX {
			t.Fatalf("PartitionsMax %d, the library's MQ_PARTITIONS_MAX %d", PartitionsMax, raw.MQ_PARTITIONS_MAX)
		}
	})
	t.Run("group_partition_bad", func(t *testing.T) {
		for _, p := range []int{0, -1, PartitionsMax + 1} {
			_, err := GroupPartition("a", p)
			wantArgError(t, fmt.Sprintf("GroupPartition(a, %d)", p), err, "partitions")
		}
		_, err := GroupPartition("a\x00b", 4)
		wantArgError(t, "a group with a NUL byte", err, "group")
		if k := groupPartition(t, "a", PartitionsMax); k < 0 || k >= PartitionsMax {
			t.Fatalf("GroupPartition(a, %d) = %d", PartitionsMax, k)
		}
	})
	t.Run("claim_bad", func(t *testing.T) {
		_, q := partitionedQueue(t, 4)
		for name, parts := range map[string][]int{
			"partition_count": {0, 1, 2, 3, 0},
			"partitions[0]":   {-1},
			"partitions[1]":   {0, math.MaxInt32 + 1},
		} {
			_, err := q.Claim(context.Background(), ClaimOptions{Partitions: parts})
			wantArgError(t, fmt.Sprint(parts), err, name)
		}
		_, err := q.Claim(context.Background(), ClaimOptions{Partitions: make([]int, PartitionsMax+1)})
		wantArgError(t, "1025 partitions", err, "partitions")
		// Empty is every partition, as nil is.
		publish(t, q, "b", "x", 0)
		l := claim(t, q, ClaimOptions{Partitions: []int{}})
		ack(t, q, l)
	})
	t.Run("worker_bad", func(t *testing.T) {
		_, q := partitionedQueue(t, 4)
		handler := func(context.Context, *Lease) error { return nil }
		for name, parts := range map[string][]int{"partitions[0]": {4}, "partitions[1]": {0, 0}, "partition_count": {0, 1, 2, 3, 0}} {
			_, err := q.Worker(WorkOptions{Partitions: parts}, handler)
			wantArgError(t, fmt.Sprintf("Worker(Partitions %v)", parts), err, name)
			wantArgError(t, fmt.Sprintf("Work(Partitions %v)", parts), q.Work(context.Background(), WorkOptions{Partitions: parts}, handler), name)
		}
	})
	t.Run("one_partition", func(t *testing.T) {
		// A queue of one partition: every lease says 0, and [0] is every partition.
		c, err := Connect(testURI(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, q := newQueueWith(t, c, QueueOptions{Partitions: 1})
		publish(t, q, "a", "x", 0)
		l := claim(t, q, ClaimOptions{Partitions: []int{0}})
		if l.Partition() != 0 || q.Partitions() != 1 {
			t.Fatalf("partition %d of %d, want 0 of 1", l.Partition(), q.Partitions())
		}
		ack(t, q, l)
		_, err = q.Claim(context.Background(), ClaimOptions{Partitions: []int{1}})
		wantArgError(t, "partitions [1] of one", err, "partitions[0]")
	})
	t.Run("closed", func(t *testing.T) {
		_, q := partitionedQueue(t, 4)
		q.Close()
		if q.Partitions() != 4 {
			t.Fatalf("Partitions() after Close = %d, want 4 (fixed at open)", q.Partitions())
		}
		var nilQ *Queue
		var nilL *Lease
		if nilQ.Partitions() != 0 || nilL.Partition() != 0 {
			t.Fatal("a nil queue's or lease's partitions are not 0")
		}
	})
}
