// contract_test.go: the six Tracing scenarios of bindings/CONTRACT.md as
// TestContract/<name>, with the OpenTelemetry SDK's in-memory span exporter and
// manual metric reader, and W3C trace context.

package otelmongomq_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestContract runs the Tracing scenarios of bindings/CONTRACT.md under their names
// (the binding's other scenarios are the core module's TestContract).
func TestContract(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"trace_publish_process", tracePublishProcess},
		{"trace_handler_error", traceHandlerError},
		{"trace_batch_publish", traceBatchPublish},
		{"trace_attrs_kept", traceAttrsKept},
		{"trace_metrics", traceMetrics},
		{"trace_off_without_sdk", traceOffWithoutSDK},
	}
	for _, s := range scenarios {
		t.Run(s.name, s.run)
	}
}

// sendAttrs, processAttrs and settleAttrs are what CONTRACT.md says each span has.
func sendAttrs(q *mongomq.Queue, group string, seq int64) map[string]any {
	return map[string]any{
		"messaging.system": "mongomq", "messaging.destination.name": q.Name(),
		"messaging.operation.type": "send", "messaging.operation.name": "publish",
		"messaging.message.id": strconv.FormatInt(seq, 10), "messaging.mongomq.message.group": group,
	}
}

func processAttrs(q *mongomq.Queue, group string, seq int64, attempts int) map[string]any {
	return map[string]any{
		"messaging.system": "mongomq", "messaging.destination.name": q.Name(),
		"messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.message.id": strconv.FormatInt(seq, 10), "messaging.mongomq.message.group": group,
		"messaging.mongomq.message.attempts": attempts,
	}
}

func settleAttrs(q *mongomq.Queue, name string) map[string]any {
	return map[string]any{
		"messaging.system": "mongomq", "messaging.destination.name": q.Name(),
		"messaging.operation.type": "settle", "messaging.operation.name": name,
	}
}

// wantScope fails the test unless span was recorded in the scope mongomq, Version.
func wantScope(t *testing.T, s tracetest.SpanStub) {
	t.Helper()
	if s.InstrumentationScope.Name != otelmongomq.ScopeName || s.InstrumentationScope.Version != otelmongomq.Version {
		t.Errorf("span %q in scope %s %s, want %s %s", s.Name, s.InstrumentationScope.Name,
			s.InstrumentationScope.Version, otelmongomq.ScopeName, otelmongomq.Version)
	}
}

// wantChild fails the test unless s is a child of parent.
func wantChild(t *testing.T, s tracetest.SpanStub, parent trace.SpanContext) {
	t.Helper()
	if s.Parent.TraceID() != parent.TraceID() || s.Parent.SpanID() != parent.SpanID() ||
		s.SpanContext.TraceID() != parent.TraceID() {
		t.Errorf("span %q: trace %s parent %s, want a child of %s/%s", s.Name, s.SpanContext.TraceID(),
			s.Parent.SpanID(), parent.TraceID(), parent.SpanID())
	}
}

// wantLinks fails the test unless s links to exactly to, in order.
func wantLinks(t *testing.T, s tracetest.SpanStub, to ...trace.SpanContext) {
	t.Helper()
	if len(s.Links) != len(to) {
		t.Fatalf("span %q has %d links, want %d", s.Name, len(s.Links), len(to))
	}
	for i, l := range s.Links {
		if l.SpanContext.TraceID() != to[i].TraceID() || l.SpanContext.SpanID() != to[i].SpanID() {
			t.Errorf("span %q link %d: %s/%s, want %s/%s", s.Name, i, l.SpanContext.TraceID(),
				l.SpanContext.SpanID(), to[i].TraceID(), to[i].SpanID())
		}
	}
}

