// Package bench is the workload of the C bench (bench/README.md) through the Go
// binding, shared by cmd/mongomq-bench and otelmongomq's bench (which runs it with
// tracing on and off): publish N events ({"i":<index>}, each with A attributes when
// asked) round-robin over G groups (group g has priority g % 5), B at a time, from
// one goroutine; then drain them with W goroutines, each with a Client of its own,
// either claim -> ack by hand (sleeping 2 ms after an empty claim) or through the
// worker helper (one Worker of concurrency 1 on each), MaxEvents B. It reports
// events/s and the process's CPU time per event for both phases, the claim and ack
// latencies (hand drain) and the server commands per event, and whether every
// event was acked exactly once.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

// Options are one run's.
type Options struct {
	URI        string
	Events     int
	Groups     int
	Workers    int
	Visibility time.Duration
	// Attrs is the number of attributes each event carries (0..AttrMax): keys
	// "bench.a<i>", 16-byte values.
	Attrs int
	// Worker drains through the worker helper instead of claim -> ack by hand.
	Worker bool
	// Setup, when set, is called on every queue the run opens (the publisher's and
	// each worker's), before it is used: otelmongomq's bench sets its telemetry.
	Setup func(*mongomq.Queue) error
}

// Result is one run's.
type Result struct {
	Mode                          string
	PublishS, DrainS              float64
	PublishCPU, DrainCPU          time.Duration // the process's CPU time in each phase (cpu_*.go)
	ClaimMs, AckMs                []float64
	Commands                      uint64
	EmptyClaims, LeaseLost        int
	Lost, Duplicated, SeqMismatch int
}

// PublishRate and DrainRate are events/s.
func (r Result) PublishRate(o Options) float64 { return float64(o.Events) / r.PublishS }
func (r Result) DrainRate(o Options) float64   { return float64(o.Events) / r.DrainS }

// PublishCPUPerEvent and DrainCPUPerEvent are the process's CPU microseconds per
// event in each phase.
func (r Result) PublishCPUPerEvent(o Options) float64 {
	return float64(r.PublishCPU.Microseconds()) / float64(o.Events)
}
func (r Result) DrainCPUPerEvent(o Options) float64 {
	return float64(r.DrainCPU.Microseconds()) / float64(o.Events)
}

// OK says whether every event was acked exactly once, with its seq.
func (r Result) OK() bool { return r.Lost == 0 && r.Duplicated == 0 && r.SeqMismatch == 0 }

func eventOf(o Options, i int) (group string, event []byte, opts mongomq.PublishOptions) {
	g := i % o.Groups
	opts.Priority = g % 5
	for a := 0; a < o.Attrs; a++ {
		opts.Attrs = append(opts.Attrs, mongomq.Attr{Key: fmt.Sprintf("bench.a%d", a), Value: fmt.Sprintf("value-%010d", i)})
	}
	return fmt.Sprintf("bench-%06d", g), []byte(fmt.Sprintf(`{"i":%d}`, i)), opts
}

func openQueue(o Options, db, prefix string) (*mongomq.Client, *mongomq.Queue, error) {
	c, err := mongomq.Connect(o.URI)
	if err != nil {
		return nil, nil, err
	}
	q, err := c.Queue(db, prefix)
	if err == nil && o.Setup != nil {
		err = o.Setup(q)
	}
	if err != nil {
		if q != nil {
			q.Close()
		}
		c.Close()
		return nil, nil, err
	}
	return c, q, nil
}

type worker struct {
	c *mongomq.Client
	q *mongomq.Queue
}

// drained is what the drain saw, shared by its goroutines.
type drained struct {
	mu       sync.Mutex
	seqOf    []int64
	acked    []int
	total    int
	firstErr error
	r        *Result
}

func (d *drained) fail(err error) {
	d.mu.Lock()
	if d.firstErr == nil {
		d.firstErr = err
	}
	d.mu.Unlock()
}

