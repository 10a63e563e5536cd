// contract_test.go: every scenario of bindings/CONTRACT.md as TestContract/<name>,
// and TestExtras (peek, dead list, automatic repair, write-concern errors).

package mongomq

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/testmongo"
)

// TestContract runs every scenario of bindings/CONTRACT.md under its name, each on
// a queue of its own, with MONGOMQ_TEST_PARTITIONS partitions (helpers_test.go; the
// Partitions scenarios open their own).
func TestContract(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"fifo_in_group", fifoInGroup},
		{"one_lease_per_group", oneLeasePerGroup},
		{"every_ready_group_claimed", everyReadyGroupClaimed},
		{"round_robin", roundRobin},
		{"priority_floor", priorityFloor},
		{"priority_reset_on_drain", priorityResetOnDrain},
		{"ack_removes", ackRemoves},
		{"nack_now", nackNow},
		{"nack_delay_parks", nackDelayParks},
		{"stale_owner_lease_lost", staleOwnerLeaseLost},
		{"extend_keeps_lease", extendKeepsLease},
		{"lease_expiry_redelivers", leaseExpiryRedelivers},
		{"unclaim_keeps_attempts", unclaimKeepsAttempts},

		{"bytes_text", bytesText},
		{"bytes_binary_nul", bytesBinaryNul},
		{"bytes_empty", bytesEmpty},
		{"bytes_1mib", bytes1MiB},
		{"group_utf8", groupUTF8},

		{"batch_publish_claim", batchPublishClaim},
		{"scheduled_event", scheduledEvent},
		{"attributes_round_trip", attributesRoundTrip},
		{"dead_letters", deadLetters},
		{"stats_parsed", statsParsed},
		{"repair", repair},
		{"purge_group", purgeGroup},
		{"drop", drop},
		{"lease_deadline", leaseDeadline},

		{"pause_resume", pauseResume},
		{"group_listing", groupListing},

		{"dedup_same_key", dedupSameKey},
		{"dedup_different_keys", dedupDifferentKeys},
		{"dedup_retry_after_lost_reply", dedupRetryAfterLostReply},
		{"dedup_batch", dedupBatch},
		{"dedup_scope_group", dedupScopeGroup},
		{"dedup_bad_key", dedupBadKey},

		{"wait_woken_by_publish", waitWokenByPublish},
		{"wait_cancel_one", waitCancelOne},
		{"interrupt_stops_all", interruptStopsAll},

		{"partitions_open", partitionsOpen},
		{"partitions_group_hash", partitionsGroupHash},
		{"partitions_fifo", partitionsFifo},
		{"partitions_claim_subset", partitionsClaimSubset},
		{"partitions_wait_hint", partitionsWaitHint},

		{"error_bad_argument", errorBadArgument},
		{"error_connect", errorConnect},
		{"error_lease_lost_type", errorLeaseLostType},

		{"small_pool", smallPool},
		{"concurrency_16x2000", concurrency16x2000},

		{"safety_use_after_close", safetyUseAfterClose},
		{"safety_close_twice", safetyCloseTwice},
		{"safety_queue_keeps_client", safetyQueueKeepsClient},
		{"safety_gc_any_order", safetyGCAnyOrder},

		{"manual_clock", manualClock},
		{"log_handler", logHandler},

		{"worker_acks_success", workerAcksSuccess},
		{"worker_nacks_failure_backoff", workerNacksFailureBackoff},
		{"worker_extends_lease", workerExtendsLease},
		{"worker_dead_letters", workerDeadLetters},
		{"worker_graceful_shutdown", workerGracefulShutdown},
		{"worker_stop_after_claim", workerStopAfterClaim},
	}
	for _, s := range scenarios {
		s := s
		t.Run(s.name, s.run)
	}
}

// ---- the harel cases ----------------------------------------------------------------

func fifoInGroup(t *testing.T) {
	_, q := newQueue(t)
	var seqs []int64
	for i := 0; i < 5; i++ {
		seqs = append(seqs, publish(t, q, "g", fmt.Sprintf("e%d", i), 0))
	}
	for i := 0; i < 5; i++ {
		l := claim(t, q, ClaimOptions{})
		if l.Seq() != seqs[i] || string(l.Event()) != fmt.Sprintf("e%d", i) {
			t.Fatalf("claim %d: seq %d event %q, want seq %d event e%d", i, l.Seq(), l.Event(), seqs[i], i)
		}
		ack(t, q, l)
	}
	claimEmpty(t, q, ClaimOptions{})
}

func oneLeasePerGroup(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "A", "a1", 0)
	publish(t, q, "A", "a2", 0)
	publish(t, q, "B", "b1", 0)
	first := claim(t, q, ClaimOptions{})
	second := claim(t, q, ClaimOptions{})
	a, b := first, second
	if q.Partitions() > 1 && first.Group() == "B" {
		// A and B may be in two partitions: the first claim takes from the turn's.
		a, b = second, first
	} else if first.Group() != "A" {
		t.Fatalf("first claim: group %q, want A (it waited longest)", first.Group())
	}
	if a.Group() != "A" || string(a.Event()) != "a1" || b.Group() != "B" || string(b.Event()) != "b1" {
		t.Fatalf("two claims: %s %q then %s %q, want A a1 and B b1 (one lease per group)",
			first.Group(), first.Event(), second.Group(), second.Event())
	}
	claimEmpty(t, q, ClaimOptions{})
	ack(t, q, a)
	ack(t, q, b)
}

func everyReadyGroupClaimed(t *testing.T) {
	_, q := newQueue(t)
	for i := 0; i < 10; i++ {
		publish(t, q, fmt.Sprintf("g%d", i), "x", 0)
	}
	seen := map[string]bool{}
	for i := 0; i < 10; i++ {
		l := claim(t, q, ClaimOptions{})
		if seen[l.Group()] {
			t.Fatalf("group %q claimed twice", l.Group())
		}
		seen[l.Group()] = true
	}
	if len(seen) != 10 {
		t.Fatalf("%d distinct groups, want 10", len(seen))
	}
	claimEmpty(t, q, ClaimOptions{})
}

func roundRobin(t *testing.T) {
	_, q := newQueue(t)
	for i := 0; i < 3; i++ {
		publish(t, q, "A", fmt.Sprintf("a%d", i), 0)
	}
	for i := 0; i < 3; i++ {
		publish(t, q, "B", fmt.Sprintf("b%d", i), 0)
	}
	var got []string
	var groups []string
	for i := 0; i < 6; i++ {
		l := claim(t, q, ClaimOptions{})
		got = append(got, l.Group()+":"+string(l.Event()))
		groups = append(groups, l.Group())
		ack(t, q, l)
	}
	if p := q.Partitions(); p > 1 && partitionOf(t, q, "A")[0] != partitionOf(t, q, "B")[0] {
		// Round-robin holds within a partition; A and B are in two, and each claim
		// starts at the next partition in turn: each group's events come in order, and
		// neither waits through P claims while it has events.
		wantRotation(t, got, groups, p)
		return
	}
	want := "A:a0 B:b0 A:a1 B:b1 A:a2 B:b2"
	if strings.Join(got, " ") != want {
		t.Fatalf("claims %v, want %s", got, want)
	}
}

// wantRotation: claims over groups of distinct partitions of a queue of p: each
// group's events in publish order (<group>:<letter><i>), and a group that still has
// events is never passed over by p claims in a row.
func wantRotation(t *testing.T, got, groups []string, p int) {
	t.Helper()
	next := map[string]int{}
	left := map[string]int{}
	for _, g := range groups {
		left[g]++
	}
	idle := map[string]int{}
	for i, c := range got {
		g := groups[i]
		if want := fmt.Sprintf("%s:%s%d", g, strings.ToLower(g), next[g]); c != want {
			t.Fatalf("claims %v: claim %d is %s, want %s (the group's order)", got, i, c, want)
		}
		next[g]++
		left[g]--
		for h := range left {
			if h == g {
				idle[h] = 0
			} else if left[h] > 0 {
				if idle[h]++; idle[h] >= p {
					t.Fatalf("claims %v: %s passed over by %d claims in a row (%d partitions)", got, h, idle[h], p)
				}
			}
		}
	}
}

