// workloop.go: one run of the worker helper (Work, Worker): the loops that claim
// leases, run the handler with a heartbeat and ack or nack, back off on failures,
// and give back a lease claimed as the stop came.

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// workRun is one run of Work: its options, its two stops and its bookkeeping.
type workRun struct {
	q          *Queue
	o          WorkOptions // with the defaults filled in
	handler    Handler
	stopCtx    context.Context // done: stop claiming
	stop       context.CancelFunc
	handlerCtx context.Context // done: running handlers are abandoned
	abandon    context.CancelFunc
	abandoned  atomic.Bool

	active   atomic.Int64 // handlers running now
	lastBusy atomic.Int64 // UnixNano of the last lease claimed or handler ended (IdleTimeout)

	mu    sync.Mutex
	fatal error
}

func (r *workRun) report(err error) {
	if err != nil {
		r.o.OnError(err)
	}
}

func (r *workRun) setFatal(err error) {
	r.mu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.mu.Unlock()
	r.stop()
}

func (r *workRun) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// loop claims and handles leases until the stop.
func (r *workRun) loop() {
	pause := time.Duration(0)
	for r.stopCtx.Err() == nil {
		stop, wait := r.idle(time.Second) // slices of at most 1 s; the stop cancels them
		if stop {
			return
		}
		lease, err := r.q.Claim(r.stopCtx, ClaimOptions{
			Visibility:  r.o.Visibility,
			MinPriority: r.o.MinPriority,
			Wait:        wait,
			MaxEvents:   r.o.MaxEvents,
			WorkerID:    r.o.WorkerID,
			Partitions:  r.o.Partitions,
		})
		if err != nil {
			switch {
			case r.stopCtx.Err() != nil:
				return
			case errors.Is(err, ErrEmpty):
				pause = 0
			case errors.Is(err, ErrClosed), errors.Is(err, ErrInterrupted), errors.Is(err, ErrInvalidArgument):
				r.setFatal(err)
				return
			default: // connect, server: back off and go on
				r.report(err)
				if pause == 0 {
					pause = 100 * time.Millisecond
				} else if pause *= 2; pause > 5*time.Second {
					pause = 5 * time.Second
				}
				t := time.NewTimer(pause)
				select {
				case <-t.C:
				case <-r.stopCtx.Done():
					t.Stop()
					return
				}
			}
			continue
		}
		pause = 0
		if r.stopCtx.Err() != nil {
			// The stop came while the claim was taking this lease: no handler ran,
			// so it goes back without counting a delivery.
			if err := r.q.Unclaim(lease); err != nil {
				r.report(err)
			}
			lease.Close()
			return
		}
		r.active.Add(1)
		r.lastBusy.Store(time.Now().UnixNano())
		r.handle(lease)
		r.lastBusy.Store(time.Now().UnixNano()) // before active drops: idle counts from here
		r.active.Add(-1)
	}
}

// handle runs the handler on one lease with a heartbeat, then acks or nacks it. A
// queue with a Telemetry is told of the handler run (Process, whose context the
// handler gets) and of the ack or nack (Settle, in that context).
func (r *workRun) handle(lease *Lease) {
	defer lease.Close()
	ctx, t := r.handlerCtx, r.q.telemetry()
	var processed func(error)
	if t != nil {
		ctx, processed = t.Process(ctx, ProcessOp{Queue: r.q.name, Lease: lease})
	}
	beatStop, beatDone := make(chan struct{}), make(chan struct{})
	go r.heartbeat(lease, beatStop, beatDone)
	herr := r.call(ctx, lease)
	close(beatStop)
	<-beatDone
	if processed != nil {
		processed(herr)
	}
	if r.abandoned.Load() {
		return // past the shutdown timeout: the lease runs out and is redelivered
	}
	if herr == nil {
		if err := r.q.ack(ctx, lease, t, true); err != nil {
			r.report(err)
		}
		return
	}
	r.report(fmt.Errorf("mongomq: Work: handler failed on group %q seq %d (attempt %d): %w",
		lease.Group(), lease.Seq(), lease.Attempts(), herr))
	if err := r.q.nack(ctx, lease, r.backoff(lease.Attempts()), t, true); err != nil {
		r.report(err)
	}
}

// call runs the handler with ctx; a panic becomes a *PanicError with the stack.
func (r *workRun) call(ctx context.Context, lease *Lease) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.handler(ctx, lease)
}

// backoff is min(cap, base * 2^(attempts-1)) scaled by a jitter in [0.5, 1].
func (r *workRun) backoff(attempts int) time.Duration {
	d := r.o.BackoffBase
	for i := 1; i < attempts && d < r.o.BackoffCap; i++ {
		d *= 2
	}
	if d > r.o.BackoffCap {
		d = r.o.BackoffCap
	}
	return time.Duration(float64(d) * (0.5 + 0.5*rand.Float64()))
}

// heartbeat extends the lease by Visibility every Visibility/3 until stop, until
// the handler is abandoned, or until the lease is lost.
func (r *workRun) heartbeat(lease *Lease, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := r.o.Visibility / 3
	if every < time.Millisecond {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-r.handlerCtx.Done():
			return
		case <-t.C:
			if err := r.q.Extend(lease, r.o.Visibility); err != nil {
				r.report(err)
				if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrClosed) {
					return
				}
			}
		}
	}
}

// detached carries a context's values without its cancellation.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool)         { return time.Time{}, false }
func (detached) Done() <-chan struct{}               { return nil }
func (detached) Err() error                          { return nil }
func (d detached) Value(key interface{}) interface{} { return d.parent.Value(key) }
