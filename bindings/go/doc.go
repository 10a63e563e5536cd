// Package mongomq is the Go binding of libmongomq: a multi-machine queue on
// MongoDB with per-group FIFO exclusivity (events of one group are delivered in
// publish order, one lease at a time; groups are served round-robin).
//
//	client, err := mongomq.Connect(uri)
//	queue, err := client.Queue("shop", "orders")
//	seq, err := queue.Publish("customer-17", event, mongomq.PublishOptions{Priority: 2})
//	lease, err := queue.Claim(ctx, mongomq.ClaimOptions{Visibility: 30 * time.Second, Wait: 5 * time.Second})
//	if errors.Is(err, mongomq.ErrEmpty) { ... }
//	err = queue.Ack(lease)
//
// Or let the worker helper claim, run a handler, extend, ack and nack:
//
//	err = queue.Work(ctx, mongomq.WorkOptions{Concurrency: 4, HandleSignals: true}, handler)
//
// A publish with a dedup key is exactly-once: retried after any error, it leaves one
// event, and PublishWith says whether it was a duplicate:
//
//	p, err := queue.PublishWith("customer-17", event, mongomq.PublishOptions{DedupKey: "order-17-charge"})
//	if err == nil && p.Duplicate { ... } // p.Seq is the first publish's
//
// An event may carry attributes (0.7.0), string keys and values in their order, which
// the lease gives back:
//
//	seq, err := queue.Publish("customer-17", event, mongomq.PublishOptions{Attrs: []mongomq.Attr{{Key: "tenant.id", Value: "t-42"}}})
//	tenant, ok := lease.Attr("tenant.id")
//
// A queue may be spread over partitions (0.8.0), each group in the partition
// GroupPartition gives it; a claim or a worker may take from some of them only:
//
//	queue, err := client.QueueWith("shop", "orders", mongomq.QueueOptions{Partitions: 4})
//	lease, err := queue.Claim(ctx, mongomq.ClaimOptions{Partitions: []int{1}, Wait: 5 * time.Second})
//
// Tracing and metrics (issue 22) plug in through the Telemetry interface; the
// OpenTelemetry implementation is the module
// github.com/mongomq/mongomq/bindings/go/otelmongomq, so this package depends on
// nothing beyond the standard library. The publishes' Context forms carry the
// caller's trace context:
//
//	err = queue.SetTelemetry(otelmongomq.New())
//	seq, err = queue.PublishContext(ctx, "customer-17", event, mongomq.PublishOptions{})
//
// Client and Queue are safe for concurrent use. Every failed call the library
// reported returns an *Error (its Status, ServerCode and Message), which errors.Is
// matches against ErrEmpty, ErrLeaseLost, ErrInvalidArgument, ErrConnect,
// ErrInterrupted and ErrServer; a call on a closed handle returns an error that
// errors.Is ErrClosed; a Claim ended by its context returns ctx.Err().
//
// Instants are time.Time and durations time.Duration throughout. libmongoc's log
// goes to log/slog (warnings and above) from the first Connect on; SetLogHandler
// replaces that. For tests and simulations a queue can run on a ManualClock
// (Queue.SetClock) instead of server time.
//
// The package links the installed C library through pkg-config (mongomq.pc); no
// SWIG is needed to build it. See README.md for every call.
package mongomq
