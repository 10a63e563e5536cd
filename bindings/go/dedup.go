// dedup.go: deduplication keys (0.6.0): what a publish did (Published, from
// Queue.PublishWith and Queue.PublishBatchWith and their Context forms; the
// publishes themselves are in publish.go), and where and for how long a key holds
// (Queue.SetDedupWindow, Queue.SetDedupScope over mq_queue_set_dedup_window,
// mq_queue_set_dedup_scope).

package mongomq

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Dedup limits: a key's length, and the window's default and range.
const (
	// DedupKeyMax is the most bytes one PublishOptions.DedupKey may hold.
	DedupKeyMax = 512
	// DefaultDedupWindow is a Queue's dedup window until SetDedupWindow (as SQS's).
	DefaultDedupWindow = 5 * time.Minute
	// DedupWindowMin and DedupWindowMax bound SetDedupWindow.
	DedupWindowMin = time.Second
	DedupWindowMax = 7 * 24 * time.Hour
)

// Published is what a publish did: the event's sequence number, and whether it was a
// duplicate. A duplicate (its DedupKey was taken) added nothing: Seq is then the seq
// of the event that took the key, which may already be acked (within the window).
// A duplicate is a success, never an error (the library's MQ_DUPLICATE).
type Published struct {
	Seq       int64
	Duplicate bool
}

// published reads the shims' seq: negated for a duplicate (seqs are >= 1).
func published(seq int64) Published {
	if seq < 0 {
		return Published{Seq: -seq, Duplicate: true}
	}
	return Published{Seq: seq}
}

// PublishWith is Publish that also says whether the publish was a duplicate: with a
// PublishOptions.DedupKey that an event of the queue holds (within the window), it
// adds nothing and returns that event's seq with Duplicate true. Without a key it is
// Publish, and Duplicate is false. (Publish keeps its (int64, error): Go has no
// overloading, and the API only grows.)
func (q *Queue) PublishWith(group string, event []byte, opts PublishOptions) (Published, error) {
	return q.publish(context.Background(), "PublishWith", group, event, opts)
}

// PublishWithContext is PublishWith in the context ctx, for the queue's Telemetry,
// as PublishContext is Publish (ctx's cancellation does not stop it).
func (q *Queue) PublishWithContext(ctx context.Context, group string, event []byte, opts PublishOptions) (Published, error) {
	return q.publish(ctx, "PublishWithContext", group, event, opts)
}

// PublishBatchWith is PublishBatch that returns each message's outcome, in the order
// of messages: an added one's seq (first+i), or for a duplicate (a key taken by an
// earlier publish, or by an earlier message of this batch) Duplicate and the seq of
// the event that holds the key. Still 3 server commands, 1 more when some key was
// taken.
func (q *Queue) PublishBatchWith(messages []Message) ([]Published, error) {
	_, out, err := q.publishBatch(context.Background(), "PublishBatchWith", messages, true)
	return out, err
}

// PublishBatchWithContext is PublishBatchWith in the context ctx, for the queue's
// Telemetry, as PublishBatchContext is PublishBatch.
func (q *Queue) PublishBatchWithContext(ctx context.Context, messages []Message) ([]Published, error) {
	_, out, err := q.publishBatch(ctx, "PublishBatchWithContext", messages, true)
	return out, err
}

// SetDedupWindow sets how long a key stays taken after its publish, even once its
// event was acked or moved to the dead letters (DedupWindowMin..DedupWindowMax;
// default DefaultDedupWindow; anything else is ErrInvalidArgument). While its event
// is in the queue a key is taken whatever the window. The window is a lower bound:
// an acked event's record goes when MongoDB's TTL monitor (every 60 s) or a later
// publish with the key finds it expired. Each event records the window it was
// published with, so Queue values with different windows may share a queue. It
// applies to this Queue value's publishes.
func (q *Queue) SetDedupWindow(window time.Duration) error {
	return q.run("SetDedupWindow", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_queue_set_dedup_window(h, seconds(window), e)
	})
}

// DedupScope is where a dedup key must be unique (Queue.SetDedupScope).
type DedupScope int

// The scopes. The zero value is DedupScopeQueue, the library's default.
const (
	// DedupScopeQueue: a key is unique in the queue; the same key in two groups is a
	// duplicate.
	DedupScopeQueue DedupScope = 0
	// DedupScopeGroup: a key is unique in its event's group only (SQS FIFO's
	// high-throughput mode), which a queue sharded by group can keep on every shard.
	DedupScopeGroup DedupScope = 1
)

// String is "queue" or "group" (DedupScope(n) for another value).
func (s DedupScope) String() string {
	switch s {
	case DedupScopeQueue:
		return "queue"
	case DedupScopeGroup:
		return "group"
	}
	return fmt.Sprintf("DedupScope(%d)", int(s))
}

// SetDedupScope sets where this Queue value's keys must be unique: DedupScopeQueue
// (the default) or DedupScopeGroup; another value is ErrInvalidArgument. Every
// publisher of a queue should use one scope: keys published with one scope never
// match keys published with the other.
func (q *Queue) SetDedupScope(scope DedupScope) error {
	const op = "SetDedupScope"
	if scope < math.MinInt32 || scope > math.MaxInt32 {
		return argError(op, fmt.Sprintf("scope must be DedupScopeQueue or DedupScopeGroup (got %d)", int(scope)))
	}
	return q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_queue_set_dedup_scope(h, raw.Mq_dedup_scope(scope), e)
	})
}
