// extras_test.go: what the Tracing scenarios leave out: injected attributes that
// break the bounds are left out (single and batch), Extract for a program that
// claims by hand, a caller's own Ack and Nack record the metric and no span, a
// lease-lost ack in the worker, SetTelemetry(nil), a nil *Telemetry, the scope's
// version.

package otelmongomq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

// badPropagator injects, after W3C trace context, what the attribute bounds refuse
// and one key that fits.
type badPropagator struct{ propagation.TraceContext }

func (p badPropagator) Inject(ctx context.Context, c propagation.TextMapCarrier) {
	p.TraceContext.Inject(ctx, c)
	c.Set("bad key", "space in the key")
	c.Set(strings.Repeat("k", mongomq.AttrKeyMax+1), "key too long")
	c.Set("too-long", strings.Repeat("v", mongomq.AttrValueMax+1))
	c.Set("not-utf8", "\xff")
	c.Set("nul", "a\x00b")
	c.Set("tenant", "injected") // the event's own key: kept as the event gives it
	c.Set("fits", "yes")
}

func TestInjectionBounds(t *testing.T) {
	k := newKit(t)
	q := newQueue(t)
	tel := otelmongomq.New(otelmongomq.WithTracerProvider(k.tp), otelmongomq.WithPropagator(badPropagator{}))
	if err := q.SetTelemetry(tel); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := q.PublishContext(ctx, "g", []byte("e"), mongomq.PublishOptions{Attrs: []mongomq.Attr{{Key: "tenant", Value: "t-1"}}}); err != nil {
		t.Fatalf("PublishContext: %v (tracing must never fail a publish)", err)
	}
	fifteen := make([]mongomq.Attr, mongomq.AttrMax-1)
	for i := range fifteen {
		fifteen[i] = mongomq.Attr{Key: fmt.Sprintf("a%d", i), Value: "x"}
	}
	if _, err := q.PublishBatchContext(ctx, []mongomq.Message{
		{Group: "g", Event: []byte("f")},
		{Group: "g", Event: []byte("h"), PublishOptions: mongomq.PublishOptions{Attrs: fifteen}},
	}); err != nil {
		t.Fatalf("PublishBatchContext: %v", err)
	}
	sends := k.named("send " + q.Name())
	if len(sends) != 2 {
		t.Fatalf("%d send spans, want 2", len(sends))
	}
	got := peekAttrs(t, q, "g")
	want := [][]mongomq.Attr{
		{{Key: "tenant", Value: "t-1"}, {Key: "traceparent", Value: traceparent(sends[0].SpanContext)}, {Key: "fits", Value: "yes"}},
		{{Key: "traceparent", Value: traceparent(sends[1].SpanContext)}, {Key: "tenant", Value: "injected"}, {Key: "fits", Value: "yes"}},
		append(fifteen[:len(fifteen):len(fifteen)], mongomq.Attr{Key: "traceparent", Value: traceparent(sends[1].SpanContext)}),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("peek:\n got %v\nwant %v", got, want)
	}
}

