package mongomq

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Log levels, as libmongoc's: the level argument of a SetLogHandler handler.
const (
	LogError    = 0
	LogCritical = 1
	LogWarning  = 2
	LogMessage  = 3
	LogInfo     = 4
	LogDebug    = 5
	LogTrace    = 6
)

// The log state: the current handler, and whether the delivery goroutine runs.
var logState struct {
	mu      sync.Mutex
	handler func(level int, domain, message string)
	running bool // the delivery goroutine is running (at most one)
}

// SetLogHandler routes libmongoc's log (the MongoDB driver under libmongomq:
// connection trouble, server selection, unsupported URI options...) to h, called
// with libmongoc's level (LogError 0 ... LogTrace 6), its domain ("mongoc",
// "cluster", ...) and the message. Without a call to SetLogHandler libmongoc
// prints its lines to stderr itself.
//
// It is process-wide: it replaces libmongoc's process-wide log handler, for every
// user of libmongoc in the process (an application that sets libmongoc's handler
// itself should not call it), and a later call replaces h.
//
// The library never calls into Go from its own threads: it buffers the lines in C
// (up to 1024; beyond, the oldest are dropped), and one goroutine of this package,
// started by the first non-nil h, takes them from the buffer and calls the current
// handler, one line at a time, in order. A panic in h is recovered and written to
// stderr; the goroutine goes on with the next line. h should return promptly:
// while it runs, lines wait in the buffer.
//
// SetLogHandler(nil) silences libmongoc (its lines are no longer printed nor
// delivered; what was buffered is dropped) and the goroutine stops delivering and
// ends; a line it had already taken may still reach the previous handler while
// SetLogHandler(nil) returns. h may call SetLogHandler.
func SetLogHandler(h func(level int, domain, message string)) {
	logState.mu.Lock()
	defer logState.mu.Unlock()
	logState.handler = h
	if h == nil {
		raw.Mqs_log_silence()
		return
	}
	raw.Mqs_log_capture()
	if !logState.running {
		logState.running = true
		go deliverLogs()
	}
}

// deliverLogs is the delivery goroutine: it waits for buffered lines (a quarter of
// a second at a time) and hands each to the current handler, until there is none.
func deliverLogs() {
	for {
		line := raw.Mqs_log_next(0.25)
		logState.mu.Lock()
		h := logState.handler
		if h == nil {
			logState.running = false
			logState.mu.Unlock()
			return
		}
		logState.mu.Unlock()
		if line == "" {
			continue
		}
		level, domain, message := splitLogLine(line)
		callLogHandler(h, level, domain, message)
	}
}

// splitLogLine splits the shim's "LEVEL\tDOMAIN\tMESSAGE" at its first two tabs (a
// message may hold tabs of its own).
func splitLogLine(line string) (level int, domain, message string) {
	parts := strings.SplitN(line, "\t", 3)
	level, err := strconv.Atoi(parts[0])
	if err != nil {
		level = -1
	}
	if len(parts) > 1 {
		domain = parts[1]
	}
	if len(parts) > 2 {
		message = parts[2]
	}
	return level, domain, message
}

// callLogHandler calls h; a panic in it is written to stderr and goes no further.
func callLogHandler(h func(level int, domain, message string), level int, domain, message string) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "mongomq: the log handler panicked (the line was %d %s: %s): %v\n%s",
				level, domain, message, r, debug.Stack())
		}
	}()
	h(level, domain, message)
}
