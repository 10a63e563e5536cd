// queue.go: Queue, its handle and the calls of the queue itself: claim, ack,
// nack, unclaim, extend, interrupt, dead letters, repair, purge and drop. (The
// publishes are in publish.go; what a keyed publish did, and the dedup window and
// scope, are in dedup.go.)

package mongomq

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Priorities: a group's priority is fixed by the publish that creates it.
const (
	PriorityMin = 0
	PriorityMax = 4
	// BatchMax is the most events one PublishBatch or one batch lease may hold.
	BatchMax = 10000
)

// DefaultVisibility is the lease time of a claim whose Visibility is 0.
const DefaultVisibility = 30 * time.Second

// Queue is one queue: the collections {db}.{prefix}_* of a MongoDB database. It is
// safe for concurrent use by any number of goroutines. Close it when done (a
// finalizer closes an unreachable one, as a safety net only); every call on a
// closed Queue returns ErrClosed.
type Queue struct {
	client     *Client
	name       string
	partitions int // fixed at open (partitions.go)

	closing atomic.Bool  // set first by Close: waiting claims then end with ErrClosed
	mu      sync.RWMutex // read lock: a call on q; write lock: destroying q
	q       raw.Struct_SS_mq_queue

	tel atomic.Pointer[telemetryBox] // SetTelemetry's; nil: none (telemetry.go)
}

// Name is "db.prefix".
func (q *Queue) Name() string {
	if q == nil {
		return ""
	}
	return q.name
}

