// dedup_test.go: the Deduplication (0.6.0) scenarios of TestContract (dedup_same_key,
// dedup_different_keys, dedup_retry_after_lost_reply, dedup_batch, dedup_scope_group,
// dedup_bad_key; registered in contract_test.go) and TestDedupExtras (what Publish and
// PublishBatch return for a duplicate, "" as no key, keys across Queue values, the
// window on a manual clock, the limits' constants).

package mongomq

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// publishKeyed publishes event to group with key and fails the test on an error.
func publishKeyed(t *testing.T, q *Queue, group, event, key string) Published {
	t.Helper()
	p, err := q.PublishWith(group, []byte(event), PublishOptions{DedupKey: key})
	if err != nil {
		t.Fatalf("PublishWith(%q, %q, key %q): %v", group, event, key, err)
	}
	return p
}

// wantAdded fails unless p is an added event (no duplicate, a seq).
func wantAdded(t *testing.T, what string, p Published) {
	t.Helper()
	if p.Duplicate || p.Seq <= 0 {
		t.Fatalf("%s: %+v, want an added event", what, p)
	}
}

// wantDuplicate fails unless p is a duplicate of the event seq.
func wantDuplicate(t *testing.T, what string, p Published, seq int64) {
	t.Helper()
	if !p.Duplicate || p.Seq != seq {
		t.Fatalf("%s: %+v, want a duplicate of seq %d", what, p, seq)
	}
}

func wantMessages(t *testing.T, what string, q *Queue, n int64) {
	t.Helper()
	if s := stats(t, q); s.Messages != n {
		t.Fatalf("%s: stats count %d messages, want %d", what, s.Messages, n)
	}
}

func dedupSameKey(t *testing.T) {
	_, q := newQueue(t)
	first := publishKeyed(t, q, "A", "a", "k")
	wantAdded(t, "first publish with k", first)
	wantDuplicate(t, "k again, in group B", publishKeyed(t, q, "B", "b", "k"), first.Seq)
	wantMessages(t, "after the duplicate", q, 1)

	l := claim(t, q, ClaimOptions{})
	if l.Group() != "A" || l.Seq() != first.Seq || string(l.Event()) != "a" {
		t.Fatalf("claim: group %q seq %d event %q, want A's seq %d \"a\"", l.Group(), l.Seq(), l.Event(), first.Seq)
	}
	ack(t, q, l)
	claimEmpty(t, q, ClaimOptions{}) // B's publish added nothing
	// Acked, and within the 5-minute window: still taken.
	wantDuplicate(t, "k a third time, after the ack", publishKeyed(t, q, "A", "c", "k"), first.Seq)
	wantMessages(t, "after the third publish", q, 0)
}

func dedupDifferentKeys(t *testing.T) {
	_, q := newQueue(t)
	p1 := publishKeyed(t, q, "g", "e1", "k1")
	p2 := publishKeyed(t, q, "g", "e2", "k2")
	wantAdded(t, "k1", p1)
	wantAdded(t, "k2", p2)
	if p2.Seq <= p1.Seq {
		t.Fatalf("seqs %d then %d, want increasing", p1.Seq, p2.Seq)
	}
	wantMessages(t, "two keys", q, 2)
	for i, want := range []Published{p1, p2} {
		l := claim(t, q, ClaimOptions{})
		if l.Seq() != want.Seq || string(l.Event()) != []string{"e1", "e2"}[i] {
			t.Fatalf("claim %d: seq %d event %q, want seq %d", i, l.Seq(), l.Event(), want.Seq)
		}
		ack(t, q, l)
	}
	claimEmpty(t, q, ClaimOptions{})
}

// uniqueKey is a key no other run of any test has used: the test server answers
// each step-down key's insert with an error once, for the life of the server.
func uniqueKey(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "go-" + hex.EncodeToString(b)
}

