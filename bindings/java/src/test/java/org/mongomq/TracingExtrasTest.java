package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.mongomq.otel.MongoMqTelemetry;

/**
 * Tracing beyond the CONTRACT scenarios (TracingTest): extract for code that claims by
 * hand, the async surface, turning it off, a lease-lost ack, the attribute bounds of the
 * injected keys, a failing and a duplicate publish.
 */
class TracingExtrasTest extends TracingTestBase {

    private static Map<String, String> numbered(int n) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < n; i++) m.put("k" + i, "v" + i);
        return m;
    }

    @Test
    void extractGivesHandClaimersTheProducersContext() {
        MongoMqQueue q = traced();
        q.publish("g", b("traced"));
        SpanData send = only("send");
        q.setTelemetry(null);
        q.publish("g", b("untraced"));
        q.setTelemetry(telemetry);
        try (Lease l = must(q.claim(C.maxEvents(2)))) {
            assertEquals(2, l.count());
            SpanContext head = Span.fromContext(telemetry.extract(l)).getSpanContext();
            assertTrue(head.isRemote(), "a remote context");
            assertEquals(send.getTraceId(), head.getTraceId());
            assertEquals(send.getSpanId(), head.getSpanId());
            assertEquals(head, Span.fromContext(telemetry.extract(l, 0)).getSpanContext());
            assertFalse(Span.fromContext(telemetry.extract(l, 1)).getSpanContext().isValid(), "none: the root context");
            assertEquals(Context.root(), telemetry.extract(l, 1));
            q.ack(l);
        }
        // A hand-claimer's ack records no span, only its duration.
        assertEquals(List.of(), finished("ack"));
        assertEquals(List.of(), finished("process"));
        MetricData ops = metric(metrics.collectAllMetrics(), "messaging.client.operation.duration").orElseThrow();
        assertTrue(ops.getHistogramData().getPoints().stream().anyMatch(p -> "ack".equals(p.getAttributes().get(OP_NAME))));
    }

    @Test
    void setTelemetryNullTurnsItOff() {
        MongoMqQueue q = traced();
        q.publish("g", b("one"));
        q.setTelemetry(null);
        q.publish("g", b("two"));
        try (Batch batch = new Batch()) {
            q.publish(batch.add("g", b("three")));
        }
        assertEquals(1, finished("send").size(), "only the first publish was traced");
        List<StoredEvent> peeked = q.peek(10);
        assertTrue(peeked.get(0).attrs().containsKey("traceparent"));
        assertEquals(Map.of(), peeked.get(1).attrs());
        assertEquals(Map.of(), peeked.get(2).attrs());
    }

    @Test
    void asyncPublishIsAChildOfItsCallerAndTheAsyncWorkerTraces() throws Exception {
        MongoMqQueue q = traced();
        AsyncQueue a = q.async();
        Span parent = sdk.getTracer("test").spanBuilder("P").startSpan();
        try (Scope s = parent.makeCurrent()) {
            a.publish("g", b("async")).get(WAIT_S, TimeUnit.SECONDS);
        } finally {
            parent.end();
        }
        SpanData send = only("send");
        assertEquals(parent.getSpanContext().getSpanId(), send.getParentSpanId(), "the caller's span is the parent");
        AtomicReference<SpanContext> seen = new AtomicReference<>();
        CountDownLatch handled = new CountDownLatch(1);
        try (AsyncWorker w = a.worker(WorkerOptions.defaults(), lease -> {
            seen.set(Span.current().getSpanContext());
            handled.countDown();
            return CompletableFuture.completedFuture(null);
        })) {
            assertTrue(handled.await(WAIT_S, TimeUnit.SECONDS));
        }
        SpanData process = only("process");
        assertEquals(process.getSpanContext(), seen.get(), "the handler's start ran with the process span current");
        assertNames(send, process.getLinks().get(0).getSpanContext(), "the async process span's link");
        assertEquals(1, childrenOf(process, "ack").size());
    }

    @Test
    void aLeaseLostAckIsAnErrorSettle() throws Exception {
        MongoMqQueue q = traced();
        q.publish("g", b("purged under the handler"));
        CountDownLatch handled = new CountDownLatch(1);
        runWorker(q, WorkerOptions.defaults().onError(t -> {}), handled, lease -> {
            q.purgeGroup(lease.group()); // the lease is lost: the ack will say so
            handled.countDown();
        });
        SpanData process = only("process");
        List<SpanData> acks = childrenOf(process, "ack");
        assertEquals(1, acks.size());
        assertEquals(StatusCode.ERROR, acks.get(0).getStatus().getStatusCode());
        assertEquals("MQ_LEASE_LOST", acks.get(0).getAttributes().get(ERROR_TYPE));
        assertEquals(StatusCode.UNSET, process.getStatus().getStatusCode(), "the handler itself succeeded");
        MetricData ops = metric(metrics.collectAllMetrics(), "messaging.client.operation.duration").orElseThrow();
        assertTrue(ops.getHistogramData().getPoints().stream().anyMatch(p -> "ack".equals(p.getAttributes().get(OP_NAME))
                && "MQ_LEASE_LOST".equals(p.getAttributes().get(ERROR_TYPE))));
    }

    @Test
    void tracestateIsInjectedWhileThereIsRoom() {
        MongoMqQueue q = traced();
        SpanContext remote = SpanContext.createFromRemoteParent("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331",
                TraceFlags.getSampled(), TraceState.builder().put("vendor", "x").build());
        long roomy, tight;
        try (Scope s = Context.root().with(Span.wrap(remote)).makeCurrent()) {
            roomy = q.publish("g", b("roomy"), P.attrs(numbered(14)));
            tight = q.publish("g", b("tight"), P.attrs(numbered(15)));
        }
        List<SpanData> sends = finished("send");
        assertEquals(2, sends.size());
        Map<String, String> want = numbered(14);
        want.put("traceparent", traceparent(sends.get(0)));
        want.put("tracestate", "vendor=x");
        assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(attrsOf(q, roomy).entrySet()));
        want = numbered(15);
        want.put("traceparent", traceparent(sends.get(1)));
        assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(attrsOf(q, tight).entrySet()),
                "the 17th (tracestate) is left out");
    }

    private static Map<String, String> attrsOf(MongoMqQueue q, long seq) {
        return q.peek(100).stream().filter(e -> e.seq() == seq).findFirst().orElseThrow().attrs();
    }

    /** A propagator that injects what the library refuses, beside one good key. */
    private static final TextMapPropagator HOSTILE = new TextMapPropagator() {
        @Override
        public Collection<String> fields() {
            return List.of();
        }

        @Override
        public <C> void inject(Context context, C carrier, TextMapSetter<C> setter) {
            setter.set(carrier, "has space", "v");
            setter.set(carrier, "", "empty key");
            setter.set(carrier, "k".repeat(129), "long key");
            setter.set(carrier, "big", "x".repeat(4097));
            setter.set(carrier, "big-utf8", "\u00e9".repeat(2049)); // 4098 bytes
            setter.set(carrier, "nul", "a\0b");
            setter.set(carrier, "surrogate", "\ud800");
            setter.set(carrier, "caf\u00e9", "non-ASCII key");
            setter.set(carrier, "fits", "y".repeat(4096));
        }

        @Override
        public <C> Context extract(Context context, C carrier, TextMapGetter<C> getter) {
            return context;
        }
    };

    @Test
    void injectedKeysOutsideTheBoundsAreLeftOut() {
        MongoMqTelemetry hostile = MongoMqTelemetry.create(sdk.getTracerProvider(), sdk.getMeterProvider(), HOSTILE);
        queue.setTelemetry(hostile);
        long seq = queue.publish("g", b("e"), P.attrs(Map.of("tenant", "t-1")));
        Map<String, String> want = new LinkedHashMap<>();
        want.put("tenant", "t-1");
        want.put("fits", "y".repeat(4096));
        assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(attrsOf(queue, seq).entrySet()));
        try (Batch batch = new Batch()) {
            List<Published> out = queue.publishWith(batch.add("g", b("b1")).add("h", b("b2"), P.attrs(numbered(16))));
            assertEquals(Map.of("fits", "y".repeat(4096)), attrsOf(queue, out.get(0).seq()));
            assertEquals(numbered(16), attrsOf(queue, out.get(1).seq()), "no room: its own 16 only");
        }
        assertEquals(2, finished("send").size());
        for (SpanData s : finished("send")) assertEquals(StatusCode.UNSET, s.getStatus().getStatusCode());
    }

    @Test
    void aFailedPublishIsAnErrorSpanAndCounted() {
        MongoMqQueue q = traced();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> q.publish("g", b("bad"), P.attrs(Map.of("bad key", "v"))));
        SpanData send = only("send");
        assertEquals(StatusCode.ERROR, send.getStatus().getStatusCode());
        assertEquals("java.lang.IllegalArgumentException", send.getAttributes().get(ERROR_TYPE));
        assertTrue(send.getEvents().stream().anyMatch(ev -> ev.getName().equals("exception")), e.getMessage());
        assertNull(send.getAttributes().get(MESSAGE_ID));
        Collection<MetricData> all = metrics.collectAllMetrics();
        MetricData sent = metric(all, "messaging.client.sent.messages").orElseThrow();
        Attributes point = sent.getLongSumData().getPoints().iterator().next().getAttributes();
        assertEquals("java.lang.IllegalArgumentException", point.get(ERROR_TYPE));
        assertEquals(0, q.stats().messages());
    }

    @Test
    void aDuplicatePublishIsTracedWithTheHoldersSeq() {
        MongoMqQueue q = traced();
        Published one = q.publishWith("g", b("once"), P.dedupKey("k-1"));
        Published two = q.publishWith("g", b("once"), P.dedupKey("k-1"));
        assertTrue(two.duplicate());
        List<SpanData> sends = finished("send");
        assertEquals(2, sends.size());
        for (SpanData s : sends) assertEquals(Long.toString(one.seq()), s.getAttributes().get(MESSAGE_ID));
        MetricData sent = metric(metrics.collectAllMetrics(), "messaging.client.sent.messages").orElseThrow();
        assertEquals(2, sent.getLongSumData().getPoints().stream().mapToLong(p -> p.getValue()).sum(),
                "duplicates included");
        MetricData ops = metric(metrics.collectAllMetrics(), "messaging.client.operation.duration").orElseThrow();
        assertEquals(2, ops.getHistogramData().getPoints().stream().mapToLong(HistogramPointData::getCount).sum());
    }
}
