// errors.go: the errors the package returns (Error with the C status, the
// sentinels errors.Is matches, ErrClosed) and the per-call mq_error they are read
// from.

package mongomq

import (
	"errors"
	"fmt"
	"math"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Status is the C library's mq_status of a failed call.
type Status int

// The statuses. Their values are the C library's.
const (
	StatusOK              Status = 0
	StatusEmpty           Status = 1  // MQ_EMPTY: no event was due
	StatusLeaseLost       Status = 2  // MQ_LEASE_LOST: the lease expired and the group moved on
	StatusInterrupted     Status = 3  // MQ_INTERRUPTED: Queue.Interrupt was called
	StatusCancelled       Status = 4  // MQ_CANCELLED: a Claim's context was done
	StatusDuplicate       Status = 5  // MQ_DUPLICATE: never an error; a Published's Duplicate (0.6.0)
	StatusInvalidArgument Status = -1 // MQ_ERR_ARG
	StatusConnect         Status = -2 // MQ_ERR_CONNECT: server unreachable or timed out
	StatusServer          Status = -3 // MQ_ERR_SERVER: the server answered with an error
	StatusNoMemory        Status = -4 // MQ_ERR_NOMEM
	StatusInternal        Status = -5 // MQ_ERR_INTERNAL
)

// String returns the C name of the status ("MQ_LEASE_LOST"), as the library's
// mq_status_name says it ("MQ_UNKNOWN" for a value that is no status): the names
// are kept in one table, in C.
func (s Status) String() string {
	if int(s) < math.MinInt32 || int(s) > math.MaxInt32 {
		return "MQ_UNKNOWN"
	}
	return raw.Mq_status_name(raw.Mq_status(s))
}

// Sentinels for errors.Is. Every error the library reported is an *Error (use
// errors.As to read its Status, ServerCode and Message); errors.Is matches it
// against the sentinel of its Status. ErrClosed is the binding's own: a call on a
// closed Client, Queue, Lease or ManualClock never reaches the library, so its
// error has no C status (it is no *Error). A Claim ended by its context returns
// ctx.Err() instead.
var (
	ErrEmpty           = errors.New("mongomq: no event is due")
	ErrLeaseLost       = errors.New("mongomq: lease lost")
	ErrInvalidArgument = errors.New("mongomq: invalid argument")
	ErrConnect         = errors.New("mongomq: cannot reach the server")
	ErrInterrupted     = errors.New("mongomq: queue interrupted")
	ErrClosed          = errors.New("mongomq: closed")
	ErrServer          = errors.New("mongomq: server error")
)

// Error is a failed call: the C library's status, the MongoDB server code (0 when
// there is none) and the library's message, which names the bad argument for
// StatusInvalidArgument and never contains a password.
type Error struct {
	Op         string // the Go call: "Publish", "Claim", "Ack", ...
	Status     Status
	ServerCode int
	Message    string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" { // the library fills a message for every failure; never print a blank
		msg = "failed"
	}
	s := "mongomq: " + e.Op + ": " + msg + " (" + e.Status.String()
	if e.ServerCode != 0 {
		s += fmt.Sprintf(", server code %d", e.ServerCode)
	}
	return s + ")"
}

// Is reports whether target is the sentinel of e's Status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrEmpty:
		return e.Status == StatusEmpty
	case ErrLeaseLost:
		return e.Status == StatusLeaseLost
	case ErrInvalidArgument:
		return e.Status == StatusInvalidArgument
	case ErrConnect:
		return e.Status == StatusConnect
	case ErrInterrupted:
		return e.Status == StatusInterrupted
	case ErrServer:
		return e.Status == StatusServer
	}
	return false
}

// closedErr is ErrClosed for one call: which call, on which closed object.
type closedErr struct{ op, what string }

func (e *closedErr) Error() string        { return "mongomq: " + e.op + ": " + e.what + " is closed" }
func (e *closedErr) Is(target error) bool { return target == ErrClosed }

func closedError(op, what string) error { return &closedErr{op: op, what: what} }

func argError(op, msg string) error {
	return &Error{Op: op, Status: StatusInvalidArgument, Message: msg}
}

// cerr is one call's mq_error, in C memory (a Go pointer may not be kept by C).
type cerr struct{ p raw.Struct_SS_mq_error }

func newCerr() cerr { return cerr{raw.Mqs_error_new()} }

func (c cerr) free() {
	if c.p != nil && c.p.Swigcptr() != 0 {
		raw.Mqs_error_free(c.p)
	}
}

func (c cerr) status() Status {
	if c.p == nil || c.p.Swigcptr() == 0 {
		return StatusNoMemory
	}
	return Status(raw.Mqs_error_status(c.p))
}

// err turns the mq_error into an *Error, or nil for MQ_OK.
func (c cerr) err(op string) error {
	st := c.status()
	if st == StatusOK {
		return nil
	}
	if c.p == nil || c.p.Swigcptr() == 0 {
		return &Error{Op: op, Status: StatusNoMemory, Message: "out of memory"}
	}
	return &Error{
		Op:         op,
		Status:     st,
		ServerCode: raw.Mqs_error_server_code(c.p),
		Message:    raw.Mqs_error_message(c.p),
	}
}

// call runs f with a fresh mq_error and returns its error (nil for MQ_OK).
func call(op string, f func(e raw.Struct_SS_mq_error)) error {
	c := newCerr()
	defer c.free()
	if c.p == nil || c.p.Swigcptr() == 0 {
		return &Error{Op: op, Status: StatusNoMemory, Message: "out of memory"}
	}
	f(c.p)
	return c.err(op)
}

// checkText rejects a Go string C would cut at its first NUL byte.
func checkText(op, name, s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return argError(op, fmt.Sprintf("%s contains a NUL byte at offset %d", name, i))
		}
	}
	return nil
}
