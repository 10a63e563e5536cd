// child_test.go: what needs a process of its own, run as a child of the test
// binary (TestMain dispatches on MONGOMQ_GO_TEST_CHILD): the default log into
// log/slog, installed by the process's first Connect (and MONGOMQ_LIBMONGOC_LOG=keep,
// and a SetLogHandler before it), and HandleSignals (SIGTERM stops Work gracefully,
// and once Work ended SIGTERM kills again).

package mongomq

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const childEnv = "MONGOMQ_GO_TEST_CHILD"

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	os.Exit(m.Run())
}

// runChild runs one child case: 0 when it saw what it should, else 1 (its stdout
// says why).
func runChild(name string) int {
	var err error
	switch name {
	case "log-default":
		err = childLogDefault()
	case "log-keep":
		err = childLogKeep()
	case "log-explicit":
		err = childLogExplicit()
	case "signals":
		err = childSignals()
	default:
		err = fmt.Errorf("unknown child case %q", name)
	}
	if err != nil {
		fmt.Println("child failed:", err)
		return 1
	}
	fmt.Println("child ok")
	return 0
}

// startChild starts this test binary as the child case name.
func startChild(t *testing.T, name string, env ...string) (*exec.Cmd, io.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+name), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdout, stderr
}

// runChildCase runs the child case name to its end (60 s at most) and returns its
// output; the test fails unless it said "child ok".
func runChildCase(t *testing.T, name string, env ...string) (stdout, stderr string) {
	t.Helper()
	cmd, out, errBuf := startChild(t, name, env...)
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(out); got <- b }()
	var b []byte
	select {
	case b = <-got:
	case <-time.After(60 * time.Second):
		t.Fatalf("the child %s did not end within 60 s", name)
	}
	err := cmd.Wait()
	if err != nil || !strings.Contains(string(b), "child ok") {
		t.Fatalf("the child %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, b, errBuf)
	}
	return string(b), errBuf.String()
}

// The default: the first Connect routes libmongoc into log/slog (slog.Default() at
// each line), warnings and above, with logger=mongomq and the domain, instead of
// libmongoc's printing to stderr.
func TestLogDefaultSlog(t *testing.T) {
	_, stderr := runChildCase(t, "log-default")
	if strings.Contains(strings.ToLower(stderr), "mongomqnosuchoption") {
		t.Fatalf("libmongoc printed to stderr itself, with the default in place:\n%s", stderr)
	}
}

// MONGOMQ_LIBMONGOC_LOG=keep: no default; libmongoc's own handler prints the line.
func TestLogKeepLibmongoc(t *testing.T) {
	_, stderr := runChildCase(t, "log-keep", keepLogEnv+"=keep")
	if !strings.Contains(strings.ToLower(stderr), "mongomqnosuchoption") {
		t.Fatalf("with %s=keep libmongoc's own handler printed nothing about the option; stderr:\n%s", keepLogEnv, stderr)
	}
}

// A SetLogHandler before the first Connect: no default is installed over it.
func TestLogExplicitBeforeConnect(t *testing.T) { runChildCase(t, "log-explicit") }

// waitSlogUnknownOption waits up to 10 s for the unknown URI option's record.
func waitSlogUnknownOption(c *slogCapture) (map[string]string, error) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, r := range c.records {
			if strings.Contains(strings.ToLower(r.Message), "mongomqnosuchoption") {
				m := map[string]string{"level": r.Level.String()}
				r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
				c.mu.Unlock()
				return m, nil
			}
		}
		c.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	return nil, errors.New("no record naming mongomqnosuchoption reached log/slog within 10 s")
}

