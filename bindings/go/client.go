// client.go: Client, a connection pool (Connect, Close, Queue), and
// LibraryVersion.

package mongomq

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// LibraryVersion is the version of the libmongomq the program runs with ("0.8.0").
func LibraryVersion() string { return raw.Mq_version() }

// Client is a connection pool to one MongoDB deployment. It is safe for concurrent
// use. Close it when done; a finalizer closes a Client that became unreachable,
// as a safety net only.
//
// A Queue keeps its Client alive: closing the Client while queues are open makes
// Client.Queue fail with ErrClosed at once, and defers the release of the
// connection pool until the last of its queues is closed.
type Client struct {
	mu     sync.Mutex
	c      raw.Struct_SS_mq_client // nil once the C client is destroyed
	closed bool
	queues int // open queues (and queues being opened) that use c
}

// Connect opens a connection pool for a MongoDB URI ("mongodb://host:port/?opts").
// It does not contact the server: an unreachable server shows up as ErrConnect from
// the first Client.Queue, after the URI's serverSelectionTimeoutMS (default 30 s). A
// malformed URI is ErrInvalidArgument.
//
// The first Connect routes libmongoc's log into log/slog unless SetLogHandler was
// called before it (see SetLogHandler).
func Connect(uri string) (*Client, error) {
	installDefaultLog()
	if err := checkText("Connect", "uri", uri); err != nil {
		return nil, err
	}
	var c raw.SwigcptrStruct_SS_mq_client
	err := call("Connect", func(e raw.Struct_SS_mq_error) { raw.Mq_client_new(uri, &c, e) })
	if err != nil {
		if c != 0 {
			raw.Mq_client_destroy(c)
		}
		return nil, err
	}
	client := &Client{c: c}
	liveClients.Add(1)
	runtime.SetFinalizer(client, (*Client).Close)
	return client, nil
}

// Close closes the client. With queues still open, the connection pool is
// released when the last of them closes. Closing twice does nothing.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	runtime.SetFinalizer(c, nil)
	c.destroyIfUnused()
	return nil
}

// destroyIfUnused frees the C client once it is closed and no queue uses it. c.mu held.
func (c *Client) destroyIfUnused() {
	if c.closed && c.queues == 0 && c.c != nil {
		raw.Mq_client_destroy(c.c)
		c.c = nil
		liveClients.Add(-1)
	}
}

// release is a queue's Close: one user fewer of the C client.
func (c *Client) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queues--
	c.destroyIfUnused()
}

// CommandCount is the number of commands this client has sent to the server so far
// (for benchmarks and monitoring). 0 once the client is closed.
func (c *Client) CommandCount() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return 0
	}
	return raw.Mq_client_command_count(c.c)
}

// WriteConcernErrors is the number of writes this client sent that the server
// applied but whose write concern it could not confirm (they may be rolled back if
// the primary fails before they replicate). Monotonic; 0 on a healthy deployment,
// and 0 once the client is closed.
func (c *Client) WriteConcernErrors() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return 0
	}
	return raw.Mq_client_write_concern_errors(c.c)
}

// Queue opens the queue {db}.{prefix}_*: db "" is "mongomq", prefix "" is "mq". It
// creates the indexes and measures the server's clock, so this is where an
// unreachable server is reported (ErrConnect). The Queue keeps the Client alive
// until the Queue is closed. It is QueueWith with the default options: a queue
// made with more than one partition is ErrInvalidArgument here (open it with its
// Partitions).
func (c *Client) Queue(db, prefix string) (*Queue, error) {
	return c.queue("Queue", db, prefix, QueueOptions{})
}

// QueueWith is Queue with options (see QueueOptions): with Partitions > 1 it opens a
// partitioned queue (creating its record of partitions the first time).
func (c *Client) QueueWith(db, prefix string, opts QueueOptions) (*Queue, error) {
	return c.queue("QueueWith", db, prefix, opts)
}

func (c *Client) queue(op, db, prefix string, opts QueueOptions) (*Queue, error) {
	partitions := opts.Partitions
	if partitions == 0 {
		partitions = 1
	}
	if partitions < math.MinInt32 || partitions > math.MaxInt32 {
		return nil, argError(op, fmt.Sprintf("partitions is %d, outside 1..%d (PartitionsMax)", partitions, PartitionsMax))
	}
	if c == nil {
		return nil, closedError(op, "client")
	}
	if err := checkText(op, "db", db); err != nil {
		return nil, err
	}
	if err := checkText(op, "prefix", prefix); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, closedError(op, "client")
	}
	c.queues++ // keeps c.c alive while the C call runs without the lock
	cc := c.c
	c.mu.Unlock()

	var q raw.SwigcptrStruct_SS_mq_queue
	// A Go string cannot be NULL (the C API's default), so "" is the default here.
	if db == "" {
		db = "mongomq"
	}
	if prefix == "" {
		prefix = "mq"
	}
	err := call(op, func(e raw.Struct_SS_mq_error) { raw.Mqs_queue_new_with(cc, db, prefix, partitions, &q, e) })
	if err != nil {
		if q != 0 {
			raw.Mqs_queue_destroy(q)
		}
		c.release()
		return nil, err
	}
	queue := &Queue{client: c, q: q, name: db + "." + prefix, partitions: raw.Mq_queue_partitions(q)}
	liveQueues.Add(1)
	runtime.SetFinalizer(queue, (*Queue).Close)
	return queue, nil
}

// C handles alive now, for the tests of the finalizers (each is freed exactly once).
var liveClients, liveQueues, liveLeases, liveClocks atomic.Int64
