// clock_log_test.go: the manual clock and libmongoc's log handler (the contract's
// manual_clock and log_handler scenarios, and their edge cases).

package mongomq

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- clock and log -------------------------------------------------------------------

// closeTo reports whether a and b are within 1 ms (the clock travels as float64
// seconds since the epoch).
func closeTo(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

func queueNow(t *testing.T, q *Queue) time.Time {
	t.Helper()
	now, err := q.Now()
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	return now
}

func manualClock(t *testing.T) {
	_, q := newQueue(t)
	start := time.Unix(2_000_000_000, 0) // 2033: nowhere near the machine's clock
	clock := NewManualClock(start)
	defer clock.Close()
	if got := clock.Now(); !got.Equal(start) {
		t.Fatalf("clock.Now() = %v, want %v", got, start)
	}
	if err := q.SetClock(clock); err != nil {
		t.Fatalf("SetClock: %v", err)
	}
	if got := queueNow(t, q); !closeTo(got, start) {
		t.Fatalf("queue on the clock: Now() = %v, want %v", got, start)
	}

	// An event for T + 60 s: not claimable at T, claimable at T + 61 s.
	if _, err := q.Publish("g", []byte("later"), PublishOptions{NotBefore: start.Add(60 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	claimEmpty(t, q, ClaimOptions{})
	clock.Advance(61 * time.Second)
	if got := clock.Now(); !got.Equal(start.Add(61 * time.Second)) {
		t.Fatalf("clock.Now() after Advance(61 s) = %v", got)
	}

	// Closing the handle while the queue runs on it: the queue keeps the clock.
	if err := clock.Close(); err != nil {
		t.Fatal(err)
	}
	if err := clock.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if !clock.Now().IsZero() {
		t.Fatal("a closed clock reads a time")
	}
	clock.Advance(time.Hour) // nothing: the clock is closed
	clock.Set(start)
	if got := queueNow(t, q); !closeTo(got, start.Add(61*time.Second)) {
		t.Fatalf("after the clock handle closed: Now() = %v, want T + 61 s", got)
	}
	l := claim(t, q, ClaimOptions{Visibility: 10 * time.Second})
	if string(l.Event()) != "later" {
		t.Fatalf("claimed %q", l.Event())
	}
	if want := start.Add(71 * time.Second); !closeTo(l.Deadline(), want) {
		t.Fatalf("lease deadline %v, want T + 61 s + 10 s = %v", l.Deadline(), want)
	}
	ack(t, q, l)
	if err := q.SetClock(clock); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetClock(closed clock): %v, want ErrClosed", err)
	}

	// Dropping the handle (the finalizer releases it) while the queue runs on it.
	base := liveClocks.Load()
	later := start.Add(time.Hour)
	func() {
		c := NewManualClock(later)
		if err := q.SetClock(c); err != nil {
			t.Fatalf("SetClock: %v", err)
		}
	}()
	eventually(t, 20*time.Second, "the GC releases the dropped clock handle", func() bool {
		runtime.GC()
		return liveClocks.Load() == base
	})
	if got := queueNow(t, q); !closeTo(got, later) {
		t.Fatalf("after the clock handle was collected: Now() = %v, want %v", got, later)
	}
	publish(t, q, "h", "x", 0) // the queue works on it
	ack(t, q, claim(t, q, ClaimOptions{}))

	// No clock: server time again.
	if err := q.SetClock(nil); err != nil {
		t.Fatalf("SetClock(nil): %v", err)
	}
	if d := time.Since(queueNow(t, q)); d > time.Minute || d < -time.Minute {
		t.Fatalf("back on server time: Now() is %v off the machine's clock", d)
	}

	// A closed queue.
	c2 := NewManualClock(start)
	defer c2.Close()
	q.Close()
	if err := q.SetClock(c2); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetClock on a closed queue: %v, want ErrClosed", err)
	}
	if err := q.SetClock(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetClock(nil) on a closed queue: %v, want ErrClosed", err)
	}
}

// logLine is one call of a log handler.
type logLine struct {
	level           int
	domain, message string
	onDelivery      bool // the call ran on the package's delivery goroutine
}

// collectLogs returns a handler that sends what it is given to the channel.
func collectLogs(ch chan<- logLine) func(int, string, string) {
	return func(level int, domain, message string) {
		buf := make([]byte, 8192)
		stack := string(buf[:runtime.Stack(buf, false)])
		select {
		case ch <- logLine{level, domain, message, strings.Contains(stack, "/bindings/go.deliverLogs(")}:
		default: // a full channel: the test is not waiting for more
		}
	}
}

// unknownOptionURI makes libmongoc warn about an unknown URI option; Connect does
// not contact the server.
const unknownOptionURI = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"

func namesUnknownOption(l logLine) bool {
	return strings.Contains(strings.ToLower(l.message), "mongomqnosuchoption")
}

func connectAndClose(t *testing.T, uri string) {
	t.Helper()
	c, err := Connect(uri)
	if err != nil {
		t.Fatalf("Connect(%q): %v", uri, err)
	}
	c.Close()
}

func logHandler(t *testing.T) {
	ch := make(chan logLine, 256)
	SetLogHandler(collectLogs(ch))
	defer SetLogHandler(nil)

	connectAndClose(t, unknownOptionURI)
	l := waitUnknownOption(t, ch, "a line naming mongomqnosuchoption")
	if l.level != LogWarning || l.domain != "mongoc" {
		t.Fatalf("the unknown option's line: level %d domain %q (%q), want 2 mongoc", l.level, l.domain, l.message)
	}
	if !l.onDelivery {
		t.Fatal("the handler was not called on the package's delivery goroutine")
	}

	// Silence: a second such client brings nothing to the handler.
	SetLogHandler(nil)
	time.Sleep(300 * time.Millisecond) // a line taken before the silence may still arrive
	for len(ch) > 0 {
		<-ch
	}
	connectAndClose(t, unknownOptionURI)
	quiet := time.After(time.Second)
	for {
		select {
		case l := <-ch:
			if namesUnknownOption(l) {
				t.Fatalf("silenced, yet the handler got %d %s: %s", l.level, l.domain, l.message)
			}
		case <-quiet:
			return
		}
	}
}

// A panicking log handler: the panic is recovered (written to stderr) and the
// next line is delivered all the same; a handler may replace itself.
func TestLogHandlerPanics(t *testing.T) {
	ch := make(chan logLine, 256)
	var mu sync.Mutex
	panics := 0
	collect := collectLogs(ch)
	SetLogHandler(func(level int, domain, message string) {
		if namesUnknownOption(logLine{message: message}) {
			mu.Lock()
			first := panics == 0
			panics++
			mu.Unlock()
			if first {
				panic("log handler test panic (expected)")
			}
		}
		collect(level, domain, message)
	})
	defer SetLogHandler(nil)

	connectAndClose(t, unknownOptionURI) // its line makes the handler panic
	eventually(t, 10*time.Second, "the handler panicked once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return panics >= 1
	})
	connectAndClose(t, unknownOptionURI) // delivered after the panic
	waitUnknownOption(t, ch, "a line delivered after the handler panicked")

	// A handler that replaces itself (SetLogHandler from the delivery goroutine).
	ch2 := make(chan logLine, 256)
	SetLogHandler(func(level int, domain, message string) {
		if namesUnknownOption(logLine{message: message}) {
			SetLogHandler(collectLogs(ch2))
		}
	})
	connectAndClose(t, unknownOptionURI)
	connectAndClose(t, unknownOptionURI)
	waitUnknownOption(t, ch2, "a line delivered to the handler set from a handler")
}

// waitUnknownOption waits up to 10 s for a line naming the unknown URI option.
func waitUnknownOption(t *testing.T, ch <-chan logLine, what string) logLine {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l := <-ch:
			if namesUnknownOption(l) {
				return l
			}
		case <-deadline:
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

func TestSplitLogLine(t *testing.T) {
	for _, c := range []struct {
		line            string
		level           int
		domain, message string
	}{
		{"2\tmongoc\tUnsupported URI option", 2, "mongoc", "Unsupported URI option"},
		{"4\tcluster\ta\tmessage\twith tabs", 4, "cluster", "a\tmessage\twith tabs"},
		{"0\t\t", 0, "", ""},
		{"x", -1, "", ""},
	} {
		level, domain, message := splitLogLine(c.line)
		if level != c.level || domain != c.domain || message != c.message {
			t.Errorf("splitLogLine(%q) = %d %q %q", c.line, level, domain, message)
		}
	}
}

// Nil and closed clocks are no-ops, never a crash.
func TestManualClockNil(t *testing.T) {
	var c *ManualClock
	if !c.Now().IsZero() {
		t.Fatal("nil clock reads a time")
	}
	c.Set(time.Now())
	c.Advance(time.Second)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var q *Queue
	if err := q.SetClock(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetClock on a nil queue: %v", err)
	}
	c2 := NewManualClock(time.Unix(1_700_000_000, 500_000_000))
	c2.Set(time.Unix(1_700_000_100, 0))
	c2.Advance(-50 * time.Second)
	if got := c2.Now(); !got.Equal(time.Unix(1_700_000_050, 0)) {
		t.Fatalf("Set then Advance(-50 s): %v", got)
	}
	c2.Close()
}