func TestExtract(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	if _, err := q.PublishBatchContext(context.Background(), []mongomq.Message{{Group: "g", Event: []byte("a")}, {Group: "g", Event: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Publish("bare", []byte("c"), mongomq.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	send := k.named("send " + q.Name())[0]
	l, err := q.Claim(context.Background(), mongomq.ClaimOptions{MaxEvents: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 2; i++ {
		sc := trace.SpanContextFromContext(k.tel.ExtractAt(context.Background(), l, i))
		if !sc.IsRemote() || sc.TraceID() != send.SpanContext.TraceID() || sc.SpanID() != send.SpanContext.SpanID() {
			t.Errorf("ExtractAt(%d): %s/%s remote %v, want the send span %s/%s", i, sc.TraceID(), sc.SpanID(), sc.IsRemote(),
				send.SpanContext.TraceID(), send.SpanContext.SpanID())
		}
	}
	if sc := trace.SpanContextFromContext(k.tel.Extract(context.Background(), l)); sc.SpanID() != send.SpanContext.SpanID() {
		t.Errorf("Extract: %s, want the send span %s", sc.SpanID(), send.SpanContext.SpanID())
	}
	// The package's Extract uses the global propagator: a no-op here (none was set).
	if sc := trace.SpanContextFromContext(otelmongomq.Extract(context.Background(), l)); sc.IsValid() {
		t.Errorf("otelmongomq.Extract with no global propagator: %s, want nothing", sc.SpanID())
	}
	if err := q.Ack(l); err != nil {
		t.Fatal(err)
	}
	bare, err := q.Claim(context.Background(), mongomq.ClaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	// Published without a Context form: still traced (context.Background()), its own trace.
	if sc := trace.SpanContextFromContext(k.tel.Extract(context.Background(), bare)); !sc.IsValid() || sc.TraceID() == send.SpanContext.TraceID() {
		t.Errorf("Extract of a plain Publish's event: %s, want a new trace of its own", sc.TraceID())
	}
	ctx := context.WithValue(context.Background(), struct{}{}, "v")
	if got := k.tel.ExtractAt(ctx, bare, 5); got != ctx {
		t.Errorf("ExtractAt out of range changed the context")
	}
}

// A caller's own claim, ack and nack record no span; ack and nack record their
// operation.duration.
func TestHandClaimRecordsNoSpan(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	for _, g := range []string{"a", "b"} {
		if _, err := q.Publish(g, []byte("e"), mongomq.PublishOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	k.spans.Reset()
	for _, settle := range []func(*mongomq.Lease) error{q.Ack, func(l *mongomq.Lease) error { return q.Nack(l, 0) }} {
		l, err := q.Claim(context.Background(), mongomq.ClaimOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := settle(l); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(k.spans.GetSpans()); n != 0 {
		t.Errorf("%d spans from a claim, an ack and a nack by hand (%s), want none", n, k.names())
	}
	rm := k.collect(t)
	hist := metric(t, rm, "messaging.client.operation.duration").Data.(metricdata.Histogram[float64])
	counts := map[string]uint64{}
	for _, p := range hist.DataPoints {
		name, _ := p.Attributes.Value("messaging.operation.name")
		counts[name.AsString()] += p.Count
	}
	if fmt.Sprint(counts) != "map[ack:1 nack:1 publish:2]" {
		t.Errorf("operation.duration counts %v, want ack 1, nack 1, publish 2", counts)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "messaging.client.consumed.messages" {
				t.Errorf("a claim by hand counted in consumed.messages: %+v", m.Data)
			}
		}
	}
}

// A worker's ack that finds the lease lost (the group purged under its handler) is
// a failed settle span with error.type MQ_LEASE_LOST.
func TestWorkerAckLeaseLost(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	if _, err := q.Publish("g", []byte("e"), mongomq.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	var reported []error
	work(t, q, mongomq.WorkOptions{OnError: func(err error) { reported = append(reported, err) }}, 1,
		func(_ context.Context, l *mongomq.Lease, _ int) error { return q.PurgeGroup(l.Group()) })
	if len(reported) != 1 || !errors.Is(reported[0], mongomq.ErrLeaseLost) {
		t.Fatalf("the worker reported %v, want one ErrLeaseLost", reported)
	}
	ack := k.one(t, "ack "+q.Name())
	want := settleAttrs(q, "ack")
	want["error.type"] = "MQ_LEASE_LOST"
	wantAttrs(t, "ack span", ack.Attributes, want)
	if ack.Status.Code != codes.Error {
		t.Errorf("ack span status %s, want error", ack.Status.Code)
	}
	proc := k.one(t, "process "+q.Name())
	if proc.Status.Code != codes.Unset {
		t.Errorf("process span status %s, want unset: the handler succeeded", proc.Status.Code)
	}
}

// A failing publish is a failed send span, and its points carry error.type.
func TestPublishError(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	_, err := q.PublishContext(context.Background(), "g", []byte("e"), mongomq.PublishOptions{Priority: 9})
	if !errors.Is(err, mongomq.ErrInvalidArgument) {
		t.Fatalf("PublishContext with priority 9: %v, want ErrInvalidArgument", err)
	}
	send := k.one(t, "send "+q.Name())
	if send.Status.Code != codes.Error || attrs(send.Attributes)["error.type"].AsString() != "MQ_ERR_ARG" {
		t.Errorf("send span status %s error.type %q, want error, MQ_ERR_ARG", send.Status.Code,
			attrs(send.Attributes)["error.type"].AsString())
	}
	if _, ok := attrs(send.Attributes)["messaging.message.id"]; ok {
		t.Errorf("a failed publish's span has a message id")
	}
	sum := metric(t, k.collect(t), "messaging.client.sent.messages").Data.(metricdata.Sum[int64])
	if len(sum.DataPoints) != 1 {
		t.Fatalf("sent.messages points %+v, want 1", sum.DataPoints)
	}
	et, _ := sum.DataPoints[0].Attributes.Value("error.type")
	name, _ := sum.DataPoints[0].Attributes.Value("messaging.operation.name")
	if et.AsString() != "MQ_ERR_ARG" || name.AsString() != "publish" {
		t.Errorf("sent.messages error.type %q operation %q, want MQ_ERR_ARG, publish", et.AsString(), name.AsString())
	}
}

func TestSetTelemetryNilAndNilTelemetry(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	if err := q.SetTelemetry(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Publish("g", []byte("e"), mongomq.PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	var nilTel *otelmongomq.Telemetry
	if err := q.SetTelemetry(nilTel); err != nil {
		t.Fatal(err)
	}
	if _, err := q.PublishBatch([]mongomq.Message{{Group: "g", Event: []byte("f")}}); err != nil {
		t.Fatal(err)
	}
	work(t, q, mongomq.WorkOptions{}, 2, func(context.Context, *mongomq.Lease, int) error { return nil })
	if n := len(k.spans.GetSpans()); n != 0 {
		t.Errorf("%d spans after SetTelemetry(nil) and a nil *Telemetry, want none", n)
	}
	if got := peekAttrs(t, q, ""); len(got) != 0 {
		t.Errorf("events left: %v", got)
	}
	q.Close()
	if err := q.SetTelemetry(k.tel); !errors.Is(err, mongomq.ErrClosed) {
		t.Errorf("SetTelemetry on a closed queue: %v, want ErrClosed", err)
	}
}

// The scope's version is the binding's, whose major.minor is the C library's.
func TestVersion(t *testing.T) {
	mm := func(v string) string {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return v
		}
		return parts[0] + "." + parts[1]
	}
	if mm(otelmongomq.Version) != mm(mongomq.LibraryVersion()) {
		t.Errorf("otelmongomq.Version %s, libmongomq %s: major.minor differ", otelmongomq.Version, mongomq.LibraryVersion())
	}
}
