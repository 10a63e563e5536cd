// options.go: how New is configured: the tracer provider, meter provider and
// text-map propagator a Telemetry uses (the global ones by default).

package otelmongomq

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Option configures New.
type Option interface {
	apply(*config)
}

type config struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	prop propagation.TextMapPropagator
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider makes the Telemetry record its spans through tp instead of
// otel.GetTracerProvider(). A nil tp is the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tp = tp })
}

// WithMeterProvider makes the Telemetry record its metrics through mp instead of
// otel.GetMeterProvider(). A nil mp is the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.mp = mp })
}

// WithPropagator makes the Telemetry inject and extract trace context with p
// instead of otel.GetTextMapPropagator() (which is a no-op until the program sets
// one, e.g. propagation.TraceContext{}). A nil p is the default.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.prop = p })
}