func dedupRetryAfterLostReply(t *testing.T) {
	_, q := newQueue(t)
	key := uniqueKey(t, "mongomq-test-stepdown-")
	event := []byte("charge order 7 \x00 once")
	first, err := q.PublishWith("g", event, PublishOptions{DedupKey: key})
	switch {
	case err == nil:
		// A server without the test server's hook: the publish went through, and the
		// retry must be its duplicate.
		t.Logf("the server has no step-down hook: the first publish succeeded (seq %d)", first.Seq)
		wantAdded(t, "first publish", first)
	case errors.Is(err, ErrConnect):
		var e *Error
		if !errors.As(err, &e) || e.Status != StatusConnect {
			t.Fatalf("first publish: %v, want an *Error with StatusConnect", err)
		}
		t.Logf("first publish: %v", err)
	default:
		t.Fatalf("first publish: %v, want ErrConnect (a step-down after the insert) or success", err)
	}

	retry, err := q.PublishWith("g", event, PublishOptions{DedupKey: key})
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if !retry.Duplicate || retry.Seq <= 0 || (first.Seq != 0 && retry.Seq != first.Seq) {
		t.Fatalf("retry: %+v, want a duplicate (of seq %d when the first publish reported one)", retry, first.Seq)
	}
	wantMessages(t, "after the retry", q, 1)
	l := claim(t, q, ClaimOptions{})
	if l.Group() != "g" || l.Seq() != retry.Seq || string(l.Event()) != string(event) {
		t.Fatalf("claim: group %q seq %d event %q, want g, the retry's seq %d, %q", l.Group(), l.Seq(), l.Event(), retry.Seq, event)
	}
	ack(t, q, l)
	claimEmpty(t, q, ClaimOptions{}) // exactly one event
}

func dedupBatch(t *testing.T) {
	_, q := newQueue(t)
	out, err := q.PublishBatchWith([]Message{
		{Group: "g1", Event: []byte("g1a"), PublishOptions: PublishOptions{DedupKey: "a"}},
		{Group: "g1", Event: []byte("g1b"), PublishOptions: PublishOptions{DedupKey: "b"}},
		{Group: "g2", Event: []byte("g2a"), PublishOptions: PublishOptions{DedupKey: "a"}},
		{Group: "g2", Event: []byte("g2-")},
	})
	if err != nil {
		t.Fatalf("first batch: %v", err)
	}
	if len(out) != 4 {
		t.Fatalf("first batch: %d outcomes, want 4", len(out))
	}
	for _, i := range []int{0, 1, 3} {
		wantAdded(t, fmt.Sprintf("first batch's event %d", i), out[i])
	}
	// An added event's seq is first+i with one partition; with more, distinct and
	// increasing within its group.
	if q.Partitions() == 1 {
		for _, i := range []int{0, 1, 3} {
			if out[i].Seq != out[0].Seq+int64(i) {
				t.Fatalf("first batch: outcomes %+v, want seqs first+i for the added ones", out)
			}
		}
	} else {
		wantIncreasing(t, q, "first batch's added events", []string{"g1", "g1", "g2"}, []int64{out[0].Seq, out[1].Seq, out[3].Seq})
	}
	wantDuplicate(t, "first batch's third event (key a again)", out[2], out[0].Seq)

	again, err := q.PublishBatchWith([]Message{
		{Group: "g1", Event: []byte("g1b again"), PublishOptions: PublishOptions{DedupKey: "b"}},
		{Group: "g3", Event: []byte("g3c"), PublishOptions: PublishOptions{DedupKey: "c"}},
	})
	if err != nil {
		t.Fatalf("second batch: %v", err)
	}
	if len(again) != 2 {
		t.Fatalf("second batch: %d outcomes, want 2", len(again))
	}
	wantDuplicate(t, "second batch's first event (key b)", again[0], out[1].Seq)
	wantAdded(t, "second batch's second event (key c)", again[1])
	wantMessages(t, "after both batches", q, 4)

	// The events in the queue are the added ones, with their bytes.
	evs, err := q.Peek("", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Group+":"+string(e.Event))
	}
	if q.Partitions() > 1 {
		sort.Strings(got) // Peek goes by seq, and seqs follow the publishes within a partition only
	}
	if strings.Join(got, ",") != "g1:g1a,g1:g1b,g2:g2-,g3:g3c" {
		t.Fatalf("queued events %v, want g1a, g1b, g2-, g3c", got)
	}
}

func dedupScopeGroup(t *testing.T) {
	_, q := newQueue(t)
	if err := q.SetDedupScope(DedupScopeGroup); err != nil {
		t.Fatalf("SetDedupScope(DedupScopeGroup): %v", err)
	}
	a := publishKeyed(t, q, "A", "a", "k")
	b := publishKeyed(t, q, "B", "b", "k")
	wantAdded(t, "k in A", a)
	wantAdded(t, "k in B", b)
	if a.Seq == b.Seq {
		t.Fatalf("A and B got one seq %d", a.Seq)
	}
	wantMessages(t, "k in two groups", q, 2)
	wantDuplicate(t, "k again in A", publishKeyed(t, q, "A", "a2", "k"), a.Seq)
	wantMessages(t, "after the duplicate", q, 2)
}