func tracePublishProcess(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	ctx, parent := k.tp.Tracer("test").Start(context.Background(), "P")
	seq, err := q.PublishContext(ctx, "g", []byte("e"), mongomq.PublishOptions{Attrs: []mongomq.Attr{{Key: "tenant", Value: "t-1"}}})
	parent.End()
	if err != nil {
		t.Fatalf("PublishContext: %v", err)
	}
	p := parent.SpanContext()

	send := k.one(t, "send "+q.Name())
	wantScope(t, send)
	if send.SpanKind != trace.SpanKindProducer {
		t.Errorf("send span kind %s, want producer", send.SpanKind)
	}
	wantChild(t, send, p)
	wantAttrs(t, "send span", send.Attributes, sendAttrs(q, "g", seq))
	if send.Status.Code != codes.Unset {
		t.Errorf("send span status %s, want unset", send.Status.Code)
	}

	stored := peekAttrs(t, q, "g")
	want := []mongomq.Attr{{Key: "tenant", Value: "t-1"}, {Key: "traceparent", Value: traceparent(send.SpanContext)}}
	if len(stored) != 1 || fmt.Sprint(stored[0]) != fmt.Sprint(want) {
		t.Fatalf("peek: attributes %v, want %v", stored, want)
	}

	k.spans.Reset()
	seen := work(t, q, mongomq.WorkOptions{Concurrency: 1}, 1, func(context.Context, *mongomq.Lease, int) error { return nil })
	proc := k.one(t, "process "+q.Name())
	wantScope(t, proc)
	if proc.SpanKind != trace.SpanKindConsumer {
		t.Errorf("process span kind %s, want consumer", proc.SpanKind)
	}
	if proc.SpanContext.TraceID() == p.TraceID() {
		t.Errorf("process span in the producer's trace %s: want a trace of its own (a link, not a parent)", p.TraceID())
	}
	if proc.Parent.IsValid() {
		t.Errorf("process span has the parent %s, want none (the worker's context has no span)", proc.Parent.SpanID())
	}
	wantLinks(t, proc, send.SpanContext)
	wantAttrs(t, "process span", proc.Attributes, processAttrs(q, "g", seq, 1))
	if !seen[0].span.Equal(proc.SpanContext) || !seen[0].recording {
		t.Errorf("the handler's current span %s/%s, want the process span %s/%s", seen[0].span.TraceID(),
			seen[0].span.SpanID(), proc.SpanContext.TraceID(), proc.SpanContext.SpanID())
	}
	ack := k.one(t, "ack "+q.Name())
	wantScope(t, ack)
	if ack.SpanKind != trace.SpanKindClient {
		t.Errorf("ack span kind %s, want client", ack.SpanKind)
	}
	wantChild(t, ack, proc.SpanContext)
	wantAttrs(t, "ack span", ack.Attributes, settleAttrs(q, "ack"))
	if n := len(k.named("nack " + q.Name())); n != 0 {
		t.Errorf("%d nack spans, want none", n)
	}
}

