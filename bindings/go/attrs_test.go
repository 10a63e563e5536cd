// attrs_test.go: the Attributes (0.7.0) scenario of TestContract
// (attributes_round_trip, registered in contract_test.go) and TestAttrsExtras (a NUL
// refused before C, naming the attribute; the library's messages; the accessors of a
// closed lease and of a nil one; the limits' constants).

package mongomq

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// wantAttrs fails the test unless got is want (nil and empty alike).
func wantAttrs(t *testing.T, what string, got, want []Attr) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: attrs %q, want %q", what, got, want)
	}
}

// wantAttrArg fails the test unless err is ErrInvalidArgument whose message holds mention.
func wantAttrArg(t *testing.T, what string, err error, mention string) {
	t.Helper()
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), mention) {
		t.Fatalf("%s: %v, want ErrInvalidArgument naming %q", what, err, mention)
	}
}

func attributesRoundTrip(t *testing.T) {
	_, q := newQueue(t)
	attrs := []Attr{{"content-type", "application/json"}, {"tenant.id", "t-42"}, {"empty", ""}}
	seq, err := q.Publish("g", []byte(`{"n":1}`), PublishOptions{Attrs: attrs})
	if err != nil {
		t.Fatal(err)
	}
	checkHead := func(what string, l *Lease) {
		t.Helper()
		if l.Seq() != seq {
			t.Fatalf("%s: seq %d, want %d", what, l.Seq(), seq)
		}
		wantAttrs(t, what, l.Attrs(), attrs)
		wantAttrs(t, what+" (AttrsAt(0))", l.AttrsAt(0), attrs)
		if v, ok := l.Attr("tenant.id"); !ok || v != "t-42" {
			t.Fatalf("%s: Attr(tenant.id) = %q, %v; want t-42", what, v, ok)
		}
		if v, ok := l.Attr("empty"); !ok || v != "" {
			t.Fatalf("%s: Attr(empty) = %q, %v; want \"\", true", what, v, ok)
		}
		if v, ok := l.Attr("absent"); ok {
			t.Fatalf("%s: Attr(absent) = %q, true; want none", what, v)
		}
	}
	l := claim(t, q, ClaimOptions{})
	checkHead("first delivery", l)
	if err := q.Nack(l, 0); err != nil {
		t.Fatal(err)
	}
	l = claim(t, q, ClaimOptions{})
	if l.Attempts() != 2 {
		t.Fatalf("after a nack: attempts %d, want 2", l.Attempts())
	}
	checkHead("after a nack", l)
	ack(t, q, l)

	// A batch: each event keeps its own, a batch lease gives each its own.
	batch := [][]Attr{{{"n", "1"}}, nil, {{"n", "2"}, {"extra", "yes"}}}
	var msgs []Message
	for i, a := range batch {
		msgs = append(msgs, Message{Group: "b", Event: []byte(fmt.Sprintf("b%d", i)), PublishOptions: PublishOptions{Attrs: a}})
	}
	out, err := q.PublishBatchWith(msgs) // each event's seq: consecutive with one partition only
	if err != nil {
		t.Fatal(err)
	}
	peeked, err := q.Peek("b", 10)
	if err != nil || len(peeked) != 3 {
		t.Fatalf("Peek = %+v, %v; want 3", peeked, err)
	}
	for i, p := range peeked {
		if p.Seq != out[i].Seq {
			t.Fatalf("peek %d: seq %d, want %d", i, p.Seq, out[i].Seq)
		}
		wantAttrs(t, fmt.Sprintf("peek %d", i), p.Attrs, batch[i])
	}
	l = claim(t, q, ClaimOptions{MaxEvents: 3})
	if l.Count() != 3 {
		t.Fatalf("batch claim: %d events, want 3", l.Count())
	}
	for i := range batch {
		wantAttrs(t, fmt.Sprintf("batch lease event %d", i), l.AttrsAt(i), batch[i])
	}
	wantAttrs(t, "batch lease head", l.Attrs(), batch[0])
	if v, ok := l.Attr("extra"); ok {
		t.Fatalf("Attr(extra) of the head = %q: that is event 2's", v)
	}
	if got := l.AttrsAt(3); got != nil {
		t.Fatalf("AttrsAt(3) of 3 events: %q, want nil", got)
	}
	ack(t, q, l)

	// The dead letters show them, a requeue keeps them.
	if err := q.SetMaxAttempts(1); err != nil {
		t.Fatal(err)
	}
	deadAttrs := []Attr{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"k", "v"}}
	dseq, err := q.Publish("d", []byte("poison"), PublishOptions{Attrs: deadAttrs})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Nack(claim(t, q, ClaimOptions{}), 0); err != nil {
		t.Fatal(err)
	}
	claimEmpty(t, q, ClaimOptions{}) // the second delivery goes to the dead letters
	dead, err := q.DeadList(10)
	if err != nil || len(dead) != 1 || dead[0].Seq != dseq {
		t.Fatalf("DeadList = %+v, %v; want seq %d", dead, err, dseq)
	}
	wantAttrs(t, "dead letter", dead[0].Attrs, deadAttrs)
	if err := q.SetMaxAttempts(0); err != nil {
		t.Fatal(err)
	}
	newSeq, err := q.DeadRequeue(dseq)
	if err != nil {
		t.Fatal(err)
	}
	l = claim(t, q, ClaimOptions{})
	if l.Seq() != newSeq {
		t.Fatalf("after the requeue: seq %d, want %d", l.Seq(), newSeq)
	}
	wantAttrs(t, "requeued", l.Attrs(), deadAttrs)
	ack(t, q, l)

	// Bad attributes: the argument error, naming the attribute, and nothing published.
	var many []Attr
	for i := 0; i <= AttrMax; i++ {
		many = append(many, Attr{fmt.Sprintf("k%d", i), "v"})
	}
	bad := []struct {
		what    string
		attrs   []Attr
		mention string
	}{
		{"17 attributes", many, "16"},
		{"a key with a space", []Attr{{"ok", "1"}, {"bad key", "2"}}, "bad key"},
		{"a key given twice", []Attr{{"k", "1"}, {"k", "2"}}, "k"},
	}
	for _, b := range bad {
		_, err := q.Publish("bad", []byte("x"), PublishOptions{Attrs: b.attrs})
		wantAttrArg(t, "Publish with "+b.what, err, b.mention)
		_, err = q.PublishBatch([]Message{{Group: "bad", Event: []byte("ok")}, {Group: "bad", Event: []byte("x"), PublishOptions: PublishOptions{Attrs: b.attrs}}})
		wantAttrArg(t, "PublishBatch with "+b.what, err, "messages[1]")
	}
	if s := stats(t, q); s.Messages != 0 {
		t.Fatalf("after the refused publishes: %d messages, want 0", s.Messages)
	}
}

