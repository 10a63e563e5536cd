// Command mongomq-bench runs the workload of the C bench (bench/README.md) through
// the Go binding, so the two figures side by side are the binding's overhead:
// publish N events ({"i":<index>}) round-robin over G groups (group g has
// priority g % 5), B at a time, from one goroutine; then drain them with W
// goroutines, each with a Client of its own, claim -> ack, sleeping 2 ms after an
// empty claim (with a P for each worker: see main). Without -batch it runs the
// single mode (B = 1: Publish, Claim) and the batch(10) mode (PublishBatch, Claim
// with MaxEvents 10), each on a fresh queue. It prints events/s for both phases,
// the claim and ack latencies and the server commands per event, and exits 1 if an
// event was lost or duplicated.
//
//	go run ./cmd/mongomq-bench -uri mongodb://127.0.0.1:27017 [-events 2000] [-groups 50] [-workers 4] [-batch B]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

type options struct {
	uri        string
	events     int
	groups     int
	workers    int
	visibility time.Duration
	batch      int
}

type result struct {
	mode                          string
	publishS, drainS              float64
	claimMs, ackMs                []float64
	commands                      uint64
	emptyClaims, leaseLost        int
	lost, duplicated, seqMismatch int
}

func main() {
	var o options
	var vis float64
	flag.StringVar(&o.uri, "uri", os.Getenv("MONGOMQ_URI"), "MongoDB URI (default $MONGOMQ_URI)")
	flag.IntVar(&o.events, "events", 2000, "events to publish and drain in each mode")
	flag.IntVar(&o.groups, "groups", 50, "groups")
	flag.IntVar(&o.workers, "workers", 4, "draining goroutines, each with its own client")
	flag.Float64Var(&vis, "visibility", 30, "lease seconds")
	flag.IntVar(&o.batch, "batch", 0, "run only the mode with batches of B (1 is the single mode); default both")
	flag.Parse()
	if o.uri == "" {
		fmt.Fprintln(os.Stderr, "mongomq-bench: no URI: pass -uri or set MONGOMQ_URI")
		os.Exit(2)
	}
	if o.events < 1 || o.groups < 1 || o.workers < 1 || vis <= 0 || o.batch < 0 || o.batch > mongomq.BatchMax {
		fmt.Fprintln(os.Stderr, "mongomq-bench: bad arguments")
		os.Exit(2)
	}
	o.visibility = time.Duration(vis * float64(time.Second))
	// The workers (and the publisher) spend their time in C calls that wait for the
	// server, each holding a P while it waits. With fewer Ps than such goroutines
	// (GOMAXPROCS is the number of CPUs, 2 on the project's machines, for 4 workers),
	// every call needs the runtime's sysmon to take a P from a goroutine in C and hand
	// it over: 20 us or more of delay and two more thread switches per call. The C
	// bench's W threads never wait for one another that way, so the workload matches
	// only with a P each (bench/README.md, "Go: what its extra CPU was"). GOMAXPROCS
	// in the environment wins.
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < o.workers+1 {
		runtime.GOMAXPROCS(o.workers + 1)
	}
	modes := []int{1, 10}
	if o.batch > 0 {
		modes = []int{o.batch}
	}
	db := fmt.Sprintf("mongomq_gobench_%d_%d", os.Getpid(), time.Now().Unix())
	fmt.Printf("mongomq-bench (Go binding, libmongomq %s, GOMAXPROCS %d): database %s\n\n", mongomq.LibraryVersion(),
		runtime.GOMAXPROCS(0), db)
	ok := true
	var summary []string
	for _, b := range modes {
		r, err := run(o, db, b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mongomq-bench: %s: %v\n", r.mode, err)
			ok = false
		}
		report(o, r)
		if r.lost != 0 || r.duplicated != 0 || r.seqMismatch != 0 {
			ok = false
		}
		summary = append(summary, fmt.Sprintf("%s publish %.1f drain %.1f", r.mode,
			float64(o.events)/r.publishS, float64(o.events)/r.drainS))
	}
	fmt.Printf("events/s: %s\n", join(summary, "; "))
	if !ok {
		os.Exit(1)
	}
}

func join(s []string, sep string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += sep
		}
		out += x
	}
	return out
}

func eventOf(i, groups int) (group string, event []byte, priority int) {
	g := i % groups
	return fmt.Sprintf("bench-%06d", g), []byte(fmt.Sprintf(`{"i":%d}`, i)), g % 5
}

func openQueue(uri, db, prefix string) (*mongomq.Client, *mongomq.Queue, error) {
	c, err := mongomq.Connect(uri)
	if err != nil {
		return nil, nil, err
	}
	q, err := c.Queue(db, prefix)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, q, nil
}