// got counts the lease's events; it says whether every event is in.
func (d *drained) got(lease *mongomq.Lease) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := 0; k < lease.Count(); k++ {
		var idx int
		if _, err := fmt.Sscanf(string(lease.EventAt(k)), `{"i":%d}`, &idx); err != nil || idx < 0 || idx >= len(d.acked) {
			if d.firstErr == nil {
				d.firstErr = fmt.Errorf("unexpected event %q", lease.EventAt(k))
			}
			continue
		}
		if d.acked[idx]++; d.acked[idx] == 1 {
			d.total++
		} else {
			d.r.Duplicated++
		}
		if lease.SeqAt(k) != d.seqOf[idx] {
			d.r.SeqMismatch++
		}
	}
	return d.total >= len(d.acked)
}

func (d *drained) done() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total >= len(d.acked) || d.firstErr != nil
}

// Run runs the workload once with batches of batch (1: Publish and Claim) on the
// queue db.bench_<mode>, dropped at the end.
func Run(o Options, db string, batch int) (r Result, err error) {
	r.Mode = "single"
	prefix := "bench_single"
	if batch > 1 {
		r.Mode = fmt.Sprintf("batch(%d)", batch)
		prefix = fmt.Sprintf("bench_batch%d", batch)
	}
	r.Lost = o.Events
	pc, pq, err := openQueue(o, db, prefix)
	if err != nil {
		return r, err
	}
	defer pc.Close()
	defer pq.Close()
	ws := make([]worker, o.Workers)
	for i := range ws {
		c, q, err := openQueue(o, db, prefix)
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
	d := &drained{seqOf: make([]int64, o.Events), acked: make([]int, o.Events), r: &r}
	t0, c0 := time.Now(), cpuTime()
	if batch == 1 {
		for i := 0; i < o.Events; i++ {
			g, ev, opts := eventOf(o, i)
			if d.seqOf[i], err = pq.Publish(g, ev, opts); err != nil {
				return r, err
			}
		}
	} else {
		msgs := make([]mongomq.Message, 0, batch)
		for i := 0; i < o.Events; i += batch {
			msgs = msgs[:0]
			for j := i; j < i+batch && j < o.Events; j++ {
				g, ev, opts := eventOf(o, j)
				msgs = append(msgs, mongomq.Message{Group: g, Event: ev, PublishOptions: opts})
			}
			first, err := pq.PublishBatch(msgs)
			if err != nil {
				return r, err
			}
			for k := range msgs {
				d.seqOf[i+k] = first + int64(k)
			}
		}
	}
	r.PublishS, r.PublishCPU = time.Since(t0).Seconds(), cpuTime()-c0

	// Phase 2: drain.
	t0, c0 = time.Now(), cpuTime()
	if o.Worker {
		drainWorkers(o, ws, batch, d)
	} else {
		drainByHand(o, ws, batch, d)
	}
	r.DrainS, r.DrainCPU = time.Since(t0).Seconds(), cpuTime()-c0
	r.Lost = o.Events - d.total
	r.Commands = pc.CommandCount()
	for _, w := range ws {
		r.Commands += w.c.CommandCount()
	}
	r.Commands -= cmdStart
	if err := pq.Drop(); err != nil {
		d.fail(err)
	}
	return r, d.firstErr
}

// drainByHand: each worker claims and acks until every event is in.
func drainByHand(o Options, ws []worker, batch int, d *drained) {
	var wg sync.WaitGroup
	for i := range ws {
		wg.Add(1)
		go func(w worker, id int) {
			defer wg.Done()
			var claims, acks []float64
			empty, lost := 0, 0
			defer func() {
				d.mu.Lock()
				d.r.ClaimMs = append(d.r.ClaimMs, claims...)
				d.r.AckMs = append(d.r.AckMs, acks...)
				d.r.EmptyClaims += empty
				d.r.LeaseLost += lost
				d.mu.Unlock()
			}()
			opts := mongomq.ClaimOptions{Visibility: o.Visibility, MaxEvents: batch, WorkerID: fmt.Sprintf("bench-worker-%d", id)}
			lastProgress := time.Now()
			for !d.done() {
				c0 := time.Now()
				lease, err := w.q.Claim(context.Background(), opts)
				if errors.Is(err, mongomq.ErrEmpty) {
					empty++
					if time.Since(lastProgress) > 30*time.Second {
						d.fail(errors.New("no event acked for 30 s"))
						return
					}
					time.Sleep(2 * time.Millisecond)
					continue
				}
				if err != nil {
					d.fail(err)
					return
				}
				claims = append(claims, float64(time.Since(c0).Microseconds())/1e3)
				a0 := time.Now()
				err = w.q.Ack(lease)
				acks = append(acks, float64(time.Since(a0).Microseconds())/1e3)
				if errors.Is(err, mongomq.ErrLeaseLost) {
					lost++
				} else if err != nil {
					d.fail(err)
					return
				}
				lastProgress = time.Now()
				d.got(lease)
			}
		}(ws[i], i+1)
	}
	wg.Wait()
}

// drainWorkers: a Worker (concurrency 1) on each queue until every event was
// handled; they are stopped then, and waited for (so every ack is done). A worker
// that reports an error (a lost lease included) fails the run.
func drainWorkers(o Options, ws []worker, batch int, d *drained) {
	all := make(chan struct{})
	var once sync.Once
	var running []*mongomq.Worker
	for i, w := range ws {
		wk, err := w.q.Worker(mongomq.WorkOptions{
			Concurrency: 1, Visibility: o.Visibility, MaxEvents: batch,
			WorkerID: fmt.Sprintf("bench-worker-%d", i+1),
			OnError:  d.fail,
		}, func(_ context.Context, lease *mongomq.Lease) error {
			if d.got(lease) {
				once.Do(func() { close(all) })
			}
			return nil
		})
		if err != nil {
			d.fail(err)
			break
		}
		running = append(running, wk)
	}
	if len(running) == len(ws) {
		select {
		case <-all:
		case <-time.After(time.Duration(o.Events)*10*time.Millisecond + 30*time.Second):
			d.fail(errors.New("the workers did not handle every event in time"))
		}
	}
	for _, wk := range running {
		wk.Stop()
	}
	for _, wk := range running {
		if err := wk.Wait(); err != nil {
			d.fail(err)
		}
	}
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

// Report prints r as cmd/mongomq-bench does.
func Report(w io.Writer, o Options, r Result) {
	drain := "claim -> ack"
	if o.Worker {
		drain = "worker helper"
	}
	fmt.Fprintf(w, "== %s\n", r.Mode)
	fmt.Fprintf(w, "events %d  groups %d  workers %d  visibility %s  attributes %d  drain %s\n", o.Events, o.Groups,
		o.Workers, o.Visibility, o.Attrs, drain)
	fmt.Fprintf(w, "%-10s %10s %12s %10s %10s %12s\n", "phase", "seconds", "events/s", "p50 ms", "p99 ms", "cpu us/event")
	fmt.Fprintf(w, "%-10s %10.3f %12.1f %10s %10s %12.1f\n", "publish", r.PublishS, r.PublishRate(o), "-", "-", r.PublishCPUPerEvent(o))
	fmt.Fprintf(w, "%-10s %10.3f %12.1f %10s %10s %12.1f\n", "drain", r.DrainS, r.DrainRate(o), "-", "-", r.DrainCPUPerEvent(o))
	if !o.Worker {
		fmt.Fprintf(w, "%-10s %10s %12s %10.3f %10.3f %12s\n", "  claim", "-", "-", percentile(r.ClaimMs, 0.5), percentile(r.ClaimMs, 0.99), "-")
		fmt.Fprintf(w, "%-10s %10s %12s %10.3f %10.3f %12s\n", "  ack", "-", "-", percentile(r.AckMs, 0.5), percentile(r.AckMs, 0.99), "-")
		fmt.Fprintf(w, "claims %d (+ %d empty)  lease lost %d  ", len(r.ClaimMs), r.EmptyClaims, r.LeaseLost)
	}
	fmt.Fprintf(w, "commands/event %.2f\n", float64(r.Commands)/float64(o.Events))
	fmt.Fprintf(w, "every event acked exactly once: %v (lost %d, duplicated %d, seq mismatch %d)\n\n",
		r.OK(), r.Lost, r.Duplicated, r.SeqMismatch)
}
