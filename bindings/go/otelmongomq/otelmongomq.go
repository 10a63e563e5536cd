// otelmongomq.go: Telemetry, the OpenTelemetry implementation of mongomq.Telemetry
// (bindings/CONTRACT.md, "Tracing"): New, the send span with the injected trace
// context, the process span linked to the producers' contexts, the ack and nack
// settle spans, and the four metrics.

// Package otelmongomq records a mongomq queue's work with OpenTelemetry: a span
// "send {db}.{prefix}" for each publish (its context injected into the event's
// attributes as W3C traceparent/tracestate, by the configured propagator), a span
// "process {db}.{prefix}" for each run of the worker helper's handler (linked to the
// contexts its events carry; the handler's ctx holds it), "ack"/"nack" settle spans
// under it, and the metrics messaging.client.sent.messages,
// messaging.client.consumed.messages, messaging.client.operation.duration and
// messaging.process.duration, with the names and attributes of bindings/CONTRACT.md
// ("Tracing"), OpenTelemetry's messaging conventions. It is a module of its own, so
// a program that does not trace has no OpenTelemetry dependency.
//
//	queue.SetTelemetry(otelmongomq.New()) // the global tracer provider, meter provider and propagator
//	seq, err := queue.PublishContext(ctx, "customer-17", event, mongomq.PublishOptions{})
//	err = queue.Work(ctx, opts, func(ctx context.Context, lease *mongomq.Lease) error {
//		// trace.SpanFromContext(ctx) is the process span
//	})
//
// A program that claims by hand reads the producer's context with Extract.
package otelmongomq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "mongomq"

// Version is the scope's version: the Go binding's (its major.minor is the C
// library's it is made for).
const Version = "0.8.0"

// The attribute keys (OpenTelemetry's messaging conventions, and mongomq's own).
const (
	keySystem       = attribute.Key("messaging.system")
	keyDestination  = attribute.Key("messaging.destination.name")
	keyOpType       = attribute.Key("messaging.operation.type")
	keyOpName       = attribute.Key("messaging.operation.name")
	keyMessageID    = attribute.Key("messaging.message.id")
	keyBatchCount   = attribute.Key("messaging.batch.message_count")
	keyGroup        = attribute.Key("messaging.mongomq.message.group")
	keyAttempts     = attribute.Key("messaging.mongomq.message.attempts")
	keyErrorType    = attribute.Key("error.type")
	systemName      = "mongomq"
	durationUnit    = "s"
	messageUnitName = "{message}"
)

// durationBuckets are the messaging conventions' advice for the two histograms.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Telemetry records a queue's work with OpenTelemetry; give it to a queue with
// mongomq's Queue.SetTelemetry. One Telemetry may serve any number of queues (each
// span and point names its queue), from any goroutine. Build it with New; a nil
// *Telemetry records nothing.
type Telemetry struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	sent, consumed           metric.Int64Counter
	opDuration, procDuration metric.Float64Histogram

	dests sync.Map // queue name -> *destination
}

var _ mongomq.Telemetry = (*Telemetry)(nil)

// New returns a Telemetry recording through the global tracer provider, meter
// provider and propagator (otel.GetTracerProvider(), otel.GetMeterProvider(),
// otel.GetTextMapPropagator()), or those the options give. Without an SDK
// configured these are OpenTelemetry's no-ops: nothing is recorded and no trace
// context is injected.
func New(opts ...Option) *Telemetry {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.prop == nil {
		c.prop = otel.GetTextMapPropagator()
	}
	t := &Telemetry{
		tracer: c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
		prop:   c.prop,
	}
	meter := c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	var err error
	if t.sent, err = meter.Int64Counter("messaging.client.sent.messages", metric.WithUnit(messageUnitName),
		metric.WithDescription("Events published (duplicates of a dedup key included).")); err != nil {
		otel.Handle(err)
	}
	if t.consumed, err = meter.Int64Counter("messaging.client.consumed.messages", metric.WithUnit(messageUnitName),
		metric.WithDescription("Events the worker helper claimed and gave its handler.")); err != nil {
		otel.Handle(err)
	}
	if t.opDuration, err = meter.Float64Histogram("messaging.client.operation.duration", metric.WithUnit(durationUnit),
		metric.WithDescription("Duration of publishes, acks and nacks."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		otel.Handle(err)
	}
	if t.procDuration, err = meter.Float64Histogram("messaging.process.duration", metric.WithUnit(durationUnit),
		metric.WithDescription("Duration of the worker helper's handler runs."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		otel.Handle(err)
	}
	// A provider that refused an instrument may have returned none: record nothing there.
	if t.sent == nil {
		t.sent = noop.Int64Counter{}
	}
	if t.consumed == nil {
		t.consumed = noop.Int64Counter{}
	}
	if t.opDuration == nil {
		t.opDuration = noop.Float64Histogram{}
	}
	if t.procDuration == nil {
		t.procDuration = noop.Float64Histogram{}
	}
	return t
}

// destination is what every span and point of one queue shares, made once: each
// point has system, destination and its operation's name.
type destination struct {
	name     string
	base     []attribute.KeyValue // system, destination
	sendName string
	procName string
	publish  metric.MeasurementOption // operation.name publish: sent.messages, a publish's operation.duration
	claim    metric.MeasurementOption // operation.name claim: consumed.messages
	process  metric.MeasurementOption // operation.name process: process.duration
	ack      metric.MeasurementOption // operation.name ack: operation.duration
	nack     metric.MeasurementOption // operation.name nack: operation.duration
}

func (t *Telemetry) destination(queue string) *destination {
	if d, ok := t.dests.Load(queue); ok {
		return d.(*destination)
	}
	base := []attribute.KeyValue{keySystem.String(systemName), keyDestination.String(queue)}
	withName := func(name string) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], keyOpName.String(name))...))
	}
	d := &destination{
		name:     queue,
		base:     base,
		sendName: "send " + queue,
		procName: "process " + queue,
		publish:  withName("publish"),
		claim:    withName("claim"),
		process:  withName("process"),
		ack:      withName("ack"),
		nack:     withName("nack"),
	}
	actual, _ := t.dests.LoadOrStore(queue, d)
	return actual.(*destination)
}

