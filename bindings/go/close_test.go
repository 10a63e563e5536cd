// close_test.go: closing handles while calls run on them, and calls on nil handles.

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Closing a queue while goroutines publish, wait in claims, ack and extend on it:
// waiting claims end at once with ErrClosed, Close returns promptly, every later
// call is ErrClosed, nothing crashes (run with -race).
func TestCloseWhileBusy(t *testing.T) {
	_, q := newQueue(t)
	q2 := reopen(t, q)
	t.Cleanup(func() { _ = q2.Drop() }) // q is closed by then
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := q.Publish(fmt.Sprintf("g%d", n%3), []byte("x"), PublishOptions{}); err != nil {
					if !errors.Is(err, ErrClosed) {
						errs <- err
					}
					return
				}
				l, err := q.Claim(context.Background(), ClaimOptions{Wait: 10 * time.Second, Visibility: 5 * time.Second})
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						errs <- err
					}
					return
				}
				_ = q.Extend(l, 5*time.Second)
				if err := q.Ack(l); err != nil && !errors.Is(err, ErrClosed) {
					errs <- err
					return
				}
			}
		}(i)
	}
	// Waiters that nothing satisfies (nobody publishes at priority 4).
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := q.Claim(context.Background(), ClaimOptions{Wait: 10 * time.Second, MinPriority: 4})
			if err != nil && !errors.Is(err, ErrClosed) {
				errs <- err
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v with claims waiting 10 s", took)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	if _, err := q.Publish("g", nil, PublishOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// Nil handles are errors (or zero values), never a crash.
func TestNilHandles(t *testing.T) {
	_, q := newQueue(t)
	var l *Lease
	if l.Seq() != 0 || l.Group() != "" || l.Event() == nil || l.Count() != 0 || !l.Deadline().IsZero() {
		t.Fatal("nil lease accessors")
	}
	if err := q.Ack(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Ack(nil): %v", err)
	}
	if err := q.Extend(nil, time.Second); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Extend(nil): %v", err)
	}
	var nq *Queue
	if _, err := nq.Claim(context.Background(), ClaimOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Claim on a nil queue: %v", err)
	}
	var nc *Client
	if _, err := nc.Queue("db", "mq"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Queue on a nil client: %v", err)
	}
}
