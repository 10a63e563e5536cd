// The matrix's Go agent: the line protocol of tests/matrix/README.md over the Go
// binding (bindings/go); tpublish and twork trace through its module otelmongomq
// (bindings/go/otelmongomq) with the OpenTelemetry SDK (trace.go).
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

var (
	client *mongomq.Client
	queues = map[string]*mongomq.Queue{}
	heldQ  *mongomq.Queue
	held   *mongomq.Lease
)

func fnv(b []byte) string {
	h := uint64(0xcbf29ce484222325)
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return fmt.Sprintf("%016x", h)
}

func specBytes(s string) ([]byte, error) {
	if s == "-" {
		return []byte{}, nil
	}
	if strings.HasPrefix(s, "big:") {
		n, err := strconv.Atoi(s[4:])
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 251)
		}
		return b, nil
	}
	return hex.DecodeString(s)
}

// specAttrs reads the protocol's ATTRS: KEYHEX=VALUEHEX joined by ';', "-" for none.
func specAttrs(s string) ([]mongomq.Attr, error) {
	if s == "-" {
		return nil, nil
	}
	var attrs []mongomq.Attr
	for _, pair := range strings.Split(s, ";") {
		kh, vh, _ := strings.Cut(pair, "=")
		k, err := hex.DecodeString(kh)
		if err != nil {
			return nil, err
		}
		v, err := hex.DecodeString(vh)
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, mongomq.Attr{Key: string(k), Value: string(v)})
	}
	return attrs, nil
}

func attrsWord(attrs []mongomq.Attr) string {
	if len(attrs) == 0 {
		return "-"
	}
	pairs := make([]string, len(attrs))
	for i, a := range attrs {
		pairs[i] = hex.EncodeToString([]byte(a.Key)) + "=" + hex.EncodeToString([]byte(a.Value))
	}
	return strings.Join(pairs, ";")
}

func epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func now(q *mongomq.Queue) float64 {
	t, err := q.Now()
	if err != nil {
		return 0
	}
	return epoch(t)
}

func record(q *mongomq.Queue, l *mongomq.Lease) string {
	ev := l.Event()
	return fmt.Sprintf("%d,%s,%d,%d,%s,%.6f,%s", l.Seq(), hex.EncodeToString([]byte(l.Group())), l.Attempts(), len(ev),
		fnv(ev), now(q), attrsWord(l.Attrs()))
}

func secs(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Second))
}

func claim(q *mongomq.Queue, wait, vis time.Duration) (*mongomq.Lease, error) {
	l, err := q.Claim(context.Background(), mongomq.ClaimOptions{Visibility: vis, Wait: wait, WorkerID: "go-agent"})
	if errors.Is(err, mongomq.ErrEmpty) {
		return nil, nil
	}
	return l, err
}

func ackStatus(q *mongomq.Queue, l *mongomq.Lease) (string, error) {
	err := q.Ack(l)
	l.Close()
	if errors.Is(err, mongomq.ErrLeaseLost) {
		return "lease_lost", nil
	}
	if err != nil {
		return "", err
	}
	return "acked", nil
}

func handle(w []string) (string, error) {
	switch w[0] {
	case "tpublish":
		return tpublish(w[1:])
	case "twork":
		return twork(w[1:])
	}
	if w[0] == "ack_held" {
		st, err := ackStatus(heldQ, held)
		held = nil
		return "ok " + st, err
	}
	if len(w) < 3 {
		return "", fmt.Errorf("bad line")
	}
	key := w[1] + " " + w[2]
	if w[0] == "popen" && len(w) == 4 {
		p, err := strconv.Atoi(w[3])
		if err != nil {
			return "", err
		}
		// A handle of P partitions in place of the one we had (kept when the open fails).
		q, err := client.QueueWith(w[1], w[2], mongomq.QueueOptions{Partitions: p})
		if err != nil {
			return "", err
		}
		if old := queues[key]; old != nil && old != heldQ {
			old.Close()
		}
		queues[key] = q
		return fmt.Sprintf("ok %d", q.Partitions()), nil
	}
	q := queues[key]
	if q == nil {
		var err error
		if q, err = client.Queue(w[1], w[2]); err != nil {
			return "", err
		}
		queues[key] = q
	}
	a := w[3:]
	switch w[0] {
	case "publish":
		g, err := hex.DecodeString(a[0])
		if err != nil {
			return "", err
		}
		data, err := specBytes(a[3])
		if err != nil {
			return "", err
		}
		prio, _ := strconv.Atoi(a[1])
		delay, _ := strconv.ParseFloat(a[2], 64)
		opts := mongomq.PublishOptions{Priority: prio}
		if len(a) > 4 {
			if opts.Attrs, err = specAttrs(a[4]); err != nil {
				return "", err
			}
		}
		if delay > 0 {
			at := now(q) + delay
			opts.NotBefore = time.Unix(0, int64(at*1e9))
			seq, err := q.Publish(string(g), data, opts)
			return fmt.Sprintf("ok %d %.6f", seq, epoch(opts.NotBefore)), err
		}
		seq, err := q.Publish(string(g), data, opts)
		return fmt.Sprintf("ok %d 0", seq), err
	case "claim":
		n, _ := strconv.Atoi(a[0])
		out := []string{"ok"}
		for i := 0; i < n; i++ {
			l, err := claim(q, secs(a[1]), secs(a[2]))
			if err != nil {
				return "", err
			}
			if l == nil {
				break
			}
			out = append(out, record(q, l))
			st, err := ackStatus(q, l)
			if err != nil {
				return "", err
			}
			if st != "acked" {
				return "", fmt.Errorf("ack: %s", st)
			}
		}
		return strings.Join(out, " "), nil
	case "drain":
		hold, _ := strconv.ParseFloat(a[2], 64)
		out := []string{"ok"}
		for {
			l, err := claim(q, secs(a[0]), secs(a[1]))
			if err != nil {
				return "", err
			}
			if l == nil {
				break
			}
			t1 := epoch(time.Now())
			time.Sleep(time.Duration(hold * float64(time.Millisecond)))
			t2 := epoch(time.Now())
			out = append(out, fmt.Sprintf("%d,%s,%.6f,%.6f,%s", l.Seq(), hex.EncodeToString([]byte(l.Group())), t1, t2, fnv(l.Event())))
			st, err := ackStatus(q, l)
			if err != nil {
				return "", err
			}
			if st != "acked" {
				return "", fmt.Errorf("ack: %s", st)
			}
		}
		return strings.Join(out, " "), nil
	case "hold":
		l, err := claim(q, secs(a[0]), secs(a[1]))
		if err != nil {
			return "", err
		}
		if l == nil {
			return "ok none", nil
		}
		held, heldQ = l, q
		return "ok " + record(q, l), nil
	case "drop":
		return "ok", q.Drop()
	}
	return "", fmt.Errorf("unknown op %s", w[0])
}

func main() {
	var err error
	if client, err = mongomq.Connect(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "go agent:", err)
		os.Exit(1)
	}
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadString('\n')
		w := strings.Fields(line)
		if len(w) > 0 {
			if w[0] == "quit" {
				break
			}
			reply, herr := handle(w)
			if herr != nil {
				reply = "err " + strings.ReplaceAll(herr.Error(), "\n", " ")
			}
			out.WriteString(reply + "\n")
			out.Flush()
		}
		if err != nil {
			break
		}
	}
	for _, q := range queues {
		q.Close()
	}
	for _, q := range tqueues {
		q.Close()
	}
	client.Close()
}
