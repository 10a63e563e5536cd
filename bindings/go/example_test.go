// example_test.go: the package documentation's examples (go test runs them and
// checks their output).

package mongomq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

// exampleQueue opens a queue in a fresh database of the test server
// (MONGOMQ_TEST_URI); done drops and closes it.
func exampleQueue() (queue *mongomq.Queue, done func()) {
	client, err := mongomq.Connect(os.Getenv("MONGOMQ_TEST_URI"))
	if err != nil {
		panic(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	queue, err = client.Queue("mqt_go_example_"+hex.EncodeToString(b), "orders")
	if err != nil {
		panic(err)
	}
	client.Close() // the queue keeps the client's pool until it is closed
	return queue, func() {
		_ = queue.Drop()
		_ = queue.Close()
	}
}

// Publish an event, claim it and ack it.
func Example() {
	queue, done := exampleQueue()
	defer done()

	seq, err := queue.Publish("customer-17", []byte(`{"order":1}`), mongomq.PublishOptions{Priority: 2})
	if err != nil {
		panic(err)
	}
	lease, err := queue.Claim(context.Background(), mongomq.ClaimOptions{
		Visibility: 30 * time.Second, Wait: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println(lease.Seq() == seq, lease.Group(), string(lease.Event()), lease.Attempts())
	if err := queue.Ack(lease); err != nil {
		panic(err)
	}
	_, err = queue.Claim(context.Background(), mongomq.ClaimOptions{})
	fmt.Println(errors.Is(err, mongomq.ErrEmpty))
	// Output:
	// true customer-17 {"order":1} 1
	// true
}

// A claim whose context is cancelled returns ctx.Err(); other claims go on.
func ExampleQueue_Claim_cancel() {
	queue, done := exampleQueue()
	defer done()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := queue.Claim(ctx, mongomq.ClaimOptions{Wait: 30 * time.Second})
	fmt.Println(err)
	// Output: context deadline exceeded
}

// The lease-lost error is an *Error that errors.Is matches with ErrLeaseLost.
func ExampleError() {
	queue, done := exampleQueue()
	defer done()

	_, _ = queue.Publish("g", []byte("x"), mongomq.PublishOptions{})
	lease, _ := queue.Claim(context.Background(), mongomq.ClaimOptions{})
	_ = queue.PurgeGroup("g") // the lease's group is gone
	err := queue.Ack(lease)
	var e *mongomq.Error
	fmt.Println(errors.Is(err, mongomq.ErrLeaseLost), errors.As(err, &e) && e.Status == mongomq.StatusLeaseLost)
	// Output: true true
}

// Work runs a handler with 4 goroutines until its context is done.
func ExampleQueue_Work() {
	queue, done := exampleQueue()
	defer done()

	for i := 0; i < 6; i++ {
		_, _ = queue.Publish(fmt.Sprintf("customer-%d", i%2), []byte(fmt.Sprint(i)), mongomq.PublishOptions{})
	}
	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	handled := map[string][]string{}
	err := queue.Work(ctx, mongomq.WorkOptions{Concurrency: 4}, func(_ context.Context, lease *mongomq.Lease) error {
		mu.Lock()
		defer mu.Unlock()
		handled[lease.Group()] = append(handled[lease.Group()], string(lease.Event()))
		if len(handled["customer-0"])+len(handled["customer-1"]) == 6 {
			stop() // graceful: this handler still finishes and is acked
		}
		return nil
	})
	fmt.Println(err, handled["customer-0"], handled["customer-1"])
	stats, _ := queue.Stats()
	fmt.Println(stats.Messages)
	// Output:
	// <nil> [0 2 4] [1 3 5]
	// 0
}

// Worker starts the worker in the background; Stop and Wait end it gracefully.
// IdleTimeout would end it by itself instead.
func ExampleQueue_Worker() {
	queue, done := exampleQueue()
	defer done()

	_, _ = queue.Publish("customer-1", []byte(`{"order":1}`), mongomq.PublishOptions{})
	handled := make(chan int, 1)
	worker, err := queue.Worker(mongomq.WorkOptions{Concurrency: 2}, func(_ context.Context, lease *mongomq.Lease) error {
		var o struct{ Order int }
		if err := lease.JSON(&o); err != nil {
			return err // nacks (and is logged)
		}
		handled <- o.Order
		return nil // acks
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("handled order", <-handled)
	worker.Stop()
	fmt.Println(worker.Wait())
	// Output:
	// handled order 1
	// <nil>
}

// Stats come back as a struct.
func ExampleQueue_Stats() {
	queue, done := exampleQueue()
	defer done()

	_, _ = queue.PublishBatch([]mongomq.Message{
		{Group: "a", Event: []byte("1"), PublishOptions: mongomq.PublishOptions{Priority: 3}},
		{Group: "a", Event: []byte("2"), PublishOptions: mongomq.PublishOptions{Priority: 3}},
		{Group: "b", Event: []byte("3")},
	})
	s, err := queue.Stats()
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Messages, s.Groups.Total, s.Groups.Ready, s.Priorities[3].Messages)
	// Output: 3 2 2 2
}

// List the groups a page at a time, pause one, and read the dead letters by page.
func ExampleQueue_Groups() {
	queue, done := exampleQueue()
	defer done()

	for _, g := range []string{"a", "b", "c"} {
		_, _ = queue.Publish(g, []byte("x"), mongomq.PublishOptions{})
	}
	if err := queue.PauseGroup("c"); err != nil { // no claim takes c until ResumeGroup
		panic(err)
	}
	opts := mongomq.GroupsOptions{Limit: 2} // also States, IDPrefix, MinAttempts, HeldLongerThan, ParkedBeyond, Sort
	for {
		page, err := queue.Groups(opts)
		if err != nil {
			panic(err)
		}
		for _, g := range page.Groups {
			fmt.Println(g.Group, g.State, g.Backlog)
		}
		if page.Next == "" {
			break
		}
		opts.After = page.Next
	}
	paused, _ := queue.Groups(mongomq.GroupsOptions{States: []mongomq.GroupState{mongomq.GroupPaused}})
	fmt.Println(len(paused.Groups), paused.Groups[0].Group)
	dead, _ := queue.DeadPage(0, 20)
	fmt.Println(len(dead.Letters), dead.Total)
	// Output:
	// a ready 1
	// b ready 1
	// c paused 1
	// 1 c
	// 0 0
}

// Publish exactly once: a publish retried with its dedup key (after ErrConnect, say)
// adds nothing and reports the first event's seq as a duplicate.
func ExampleQueue_PublishWith() {
	queue, done := exampleQueue()
	defer done()

	opts := mongomq.PublishOptions{DedupKey: "order-17-charge"} // e.g. the id of the order's step
	first, err := queue.PublishWith("customer-17", []byte(`{"order":17}`), opts)
	if err != nil {
		panic(err)
	}
	retry, err := queue.PublishWith("customer-17", []byte(`{"order":17}`), opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Duplicate, retry.Duplicate, retry.Seq == first.Seq)

	// A batch says what became of each message, in order.
	out, err := queue.PublishBatchWith([]mongomq.Message{
		{Group: "customer-17", Event: []byte(`{"order":17}`), PublishOptions: opts},
		{Group: "customer-18", Event: []byte(`{"order":18}`), PublishOptions: mongomq.PublishOptions{DedupKey: "order-18-charge"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out[0].Duplicate, out[0].Seq == first.Seq, out[1].Duplicate)
	// Output:
	// false true true
	// true true false
}

// Run a queue on a manual clock: a scheduled event becomes due when the clock is
// advanced past its time.
func ExampleManualClock() {
	queue, done := exampleQueue()
	defer done()
	ctx := context.Background()

	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := mongomq.NewManualClock(start)
	defer clock.Close()
	if err := queue.SetClock(clock); err != nil {
		panic(err)
	}
	if _, err := queue.Publish("g", []byte("in a minute"), mongomq.PublishOptions{NotBefore: start.Add(time.Minute)}); err != nil {
		panic(err)
	}
	_, err := queue.Claim(ctx, mongomq.ClaimOptions{})
	fmt.Println("at start:", errors.Is(err, mongomq.ErrEmpty))

	clock.Advance(61 * time.Second)
	lease, err := queue.Claim(ctx, mongomq.ClaimOptions{Visibility: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Printf("61 s later: %s, deadline %s\n", lease.Event(), lease.Deadline().UTC().Format("15:04:05"))
	_ = queue.Ack(lease)
	_ = queue.SetClock(nil) // back on server time
	// Output:
	// at start: true
	// 61 s later: in a minute, deadline 00:01:11
}

// Route libmongoc's warnings and errors to the standard logger, then silence it.
func ExampleSetLogHandler() {
	mongomq.SetLogHandler(func(level int, domain, message string) {
		if level <= mongomq.LogWarning {
			log.Printf("libmongoc %s: %s", domain, message)
		}
	})
	defer mongomq.SetLogHandler(nil) // silence libmongoc
}

// A queue of 4 partitions: each group's partition, a claim and a worker that take
// from some partitions only, and the queue refused with another number of them.
func ExampleClient_QueueWith() {
	client, err := mongomq.Connect(os.Getenv("MONGOMQ_TEST_URI"))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	db := "mqt_go_example_" + hex.EncodeToString(b)

	queue, err := client.QueueWith(db, "orders", mongomq.QueueOptions{Partitions: 4})
	if err != nil {
		panic(err)
	}
	defer func() { _ = queue.Drop(); _ = queue.Close() }()
	fmt.Println(queue.Partitions())

	k, _ := mongomq.GroupPartition("customer-17", queue.Partitions()) // 1, in every language
	for _, group := range []string{"customer-17", "b"} {              // b is in partition 0
		if _, err := queue.Publish(group, []byte(`{"order":1}`), mongomq.PublishOptions{}); err != nil {
			panic(err)
		}
	}
	lease, err := queue.Claim(context.Background(), mongomq.ClaimOptions{Partitions: []int{k}, Wait: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println(lease.Group(), lease.Partition())
	if err := queue.Ack(lease); err != nil {
		panic(err)
	}

	w, err := queue.Worker(mongomq.WorkOptions{Partitions: []int{0}, IdleTimeout: 500 * time.Millisecond},
		func(_ context.Context, l *mongomq.Lease) error {
			fmt.Println("handled", l.Group(), l.Partition())
			return nil
		})
	if err != nil {
		panic(err)
	}
	_ = w.Wait() // it stops by itself once idle

	_, err = client.Queue(db, "orders") // one partition, the default
	fmt.Println(errors.Is(err, mongomq.ErrInvalidArgument))
	// Output:
	// 4
	// customer-17 1
	// handled b 0
	// true
}
