package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.metrics.data.HistogramPointData;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.mongomq.otel.MongoMqTelemetry;

/**
 * The Tracing (issue 22) scenarios of bindings/CONTRACT.md, by name: the spans, their
 * attributes and links through the SDK's in-memory span exporter, the metrics through its
 * in-memory metric reader, and a queue without telemetry (or with the global no-op). More
 * in TracingExtrasTest.
 */
class TracingTest extends TracingTestBase {

    private static final WorkerOptions ONE = WorkerOptions.defaults().concurrency(1);

    @Test
    void tracePublishProcess() throws Exception {
        MongoMqQueue q = traced();
        Span parent = sdk.getTracer("test").spanBuilder("P").startSpan();
        long seq;
        try (Scope s = parent.makeCurrent()) {
            seq = q.publish("g", b("e1"), P.attrs(Map.of("tenant", "t-1")));
        } finally {
            parent.end();
        }
        SpanData send = only("send");
        assertKind(SpanKind.PRODUCER, send);
        assertEquals(parent.getSpanContext().getTraceId(), send.getTraceId(), "in P's trace");
        assertEquals(parent.getSpanContext().getSpanId(), send.getParentSpanId(), "a child of P");
        assertBase(send);
        assertEquals("send", send.getAttributes().get(OP_TYPE));
        assertEquals("publish", send.getAttributes().get(OP_NAME));
        assertEquals(Long.toString(seq), send.getAttributes().get(MESSAGE_ID));
        assertEquals("g", send.getAttributes().get(GROUP));
        assertNull(send.getAttributes().get(BATCH_COUNT), "a single publish has no batch count");

        List<StoredEvent> peeked = q.peek(10);
        assertEquals(1, peeked.size());
        Map<String, String> want = new LinkedHashMap<>();
        want.put("tenant", "t-1");
        want.put("traceparent", traceparent(send));
        assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(peeked.get(0).attrs().entrySet()),
                "the user's attribute, then the send span's traceparent");

        AtomicReference<SpanContext> seen = new AtomicReference<>();
        CountDownLatch handled = new CountDownLatch(1);
        runWorker(q, ONE, handled, lease -> {
            seen.set(Span.current().getSpanContext());
            handled.countDown();
        });
        SpanData process = only("process");
        assertKind(SpanKind.CONSUMER, process);
        assertNotEquals(parent.getSpanContext().getTraceId(), process.getTraceId(), "a trace other than P's");
        assertFalse(process.getParentSpanContext().isValid(), "no parent: the worker's own context is none");
        assertEquals(1, process.getLinks().size(), "one link");
        SpanContext link = process.getLinks().get(0).getSpanContext();
        assertEquals(send.getTraceId(), link.getTraceId());
        assertEquals(send.getSpanId(), link.getSpanId());
        assertBase(process);
        assertEquals("process", process.getAttributes().get(OP_TYPE));
        assertEquals("process", process.getAttributes().get(OP_NAME));
        assertEquals(Long.toString(seq), process.getAttributes().get(MESSAGE_ID));
        assertEquals("g", process.getAttributes().get(GROUP));
        assertEquals(1L, process.getAttributes().get(ATTEMPTS));
        assertEquals(process.getSpanContext(), seen.get(), "the handler ran with the process span current");
        assertEquals(StatusCode.UNSET, process.getStatus().getStatusCode());

