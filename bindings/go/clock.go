// clock.go: ManualClock, a clock kept in C for tests and simulations, and
// Queue.SetClock.

package mongomq

import (
	"runtime"
	"sync"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// ManualClock is a clock for tests and simulations: a time kept in C memory that
// only Set and Advance move. A Queue given it with Queue.SetClock runs on it
// (Queue.Now, PublishOptions.NotBefore, due times, lease deadlines) instead of server time; the
// library reads it from any of its threads and never calls into Go to do so.
//
// A queue keeps every clock it was given until the queue is closed, so closing
// the ManualClock (or dropping it to the garbage collector) while a queue still
// runs on it is safe: the queue goes on reading the time the clock had, which
// nothing moves any more. Close it when done; a finalizer closes an unreachable
// one, as a safety net only. A ManualClock is safe for concurrent use. On a closed
// or nil ManualClock, Now returns the zero Time and Set and Advance do nothing.
type ManualClock struct {
	mu sync.RWMutex            // read lock: a call on c; write lock: releasing it
	c  raw.Struct_SS_mqs_clock // nil once closed
}

// NewManualClock returns a clock reading start. It panics only when C is out of
// memory.
func NewManualClock(start time.Time) *ManualClock {
	c := raw.Mqs_clock_new(timeToEpoch(start))
	if c == nil || c.Swigcptr() == 0 {
		panic("mongomq: NewManualClock: out of memory")
	}
	clock := &ManualClock{c: c}
	liveClocks.Add(1)
	runtime.SetFinalizer(clock, (*ManualClock).Close)
	return clock
}

// use runs f with the C clock under the read lock; false when c is closed or nil.
func (c *ManualClock) use(f func(h raw.Struct_SS_mqs_clock)) bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.c == nil {
		return false
	}
	f(c.c)
	runtime.KeepAlive(c)
	return true
}

// Now is the clock's time (the zero Time once the clock is closed).
func (c *ManualClock) Now() time.Time {
	var s float64
	if !c.use(func(h raw.Struct_SS_mqs_clock) { s = raw.Mqs_clock_now(h) }) {
		return time.Time{}
	}
	return epochToTime(s)
}

// Set moves the clock to t (backwards too). Every queue running on the clock
// sees t from now on.
func (c *ManualClock) Set(t time.Time) {
	c.use(func(h raw.Struct_SS_mqs_clock) { raw.Mqs_clock_set(h, timeToEpoch(t)) })
}

// Advance moves the clock by d (a negative d moves it back).
func (c *ManualClock) Advance(d time.Duration) {
	c.use(func(h raw.Struct_SS_mqs_clock) { raw.Mqs_clock_advance(h, seconds(d)) })
}

// Close releases the Go handle on the clock. Queues running on it keep it (at the
// time it had) until they are closed or given another clock. Closing twice does
// nothing.
func (c *ManualClock) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return nil
	}
	runtime.SetFinalizer(c, nil)
	raw.Mqs_clock_release(c.c)
	c.c = nil
	liveClocks.Add(-1)
	return nil
}

// SetClock makes the queue run on clock c (for tests and simulations): Now,
// NotBefore times, due times and lease deadlines all read c, and the offset measured to
// the server's clock is no longer applied. c nil puts the queue back on server
// time. The queue keeps c until it is closed, so c may be closed first. It applies
// to this Queue value only (another Queue on the same collections keeps its own
// clock). ErrClosed when the queue or c is closed.
func (q *Queue) SetClock(c *ManualClock) error {
	const op = "SetClock"
	if c == nil {
		return q.use(op, func(h raw.Struct_SS_mq_queue) {
			raw.Mqs_queue_set_clock(h, raw.SwigcptrStruct_SS_mqs_clock(0))
		})
	}
	var err error
	if !c.use(func(ch raw.Struct_SS_mqs_clock) {
		err = q.use(op, func(h raw.Struct_SS_mq_queue) { raw.Mqs_queue_set_clock(h, ch) })
	}) {
		return closedError(op, "clock")
	}
	return err
}
