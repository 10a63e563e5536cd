// worker_test.go: the worker helper's options beyond the contract's scenarios:
// IdleTimeout ends Work, Worker's Stop and Wait, the default OnError logs through
// log/slog, and HandleSignals (in a child process: child_test.go).

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// IdleTimeout: Work drains the queue and returns nil once nothing came for that
// long; a handler running longer than it is not idle time.
func TestWorkerIdleTimeout(t *testing.T) {
	t.Run("drains_then_ends", func(t *testing.T) {
		_, q := newQueue(t)
		for i := 0; i < 6; i++ {
			publish(t, q, fmt.Sprintf("g%d", i%3), fmt.Sprint(i), 0)
		}
		var handled atomic.Int64
		start := time.Now()
		err := q.Work(context.Background(), WorkOptions{Concurrency: 2, IdleTimeout: 400 * time.Millisecond},
			func(ctx context.Context, l *Lease) error { handled.Add(1); return nil })
		took := time.Since(start)
		if err != nil {
			t.Fatalf("Work: %v", err)
		}
		if handled.Load() != 6 {
			t.Fatalf("handled %d events, want 6", handled.Load())
		}
		if took < 400*time.Millisecond || took > 10*time.Second {
			t.Fatalf("Work returned after %v, want about the idle timeout after the last event", took)
		}
		if s := stats(t, q); s.Messages != 0 {
			t.Fatalf("%d messages left", s.Messages)
		}
	})
	t.Run("empty_queue", func(t *testing.T) {
		_, q := newQueue(t)
		start := time.Now()
		err := q.Work(context.Background(), WorkOptions{IdleTimeout: 300 * time.Millisecond},
			func(ctx context.Context, l *Lease) error { return nil })
		if took := time.Since(start); err != nil || took < 300*time.Millisecond || took > 3*time.Second {
			t.Fatalf("Work on an empty queue: %v after %v, want nil after about 300ms", err, took)
		}
	})
	t.Run("long_handler_is_not_idle", func(t *testing.T) {
		_, q := newQueue(t)
		publish(t, q, "g", "slow", 0)
		var ended atomic.Bool
		err := q.Work(context.Background(), WorkOptions{IdleTimeout: 200 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond},
			func(ctx context.Context, l *Lease) error {
				time.Sleep(time.Second) // 5x the idle timeout
				ended.Store(ctx.Err() == nil)
				return nil
			})
		if err != nil || !ended.Load() {
			t.Fatalf("Work: %v, handler ended normally: %v; want nil, true (no idle stop while it ran)", err, ended.Load())
		}
		if s := stats(t, q); s.Messages != 0 {
			t.Fatalf("the slow event was not acked: %d messages", s.Messages)
		}
	})
	t.Run("negative", func(t *testing.T) {
		_, q := newQueue(t)
		err := q.Work(context.Background(), WorkOptions{IdleTimeout: -time.Second}, func(context.Context, *Lease) error { return nil })
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "IdleTimeout") {
			t.Fatalf("IdleTimeout -1s: %v, want ErrInvalidArgument naming IdleTimeout", err)
		}
	})
}

// Worker starts the run and returns; Stop is graceful (a running handler finishes
// and is acked); Wait waits for that, as often as called; nothing is claimed after.
func TestWorkerStopWait(t *testing.T) {
	_, q := newQueue(t)
	publish(t, q, "g", "first", 0)
	running, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	w, err := q.Worker(WorkOptions{Concurrency: 2}, func(ctx context.Context, l *Lease) error {
		if calls.Add(1) == 1 {
			close(running)
			<-release
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Worker: %v", err)
	}
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not run within 10 s")
	}
	w.Stop()
	w.Stop() // twice: nothing more
	waited := make(chan error, 1)
	go func() { waited <- w.Wait() }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while the handler still ran", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return within 10 s of the handler's end")
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("a second Wait: %v", err)
	}
	publish(t, q, "h", "after the stop", 0)
	time.Sleep(300 * time.Millisecond)
	if s := stats(t, q); s.Messages != 1 || calls.Load() != 1 {
		t.Fatalf("after Wait: %d messages (want 1: the first acked, none claimed after), %d handler calls (want 1)", s.Messages, calls.Load())
	}

	// A bad option: the error, no handle, nothing runs.
	if w, err := q.Worker(WorkOptions{Concurrency: -1}, func(context.Context, *Lease) error { return nil }); w != nil || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Worker(Concurrency -1): %v, %v; want nil, ErrInvalidArgument", w, err)
	}
	if w, err := q.Worker(WorkOptions{}, nil); w != nil || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Worker(nil handler): %v, %v; want nil, ErrInvalidArgument", w, err)
	}
	// A nil *Worker does nothing.
	var nw *Worker
	nw.Stop()
	if err := nw.Wait(); err != nil {
		t.Fatalf("nil Worker's Wait: %v", err)
	}
}

