// Command otelmongomq-bench runs the Go bench's workload (bindings/go/internal/bench:
// publish N events over G groups, then drain them with W clients) with tracing off
// and on, with and without attributes, and prints events/s and the process's CPU
// time per event for each: what tracing costs a publish and a handled event (issue
// 22). The tracing states:
//
//	off   no Telemetry on the queues (what every queue does by default)
//	noop  otelmongomq.New() with the global providers and no SDK configured: the
//	      OpenTelemetry API's no-ops (a queue traced by a program that never set up an SDK)
//	sdk   the OpenTelemetry SDK: every span sampled, a batch span processor (with
//	      -processor simple, the synchronous one) into an exporter that discards
//	      them, a meter provider with a reader never read, W3C trace context (a
//	      send span per publish, a process and an ack span per handled lease, the
//	      four metrics)
//
// Each configuration runs -rounds times, the configurations taking turns (each
// round in an order rotated by one), and the table shows each one's median (the
// machine is shared: single runs are noisy, and events/s, which waits for the
// server, more so than the CPU time). The drain goes through the worker helper,
// which is what records process and settle spans (with -worker=false: claim -> ack
// by hand, which records the ack's metric only).
//
//	go run ./cmd/otelmongomq-bench -uri mongodb://127.0.0.1:27017 [-events 2000] [-groups 50] [-workers 4] [-batch 1] [-attrs 4] [-rounds 3] [-worker=true] [-processor batch]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync/atomic"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/internal/bench"
	"github.com/mongomq/mongomq/bindings/go/otelmongomq"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discard is a span exporter that counts the spans it is given and keeps none.
type discard struct{ spans atomic.Int64 }

func (d *discard) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(spans)))
	return nil
}

func (d *discard) Shutdown(context.Context) error { return nil }

type config struct {
	tracing string // off, noop, sdk
	attrs   int
}

