// Command mongomq-bench runs the workload of the C bench (bench/README.md) through
// the Go binding (internal/bench), so the two figures side by side are the
// binding's overhead: publish N events round-robin over G groups, B at a time,
// from one goroutine; then drain them with W goroutines, each with a Client of its
// own, claim -> ack (or, with -worker, through the worker helper), with a P for
// each worker (see main). Without -batch it runs the single mode (B = 1: Publish,
// Claim) and the batch(10) mode (PublishBatch, Claim with MaxEvents 10), each on a
// fresh queue. -attrs A gives each event A attributes. It prints events/s for both
// phases, the claim and ack latencies and the server commands per event, and
// exits 1 if an event was lost or duplicated. (With tracing on and off:
// otelmongomq/cmd/otelmongomq-bench, a module of its own.)
//
//	go run ./cmd/mongomq-bench -uri mongodb://127.0.0.1:27017 [-events 2000] [-groups 50] [-workers 4] [-batch B] [-attrs A] [-worker]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"github.com/mongomq/mongomq/bindings/go/internal/bench"
)

func main() {
	var o bench.Options
	var vis float64
	var batch int
	flag.StringVar(&o.URI, "uri", os.Getenv("MONGOMQ_URI"), "MongoDB URI (default $MONGOMQ_URI)")
	flag.IntVar(&o.Events, "events", 2000, "events to publish and drain in each mode")
	flag.IntVar(&o.Groups, "groups", 50, "groups")
	flag.IntVar(&o.Workers, "workers", 4, "draining goroutines, each with its own client")
	flag.Float64Var(&vis, "visibility", 30, "lease seconds")
	flag.IntVar(&batch, "batch", 0, "run only the mode with batches of B (1 is the single mode); default both")
	flag.IntVar(&o.Attrs, "attrs", 0, fmt.Sprintf("attributes per event (0..%d)", mongomq.AttrMax))
	flag.BoolVar(&o.Worker, "worker", false, "drain through the worker helper (a Worker of concurrency 1 per client) instead of claim -> ack")
	flag.Parse()
	if o.URI == "" {
		fmt.Fprintln(os.Stderr, "mongomq-bench: no URI: pass -uri or set MONGOMQ_URI")
		os.Exit(2)
	}
	if o.Events < 1 || o.Groups < 1 || o.Workers < 1 || vis <= 0 || batch < 0 || batch > mongomq.BatchMax ||
		o.Attrs < 0 || o.Attrs > mongomq.AttrMax {
		fmt.Fprintln(os.Stderr, "mongomq-bench: bad arguments")
		os.Exit(2)
	}
	o.Visibility = time.Duration(vis * float64(time.Second))
	// The workers (and the publisher) spend their time in C calls that wait for the
	// server, each holding a P while it waits. With fewer Ps than such goroutines
	// (GOMAXPROCS is the number of CPUs, 2 on the project's machines, for 4 workers),
	// every call needs the runtime's sysmon to take a P from a goroutine in C and hand
	// it over: 20 us or more of delay and two more thread switches per call. The C
	// bench's W threads never wait for one another that way, so the workload matches
	// only with a P each (bench/README.md, "Go: what its extra CPU was"). GOMAXPROCS
	// in the environment wins.
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < o.Workers+1 {
		runtime.GOMAXPROCS(o.Workers + 1)
	}
	modes := []int{1, 10}
	if batch > 0 {
		modes = []int{batch}
	}
	db := fmt.Sprintf("mongomq_gobench_%d_%d", os.Getpid(), time.Now().Unix())
	fmt.Printf("mongomq-bench (Go binding, libmongomq %s, GOMAXPROCS %d): database %s\n\n", mongomq.LibraryVersion(),
		runtime.GOMAXPROCS(0), db)
	ok := true
	var summary []string
	for _, b := range modes {
		r, err := bench.Run(o, db, b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mongomq-bench: %s: %v\n", r.Mode, err)
			ok = false
		}
		bench.Report(os.Stdout, o, r)
		if !r.OK() {
			ok = false
		}
		summary = append(summary, fmt.Sprintf("%s publish %.1f drain %.1f", r.Mode, r.PublishRate(o), r.DrainRate(o)))
	}
	fmt.Printf("events/s: %s\n", strings.Join(summary, "; "))
	if !ok {
		os.Exit(1)
	}
}
