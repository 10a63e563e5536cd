// helpers_test.go: what the tests share: the test server's URI, a fresh queue per
// test (with the partitions MONGOMQ_TEST_PARTITIONS says), and short forms of
// publish, claim, ack and stats that fail the test.

package mongomq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testURI is the server every test runs against. Unset is a failure, not a skip.
func testURI(t testing.TB) string {
	t.Helper()
	uri := os.Getenv("MONGOMQ_TEST_URI")
	if uri == "" {
		t.Fatal("MONGOMQ_TEST_URI is not set: start a server (scripts/test-server.sh start) and export its URI")
	}
	return uri
}

// testPartitionsEnv is the environment variable that says how many partitions the
// contract scenarios' queues have: scripts/test-go.sh runs them with 1 (unset) and
// again with 4 (bindings/CONTRACT.md, "Twice: one partition and four").
const testPartitionsEnv = "MONGOMQ_TEST_PARTITIONS"

// testPartitions is MONGOMQ_TEST_PARTITIONS, 1 when unset.
func testPartitions() (int, error) {
	v := os.Getenv(testPartitionsEnv)
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > PartitionsMax {
		return 0, fmt.Errorf("%s=%q: want 1..%d", testPartitionsEnv, v, PartitionsMax)
	}
	return n, nil
}

// testQueueOptions are the options every test queue is opened with.
func testQueueOptions(t testing.TB) QueueOptions {
	t.Helper()
	n, err := testPartitions()
	if err != nil {
		t.Fatal(err)
	}
	return QueueOptions{Partitions: n}
}

// openQueue opens db.prefix on c with testQueueOptions (every other handle on a
// test's queue must have its partitions).
func openQueue(t testing.TB, c *Client, db, prefix string) (*Queue, error) {
	t.Helper()
	return c.QueueWith(db, prefix, testQueueOptions(t))
}

// partitionOf is a claim's Partitions for group's partition alone on a partitioned
// q, nil (every partition) on a queue of one. A scenario that needs one group's
// lease while groups of other partitions are ready claims with it: which partition
// a claim takes from first is the turn's (a claim starts at the next partition in
// turn), so "the group that waited longest" holds within a partition only.
func partitionOf(t testing.TB, q *Queue, group string) []int {
	t.Helper()
	if q.Partitions() <= 1 {
		return nil
	}
	k, err := GroupPartition(group, q.Partitions())
	if err != nil {
		t.Fatalf("GroupPartition(%q, %d): %v", group, q.Partitions(), err)
	}
	return []int{k}
}

// wantIncreasing fails unless the seqs are distinct and increase within each group
// (groups[i] is seqs[i]'s): what a queue of any number of partitions promises; one
// of one partition also makes them consecutive, which wantIncreasing checks then.
func wantIncreasing(t testing.TB, q *Queue, what string, groups []string, seqs []int64) {
	t.Helper()
	seen := map[int64]bool{}
	last := map[string]int64{}
	for i, s := range seqs {
		if seen[s] || s <= last[groups[i]] {
			t.Fatalf("%s: seqs %v (groups %v): want them distinct and increasing within each group", what, seqs, groups)
		}
		seen[s] = true
		last[groups[i]] = s
		if q.Partitions() == 1 && s != seqs[0]+int64(i) {
			t.Fatalf("%s: seqs %v, want consecutive (one partition)", what, seqs)
		}
	}
}

func randomDB(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "mqt_go_" + hex.EncodeToString(b)
}

// newQueue opens a queue in a fresh database; it is dropped and closed at the end.
func newQueue(t testing.TB) (*Client, *Queue) {
	t.Helper()
	c, err := Connect(testURI(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	q, err := openQueue(t, c, randomDB(t), "mq")
	if err != nil {
		c.Close()
		t.Fatalf("Queue: %v", err)
	}
	t.Cleanup(func() {
		if err := q.Drop(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("Drop: %v", err)
		}
		q.Close()
		c.Close()
	})
	return c, q
}

// reopen opens a second handle on q's queue (another "machine").
func reopen(t testing.TB, q *Queue) *Queue {
	t.Helper()
	c, err := Connect(testURI(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	db, prefix := splitName(q.Name())
	q2, err := openQueue(t, c, db, prefix)
	c.Close() // q2 keeps it alive
	if err != nil {
		t.Fatalf("Queue: %v", err)
	}
	t.Cleanup(func() { q2.Close() })
	return q2
}

func splitName(name string) (string, string) {
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return name[:i], name[i+1:]
		}
	}
	return name, ""
}

func publish(t testing.TB, q *Queue, group string, event string, priority int) int64 {
	t.Helper()
	seq, err := q.Publish(group, []byte(event), PublishOptions{Priority: priority})
	if err != nil {
		t.Fatalf("Publish(%q, %q, %d): %v", group, event, priority, err)
	}
	return seq
}

func claim(t testing.TB, q *Queue, opts ClaimOptions) *Lease {
	t.Helper()
	l, err := q.Claim(context.Background(), opts)
	if err != nil {
		t.Fatalf("Claim(%+v): %v", opts, err)
	}
	return l
}

func claimEmpty(t testing.TB, q *Queue, opts ClaimOptions) {
	t.Helper()
	l, err := q.Claim(context.Background(), opts)
	if err == nil {
		t.Fatalf("Claim(%+v) got group %q seq %d, want ErrEmpty", opts, l.Group(), l.Seq())
	}
	if !errors.Is(err, ErrEmpty) {
		t.Fatalf("Claim(%+v): %v, want ErrEmpty", opts, err)
	}
	// An empty claim says what it looked for (the library's MQ_EMPTY has no message).
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(e.Message, "no event is due") || e.Status.String() != "MQ_EMPTY" {
		t.Fatalf("Claim(%+v): %q (message %q), want an *Error saying \"no event is due\" with MQ_EMPTY", opts, err, e.Message)
	}
}

func ack(t testing.TB, q *Queue, l *Lease) {
	t.Helper()
	if err := q.Ack(l); err != nil {
		t.Fatalf("Ack(group %q seq %d): %v", l.Group(), l.Seq(), err)
	}
}

func stats(t testing.TB, q *Queue) *Stats {
	t.Helper()
	s, err := q.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

// eventually polls cond every 20 ms for up to limit.
func eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