// Close closes the queue: waiting claims on it end (with ErrClosed), Close waits
// for calls still running on it, then releases it. Closing twice does nothing.
func (q *Queue) Close() error {
	if q == nil {
		return nil
	}
	if q.closing.CompareAndSwap(false, true) {
		// Wake waiting claims so the write lock below need not wait for their timeouts.
		q.mu.RLock()
		if q.q != nil {
			raw.Mq_queue_interrupt(q.q)
		}
		q.mu.RUnlock()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.q == nil {
		return nil
	}
	runtime.SetFinalizer(q, nil)
	raw.Mqs_queue_destroy(q.q)
	q.q = nil
	liveQueues.Add(-1)
	q.client.release()
	return nil
}

// use runs f with the C queue under the read lock, or returns ErrClosed.
func (q *Queue) use(op string, f func(h raw.Struct_SS_mq_queue)) error {
	if q == nil {
		return closedError(op, "queue")
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.q == nil || q.closing.Load() {
		return closedError(op, "queue")
	}
	f(q.q)
	runtime.KeepAlive(q)
	return nil
}

// run is use + call: f gets the C queue and a fresh mq_error. Every call made
// through it waits for the server, so it is timed for yieldAfter.
func (q *Queue) run(op string, f func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error)) error {
	var err error
	start := time.Now()
	uerr := q.use(op, func(h raw.Struct_SS_mq_queue) {
		err = call(op, func(e raw.Struct_SS_mq_error) { f(h, e) })
	})
	yieldAfter(start)
	if uerr != nil {
		return uerr
	}
	return err
}

// inServer is the time spent in calls that wait for the server, all goroutines and
// queues together (nanoseconds; it wraps around harmlessly).
var inServer atomic.Uint64

// yieldQuantum: see yieldAfter.
const yieldQuantum = 2 * time.Millisecond

// yieldAfter passes through the Go scheduler (runtime.Gosched) once per 2 ms spent
// waiting for the server, counted from start to now. Why: a goroutine that spends
// its time in C calls never goes through the scheduler on its own (each cgo call
// returns to the same P), so after 10 ms on one scheduling tick the runtime's sysmon
// treats it as a goroutine to preempt. It cannot be preempted in C, so sysmon takes
// its P in the middle of the call, hands it to another thread, and goes back to
// waking up every 20 us; with a few such goroutines it never slows down again. In
// the bench that cost two to three extra thread switches per call, more CPU than
// all of the binding's own work (bench/README.md, "Go: what its extra CPU was"). A
// Gosched is cheap but not free (it wakes an idle thread to look for work), so it
// comes once per quantum, not after every call. The clock is shared: the call that
// crosses a multiple of the quantum yields, so each goroutine yields about once per
// 2 ms of its own calls however many goroutines share the queues.
func yieldAfter(start time.Time) {
	d := uint64(time.Since(start))
	total := inServer.Add(d)
	if (total-d)/uint64(yieldQuantum) != total/uint64(yieldQuantum) {
		runtime.Gosched()
	}
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// ClaimOptions are a Claim's options. The zero value claims one event with the
// default visibility, any priority, without waiting.
type ClaimOptions struct {
	// Visibility is how long the lease lasts unless acked, nacked or extended;
	// 0 is DefaultVisibility (30 s).
	Visibility time.Duration
	// MinPriority is a floor: only groups with priority >= MinPriority are considered.
	MinPriority int
	// Wait is how long to wait for a group to become due; 0 does not wait. The
	// context ends a wait early.
	Wait time.Duration
	// MaxEvents > 1 claims up to that many consecutive events of one group (a batch
	// lease); 0 is 1.
	MaxEvents int
	// WorkerID names the claimer in the lock documents; "" is the library's
	// default, "host:pid".
	WorkerID string
	// Partitions, on a partitioned queue (QueueOptions.Partitions), are the only
	// partitions this claim takes from (distinct, each in 0..Partitions()-1; see
	// GroupPartition); nil or empty: every partition. A claim that waits wakes for
	// events of these partitions only.
	Partitions []int
}

// Claim leases the head event of the due group that has waited longest (up to
// MaxEvents events of it), waiting up to opts.Wait for one. It returns an error
// that errors.Is ErrEmpty when no group was due by the end of the wait. A cancelled
// or expired ctx ends the wait within a few milliseconds with ctx.Err(); it ends
// this call only: other claims on the queue go on. A lease already taken when ctx
// is done is returned, never lost. Queue.Interrupt ends a waiting claim with
// ErrInterrupted (a claim without Wait still works), Queue.Close any with ErrClosed.
func (q *Queue) Claim(ctx context.Context, opts ClaimOptions) (*Lease, error) {
	const op = "Claim"
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkText(op, "WorkerID", opts.WorkerID); err != nil {
		return nil, err
	}
	vis := opts.Visibility
	if vis == 0 {
		vis = DefaultVisibility
	}
	maxEvents := opts.MaxEvents
	if maxEvents == 0 {
		maxEvents = 1
	}
	if maxEvents < 0 {
		return nil, argError(op, fmt.Sprintf("MaxEvents must be 1..%d (got %d)", BatchMax, maxEvents))
	}
	if err := checkPriority(op, "MinPriority", opts.MinPriority); err != nil {
		return nil, err
	}
	parts, err := packPartitions(op, opts.Partitions)
	if err != nil {
		return nil, err
	}

	// One mq_cancel per waiting call, triggered by a goroutine watching ctx; the
	// goroutine is gone before the cancel is destroyed.
	var cancel raw.SwigcptrStruct_SS_mq_cancel // 0: none
	var stop, stopped chan struct{}
	if opts.Wait > 0 && ctx.Done() != nil {
		if err := call(op, func(e raw.Struct_SS_mq_error) { raw.Mq_cancel_new(&cancel, e) }); err != nil {
			return nil, err
		}
		stop, stopped = make(chan struct{}), make(chan struct{})
		go func(c raw.Struct_SS_mq_cancel) {
			defer close(stopped)
			select {
			case <-ctx.Done():
				raw.Mq_cancel_trigger(c)
			case <-stop:
			}
		}(cancel)
	}

	var l raw.SwigcptrStruct_SS_mq_lease
	var st Status
	start := time.Now()
	uerr := q.use(op, func(h raw.Struct_SS_mq_queue) {
		c := newCerr()
		defer c.free()
		if c.p == nil || c.p.Swigcptr() == 0 {
			st, err = StatusNoMemory, &Error{Op: op, Status: StatusNoMemory, Message: "out of memory"}
			return
		}
		raw.Mqs_claim_in(h, opts.WorkerID, seconds(vis), opts.MinPriority, int64(maxEvents), seconds(opts.Wait), cancel,
			parts, &l, c.p)
		st = c.status()
		err = c.err(op)
	})
	if stop != nil {
		close(stop)
		<-stopped
		raw.Mq_cancel_destroy(cancel)
	}
	yieldAfter(start)
	if uerr != nil {
		return nil, uerr
	}
	if l != 0 {
		return newLease(l), nil // MQ_OK (a lease is never dropped, cancelled or not)
	}
	switch st {
	case StatusCancelled:
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, context.Canceled
	case StatusInterrupted:
		if q.closing.Load() {
			return nil, closedError(op, "queue")
		}
	case StatusEmpty:
		// The library says MQ_EMPTY with no message of its own: say what was looked for.
		var e *Error
		if asError(err, &e) && e.Message == "" {
			e.Message = emptyMessage(opts.MinPriority, opts.Wait)
		}
	case StatusOK:
		return nil, &Error{Op: op, Status: StatusInternal, Message: "no lease and no error"}
	}
	return nil, err
}

// emptyMessage is an empty claim's message: no group was due at the claim's floor,
// at once or within its wait.
func emptyMessage(minPriority int, wait time.Duration) string {
	msg := "no event is due"
	if minPriority > PriorityMin {
		msg += fmt.Sprintf(" at priority %d or above", minPriority)
	}
	if wait > 0 {
		return msg + " (waited " + wait.String() + ")"
	}
	return msg + " (claimed without waiting)"
}

// Ack removes the leased event(s) and releases the group. ErrLeaseLost when the
// lease expired and another worker took the group (the event is removed all the
// same). The lease is closed afterwards unless the call failed before reaching a
// verdict (a connect or server error): then it may be retried.
func (q *Queue) Ack(lease *Lease) error {
	return q.ack(context.Background(), lease, q.telemetry(), false)
}

// ack is Ack, told to t (the worker's with its handler's ctx and the Telemetry its
// handler run was told to).
func (q *Queue) ack(ctx context.Context, lease *Lease, t Telemetry, inWorker bool) error {
	done := q.startSettle(ctx, t, "ack", lease, inWorker)
	err := q.settle("Ack", lease, func(h raw.Struct_SS_mq_queue, l raw.Struct_SS_mq_lease, e raw.Struct_SS_mq_error) {
		raw.Mq_ack(h, l, e)
	})
	if done != nil {
		done(err)
	}
	return err
}

// Nack gives the leased event(s) back: delay 0 makes the group claimable at once
// (the same head is redelivered with Attempts+1); delay > 0 holds the group that
// long first. Closes the lease as Ack does.
func (q *Queue) Nack(lease *Lease, delay time.Duration) error {
	return q.nack(context.Background(), lease, delay, q.telemetry(), false)
}

// nack is Nack, told to t as ack is.
func (q *Queue) nack(ctx context.Context, lease *Lease, delay time.Duration, t Telemetry, inWorker bool) error {
	done := q.startSettle(ctx, t, "nack", lease, inWorker)
	err := q.settle("Nack", lease, func(h raw.Struct_SS_mq_queue, l raw.Struct_SS_mq_lease, e raw.Struct_SS_mq_error) {
		raw.Mq_nack(h, l, seconds(delay), e)
	})
	if done != nil {
		done(err)
	}
	return err
}

// startSettle tells t of an ack or nack (nil: there is no t).
func (q *Queue) startSettle(ctx context.Context, t Telemetry, name string, lease *Lease, inWorker bool) func(error) {
	if t == nil {
		return nil
	}
	return t.Settle(ctx, SettleOp{Queue: q.name, Name: name, Lease: lease, InWorker: inWorker})
}

// Unclaim gives back a lease no handler ran (a claim that returned as the program
// was told to stop). Unlike Nack it is not a delivery: the group gets back the
// attempts count and the place in line the claim found, so the same head is claimed
// next with the same Attempts. ErrLeaseLost (nothing changed) when the group is no
// longer this lease's. Closes the lease as Ack does; after ErrConnect retry with the
// same lease: a retry that finds its earlier give-back applied returns nil.
func (q *Queue) Unclaim(lease *Lease) error {
	return q.settle("Unclaim", lease, func(h raw.Struct_SS_mq_queue, l raw.Struct_SS_mq_lease, e raw.Struct_SS_mq_error) {
		raw.Mq_unclaim(h, l, e)
	})
}

// Extend moves the lease's expiry to now + visibility (and Deadline with it).
func (q *Queue) Extend(lease *Lease, visibility time.Duration) error {
	const op = "Extend"
	return q.withLease(op, lease, func(h raw.Struct_SS_mq_queue, l raw.Struct_SS_mq_lease, e raw.Struct_SS_mq_error) {
		raw.Mq_extend(h, l, seconds(visibility), e)
	})
}

// withLease runs f with the C queue, the C lease and a fresh mq_error: the queue's
// or the lease's ErrClosed, else the call's error.
func (q *Queue) withLease(op string, lease *Lease, f func(raw.Struct_SS_mq_queue, raw.Struct_SS_mq_lease, raw.Struct_SS_mq_error)) error {
	var callErr, leaseErr error
	start := time.Now()
	queueErr := q.use(op, func(h raw.Struct_SS_mq_queue) {
		leaseErr = lease.use(op, func(l raw.Struct_SS_mq_lease) {
			callErr = call(op, func(e raw.Struct_SS_mq_error) { f(h, l, e) })
		})
	})
	yieldAfter(start)
	switch {
	case queueErr != nil:
		return queueErr
	case leaseErr != nil:
		return leaseErr
	}
	return callErr
}

func (q *Queue) settle(op string, lease *Lease, f func(raw.Struct_SS_mq_queue, raw.Struct_SS_mq_lease, raw.Struct_SS_mq_error)) error {
	err := q.withLease(op, lease, f)
	var e *Error
	if err == nil || (asError(err, &e) && e.Status == StatusLeaseLost) {
		_ = lease.Close()
	}
	return err
}

// Interrupt ends every waiting claim (Wait > 0) on this queue with ErrInterrupted
// and makes every later one return ErrInterrupted at once: for shutdown. There is
// no reset (open a new Queue to wait again); a claim without Wait and the other
// calls keep working. To end one claim, cancel its context instead.
func (q *Queue) Interrupt() error {
	return q.use("Interrupt", func(h raw.Struct_SS_mq_queue) { raw.Mq_queue_interrupt(h) })
}

// SetMaxAttempts turns dead letters on (n > 0): a claim that would deliver a head
// for the (n+1)th time moves it to the dead letters instead. 0 (the default) is
// unlimited. It applies to this Queue value.
func (q *Queue) SetMaxAttempts(n int) error {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return argError("SetMaxAttempts", fmt.Sprintf("max_attempts out of range (got %d)", n))
	}
	return q.run("SetMaxAttempts", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_queue_set_max_attempts(h, n, e)
	})
}

