// helpers_test.go: what the tests share: the test server's URI, a fresh queue per
// test, and short forms of publish, claim, ack and stats that fail the test.

package mongomq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
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
	q, err := c.Queue(randomDB(t), "mq")
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
	q2, err := c.Queue(db, prefix)
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