func TestAttrsExtras(t *testing.T) {
	t.Run("constants", func(t *testing.T) {
		if AttrMax != raw.MQ_ATTR_MAX || AttrKeyMax != raw.MQ_ATTR_KEY_MAX || AttrValueMax != raw.MQ_ATTR_VALUE_MAX {
			t.Fatalf("AttrMax %d, AttrKeyMax %d, AttrValueMax %d; the library's are %d, %d, %d",
				AttrMax, AttrKeyMax, AttrValueMax, raw.MQ_ATTR_MAX, raw.MQ_ATTR_KEY_MAX, raw.MQ_ATTR_VALUE_MAX)
		}
	})
	t.Run("nul_refused_before_c", func(t *testing.T) {
		_, q := newQueue(t)
		_, err := q.Publish("g", nil, PublishOptions{Attrs: []Attr{{"a", "1"}, {"b\x00c", "2"}}})
		wantAttrArg(t, "a key with a NUL", err, `Attrs[1].Key "b\x00c" contains a NUL byte at offset 1`)
		_, err = q.Publish("g", nil, PublishOptions{Attrs: []Attr{{"a", "x\x00"}}})
		wantAttrArg(t, "a value with a NUL", err, `Attrs[0].Value (key "a") contains a NUL byte at offset 1`)
		_, err = q.PublishBatch([]Message{{Group: "g", PublishOptions: PublishOptions{Attrs: []Attr{{"a\x00", ""}}}}})
		wantAttrArg(t, "a batch key with a NUL", err, `messages[0].Attrs[0].Key`)
		if s := stats(t, q); s.Messages != 0 {
			t.Fatalf("%d messages, want 0", s.Messages)
		}
	})
	t.Run("library_limits", func(t *testing.T) {
		_, q := newQueue(t)
		for _, b := range []struct {
			what  string
			attr  Attr
			fails bool
		}{
			{"an empty key", Attr{"", "v"}, true},
			{"a key of AttrKeyMax bytes", Attr{strings.Repeat("k", AttrKeyMax), "v"}, false},
			{"a key of AttrKeyMax+1 bytes", Attr{strings.Repeat("k", AttrKeyMax+1), "v"}, true},
			{"a value of AttrValueMax bytes", Attr{"k", strings.Repeat("v", AttrValueMax)}, false},
			{"a value of AttrValueMax+1 bytes", Attr{"k", strings.Repeat("v", AttrValueMax+1)}, true},
			{"a value not UTF-8", Attr{"k", "\xff"}, true},
			{"a UTF-8 value", Attr{"k", "grüße ✓"}, false},
		} {
			_, err := q.Publish("g", nil, PublishOptions{Attrs: []Attr{b.attr}})
			if b.fails {
				wantAttrArg(t, b.what, err, "attr")
			} else if err != nil {
				t.Fatalf("%s: %v", b.what, err)
			}
		}
		l := claim(t, q, ClaimOptions{MaxEvents: 10})
		if l.Count() != 3 {
			t.Fatalf("%d events published, want 3", l.Count())
		}
		wantAttrs(t, "a UTF-8 value", l.AttrsAt(2), []Attr{{"k", "grüße ✓"}})
		ack(t, q, l)
	})
	t.Run("lease_accessors_after_close", func(t *testing.T) {
		_, q := newQueue(t)
		attrs := []Attr{{"a", "1"}}
		if _, err := q.Publish("g", nil, PublishOptions{Attrs: attrs}); err != nil {
			t.Fatal(err)
		}
		l := claim(t, q, ClaimOptions{})
		l.Close()
		// Copied into Go memory at the claim: a closed lease still has them.
		wantAttrs(t, "a closed lease", l.Attrs(), attrs)
		if v, ok := l.Attr("a"); !ok || v != "1" {
			t.Fatalf("Attr(a) of a closed lease = %q, %v", v, ok)
		}
		got := l.Attrs()
		got[0].Value = "changed"
		wantAttrs(t, "after changing a returned slice", l.Attrs(), attrs)
		var nilLease *Lease
		if nilLease.Attrs() != nil || nilLease.AttrsAt(0) != nil {
			t.Fatal("a nil lease has attributes")
		}
		if _, ok := nilLease.Attr("a"); ok {
			t.Fatal("a nil lease has attribute a")
		}
	})
}