func childLogDefault() error {
	capture := &slogCapture{}
	slog.SetDefault(slog.New(capture)) // after the import, before the first Connect: followed
	c, err := Connect(unknownOptionURI)
	if err != nil {
		return err
	}
	defer c.Close()
	rec, err := waitSlogUnknownOption(capture)
	if err != nil {
		return err
	}
	if rec["level"] != "WARN" || rec["logger"] != "mongomq" || rec["domain"] != "mongoc" {
		return fmt.Errorf("the record: %v, want level WARN, logger mongomq, domain mongoc", rec)
	}
	// Quiet by default: nothing below warning comes from libmongoc.
	capture.mu.Lock()
	defer capture.mu.Unlock()
	for _, r := range capture.records {
		if r.Level < slog.LevelWarn {
			return fmt.Errorf("a %s record reached slog by default: %q", r.Level, r.Message)
		}
	}
	return nil
}

func childLogKeep() error {
	capture := &slogCapture{}
	slog.SetDefault(slog.New(capture))
	c, err := Connect(unknownOptionURI) // libmongoc's own handler prints to stderr
	if err != nil {
		return err
	}
	defer c.Close()
	time.Sleep(time.Second)
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if len(capture.records) != 0 {
		return fmt.Errorf("with %s=keep, slog got %q", keepLogEnv, capture.records[0].Message)
	}
	return nil
}

func childLogExplicit() error {
	capture := &slogCapture{}
	slog.SetDefault(slog.New(capture))
	got := make(chan logLine, 64)
	SetLogHandler(collectLogs(got))
	c, err := Connect(unknownOptionURI)
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l := <-got:
			if !namesUnknownOption(l) {
				continue
			}
			capture.mu.Lock()
			n := len(capture.records)
			capture.mu.Unlock()
			if n != 0 {
				return fmt.Errorf("the program's handler is set, yet slog got %d records", n)
			}
			return nil
		case <-deadline:
			return errors.New("the handler set before the first Connect got nothing within 10 s")
		}
	}
}

// childSignals: Work with HandleSignals; the parent sends SIGTERM while a handler
// runs: the handler finishes, its event is acked, Work returns nil. Then the
// parent's second SIGTERM, after Work ended, must kill the child (Go's default
// back).
func childSignals() error {
	c, err := Connect(os.Getenv("MONGOMQ_TEST_URI"))
	if err != nil {
		return err
	}
	defer c.Close()
	q, err := c.Queue(os.Getenv("MONGOMQ_GO_TEST_DB"), "mq")
	if err != nil {
		return err
	}
	defer q.Close()
	if _, err := q.Publish("g", []byte("x"), PublishOptions{}); err != nil {
		return err
	}
	done := 0
	err = q.Work(context.Background(), WorkOptions{HandleSignals: true, ShutdownTimeout: 20 * time.Second},
		func(ctx context.Context, l *Lease) error {
			fmt.Println("handling") // the parent sends SIGTERM now
			time.Sleep(time.Second)
			done++
			return nil
		})
	if err != nil {
		return fmt.Errorf("Work: %v", err)
	}
	s, err := q.Stats()
	if err != nil {
		return err
	}
	if done != 1 || s.Messages != 0 {
		return fmt.Errorf("after the signal: %d handlers finished, %d messages left; want 1, 0", done, s.Messages)
	}
	if err := q.Drop(); err != nil {
		return err
	}
	fmt.Println("work returned")
	time.Sleep(30 * time.Second) // the parent's second SIGTERM ends this
	return errors.New("the SIGTERM after Work ended did not kill the process")
}

func TestWorkerHandleSignals(t *testing.T) {
	cmd, out, stderr := startChild(t, "signals", "MONGOMQ_GO_TEST_DB="+randomDB(t), "MONGOMQ_TEST_URI="+testURI(t))
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the child ended before saying %q; stderr:\n%s", want, stderr)
				}
				if l == want {
					return
				}
				if strings.HasPrefix(l, "child failed") {
					t.Fatalf("%s; stderr:\n%s", l, stderr)
				}
			case <-timeout:
				t.Fatalf("the child did not say %q within 30 s", want)
			}
		}
	}
	expect("handling")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expect("work returned")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("the child after its second SIGTERM: %v, want killed by SIGTERM", err)
	}
}
