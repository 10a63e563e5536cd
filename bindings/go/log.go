// log.go: libmongoc's log in Go: by default into log/slog (installed by the first
// Connect), SetLogHandler for a function of the program's own, and the goroutine
// that delivers the lines the C shim buffered.

package mongomq

import (
	"context"
	"fmt"
	"log/slog"
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
	decided bool // SetLogHandler was called, or the default was installed (or kept out)
}

// keepLogEnv is the environment variable that keeps libmongoc's own log handler:
// with MONGOMQ_LIBMONGOC_LOG=keep the first Connect installs no default (for a
// program that uses libmongoc itself and sets its handler), the same in every
// language of mongomq.
const keepLogEnv = "MONGOMQ_LIBMONGOC_LOG"

// installDefaultLog is called by every Connect, before the C client exists (so the
// warnings of its URI are routed too): the first one routes libmongoc's log into
// log/slog at warning and above, unless SetLogHandler was called before or
// MONGOMQ_LIBMONGOC_LOG is "keep".
func installDefaultLog() {
	logState.mu.Lock()
	defer logState.mu.Unlock()
	if logState.decided {
		return
	}
	logState.decided = true
	if os.Getenv(keepLogEnv) != "keep" {
		setLogHandlerLocked(LogToSlog(nil, slog.LevelWarn))
	}
}

// LogToSlog is a SetLogHandler handler that logs libmongoc's lines through logger
// (nil: slog.Default() at each line, so a later slog.SetDefault is followed) with
// the attributes logger=mongomq and domain=<libmongoc's domain>, dropping those below
// min. The levels map as: error and critical -> slog.LevelError, warning ->
// slog.LevelWarn, message and info -> slog.LevelInfo, debug and trace ->
// slog.LevelDebug. The default is LogToSlog(nil, slog.LevelWarn); for libmongoc's
// debug lines too, SetLogHandler(LogToSlog(nil, slog.LevelDebug)) with a logger
// whose handler is enabled for debug.
func LogToSlog(logger *slog.Logger, min slog.Level) func(level int, domain, message string) {
	return func(level int, domain, message string) {
		lvl := slogLevel(level)
		if lvl < min {
			return
		}
		l := logger
		if l == nil {
			l = slog.Default()
		}
		l.Log(context.Background(), lvl, message, "logger", "mongomq", "domain", domain)
	}
}

// slogLevel maps a libmongoc level (LogError ... LogTrace) to slog's.
func slogLevel(level int) slog.Level {
	switch {
	case level <= LogCritical:
		return slog.LevelError
	case level == LogWarning:
		return slog.LevelWarn
	case level <= LogInfo:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// SetLogHandler routes libmongoc's log (the MongoDB driver under libmongomq:
// connection trouble, server selection, unsupported URI options...) to h, called
// with libmongoc's level (LogError 0 ... LogTrace 6), its domain ("mongoc",
// "cluster", ...) and the message. It replaces the default, which the first
// Connect installs unless SetLogHandler was called before it: libmongoc's lines at
// warning and above go to log/slog (LogToSlog(nil, slog.LevelWarn)).
//
// It is process-wide: it replaces libmongoc's process-wide log handler, for every
// user of libmongoc in the process, and a later call replaces h. A program that
// sets libmongoc's handler itself keeps it by setting MONGOMQ_LIBMONGOC_LOG=keep
// in the environment (then no default is installed) and not calling SetLogHandler.
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
	logState.decided = true
	setLogHandlerLocked(h)
}

// setLogHandlerLocked is SetLogHandler with logState.mu held.
func setLogHandlerLocked(h func(level int, domain, message string)) {
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
