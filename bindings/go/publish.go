// publish.go: the publishes of a queue: PublishOptions, Publish (one event) and
// PublishBatch (many, as Messages), and their Context forms, which tell the queue's
// Telemetry (telemetry.go) the caller's context; what a keyed publish did
// (PublishWith, PublishBatchWith, Published) is in dedup.go.

package mongomq

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// PublishOptions are a Publish's (and a batch Message's) options. The zero value
// is the defaults: priority 0, due at once, no dedup key, no attributes.
type PublishOptions struct {
	// Priority (PriorityMin..PriorityMax) counts only when this publish creates the
	// group: a group's priority is fixed by its first event.
	Priority int
	// NotBefore schedules the event: it is not delivered before this time, on the
	// queue's clock (Queue.Now). The zero Time is now. FIFO stays strict: while a
	// scheduled event is its group's head, the group waits for it.
	NotBefore time.Time
	// DedupKey (0.6.0) makes the publish exactly-once: while an event published with
	// this key is in the queue, and for the dedup window after its publish
	// (Queue.SetDedupWindow, 5 minutes by default) even once it was acked, a publish
	// with the same key adds nothing and reports the first event's seq as a
	// duplicate (PublishWith, PublishBatchWith). So a publish retried with its key
	// after any error (ErrConnect: a lost reply, a step-down) leaves exactly one
	// event. 1..DedupKeyMax bytes of UTF-8; "" (the zero value) is no key: Go's
	// zero value cannot tell "none" from "empty", so an empty key cannot be asked for.
	DedupKey string
	// Attrs (0.7.0) are the event's attributes, in this order (the lease and peek
	// give them back in it): up to AttrMax, keys 1..AttrKeyMax bytes of ASCII
	// letters, digits, '_', '-' and '.', unique in the event (a key given twice is
	// ErrInvalidArgument), values 0..AttrValueMax bytes of UTF-8. They stay with the
	// event through nack, lease expiry, the dead letters and a requeue.
	Attrs []Attr
}

// dedupKey is DedupKey as the shim's (has_key, dedup_key): "" is none.
func (o PublishOptions) dedupKey() (int, string) {
	if o.DedupKey == "" {
		return 0, ""
	}
	return 1, o.DedupKey
}

// notBefore is NotBefore as the C options' epoch seconds (0: now).
func (o PublishOptions) notBefore() float64 {
	if o.NotBefore.IsZero() {
		return 0
	}
	if epoch := timeToEpoch(o.NotBefore); epoch > 0 {
		return epoch
	}
	return 1e-9 // before 1970: due at once, and still a scheduled event (its not_before kept)
}

func checkPriority(op, name string, p int) error {
	// The library checks the range (and names the argument); only what an int of C
	// cannot hold is refused here.
	if p < math.MinInt32 || p > math.MaxInt32 {
		return argError(op, fmt.Sprintf("%s must be %d..%d (got %d)", name, PriorityMin, PriorityMax, p))
	}
	return nil
}

// Publish appends event to the tail of group and returns its sequence number. The
// bytes are sent as they are: any bytes, including none. opts gives the group's
// priority (when this publish creates it), a due time, a dedup key and attributes;
// the zero PublishOptions publishes at priority 0, due at once, without a key or
// attributes. A publish whose DedupKey was taken adds nothing and returns the seq of
// the event that holds the key, with a nil error; PublishWith says whether it was a
// duplicate.
func (q *Queue) Publish(group string, event []byte, opts PublishOptions) (int64, error) {
	p, err := q.publish(context.Background(), "Publish", group, event, opts)
	return p.Seq, err
}

// PublishContext is Publish in the context ctx, for the queue's Telemetry
// (SetTelemetry): with otelmongomq, the publish's span is a child of ctx's span and
// the event carries its trace context. Only that: a publish waits for nothing it
// could give up, so ctx's cancellation and deadline do not stop it. Publish is
// PublishContext with context.Background(). A nil ctx is context.Background().
func (q *Queue) PublishContext(ctx context.Context, group string, event []byte, opts PublishOptions) (int64, error) {
	p, err := q.publish(ctx, "PublishContext", group, event, opts)
	return p.Seq, err
}

// publish is Publish, PublishWith and their Context forms, as op: told to the
// queue's Telemetry when it has one.
func (q *Queue) publish(ctx context.Context, op, group string, event []byte, opts PublishOptions) (Published, error) {
	t := q.telemetry()
	if t == nil {
		return q.publishOne(op, group, event, opts, nil)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	inject, done := t.Publish(ctx, PublishOp{Queue: q.name, Group: group, Count: 1})
	p, err := q.publishOne(op, group, event, opts, inject)
	seq := p.Seq
	if err != nil {
		seq = 0
	}
	done(seq, err)
	return p, err
}

// publishOne is one publish, with inject added to the event's attributes where
// they fit (withInjected).
func (q *Queue) publishOne(op, group string, event []byte, opts PublishOptions, inject []Attr) (Published, error) {
	if err := checkText(op, "group", group); err != nil {
		return Published{}, err
	}
	if err := checkPriority(op, "Priority", opts.Priority); err != nil {
		return Published{}, err
	}
	if err := checkText(op, "DedupKey", opts.DedupKey); err != nil {
		return Published{}, err
	}
	attrs, err := packAttrs(op, "Attrs", opts.Attrs)
	if err != nil {
		return Published{}, err
	}
	if len(inject) > 0 {
		// Packed again with the injected ones, which withInjected checked.
		attrs, _ = packAttrs(op, "Attrs", withInjected(opts.Attrs, inject))
	}
	hasKey, key := opts.dedupKey()
	var seq int64
	err = q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mqs_publish(h, group, event, opts.Priority, opts.notBefore(), hasKey, key, attrs, &seq, e)
	})
	runtime.KeepAlive(event)
	runtime.KeepAlive(attrs)
	return published(seq), err
}

