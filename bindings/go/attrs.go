// attrs.go: event attributes (0.7.0): Attr, the limits, PublishOptions.Attrs packed
// for the shims (key NUL value NUL ...), a lease's attributes read from C once at
// the claim, and a stored event's "attrs" object read in its order.

package mongomq

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Attribute limits (include/mongomq.h, "Event attributes").
const (
	// AttrMax is the most attributes one event may carry.
	AttrMax = 16
	// AttrKeyMax is the most bytes of a key: 1..AttrKeyMax of ASCII letters, digits,
	// '_', '-' and '.'.
	AttrKeyMax = 128
	// AttrValueMax is the most bytes of a value: 0..AttrValueMax of UTF-8.
	AttrValueMax = 4096
)

// Attr is one attribute of an event (0.7.0): a string key and value published
// beside its bytes (PublishOptions.Attrs), for what a consumer needs before it reads
// the event (a content type, a tenant) and for trace context (W3C traceparent).
type Attr struct {
	Key, Value string
}

// packAttrs is attrs as the shims take them: "key NUL value NUL ..." (nil for none).
// A key or value holding a NUL would split the packing, so it is refused here,
// naming it (name is "Attrs" or "messages[i].Attrs"); everything else (too many, a
// bad key, a key given twice, a value too long) the library refuses with a message
// naming the attribute.
func packAttrs(op, name string, attrs []Attr) ([]byte, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	n := 0
	for i, a := range attrs {
		if err := checkText(op, fmt.Sprintf("%s[%d].Key %q", name, i, a.Key), a.Key); err != nil {
			return nil, err
		}
		if err := checkText(op, fmt.Sprintf("%s[%d].Value (key %q)", name, i, a.Key), a.Value); err != nil {
			return nil, err
		}
		n += len(a.Key) + len(a.Value) + 2
	}
	packed := make([]byte, 0, n)
	for _, a := range attrs {
		packed = append(packed, a.Key...)
		packed = append(packed, 0)
		packed = append(packed, a.Value...)
		packed = append(packed, 0)
	}
	return packed, nil
}

// leaseAttrs copies the attributes of event i of a C lease into Go memory (nil when
// it has none).
func leaseAttrs(l raw.Struct_SS_mq_lease, i int) []Attr {
	n := int(raw.Mq_lease_attr_count(l, int64(i)))
	if n == 0 {
		return nil
	}
	out := make([]Attr, n)
	for j := range out {
		out[j] = Attr{Key: raw.Mqs_lease_attr_key(l, int64(i), int64(j)), Value: raw.Mqs_lease_attr_value(l, int64(i), int64(j))}
	}
	return out
}

// Attrs is the head event's attributes in publish order (a new slice; nil when it
// has none).
func (l *Lease) Attrs() []Attr {
	return l.AttrsAt(0)
}

// AttrsAt is the attributes of event i (0 is the head) in publish order (a new
// slice; nil when it has none or i is out of range).
func (l *Lease) AttrsAt(i int) []Attr {
	if l == nil || i < 0 || i >= len(l.attrs) || len(l.attrs[i]) == 0 {
		return nil
	}
	return append([]Attr(nil), l.attrs[i]...)
}

// Attr is the value of the head event's attribute key, and whether it has one (a
// value may be "").
func (l *Lease) Attr(key string) (string, bool) {
	if l == nil || len(l.attrs) == 0 {
		return "", false
	}
	for _, a := range l.attrs[0] {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// orderedAttrs reads the library's "attrs" object ({key: value}, in publish order)
// into a list, keeping that order (a Go map would lose it).
type orderedAttrs []Attr

func (o *orderedAttrs) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // null
		*o = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("attrs is not an object")
	}
	var out []Attr
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := kt.(string)
		var value string
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("attrs %q: %w", key, err)
		}
		out = append(out, Attr{Key: key, Value: value})
	}
	*o = out
	return nil
}