func traceHandlerError(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	seq, err := q.PublishContext(context.Background(), "g", []byte("e"), mongomq.PublishOptions{})
	if err != nil {
		t.Fatalf("PublishContext: %v", err)
	}
	send := k.one(t, "send "+q.Name())
	if send.Parent.IsValid() {
		t.Errorf("send span without a caller's span has the parent %s", send.Parent.SpanID())
	}
	boom := errors.New("boom")
	seen := work(t, q, mongomq.WorkOptions{BackoffBase: 10 * time.Millisecond, OnError: func(error) {}}, 2,
		func(_ context.Context, _ *mongomq.Lease, call int) error {
			if call == 0 {
				return boom
			}
			return nil
		})
	if seen[0].attempts != 1 || seen[1].attempts != 2 {
		t.Fatalf("the handler saw attempts %d, %d, want 1, 2", seen[0].attempts, seen[1].attempts)
	}
	procs := k.named("process " + q.Name())
	if len(procs) != 2 {
		t.Fatalf("%d process spans, want 2 (all: %s)", len(procs), k.names())
	}
	byAttempt := map[int64]tracetest.SpanStub{}
	for _, p := range procs {
		wantLinks(t, p, send.SpanContext)
		byAttempt[attrs(p.Attributes)["messaging.mongomq.message.attempts"].AsInt64()] = p
	}
	first, second := byAttempt[1], byAttempt[2]
	if first.Name == "" || second.Name == "" {
		t.Fatalf("process spans with attempts %v, want 1 and 2", byAttempt)
	}
	wantA := processAttrs(q, "g", seq, 1)
	wantA["error.type"] = "*errors.errorString"
	wantAttrs(t, "first process span", first.Attributes, wantA)
	if first.Status.Code != codes.Error || first.Status.Description != "boom" {
		t.Errorf("first process span status %s %q, want error \"boom\"", first.Status.Code, first.Status.Description)
	}
	if len(first.Events) != 1 || first.Events[0].Name != "exception" ||
		attrs(first.Events[0].Attributes)["exception.message"].AsString() != "boom" {
		t.Errorf("first process span events %+v, want one exception event with the message boom", first.Events)
	}
	wantAttrs(t, "second process span", second.Attributes, processAttrs(q, "g", seq, 2))
	if second.Status.Code != codes.Unset || len(second.Events) != 0 {
		t.Errorf("second process span status %s, %d events, want unset and none", second.Status.Code, len(second.Events))
	}

	nack := k.one(t, "nack "+q.Name())
	wantChild(t, nack, first.SpanContext)
	wantAttrs(t, "nack span", nack.Attributes, settleAttrs(q, "nack"))
	if nack.SpanKind != trace.SpanKindClient || nack.Status.Code != codes.Unset {
		t.Errorf("nack span kind %s status %s, want client, unset", nack.SpanKind, nack.Status.Code)
	}
	ack := k.one(t, "ack "+q.Name())
	wantChild(t, ack, second.SpanContext)
	wantAttrs(t, "ack span", ack.Attributes, settleAttrs(q, "ack"))
}

func traceBatchPublish(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	msgs := []mongomq.Message{
		{Group: "g1", Event: []byte("a")},
		{Group: "g2", Event: []byte("b")},
		{Group: "g1", Event: []byte("c"), PublishOptions: mongomq.PublishOptions{Attrs: []mongomq.Attr{{Key: "k", Value: "v"}}}},
	}
	if _, err := q.PublishBatchContext(context.Background(), msgs); err != nil {
		t.Fatalf("PublishBatchContext: %v", err)
	}
	send := k.one(t, "send "+q.Name())
	if send.SpanKind != trace.SpanKindProducer {
		t.Errorf("send span kind %s, want producer", send.SpanKind)
	}
	wantAttrs(t, "batch send span", send.Attributes, map[string]any{
		"messaging.system": "mongomq", "messaging.destination.name": q.Name(),
		"messaging.operation.type": "send", "messaging.operation.name": "publish",
		"messaging.batch.message_count": 3,
	})
	tp := traceparent(send.SpanContext)
	g1, g2 := peekAttrs(t, q, "g1"), peekAttrs(t, q, "g2")
	// g2's seq: first+1 with one partition, its partition's own with more.
	g2Events, err := q.Peek("g2", 1)
	if err != nil || len(g2Events) != 1 {
		t.Fatalf("Peek(g2): %v, %v", g2Events, err)
	}
	g2Seq := g2Events[0].Seq
	want1 := fmt.Sprint([][]mongomq.Attr{{{Key: "traceparent", Value: tp}}, {{Key: "k", Value: "v"}, {Key: "traceparent", Value: tp}}})
	want2 := fmt.Sprint([][]mongomq.Attr{{{Key: "traceparent", Value: tp}}})
	if fmt.Sprint(g1) != want1 || fmt.Sprint(g2) != want2 {
		t.Fatalf("peek: g1 %v, g2 %v; want g1 %s, g2 %s", g1, g2, want1, want2)
	}

	k.spans.Reset()
	seen := work(t, q, mongomq.WorkOptions{MaxEvents: 3}, 2, func(context.Context, *mongomq.Lease, int) error { return nil })
	procs := k.named("process " + q.Name())
	if len(procs) != 2 || len(seen) != 2 {
		t.Fatalf("%d process spans, %d handler calls, want 2 and 2 (all: %s)", len(procs), len(seen), k.names())
	}
	var batch, single tracetest.SpanStub
	for _, p := range procs {
		if len(p.Links) == 2 {
			batch = p
		} else {
			single = p
		}
	}
	if batch.Name == "" || single.Name == "" {
		t.Fatalf("process spans with %d and %d links, want 2 and 1", len(procs[0].Links), len(procs[1].Links))
	}
	wantLinks(t, batch, send.SpanContext, send.SpanContext)
	wantAttrs(t, "batch process span", batch.Attributes, map[string]any{
		"messaging.system": "mongomq", "messaging.destination.name": q.Name(),
		"messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.mongomq.message.group": "g1", "messaging.mongomq.message.attempts": 1,
		"messaging.batch.message_count": 2,
	})
	wantLinks(t, single, send.SpanContext)
	wantAttrs(t, "single process span", single.Attributes, processAttrs(q, "g2", g2Seq, 1))
	if acks := k.named("ack " + q.Name()); len(acks) != 2 {
		t.Errorf("%d ack spans, want 2", len(acks))
	}
}

