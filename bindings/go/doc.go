// Package mongomq is the Go binding of libmongomq: a multi-machine queue on
// MongoDB with per-group FIFO exclusivity (events of one group are delivered in
// publish order, one lease at a time; groups are served round-robin).
//
//	client, err := mongomq.Connect(uri)
//	queue, err := client.Queue("shop", "orders")
//	seq, err := queue.Publish("customer-17", event, 2)
//	lease, err := queue.Claim(ctx, mongomq.ClaimOptions{Visibility: 30 * time.Second, Wait: 5 * time.Second})
//	if errors.Is(err, mongomq.ErrEmpty) { ... }
//	err = queue.Ack(lease)
//
// Client and Queue are safe for concurrent use. Every failed call returns an
// *Error (its Status, ServerCode and Message), which errors.Is matches against
// ErrEmpty, ErrLeaseLost, ErrInvalidArgument, ErrConnect, ErrInterrupted,
// ErrClosed and ErrServer; a Claim ended by its context returns ctx.Err().
//
// For tests and simulations a queue can run on a ManualClock (Queue.SetClock)
// instead of server time; SetLogHandler routes libmongoc's log (process-wide) to a
// Go function.
//
// The package links the installed C library through pkg-config (mongomq.pc); no
// SWIG is needed to build it. See README.md for every call and Work, the worker
// helper.
package mongomq
