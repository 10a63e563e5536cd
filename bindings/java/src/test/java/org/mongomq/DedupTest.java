package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The Deduplication (0.6.0) scenarios of bindings/CONTRACT.md (dedupSameKey,
 * dedupDifferentKeys, dedupRetryAfterLostReply, dedupBatch, dedupScopeGroup, dedupBadKey)
 * and what they do not show: what publish(...) and publish(Batch) return for a
 * duplicate, keys across queue objects, the window on a manual clock, the options'
 * value semantics.
 */
class DedupTest extends QueueTestBase {

    private static void badArg(String name, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, name);
        assertTrue(e.getMessage().contains(name), "the message names " + name + ": " + e.getMessage());
    }

    private Published keyed(MongoMqQueue q, String group, String event, String key) {
        return q.publishWith(group, b(event), P.dedupKey(key));
    }

    private static void added(String what, Published p) {
        assertFalse(p.duplicate(), what + ": not a duplicate, got " + p);
        assertTrue(p.seq() > 0, what + ": a seq, got " + p);
    }

    private static void duplicateOf(String what, long seq, Published p) {
        assertEquals(new Published(seq, true), p, what + ": a duplicate of seq " + seq);
    }

    @Test
    void dedupSameKey() {
        Published first = keyed(queue, "A", "a", "k");
        added("first publish with k", first);
        duplicateOf("k again, in group B", first.seq(), keyed(queue, "B", "b", "k"));
        assertEquals(1, queue.stats().messages(), "the duplicate added nothing");

        Lease l = must(queue.claim());
        assertEquals(List.of("A", first.seq(), "a"), List.of(l.group(), l.seq(), s(l.event())));
        queue.ack(l);
        assertFalse(queue.claim().isPresent(), "B's publish added nothing");
        // Acked, and within the 5-minute window: still taken.
        duplicateOf("k a third time, after the ack", first.seq(), keyed(queue, "A", "c", "k"));
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void dedupDifferentKeys() {
        Published p1 = keyed(queue, "g", "e1", "k1");
        Published p2 = keyed(queue, "g", "e2", "k2");
        added("k1", p1);
        added("k2", p2);
        assertTrue(p2.seq() > p1.seq(), "seqs in publish order: " + p1 + ", " + p2);
        assertEquals(2, queue.stats().messages());
        Lease l1 = must(queue.claim());
        assertEquals(List.of(p1.seq(), "e1"), List.of(l1.seq(), s(l1.event())));
        queue.ack(l1);
        Lease l2 = must(queue.claim());
        assertEquals(List.of(p2.seq(), "e2"), List.of(l2.seq(), s(l2.event())));
        queue.ack(l2);
        assertFalse(queue.claim().isPresent());
    }

    @Test
    void dedupRetryAfterLostReply() {
        // Unique per run: the test server answers each step-down key's insert with an
        // error once, for the life of the server.
        String key = "mongomq-test-stepdown-java-" + UUID.randomUUID();
        byte[] event = b("charge order 7 \0 once");
        Published first = null;
        try {
            first = queue.publishWith("g", event, P.dedupKey(key));
            // A server without the test server's hook: the retry must be its duplicate.
            System.err.println("dedupRetryAfterLostReply: the server has no step-down hook; first publish " + first);
            added("first publish", first);
        } catch (MongoMqConnectException e) {
            assertEquals(Status.ERR_CONNECT, e.status());
        }
        Published retry = queue.publishWith("g", event, P.dedupKey(key));
        assertTrue(retry.duplicate(), "the retry is a duplicate: " + retry);
        if (first != null) assertEquals(first.seq(), retry.seq(), "of the first publish");
        assertEquals(1, queue.stats().messages(), "exactly one event");
        Lease l = must(queue.claim());
        assertEquals("g", l.group());
        assertEquals(retry.seq(), l.seq(), "the claimed event is the retry's seq");
        assertEquals(s(event), s(l.event()));
        queue.ack(l);
        assertFalse(queue.claim().isPresent(), "exactly one event");
    }

    @Test
    void dedupBatch() {
        List<Published> out;
        try (Batch batch = new Batch()) {
            batch.add("g1", b("g1a"), P.dedupKey("a"))
                    .add("g1", b("g1b"), P.dedupKey("b"))
                    .add("g2", b("g2a"), P.dedupKey("a"))
                    .add("g2", b("g2-"));
            out = queue.publishWith(batch);
        }
        assertEquals(4, out.size());
        long first = out.get(0).seq();
        assertEquals(new Published(first, false), out.get(0), "event 0 added");
        assertEquals(new Published(later(first, 1), false), out.get(1), "event 1 added");
        // g2's: with one partition first + 3; with P in g2's partition, after the seq its
        // duplicate took.
        if (PARTITIONS == 1) assertEquals(new Published(first + 3, false), out.get(3), "event 3 added");
        assertFalse(out.get(3).duplicate(), "event 3 added");
        assertTrue(inPartitionOf(out.get(3).seq(), "g2"), "event 3 is g2's: " + out.get(3));
        duplicateOf("the third event (key a again)", first, out.get(2));

        List<Published> again;
        try (Batch batch = new Batch()) {
            batch.add("g1", b("g1b again"), P.dedupKey("b")).add("g3", b("g3c"), P.dedupKey("c"));
            again = queue.publishWith(batch);
        }
        assertEquals(2, again.size());
        duplicateOf("the second batch's first event (key b)", out.get(1).seq(), again.get(0));
        added("the second batch's second event (key c)", again.get(1));
        assertEquals(4, queue.stats().messages());
        List<StoredEvent> added = new ArrayList<>(queue.peek(10));
        // Lowest seq first: with P partitions in order within each group only.
        if (PARTITIONS > 1) added.sort(java.util.Comparator.comparing(StoredEvent::group));
        assertEquals(List.of("g1:g1a", "g1:g1b", "g2:g2-", "g3:g3c"),
                added.stream().map(e -> e.group() + ":" + s(e.event())).collect(Collectors.toList()),
                "the added events, with their bytes");
    }

    @Test
    void dedupScopeGroup() {
        queue.setDedupScope(DedupScope.GROUP);
        Published a = keyed(queue, "A", "a", "k");
        Published bb = keyed(queue, "B", "b", "k");
        added("k in A", a);
        added("k in B", bb);
        assertNotEquals(a.seq(), bb.seq());
        assertEquals(2, queue.stats().messages());
        duplicateOf("k again in A", a.seq(), keyed(queue, "A", "a2", "k"));
        assertEquals(2, queue.stats().messages());
    }

    @Test
    void dedupBadKey() {
        // "" is a key (null is none): the library refuses it, naming dedup_key.
        badArg("dedup_key", () -> queue.publishWith("g", b("x"), P.dedupKey("")));
        badArg("dedup_key", () -> queue.publish("g", b("x"), P.dedupKey("k".repeat(513))));
        badArg("dedup_key", () -> queue.publishWith("g", b("x"), P.dedupKey("k".repeat(513))));
        try (Batch batch = new Batch()) {
            badArg("dedup_key", () -> batch.add("g", b("x"), P.dedupKey("")));
            badArg("dedup_key", () -> batch.add("g", b("x"), P.dedupKey("k".repeat(513))));
            assertEquals(0, batch.size(), "nothing added");
        }
        badArg("dedupKey", () -> P.dedupKey("a\0b"));
        badArg("dedup_window", () -> queue.setDedupWindow(Duration.ofMillis(500)));
        badArg("dedup_window", () -> queue.setDedupWindow(Duration.ofDays(8)));
        badArg("window", () -> queue.setDedupWindow(null));
        badArg("scope", () -> queue.setDedupScope(null));
        assertEquals(0, queue.stats().messages(), "nothing was published");
    }

    // ---- beyond the contract -----------------------------------------------------------

    /** publish(...) and publish(Batch) keep their long: a duplicate's is the key's event, no exception. */
    @Test
    void dedupPlainReturns() {
        long seq = queue.publish("g", b("x"), P.dedupKey("k"));
        assertEquals(seq, queue.publish("h", "y", P.dedupKey("k")), "a duplicate returns the key's seq");
        long first;
        try (Batch batch = new Batch()) {
            batch.add("g", b("dup"), P.dedupKey("k")).add("g", "new", P.dedupKey("k2"));
            first = queue.publish(batch);
        }
        assertTrue(first > seq, "the batch's first seq, positive: " + first);
        List<StoredEvent> g = queue.peek("g", 10);
        assertEquals(List.of(seq, later(first, 1)), g.stream().map(StoredEvent::seq).collect(Collectors.toList()));
        Published plain = queue.publishWith("g", "z", P);
        assertFalse(plain.duplicate(), "without a key, never a duplicate");
        // Null is no key: the same publish twice adds two events.
        added("no key", queue.publishWith("g", "z", P.dedupKey(null)));
        assertEquals(4, queue.stats().messages());
    }

    /** A key is the queue's, not the queue object's; a key of 512 bytes of UTF-8 is a key. */
    @Test
    void dedupAcrossHandles() {
        String key = "é".repeat(256); // 512 bytes
        try (Client c2 = Client.connect(uri()); MongoMqQueue q2 = sameQueue(c2)) {
            Published p = keyed(queue, "g", "x", key);
            added("a key of 512 bytes", p);
            duplicateOf("the key through another queue object", p.seq(), keyed(q2, "g", "x", key));
        }
        // A batch republished: its keys are taken by its first publish.
        try (Batch batch = new Batch().add("b", "1", P.dedupKey("once"))) {
            List<Published> first = queue.publishWith(batch);
            added("the batch's first publish", first.get(0));
            assertEquals(List.of(new Published(first.get(0).seq(), true)), queue.publishWith(batch), "published again");
        }
    }

    /**
     * On a manual clock: an acked event's key is taken within the window and free past it;
     * a key whose event is still queued stays taken past the window.
     */
    @Test
    void dedupWindowOnManualClock() {
        Instant start = Instant.parse("2032-03-04T05:06:07Z");
        try (ManualClock clock = new ManualClock(start)) {
            queue.setClock(clock);
            queue.setDedupWindow(Duration.ofSeconds(10));
            Published acked = keyed(queue, "a", "x", "acked");
            Published queued = keyed(queue, "b", "y", "queued");
            Lease l = must(queue.claim(in("a")));
            assertEquals(acked.seq(), l.seq());
            queue.ack(l);
            clock.advance(Duration.ofSeconds(9));
            duplicateOf("the acked key within the window", acked.seq(), keyed(queue, "a", "x", "acked"));
            clock.advance(Duration.ofSeconds(2));
            Published again = keyed(queue, "a", "x", "acked");
            added("the acked key past the window", again);
            assertTrue(again.seq() > queued.seq(), "a new seq");
            duplicateOf("the queued key past the window", queued.seq(), keyed(queue, "b", "y", "queued"));
            assertEquals(2, queue.stats().messages());
        }
    }

    /** The options are values; the limits are the header's; the scope's constants. */
    @Test
    void dedupOptionsAndLimits() {
        assertEquals(Optional.empty(), P.dedupKey());
        assertEquals(Optional.of("k"), P.dedupKey("k").dedupKey());
        assertEquals(P.priority(2).dedupKey("k"), P.dedupKey("k").priority(2));
        assertEquals(P.priority(2).dedupKey("k").hashCode(), P.dedupKey("k").priority(2).hashCode());
        assertNotEquals(P.dedupKey("k"), P.dedupKey("k2"));
        assertEquals(P, P.dedupKey("k").dedupKey(null));
        assertTrue(P.dedupKey("k").toString().contains("dedupKey=k"), P.dedupKey("k").toString());
        assertEquals("MQ_DUPLICATE", Status.DUPLICATE.cName());
        assertEquals(0, DedupScope.QUEUE.code());
        assertEquals(1, DedupScope.GROUP.code());
        queue.setDedupWindow(Duration.ofSeconds(1));
        queue.setDedupWindow(Duration.ofDays(7));
        queue.setDedupScope(DedupScope.QUEUE);
    }
}