func traceAttrsKept(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	ctx, parent := k.tp.Tracer("test").Start(context.Background(), "P")
	defer parent.End()

	var own []mongomq.Attr
	for i := 0; i < mongomq.AttrMax; i++ {
		own = append(own, mongomq.Attr{Key: fmt.Sprintf("k%02d", i), Value: strings.Repeat("v", i)})
	}
	if _, err := q.PublishContext(ctx, "full", []byte("e"), mongomq.PublishOptions{Attrs: own}); err != nil {
		t.Fatalf("PublishContext with %d attributes of its own: %v", len(own), err)
	}
	if got := peekAttrs(t, q, "full"); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(own) {
		t.Fatalf("peek: %v, want exactly the event's own %d attributes %v", got, len(own), own)
	}
	// The same in a batch.
	if _, err := q.PublishBatchContext(ctx, []mongomq.Message{{Group: "full-batch", Event: []byte("e"),
		PublishOptions: mongomq.PublishOptions{Attrs: own}}}); err != nil {
		t.Fatalf("PublishBatchContext with %d attributes of its own: %v", len(own), err)
	}
	if got := peekAttrs(t, q, "full-batch"); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(own) {
		t.Fatalf("peek (batch): %v, want exactly the event's own %d attributes", got, len(own))
	}

	mine := []mongomq.Attr{{Key: "traceparent", Value: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	if _, err := q.PublishContext(ctx, "own", []byte("e"), mongomq.PublishOptions{Attrs: mine}); err != nil {
		t.Fatalf("PublishContext with a traceparent of its own: %v", err)
	}
	if got := peekAttrs(t, q, "own"); len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(mine) {
		t.Fatalf("peek: %v, want the event's own traceparent %v", got, mine)
	}
	// The send spans were recorded all the same, and none failed.
	sends := k.named("send " + q.Name())
	if len(sends) != 3 {
		t.Fatalf("%d send spans, want 3", len(sends))
	}
	for _, s := range sends {
		if s.Status.Code != codes.Unset {
			t.Errorf("send span status %s %q, want unset", s.Status.Code, s.Status.Description)
		}
	}
}

func traceMetrics(t *testing.T) {
	k := newKit(t)
	q := k.queue(t)
	for i := 0; i < 3; i++ {
		if _, err := q.PublishContext(context.Background(), fmt.Sprintf("g%d", i), []byte("e"), mongomq.PublishOptions{}); err != nil {
			t.Fatalf("PublishContext: %v", err)
		}
	}
	work(t, q, mongomq.WorkOptions{BackoffBase: 10 * time.Millisecond, OnError: func(error) {}}, 4,
		func(_ context.Context, _ *mongomq.Lease, call int) error {
			if call == 0 {
				return errors.New("boom")
			}
			return nil
		})
	rm := k.collect(t)
	for _, c := range []struct {
		name, op string
		want     int64
	}{{"messaging.client.sent.messages", "publish", 3}, {"messaging.client.consumed.messages", "claim", 4}} {
		m := metric(t, rm, c.name)
		sum, ok := m.Data.(metricdata.Sum[int64])
		if !ok || !sum.IsMonotonic || m.Unit != "{message}" {
			t.Fatalf("%s: %T unit %q, want a monotonic int64 sum in {message}", c.name, m.Data, m.Unit)
		}
		want := attribute.NewSet(attribute.String("messaging.system", "mongomq"),
			attribute.String("messaging.destination.name", q.Name()), attribute.String("messaging.operation.name", c.op))
		if len(sum.DataPoints) != 1 || !sum.DataPoints[0].Attributes.Equals(&want) || sum.DataPoints[0].Value != c.want {
			t.Errorf("%s: points %+v, want one of %d with %s", c.name, sum.DataPoints, c.want, want.Encoded(attribute.DefaultEncoder()))
		}
	}

	m := metric(t, rm, "messaging.client.operation.duration")
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok || m.Unit != "s" {
		t.Fatalf("operation.duration: %T unit %q, want a float64 histogram in s", m.Data, m.Unit)
	}
	counts := map[string]uint64{}
	for _, p := range hist.DataPoints {
		name, _ := p.Attributes.Value("messaging.operation.name")
		if dst, _ := p.Attributes.Value("messaging.destination.name"); dst.AsString() != q.Name() {
			t.Errorf("operation.duration point without the destination: %s", p.Attributes.Encoded(attribute.DefaultEncoder()))
		}
		counts[name.AsString()] += p.Count
	}
	if counts["publish"] != 3 || counts["ack"] != 3 || counts["nack"] != 1 || len(counts) != 3 {
		t.Errorf("operation.duration counts by operation %v, want publish 3, ack 3, nack 1", counts)
	}

	m = metric(t, rm, "messaging.process.duration")
	hist, ok = m.Data.(metricdata.Histogram[float64])
	if !ok || m.Unit != "s" {
		t.Fatalf("process.duration: %T unit %q, want a float64 histogram in s", m.Data, m.Unit)
	}
	var total, failed uint64
	for _, p := range hist.DataPoints {
		total += p.Count
		if name, _ := p.Attributes.Value("messaging.operation.name"); name.AsString() != "process" {
			t.Errorf("process.duration point with messaging.operation.name %q, want process", name.AsString())
		}
		if et, ok := p.Attributes.Value("error.type"); ok {
			failed += p.Count
			if et.AsString() != "*errors.errorString" {
				t.Errorf("process.duration error.type %q, want *errors.errorString", et.AsString())
			}
		}
	}
	if total != 4 || failed != 1 {
		t.Errorf("process.duration counts %d, %d with error.type; want 4, 1", total, failed)
	}
}

func traceOffWithoutSDK(t *testing.T) {
	none := newQueue(t) // no telemetry
	global := newQueue(t)
	if err := global.SetTelemetry(otelmongomq.New()); err != nil { // the global providers: no SDK configured
		t.Fatalf("SetTelemetry: %v", err)
	}
	for _, q := range []*mongomq.Queue{none, global} {
		if _, err := q.PublishContext(context.Background(), "g", []byte("e"), mongomq.PublishOptions{Attrs: []mongomq.Attr{{Key: "a", Value: "1"}}}); err != nil {
			t.Fatalf("PublishContext: %v", err)
		}
		if _, err := q.PublishBatch([]mongomq.Message{{Group: "g", Event: []byte("f")}}); err != nil {
			t.Fatalf("PublishBatch: %v", err)
		}
		got := peekAttrs(t, q, "g")
		want := fmt.Sprint([][]mongomq.Attr{{{Key: "a", Value: "1"}}, nil})
		if fmt.Sprint(got) != want {
			t.Errorf("peek: %v, want %s (no traceparent)", got, want)
		}
		seen := work(t, q, mongomq.WorkOptions{}, 2, func(context.Context, *mongomq.Lease, int) error { return nil })
		for _, h := range seen {
			if h.recording || h.span.IsValid() {
				t.Errorf("the handler ran with a span current (recording %v, %s/%s), want none",
					h.recording, h.span.TraceID(), h.span.SpanID())
			}
		}
		if evs, err := q.Peek("", 10); err != nil || len(evs) != 0 {
			t.Errorf("after the worker: %d events (%v), want none: both acked", len(evs), err)
		}
	}
}
