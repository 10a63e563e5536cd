package org.mongomq.otel;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.metrics.DoubleHistogram;
import io.opentelemetry.api.metrics.LongCounter;
import io.opentelemetry.api.metrics.Meter;
import io.opentelemetry.api.metrics.MeterProvider;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.TracerProvider;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.io.IOException;
import java.io.InputStream;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.mongomq.Lease;
import org.mongomq.MongoMqException;
import org.mongomq.Telemetry;

/**
 * OpenTelemetry tracing and metrics for mongomq queues (bindings/CONTRACT.md, "Tracing",
 * in OpenTelemetry's messaging conventions): a publish records a span
 * {@code send {db}.{prefix}} (kind producer, a child of the current context) and injects
 * its context into the events' attributes with the text-map propagator (W3C:
 * {@code traceparent}, {@code tracestate}); the workers run each handler in a span
 * {@code process {db}.{prefix}} (kind consumer) that links to the producers' contexts,
 * with the span current, and record their ack or nack as a settle span under it; four
 * metrics count and time it all. Instrumentation scope {@code mongomq}, this binding's
 * version.
 *
 * <pre>{@code
 * queue.setTelemetry(MongoMqTelemetry.global());          // the global providers
 * queue.setTelemetry(MongoMqTelemetry.create(openTelemetry)); // or given ones
 * }</pre>
 *
 * <p>This package is the only one of the binding that uses the OpenTelemetry API
 * ({@code io.opentelemetry:opentelemetry-api}, an optional dependency of the jar): a
 * program that traces has it on its classpath, one that does not never loads this class.
 * Immutable and thread-safe; one object may serve any number of queues.
 *
 * @since 0.7.0
 */
public final class MongoMqTelemetry implements Telemetry {
    /** The instrumentation scope's name, the tracer's and the meter's. */
    public static final String SCOPE = "mongomq";

    static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> OPERATION_NAME = AttributeKey.stringKey("messaging.operation.name");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<Long> BATCH_COUNT = AttributeKey.longKey("messaging.batch.message_count");
    static final AttributeKey<String> GROUP = AttributeKey.stringKey("messaging.mongomq.message.group");
    static final AttributeKey<Long> ATTEMPTS = AttributeKey.longKey("messaging.mongomq.message.attempts");
    static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

    /** The messaging conventions' advice for the duration histograms, in seconds. */
    private static final List<Double> BUCKETS = List.of(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0,
            2.5, 5.0, 7.5, 10.0);

    private static final TextMapSetter<Map<String, String>> SETTER = (carrier, key, value) -> {
        if (carrier != null) carrier.put(key, value);
    };

    private static final TextMapGetter<Map<String, String>> GETTER = new TextMapGetter<>() {
        @Override
        @SuppressWarnings("deprecation") // still what propagators of key prefixes (baggage in some formats) read
        public Iterable<String> keys(Map<String, String> carrier) {
            return carrier.keySet();
        }

        @Override
        public String get(Map<String, String> carrier, String key) {
            return carrier == null ? null : carrier.get(key);
        }
    };

    private final Tracer tracer;
    private final TextMapPropagator propagator;
    private final LongCounter sent;
    private final LongCounter consumed;
    private final DoubleHistogram operationDuration;
    private final DoubleHistogram processDuration;
    /** messaging.system and messaging.destination.name, per destination. */
    private final Map<String, Attributes> destinations = new ConcurrentHashMap<>();

    private MongoMqTelemetry(TracerProvider tracers, MeterProvider meters, TextMapPropagator propagator) {
        String version = version();
        this.tracer = tracers.tracerBuilder(SCOPE).setInstrumentationVersion(version).build();
        Meter meter = meters.meterBuilder(SCOPE).setInstrumentationVersion(version).build();
        this.propagator = propagator;
        this.sent = meter.counterBuilder("messaging.client.sent.messages").setUnit("{message}")
                .setDescription("Number of messages a producer attempted to send to the queue.").build();
        this.consumed = meter.counterBuilder("messaging.client.consumed.messages").setUnit("{message}")
                .setDescription("Number of messages the workers received to process.").build();
        this.operationDuration = meter.histogramBuilder("messaging.client.operation.duration").setUnit("s")
                .setDescription("Duration of publish, ack and nack.").setExplicitBucketBoundariesAdvice(BUCKETS).build();
        this.processDuration = meter.histogramBuilder("messaging.process.duration").setUnit("s")
                .setDescription("Duration of a worker's handler run.").setExplicitBucketBoundariesAdvice(BUCKETS)
                .build();
    }

