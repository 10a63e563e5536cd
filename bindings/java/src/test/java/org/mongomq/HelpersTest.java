package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Beyond the CONTRACT scenarios: the lease's text and JSON, scheduled batch events, the
 * language's instant and duration types, status names from C, and libmongoc's log going
 * to System.Logger by default (in a fresh JVM: the default is installed once, by the
 * first client).
 */
class HelpersTest extends QueueTestBase {

    @Test
    void leaseText() {
        queue.publish("g", "héllo ✓ \uD83C\uDF89");
        Lease l = must(queue.claim());
        assertEquals("héllo ✓ \uD83C\uDF89", l.text());
        queue.ack(l);
        queue.publish("g", new byte[] {'o', 'k', (byte) 0xc3, 0x28});
        Lease bad = must(queue.claim());
        IllegalStateException e = assertThrows(IllegalStateException.class, bad::text, "not UTF-8: an error, not U+FFFD");
        assertTrue(e.getMessage().contains("not valid UTF-8"), e.getMessage());
        queue.ack(bad);
        queue.publish("g", new byte[0]);
        assertEquals("", must(queue.claim()).text());
    }

    @Test
    void leaseJson() {
        queue.publish("g", "{\"order\": 17, \"items\": [\"a\", \"\\u00e9\"], \"paid\": true, \"note\": null,"
                + " \"total\": 12.5, \"big\": 123456789012345678901234567890}");
        queue.publish("g", "[1, 2]");
        queue.publish("g", "not json");
        Lease l = must(queue.claim(C.maxEvents(3)));
        Object v = l.json();
        assertInstanceOf(Map.class, v);
        Map<?, ?> m = (Map<?, ?>) v;
        assertEquals(List.of("order", "items", "paid", "note", "total", "big"), List.copyOf(m.keySet()), "key order kept");
        assertEquals(17L, m.get("order"));
        assertEquals(List.of("a", "é"), m.get("items"));
        assertEquals(Boolean.TRUE, m.get("paid"));
        assertTrue(m.containsKey("note") && m.get("note") == null);
        assertEquals(12.5, m.get("total"));
        assertEquals(new BigInteger("123456789012345678901234567890"), m.get("big"));
        assertEquals(List.of(1L, 2L), l.json(1));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> l.json(2));
        assertTrue(e.getMessage().contains("the event (seq " + l.seq(2) + ")"), e.getMessage());
        queue.ack(l);
    }

    @Test
    void batchScheduledEvents() {
        Instant t = Instant.parse("2032-03-04T05:06:07Z");
        try (ManualClock clock = new ManualClock(t)) { // the queue's clock: no race with a slow server
            queue.setClock(clock);
            Instant later = t.plusSeconds(60);
            try (Batch batch = new Batch()) {
                batch.add("now", b("n1")).add("later", b("l1"), P.notBefore(later).priority(3)).add("now", "n2");
                queue.publish(batch);
            }
            StoredEvent peeked = queue.peek("later", 1).get(0);
            assertEquals(3, peeked.priority());
            assertEquals(later, peeked.notBefore().orElseThrow());
            Lease first = must(queue.claim(C.maxEvents(5)));
            assertEquals(List.of("n1", "n2"), first.events().stream().map(QueueTestBase::s).toList());
            queue.ack(first);
            assertFalse(queue.claim().isPresent(), "the scheduled batch event is not due yet");
            clock.advance(Duration.ofSeconds(61));
            Lease l = must(queue.claim());
            assertEquals("l1", l.text());
            queue.ack(l);
        }
    }

    @Test
    void instantsAndDurations() {
        Instant before = queue.now();
        queue.publish("g", b("x"), P.notBefore(Instant.EPOCH)); // long past: due at once (not "now" by accident)
        Lease l = must(queue.claim(C.visibility(Duration.ofMillis(1500))));
        Instant deadline = l.deadline();
        Duration left = Duration.between(before, deadline);
        assertTrue(left.compareTo(Duration.ofMillis(1400)) > 0 && left.compareTo(Duration.ofSeconds(30)) < 0, left.toString());
        Duration offset = queue.clockOffset();
        assertTrue(offset.abs().compareTo(Duration.ofMinutes(1)) < 0, "the test server runs on this machine: " + offset);
        Stats st = queue.stats();
        assertTrue(Duration.between(st.now(), queue.now()).abs().compareTo(Duration.ofMinutes(1)) < 0);
        assertTrue(st.oldestMessageAge().orElseThrow().compareTo(Duration.ZERO) >= 0);
        queue.ack(l);
    }

    @Test
    void statusNamesFromC() {
        for (Status s : Status.values()) assertEquals("MQ_" + s.name(), s.cName(), "mq_status_name(" + s.code() + ")");
        assertEquals(0, Status.OK.code());
        assertEquals(Status.ERR_INTERNAL, Status.of(12345), "an unknown code");
        queue.publish("g", b("x"));
        Lease l = must(queue.claim());
        queue.purgeGroup("g");
        LeaseLostException e = assertThrows(LeaseLostException.class, () -> queue.ack(l));
        assertEquals("MQ_LEASE_LOST", e.statusName());
        assertTrue(e.getMessage().contains("(MQ_LEASE_LOST)"), e.getMessage());
        // Closed is the binding's own error, without a C status.
        l.close();
        ClosedException closed = assertThrows(ClosedException.class, l::seq);
        assertFalse(MongoMqException.class.isInstance(closed), "not a MongoMqException: it has no C status");
        assertEquals("lease is closed", closed.getMessage());
    }

    @Test
    void logLevelsMapped() {
        System.Logger.Level[] want = {System.Logger.Level.ERROR, System.Logger.Level.ERROR, System.Logger.Level.WARNING,
                System.Logger.Level.INFO, System.Logger.Level.INFO, System.Logger.Level.DEBUG, System.Logger.Level.DEBUG};
        for (int i = 0; i < want.length; i++) assertEquals(want[i], LogPump.level(i), "libmongoc level " + i);
    }

    /** Runs TestProcess log in a fresh JVM, with the environment variable given (or not); its output. */
    private static String logProcess(String keep) throws Exception {
        String jvm = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        String cp = Paths.get("target", "classes").toAbsolutePath() + java.io.File.pathSeparator
                + Paths.get("target", "test-classes").toAbsolutePath();
        ProcessBuilder pb = new ProcessBuilder(jvm, "-cp", cp, "org.mongomq.TestProcess", "log",
                "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1");
        pb.environment().remove("MONGOMQ_LIBMONGOC_LOG");
        if (keep != null) pb.environment().put("MONGOMQ_LIBMONGOC_LOG", keep);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        boolean ended = p.waitFor(60, TimeUnit.SECONDS);
        if (!ended) p.destroyForcibly();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended && p.exitValue() == 0, out);
        return out;
    }

    @Test
    void defaultLogGoesToSystemLogger() throws Exception {
        String out = logProcess(null);
        assertTrue(out.contains("got WARNING mongoc: "), "libmongoc's warning reached System.Logger \"mongomq\": " + out);
        assertTrue(out.contains(" on mongomq-log"), "on the binding's log thread: " + out);
    }

    @Test
    void defaultLogKeptWithEnvironment() throws Exception {
        String out = logProcess("keep");
        assertTrue(out.contains("got nothing"), "MONGOMQ_LIBMONGOC_LOG=keep: nothing routed: " + out);
        assertTrue(out.toLowerCase(java.util.Locale.ROOT).contains("mongomqnosuchoption"),
                "libmongoc's own handler printed it: " + out);
    }
}