// Now is the queue's clock: server time (this machine's clock plus the measured
// offset), or the ManualClock given with SetClock. PublishOptions.NotBefore and
// Lease.Deadline are on it.
func (q *Queue) Now() (time.Time, error) {
	var s float64
	err := q.use("Now", func(h raw.Struct_SS_mq_queue) { s = raw.Mq_queue_now(h) })
	return epochToTime(s), err
}

// ClockOffset is the server clock's offset to this machine's, measured when the
// queue was opened (the queue runs on server time: see Now).
func (q *Queue) ClockOffset() (time.Duration, error) {
	var s float64
	err := q.use("ClockOffset", func(h raw.Struct_SS_mq_queue) { s = raw.Mq_queue_clock_offset(h) })
	return time.Duration(s * float64(time.Second)), err
}

// DeadCount is the number of dead letters.
func (q *Queue) DeadCount() (int64, error) {
	var n int64
	err := q.run("DeadCount", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_dead_count(h, &n, e) })
	return n, err
}

// DeadRequeue publishes the dead letter seq again at the tail of its group and
// returns its new sequence number. A seq that is no dead letter is ErrInvalidArgument.
func (q *Queue) DeadRequeue(seq int64) (int64, error) {
	var n int64
	err := q.run("DeadRequeue", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_dead_requeue(h, seq, &n, e) })
	return n, err
}

// DeadPurge removes every dead letter and returns how many there were.
func (q *Queue) DeadPurge() (int64, error) {
	var n int64
	err := q.run("DeadPurge", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_dead_purge(h, &n, e) })
	return n, err
}

// Repair re-creates the lock of every group that has events but no lock (a
// publisher that died between its two writes) and returns how many it created.
// It reads every group: for start-up and a periodic sweep, not for every claim.
func (q *Queue) Repair() (int64, error) {
	var n int64
	err := q.run("Repair", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_repair(h, &n, e) })
	return n, err
}

// PurgeGroup removes a group's events and its lock; a worker holding it gets
// ErrLeaseLost from Ack, Nack and Extend.
func (q *Queue) PurgeGroup(group string) error {
	if err := checkText("PurgeGroup", "group", group); err != nil {
		return err
	}
	return q.run("PurgeGroup", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_purge_group(h, group, e) })
}

// Drop drops the queue's collections (for tests and tooling). The Queue stays
// usable, but without its indexes: open it again before real use.
func (q *Queue) Drop() error {
	return q.run("Drop", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_queue_drop(h, e) })
}
