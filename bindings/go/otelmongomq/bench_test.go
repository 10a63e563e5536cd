// bench_test.go: what the Telemetry itself costs per operation, without a server
// (go test -bench . -run '^$'): a publish's Publish and done, and a handled
// lease's Process, done, Settle and done, with the global no-ops and with the SDK
// (every span sampled into a batch processor and a discarding exporter). The
// queue's own cost is in cmd/otelmongomq-bench.

package otelmongomq_test

import (
	"context"
	"testing"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

func benchTelemetries(b *testing.B) map[string]*otelmongomq.Telemetry {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return map[string]*otelmongomq.Telemetry{
		"noop": otelmongomq.New(),
		"sdk": otelmongomq.New(otelmongomq.WithTracerProvider(tp), otelmongomq.WithMeterProvider(mp),
			otelmongomq.WithPropagator(propagation.TraceContext{})),
	}
}

func BenchmarkPublishHook(b *testing.B) {
	for _, name := range []string{"noop", "sdk"} {
		tel := benchTelemetries(b)[name]
		b.Run(name, func(b *testing.B) {
			op := mongomq.PublishOp{Queue: "db.prefix", Group: "g", Count: 1}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_, done := tel.Publish(context.Background(), op)
				done(int64(i+1), nil)
			}
		})
	}
}

// The lease is a real one (claimed once from the test server) whose event carries
// a traceparent, so Process extracts a link as the worker's would; Process does
// not change it, so the loop reuses it.
func BenchmarkProcessSettleHook(b *testing.B) {
	tels := benchTelemetries(b)
	q := newQueue(b)
	if err := q.SetTelemetry(tels["sdk"]); err != nil {
		b.Fatal(err)
	}
	if _, err := q.Publish("g", []byte("e"), mongomq.PublishOptions{}); err != nil {
		b.Fatal(err)
	}
	lease, err := q.Claim(context.Background(), mongomq.ClaimOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer lease.Close()
	if _, ok := lease.Attr("traceparent"); !ok {
		b.Fatal("the claimed event carries no traceparent")
	}
	for _, name := range []string{"noop", "sdk"} {
		tel := tels[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				ctx, done := tel.Process(context.Background(), mongomq.ProcessOp{Queue: q.Name(), Lease: lease})
				done(nil)
				tel.Settle(ctx, mongomq.SettleOp{Queue: q.Name(), Name: "ack", Lease: lease, InWorker: true})(nil)
			}
		})
	}
}
