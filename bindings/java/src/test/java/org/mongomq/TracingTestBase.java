package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.mongomq.otel.MongoMqTelemetry;

/**
 * What the tracing tests share: an OpenTelemetry SDK per test with an in-memory span
 * exporter (a simple, synchronous processor: a span is there once it ended), an in-memory
 * metric reader and the W3C trace-context propagator; {@link #traced()} sets the test's
 * queue's telemetry from it; helpers that pick spans and metrics out.
 */
abstract class TracingTestBase extends QueueTestBase {
    /** A bound on every wait: a test that needs it has failed, not hung. */
    static final long WAIT_S = 60;

    // The names as bindings/CONTRACT.md spells them (not the implementation's constants).
    static final AttributeKey<String> SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> OP_TYPE = AttributeKey.stringKey("messaging.operation.type");
    static final AttributeKey<String> OP_NAME = AttributeKey.stringKey("messaging.operation.name");
    static final AttributeKey<String> MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
    static final AttributeKey<Long> BATCH_COUNT = AttributeKey.longKey("messaging.batch.message_count");
    static final AttributeKey<String> GROUP = AttributeKey.stringKey("messaging.mongomq.message.group");
    static final AttributeKey<Long> ATTEMPTS = AttributeKey.longKey("messaging.mongomq.message.attempts");
    static final AttributeKey<String> ERROR_TYPE = AttributeKey.stringKey("error.type");

    InMemorySpanExporter spans;
    InMemoryMetricReader metrics;
    OpenTelemetrySdk sdk;
    MongoMqTelemetry telemetry;

    @BeforeEach
    void openSdk() {
        spans = InMemorySpanExporter.create();
        metrics = InMemoryMetricReader.create();
        sdk = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                .setMeterProvider(SdkMeterProvider.builder().registerMetricReader(metrics).build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                .build();
        telemetry = MongoMqTelemetry.create(sdk);
    }

    @AfterEach
    void closeSdk() {
        sdk.close();
    }

    /** The test's queue, traced through the test's SDK. */
    MongoMqQueue traced() {
        queue.setTelemetry(telemetry);
        return queue;
    }

    /** The queue's destination name, "{db}.{prefix}". */
    String dest() {
        return db + ".q";
    }

    /** The finished spans named {@code operation + " " + dest()}, in start order. */
    List<SpanData> finished(String operation) {
        return spans.getFinishedSpanItems().stream().filter(s -> s.getName().equals(operation + " " + dest()))
                .sorted(Comparator.comparingLong(SpanData::getStartEpochNanos)).toList();
    }

    /** The one finished span of {@code operation}. */
    SpanData only(String operation) {
        List<SpanData> l = finished(operation);
        assertEquals(1, l.size(), "one " + operation + " span: " + spans.getFinishedSpanItems());
        return l.get(0);
    }

    /** The finished {@code operation} spans whose parent is {@code parent}. */
    List<SpanData> childrenOf(SpanData parent, String operation) {
        return finished(operation).stream().filter(s -> s.getParentSpanId().equals(parent.getSpanId())
                && s.getTraceId().equals(parent.getTraceId())).toList();
    }

    static void assertKind(SpanKind want, SpanData s) {
        assertEquals(want, s.getKind(), s.getName());
    }

    /** The W3C traceparent naming the span, with its flags (sampled; the SDK also sets random, 0x02). */
    static String traceparent(SpanData s) {
        return "00-" + s.getTraceId() + "-" + s.getSpanId() + "-" + s.getSpanContext().getTraceFlags().asHex();
    }

    /** The link (or extracted context) names the span: its trace and span ids. */
    static void assertNames(SpanData want, SpanContext got, String what) {
        assertEquals(want.getTraceId(), got.getTraceId(), what + ": trace id");
        assertEquals(want.getSpanId(), got.getSpanId(), what + ": span id");
    }

    /** The attributes every span and metric of the queue has. */
    void assertBase(SpanData s) {
        assertEquals("mongomq", s.getAttributes().get(SYSTEM), s.getName());
        assertEquals(dest(), s.getAttributes().get(DESTINATION), s.getName());
        assertEquals("mongomq", s.getInstrumentationScopeInfo().getName());
        assertEquals("0.8.0", s.getInstrumentationScopeInfo().getVersion());
    }

    /** The metric named {@code name}, collected now. */
    static Optional<MetricData> metric(Collection<MetricData> all, String name) {
        return all.stream().filter(m -> m.getName().equals(name)).findFirst();
    }

    /**
     * Runs a worker with {@code options} on the test's queue until {@code handled} counted
     * down (bounded), then closes it (stop and wait: every span of it has ended).
     */
    void runWorker(MongoMqQueue q, WorkerOptions options, CountDownLatch handled, LeaseHandler handler)
            throws InterruptedException {
        try (Worker w = q.worker(options.shutdownTimeout(Duration.ofSeconds(WAIT_S)), handler)) {
            assertTrue(handled.await(WAIT_S, TimeUnit.SECONDS), "the handler ran: " + handled.getCount() + " left");
        }
    }
}
