package mongomq

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
)

// Handler handles one lease. Returning nil acks it; returning an error (or
// panicking) nacks it with back-off. ctx carries the values of Work's context but
// not its cancellation: a stop lets running handlers finish; ctx is cancelled only
// when the shutdown timeout abandons the handler.
type Handler func(ctx context.Context, lease *Lease) error

// WorkOptions are Work's options; the zero value of each field is its default.
type WorkOptions struct {
	Concurrency     int           // handlers running at once; default 1
	Visibility      time.Duration // lease time; default 30 s; extended every Visibility/3 while a handler runs
	MinPriority     int           // priority floor of the claims; default 0
	Batch           int           // events per lease (the handler gets the lease); default 1
	BackoffBase     time.Duration // first nack delay; default 1 s
	BackoffCap      time.Duration // longest nack delay; default 60 s
	MaxAttempts     int           // > 0: set on the queue (SetMaxAttempts), so a head delivered that often goes to the dead letters; default 0, unlimited
	ShutdownTimeout time.Duration // how long a stop waits for running handlers; default 30 s
	WorkerID        string        // default: the library's "host:pid"
	// OnError, if set, is told of what Work recovers from: a handler's error, an
	// ack, nack or unclaim that failed (ErrLeaseLost included), a failed claim or
	// extend.
	// It may be called from several goroutines at once.
	OnError func(error)
}

// ErrShutdownTimeout is returned by Work when handlers were still running at the
// end of the shutdown timeout; their leases run out and their events are
// redelivered.
var ErrShutdownTimeout = errors.New("mongomq: Work: handlers still running at the shutdown timeout were abandoned")

