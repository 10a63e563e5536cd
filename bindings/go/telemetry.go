// telemetry.go: the hook tracing and metrics plug into (issue 22): the Telemetry
// interface a queue calls around its publishes, the worker's handler runs and acks
// and nacks; Queue.SetTelemetry; how injected attributes join an event's own within
// the attribute bounds. The OpenTelemetry implementation is the module
// github.com/mongomq/mongomq/bindings/go/otelmongomq, so this package needs none.

package mongomq

import (
	"context"
	"unicode/utf8"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Telemetry is what a Queue given one (Queue.SetTelemetry) tells of its work, for
// tracing and metrics. Package otelmongomq
// (github.com/mongomq/mongomq/bindings/go/otelmongomq, a module of its own, so that a
// program that does not trace gets no OpenTelemetry dependency) implements it as
// bindings/CONTRACT.md ("Tracing") says; another implementation may do anything
// else. A Queue without one calls nothing and does what it did before.
//
// Its methods are called from any goroutine, at once, and must be safe for that.
// Each returns a function the queue calls exactly once, when the operation ended
// (never nil: return a function that does nothing). The Op values name the
// operation; fields may be added to them, never removed.
type Telemetry interface {
	// Publish is called by every publish (Publish, PublishWith, PublishBatch,
	// PublishBatchWith and their Context forms) before anything is sent, with the
	// caller's ctx. It returns attributes to add to every event of the publish
	// (trace context: W3C traceparent, tracestate), which go after the event's own,
	// leaving out any whose key the event already has and any that would break the
	// attribute bounds (a 17th attribute, a bad key, a value over AttrValueMax
	// bytes or not UTF-8): they never fail a publish. done is called with the
	// seq (a single publish's; 0 for a batch or a failure) and the publish's error.
	Publish(ctx context.Context, op PublishOp) (inject []Attr, done func(seq int64, err error))
	// Process is called by the worker helper before it runs the handler on a lease,
	// with the worker's handler context; the handler runs with the context it
	// returns. done is called with the handler's result (a panic as a *PanicError)
	// once it returned, before the lease is acked or nacked.
	Process(ctx context.Context, op ProcessOp) (handlerCtx context.Context, done func(err error))
	// Settle is called by every Ack and Nack before it is sent: by the worker helper
	// with the context Process returned (InWorker true), by a caller's own
	// Queue.Ack or Queue.Nack with context.Background(). done is called with the
	// call's error.
	Settle(ctx context.Context, op SettleOp) (done func(err error))
}

// PublishOp describes one publish to a Telemetry.
type PublishOp struct {
	Queue string // the queue's Name, "db.prefix"
	Batch bool   // PublishBatch or PublishBatchWith (or their Context forms)
	Group string // a single publish's group; "" for a batch
	Count int    // the events published: 1, or the batch's length
}

// ProcessOp describes one handler run of the worker helper to a Telemetry.
type ProcessOp struct {
	Queue string // the queue's Name, "db.prefix"
	Lease *Lease // the lease the handler gets (its Attrs/AttrsAt carry what Publish injected)
}

// SettleOp describes one Ack or Nack to a Telemetry.
type SettleOp struct {
	Queue    string // the queue's Name, "db.prefix"
	Name     string // "ack" or "nack"
	Lease    *Lease
	InWorker bool // the worker helper settling the lease its handler ran on
}

// telemetryBox holds a Queue's Telemetry (an interface cannot be an atomic.Pointer).
type telemetryBox struct{ t Telemetry }

// SetTelemetry gives the queue a Telemetry (for OpenTelemetry:
// q.SetTelemetry(otelmongomq.New())), which it tells of its publishes, and its
// worker helper of each handler run and each ack and nack, from now on; nil (the
// default) turns it off. It applies to this Queue value. Safe to call while the
// queue is in use: a call already running keeps the Telemetry it started with.
// ErrClosed when the queue is closed.
func (q *Queue) SetTelemetry(t Telemetry) error {
	return q.use("SetTelemetry", func(raw.Struct_SS_mq_queue) {
		if t == nil {
			q.tel.Store(nil)
			return
		}
		q.tel.Store(&telemetryBox{t})
	})
}

// telemetry is the queue's Telemetry, or nil.
func (q *Queue) telemetry() Telemetry {
	if q == nil {
		return nil
	}
	if b := q.tel.Load(); b != nil {
		return b.t
	}
	return nil
}

// withInjected is attrs followed by those of inject that fit: a key attrs (or an
// earlier injected one) has is left out, and so is an attribute the library would
// refuse (past AttrMax, a bad key, a value too long, not UTF-8 or holding a NUL),
// so that tracing never fails a publish. attrs itself is not changed; with nothing
// to add it is returned as it is.
func withInjected(attrs, inject []Attr) []Attr {
	var out []Attr
	for _, a := range inject {
		n := len(attrs) + len(out)
		if n >= AttrMax {
			break
		}
		if !injectable(a) || hasKey(attrs, a.Key) || hasKey(out, a.Key) {
			continue
		}
		if out == nil {
			out = make([]Attr, 0, len(inject))
		}
		out = append(out, a)
	}
	if out == nil {
		return attrs
	}
	return append(append(make([]Attr, 0, len(attrs)+len(out)), attrs...), out...)
}

func hasKey(attrs []Attr, key string) bool {
	for _, a := range attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// injectable says whether the library takes a as an attribute (include/mongomq.h,
// "Event attributes"): a key of 1..AttrKeyMax ASCII letters, digits, '_', '-' and
// '.', a value of 0..AttrValueMax bytes of UTF-8 without NUL (which the packing
// cannot carry).
func injectable(a Attr) bool {
	if len(a.Key) == 0 || len(a.Key) > AttrKeyMax || len(a.Value) > AttrValueMax || !utf8.ValidString(a.Value) {
		return false
	}
	for i := 0; i < len(a.Key); i++ {
		c := a.Key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	for i := 0; i < len(a.Value); i++ {
		if a.Value[i] == 0 {
			return false
		}
	}
	return true
}