func priorityFloor(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "p0", "x", 0)
	publish(t, q, "p1", "x", 1)
	publish(t, q, "p2", "x", 2)
	publish(t, q, "p3", "x", 3)
	l := claim(t, q, ClaimOptions{MinPriority: 3})
	if l.Group() != "p3" {
		t.Fatalf("claim with min priority 3 got %q, want p3", l.Group())
	}
	claimEmpty(t, q, ClaimOptions{MinPriority: 3})
	ack(t, q, l)
	l = claim(t, q, ClaimOptions{MinPriority: 2})
	if l.Group() != "p2" {
		t.Fatalf("claim with min priority 2 got %q, want p2", l.Group())
	}
}

func priorityResetOnDrain(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "first", 4)
	l := claim(t, q, ClaimOptions{MinPriority: 4})
	ack(t, q, l) // drains the group
	publish(t, q, "g", "second", 1)
	claimEmpty(t, q, ClaimOptions{MinPriority: 2})
	l = claim(t, q, ClaimOptions{MinPriority: 1})
	if string(l.Event()) != "second" {
		t.Fatalf("got %q, want second", l.Event())
	}
	ack(t, q, l)
}

func ackRemoves(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	ack(t, q, l)
	if s := stats(t, q); s.Messages != 0 || s.Groups.Total != 0 {
		t.Fatalf("after ack: %d messages, %d groups, want 0, 0", s.Messages, s.Groups.Total)
	}
	claimEmpty(t, q, ClaimOptions{})
}

func nackNow(t *testing.T) {
	_, q := newQueue(t)
	seq := publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	if l.Attempts() != 1 {
		t.Fatalf("first delivery attempts %d, want 1", l.Attempts())
	}
	if err := q.Nack(l, 0); err != nil {
		t.Fatal(err)
	}
	l = claim(t, q, ClaimOptions{})
	if l.Seq() != seq || l.Attempts() != 2 {
		t.Fatalf("after nack: seq %d attempts %d, want seq %d attempts 2", l.Seq(), l.Attempts(), seq)
	}
	ack(t, q, l)
}

func nackDelayParks(t *testing.T) {
	_, q := newQueue(t)
	seq := publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	if err := q.Nack(l, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	claimEmpty(t, q, ClaimOptions{})
	l = claim(t, q, ClaimOptions{Wait: 10 * time.Second})
	if l.Seq() != seq || l.Attempts() != 2 {
		t.Fatalf("after the delay: seq %d attempts %d, want seq %d attempts 2", l.Seq(), l.Attempts(), seq)
	}
	ack(t, q, l)
}

func staleOwnerLeaseLost(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	publish(t, q, "g", "x", 0)
	first := claim(t, q, ClaimOptions{Visibility: 500 * time.Millisecond})
	second := claim(t, q2, ClaimOptions{Wait: 10 * time.Second}) // after the expiry
	if second.Seq() != first.Seq() || second.Attempts() != 2 {
		t.Fatalf("takeover: seq %d attempts %d, want seq %d attempts 2", second.Seq(), second.Attempts(), first.Seq())
	}
	if err := q.Ack(first); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale owner's ack: %v, want ErrLeaseLost", err)
	}
	ack(t, q2, second)
}

func extendKeepsLease(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{Visibility: time.Second})
	if err := q.Extend(l, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the first visibility
	claimEmpty(t, q2, ClaimOptions{})
	ack(t, q, l)
}

func leaseExpiryRedelivers(t *testing.T) {
	_, q := newQueue(t)
	seq := publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{Visibility: 500 * time.Millisecond})
	if l.Attempts() != 1 {
		t.Fatalf("attempts %d, want 1", l.Attempts())
	}
	l.Close() // neither acked nor nacked: left to expire
	l = claim(t, q, ClaimOptions{Wait: 10 * time.Second})
	if l.Seq() != seq || l.Attempts() != 2 {
		t.Fatalf("redelivery: seq %d attempts %d, want seq %d attempts 2", l.Seq(), l.Attempts(), seq)
	}
	ack(t, q, l)
}

func unclaimKeepsAttempts(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	a := publish(t, q, "A", "a", 0)
	publish(t, q, "B", "b", 0)
	// "A then B" is an order within a partition: on a partitioned queue the claims
	// take from A's (B's may be another, whose turn could come first).
	inA := ClaimOptions{Partitions: partitionOf(t, q, "A")}
	l := claim(t, q, inA)
	if l.Group() != "A" || l.Attempts() != 1 {
		t.Fatalf("first claim: group %q attempts %d, want A 1", l.Group(), l.Attempts())
	}
	if err := q.Unclaim(l); err != nil { // no handler ran: not a delivery
		t.Fatal(err)
	}
	l = claim(t, q, inA)
	if l.Group() != "A" || l.Seq() != a || l.Attempts() != 1 {
		t.Fatalf("after unclaim: group %q seq %d attempts %d, want A (its place ahead of B) seq %d attempts 1",
			l.Group(), l.Seq(), l.Attempts(), a)
	}
	ack(t, q, l)

	// A stale lease's unclaim is ErrLeaseLost and leaves the new holder alone.
	stale := claim(t, q, ClaimOptions{Visibility: 500 * time.Millisecond})
	taken := claim(t, q2, ClaimOptions{Wait: 10 * time.Second}) // after the expiry
	if stale.Group() != "B" || taken.Group() != "B" || taken.Attempts() != 2 {
		t.Fatalf("takeover: groups %q %q attempts %d, want B B 2", stale.Group(), taken.Group(), taken.Attempts())
	}
	if err := q.Unclaim(stale); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale lease's unclaim: %v, want ErrLeaseLost", err)
	}
	claimEmpty(t, q, ClaimOptions{}) // B is still the new holder's
	ack(t, q2, taken)
}

// ---- bytes -------------------------------------------------------------------------

func roundTrip(t *testing.T, group string, event []byte) {
	t.Helper()
	_, q := newQueue(t)
	if _, err := q.Publish(group, event, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	l := claim(t, q, ClaimOptions{})
	if l.Group() != group {
		t.Fatalf("group %q, want %q", l.Group(), group)
	}
	got := l.Event()
	if got == nil || !bytes.Equal(got, event) {
		t.Fatalf("event of %d bytes differs from the %d bytes published", len(got), len(event))
	}
	ack(t, q, l)
}

func bytesText(t *testing.T) { roundTrip(t, "g", []byte("héllo wörld ✓ 日本語 🎉")) }

func bytesBinaryNul(t *testing.T) {
	roundTrip(t, "g", []byte{0, 1, 2, 0, 0xff, 0xfe, 'a', 0xc3, 0x28, 0})
}

func bytesEmpty(t *testing.T) {
	roundTrip(t, "g", []byte{})
	_, q := newQueue(t)
	if _, err := q.Publish("nil", nil, PublishOptions{}); err != nil { // nil is empty too
		t.Fatal(err)
	}
	l := claim(t, q, ClaimOptions{})
	if l.Event() == nil || len(l.Event()) != 0 {
		t.Fatalf("nil event came back as %#v, want empty bytes", l.Event())
	}
	ack(t, q, l)
}

func bytes1MiB(t *testing.T) {
	event := make([]byte, 1<<20)
	if _, err := rand.Read(event); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, "g", event)
}

func groupUTF8(t *testing.T) { roundTrip(t, "grüppe-日本-🎉", []byte("x")) }

// ---- features ----------------------------------------------------------------------

