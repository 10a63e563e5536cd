// worker.go: the worker helper's surface: WorkOptions, Work (blocks until
// stopped), Worker (a handle to stop and wait) and how a run stops (its context, a
// Stop, IdleTimeout, SIGINT/SIGTERM with HandleSignals); the loop that claims and
// handles leases is in workloop.go.

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Handler handles one lease. Returning nil acks it; returning an error (or
// panicking) nacks it with back-off. ctx carries the values of Work's context but
// not its cancellation: a stop lets running handlers finish; ctx is cancelled only
// when the shutdown timeout abandons the handler.
type Handler func(ctx context.Context, lease *Lease) error

// WorkOptions are the options of Work and Worker; the zero value of each field is
// its default.
type WorkOptions struct {
	Concurrency     int           // handlers running at once; default 1
	Visibility      time.Duration // lease time; default 30 s; extended every Visibility/3 while a handler runs
	MinPriority     int           // priority floor of the claims; default 0
	MaxEvents       int           // events per lease (the handler gets the lease); default 1
	BackoffBase     time.Duration // first nack delay; default 1 s
	BackoffCap      time.Duration // longest nack delay; default 60 s
	MaxAttempts     int           // > 0: set on the queue (SetMaxAttempts), so a head delivered that often goes to the dead letters; default 0, unlimited
	ShutdownTimeout time.Duration // how long a stop waits for running handlers; default 30 s
	WorkerID        string        // default: the library's "host:pid"
	// Partitions are the only partitions of a partitioned queue the worker claims
	// from (ClaimOptions.Partitions); nil or empty (the default): every partition.
	// A bad list (a partition outside 0..Partitions()-1, one given twice) is
	// refused when the run starts.
	Partitions []int
	// IdleTimeout > 0 stops the run by itself (gracefully; Work returns nil) once
	// no lease was claimed for that long while no handler was running: for a
	// worker that drains a queue and ends. 0 (the default): never.
	IdleTimeout time.Duration
	// HandleSignals: SIGINT and SIGTERM stop the run gracefully (Sidekiq's way),
	// through os/signal; when the run ends it stops asking for them (signal.Stop),
	// so they do again what they did before (unless other code of the program
	// asked for them, kill the process). Default false: the program handles signals
	// itself (cancel Work's context, or call Worker.Stop).
	HandleSignals bool
	// OnError is told of what a run recovers from: a handler's error or panic (a
	// *PanicError with its stack, wrapped), an ack, nack or unclaim that failed
	// (ErrLeaseLost included), a failed claim or extend. It may be called from
	// several goroutines at once. nil (the default) logs each through log/slog
	// (slog.Default(), level error, with the stack of a panic): nothing is
	// swallowed.
	OnError func(error)
}

// ErrShutdownTimeout is returned by Work (and Worker.Wait) when handlers were still
// running at the end of the shutdown timeout; their leases run out and their
// events are redelivered.
var ErrShutdownTimeout = errors.New("mongomq: Work: handlers still running at the shutdown timeout were abandoned")

// PanicError is a handler's panic, as a run reports it to OnError (wrapped in the
// error that names the lease): the value it panicked with and the goroutine's stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.Value) }

// Work runs handler on the queue's leases with opts.Concurrency goroutines and
// blocks until it is stopped: ctx is done, IdleTimeout passed without work, or
// (with HandleSignals) SIGINT or SIGTERM came. Then it shuts down gracefully: it
// stops claiming (waiting claims are cancelled at once; a lease a claim took as the
// stop came, before its handler started, is given back with Unclaim, so it counts
// no delivery), waits up to opts.ShutdownTimeout for running handlers to finish and
// be acked or nacked, and returns nil (ErrShutdownTimeout if some had to be
// abandoned).
//
// A handler's success acks its lease; a failure nacks it with the delay
// min(BackoffCap, BackoffBase * 2^(attempts-1)) times a jitter in [0.5, 1]. While a
// handler runs its lease is extended every Visibility/3. Errors of the queue itself
// (connect, server) back off from 100 ms to 5 s and never end Work; a closed or
// interrupted queue does (after the same graceful shutdown, returning its error),
// as does a bad option (at once).
func (q *Queue) Work(ctx context.Context, opts WorkOptions, handler Handler) error {
	if ctx == nil {
		ctx = context.Background()
	}
	r, err := q.newRun(ctx, opts, handler)
	if err != nil {
		return err
	}
	return r.run()
}

// Worker is a run of Work started by Queue.Worker: Stop asks it to stop, Wait
// waits for it to end. Safe for concurrent use.
type Worker struct {
	stop context.CancelFunc
	done chan struct{}
	err  error // Work's result, set before done is closed
}

// Worker starts Work in the background and returns at once with its handle. A
// bad option is returned here, and nothing runs. The handlers' contexts carry no
// values (context.Background's).
func (q *Queue) Worker(opts WorkOptions, handler Handler) (*Worker, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := q.newRun(ctx, opts, handler)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &Worker{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer cancel()
		w.err = r.run()
	}()
	return w, nil
}

// Stop begins the graceful stop (see Work) and returns at once; Wait waits for it.
// Stopping twice, or a stopped Worker, does nothing.
func (w *Worker) Stop() {
	if w != nil {
		w.stop()
	}
}

// Wait waits until the run ended (after Stop, IdleTimeout, a signal with
// HandleSignals, or a closed or interrupted queue) and returns what Work would
// have: nil, ErrShutdownTimeout, or the error that ended it. It may be called any
// number of times, from any goroutine.
func (w *Worker) Wait() error {
	if w == nil {
		return nil
	}
	<-w.done
	return w.err
}

// newRun checks the options (and sets MaxAttempts on the queue) before anything runs.
func (q *Queue) newRun(ctx context.Context, opts WorkOptions, handler Handler) (*workRun, error) {
	const op = "Work"
	if handler == nil {
		return nil, argError(op, "handler is nil")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkPartitions(op, o.Partitions, q.Partitions()); err != nil {
		return nil, err
	}
	o.Partitions = append([]int(nil), o.Partitions...) // the caller's slice may change while the run goes on
	if o.MaxAttempts > 0 {
		if err := q.SetMaxAttempts(o.MaxAttempts); err != nil {
			return nil, err
		}
	}
	r := &workRun{q: q, o: o, handler: handler}
	r.stopCtx, r.stop = context.WithCancel(ctx)
	r.handlerCtx, r.abandon = context.WithCancel(detached{ctx})
	r.lastBusy.Store(time.Now().UnixNano())
	return r, nil
}

// run is Work once the options are checked: the loops, then the two phases of the stop.
func (r *workRun) run() error {
	defer r.stop()
	defer r.abandon()
	if r.o.HandleSignals {
		defer r.stopOnSignals()()
	}

	var wg sync.WaitGroup
	for i := 0; i < r.o.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.loop()
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()

	// Phase 1: run until told to stop (or a fatal error or the idle timeout
	// stopped every loop).
	select {
	case <-finished:
	case <-r.stopCtx.Done():
	}
	// Phase 2: claims are cancelled; running handlers get ShutdownTimeout.
	timer := time.NewTimer(r.o.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-finished:
	case <-timer.C:
		r.abandoned.Store(true)
		r.abandon()
		if f := r.fatalErr(); f != nil {
			return f
		}
		return ErrShutdownTimeout
	}
	return r.fatalErr()
}

// stopOnSignals asks os/signal for SIGINT and SIGTERM, which stop the run from now
// on; the function it returns gives them back (signal.Stop).
func (r *workRun) stopOnSignals() func() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			slog.Default().Info("mongomq: worker stopping gracefully", "logger", "mongomq", "signal", sig.String())
			r.stop()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// idle says whether the run has been idle for IdleTimeout (then it stops it), and
// else how long a claim may wait before the idle timeout is due (at most max).
func (r *workRun) idle(max time.Duration) (stop bool, wait time.Duration) {
	if r.o.IdleTimeout <= 0 {
		return false, max
	}
	left := r.o.IdleTimeout - time.Since(time.Unix(0, r.lastBusy.Load()))
	if left <= 0 {
		if r.active.Load() == 0 {
			r.stop()
			return true, 0
		}
		return false, max // a handler runs: the run is not idle; it is busy again when it ends
	}
	if left < max {
		return false, left
	}
	return false, max
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
	if o.MaxEvents < 0 || o.MaxEvents > BatchMax {
		return o, argError(op, fmt.Sprintf("MaxEvents must be 1..%d (got %d)", BatchMax, o.MaxEvents))
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = 1
	}
	if o.BackoffBase < 0 || o.BackoffCap < 0 || o.ShutdownTimeout < 0 || o.IdleTimeout < 0 {
		return o, argError(op, "BackoffBase, BackoffCap, ShutdownTimeout and IdleTimeout must not be negative")
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
	if o.OnError == nil {
		o.OnError = logWorkError
	}
	return o, checkText(op, "WorkerID", o.WorkerID)
}

// logWorkError is the default OnError: the error through log/slog, with the stack
// of a handler's panic.
func logWorkError(err error) {
	attrs := []any{"logger", "mongomq", "error", err.Error()}
	var p *PanicError
	if errors.As(err, &p) {
		attrs = append(attrs, "stack", string(p.Stack))
	}
	slog.Default().Error("mongomq: worker", attrs...)
}