// failed is a point's attributes for a failed operation: base, opName and
// error.type.
func (d *destination) failed(opName string, err error) metric.MeasurementOption {
	kv := append(d.base[:len(d.base):len(d.base)], keyOpName.String(opName), keyErrorType.String(ErrorType(err)))
	return metric.WithAttributeSet(attribute.NewSet(kv...))
}

// ErrorType is what error.type says of err: a library error's status name
// ("MQ_LEASE_LOST"; found with errors.As, so also when wrapped), else err's Go
// type ("*errors.errorString", "*mongomq.PanicError").
func ErrorType(err error) string {
	var e *mongomq.Error
	if errors.As(err, &e) {
		return e.Status.String()
	}
	return fmt.Sprintf("%T", err)
}

// fail marks span as failed by err: error status, an exception event, error.type.
func fail(span trace.Span, err error) {
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(keyErrorType.String(ErrorType(err)))
}

func since(start time.Time) float64 { return time.Since(start).Seconds() }

// Publish starts the send span (a child of ctx's span, kind producer) and returns
// its context as the propagator injects it, for the queue to add to every event;
// done ends the span and records messaging.client.sent.messages and the publish's
// messaging.client.operation.duration (both with messaging.operation.name publish).
func (t *Telemetry) Publish(ctx context.Context, op mongomq.PublishOp) ([]mongomq.Attr, func(int64, error)) {
	if t == nil {
		return nil, func(int64, error) {}
	}
	d := t.destination(op.Queue)
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, d.base...)
	attrs = append(attrs, keyOpType.String("send"), keyOpName.String("publish"))
	if op.Batch {
		attrs = append(attrs, keyBatchCount.Int(op.Count))
	} else {
		attrs = append(attrs, keyGroup.String(op.Group))
	}
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, d.sendName, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	var carrier attrCarrier
	t.prop.Inject(ctx, &carrier)
	return carrier.attrs, func(seq int64, err error) {
		took := since(start)
		if err != nil {
			fail(span, err)
		} else if !op.Batch {
			span.SetAttributes(keyMessageID.String(strconv.FormatInt(seq, 10)))
		}
		span.End()
		opt := d.publish
		if err != nil {
			opt = d.failed("publish", err)
		}
		t.sent.Add(ctx, int64(op.Count), opt)
		t.opDuration.Record(ctx, took, opt)
	}
}

// Process records messaging.client.consumed.messages (messaging.operation.name
// claim: the worker claimed them) for the lease's events and
// starts the process span (kind consumer, a child of ctx's span: the worker's own
// context) with one link per event that carries a trace context; the handler runs
// in the context returned. done ends the span (error status, an exception event
// and error.type for a failed handler) and records messaging.process.duration
// (messaging.operation.name process).
func (t *Telemetry) Process(ctx context.Context, op mongomq.ProcessOp) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	d := t.destination(op.Queue)
	l := op.Lease
	n := l.Count()
	var links []trace.Link
	for i := 0; i < n; i++ {
		if sc := t.linkAt(l, i); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, d.base...)
	attrs = append(attrs, keyOpType.String("process"), keyOpName.String("process"),
		keyGroup.String(l.Group()), keyAttempts.Int(l.Attempts()))
	if n > 1 {
		attrs = append(attrs, keyBatchCount.Int(n))
	} else {
		attrs = append(attrs, keyMessageID.String(strconv.FormatInt(l.Seq(), 10)))
	}
	t.consumed.Add(ctx, int64(n), d.claim)
	start := time.Now()
	ctx, span := t.tracer.Start(ctx, d.procName, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithLinks(links...), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		took := since(start)
		opt := d.process
		if err != nil {
			fail(span, err)
			opt = d.failed("process", err)
		}
		span.End()
		t.procDuration.Record(ctx, took, opt)
	}
}

// linkAt is the span context event i of l carries (invalid when none).
func (t *Telemetry) linkAt(l *mongomq.Lease, i int) trace.SpanContext {
	attrs := l.AttrsAt(i)
	if len(attrs) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(t.prop.Extract(context.Background(), &attrCarrier{attrs}))
}

// Settle starts, for the worker helper's ack or nack, the settle span (kind
// client, a child of the process span in ctx); a caller's own Ack or Nack gets no
// span. done ends the span (error status and error.type when it failed, e.g.
// MQ_LEASE_LOST) and records the call's messaging.client.operation.duration.
func (t *Telemetry) Settle(ctx context.Context, op mongomq.SettleOp) func(error) {
	if t == nil {
		return func(error) {}
	}
	d := t.destination(op.Queue)
	start := time.Now()
	var span trace.Span
	if op.InWorker {
		attrs := make([]attribute.KeyValue, 0, 4)
		attrs = append(attrs, d.base...)
		attrs = append(attrs, keyOpType.String("settle"), keyOpName.String(op.Name))
		_, span = t.tracer.Start(ctx, op.Name+" "+d.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	}
	return func(err error) {
		took := since(start)
		if span != nil {
			if err != nil {
				fail(span, err)
			}
			span.End()
		}
		var opt metric.MeasurementOption
		switch {
		case err != nil:
			opt = d.failed(op.Name, err)
		case op.Name == "ack":
			opt = d.ack
		default:
			opt = d.nack
		}
		t.opDuration.Record(ctx, took, opt)
	}
}