// Work runs handler on the queue's leases with opts.Concurrency goroutines until
// ctx is done, then shuts down gracefully: it stops claiming (waiting claims are
// cancelled at once; a lease a claim took as the stop came, before its handler
// started, is given back with Unclaim, so it counts no delivery), waits up to
// opts.ShutdownTimeout for running handlers to finish and be acked or nacked, and
// returns nil (ErrShutdownTimeout if some had to be abandoned). A handler's success acks its lease; a failure nacks it with the
// delay min(BackoffCap, BackoffBase * 2^(attempts-1)) times a jitter in [0.5, 1].
// While a handler runs its lease is extended every Visibility/3. Errors of the
// queue itself (connect, server) back off from 100 ms to 5 s and never end Work;
// a closed or interrupted queue does (after the same graceful shutdown), as does a
// bad option.
func (q *Queue) Work(ctx context.Context, opts WorkOptions, handler Handler) error {
	const op = "Work"
	if handler == nil {
		return argError(op, "handler is nil")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if o.MaxAttempts > 0 {
		if err := q.SetMaxAttempts(o.MaxAttempts); err != nil {
			return err
		}
	}

	w := &worker{q: q, o: o, handler: handler}
	w.stopCtx, w.stop = context.WithCancel(ctx)
	defer w.stop()
	w.handlerCtx, w.abandon = context.WithCancel(detached{ctx})
	defer w.abandon()

	var wg sync.WaitGroup
	for i := 0; i < o.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()

	// Phase 1: run until told to stop (or a fatal error stopped every loop).
	select {
	case <-finished:
	case <-w.stopCtx.Done():
	}
	// Phase 2: claims are cancelled; running handlers get ShutdownTimeout.
	timer := time.NewTimer(o.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		w.abandoned.Store(true)
		w.abandon()
		if f := w.fatalErr(); f != nil {
			return f
		}
		return ErrShutdownTimeout
	}
	return w.fatalErr()
}

func (o WorkOptions) withDefaults() (WorkOptions, error) {
	const op = "Work"
	if o.Concurrency < 0 {
		return o, argError(op, fmt.Sprintf("Concurrency must be >= 1 (got %d)", o.Concurrency))
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.Visibility < 0 {
		return o, argError(op, fmt.Sprintf("Visibility must be > 0 (got %s)", o.Visibility))
	}
	if o.Visibility == 0 {
		o.Visibility = DefaultVisibility
	}
	if o.MinPriority < PriorityMin || o.MinPriority > PriorityMax {
		return o, argError(op, fmt.Sprintf("MinPriority must be %d..%d (got %d)", PriorityMin, PriorityMax, o.MinPriority))
	}
	if o.Batch < 0 || o.Batch > BatchMax {
		return o, argError(op, fmt.Sprintf("Batch must be 1..%d (got %d)", BatchMax, o.Batch))
	}
	if o.Batch == 0 {
		o.Batch = 1
	}
	if o.BackoffBase < 0 || o.BackoffCap < 0 || o.ShutdownTimeout < 0 {
		return o, argError(op, "BackoffBase, BackoffCap and ShutdownTimeout must not be negative")
	}
	if o.BackoffBase == 0 {
		o.BackoffBase = time.Second
	}
	if o.BackoffCap == 0 {
		o.BackoffCap = time.Minute
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.MaxAttempts < 0 {
		return o, argError(op, fmt.Sprintf("MaxAttempts must be >= 0 (got %d)", o.MaxAttempts))
	}
	return o, checkText(op, "WorkerID", o.WorkerID)
}

type worker struct {
	q          *Queue
	o          WorkOptions
	handler    Handler
	stopCtx    context.Context // done: stop claiming
	stop       context.CancelFunc
	handlerCtx context.Context // done: running handlers are abandoned
	abandon    context.CancelFunc
	abandoned  atomic.Bool

	mu    sync.Mutex
	fatal error
}

func (w *worker) report(err error) {
	if w.o.OnError != nil && err != nil {
		w.o.OnError(err)
	}
}

func (w *worker) setFatal(err error) {
	w.mu.Lock()
	if w.fatal == nil {
		w.fatal = err
	}
	w.mu.Unlock()
	w.stop()
}

func (w *worker) fatalErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

// loop claims and handles leases until the stop.
func (w *worker) loop() {
	pause := time.Duration(0)
	for w.stopCtx.Err() == nil {
		lease, err := w.q.Claim(w.stopCtx, ClaimOptions{
			Visibility:  w.o.Visibility,
			MinPriority: w.o.MinPriority,
			Wait:        time.Second, // slices of 1 s; the stop cancels them
			MaxEvents:   w.o.Batch,
			WorkerID:    w.o.WorkerID,
		})
		if err != nil {
			switch {
			case w.stopCtx.Err() != nil:
				return
			case errors.Is(err, ErrEmpty):
				pause = 0
			case errors.Is(err, ErrClosed), errors.Is(err, ErrInterrupted), errors.Is(err, ErrInvalidArgument):
				w.setFatal(err)
				return
			default: // connect, server: back off and go on
				w.report(err)
				if pause == 0 {
					pause = 100 * time.Millisecond
				} else if pause *= 2; pause > 5*time.Second {
					pause = 5 * time.Second
				}
				t := time.NewTimer(pause)
				select {
				case <-t.C:
				case <-w.stopCtx.Done():
					t.Stop()
					return
				}
			}
			continue
		}
		pause = 0
		if w.stopCtx.Err() != nil {
			// The stop came while the claim was taking this lease: no handler ran,
			// so it goes back without counting a delivery.
			if err := w.q.Unclaim(lease); err != nil {
				w.report(err)
			}
			lease.Close()
			return
		}
		w.handle(lease)
	}
}

// handle runs the handler on one lease with a heartbeat, then acks or nacks it.
func (w *worker) handle(lease *Lease) {
	defer lease.Close()
	beatStop, beatDone := make(chan struct{}), make(chan struct{})
	go w.heartbeat(lease, beatStop, beatDone)
	herr := w.run(lease)
	close(beatStop)
	<-beatDone
	if w.abandoned.Load() {
		return // past the shutdown timeout: the lease runs out and is redelivered
	}
	if herr == nil {
		if err := w.q.Ack(lease); err != nil {
			w.report(err)
		}
		return
	}
	w.report(fmt.Errorf("mongomq: Work: handler failed on group %q seq %d (attempt %d): %w",
		lease.Group(), lease.Seq(), lease.Attempts(), herr))
	if err := w.q.Nack(lease, w.backoff(lease.Attempts())); err != nil {
		w.report(err)
	}
}

func (w *worker) run(lease *Lease) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return w.handler(w.handlerCtx, lease)
}

// backoff is min(cap, base * 2^(attempts-1)) scaled by a jitter in [0.5, 1].
func (w *worker) backoff(attempts int) time.Duration {
	d := w.o.BackoffBase
	for i := 1; i < attempts && d < w.o.BackoffCap; i++ {
		d *= 2
	}
	if d > w.o.BackoffCap {
		d = w.o.BackoffCap
	}
	return time.Duration(float64(d) * (0.5 + 0.5*rand.Float64()))
}

// heartbeat extends the lease by Visibility every Visibility/3 until stop, until
// the handler is abandoned, or until the lease is lost.
func (w *worker) heartbeat(lease *Lease, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := w.o.Visibility / 3
	if every < time.Millisecond {
		every = time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-w.handlerCtx.Done():
			return
		case <-t.C:
			if err := w.q.Extend(lease, w.o.Visibility); err != nil {
				w.report(err)
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