func run(o options, db string, batch int) (r result, err error) {
	r.mode = "single"
	prefix := "bench_single"
	if batch > 1 {
		r.mode = fmt.Sprintf("batch(%d)", batch)
		prefix = fmt.Sprintf("bench_batch%d", batch)
	}
	r.lost = o.events
	pc, pq, err := openQueue(o.uri, db, prefix)
	if err != nil {
		return r, err
	}
	defer pc.Close()
	defer pq.Close()
	type worker struct {
		c *mongomq.Client
		q *mongomq.Queue
	}
	ws := make([]worker, o.workers)
	for i := range ws {
		c, q, err := openQueue(o.uri, db, prefix)
		if err != nil {
			return r, err
		}
		defer c.Close()
		defer q.Close()
		ws[i] = worker{c, q}
	}
	cmdStart := pc.CommandCount()
	for _, w := range ws {
		cmdStart += w.c.CommandCount()
	}

	// Phase 1: publish.
	seqOf := make([]int64, o.events)
	t0 := time.Now()
	if batch == 1 {
		for i := 0; i < o.events; i++ {
			g, ev, p := eventOf(i, o.groups)
			if seqOf[i], err = pq.Publish(g, ev, mongomq.PublishOptions{Priority: p}); err != nil {
				return r, err
			}
		}
	} else {
		msgs := make([]mongomq.Message, 0, batch)
		for i := 0; i < o.events; i += batch {
			msgs = msgs[:0]
			for j := i; j < i+batch && j < o.events; j++ {
				g, ev, p := eventOf(j, o.groups)
				msgs = append(msgs, mongomq.Message{Group: g, Event: ev, PublishOptions: mongomq.PublishOptions{Priority: p}})
			}
			first, err := pq.PublishBatch(msgs)
			if err != nil {
				return r, err
			}
			for k := range msgs {
				seqOf[i+k] = first + int64(k)
			}
		}
	}
	r.publishS = time.Since(t0).Seconds()

	// Phase 2: drain.
	var mu sync.Mutex
	acked := make([]int, o.events)
	ackedTotal := 0
	var firstErr error
	var wg sync.WaitGroup
	t0 = time.Now()
	for i := range ws {
		wg.Add(1)
		go func(w worker, id int) {
			defer wg.Done()
			var claims, acks []float64
			empty, lost := 0, 0
			defer func() {
				mu.Lock()
				r.claimMs = append(r.claimMs, claims...)
				r.ackMs = append(r.ackMs, acks...)
				r.emptyClaims += empty
				r.leaseLost += lost
				mu.Unlock()
			}()
			opts := mongomq.ClaimOptions{Visibility: o.visibility, MaxEvents: batch, WorkerID: fmt.Sprintf("bench-worker-%d", id)}
			lastProgress := time.Now()
			for {
				mu.Lock()
				done := ackedTotal >= o.events || firstErr != nil
				mu.Unlock()
				if done {
					return
				}
				c0 := time.Now()
				lease, err := w.q.Claim(context.Background(), opts)
				if errors.Is(err, mongomq.ErrEmpty) {
					empty++
					if time.Since(lastProgress) > 30*time.Second {
						mu.Lock()
						if firstErr == nil {
							firstErr = errors.New("no event acked for 30 s")
						}
						mu.Unlock()
						return
					}
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				claims = append(claims, float64(time.Since(c0).Microseconds())/1e3)
				a0 := time.Now()
				err = w.q.Ack(lease)
				acks = append(acks, float64(time.Since(a0).Microseconds())/1e3)
				if errors.Is(err, mongomq.ErrLeaseLost) {
					lost++
				} else if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lastProgress = time.Now()
				mu.Lock()
				for k := 0; k < lease.Count(); k++ {
					var idx int
					if _, err := fmt.Sscanf(string(lease.EventAt(k)), `{"i":%d}`, &idx); err != nil || idx < 0 || idx >= o.events {
						if firstErr == nil {
							firstErr = fmt.Errorf("unexpected event %q", lease.EventAt(k))
						}
						continue
					}
					if acked[idx]++; acked[idx] == 1 {
						ackedTotal++
					} else {
						r.duplicated++
					}
					if lease.SeqAt(k) != seqOf[idx] {
						r.seqMismatch++
					}
				}
				mu.Unlock()
			}
		}(ws[i], i+1)
	}
	wg.Wait()
	r.drainS = time.Since(t0).Seconds()
	r.lost = o.events - ackedTotal
	r.commands = pc.CommandCount()
	for _, w := range ws {
		r.commands += w.c.CommandCount()
	}
	r.commands -= cmdStart
	if err := pq.Drop(); err != nil && firstErr == nil {
		firstErr = err
	}
	return r, firstErr
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(p*float64(len(s))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func report(o options, r result) {
	fmt.Printf("== %s\n", r.mode)
	fmt.Printf("events %d  groups %d  workers %d  visibility %s\n", o.events, o.groups, o.workers, o.visibility)
	fmt.Printf("%-10s %10s %12s %10s %10s\n", "phase", "seconds", "events/s", "p50 ms", "p99 ms")
	fmt.Printf("%-10s %10.3f %12.1f %10s %10s\n", "publish", r.publishS, float64(o.events)/r.publishS, "-", "-")
	fmt.Printf("%-10s %10.3f %12.1f %10s %10s\n", "drain", r.drainS, float64(o.events)/r.drainS, "-", "-")
	fmt.Printf("%-10s %10s %12s %10.3f %10.3f\n", "  claim", "-", "-", percentile(r.claimMs, 0.5), percentile(r.claimMs, 0.99))
	fmt.Printf("%-10s %10s %12s %10.3f %10.3f\n", "  ack", "-", "-", percentile(r.ackMs, 0.5), percentile(r.ackMs, 0.99))
	fmt.Printf("claims %d (+ %d empty)  lease lost %d  commands/event %.2f\n", len(r.claimMs), r.emptyClaims, r.leaseLost,
		float64(r.commands)/float64(o.events))
	fmt.Printf("every event acked exactly once: %v (lost %d, duplicated %d, seq mismatch %d)\n\n",
		r.lost == 0 && r.duplicated == 0 && r.seqMismatch == 0, r.lost, r.duplicated, r.seqMismatch)
}