func batchPublishClaim(t *testing.T) {
	_, q := newQueue(t)
	var msgs []Message
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Message{Group: fmt.Sprintf("g%d", i%2), Event: []byte(fmt.Sprintf("e%d", i)), PublishOptions: PublishOptions{Priority: 1}})
	}
	out, err := q.PublishBatchWith(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	var groups []string
	for i, o := range out {
		seqs = append(seqs, o.Seq)
		groups = append(groups, msgs[i].Group)
	}
	// Consecutive with one partition; with more, g0's and g1's counters are two
	// partitions' (or one's, interleaved): distinct and increasing within a group.
	wantIncreasing(t, q, "the batch's seqs", groups, seqs)
	l := claim(t, q, ClaimOptions{MaxEvents: 5})
	firstGroup, other := "g0", "g1"
	if q.Partitions() > 1 && l.Group() == "g1" { // the turn's partition may be g1's
		firstGroup, other = "g1", "g0"
	}
	if l.Count() != 5 || l.Group() != firstGroup {
		t.Fatalf("batch claim: %d events of %q, want 5 of %s", l.Count(), l.Group(), firstGroup)
	}
	off := 0
	if firstGroup == "g1" {
		off = 1
	}
	for i := 0; i < 5; i++ {
		j := 2*i + off // the group's i-th event in the batch
		if l.SeqAt(i) != seqs[j] || string(l.EventAt(i)) != fmt.Sprintf("e%d", j) {
			t.Fatalf("event %d: seq %d %q, want seq %d e%d", i, l.SeqAt(i), l.EventAt(i), seqs[j], j)
		}
	}
	ack(t, q, l)
	if s := stats(t, q); s.Messages != 5 {
		t.Fatalf("after acking 5: %d messages, want 5", s.Messages)
	}
	l = claim(t, q, ClaimOptions{MaxEvents: 10})
	if l.Group() != other || l.Count() != 5 {
		t.Fatalf("second batch claim: %d events of %q, want 5 of %s", l.Count(), l.Group(), other)
	}
	for i, s := range l.Seqs() {
		if j := 2*i + 1 - off; s != seqs[j] {
			t.Fatalf("%s seqs %v, want the batch's %d-th, %d-th, ... seqs %v", other, l.Seqs(), 1-off, 3-off, seqs)
		}
	}
	ack(t, q, l)
	claimEmpty(t, q, ClaimOptions{})
}

func scheduledEvent(t *testing.T) {
	_, q := newQueue(t)
	now, err := q.Now()
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Second)
	if _, err := q.Publish("g", []byte("later"), PublishOptions{NotBefore: at}); err != nil {
		t.Fatal(err)
	}
	claimEmpty(t, q, ClaimOptions{})
	l := claim(t, q, ClaimOptions{Wait: 10 * time.Second})
	if string(l.Event()) != "later" {
		t.Fatalf("got %q", l.Event())
	}
	if after, _ := q.Now(); after.Before(at) {
		t.Fatalf("delivered at %v on the queue clock, before its time %v", after, at)
	}
	ack(t, q, l)
}

func deadLetters(t *testing.T) {
	_, q := newQueue(t)
	if err := q.SetMaxAttempts(2); err != nil {
		t.Fatal(err)
	}
	seq := publish(t, q, "g", "poison", 0)
	deliverAndNackTwice := func(want int64) {
		for a := 1; a <= 2; a++ {
			l := claim(t, q, ClaimOptions{})
			if l.Seq() != want || l.Attempts() != a {
				t.Fatalf("delivery %d: seq %d attempts %d, want seq %d", a, l.Seq(), l.Attempts(), want)
			}
			if err := q.Nack(l, 0); err != nil {
				t.Fatal(err)
			}
		}
		claimEmpty(t, q, ClaimOptions{}) // the third delivery goes to the dead letters
	}
	deliverAndNackTwice(seq)
	if n, err := q.DeadCount(); err != nil || n != 1 {
		t.Fatalf("DeadCount = %d, %v; want 1", n, err)
	}
	newSeq, err := q.DeadRequeue(seq)
	if err != nil || newSeq <= seq {
		t.Fatalf("DeadRequeue(%d) = %d, %v; want a new seq", seq, newSeq, err)
	}
	if n, _ := q.DeadCount(); n != 0 {
		t.Fatalf("DeadCount after requeue = %d, want 0", n)
	}
	deliverAndNackTwice(newSeq)
	if n, err := q.DeadPurge(); err != nil || n != 1 {
		t.Fatalf("DeadPurge = %d, %v; want 1", n, err)
	}
	if n, _ := q.DeadCount(); n != 0 {
		t.Fatalf("DeadCount after purge = %d, want 0", n)
	}
	if _, err := q.DeadRequeue(seq); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeadRequeue of no dead letter: %v, want ErrInvalidArgument", err)
	}
}

func statsParsed(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g1", "a", 2)
	publish(t, q, "g1", "b", 2)
	publish(t, q, "g2", "c", 4)
	l := claim(t, q, ClaimOptions{})
	s := stats(t, q)
	if s.Queue != q.Name() || s.Messages != 3 || s.Dead != 0 {
		t.Fatalf("queue %q messages %d dead %d, want %q 3 0", s.Queue, s.Messages, s.Dead, q.Name())
	}
	if s.Groups != (GroupStats{Ready: 1, Leased: 1, Parked: 0, Paused: 0, Total: 2}) || s.Published != 3 {
		t.Fatalf("groups %+v published %d, want 3", s.Groups, s.Published)
	}
	want := [5]PriorityStats{{}, {}, {Groups: 1, Messages: 2}, {}, {Groups: 1, Messages: 1}}
	if s.Priorities != want {
		t.Fatalf("priorities %+v, want %+v", s.Priorities, want)
	}
	if !s.HasOldestMessage || s.OldestMessageAge < 0 || s.OldestMessageAge > time.Minute {
		t.Fatalf("oldest message age %v (%v)", s.OldestMessageAge, s.HasOldestMessage)
	}
	if s.Now.IsZero() || !strings.HasPrefix(s.JSON, "{") {
		t.Fatalf("now %v json %q", s.Now, s.JSON)
	}
	ack(t, q, l)
	if s := stats(t, q); s.Messages != 2 || s.Groups.Total != 2 || s.Priorities[2].Messages != 1 {
		t.Fatalf("after ack: %+v", s)
	}
}

func repair(t *testing.T) {
	_, q := newQueue(t)
	seq := publish(t, q, "g", "orphan", 0)
	db, prefix := splitName(q.Name())
	if n, err := testmongo.DeleteAll(testURI(t), db, prefix+"_locks"); err != nil || n != 1 {
		t.Fatalf("deleting the lock: %d, %v", n, err)
	}
	claimEmpty(t, q, ClaimOptions{}) // no lock, no claim
	if n, err := q.Repair(); err != nil || n != 1 {
		t.Fatalf("Repair = %d, %v; want 1", n, err)
	}
	l := claim(t, q, ClaimOptions{})
	if l.Seq() != seq {
		t.Fatalf("after repair: seq %d, want %d", l.Seq(), seq)
	}
	ack(t, q, l)
	if n, err := q.Repair(); err != nil || n != 0 {
		t.Fatalf("second Repair = %d, %v; want 0", n, err)
	}
}

func purgeGroup(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "a", 0)
	publish(t, q, "g", "b", 0)
	publish(t, q, "other", "c", 0)
	l := claim(t, q, ClaimOptions{Partitions: partitionOf(t, q, "g")})
	if l.Group() != "g" {
		t.Fatalf("claimed %q", l.Group())
	}
	if err := q.PurgeGroup("g"); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(l); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("ack after purge: %v, want ErrLeaseLost", err)
	}
	if s := stats(t, q); s.Messages != 1 || s.Groups.Total != 1 {
		t.Fatalf("after purge: %d messages %d groups, want 1 1", s.Messages, s.Groups.Total)
	}
}

func drop(t *testing.T) {
	_, q := newQueue(t)
	for i := 0; i < 3; i++ {
		publish(t, q, "g", "x", 0)
	}
	if err := q.Drop(); err != nil {
		t.Fatal(err)
	}
	if s := stats(t, q); s.Messages != 0 || s.Groups.Total != 0 {
		t.Fatalf("after drop: %+v", s)
	}
	// Seq 1 with one partition; with P, the first of g's partition k: k + 1.
	want := int64(1)
	if q.Partitions() > 1 {
		want = int64(partitionOf(t, q, "g")[0]) + 1
	}
	if seq := publish(t, q, "g", "y", 0); seq != want {
		t.Fatalf("first seq after drop %d, want %d", seq, want)
	}
}

func leaseDeadline(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	before, _ := q.Now()
	l := claim(t, q, ClaimOptions{Visibility: 10 * time.Second})
	after, _ := q.Now()
	d := l.Deadline()
	slack := 50 * time.Millisecond
	if d.Before(before.Add(10*time.Second-slack)) || d.After(after.Add(10*time.Second+slack)) {
		t.Fatalf("deadline %v not within claim time [%v, %v] + 10 s", d, before, after)
	}
	if err := q.Extend(l, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	d2 := l.Deadline()
	if d2.Sub(d) < 45*time.Second {
		t.Fatalf("extend by 60 s moved the deadline from %v to %v", d, d2)
	}
	ack(t, q, l)
	if !l.Deadline().Equal(d2) {
		t.Fatal("an acked lease's deadline changed")
	}
}

// ---- waiting claims ------------------------------------------------------------------

type claimResult struct {
	lease *Lease
	err   error
	took  time.Duration
}

func claimAsync(ctx context.Context, q *Queue, opts ClaimOptions) <-chan claimResult {
	ch := make(chan claimResult, 1)
	go func() {
		start := time.Now()
		l, err := q.Claim(ctx, opts)
		ch <- claimResult{l, err, time.Since(start)}
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan claimResult, limit time.Duration, what string) claimResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(limit):
		t.Fatalf("%s: no return within %s", what, limit)
	}
	return claimResult{}
}