func (c config) String() string { return fmt.Sprintf("tracing %-4s attrs %2d", c.tracing, c.attrs) }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	var o bench.Options
	var vis float64
	var batch, attrs, rounds int
	flag.StringVar(&o.URI, "uri", os.Getenv("MONGOMQ_URI"), "MongoDB URI (default $MONGOMQ_URI)")
	flag.IntVar(&o.Events, "events", 2000, "events to publish and drain in each run")
	flag.IntVar(&o.Groups, "groups", 50, "groups")
	flag.IntVar(&o.Workers, "workers", 4, "draining clients")
	flag.Float64Var(&vis, "visibility", 30, "lease seconds")
	flag.IntVar(&batch, "batch", 1, "events per publish and per lease (1: Publish and single leases)")
	flag.IntVar(&attrs, "attrs", 4, fmt.Sprintf("attributes per event in the runs with attributes (1..%d)", mongomq.AttrMax-1))
	flag.IntVar(&rounds, "rounds", 3, "runs of each configuration")
	flag.BoolVar(&o.Worker, "worker", true, "drain through the worker helper (false: claim -> ack by hand)")
	processor := flag.String("processor", "batch", "the sdk's span processor: batch (sdktrace.WithBatcher) or simple (WithSyncer: exported in End)")
	flag.Parse()
	if o.URI == "" {
		fmt.Fprintln(os.Stderr, "otelmongomq-bench: no URI: pass -uri or set MONGOMQ_URI")
		os.Exit(2)
	}
	// attrs < AttrMax leaves room for traceparent: the runs with attributes inject it too.
	if o.Events < 1 || o.Groups < 1 || o.Workers < 1 || vis <= 0 || batch < 1 || batch > mongomq.BatchMax ||
		attrs < 1 || attrs >= mongomq.AttrMax || rounds < 1 {
		fmt.Fprintln(os.Stderr, "otelmongomq-bench: bad arguments")
		os.Exit(2)
	}
	o.Visibility = time.Duration(vis * float64(time.Second))
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < o.Workers+1 { // as cmd/mongomq-bench, for the same reason
		runtime.GOMAXPROCS(o.Workers + 1)
	}

	exporter := &discard{}
	var export sdktrace.TracerProviderOption
	switch *processor {
	case "batch":
		export = sdktrace.WithBatcher(exporter)
	case "simple":
		export = sdktrace.WithSyncer(exporter)
	default:
		fmt.Fprintln(os.Stderr, "otelmongomq-bench: -processor is batch or simple")
		os.Exit(2)
	}
	tp := sdktrace.NewTracerProvider(export, sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	}()
	tels := map[string]mongomq.Telemetry{
		"off":  nil,
		"noop": otelmongomq.New(),
		"sdk": otelmongomq.New(otelmongomq.WithTracerProvider(tp), otelmongomq.WithMeterProvider(mp),
			otelmongomq.WithPropagator(propagation.TraceContext{})),
	}
	var configs []config
	for _, tr := range []string{"off", "noop", "sdk"} {
		for _, a := range []int{0, attrs} {
			configs = append(configs, config{tr, a})
		}
	}

	drain := "worker helper"
	if !o.Worker {
		drain = "claim -> ack"
	}
	db := fmt.Sprintf("mongomq_gootelbench_%d_%d", os.Getpid(), time.Now().Unix())
	fmt.Printf("otelmongomq-bench (Go binding, libmongomq %s, GOMAXPROCS %d): database %s\n", mongomq.LibraryVersion(),
		runtime.GOMAXPROCS(0), db)
	fmt.Printf("events %d  groups %d  workers %d  batch %d  drain %s  rounds %d  sdk span processor %s\n\n", o.Events,
		o.Groups, o.Workers, batch, drain, rounds, *processor)

	pub, drn := map[config][]float64{}, map[config][]float64{}
	pubCPU, drnCPU := map[config][]float64{}, map[config][]float64{}
	spans := map[config]int64{}
	ok := true
	for round := 0; round < rounds; round++ {
		// Each round starts one configuration later: none always runs first, or
		// right after the same other (what a run leaves behind, a GC, the server's
		// caches, would otherwise count against the same configuration each time).
		for j := range configs {
			c := configs[(round+j)%len(configs)]
			ro := o
			ro.Attrs = c.attrs
			tel := tels[c.tracing]
			ro.Setup = func(q *mongomq.Queue) error { return q.SetTelemetry(tel) }
			before := exporter.spans.Load()
			r, err := bench.Run(ro, db, batch)
			if err != nil || !r.OK() {
				fmt.Fprintf(os.Stderr, "otelmongomq-bench: %s round %d: %v (lost %d, duplicated %d, seq mismatch %d)\n",
					c, round+1, err, r.Lost, r.Duplicated, r.SeqMismatch)
				ok = false
				continue
			}
			if err := tp.ForceFlush(context.Background()); err != nil {
				fmt.Fprintf(os.Stderr, "otelmongomq-bench: flushing spans: %v\n", err)
				ok = false
			}
			spans[c] += exporter.spans.Load() - before
			pub[c] = append(pub[c], r.PublishRate(ro))
			drn[c] = append(drn[c], r.DrainRate(ro))
			pubCPU[c] = append(pubCPU[c], r.PublishCPUPerEvent(ro))
			drnCPU[c] = append(drnCPU[c], r.DrainCPUPerEvent(ro))
			fmt.Printf("round %d  %s  publish %9.1f  drain %9.1f events/s  cpu us/event publish %6.1f  drain %6.1f\n",
				round+1, c, r.PublishRate(ro), r.DrainRate(ro), r.PublishCPUPerEvent(ro), r.DrainCPUPerEvent(ro))
		}
	}

	fmt.Printf("\nmedian of %d rounds (and against tracing off with as many attributes):\n", rounds)
	fmt.Printf("%-22s %20s %20s %20s %20s %12s\n", "configuration", "publish events/s", "drain events/s",
		"publish cpu us/event", "drain cpu us/event", "spans/event")
	for _, c := range configs {
		base := config{"off", c.attrs}
		cell := func(m map[config][]float64) string {
			v, b := median(m[c]), median(m[base])
			return fmt.Sprintf("%10.1f (%+6.1f%%)", v, 100*(v/b-1))
		}
		fmt.Printf("%-22s %20s %20s %20s %20s %12.2f\n", c, cell(pub), cell(drn), cell(pubCPU), cell(drnCPU),
			float64(spans[c])/float64(len(pub[c])*o.Events))
	}
	if !ok {
		os.Exit(1)
	}
}
