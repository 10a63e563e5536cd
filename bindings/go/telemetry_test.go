// telemetry_test.go: the Telemetry hook without OpenTelemetry (its implementation
// is tested in otelmongomq): which calls a queue and its worker make, with what,
// in which context; injected attributes within the bounds; SetTelemetry(nil).

package mongomq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// recorder is a Telemetry that notes every call and injects what it is told to.
type recorder struct {
	inject []Attr
	mu     sync.Mutex
	calls  []string
}

type ctxKey string

func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) got() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.calls, "\n")
}

func (r *recorder) Publish(ctx context.Context, op PublishOp) ([]Attr, func(int64, error)) {
	r.note("publish %s batch=%v group=%q count=%d ctx=%v", op.Queue, op.Batch, op.Group, op.Count, ctx.Value(ctxKey("k")))
	return r.inject, func(seq int64, err error) { r.note("published seq=%d err=%v", seq, err != nil) }
}

func (r *recorder) Process(ctx context.Context, op ProcessOp) (context.Context, func(error)) {
	r.note("process %s seq=%d attempts=%d", op.Queue, op.Lease.Seq(), op.Lease.Attempts())
	return context.WithValue(ctx, ctxKey("process"), op.Lease.Seq()), func(err error) { r.note("processed err=%v", err) }
}

func (r *recorder) Settle(ctx context.Context, op SettleOp) func(error) {
	r.note("settle %s %s seq=%d worker=%v ctx=%v", op.Name, op.Queue, op.Lease.Seq(), op.InWorker, ctx.Value(ctxKey("process")))
	return func(err error) { r.note("settled err=%v", errors.Is(err, ErrLeaseLost)) }
}