func dedupBadKey(t *testing.T) {
	_, q := newQueue(t)
	long := strings.Repeat("k", DedupKeyMax+1)
	// Go's "" is no key (the zero value), so the empty key goes to the library through
	// the shim as a key (has_key 1), as the other languages send it.
	wantArgError(t, "an empty key", q.run("test", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		var seq int64
		raw.Mqs_publish(h, "g", []byte("x"), 0, 0, 1, "", nil, &seq, e)
	}), "dedup_key")
	_, err := q.PublishWith("g", []byte("x"), PublishOptions{DedupKey: long})
	wantArgError(t, "a key of 513 bytes", err, "dedup_key")
	_, err = q.Publish("g", []byte("x"), PublishOptions{DedupKey: long})
	wantArgError(t, "a key of 513 bytes (Publish)", err, "dedup_key")
	_, err = q.PublishBatchWith([]Message{{Group: "g", Event: []byte("x"), PublishOptions: PublishOptions{DedupKey: long}}})
	wantArgError(t, "a key of 513 bytes in a batch", err, "dedup_key")
	_, err = q.PublishWith("g", []byte("x"), PublishOptions{DedupKey: "a\x00b"})
	wantArgError(t, "a key with a NUL byte", err, "DedupKey")
	wantArgError(t, "a window of 0.5 s", q.SetDedupWindow(500*time.Millisecond), "dedup_window")
	wantArgError(t, "a window of 8 days", q.SetDedupWindow(8*24*time.Hour), "dedup_window")
	wantArgError(t, "scope 2", q.SetDedupScope(2), "scope")
	wantMessages(t, "after the bad arguments", q, 0)
}

// ---- beyond the contract ----------------------------------------------------------------

func TestDedupExtras(t *testing.T) {
	t.Run("plain_returns", dedupPlainReturns)
	t.Run("empty_is_none", dedupEmptyIsNone)
	t.Run("across_handles", dedupAcrossHandles)
	t.Run("window_on_manual_clock", dedupWindowOnManualClock)
	t.Run("limits", dedupLimits)
}

// Publish and PublishBatch keep their int64: a duplicate's is the seq of the event
// that holds the key, and no error.
func dedupPlainReturns(t *testing.T) {
	_, q := newQueue(t)
	seq, err := q.Publish("g", []byte("x"), PublishOptions{DedupKey: "k"})
	if err != nil || seq <= 0 {
		t.Fatalf("Publish with k: %d, %v", seq, err)
	}
	again, err := q.Publish("h", []byte("y"), PublishOptions{DedupKey: "k"})
	if err != nil || again != seq {
		t.Fatalf("Publish with k again: %d, %v; want %d and no error", again, err, seq)
	}
	first, err := q.PublishBatch([]Message{
		{Group: "g", Event: []byte("dup"), PublishOptions: PublishOptions{DedupKey: "k"}},
		{Group: "g", Event: []byte("new"), PublishOptions: PublishOptions{DedupKey: "k2"}},
	})
	if err != nil || first <= seq {
		t.Fatalf("PublishBatch with a duplicate: %d, %v; want a first seq after %d and no error", first, err, seq)
	}
	evs, err := q.Peek("g", 10)
	if err != nil || len(evs) != 2 || evs[1].Seq != first+1 || string(evs[1].Event) != "new" {
		t.Fatalf("Peek(g): %+v, %v; want x and new at seq %d", evs, err, first+1)
	}
	// Without a key PublishWith is Publish.
	p, err := q.PublishWith("g", []byte("z"), PublishOptions{})
	if err != nil || p.Duplicate || p.Seq <= first {
		t.Fatalf("PublishWith without a key: %+v, %v", p, err)
	}
}

