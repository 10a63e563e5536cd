// carrier.go: an event's attributes as a propagation.TextMapCarrier (injection
// keeps the order the propagator sets them in), and Extract/ExtractAt, which read
// the producer's trace context from a lease for a program that claims by hand.

package otelmongomq

import (
	"context"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// attrCarrier is a list of attributes as a propagation.TextMapCarrier. Set keeps the
// order of first setting (W3C: traceparent, then tracestate), which is the order the
// event then carries them in.
type attrCarrier struct {
	attrs []mongomq.Attr
}

var _ propagation.TextMapCarrier = (*attrCarrier)(nil)

// Get is the value of key ("" when absent).
func (c *attrCarrier) Get(key string) string {
	for _, a := range c.attrs {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// Set sets key to value, in place when key is there.
func (c *attrCarrier) Set(key, value string) {
	for i := range c.attrs {
		if c.attrs[i].Key == key {
			c.attrs[i].Value = value
			return
		}
	}
	c.attrs = append(c.attrs, mongomq.Attr{Key: key, Value: value})
}

// Keys is the keys, in order.
func (c *attrCarrier) Keys() []string {
	keys := make([]string, len(c.attrs))
	for i, a := range c.attrs {
		keys[i] = a.Key
	}
	return keys
}

// Extract returns ctx with the trace context that the lease's head event carries
// (as the publish's Telemetry injected it), read by the global propagator
// (otel.GetTextMapPropagator()): for a program that claims by hand and records its
// own span, linked to the producer's (trace.LinkFromContext) or as its child. ctx
// is returned as it is when the event carries none.
func Extract(ctx context.Context, lease *mongomq.Lease) context.Context {
	return extract(ctx, otel.GetTextMapPropagator(), lease.Attrs())
}

// ExtractAt is Extract for event i of a batch lease (0 is the head).
func ExtractAt(ctx context.Context, lease *mongomq.Lease, i int) context.Context {
	return extract(ctx, otel.GetTextMapPropagator(), lease.AttrsAt(i))
}

// Extract is the package's Extract with t's propagator.
func (t *Telemetry) Extract(ctx context.Context, lease *mongomq.Lease) context.Context {
	return t.ExtractAt(ctx, lease, 0)
}

// ExtractAt is the package's ExtractAt with t's propagator.
func (t *Telemetry) ExtractAt(ctx context.Context, lease *mongomq.Lease, i int) context.Context {
	if t == nil {
		return ExtractAt(ctx, lease, i)
	}
	return extract(ctx, t.prop, lease.AttrsAt(i))
}

func extract(ctx context.Context, p propagation.TextMapPropagator, attrs []mongomq.Attr) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(attrs) == 0 {
		return ctx
	}
	return p.Extract(ctx, &attrCarrier{attrs})
}