// Message is one event of a PublishBatch, with the options of a Publish (a batch
// event may be scheduled, keyed and carry attributes too).
type Message struct {
	Group string
	Event []byte
	PublishOptions
}

// PublishBatch publishes every message in 3 server commands, whatever their number
// (1..BatchMax), and returns the first sequence number: on a queue of one partition
// the messages get first, first+1, ... in order (on a partitioned queue each
// partition's counter numbers its own: first is the first message's seq, and
// PublishBatchWith gives each one's). A group the batch creates starts parked until
// its first event's NotBefore when that one is scheduled. A message whose DedupKey
// was taken (by an earlier publish, or by an earlier message of the batch) is not
// added (1 command more) and its first+i is left unused; PublishBatchWith says, per
// message, which were added and the seq of each.
func (q *Queue) PublishBatch(messages []Message) (int64, error) {
	first, _, err := q.publishBatch(context.Background(), "PublishBatch", messages, false)
	return first, err
}

// PublishBatchContext is PublishBatch in the context ctx, for the queue's
// Telemetry, as PublishContext is Publish: one span for the batch, whose trace
// context every message carries; ctx's cancellation does not stop it.
func (q *Queue) PublishBatchContext(ctx context.Context, messages []Message) (int64, error) {
	first, _, err := q.publishBatch(ctx, "PublishBatchContext", messages, false)
	return first, err
}

// publishBatch is PublishBatch, PublishBatchWith and their Context forms, as op:
// told to the queue's Telemetry when it has one.
func (q *Queue) publishBatch(ctx context.Context, op string, messages []Message, outcomes bool) (int64, []Published, error) {
	t := q.telemetry()
	if t == nil {
		return q.publishMany(op, messages, outcomes, nil)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	inject, done := t.Publish(ctx, PublishOp{Queue: q.name, Batch: true, Count: len(messages)})
	first, out, err := q.publishMany(op, messages, outcomes, inject)
	done(0, err)
	return first, out, err
}

// publishMany is one batch publish: the first seq, and with outcomes each message's
// (mq_batch_outcome), in order; inject is added to each message's attributes where
// they fit (withInjected).
func (q *Queue) publishMany(op string, messages []Message, outcomes bool, inject []Attr) (int64, []Published, error) {
	if len(messages) == 0 || len(messages) > BatchMax {
		return 0, nil, argError(op, fmt.Sprintf("messages holds %d events; a batch holds 1..%d", len(messages), BatchMax))
	}
	for i, m := range messages {
		if err := checkText(op, fmt.Sprintf("messages[%d].Group", i), m.Group); err != nil {
			return 0, nil, err
		}
		if err := checkPriority(op, fmt.Sprintf("messages[%d].Priority", i), m.Priority); err != nil {
			return 0, nil, err
		}
		if err := checkText(op, fmt.Sprintf("messages[%d].DedupKey", i), m.DedupKey); err != nil {
			return 0, nil, err
		}
	}
	var b raw.SwigcptrStruct_SS_mq_batch
	if err := call(op, func(e raw.Struct_SS_mq_error) { raw.Mq_batch_new(&b, e) }); err != nil {
		return 0, nil, err
	}
	defer raw.Mq_batch_destroy(b)
	for i, m := range messages {
		attrs, err := packAttrs(op, fmt.Sprintf("messages[%d].Attrs", i), m.Attrs)
		if err != nil {
			return 0, nil, err
		}
		if len(inject) > 0 {
			attrs, _ = packAttrs(op, fmt.Sprintf("messages[%d].Attrs", i), withInjected(m.Attrs, inject))
		}
		hasKey, key := m.dedupKey()
		if err := call(op, func(e raw.Struct_SS_mq_error) {
			raw.Mqs_batch_add_at(b, m.Group, m.Event, m.Priority, m.notBefore(), hasKey, key, attrs, e)
		}); err != nil {
			var e *Error
			if ok := asError(err, &e); ok {
				e.Message = fmt.Sprintf("messages[%d]: %s", i, e.Message)
			}
			return 0, nil, err
		}
	}
	var first int64
	err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mqs_publish_batch(h, b, &first, e)
	})
	runtime.KeepAlive(messages)
	if first < 0 { // some message was a duplicate; -first is still the first seq
		first = -first
	}
	if err != nil || !outcomes {
		return first, nil, err
	}
	out := make([]Published, len(messages))
	for i := range out {
		var seq int64
		if err := call(op, func(e raw.Struct_SS_mq_error) { raw.Mqs_batch_outcome(b, int64(i), &seq, e) }); err != nil {
			return first, nil, err
		}
		out[i] = published(seq)
	}
	return first, out, nil
}
