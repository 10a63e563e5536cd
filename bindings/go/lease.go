// lease.go: Lease, one claimed group as Go values (its events, seqs, attempts,
// deadline; the attributes' accessors are in attrs.go), the event as text or JSON,
// and its C handle's lifetime.

package mongomq

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Lease is one claimed group: its head event (or, from a claim with MaxEvents > 1,
// up to MaxEvents consecutive events of the group, in FIFO order). Its fields are
// copied into Go memory when it is claimed, so the accessors work at any time,
// also after the lease is closed or its queue is gone. A Lease is a plain value
// that may outlive its Queue; it is safe for concurrent use (Extend from a
// heartbeat goroutine while the handler runs, say). The accessors of a nil *Lease
// return zero values.
//
// Its C handle, which Ack, Nack, Unclaim and Extend need, is released by Ack, Nack
// and Unclaim (when they reached the server, also with ErrLeaseLost), by Close, and
// by a finalizer as a safety net. Ack, Nack, Unclaim or Extend on a closed lease
// return ErrClosed.
type Lease struct {
	mu sync.RWMutex // read lock: a call using l; write lock: destroying it
	l  raw.Struct_SS_mq_lease

	seq       int64
	group     string
	token     string
	attempts  int
	partition int
	seqs      []int64
	events    [][]byte
	attrs     [][]Attr // per event, nil for none (0.7.0)

	dmu      sync.Mutex
	deadline float64 // epoch seconds on the queue clock
}

func newLease(l raw.Struct_SS_mq_lease) *Lease {
	n := int(raw.Mq_lease_count(l))
	lease := &Lease{
		l:         l,
		seq:       raw.Mq_lease_seq(l),
		group:     raw.Mq_lease_group(l),
		token:     raw.Mq_lease_token(l),
		attempts:  raw.Mq_lease_attempts(l),
		partition: raw.Mq_lease_partition(l),
		deadline:  raw.Mq_lease_deadline(l),
		seqs:      make([]int64, n),
		events:    make([][]byte, n),
		attrs:     make([][]Attr, n),
	}
	for i := 0; i < n; i++ {
		lease.seqs[i] = raw.Mq_lease_seq_at(l, int64(i))
		lease.events[i] = raw.Mqs_lease_event_at(l, int64(i)) // copied
		lease.attrs[i] = leaseAttrs(l, i)                     // copied
	}
	liveLeases.Add(1)
	runtime.SetFinalizer(lease, (*Lease).Close)
	return lease
}

// Seq is the head event's sequence number.
func (l *Lease) Seq() int64 {
	if l == nil {
		return 0
	}
	return l.seq
}

// Group is the group id.
func (l *Lease) Group() string {
	if l == nil {
		return ""
	}
	return l.group
}

// Partition is the partition of the lease's group: GroupPartition(Group(),
// q.Partitions()), 0 in a queue of one partition (0.8.0).
func (l *Lease) Partition() int {
	if l == nil {
		return 0
	}
	return l.partition
}

// Token is the lease's fencing token ("worker:random"): the lock carries it while
// this lease holds the group. For logs and diagnostics.
func (l *Lease) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Event is the head event's bytes (exactly as published; empty, not nil, for an
// empty event). The slice is the lease's own: copy it before changing it.
func (l *Lease) Event() []byte {
	if l == nil || len(l.events) == 0 {
		return []byte{}
	}
	return l.events[0]
}

// Text is the head event as a string: its bytes, which must be UTF-8. An event
// that is not valid UTF-8 is an error naming the first bad byte (Event still has
// its bytes).
func (l *Lease) Text() (string, error) {
	ev := l.Event()
	if !utf8.Valid(ev) {
		bad := 0
		for bad < len(ev) {
			r, n := utf8.DecodeRune(ev[bad:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			bad += n
		}
		return "", fmt.Errorf("mongomq: Lease.Text: the event of group %q seq %d is not UTF-8 (byte %d of %d)",
			l.Group(), l.Seq(), bad, len(ev))
	}
	return string(ev), nil
}

// JSON decodes the head event, as JSON, into v (as json.Unmarshal does).
func (l *Lease) JSON(v any) error {
	if err := json.Unmarshal(l.Event(), v); err != nil {
		return fmt.Errorf("mongomq: Lease.JSON: the event of group %q seq %d: %w", l.Group(), l.Seq(), err)
	}
	return nil
}

// Attempts is how often the head has been delivered: 1 on its first delivery.
func (l *Lease) Attempts() int {
	if l == nil {
		return 0
	}
	return l.attempts
}

// Count is the number of events in the lease (1 unless claimed with MaxEvents > 1).
func (l *Lease) Count() int {
	if l == nil {
		return 0
	}
	return len(l.events)
}

// SeqAt is the sequence number of event i (0 is the head), 0 out of range.
func (l *Lease) SeqAt(i int) int64 {
	if l == nil || i < 0 || i >= len(l.seqs) {
		return 0
	}
	return l.seqs[i]
}

// EventAt is the bytes of event i (0 is the head), nil out of range.
func (l *Lease) EventAt(i int) []byte {
	if l == nil || i < 0 || i >= len(l.events) {
		return nil
	}
	return l.events[i]
}

// Seqs is the sequence numbers of the lease's events, in order (a new slice).
func (l *Lease) Seqs() []int64 {
	if l == nil {
		return nil
	}
	return append([]int64(nil), l.seqs...)
}

// Events is the lease's events, in order (a new slice of the lease's byte slices).
func (l *Lease) Events() [][]byte {
	if l == nil {
		return nil
	}
	return append([][]byte(nil), l.events...)
}

// Deadline is when the lease runs out, on the queue's clock (server time): the
// claim's time plus its visibility, moved by Extend and by Nack with a delay.
func (l *Lease) Deadline() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.dmu.Lock()
	d := l.deadline
	l.dmu.Unlock()
	return epochToTime(d)
}

// Close releases the lease's C handle without acking or nacking it: the lease runs
// out and the head is redelivered. Closing twice does nothing.
func (l *Lease) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.l != nil {
		runtime.SetFinalizer(l, nil)
		raw.Mq_lease_destroy(l.l)
		l.l = nil
		liveLeases.Add(-1)
	}
	return nil
}

// use runs f with the lease's C handle under the read lock; ErrClosed if closed.
func (l *Lease) use(op string, f func(h raw.Struct_SS_mq_lease)) error {
	if l == nil {
		return argError(op, "lease is nil")
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.l == nil {
		return closedError(op, "lease")
	}
	f(l.l)
	// Reading the deadline here keeps Deadline() current after Extend and Nack.
	d := raw.Mq_lease_deadline(l.l)
	l.dmu.Lock()
	l.deadline = d
	l.dmu.Unlock()
	runtime.KeepAlive(l)
	return nil
}

func epochToTime(s float64) time.Time {
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func timeToEpoch(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

func seconds(d time.Duration) float64 { return d.Seconds() }