// Worker ends by itself on a closed queue, and Wait says why.
func TestWorkerEndsOnClose(t *testing.T) {
	_, q := newQueue(t)
	w, err := q.Worker(WorkOptions{}, func(context.Context, *Lease) error { return nil })
	if err != nil {
		t.Fatalf("Worker: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	q.Close()
	done := make(chan error, 1)
	go func() { done <- w.Wait() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after the queue closed: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not end within 10 s of its queue's Close")
	}
}

// slogCapture is a slog.Handler that keeps every record (enabled at every level).
type slogCapture struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *slogCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *slogCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.records = append(c.records, r.Clone())
	c.mu.Unlock()
	return nil
}
func (c *slogCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *slogCapture) WithGroup(string) slog.Handler      { return c }

// find returns the records whose message is msg, as attribute maps (plus "level").
func (c *slogCapture) find(msg string) []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]string
	for _, r := range c.records {
		if r.Message != msg {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.String()
			return true
		})
		out = append(out, m)
	}
	return out
}

// withSlog makes c slog's default for the test.
func withSlog(t *testing.T, c *slogCapture) {
	old := slog.Default()
	slog.SetDefault(slog.New(c))
	t.Cleanup(func() { slog.SetDefault(old) })
}

// The default OnError: every handler failure reaches log/slog at error level, a
// panic with its stack; nothing is swallowed.
func TestWorkerOnErrorDefaultLogs(t *testing.T) {
	capture := &slogCapture{}
	withSlog(t, capture)
	_, q := newQueue(t)
	publish(t, q, "g", "x", 0)
	var calls atomic.Int64
	err := q.Work(context.Background(), WorkOptions{BackoffBase: time.Millisecond, BackoffCap: 2 * time.Millisecond, IdleTimeout: 500 * time.Millisecond},
		func(ctx context.Context, l *Lease) error {
			switch calls.Add(1) {
			case 1:
				return errors.New("first failure")
			case 2:
				panic("second failure")
			}
			return nil
		})
	if err != nil || calls.Load() != 3 {
		t.Fatalf("Work: %v after %d handler calls, want nil after 3", err, calls.Load())
	}
	logged := capture.find("mongomq: worker")
	if len(logged) != 2 {
		t.Fatalf("%d records \"mongomq: worker\" (%v), want 2", len(logged), logged)
	}
	first, second := logged[0], logged[1]
	if first["level"] != "ERROR" || first["logger"] != "mongomq" || !strings.Contains(first["error"], "first failure") ||
		!strings.Contains(first["error"], `group "g"`) {
		t.Fatalf("the error's record: %v", first)
	}
	if second["level"] != "ERROR" || !strings.Contains(second["error"], "handler panicked: second failure") ||
		!strings.Contains(second["stack"], "TestWorkerOnErrorDefaultLogs") {
		t.Fatalf("the panic's record (want its stack, naming this test): %v", second)
	}

	// An OnError of the program's own replaces the log, and gets the *PanicError.
	publish(t, q, "g", "y", 0)
	var got error
	err = q.Work(context.Background(), WorkOptions{IdleTimeout: 300 * time.Millisecond, BackoffBase: time.Hour,
		OnError: func(e error) { got = e }},
		func(ctx context.Context, l *Lease) error { panic("third") })
	var p *PanicError
	if err != nil || !errors.As(got, &p) || p.Value != "third" || len(p.Stack) == 0 {
		t.Fatalf("Work: %v; OnError got %v, want a *PanicError with the value and a stack", err, got)
	}
	if n := len(capture.find("mongomq: worker")); n != 2 {
		t.Fatalf("with an OnError of its own the worker still logged (%d records)", n)
	}
}

// The worker's lease size is MaxEvents, as a claim's.
func TestWorkerMaxEvents(t *testing.T) {
	_, q := newQueue(t)
	for i := 0; i < 5; i++ {
		publish(t, q, "g", fmt.Sprint(i), 0)
	}
	var counts []int
	var mu sync.Mutex
	err := q.Work(context.Background(), WorkOptions{MaxEvents: 3, IdleTimeout: 300 * time.Millisecond},
		func(ctx context.Context, l *Lease) error {
			mu.Lock()
			counts = append(counts, l.Count())
			mu.Unlock()
			return nil
		})
	if err != nil || fmt.Sprint(counts) != "[3 2]" {
		t.Fatalf("Work: %v, lease sizes %v; want nil, [3 2]", err, counts)
	}
}