func waitWokenByPublish(t *testing.T) {
	_, q := newQueue(t)
	ch := claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second})
	time.Sleep(200 * time.Millisecond)
	publish(t, q, "g", "wake", 0)
	r := waitResult(t, ch, 15*time.Second, "waiting claim")
	if r.err != nil || string(r.lease.Event()) != "wake" {
		t.Fatalf("waiting claim: %v", r.err)
	}
	if r.took > 5*time.Second {
		t.Fatalf("woken after %v, want well before the 10 s wait", r.took)
	}
	ack(t, q, r.lease)
}

func waitCancelOne(t *testing.T) {
	_, q := newQueue(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := claimAsync(ctx, q, ClaimOptions{Wait: 10 * time.Second})
	other := claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second})
	time.Sleep(300 * time.Millisecond)
	cancel()
	r := waitResult(t, cancelled, 5*time.Second, "cancelled claim")
	if !errors.Is(r.err, context.Canceled) || r.lease != nil {
		t.Fatalf("cancelled claim: lease %v err %v, want context.Canceled", r.lease, r.err)
	}
	select {
	case o := <-other:
		t.Fatalf("the other waiter returned too: %v", o.err)
	case <-time.After(200 * time.Millisecond):
	}
	publish(t, q, "g", "next", 0)
	o := waitResult(t, other, 15*time.Second, "other waiter")
	if o.err != nil || string(o.lease.Event()) != "next" {
		t.Fatalf("other waiter: %v", o.err)
	}
	ack(t, q, o.lease)

	// A context with a deadline ends the wait with DeadlineExceeded, and the queue
	// goes on: a later claim works.
	dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	if _, err := q.Claim(dctx, ClaimOptions{Wait: 10 * time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("claim past its ctx deadline: %v", err)
	}
	publish(t, q, "g", "again", 0)
	ack(t, q, claim(t, q, ClaimOptions{Wait: 5 * time.Second}))
}

func interruptStopsAll(t *testing.T) {
	_, q := newQueue(t)
	a := claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second})
	b := claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second})
	time.Sleep(300 * time.Millisecond)
	if err := q.Interrupt(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan claimResult{a, b} {
		r := waitResult(t, ch, 5*time.Second, "interrupted waiter")
		if !errors.Is(r.err, ErrInterrupted) {
			t.Fatalf("waiter: %v, want ErrInterrupted", r.err)
		}
	}
	r := waitResult(t, claimAsync(context.Background(), q, ClaimOptions{Wait: 10 * time.Second}), 5*time.Second, "later waiter")
	if !errors.Is(r.err, ErrInterrupted) {
		t.Fatalf("later wait: %v, want ErrInterrupted", r.err)
	}
	publish(t, q, "g", "still works", 0)
	// A claim without Wait on the interrupted queue still works, and so does Ack ...
	l := claim(t, q, ClaimOptions{})
	if string(l.Event()) != "still works" {
		t.Fatalf("plain claim after Interrupt: %q", l.Event())
	}
	ack(t, q, l)
	claimEmpty(t, q, ClaimOptions{}) // empty, not interrupted
	// ... while waiting claims stay interrupted.
	if _, err := q.Claim(context.Background(), ClaimOptions{Wait: time.Second}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("wait after the plain claims: %v, want ErrInterrupted", err)
	}
}

// ---- errors --------------------------------------------------------------------------

func errorBadArgument(t *testing.T) {
	c, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	defer q.Ack(l)
	ctx := context.Background()
	cases := []struct {
		name string // what the message must name
		call func() error
	}{
		{"group_id", func() error { _, err := q.Publish("", []byte("x"), PublishOptions{}); return err }},
		{"group", func() error { _, err := q.Publish("a\x00b", []byte("x"), PublishOptions{}); return err }},
		{"group_id", func() error { _, err := q.Publish("\xff\xfe", []byte("x"), PublishOptions{}); return err }},
		{"priority", func() error { _, err := q.Publish("g", []byte("x"), PublishOptions{Priority: 5}); return err }},
		{"priority", func() error { _, err := q.Publish("g", []byte("x"), PublishOptions{Priority: -1}); return err }},
		{"visibility_s", func() error { _, err := q.Claim(ctx, ClaimOptions{Visibility: -time.Second}); return err }},
		{"min_priority", func() error { _, err := q.Claim(ctx, ClaimOptions{MinPriority: -1}); return err }},
		{"min_priority", func() error { _, err := q.Claim(ctx, ClaimOptions{MinPriority: 5}); return err }},
		{"timeout_s", func() error { _, err := q.Claim(ctx, ClaimOptions{Wait: -time.Second}); return err }},
		{"max_events", func() error { _, err := q.Claim(ctx, ClaimOptions{MaxEvents: BatchMax + 1}); return err }},
		{"MaxEvents", func() error { _, err := q.Claim(ctx, ClaimOptions{MaxEvents: -1}); return err }},
		{"delay_s", func() error { return q.Nack(l, -time.Second) }},
		{"visibility_s", func() error { return q.Extend(l, 0) }},
		{"messages", func() error { _, err := q.PublishBatch(nil); return err }},
		{"priority", func() error {
			_, err := q.PublishBatch([]Message{{Group: "g", PublishOptions: PublishOptions{Priority: 9}}})
			return err
		}},
		{"max_attempts", func() error { return q.SetMaxAttempts(-1) }},
		{"group", func() error { return q.PurgeGroup("") }},
		{"db_name", func() error { _, err := c.Queue("bad/db", "mq"); return err }},
		{"prefix", func() error { _, err := c.Queue("db", "$x"); return err }},
		{"uri", func() error { _, err := Connect("not a uri"); return err }},
		{"handler", func() error { return q.Work(ctx, WorkOptions{}, nil) }},
		{"Concurrency", func() error {
			return q.Work(ctx, WorkOptions{Concurrency: -1}, func(context.Context, *Lease) error { return nil })
		}},
	}
	for i, tc := range cases {
		err := tc.call()
		var e *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Status != StatusInvalidArgument {
			t.Errorf("case %d (%s): %v, want ErrInvalidArgument", i, tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) {
			t.Errorf("case %d: %q does not name %q", i, err.Error(), tc.name)
		}
	}
}

func errorConnect(t *testing.T) {
	c, err := Connect("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200")
	if err != nil {
		t.Fatalf("Connect does not contact the server, yet: %v", err)
	}
	defer c.Close()
	start := time.Now()
	q, err := openQueue(t, c, "mqt_go_unreachable", "mq")
	if err == nil {
		q.Close()
		t.Fatal("Queue on an unreachable server succeeded")
	}
	var e *Error
	if !errors.Is(err, ErrConnect) || !errors.As(err, &e) || e.Status != StatusConnect || e.Message == "" {
		t.Fatalf("%v, want ErrConnect", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the connect error took %v", took)
	}
}

func errorLeaseLostType(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	if err := q.PurgeGroup("g"); err != nil {
		t.Fatal(err)
	}
	err := q.Nack(l, 0)
	var e *Error
	if !errors.Is(err, ErrLeaseLost) || !errors.As(err, &e) {
		t.Fatalf("%v, want ErrLeaseLost and *Error", err)
	}
	if e.Status != StatusLeaseLost || errors.Is(err, ErrConnect) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrEmpty) {
		t.Fatalf("lease lost matches other kinds: %+v", e)
	}
	if !strings.Contains(err.Error(), "MQ_LEASE_LOST") {
		t.Fatalf("message %q lacks the status", err.Error())
	}
}

// ---- concurrency ---------------------------------------------------------------------

// bounded runs f in a goroutine of its own and reports whether it returned within
// 60 s (a call that waits for a second pooled client with maxPoolSize=1 would
// hang); f's error fails the test.
func bounded(t *testing.T, what string, f func() error) bool {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return true
	case <-time.After(60 * time.Second):
		t.Errorf("%s has not returned within 60 s", what)
		return false
	}
}

