package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The Attributes (0.7.0) scenario of bindings/CONTRACT.md (attributesRoundTrip), and what
 * it does not show: a NUL or an unpaired surrogate refused before C, naming the
 * attribute; the library's limits; the options' copy and value semantics; the async
 * publishes passing them through.
 */
class AttrsTest extends QueueTestBase {

    private static void badArg(String mention, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, mention);
        assertTrue(e.getMessage().contains(mention), "the message names " + mention + ": " + e.getMessage());
    }

    /** A LinkedHashMap of k1, v1, k2, v2, ... (Map.of has no order). */
    private static Map<String, String> ordered(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put(kv[i], kv[i + 1]);
        return m;
    }

    /** Equal entries in the same order. */
    private static void sameAttrs(Map<String, String> want, Map<String, String> got, String what) {
        assertEquals(new ArrayList<>(want.entrySet()), new ArrayList<>(got.entrySet()), what);
    }

    @Test
    void attributesRoundTrip() {
        Map<String, String> attrs = ordered("content-type", "application/json", "tenant.id", "t-42", "empty", "");
        long seq = queue.publish("g", b("{\"n\":1}"), P.attrs(attrs));
        for (int delivery = 1; delivery <= 2; delivery++) {
            Lease l = must(queue.claim());
            assertEquals(seq, l.seq());
            assertEquals(delivery, l.attempts());
            sameAttrs(attrs, l.attrs(), "delivery " + delivery);
            sameAttrs(attrs, l.attrsAt(0), "delivery " + delivery + ", attrsAt(0)");
            assertEquals(Optional.of("t-42"), l.attr("tenant.id"));
            assertEquals(Optional.of(""), l.attr("empty"));
            assertEquals(Optional.empty(), l.attr("absent"));
            assertThrows(UnsupportedOperationException.class, () -> l.attrs().put("x", "y"), "unmodifiable");
            if (delivery == 1) queue.nack(l);
            else queue.ack(l);
        }

        // A batch: each event keeps its own, a batch lease gives each its own.
        List<Map<String, String>> batchAttrs = List.of(ordered("n", "1"), Map.of(), ordered("n", "2", "extra", "yes"));
        long first;
        try (Batch batch = new Batch()) {
            for (int i = 0; i < 3; i++) batch.add("b", b("b" + i), P.attrs(batchAttrs.get(i)));
            first = queue.publish(batch);
        }
        List<StoredEvent> peeked = queue.peek("b", 10);
        assertEquals(3, peeked.size());
        for (int i = 0; i < 3; i++) {
            assertEquals(later(first, i), peeked.get(i).seq());
            sameAttrs(batchAttrs.get(i), peeked.get(i).attrs(), "peek " + i);
        }
        Lease l = must(queue.claim(C.maxEvents(3)));
        assertEquals(3, l.count());
        for (int i = 0; i < 3; i++) sameAttrs(batchAttrs.get(i), l.attrsAt(i), "batch lease event " + i);
        sameAttrs(batchAttrs.get(0), l.attrs(), "batch lease head");
        assertEquals(Optional.empty(), l.attr("extra"), "extra is event 2's, not the head's");
        assertThrows(IndexOutOfBoundsException.class, () -> l.attrsAt(3));
        queue.ack(l);

        // The dead letters show them, a requeue keeps them.
        queue.setMaxAttempts(1);
        Map<String, String> deadAttrs = ordered("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k", "v");
        long dseq = queue.publish("d", b("poison"), P.attrs(deadAttrs));
        queue.nack(must(queue.claim()));
        assertFalse(queue.claim().isPresent(), "the second delivery goes to the dead letters");
        List<StoredEvent> dead = queue.deadList(10);
        assertEquals(1, dead.size());
        assertEquals(dseq, dead.get(0).seq());
        sameAttrs(deadAttrs, dead.get(0).attrs(), "dead letter");
        queue.setMaxAttempts(0);
        long again = queue.deadRequeue(dseq);
        Lease r = must(queue.claim());
        assertEquals(again, r.seq());
        sameAttrs(deadAttrs, r.attrs(), "requeued");
        queue.ack(r);

        // Bad attributes: the argument error, naming them, and nothing published. (A Map
        // cannot hold a key twice.)
        Map<String, String> many = new LinkedHashMap<>();
        for (int i = 0; i <= 16; i++) many.put("k" + i, "v");
        Map<String, Map<String, String>> bad = new LinkedHashMap<>();
        bad.put("16", many);
        bad.put("bad key", ordered("ok", "1", "bad key", "2"));
        bad.forEach((mention, a) -> {
            badArg(mention, () -> queue.publish("bad", b("x"), P.attrs(a)));
            try (Batch batch = new Batch()) {
                badArg(mention, () -> batch.add("bad", b("x"), P.attrs(a)));
                assertEquals(0, batch.size(), "a refused add adds nothing");
            }
        });
        assertEquals(0, queue.stats().messages(), "nothing was published");
    }

    @Test
    void refusedBeforeC() {
        badArg("key 1 \"b\\u0000c\" contains a NUL character", () -> P.attrs(ordered("a", "1", "b\0c", "2")));
        badArg("the value of \"a\" contains a NUL character", () -> P.attrs(ordered("a", "x\0")));
        badArg("the value of \"a\" contains an unpaired surrogate", () -> P.attrs(ordered("a", "\uD83C")));
        badArg("the value of \"a\" is null", () -> P.attrs(ordered("a", null)));
        Map<String, String> nullKey = new LinkedHashMap<>();
        nullKey.put(null, "v");
        badArg("key 0 is null", () -> P.attrs(nullKey));
        badArg("attrs must not be null", () -> P.attrs(null));
    }

    @Test
    void libraryLimits() {
        badArg("attrs[0].key", () -> queue.publish("g", b("x"), P.attrs(ordered("", "v"))));
        badArg("attrs[0].key", () -> queue.publish("g", b("x"), P.attrs(ordered("k".repeat(129), "v"))));
        badArg("attrs[0]", () -> queue.publish("g", b("x"), P.attrs(ordered("k", "v".repeat(4097)))));
        assertEquals(0, queue.stats().messages());
        queue.publish("g", b("x"), P.attrs(ordered("k".repeat(128), "v".repeat(4096))));
        queue.publish("g", b("y"), P.attrs(ordered("emoji", "grüße ✓ 🎉")));
        Lease l = must(queue.claim(C.maxEvents(10)));
        assertEquals(2, l.count());
        assertEquals("v".repeat(4096), l.attr("k".repeat(128)).orElseThrow());
        assertEquals(Map.of("emoji", "grüße ✓ 🎉"), l.attrsAt(1), "characters beyond the BMP round-trip");
        queue.ack(l);
    }

    @Test
    void optionsCopyAndValue() {
        Map<String, String> m = ordered("a", "1", "b", "2");
        PublishOptions o = P.attrs(m);
        m.put("c", "3");
        sameAttrs(ordered("a", "1", "b", "2"), o.attrs(), "a copy: changing the map changes nothing");
        assertThrows(UnsupportedOperationException.class, () -> o.attrs().put("x", "y"));
        assertEquals(o, P.attrs(ordered("a", "1", "b", "2")));
        assertNotEquals(o, P.attrs(ordered("b", "2", "a", "1")), "the order is part of the options");
        assertEquals(P, P.attrs(Map.of()), "an empty map is none");
        assertTrue(P.attrs().isEmpty());
        sameAttrs(o.attrs(), o.priority(2).dedupKey("k").attrs(), "kept by the other options");
        assertTrue(o.toString().contains("attrs={a=1, b=2}"), o.toString());
    }

    @Test
    void asyncPassesThrough() throws Exception {
        AsyncQueue a = queue.async();
        a.publish("g", b("x"), P.attrs(ordered("via", "async"))).get(10, TimeUnit.SECONDS);
        a.publishWith("g", "y", P.attrs(ordered("via", "publishWith"))).get(10, TimeUnit.SECONDS);
        try (Batch batch = new Batch()) {
            batch.add("g", b("z"), P.attrs(ordered("via", "batch")));
            a.publish(batch).get(10, TimeUnit.SECONDS);
        }
        Lease l = a.claim(C.maxEvents(3)).get(10, TimeUnit.SECONDS).orElseThrow();
        assertEquals(List.of(Map.of("via", "async"), Map.of("via", "publishWith"), Map.of("via", "batch")),
                List.of(l.attrsAt(0), l.attrsAt(1), l.attrsAt(2)));
        a.ack(l).get(10, TimeUnit.SECONDS);
    }
}
