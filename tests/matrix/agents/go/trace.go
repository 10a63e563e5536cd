// trace.go: the agent's traced commands, tpublish and twork (tests/matrix/README.md),
// over queue handles of their own whose telemetry is otelmongomq with the
// OpenTelemetry SDK, set up at first use: spans synchronously into an in-memory
// exporter (cleared after each reply), W3C trace context.
package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	spans   *tracetest.InMemoryExporter
	tel     *otelmongomq.Telemetry
	tqueues = map[string]*mongomq.Queue{} // the traced commands' handles, apart from the others'
)

// tqueue is the traced handle on db.prefix, made (and the SDK set up) at first use.
func tqueue(db, prefix string) (*mongomq.Queue, error) {
	if tel == nil {
		spans = tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		tel = otelmongomq.New(otelmongomq.WithTracerProvider(tp), otelmongomq.WithPropagator(propagation.TraceContext{}))
	}
	key := db + " " + prefix
	if q := tqueues[key]; q != nil {
		return q, nil
	}
	q, err := client.Queue(db, prefix)
	if err != nil {
		return nil, err
	}
	if err := q.SetTelemetry(tel); err != nil {
		q.Close()
		return nil, err
	}
	tqueues[key] = q
	return q, nil
}

// finished is the finished span called name whose messaging.message.id is id ("":
// any), or false.
func finished(name, id string) (tracetest.SpanStub, bool) {
	for _, s := range spans.GetSpans() {
		if s.Name != name {
			continue
		}
		if id == "" {
			return s, true
		}
		for _, kv := range s.Attributes {
			if kv.Key == "messaging.message.id" && kv.Value.AsString() == id {
				return s, true
			}
		}
	}
	return tracetest.SpanStub{}, false
}

// tpublish DB PREFIX GROUPHEX EVENT TRACEID SPANID
func tpublish(a []string) (string, error) {
	if len(a) != 6 {
		return "", fmt.Errorf("tpublish takes DB PREFIX GROUPHEX EVENT TRACEID SPANID")
	}
	q, err := tqueue(a[0], a[1])
	if err != nil {
		return "", err
	}
	defer spans.Reset()
	g, err := hex.DecodeString(a[2])
	if err != nil {
		return "", err
	}
	data, err := specBytes(a[3])
	if err != nil {
		return "", err
	}
	tid, err := trace.TraceIDFromHex(a[4])
	if err != nil {
		return "", err
	}
	sid, err := trace.SpanIDFromHex(a[5])
	if err != nil {
		return "", err
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	seq, err := q.PublishContext(trace.ContextWithRemoteSpanContext(context.Background(), parent), string(g), data, mongomq.PublishOptions{})
	if err != nil {
		return "", err
	}
	s, ok := finished("send "+q.Name(), strconv.FormatInt(seq, 10))
	if !ok {
		return "", fmt.Errorf("no finished send span for seq %d", seq)
	}
	return fmt.Sprintf("ok %d %s %s %s", seq, s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.Parent.SpanID()), nil
}

// twork DB PREFIX WAIT_S
func twork(a []string) (string, error) {
	if len(a) != 3 {
		return "", fmt.Errorf("twork takes DB PREFIX WAIT_S")
	}
	q, err := tqueue(a[0], a[1])
	if err != nil {
		return "", err
	}
	defer spans.Reset()
	var once sync.Once
	var first int64
	got := make(chan struct{})
	w, err := q.Worker(mongomq.WorkOptions{Concurrency: 1, Visibility: 30 * time.Second, WorkerID: "go-agent",
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "go agent: twork:", err) }},
		func(_ context.Context, l *mongomq.Lease) error {
			once.Do(func() {
				first = l.Seq()
				close(got)
			})
			return nil
		})
	if err != nil {
		return "", err
	}
	handled := false
	select {
	case <-got:
		handled = true
	case <-time.After(secs(a[2])):
	}
	w.Stop()
	if err := w.Wait(); err != nil {
		return "", err
	}
	if !handled {
		return "ok none", nil
	}
	s, ok := finished("process "+q.Name(), strconv.FormatInt(first, 10))
	if !ok {
		return "", fmt.Errorf("no finished process span for seq %d", first)
	}
	linkTrace, linkSpan := "-", "-"
	if len(s.Links) > 0 {
		linkTrace, linkSpan = s.Links[0].SpanContext.TraceID().String(), s.Links[0].SpanContext.SpanID().String()
	}
	attempts := "-"
	for _, kv := range s.Attributes {
		if kv.Key == "messaging.mongomq.message.attempts" {
			attempts = strconv.FormatInt(kv.Value.AsInt64(), 10)
		}
	}
	return fmt.Sprintf("ok %d %s %s %s %s %s", first, s.SpanContext.TraceID(), s.SpanContext.SpanID(), linkTrace, linkSpan, attempts), nil
}