func TestTelemetryHook(t *testing.T) {
	_, q := newQueue(t)
	r := &recorder{inject: []Attr{{Key: "traceparent", Value: "00-x"}}}
	if err := q.SetTelemetry(r); err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ctxKey("k"), "v")
	s1, err := q.PublishContext(ctx, "g", []byte("a"), PublishOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := q.PublishWithContext(nil, "g", []byte("b"), PublishOptions{DedupKey: "k"}) // nil: context.Background()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.PublishBatchContext(ctx, []Message{{Group: "g", Event: []byte("c")}, {Group: "h", Event: []byte("d")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PublishBatchWith([]Message{{Group: "h", Event: []byte("e")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Publish("", []byte("x"), PublishOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Publish to group \"\": %v", err)
	}
	want := strings.Join([]string{
		fmt.Sprintf("publish %s batch=false group=\"g\" count=1 ctx=v", q.Name()),
		fmt.Sprintf("published seq=%d err=false", s1),
		fmt.Sprintf("publish %s batch=false group=\"g\" count=1 ctx=<nil>", q.Name()),
		fmt.Sprintf("published seq=%d err=false", p.Seq),
		fmt.Sprintf("publish %s batch=true group=\"\" count=2 ctx=v", q.Name()),
		"published seq=0 err=false",
		fmt.Sprintf("publish %s batch=true group=\"\" count=1 ctx=<nil>", q.Name()),
		"published seq=0 err=false",
		fmt.Sprintf("publish %s batch=false group=\"\" count=1 ctx=<nil>", q.Name()),
		"published seq=0 err=true",
	}, "\n")
	if got := r.got(); got != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", got, want)
	}
	evs, err := q.Peek("", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if fmt.Sprint(e.Attrs) != "[{traceparent 00-x}]" {
			t.Errorf("seq %d attrs %v, want the injected traceparent", e.Seq, e.Attrs)
		}
	}
	if err := q.PurgeGroup("h"); err != nil {
		t.Fatal(err)
	}

	// The worker: one failure, then a success; the handler's context is Process's.
	r.calls = nil
	var sawProcess []any
	calls := 0
	done := make(chan struct{})
	w, err := q.Worker(WorkOptions{BackoffBase: 1, OnError: func(error) {}}, func(ctx context.Context, l *Lease) error {
		sawProcess = append(sawProcess, ctx.Value(ctxKey("process")))
		calls++
		switch {
		case calls == 1:
			return errors.New("boom")
		case l.Seq() == evs[2].Seq:
			close(done)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	w.Stop()
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	want = strings.Join([]string{
		fmt.Sprintf("process %s seq=%d attempts=1", q.Name(), s1),
		"processed err=boom",
		fmt.Sprintf("settle nack %s seq=%d worker=true ctx=%d", q.Name(), s1, s1),
		"settled err=false",
		fmt.Sprintf("process %s seq=%d attempts=2", q.Name(), s1),
		"processed err=<nil>",
		fmt.Sprintf("settle ack %s seq=%d worker=true ctx=%d", q.Name(), s1, s1),
		"settled err=false",
		fmt.Sprintf("process %s seq=%d attempts=1", q.Name(), p.Seq),
		"processed err=<nil>",
		fmt.Sprintf("settle ack %s seq=%d worker=true ctx=%d", q.Name(), p.Seq, p.Seq),
		"settled err=false",
		fmt.Sprintf("process %s seq=%d attempts=1", q.Name(), evs[2].Seq),
		"processed err=<nil>",
		fmt.Sprintf("settle ack %s seq=%d worker=true ctx=%d", q.Name(), evs[2].Seq, evs[2].Seq),
		"settled err=false",
	}, "\n")
	if got := r.got(); got != want {
		t.Fatalf("worker calls:\n%s\nwant:\n%s", got, want)
	}
	if fmt.Sprint(sawProcess) != fmt.Sprintf("[%d %d %d %d]", s1, s1, p.Seq, evs[2].Seq) {
		t.Errorf("the handler's contexts carried %v, want Process's", sawProcess)
	}

	// A caller's own Ack and Nack: InWorker false, context.Background().
	r.calls = nil
	publish(t, q, "g", "y", 0)
	l := claim(t, q, ClaimOptions{})
	if err := q.Nack(l, 0); err != nil {
		t.Fatal(err)
	}
	l = claim(t, q, ClaimOptions{})
	if err := q.PurgeGroup("g"); err != nil {
		t.Fatal(err)
	}
	if err := q.Ack(l); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Ack after a purge: %v, want ErrLeaseLost", err)
	}
	got := r.got()
	for _, line := range []string{
		fmt.Sprintf("settle nack %s seq=%d worker=false ctx=<nil>\nsettled err=false", q.Name(), l.Seq()),
		fmt.Sprintf("settle ack %s seq=%d worker=false ctx=<nil>\nsettled err=true", q.Name(), l.Seq()),
	} {
		if !strings.Contains(got, line) {
			t.Errorf("calls:\n%s\nwant among them:\n%s", got, line)
		}
	}

	// Off again: nothing is called, nothing injected.
	if err := q.SetTelemetry(nil); err != nil {
		t.Fatal(err)
	}
	r.calls = nil
	seq := publish(t, q, "z", "z", 0)
	if got := r.got(); got != "" {
		t.Errorf("calls after SetTelemetry(nil): %s", got)
	}
	if evs, _ := q.Peek("z", 1); len(evs) != 1 || evs[0].Seq != seq || evs[0].Attrs != nil {
		t.Errorf("peek after SetTelemetry(nil): %+v, want seq %d without attributes", evs, seq)
	}
	q.Close()
	if err := q.SetTelemetry(r); !errors.Is(err, ErrClosed) {
		t.Errorf("SetTelemetry on a closed queue: %v, want ErrClosed", err)
	}
}

func TestWithInjected(t *testing.T) {
	own := []Attr{{Key: "tenant", Value: "t"}, {Key: "traceparent", Value: "mine"}}
	long := strings.Repeat("v", AttrValueMax)
	inject := []Attr{
		{Key: "traceparent", Value: "theirs"}, // the event's own: kept as given
		{Key: "", Value: "empty key"},
		{Key: "bad key", Value: "x"},
		{Key: strings.Repeat("k", AttrKeyMax+1), Value: "x"},
		{Key: strings.Repeat("k", AttrKeyMax), Value: "key of the longest length"},
		{Key: "too-long", Value: long + "v"},
		{Key: "longest", Value: long},
		{Key: "not-utf8", Value: "\xff"},
		{Key: "nul", Value: "a\x00"},
		{Key: "A-z_0.9", Value: ""},
		{Key: "A-z_0.9", Value: "again"}, // a key given twice: the first
	}
	got := withInjected(own, inject)
	want := fmt.Sprint(append(own[:2:2], Attr{strings.Repeat("k", AttrKeyMax), "key of the longest length"},
		Attr{"longest", long}, Attr{"A-z_0.9", ""}))
	if fmt.Sprint(got) != want {
		t.Errorf("withInjected:\n got %v\nwant %v", got, want)
	}
	if fmt.Sprint(own) != "[{tenant t} {traceparent mine}]" {
		t.Errorf("withInjected changed the event's own attributes: %v", own)
	}
	full := make([]Attr, AttrMax)
	for i := range full {
		full[i] = Attr{Key: fmt.Sprintf("a%d", i)}
	}
	if got := withInjected(full, []Attr{{Key: "traceparent", Value: "x"}}); len(got) != AttrMax {
		t.Errorf("withInjected on %d attributes added some: %d", AttrMax, len(got))
	}
	if got := withInjected(full[:AttrMax-1], []Attr{{Key: "traceparent", Value: "x"}, {Key: "tracestate", Value: "y"}}); len(got) != AttrMax || got[AttrMax-1].Key != "traceparent" {
		t.Errorf("withInjected on %d attributes: %v, want traceparent as the last", AttrMax-1, got)
	}
	if got := withInjected(nil, nil); got != nil {
		t.Errorf("withInjected(nil, nil) = %v", got)
	}
}