// DedupKey "" is no key: the same publish twice adds two events.
func dedupEmptyIsNone(t *testing.T) {
	_, q := newQueue(t)
	a := publishKeyed(t, q, "g", "x", "")
	b := publishKeyed(t, q, "g", "x", "")
	wantAdded(t, "first", a)
	wantAdded(t, "second", b)
	out, err := q.PublishBatchWith([]Message{{Group: "g", Event: []byte("x")}, {Group: "g", Event: []byte("x")}})
	if err != nil || len(out) != 2 || out[0].Duplicate || out[1].Duplicate || out[1].Seq != out[0].Seq+1 {
		t.Fatalf("a batch without keys: %+v, %v", out, err)
	}
	wantMessages(t, "no keys", q, 4)
}

// A key is the queue's, not the Queue value's: another handle (another process)
// finds it taken; UTF-8 keys of DedupKeyMax bytes are keys.
func dedupAcrossHandles(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	key := strings.Repeat("é", DedupKeyMax/2) // 512 bytes
	p := publishKeyed(t, q, "g", "x", key)
	wantAdded(t, "a key of 512 bytes", p)
	wantDuplicate(t, "the key through another handle", publishKeyed(t, q2, "g", "x", key), p.Seq)
	_, err := q.PublishWith("g", []byte("x"), PublishOptions{DedupKey: "\xff\xfe"})
	wantArgError(t, "a key that is not UTF-8", err, "dedup_key")
}

// On a manual clock: an acked event's key is taken within the window and free past
// it (the publish that finds it expired removes it); a key whose event is still
// queued stays taken past the window.
func dedupWindowOnManualClock(t *testing.T) {
	_, q := newQueue(t)
	start := time.Date(2032, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := NewManualClock(start)
	defer clock.Close()
	if err := q.SetClock(clock); err != nil {
		t.Fatal(err)
	}
	if err := q.SetDedupWindow(10 * time.Second); err != nil {
		t.Fatalf("SetDedupWindow(10s): %v", err)
	}
	acked := publishKeyed(t, q, "a", "x", "acked")
	queued := publishKeyed(t, q, "b", "y", "queued")
	l := claim(t, q, ClaimOptions{})
	if l.Seq() != acked.Seq {
		t.Fatalf("claimed seq %d, want %d", l.Seq(), acked.Seq)
	}
	ack(t, q, l)
	clock.Advance(9 * time.Second)
	wantDuplicate(t, "the acked key within the window", publishKeyed(t, q, "a", "x", "acked"), acked.Seq)
	clock.Advance(2 * time.Second)
	again := publishKeyed(t, q, "a", "x", "acked")
	wantAdded(t, "the acked key past the window", again)
	if again.Seq <= queued.Seq {
		t.Fatalf("the key's new event got seq %d, want a new seq", again.Seq)
	}
	wantDuplicate(t, "the queued key past the window", publishKeyed(t, q, "b", "y", "queued"), queued.Seq)
	wantMessages(t, "the queued event and the new one", q, 2)
}

// The package's constants are the header's, and the scope's names.
func dedupLimits(t *testing.T) {
	if DedupKeyMax != raw.MQ_DEDUP_KEY_MAX || int(DedupScopeQueue) != raw.MQ_DEDUP_SCOPE_QUEUE ||
		int(DedupScopeGroup) != raw.MQ_DEDUP_SCOPE_GROUP || int(StatusDuplicate) != raw.MQ_DUPLICATE {
		t.Fatalf("constants differ from the header's: key max %d/%d, scopes %d/%d %d/%d, duplicate %d/%d",
			DedupKeyMax, raw.MQ_DEDUP_KEY_MAX, DedupScopeQueue, raw.MQ_DEDUP_SCOPE_QUEUE,
			DedupScopeGroup, raw.MQ_DEDUP_SCOPE_GROUP, StatusDuplicate, raw.MQ_DUPLICATE)
	}
	if DedupScopeQueue.String() != "queue" || DedupScopeGroup.String() != "group" || DedupScope(7).String() != "DedupScope(7)" {
		t.Fatalf("scope names: %v %v %v", DedupScopeQueue, DedupScopeGroup, DedupScope(7))
	}
	_, q := newQueue(t)
	for _, d := range []time.Duration{DedupWindowMin, DefaultDedupWindow, DedupWindowMax} {
		if err := q.SetDedupWindow(d); err != nil {
			t.Errorf("SetDedupWindow(%v): %v", d, err)
		}
	}
	if err := q.SetDedupScope(DedupScopeQueue); err != nil {
		t.Errorf("SetDedupScope(DedupScopeQueue): %v", err)
	}
}