// withOption adds option to uri's options ('?' or '&', as the URI needs).
func withOption(uri, option string) string {
	hosts := uri
	if i := strings.Index(uri, "://"); i >= 0 {
		hosts = uri[i+len("://"):]
	}
	switch {
	case strings.HasSuffix(uri, "?") || strings.HasSuffix(uri, "&"):
		return uri + option
	case strings.Contains(uri, "?"):
		return uri + "&" + option
	case strings.Contains(hosts, "/"):
		return uri + "?" + option
	}
	return uri + "/?" + option
}

func smallPool(t *testing.T) {
	for in, want := range map[string]string{
		"mongodb://h:1":      "mongodb://h:1/?maxPoolSize=1",
		"mongodb://h:1/":     "mongodb://h:1/?maxPoolSize=1",
		"mongodb://h:1/?w=1": "mongodb://h:1/?w=1&maxPoolSize=1",
	} {
		if got := withOption(in, "maxPoolSize=1"); got != want {
			t.Fatalf("withOption(%q) = %q, want %q", in, got, want)
		}
	}
	_, fixture := newQueue(t)
	c, err := Connect(withOption(testURI(t), "maxPoolSize=1"))
	if err != nil {
		t.Fatal(err)
	}
	db, prefix := splitName(fixture.Name())
	q, err := openQueue(t, c, db, prefix)
	if err != nil {
		t.Fatal(err)
	}
	// A call still hung in C at the end would hold Close up: close only when none is.
	hung := false
	defer func() {
		if !hung {
			q.Close()
			c.Close()
		}
	}()
	step := func(what string, f func() error) {
		t.Helper()
		if !bounded(t, what, f) {
			hung = true
			t.FailNow()
		}
	}
	want := func(what string, got, want interface{}) error {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: got %v, want %v", what, got, want)
		}
		return nil
	}
	bg := context.Background()
	var l *Lease

	// The seqs: 1, 2, 3 for b's and 4 for a's with one partition; with more, b's
	// first is that of its partition k (k + 1: the queue is new) and a's its own.
	// The claims that want b take from b's partition (the turn's may be a's).
	inB := partitionOf(t, q, "b")
	bFirst := int64(1)
	if inB != nil {
		bFirst = int64(inB[0]) + 1
	}
	var aSeq int64
	step("PublishBatch", func() error {
		seq, err := q.PublishBatch([]Message{{Group: "b", Event: []byte("b1")}, {Group: "b", Event: []byte("b2")}, {Group: "b", Event: []byte("b3")}})
		if err != nil {
			return err
		}
		return want("first seq", seq, bFirst)
	})
	step("Publish", func() (err error) {
		if aSeq, err = q.Publish("a", []byte("a1"), PublishOptions{}); err != nil {
			return err
		}
		if q.Partitions() > 1 {
			return nil
		}
		return want("seq", aSeq, 4)
	})
	step("Claim", func() (err error) {
		if l, err = q.Claim(bg, ClaimOptions{Partitions: inB}); err != nil {
			return err
		}
		return want("group, seq", []interface{}{l.Group(), l.Seq()}, []interface{}{"b", bFirst})
	})
	step("Extend", func() error { return q.Extend(l, time.Minute) })
	step("Unclaim", func() error { return q.Unclaim(l) })
	step("batch Claim", func() (err error) {
		if l, err = q.Claim(bg, ClaimOptions{MaxEvents: 3, Partitions: inB}); err != nil {
			return err
		}
		return want("group, count, attempts", []interface{}{l.Group(), l.Count(), l.Attempts()}, []interface{}{"b", 3, 1})
	})
	step("Ack", func() error { return q.Ack(l) })
	step("waiting Claim", func() (err error) {
		if l, err = q.Claim(bg, ClaimOptions{Wait: 5 * time.Second}); err != nil {
			return err
		}
		return want("group, seq", []interface{}{l.Group(), l.Seq()}, []interface{}{"a", aSeq})
	})
	step("Nack", func() error { return q.Nack(l, 0) })
	step("dead-letter requeue after max attempts 1", func() error {
		if err := q.SetMaxAttempts(1); err != nil {
			return err
		}
		if _, err := q.Claim(bg, ClaimOptions{}); !errors.Is(err, ErrEmpty) { // a's 2nd delivery: dead
			return fmt.Errorf("claim: %v, want ErrEmpty", err)
		}
		if n, err := q.DeadCount(); err != nil || n != 1 {
			return fmt.Errorf("DeadCount: %d %v, want 1", n, err)
		}
		seq, err := q.DeadRequeue(aSeq)
		if err != nil {
			return err
		}
		if q.Partitions() == 1 {
			if err := want("requeued seq", seq, 5); err != nil {
				return err
			}
		} else if seq <= aSeq {
			return fmt.Errorf("requeued seq %d, want one after a's %d", seq, aSeq)
		}
		return q.SetMaxAttempts(0)
	})
	step("Repair", func() error {
		n, err := q.Repair()
		if err != nil {
			return err
		}
		return want("repaired", n, 0)
	})
	step("Stats", func() error {
		s, err := q.Stats()
		if err != nil {
			return err
		}
		return want("messages", s.Messages, 1)
	})
	step("Peek", func() error {
		events, err := q.Peek("", 10)
		if err != nil {
			return err
		}
		return want("peeked", len(events), 1)
	})
	step("PurgeGroup", func() error { return q.PurgeGroup("a") })

	var msgs []Message
	for i := 0; i < 20; i++ {
		msgs = append(msgs, Message{Group: fmt.Sprintf("w%d", i%4), Event: []byte(fmt.Sprint(i))})
	}
	if _, err := q.PublishBatch(msgs); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(ctx, WorkOptions{Concurrency: 4}, func(context.Context, *Lease) error {
			handled.Add(1)
			return nil
		})
	}()
	step("the worker's drain", func() error {
		for deadline := time.Now().Add(55 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if s, err := q.Stats(); err != nil || s.Messages == 0 {
				return err
			}
		}
		return errors.New("events left after 55 s")
	})
	cancel()
	step("the worker's shutdown", func() error { return <-errc })
	if n := handled.Load(); n != 20 {
		t.Fatalf("handled %d, want 20", n)
	}
}