        SpanData ack = only("ack");
        assertKind(SpanKind.CLIENT, ack);
        assertEquals(process.getTraceId(), ack.getTraceId());
        assertEquals(process.getSpanId(), ack.getParentSpanId(), "a child of the process span");
        assertBase(ack);
        assertEquals("settle", ack.getAttributes().get(OP_TYPE));
        assertEquals("ack", ack.getAttributes().get(OP_NAME));
        assertEquals(List.of(), finished("nack"));
    }

    @Test
    void traceHandlerError() throws Exception {
        MongoMqQueue q = traced();
        long seq = q.publish("g", b("flaky"));
        SpanData send = only("send");
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch handled = new CountDownLatch(1);
        runWorker(q, ONE.backoffBase(Duration.ofMillis(10)).onError(t -> {}), handled, lease -> {
            if (calls.incrementAndGet() == 1) throw new IllegalStateException("first delivery fails");
            handled.countDown();
        });
        assertEquals(2, calls.get());
        List<SpanData> processes = finished("process");
        assertEquals(2, processes.size(), "two process spans: " + processes);
        for (SpanData p : processes) {
            assertEquals(1, p.getLinks().size());
            assertNames(send, p.getLinks().get(0).getSpanContext(), "both link to the send span");
            assertEquals(Long.toString(seq), p.getAttributes().get(MESSAGE_ID));
        }
        SpanData first = processes.get(0), second = processes.get(1);
        assertEquals(1L, first.getAttributes().get(ATTEMPTS));
        assertEquals(StatusCode.ERROR, first.getStatus().getStatusCode());
        assertTrue(first.getEvents().stream().anyMatch(e -> e.getName().equals("exception")), "an exception event");
        assertEquals("java.lang.IllegalStateException", first.getAttributes().get(ERROR_TYPE));
        List<SpanData> nacks = childrenOf(first, "nack");
        assertEquals(1, nacks.size(), "the first is followed by a nack: " + spans.getFinishedSpanItems());
        assertKind(SpanKind.CLIENT, nacks.get(0));
        assertEquals("settle", nacks.get(0).getAttributes().get(OP_TYPE));
        assertEquals("nack", nacks.get(0).getAttributes().get(OP_NAME));
        assertEquals(List.of(), childrenOf(first, "ack"));

        assertEquals(2L, second.getAttributes().get(ATTEMPTS));
        assertEquals(StatusCode.UNSET, second.getStatus().getStatusCode());
        assertNull(second.getAttributes().get(ERROR_TYPE));
        assertEquals(1, childrenOf(second, "ack").size(), "the second is followed by an ack");
        assertEquals(List.of(), childrenOf(second, "nack"));
    }

    @Test
    void traceBatchPublish() throws Exception {
        MongoMqQueue q = traced();
        long first;
        try (Batch batch = new Batch()) {
            batch.add("g1", b("a")).add("g1", b("b")).add("g2", b("c"));
            first = q.publish(batch);
        }
        SpanData send = only("send");
        assertKind(SpanKind.PRODUCER, send);
        assertEquals(3L, send.getAttributes().get(BATCH_COUNT));
        assertNull(send.getAttributes().get(MESSAGE_ID), "a batch names no message id");
        assertEquals("publish", send.getAttributes().get(OP_NAME));
        List<StoredEvent> peeked = q.peek(10);
        assertEquals(3, peeked.size());
        for (StoredEvent e : peeked) {
            assertEquals(Map.of("traceparent", traceparent(send)), e.attrs(), "event " + e.seq() + " names the send span");
        }

        ConcurrentLinkedQueue<Integer> counts = new ConcurrentLinkedQueue<>();
        CountDownLatch handled = new CountDownLatch(3);
        runWorker(q, ONE.maxEvents(3), handled, lease -> {
            counts.add(lease.count());
            for (int i = 0; i < lease.count(); i++) handled.countDown();
        });
        assertEquals(Set.of(1, 2), Set.copyOf(counts), "group g1's two as one lease, g2's one");
        List<SpanData> processes = finished("process");
        assertEquals(2, processes.size());
        SpanData pair = processes.stream().filter(p -> "g1".equals(p.getAttributes().get(GROUP))).findFirst().orElseThrow();
        assertEquals(2, pair.getLinks().size(), "one link per event");
        for (LinkData l : pair.getLinks()) assertNames(send, l.getSpanContext(), "a link of the pair");
        assertEquals(2L, pair.getAttributes().get(BATCH_COUNT));
        assertNull(pair.getAttributes().get(MESSAGE_ID), "a batch lease names no message id");
        SpanData single = processes.stream().filter(p -> "g2".equals(p.getAttributes().get(GROUP))).findFirst().orElseThrow();
        assertEquals(1, single.getLinks().size());
        assertEquals(Long.toString(first + 2), single.getAttributes().get(MESSAGE_ID));
        assertNull(single.getAttributes().get(BATCH_COUNT));
    }

    @Test
    void traceAttrsKept() {
        MongoMqQueue q = traced();
        Map<String, String> sixteen = new LinkedHashMap<>();
        for (int i = 0; i < 16; i++) sixteen.put("k" + i, "v" + i);
        long full = q.publish("g", b("full"), P.attrs(sixteen));
        String own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        long mine = q.publish("g", b("mine"), P.attrs(Map.of("traceparent", own)));
        Map<Long, StoredEvent> bySeq = q.peek(10).stream().collect(Collectors.toMap(StoredEvent::seq, e -> e));
        assertEquals(new ArrayList<>(sixteen.entrySet()), new ArrayList<>(bySeq.get(full).attrs().entrySet()),
                "exactly its own 16: nothing injected");
        assertEquals(Map.of("traceparent", own), bySeq.get(mine).attrs(), "the user's traceparent as given");
        List<SpanData> sends = finished("send");
        assertEquals(2, sends.size(), "both publishes traced");
        for (SpanData s : sends) assertEquals(StatusCode.UNSET, s.getStatus().getStatusCode());
    }

    @Test
    void traceMetrics() throws Exception {
        MongoMqQueue q = traced();
        for (int i = 1; i <= 3; i++) q.publish("g" + i, b("m" + i));
        AtomicBoolean failed = new AtomicBoolean();
        CountDownLatch handled = new CountDownLatch(3);
        runWorker(q, ONE.backoffBase(Duration.ofMillis(10)).onError(t -> {}), handled, lease -> {
            if (failed.compareAndSet(false, true)) throw new IllegalStateException("fails once");
            handled.countDown();
        });
        Collection<MetricData> all = metrics.collectAllMetrics();

        MetricData sent = metric(all, "messaging.client.sent.messages").orElseThrow();
        assertEquals("{message}", sent.getUnit());
        assertEquals(3, sumOf(sent), "3 events published");
        for (LongPointData p : sent.getLongSumData().getPoints()) {
            assertEquals(dest(), p.getAttributes().get(DESTINATION));
            assertEquals("publish", p.getAttributes().get(OP_NAME));
        }

        MetricData consumed = metric(all, "messaging.client.consumed.messages").orElseThrow();
        assertEquals(4, sumOf(consumed), "4 deliveries: one failed, then redelivered");
        for (LongPointData p : consumed.getLongSumData().getPoints()) {
            assertEquals(dest(), p.getAttributes().get(DESTINATION));
            assertEquals("mongomq", p.getAttributes().get(SYSTEM));
            assertEquals("claim", p.getAttributes().get(OP_NAME));
        }

        MetricData ops = metric(all, "messaging.client.operation.duration").orElseThrow();
        assertEquals("s", ops.getUnit());
        Set<String> names = ops.getHistogramData().getPoints().stream().map(p -> p.getAttributes().get(OP_NAME))
                .collect(Collectors.toSet());
        assertEquals(Set.of("publish", "ack", "nack"), names);
        Map<String, Long> countByName = ops.getHistogramData().getPoints().stream()
                .collect(Collectors.groupingBy(p -> p.getAttributes().get(OP_NAME), Collectors.summingLong(HistogramPointData::getCount)));
        assertEquals(Map.of("publish", 3L, "ack", 3L, "nack", 1L), countByName);

        MetricData process = metric(all, "messaging.process.duration").orElseThrow();
        assertEquals("s", process.getUnit());
        long runs = process.getHistogramData().getPoints().stream().mapToLong(HistogramPointData::getCount).sum();
        assertEquals(4, runs, "4 handler runs");
        assertTrue(process.getHistogramData().getPoints().stream().allMatch(p -> "process".equals(p.getAttributes().get(OP_NAME))));
        long failedRuns = process.getHistogramData().getPoints().stream()
                .filter(p -> p.getAttributes().get(ERROR_TYPE) != null).mapToLong(HistogramPointData::getCount).sum();
        assertEquals(1, failedRuns, "one of them with error.type");
        assertTrue(process.getHistogramData().getPoints().stream().filter(p -> p.getAttributes().get(ERROR_TYPE) != null)
                .allMatch(p -> "java.lang.IllegalStateException".equals(p.getAttributes().get(ERROR_TYPE))));
    }

    private static long sumOf(MetricData counter) {
        return counter.getLongSumData().getPoints().stream().mapToLong(LongPointData::getValue).sum();
    }

    @Test
    void traceOffWithoutSdk() throws Exception {
        assertFalse(GlobalOpenTelemetry.isSet(), "no global SDK in this JVM (nothing here may register one)");
        // 1. No telemetry at all; 2. the global providers, which are the API's no-op.
        try (Client c = Client.connect(uri()); MongoMqQueue global = sameQueue(c)) {
            global.setTelemetry(MongoMqTelemetry.global());
            for (MongoMqQueue q : List.of(queue, global)) {
                String which = q == queue ? "no telemetry" : "global no-op";
                Span parent = sdk.getTracer("test").spanBuilder("P").startSpan(); // a real span: nothing may inject it
                try (Scope s = parent.makeCurrent()) {
                    q.publish("g", b(which), P.attrs(Map.of("tenant", "t-1")));
                    try (Batch batch = new Batch()) {
                        q.publish(batch.add("g", b(which + " batch")));
                    }
                    q.async().publish("g", b(which + " async")).get();
                } finally {
                    parent.end();
                }
                for (StoredEvent e : q.peek(10)) {
                    assertFalse(e.attrs().containsKey("traceparent"), which + ": no traceparent on " + e.seq());
                }
                assertEquals(Map.of("tenant", "t-1"), q.peek(1).get(0).attrs(), which);
                AtomicInteger recording = new AtomicInteger();
                AtomicInteger valid = new AtomicInteger();
                CountDownLatch handled = new CountDownLatch(3);
                runWorker(q, ONE, handled, lease -> {
                    if (Span.current().isRecording()) recording.incrementAndGet();
                    if (Span.current().getSpanContext().isValid()) valid.incrementAndGet();
                    handled.countDown();
                });
                assertEquals(0, recording.get(), which + ": no recording span current in the handler");
                assertEquals(0, valid.get(), which + ": no span at all current in the handler");
                assertEquals(0, q.stats().messages(), which + ": all acked");
            }
        }
        assertNotNull(spans.getFinishedSpanItems());
        assertEquals(Set.of("P"), spans.getFinishedSpanItems().stream().map(SpanData::getName).collect(Collectors.toSet()),
                "only the test's own spans were recorded");
        assertTrue(metrics.collectAllMetrics().isEmpty(), "no metric recorded");
    }
}
