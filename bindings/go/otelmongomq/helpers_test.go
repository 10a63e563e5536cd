// helpers_test.go: what the tracing tests share: the test server's URI, a fresh
// queue per test (with MONGOMQ_TEST_PARTITIONS partitions), an OpenTelemetry SDK
// with an in-memory span exporter and a manual metric reader, a worker run for a
// number of handler calls, and span and metric lookups that fail the test.

package otelmongomq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// testURI is the server every test runs against. Unset is a failure, not a skip.
func testURI(t testing.TB) string {
	t.Helper()
	uri := os.Getenv("MONGOMQ_TEST_URI")
	if uri == "" {
		t.Fatal("MONGOMQ_TEST_URI is not set: start a server (scripts/test-server.sh start) and export its URI")
	}
	return uri
}

// testPartitions is MONGOMQ_TEST_PARTITIONS, 1 when unset: scripts/test-go.sh runs
// the contract scenarios with 1 and again with 4 (bindings/CONTRACT.md, "Twice: one
// partition and four").
func testPartitions(t testing.TB) int {
	t.Helper()
	v := os.Getenv("MONGOMQ_TEST_PARTITIONS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > mongomq.PartitionsMax {
		t.Fatalf("MONGOMQ_TEST_PARTITIONS=%q: want 1..%d", v, mongomq.PartitionsMax)
	}
	return n
}

// newQueue opens a queue in a fresh database (with testPartitions); it is dropped
// and closed at the end.
func newQueue(t testing.TB) *mongomq.Queue {
	t.Helper()
	c, err := mongomq.Connect(testURI(t))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	q, err := c.QueueWith("mqt_gootel_"+hex.EncodeToString(b), "mq", mongomq.QueueOptions{Partitions: testPartitions(t)})
	c.Close() // the queue keeps it
	if err != nil {
		t.Fatalf("Queue: %v", err)
	}
	t.Cleanup(func() {
		if err := q.Drop(); err != nil && !errors.Is(err, mongomq.ErrClosed) {
			t.Errorf("Drop: %v", err)
		}
		q.Close()
	})
	return q
}

// kit is an SDK of the test's own (never the global one): spans go synchronously to
// an in-memory exporter, metrics to a manual reader, context through W3C trace
// context; tel is a Telemetry made from them.
type kit struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	tel    *otelmongomq.Telemetry
}

func newKit(t testing.TB) *kit {
	t.Helper()
	k := &kit{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	k.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(k.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(k.reader))
	t.Cleanup(func() {
		_ = k.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	k.tel = otelmongomq.New(otelmongomq.WithTracerProvider(k.tp), otelmongomq.WithMeterProvider(mp),
		otelmongomq.WithPropagator(propagation.TraceContext{}))
	return k
}

// queue is a fresh queue with the kit's telemetry set.
func (k *kit) queue(t testing.TB) *mongomq.Queue {
	t.Helper()
	q := newQueue(t)
	if err := q.SetTelemetry(k.tel); err != nil {
		t.Fatalf("SetTelemetry: %v", err)
	}
	return q
}

// named is the finished spans called name, in the order they ended.
func (k *kit) named(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range k.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// one is the only finished span called name; anything else fails the test.
func (k *kit) one(t testing.TB, name string) tracetest.SpanStub {
	t.Helper()
	got := k.named(name)
	if len(got) != 1 {
		t.Fatalf("%d finished spans %q, want 1 (all: %s)", len(got), name, k.names())
	}
	return got[0]
}

func (k *kit) names() string {
	var n []string
	for _, s := range k.spans.GetSpans() {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// collect is the kit's metrics now.
func (k *kit) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := k.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return rm
}

// metric is the metric called name in rm (scope mongomq), or fails the test.
func metric(t testing.TB, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				if sm.Scope.Name != otelmongomq.ScopeName || sm.Scope.Version != otelmongomq.Version {
					t.Fatalf("metric %s in scope %s %s, want %s %s", name, sm.Scope.Name, sm.Scope.Version,
						otelmongomq.ScopeName, otelmongomq.Version)
				}
				return m
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Metrics{}
}

// attrs is kvs as a map.
func attrs(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := make(map[string]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// wantAttrs fails the test unless got holds exactly want (strings and ints).
func wantAttrs(t testing.TB, what string, got []attribute.KeyValue, want map[string]any) {
	t.Helper()
	g := attrs(got)
	for k, v := range want {
		gv, ok := g[k]
		if !ok {
			t.Errorf("%s: no attribute %s (want %v); has %s", what, k, v, showAttrs(got))
			continue
		}
		switch v := v.(type) {
		case string:
			if gv.Type() != attribute.STRING || gv.AsString() != v {
				t.Errorf("%s: %s = %s %q, want the string %q", what, k, gv.Type(), gv.Emit(), v)
			}
		case int:
			if gv.Type() != attribute.INT64 || gv.AsInt64() != int64(v) {
				t.Errorf("%s: %s = %s %s, want the integer %d", what, k, gv.Type(), gv.Emit(), v)
			}
		default:
			t.Fatalf("wantAttrs: %T", v)
		}
	}
	for k := range g {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected attribute %s = %s", what, k, g[k].Emit())
		}
	}
}

func showAttrs(kvs []attribute.KeyValue) string {
	var s []string
	for _, kv := range kvs {
		s = append(s, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// traceparent is the W3C header naming sc (sampled).
func traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
}

// peekAttrs is the attributes of the events of group, oldest first.
func peekAttrs(t testing.TB, q *mongomq.Queue, group string) [][]mongomq.Attr {
	t.Helper()
	evs, err := q.Peek(group, 100)
	if err != nil {
		t.Fatalf("Peek(%q): %v", group, err)
	}
	out := make([][]mongomq.Attr, len(evs))
	for i, e := range evs {
		out[i] = e.Attrs
	}
	return out
}

// handled is what one handler call saw.
type handled struct {
	seq       int64
	attempts  int
	count     int
	span      trace.SpanContext // the current span of its ctx
	recording bool              // whether that span was recording, in the handler
}

// work runs the worker helper with opts until handler has been called calls times
// (30 s at most, else the test fails), then stops it and waits for it: every ack
// and nack is done by then. handler gets the call's number (0 first).
func work(t testing.TB, q *mongomq.Queue, opts mongomq.WorkOptions, calls int,
	handler func(ctx context.Context, lease *mongomq.Lease, call int) error) []handled {
	t.Helper()
	var mu sync.Mutex
	var seen []handled
	enough := make(chan struct{})
	w, err := q.Worker(opts, func(ctx context.Context, lease *mongomq.Lease) error {
		mu.Lock()
		call := len(seen)
		span := trace.SpanFromContext(ctx)
		seen = append(seen, handled{seq: lease.Seq(), attempts: lease.Attempts(), count: lease.Count(),
			span: span.SpanContext(), recording: span.IsRecording()})
		if len(seen) == calls {
			close(enough)
		}
		mu.Unlock()
		if call >= calls {
			return errors.New("a call more than the test asked for")
		}
		return handler(ctx, lease, call)
	})
	if err != nil {
		t.Fatalf("Worker: %v", err)
	}
	select {
	case <-enough:
	case <-time.After(30 * time.Second):
		w.Stop()
		_ = w.Wait()
		t.Fatalf("the handler was called %d times in 30 s, want %d", len(seen), calls)
	}
	w.Stop()
	if err := w.Wait(); err != nil {
		t.Fatalf("Worker.Wait: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]handled(nil), seen[:calls]...)
}