    /** From {@code openTelemetry}'s tracer provider, meter provider and text-map propagator. */
    public static MongoMqTelemetry create(OpenTelemetry openTelemetry) {
        if (openTelemetry == null) throw new IllegalArgumentException("openTelemetry must not be null");
        return new MongoMqTelemetry(openTelemetry.getTracerProvider(), openTelemetry.getMeterProvider(),
                openTelemetry.getPropagators().getTextMapPropagator());
    }

    /** From the providers and propagator given. */
    public static MongoMqTelemetry create(TracerProvider tracerProvider, MeterProvider meterProvider,
                                          TextMapPropagator propagator) {
        if (tracerProvider == null) throw new IllegalArgumentException("tracerProvider must not be null");
        if (meterProvider == null) throw new IllegalArgumentException("meterProvider must not be null");
        if (propagator == null) throw new IllegalArgumentException("propagator must not be null");
        return new MongoMqTelemetry(tracerProvider, meterProvider, propagator);
    }

    /**
     * From the global OpenTelemetry as it is now ({@link GlobalOpenTelemetry#getOrNoop()}:
     * the no-op, which records nothing, when no SDK was registered yet; unlike
     * {@code GlobalOpenTelemetry.get()} it does not fix the global to that). Call it after
     * the SDK was set up.
     */
    public static MongoMqTelemetry global() {
        return create(GlobalOpenTelemetry.getOrNoop());
    }

    /**
     * The producer's context of the lease's head event, extracted from its attributes with
     * this telemetry's propagator, over {@link Context#root()}: for code that claims by
     * hand, to link to it ({@code Span.fromContext(ctx).getSpanContext()}) or to run in
     * it ({@code ctx.makeCurrent()}). The root context when the event carries none.
     */
    public Context extract(Lease lease) {
        return extract(lease, 0);
    }

    /** As {@link #extract(Lease)}, for the lease's event {@code i} (0 is the head). */
    public Context extract(Lease lease, int i) {
        if (lease == null) throw new IllegalArgumentException("lease must not be null");
        return propagator.extract(Context.root(), lease.attrsAt(i), GETTER);
    }

    // ---- the queue's hooks (org.mongomq.Telemetry) -----------------------------------

    @Override
    public Sending startSend(String destination, String group, int count) {
        SpanBuilder b = tracer.spanBuilder("send " + destination).setSpanKind(SpanKind.PRODUCER)
                .setAllAttributes(base(destination)).setAttribute(OPERATION_TYPE, "send")
                .setAttribute(OPERATION_NAME, "publish");
        if (group != null) {
            b.setAttribute(GROUP, group);
        } else {
            b.setAttribute(BATCH_COUNT, (long) count);
        }
        Context context = Context.current();
        Span span = b.setParent(context).startSpan();
        Map<String, String> headers = new LinkedHashMap<>();
        propagator.inject(context.with(span), headers, SETTER);
        return new SendRun(destination, span, count, Collections.unmodifiableMap(headers));
    }

