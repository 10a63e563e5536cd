// api_test.go: the 0.4.0 surface beyond the contract's scenarios: Lease.Text and
// JSON, status names from the library, ErrClosed as the binding's own error, a
// scheduled batch event, and time.Time / time.Duration wherever an instant or a
// duration goes in or out.

package mongomq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLeaseTextJSON(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "a", `{"order":7,"step":"charge é"}`, 0)
	if _, err := q.Publish("b", []byte{'o', 'k', 0xff, 'x'}, PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	publish(t, q, "c", "", 0)

	l := claim(t, q, ClaimOptions{})
	if text, err := l.Text(); err != nil || text != `{"order":7,"step":"charge é"}` {
		t.Fatalf("Text: %q, %v", text, err)
	}
	var v struct {
		Order int
		Step  string
	}
	if err := l.JSON(&v); err != nil || v.Order != 7 || v.Step != "charge é" {
		t.Fatalf("JSON: %+v, %v", v, err)
	}
	ack(t, q, l)

	l = claim(t, q, ClaimOptions{})
	if text, err := l.Text(); err == nil || text != "" || !strings.Contains(err.Error(), "not UTF-8 (byte 2 of 4)") {
		t.Fatalf("Text of invalid UTF-8: %q, %v; want an error naming byte 2", text, err)
	}
	if err := l.JSON(&v); err == nil || !strings.Contains(err.Error(), `group "b"`) {
		t.Fatalf("JSON of a non-JSON event: %v, want an error naming the group", err)
	}
	if string(l.Event()) != "ok\xffx" {
		t.Fatalf("Event after a failed Text: %q", l.Event())
	}
	ack(t, q, l)

	l = claim(t, q, ClaimOptions{})
	if text, err := l.Text(); err != nil || text != "" {
		t.Fatalf("Text of an empty event: %q, %v", text, err)
	}
	ack(t, q, l)
}

// The names are the library's (mq_status_name), not a table of the binding's.
func TestStatusNames(t *testing.T) {
	for st, want := range map[Status]string{
		StatusOK: "MQ_OK", StatusEmpty: "MQ_EMPTY", StatusLeaseLost: "MQ_LEASE_LOST",
		StatusInterrupted: "MQ_INTERRUPTED", StatusCancelled: "MQ_CANCELLED", StatusDuplicate: "MQ_DUPLICATE",
		StatusInvalidArgument: "MQ_ERR_ARG", StatusConnect: "MQ_ERR_CONNECT", StatusServer: "MQ_ERR_SERVER",
		StatusNoMemory: "MQ_ERR_NOMEM", StatusInternal: "MQ_ERR_INTERNAL",
		Status(42): "MQ_UNKNOWN", Status(-100): "MQ_UNKNOWN", Status(1 << 40): "MQ_UNKNOWN",
	} {
		if got := st.String(); got != want {
			t.Errorf("Status(%d).String() = %q, want %q", int(st), got, want)
		}
	}
	e := &Error{Op: "Ack", Status: StatusLeaseLost, Message: "lease lost"}
	if e.Error() != "mongomq: Ack: lease lost (MQ_LEASE_LOST)" {
		t.Errorf("Error(): %q", e.Error())
	}
}

// ErrClosed has no C status: it is no *Error, and errors.Is finds it.
func TestClosedIsTheBindingsOwn(t *testing.T) {
	_, q := newQueue(t)
	q.Close()
	_, err := q.Publish("g", nil, PublishOptions{})
	var e *Error
	if !errors.Is(err, ErrClosed) || errors.As(err, &e) || err.Error() != "mongomq: Publish: queue is closed" {
		t.Fatalf("Publish on a closed queue: %v (an *Error: %v), want ErrClosed only", err, e != nil)
	}
	for _, s := range []error{ErrEmpty, ErrLeaseLost, ErrInvalidArgument, ErrConnect, ErrInterrupted, ErrServer} {
		if errors.Is(err, s) {
			t.Fatalf("the closed error also matches %v", s)
		}
	}
}

// A batch event may be scheduled (Message embeds PublishOptions): the group it
// creates is parked until then; its NotBefore reads back through Peek. On a
// manual clock, so that a slow machine cannot make the event due early.
func TestBatchScheduled(t *testing.T) {
	_, q := newQueue(t)
	start := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	clock := NewManualClock(start)
	defer clock.Close()
	if err := q.SetClock(clock); err != nil {
		t.Fatal(err)
	}
	at := start.Add(time.Minute)
	first, err := q.PublishBatch([]Message{
		{Group: "now", Event: []byte("n")},
		{Group: "later", Event: []byte("l"), PublishOptions: PublishOptions{Priority: 3, NotBefore: at}},
	})
	if err != nil {
		t.Fatalf("PublishBatch: %v", err)
	}
	evs, err := q.Peek("later", 10)
	if err != nil || len(evs) != 1 || evs[0].Seq != first+1 || evs[0].Priority != 3 || !evs[0].NotBefore.Equal(at) {
		t.Fatalf("Peek(later): %+v, %v; want seq %d, priority 3, not before %v", evs, err, first+1, at)
	}
	l := claim(t, q, ClaimOptions{})
	if l.Group() != "now" {
		t.Fatalf("first claim: group %q, want now", l.Group())
	}
	ack(t, q, l)
	clock.Advance(59 * time.Second)
	claimEmpty(t, q, ClaimOptions{})
	clock.Advance(2 * time.Second)
	l = claim(t, q, ClaimOptions{})
	if l.Group() != "later" {
		t.Fatalf("claim after the due time: group %q, want later", l.Group())
	}
	ack(t, q, l)
}

// Instants are time.Time and durations time.Duration, in and out (checked by the
// compiler), and the empty claim's message says what was looked for.
func TestInstantsDurations(t *testing.T) {
	var (
		_ func(*Lease) time.Time                    = (*Lease).Deadline
		_ func(*Queue) (time.Time, error)           = (*Queue).Now
		_ func(*Queue) (time.Duration, error)       = (*Queue).ClockOffset
		_ func(*Queue, *Lease, time.Duration) error = (*Queue).Nack
		_ func(*Queue, *Lease, time.Duration) error = (*Queue).Extend
		_ func(*Queue, time.Duration) error         = (*Queue).SetRepairInterval
		_ func(time.Time) *ManualClock              = NewManualClock
		_ func(*ManualClock) time.Time              = (*ManualClock).Now
		_ func(*ManualClock, time.Duration)         = (*ManualClock).Advance
		_ time.Time                                 = PublishOptions{}.NotBefore
		_ time.Time                                 = StoredEvent{}.PublishedAt
		_ time.Time                                 = StoredEvent{}.DeadAt
		_ time.Time                                 = Stats{}.Now
		_ time.Duration                             = Stats{}.OldestMessageAge
		_ time.Duration                             = ClaimOptions{}.Visibility
		_ time.Duration                             = ClaimOptions{}.Wait
		_ time.Duration                             = WorkOptions{}.IdleTimeout
		_ time.Duration                             = WorkOptions{}.ShutdownTimeout
	)
	_, q := newQueue(t)
	_, err := q.Claim(context.Background(), ClaimOptions{MinPriority: 2, Wait: 50 * time.Millisecond})
	if !errors.Is(err, ErrEmpty) || err.Error() != "mongomq: Claim: no event is due at priority 2 or above (waited 50ms) (MQ_EMPTY)" {
		t.Fatalf("an empty waiting claim: %q", err)
	}
}