func concurrency16x2000(t *testing.T) {
	_, q := newQueue(t)
	const events, groups, workers = 2000, 100, 16
	var msgs []Message
	for i := 0; i < events; i++ {
		msgs = append(msgs, Message{Group: fmt.Sprintf("g%03d", i%groups), Event: []byte(fmt.Sprintf("%d", i))})
	}
	for i := 0; i < events; i += 500 {
		if _, err := q.PublishBatch(msgs[i : i+500]); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		held    = map[string]bool{}
		order   = map[string][]int{}
		acked   = map[int]int{}
		done    atomic.Int64
		failure atomic.Value
	)
	fail := func(format string, args ...interface{}) { failure.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	var wg sync.WaitGroup
	deadline := time.Now().Add(90 * time.Second)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done.Load() < events && failure.Load() == nil && time.Now().Before(deadline) {
				l, err := q.Claim(context.Background(), ClaimOptions{Wait: 200 * time.Millisecond})
				if errors.Is(err, ErrEmpty) {
					continue
				}
				if err != nil {
					fail("claim: %v", err)
					return
				}
				var i int
				fmt.Sscanf(string(l.Event()), "%d", &i)
				mu.Lock()
				if held[l.Group()] {
					fail("group %s held twice at once", l.Group())
				}
				held[l.Group()] = true
				order[l.Group()] = append(order[l.Group()], i)
				acked[i]++
				mu.Unlock()
				runtime.Gosched() // let the others claim while this group is held
				mu.Lock()
				held[l.Group()] = false // before the ack: the server holds the group until then
				mu.Unlock()
				if err := q.Ack(l); err != nil {
					fail("ack %d: %v", i, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if f := failure.Load(); f != nil {
		t.Fatal(f)
	}
	if done.Load() != events || len(acked) != events {
		t.Fatalf("acked %d events (%d distinct), want %d", done.Load(), len(acked), events)
	}
	for i, n := range acked {
		if n != 1 {
			t.Fatalf("event %d acked %d times", i, n)
		}
	}
	for g, seen := range order {
		if !sort.IntsAreSorted(seen) {
			t.Fatalf("group %s acked out of order: %v", g, seen)
		}
	}
	if s := stats(t, q); s.Messages != 0 {
		t.Fatalf("%d messages left", s.Messages)
	}
}

// ---- safety --------------------------------------------------------------------------

func safetyUseAfterClose(t *testing.T) {
	c, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	publish(t, q, "h", "y", 0)
	l := claim(t, q, ClaimOptions{})
	l2 := claim(t, q, ClaimOptions{})

	// A closed lease, on an open queue.
	l2.Close()
	for name, err := range map[string]error{
		"Ack":    q.Ack(l2),
		"Nack":   q.Nack(l2, 0),
		"Extend": q.Extend(l2, time.Second),
	} {
		if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "lease is closed") {
			t.Errorf("%s on a closed lease: %v, want ErrClosed naming the lease", name, err)
		}
	}
	if l2.Group() == "" || l2.Seq() == 0 {
		t.Error("a closed lease's fields are gone")
	}

	q.Close()
	ctx := context.Background()
	calls := map[string]func() error{
		"Publish":           func() error { _, err := q.Publish("g", nil, PublishOptions{}); return err },
		"Publish scheduled": func() error { _, err := q.Publish("g", nil, PublishOptions{NotBefore: time.Now()}); return err },
		"PublishBatch":      func() error { _, err := q.PublishBatch([]Message{{Group: "g"}}); return err },
		"Claim":             func() error { _, err := q.Claim(ctx, ClaimOptions{}); return err },
		"Claim(wait)":       func() error { _, err := q.Claim(ctx, ClaimOptions{Wait: time.Second}); return err },
		"Ack":               func() error { return q.Ack(l) },
		"Nack":              func() error { return q.Nack(l, 0) },
		"Extend":            func() error { return q.Extend(l, time.Second) },
		"Interrupt":         func() error { return q.Interrupt() },
		"SetMaxAttempts":    func() error { return q.SetMaxAttempts(3) },
		"Now":               func() error { _, err := q.Now(); return err },
		"DeadCount":         func() error { _, err := q.DeadCount(); return err },
		"DeadRequeue":       func() error { _, err := q.DeadRequeue(1); return err },
		"DeadPurge":         func() error { _, err := q.DeadPurge(); return err },
		"Stats":             func() error { _, err := q.Stats(); return err },
		"Repair":            func() error { _, err := q.Repair(); return err },
		"PurgeGroup":        func() error { return q.PurgeGroup("g") },
		"Drop":              func() error { return q.Drop() },
		"Peek":              func() error { _, err := q.Peek("", 1); return err },
		"DeadList":          func() error { _, err := q.DeadList(1); return err },
		"SetRepairInterval": func() error { return q.SetRepairInterval(time.Second) },
		"RepairCounts":      func() error { _, err := q.RepairCounts(); return err },
		"Groups":            func() error { _, err := q.Groups(GroupsOptions{}); return err },
		"PauseGroup":        func() error { return q.PauseGroup("g") },
		"ResumeGroup":       func() error { return q.ResumeGroup("g") },
		"DeadPage":          func() error { _, err := q.DeadPage(0, 1); return err },
		"PublishWith":       func() error { _, err := q.PublishWith("g", nil, PublishOptions{DedupKey: "k"}); return err },
		"PublishBatchWith":  func() error { _, err := q.PublishBatchWith([]Message{{Group: "g"}}); return err },
		"SetDedupWindow":    func() error { return q.SetDedupWindow(time.Minute) },
		"SetDedupScope":     func() error { return q.SetDedupScope(DedupScopeGroup) },
		"Work": func() error {
			return q.Work(ctx, WorkOptions{}, func(context.Context, *Lease) error { return nil })
		},
	}
	for name, f := range calls {
		if err := f(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "queue is closed") {
			t.Errorf("%s on a closed queue: %v, want ErrClosed naming the queue", name, err)
		}
	}
	c.Close()
	if _, err := c.Queue("db", "mq"); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "client is closed") {
		t.Errorf("Queue on a closed client: %v, want ErrClosed", err)
	}
	var nilQueue *Queue
	if _, err := nilQueue.Publish("g", nil, PublishOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish on a nil queue: %v", err)
	}
	l.Close()
}

func safetyCloseTwice(t *testing.T) {
	c, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	l := claim(t, q, ClaimOptions{})
	ack(t, q, l)
	for i := 0; i < 2; i++ {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var nc *Client
	var nq *Queue
	var nl *Lease
	if nc.Close() != nil || nq.Close() != nil || nl.Close() != nil {
		t.Fatal("closing nil handles")
	}
}

func safetyQueueKeepsClient(t *testing.T) {
	baseClients := liveClients.Load()
	c, q := newQueue(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openQueue(t, c, randomDB(t), "mq"); !errors.Is(err, ErrClosed) {
		t.Fatalf("opening a queue on a closed client: %v, want ErrClosed", err)
	}
	if liveClients.Load() != baseClients+1 {
		t.Fatal("the client was released while its queue is open")
	}
	publish(t, q, "g", "after client close", 0)
	l := claim(t, q, ClaimOptions{Wait: time.Second})
	ack(t, q, l)
	if err := q.Drop(); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if liveClients.Load() != baseClients {
		t.Fatal("closing the last queue did not release the closed client")
	}

	// The other order: queue first, then client.
	c2, err := Connect(testURI(t))
	if err != nil {
		t.Fatal(err)
	}
	q2, err := openQueue(t, c2, randomDB(t), "mq")
	if err != nil {
		t.Fatal(err)
	}
	q3, err := openQueue(t, c2, randomDB(t), "mq")
	if err != nil {
		t.Fatal(err)
	}
	q2.Drop()
	q3.Drop()
	q2.Close()
	if liveClients.Load() != baseClients+1 {
		t.Fatal("closing a queue released an open client")
	}
	c2.Close()
	if liveClients.Load() != baseClients+1 {
		t.Fatal("client released while q3 is open")
	}
	q3.Close()
	if liveClients.Load() != baseClients {
		t.Fatal("client not released after its last queue")
	}
}

func safetyGCAnyOrder(t *testing.T) {
	uri := testURI(t)
	base := [3]int64{liveClients.Load(), liveQueues.Load(), liveLeases.Load()}
	db := randomDB(t)
	// Keep one queue to drop the database at the end.
	keeper, err := Connect(uri)
	if err != nil {
		t.Fatal(err)
	}
	kq, err := openQueue(t, keeper, db, "mq")
	if err != nil {
		t.Fatal(err)
	}
	keeper.Close()
	defer func() { kq.Drop(); kq.Close() }()
	for i := 0; i < 3; i++ {
		publish(t, kq, fmt.Sprintf("g%d", i), "x", 0)
	}
	// Three orders of abandonment: lease, queue and client all unreachable at once;
	// the client closed but its queue and lease dropped; the queue closed but its
	// client and a lease dropped. None is closed by the test otherwise.
	func() {
		c, _ := Connect(uri)
		q, _ := openQueue(t, c, db, "mq")
		_, _ = q.Claim(context.Background(), ClaimOptions{Visibility: time.Second})
	}()
	func() {
		c, _ := Connect(uri)
		q, _ := openQueue(t, c, db, "mq")
		c.Close()
		_, _ = q.Claim(context.Background(), ClaimOptions{Visibility: time.Second})
	}()
	func() {
		c, _ := Connect(uri)
		q, _ := openQueue(t, c, db, "mq")
		l, _ := q.Claim(context.Background(), ClaimOptions{Visibility: time.Second})
		q.Close()
		_ = l.Group() // the lease outlives its queue
	}()
	if liveLeases.Load() != base[2]+3 || liveQueues.Load() != base[1]+2+1 {
		t.Fatalf("setup: %d leases %d queues alive", liveLeases.Load()-base[2], liveQueues.Load()-base[1])
	}
	eventually(t, 20*time.Second, "the GC frees every abandoned handle", func() bool {
		runtime.GC()
		// The keeper's queue (and through it, its client) stays.
		return liveClients.Load() == base[0]+1 && liveQueues.Load() == base[1]+1 && liveLeases.Load() == base[2]
	})
	// Nothing was freed twice: the counters never went below the base.
	if liveClients.Load() < base[0] || liveQueues.Load() < base[1] || liveLeases.Load() < base[2] {
		t.Fatal("a handle was freed twice")
	}
}

// ---- the worker ----------------------------------------------------------------------

func workerAcksSuccess(t *testing.T) {
	_, q := newQueue(t)
	for i := 0; i < 50; i++ {
		publish(t, q, fmt.Sprintf("g%d", i%5), fmt.Sprintf("%d", i), 0)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	seen := map[int]int{}
	order := map[string][]int{}
	var running, maxRunning atomic.Int64
	var errs []error
	err := q.Work(ctx, WorkOptions{Concurrency: 4, Visibility: 10 * time.Second, OnError: func(e error) {
		mu.Lock()
		errs = append(errs, e)
		mu.Unlock()
	}}, func(_ context.Context, l *Lease) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		var i int
		fmt.Sscanf(string(l.Event()), "%d", &i)
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		seen[i]++
		order[l.Group()] = append(order[l.Group()], i)
		if len(seen) == 50 {
			cancel()
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("Work: %v", err)
	}
	if len(errs) != 0 {
		t.Fatalf("errors reported: %v", errs)
	}
	if len(seen) != 50 {
		t.Fatalf("%d events handled, want 50", len(seen))
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("event %d handled %d times", i, n)
		}
	}
	for g, s := range order {
		if !sort.IntsAreSorted(s) || len(s) != 10 {
			t.Fatalf("group %s handled as %v", g, s)
		}
	}
	if m := maxRunning.Load(); m > 4 {
		t.Fatalf("%d handlers ran at once with concurrency 4", m)
	}
	if s := stats(t, q); s.Messages != 0 {
		t.Fatalf("%d messages left after Work", s.Messages)
	}
}

func workerNacksFailureBackoff(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "flaky", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var attempts []int
	var times []time.Time
	base := 300 * time.Millisecond
	err := q.Work(ctx, WorkOptions{BackoffBase: base, BackoffCap: 10 * time.Second},
		func(_ context.Context, l *Lease) error {
			attempts = append(attempts, l.Attempts())
			times = append(times, time.Now())
			if l.Attempts() < 3 {
				return errors.New("not yet")
			}
			cancel()
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(attempts) != "[1 2 3]" {
		t.Fatalf("attempts %v, want [1 2 3]", attempts)
	}
	// The nack delays are base*2^(a-1) times a jitter in [0.5, 1]: the group was
	// held at least half of that each time (the queue enforces the delay).
	for a := 1; a <= 2; a++ {
		minDelay := time.Duration(float64(base) * float64(int(1)<<(a-1)) * 0.5)
		if gap := times[a].Sub(times[a-1]); gap < minDelay-20*time.Millisecond {
			t.Fatalf("redelivery %d after %v, before its back-off of at least %v", a, gap, minDelay)
		}
	}
	if s := stats(t, q); s.Messages != 0 {
		t.Fatalf("not acked: %d messages", s.Messages)
	}
}

func TestBackoffDelays(t *testing.T) {
	w := &workRun{o: WorkOptions{BackoffBase: time.Second, BackoffCap: 60 * time.Second}}
	for a := 1; a <= 12; a++ {
		full := time.Second << (a - 1)
		if full > 60*time.Second {
			full = 60 * time.Second
		}
		for i := 0; i < 200; i++ {
			d := w.backoff(a)
			if d < full/2 || d > full {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", a, d, full/2, full)
			}
		}
	}
}

func workerExtendsLease(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	publish(t, q, "g", "slow", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vis := 600 * time.Millisecond
	started := make(chan struct{})
	var reported []error
	var mu sync.Mutex
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(ctx, WorkOptions{Visibility: vis, OnError: func(e error) {
			mu.Lock()
			reported = append(reported, e)
			mu.Unlock()
		}}, func(_ context.Context, l *Lease) error {
			close(started)
			time.Sleep(3 * vis)
			cancel()
			return nil
		})
	}()
	<-started
	for end := time.Now().Add(3 * vis); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if l, err := q2.Claim(context.Background(), ClaimOptions{}); err == nil {
			t.Fatalf("another worker got group %q while the handler ran", l.Group())
		} else if !errors.Is(err, ErrEmpty) {
			t.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(reported) != 0 {
		t.Fatalf("errors reported (the ack must be OK): %v", reported)
	}
	if s := stats(t, q); s.Messages != 0 {
		t.Fatalf("%d messages left", s.Messages)
	}
}

func workerDeadLetters(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "poison", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(ctx, WorkOptions{MaxAttempts: 2, BackoffBase: 10 * time.Millisecond},
			func(context.Context, *Lease) error {
				calls.Add(1)
				return errors.New("always fails")
			})
	}()
	eventually(t, 15*time.Second, "the event is a dead letter", func() bool {
		n, err := q.DeadCount()
		return err == nil && n == 1
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler called %d times, want 2 (max attempts)", n)
	}
	if s := stats(t, q); s.Messages != 0 || s.Dead != 1 {
		t.Fatalf("messages %d dead %d, want 0 1", s.Messages, s.Dead)
	}
}

func workerGracefulShutdown(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "running", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	var finished atomic.Bool
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(ctx, WorkOptions{Concurrency: 2, ShutdownTimeout: 10 * time.Second},
			func(hctx context.Context, l *Lease) error {
				if calls.Add(1) == 1 {
					close(started)
				}
				<-release
				if hctx.Err() != nil {
					return hctx.Err()
				}
				finished.Store(true)
				return nil
			})
	}()
	<-started
	cancel() // stop: no new claims; the running handler goes on
	time.Sleep(200 * time.Millisecond)
	publish(t, q, "h", "after stop", 0)
	select {
	case err := <-errc:
		t.Fatalf("Work returned while its handler ran: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Work: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Work did not return after its handler finished")
	}
	if !finished.Load() || calls.Load() != 1 {
		t.Fatalf("handler finished %v, calls %d; want true, 1", finished.Load(), calls.Load())
	}
	s := stats(t, q)
	if s.Messages != 1 || s.Groups.Ready != 1 {
		t.Fatalf("after shutdown: %d messages %d ready groups, want only the unclaimed one", s.Messages, s.Groups.Ready)
	}
	l := claim(t, q, ClaimOptions{})
	if string(l.Event()) != "after stop" {
		t.Fatalf("left %q", l.Event())
	}
	ack(t, q, l)
}

func workerStopAfterClaim(t *testing.T) {
	_, q := newQueue(t)
	for cycle := 0; cycle < 30; cycle++ {
		seq := publish(t, q, "g", fmt.Sprintf("cycle %d", cycle), 0)
		var calls atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- q.Work(ctx, WorkOptions{Concurrency: 2, BackoffBase: time.Millisecond},
				func(context.Context, *Lease) error {
					calls.Add(1)
					return errors.New("always fails")
				})
		}()
		// The stop lands anywhere from before the first claim to after a few handler
		// calls: the claims and the handler take about a millisecond each here.
		time.Sleep(time.Duration(cycle%10) * 300 * time.Microsecond)
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("cycle %d: Work: %v", cycle, err)
		}
		l := claim(t, q, ClaimOptions{Wait: 30 * time.Second})
		if n := calls.Load(); l.Seq() != seq || int64(l.Attempts()) != n+1 {
			t.Fatalf("cycle %d: seq %d attempts %d after %d handler calls, want seq %d attempts %d: a lease no handler ran was counted as a delivery",
				cycle, l.Seq(), l.Attempts(), n, seq, n+1)
		}
		ack(t, q, l)
	}
}

// TestExtras covers the calls of C API 0.4.0 that bindings/CONTRACT.md has no
// scenario for: Peek, DeadList, the automatic repair, WriteConcernErrors.
func TestExtras(t *testing.T) {
	t.Run("peek", peekEvents)
	t.Run("dead_list", deadList)
	t.Run("repair_automatic", repairAutomatic)
	t.Run("write_concern_errors", writeConcernErrors)
	t.Run("token_and_clock_offset", tokenAndClockOffset)
}

func tokenAndClockOffset(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "A", "a1", 0)
	l, err := q.Claim(context.Background(), ClaimOptions{Visibility: 30 * time.Second, WorkerID: "w-token"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.Token(), "w-token:") || len(l.Token()) <= len("w-token:") {
		t.Fatalf("token %q: want w-token:<random>", l.Token())
	}
	if err := q.Ack(l); err != nil {
		t.Fatal(err)
	}
	off, err := q.ClockOffset()
	if err != nil {
		t.Fatal(err)
	}
	if off > time.Hour || off < -time.Hour {
		t.Fatalf("clock offset %v: the test server runs on this machine", off)
	}
	q.Close()
	if _, err := q.ClockOffset(); !errors.Is(err, ErrClosed) {
		t.Fatalf("ClockOffset on a closed queue: %v, want ErrClosed", err)
	}
}

func seqsOf(evs []StoredEvent) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func peekEvents(t *testing.T) {
	_, q := newQueue(t)
	a1 := publish(t, q, "A", "a1", 2)
	bin := []byte{0, 0xff, 1, 0xfe, 0}
	a2, err := q.Publish("A", bin, PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now, err := q.Now()
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	s1, err := q.Publish("S", []byte("scheduled \u00e9\u20ac"), PublishOptions{Priority: 1, NotBefore: later})
	if err != nil {
		t.Fatal(err)
	}
	e1 := publish(t, q, "E", "", 0)

	all, err := q.Peek("", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqsOf(all), []int64{a1, a2, s1, e1}; !equalSeqs(got, want) {
		t.Fatalf("Peek seqs %v, want %v", got, want)
	}
	f := all[0]
	if f.Group != "A" || f.Priority != 2 || f.Attempts != 0 || string(f.Event) != "a1" {
		t.Fatalf("first: %+v", f)
	}
	if d := f.PublishedAt.Sub(now); d < -time.Minute || d > time.Minute {
		t.Fatalf("PublishedAt %v, queue clock %v", f.PublishedAt, now)
	}
	if !f.NotBefore.IsZero() || !f.DeadAt.IsZero() {
		t.Fatalf("a live unscheduled event has NotBefore %v DeadAt %v", f.NotBefore, f.DeadAt)
	}
	if !bytes.Equal(all[1].Event, bin) {
		t.Fatalf("binary event %x, want %x", all[1].Event, bin)
	}
	if string(all[2].Event) != "scheduled \u00e9\u20ac" || all[2].Priority != 1 {
		t.Fatalf("scheduled: %+v", all[2])
	}
	if d := all[2].NotBefore.Sub(later); d < -5*time.Millisecond || d > 5*time.Millisecond {
		t.Fatalf("NotBefore %v, want %v", all[2].NotBefore, later)
	}
	if all[3].Event == nil || len(all[3].Event) != 0 {
		t.Fatalf("empty event: %#v", all[3].Event)
	}

	// One group, the limit, nothing claimed.
	for _, c := range []struct {
		group string
		max   int
		want  []int64
	}{{"A", 10, []int64{a1, a2}}, {"A", 1, []int64{a1}}, {"", 2, []int64{a1, a2}}, {"nobody", 5, []int64{}}} {
		got, err := q.Peek(c.group, c.max)
		if err != nil || !equalSeqs(seqsOf(got), c.want) {
			t.Fatalf("Peek(%q, %d) = %v, %v; want %v", c.group, c.max, seqsOf(got), err, c.want)
		}
	}
	l := claim(t, q, ClaimOptions{})
	if l.Seq() != a1 {
		t.Fatalf("after Peek the claim got seq %d, want %d", l.Seq(), a1)
	}
	if err := q.Nack(l, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := q.Peek("A", 1); err != nil || len(got) != 1 || got[0].Seq != a1 || got[0].Attempts != 0 {
		t.Fatalf("Peek after a delivery: %+v, %v; want seq %d, attempts 0 (counted on the lock)", got, err, a1)
	}
	if st := stats(t, q); st.Messages != 4 {
		t.Fatalf("messages %d, want 4", st.Messages)
	}
	for _, bad := range []func() error{
		func() error { _, err := q.Peek("", 0); return err },
		func() error { _, err := q.Peek("A", BatchMax+1); return err },
		func() error { _, err := q.Peek("a\x00b", 1); return err },
	} {
		if err := bad(); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("bad Peek: %v, want ErrInvalidArgument", err)
		}
	}
}

func deadList(t *testing.T) {
	_, q := newQueue(t)
	if err := q.SetMaxAttempts(1); err != nil {
		t.Fatal(err)
	}
	seq, err := q.Publish("g", []byte{1, 0, 2}, PublishOptions{Priority: 3})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, q, "g", "next", 3)
	if err := q.Nack(claim(t, q, ClaimOptions{}), 0); err != nil {
		t.Fatal(err)
	}
	next := claim(t, q, ClaimOptions{}) // the head goes to the dead letters
	if string(next.Event()) != "next" {
		t.Fatalf("claimed %q, want next", next.Event())
	}
	ack(t, q, next)
	dead, err := q.DeadList(10)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadList = %+v, %v; want one", dead, err)
	}
	d := dead[0]
	if d.Seq != seq || d.Group != "g" || d.Priority != 3 || d.Attempts != 1 || !bytes.Equal(d.Event, []byte{1, 0, 2}) {
		t.Fatalf("dead letter %+v", d)
	}
	if d.DeadAt.IsZero() || d.DeadAt.Before(d.PublishedAt) {
		t.Fatalf("DeadAt %v, PublishedAt %v", d.DeadAt, d.PublishedAt)
	}
	if n, _ := q.DeadCount(); n != 1 {
		t.Fatalf("DeadCount %d after DeadList, want 1", n)
	}
	if _, err := q.DeadPurge(); err != nil {
		t.Fatal(err)
	}
	if dead, err := q.DeadList(10); err != nil || len(dead) != 0 {
		t.Fatalf("DeadList after purge = %+v, %v", dead, err)
	}
	if _, err := q.DeadList(0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeadList(0): %v, want ErrInvalidArgument", err)
	}
}

func repairAutomatic(t *testing.T) {
	_, q := newQueue(t)
	if err := q.SetRepairInterval(-time.Second); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("SetRepairInterval(-1s): %v, want ErrInvalidArgument", err)
	}
	if rc, err := q.RepairCounts(); err != nil || rc != (RepairCounts{}) {
		t.Fatalf("RepairCounts at start = %+v, %v", rc, err)
	}
	if err := q.SetRepairInterval(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	db, prefix := splitName(q.Name())
	deleteLock := func() {
		t.Helper()
		if n, err := testmongo.DeleteAll(testURI(t), db, prefix+"_locks"); err != nil || n != 1 {
			t.Fatalf("deleting the lock: %d, %v", n, err)
		}
	}
	seq := publish(t, q, "g", "orphan", 0)
	deleteLock()
	// The first empty claim starts the period; a claim after it repairs and claims.
	var got *Lease
	eventually(t, 10*time.Second, "a claim repairs the orphan by itself", func() bool {
		l, err := q.Claim(context.Background(), ClaimOptions{})
		if err != nil && !errors.Is(err, ErrEmpty) {
			t.Fatal(err)
		}
		got = l
		if l == nil {
			time.Sleep(80 * time.Millisecond)
		}
		return l != nil
	})
	if got.Seq() != seq {
		t.Fatalf("claimed seq %d, want %d", got.Seq(), seq)
	}
	ack(t, q, got)
	rc, err := q.RepairCounts()
	if err != nil || rc.Runs < 1 || rc.Fixed != 1 {
		t.Fatalf("RepairCounts = %+v, %v; want runs >= 1, fixed 1", rc, err)
	}

	// 0 turns it off: an orphan stays invisible.
	if err := q.SetRepairInterval(0); err != nil {
		t.Fatal(err)
	}
	publish(t, q, "h", "orphan 2", 0)
	deleteLock()
	for i := 0; i < 4; i++ {
		claimEmpty(t, q, ClaimOptions{})
		time.Sleep(100 * time.Millisecond)
	}
	if rc2, err := q.RepairCounts(); err != nil || rc2 != rc {
		t.Fatalf("RepairCounts with the repair off = %+v, %v; want %+v", rc2, err, rc)
	}
	if n, err := q.Repair(); err != nil || n != 1 {
		t.Fatalf("Repair = %d, %v; want 1", n, err)
	}
}

func writeConcernErrors(t *testing.T) {
	c, q := newQueue(t)
	ack(t, q, func() *Lease { publish(t, q, "g", "x", 0); return claim(t, q, ClaimOptions{}) }())
	// The test server confirms every write.
	if n := c.WriteConcernErrors(); n != 0 {
		t.Fatalf("WriteConcernErrors = %d, want 0", n)
	}
	if c.CommandCount() == 0 {
		t.Fatal("no commands counted")
	}
	var nilClient *Client
	if n := nilClient.WriteConcernErrors(); n != 0 {
		t.Fatalf("nil client: %d", n)
	}
}