    @Override
    public Processing startProcess(String destination, Lease lease) {
        int n = lease.count();
        SpanBuilder b = tracer.spanBuilder("process " + destination).setSpanKind(SpanKind.CONSUMER)
                .setParent(Context.current()).setAllAttributes(base(destination))
                .setAttribute(OPERATION_TYPE, "process").setAttribute(OPERATION_NAME, "process")
                .setAttribute(GROUP, lease.group()).setAttribute(ATTEMPTS, (long) lease.attempts());
        if (n == 1) {
            b.setAttribute(MESSAGE_ID, Long.toString(lease.seq()));
        } else {
            b.setAttribute(BATCH_COUNT, (long) n);
        }
        for (int i = 0; i < n; i++) {
            SpanContext producer = Span.fromContext(extract(lease, i)).getSpanContext();
            if (producer.isValid()) b.addLink(producer);
        }
        consumed.add(n, base(destination).toBuilder().put(OPERATION_NAME, "claim").build());
        return new ProcessRun(destination, b.startSpan());
    }

    @Override
    public void recordOperation(String destination, String operation, double seconds, Throwable error) {
        operationDuration.record(seconds, withError(base(destination).toBuilder().put(OPERATION_NAME, operation), error));
    }

    @Override
    public Runnable wrap(Runnable task) {
        return Context.current().wrap(task);
    }

    // ---- helpers ---------------------------------------------------------------------

    private Attributes base(String destination) {
        return destinations.computeIfAbsent(destination,
                d -> Attributes.of(SYSTEM, "mongomq", DESTINATION, d));
    }

    private static Attributes withError(AttributesBuilder b, Throwable error) {
        if (error != null) b.put(ERROR_TYPE, errorType(error));
        return b.build();
    }

    /**
     * The {@code error.type} of a failure: a library error's status name
     * ({@code MQ_LEASE_LOST}, ...), else the exception's class name.
     */
    static String errorType(Throwable error) {
        if (error instanceof MongoMqException m) return m.statusName();
        return error.getClass().getName();
    }

    /** Error status, the exception event and error.type on a span. */
    private static void fail(Span span, Throwable error) {
        span.setStatus(StatusCode.ERROR, String.valueOf(error.getMessage()));
        span.recordException(error);
        span.setAttribute(ERROR_TYPE, errorType(error));
    }

    /** The binding's version, from the jar (org/mongomq/otel/version.properties, written by the build). */
    private static String version() {
        try (InputStream in = MongoMqTelemetry.class.getResourceAsStream("version.properties")) {
            if (in == null) return "unknown";
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    private final class SendRun implements Sending {
        private final String destination;
        private final Span span;
        private final int count;
        private final Map<String, String> headers;
        private final long t0 = System.nanoTime();

        SendRun(String destination, Span span, int count, Map<String, String> headers) {
            this.destination = destination;
            this.span = span;
            this.count = count;
            this.headers = headers;
        }

        @Override
        public Map<String, String> headers() {
            return headers;
        }

        @Override
        public void end(long seq, Throwable error) {
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (error != null) {
                fail(span, error);
            } else if (seq > 0) {
                span.setAttribute(MESSAGE_ID, Long.toString(seq));
            }
            span.end();
            sent.add(count, withError(base(destination).toBuilder().put(OPERATION_NAME, "publish"), error));
            operationDuration.record(seconds,
                    withError(base(destination).toBuilder().put(OPERATION_NAME, "publish"), error));
        }
    }

    private final class ProcessRun implements Processing {
        private final String destination;
        private final Span span;
        private final long t0 = System.nanoTime();

        ProcessRun(String destination, Span span) {
            this.destination = destination;
            this.span = span;
        }

        @Override
        public Scope makeCurrent() {
            return span.makeCurrent()::close;
        }

        @Override
        public void handled(Throwable failure) {
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (failure != null) fail(span, failure);
            processDuration.record(seconds, withError(base(destination).toBuilder().put(OPERATION_NAME, "process"), failure));
        }

        @Override
        public Settling settle(String operation) {
            Span settle = tracer.spanBuilder(operation + " " + destination).setSpanKind(SpanKind.CLIENT)
                    .setParent(Context.current().with(span)).setAllAttributes(base(destination))
                    .setAttribute(OPERATION_TYPE, "settle").setAttribute(OPERATION_NAME, operation).startSpan();
            return error -> {
                if (error != null) fail(settle, error);
                settle.end();
            };
        }

        @Override
        public void end() {
            span.end();
        }
    }
}
