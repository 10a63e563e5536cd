package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.function.ThrowingSupplier;

/**
 * The scenarios of bindings/CONTRACT.md (all but safety, worker, groups and deduplication:
 * SafetyTest, WorkerTest, GroupsTest, DedupTest).
 */
class ContractTest extends QueueTestBase {

    // ---- the harel cases ---------------------------------------------------------------

    @Test
    void fifoInGroup() {
        long[] seqs = new long[5];
        for (int i = 0; i < 5; i++) seqs[i] = queue.publish("g", b("e" + i));
        for (int i = 0; i < 5; i++) {
            Lease l = must(queue.claim());
            assertEquals("e" + i, s(l.event()));
            assertEquals(seqs[i], l.seq());
            queue.ack(l);
        }
        assertFalse(queue.claim().isPresent());
    }

    @Test
    void oneLeasePerGroup() {
        queue.publish("A", b("a1"));
        queue.publish("A", b("a2"));
        queue.publish("B", b("b1"));
        Lease first = must(queue.claim());
        // A waited longest; with P partitions a claim starts at the next partition in
        // turn, so the first claim may take B (both lines are claimed all the same).
        if (PARTITIONS == 1) assertEquals("A", first.group());
        Lease second = must(queue.claim());
        assertEquals(Set.of("A", "B"), Set.of(first.group(), second.group()),
                "while one group is leased the next claim gets the other");
        assertFalse(queue.claim().isPresent(), "A (still leased, one event left) and B are held");
    }

    @Test
    void everyReadyGroupClaimed() {
        for (int g = 0; g < 10; g++) queue.publish("g" + g, b("x"));
        Set<String> groups = new HashSet<>();
        for (int i = 0; i < 10; i++) groups.add(must(queue.claim()).group());
        assertEquals(10, groups.size());
        assertFalse(queue.claim().isPresent());
    }

    @Test
    void roundRobin() {
        for (int i = 0; i < 3; i++) queue.publish("A", b("a" + i));
        for (int i = 0; i < 3; i++) queue.publish("B", b("b" + i));
        List<String> order = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Lease l = must(queue.claim());
            order.add(s(l.event()));
            queue.ack(l);
        }
        if (PARTITIONS == 1) {
            assertEquals(List.of("a0", "b0", "a1", "b1", "a2", "b2"), order);
        } else {
            // Round-robin holds within each partition, and a claim starts at the next
            // partition in turn (include/mongomq.h): the order across groups of two
            // partitions is not one line's (of 4: A is in partition 1, B in 0). What holds:
            // each group in publish order, and every claim got a lease until both drained.
            assertEquals(List.of("a0", "a1", "a2"), order.stream().filter(e -> e.startsWith("a")).toList());
            assertEquals(List.of("b0", "b1", "b2"), order.stream().filter(e -> e.startsWith("b")).toList());
        }
        assertFalse(queue.claim().isPresent());
    }

    @Test
    void priorityFloor() {
        for (int p = 0; p <= 3; p++) queue.publish("p" + p, b("x" + p), P.priority(p));
        Lease l = must(queue.claim(C.minPriority(3)));
        assertEquals("p3", l.group());
        assertFalse(queue.claim(C.minPriority(3)).isPresent(), "priority 0-2 groups are below the floor");
        assertEquals(3, countClaims(0));
    }

    private int countClaims(int minPriority) {
        int n = 0;
        while (queue.claim(C.minPriority(minPriority)).isPresent()) n++;
        return n;
    }

    @Test
    void priorityResetOnDrain() {
        queue.publish("g", b("high"), P.priority(4));
        queue.ack(must(queue.claim(C.minPriority(4))));
        queue.publish("g", b("low"), P.priority(1));
        assertFalse(queue.claim(C.minPriority(2)).isPresent(), "the drained group came back at priority 1");
        Lease l = must(queue.claim(C.minPriority(1)));
        assertEquals("low", s(l.event()));
        assertEquals(1, queue.stats().priority(1).groups());
    }

    @Test
    void ackRemoves() {
        queue.publish("g", b("x"));
        queue.ack(must(queue.claim()));
        assertEquals(0, queue.stats().messages());
        assertFalse(queue.claim().isPresent());
    }

    @Test
    void nackNow() {
        long seq = queue.publish("g", b("x"));
        Lease l = must(queue.claim());
        assertEquals(1, l.attempts());
        queue.nack(l, Duration.ZERO);
        Lease again = must(queue.claim());
        assertEquals(seq, again.seq());
        assertEquals(2, again.attempts());
    }

    @Test
    void nackDelayParks() {
        long seq = queue.publish("g", b("x"));
        queue.nack(must(queue.claim()), Duration.ofMillis(1500));
        assertFalse(queue.claim().isPresent(), "nothing is claimable while the delay runs");
        Lease again = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(seq, again.seq());
        assertEquals(2, again.attempts());
    }

    @Test
    void staleOwnerLeaseLost() {
        queue.publish("g", b("x"));
        Lease stale = must(queue.claim(C.visibility(Duration.ofSeconds(1))));
        Lease taken = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(stale.seq(), taken.seq());
        assertThrows(LeaseLostException.class, () -> queue.ack(stale));
        queue.ack(taken);
    }

    @Test
    void extendKeepsLease() throws InterruptedException {
        queue.publish("g", b("x"));
        Lease l = must(queue.claim(C.visibility(Duration.ofSeconds(1))));
        queue.extend(l, Duration.ofSeconds(20));
        Thread.sleep(1500);
        assertFalse(queue.claim().isPresent(), "the extended lease still holds the group");
        queue.ack(l);
    }

    @Test
    void leaseExpiryRedelivers() {
        long seq = queue.publish("g", b("x"));
        Lease first = must(queue.claim(C.visibility(Duration.ofSeconds(1))));
        assertEquals(1, first.attempts());
        Lease again = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(seq, again.seq());
        assertEquals(2, again.attempts());
    }

    @Test
    void unclaimKeepsAttempts() {
        long a = queue.publish("A", b("a"));
        long bSeq = queue.publish("B", b("b"));
        Lease first = must(queue.claim(in("A"))); // with P partitions, A's line is its partition's
        assertEquals("A", first.group());
        assertEquals(1, first.attempts());
        queue.unclaim(first); // no handler ran
        assertThrows(LeaseLostException.class, () -> queue.unclaim(first), "the lease is finished");
        Lease again = must(queue.claim(in("A")));
        assertEquals("A", again.group(), "A kept its place in line, ahead of B");
        assertEquals(a, again.seq());
        assertEquals(1, again.attempts(), "the give-back was not a delivery");
        queue.ack(again);

        // A lease that expired and whose group another claim took: unclaim is lease
        // lost and leaves the new holder's lease alone.
        Lease stale = must(queue.claim(C.visibility(Duration.ofSeconds(1))));
        assertEquals(bSeq, stale.seq());
        Lease taken = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(bSeq, taken.seq());
        assertEquals(2, taken.attempts());
        assertThrows(LeaseLostException.class, () -> queue.unclaim(stale));
        assertFalse(queue.claim().isPresent(), "B is still the new holder's");
        queue.ack(taken);
        assertEquals(0, queue.stats().messages());
    }

    // ---- bytes -------------------------------------------------------------------------

    private byte[] roundTrip(byte[] event) {
        queue.publish("g", event);
        Lease l = must(queue.claim());
        queue.ack(l);
        return l.event();
    }

    @Test
    void bytesText() {
        byte[] text = b("héllo wörld ✓ 日本語 \uD83C\uDF89 {\"k\":1}");
        assertArrayEquals(text, roundTrip(text));
        // Text may be published as a String (its UTF-8), and comes back as bytes.
        queue.publish("g", "zoë");
        Lease l = must(queue.claim());
        assertArrayEquals(b("zoë"), l.event());
    }

    @Test
    void bytesBinaryNul() {
        byte[] bin = {0, 1, 0, (byte) 0xff, (byte) 0xfe, (byte) 0x80, (byte) 0xc3, 0x28, 0};
        assertArrayEquals(bin, roundTrip(bin));
    }

    @Test
    void bytesEmpty() {
        byte[] got = roundTrip(new byte[0]);
        assertNotNull(got);
        assertEquals(0, got.length);
    }

    @Test
    void bytes1mib() {
        byte[] big = new byte[1 << 20];
        new Random(17).nextBytes(big);
        assertArrayEquals(big, roundTrip(big));
    }

    @Test
    void groupUtf8() {
        String group = "grüppe-日本-\uD83C\uDF89";
        queue.publish(group, b("x"));
        Lease l = must(queue.claim());
        assertEquals(group, l.group());
        queue.ack(l);
    }

    // ---- features ----------------------------------------------------------------------

    @Test
    void batchPublishClaim() {
        long first;
        try (Batch batch = new Batch()) {
            for (int i = 0; i < 10; i++) batch.add(i % 2 == 0 ? "a" : "b", b("e" + i));
            assertEquals(10, batch.size());
            first = queue.publish(batch);
        }
        // With one partition the seqs are consecutive in add order and a, first in line,
        // is claimed first; with P they are unique and increase within each group, the
        // first one a's (its first event's), and either group may be claimed first.
        Set<Long> seqs = new HashSet<>();
        Lease l = must(queue.claim(C.maxEvents(5)));
        if (PARTITIONS == 1) assertEquals("a", l.group());
        int off = l.group().equals("a") ? 0 : 1;
        assertEquals(5, l.count());
        for (int k = 0; k < 5; k++) {
            if (PARTITIONS == 1) assertEquals(first + 2L * k + off, l.seq(k), "seqs are consecutive in add order");
            else if (k > 0) assertTrue(l.seq(k) > l.seq(k - 1), "seqs increase within the group");
            assertEquals("e" + (2 * k + off), s(l.event(k)));
            seqs.add(l.seq(k));
        }
        queue.ack(l);
        assertEquals(5, queue.stats().messages());
        Lease rest = must(queue.claim(C.maxEvents(10)));
        assertEquals(off == 0 ? "b" : "a", rest.group());
        assertEquals(5, rest.count());
        if (PARTITIONS == 1) assertEquals(first + 1, rest.seq());
        for (int k = 0; k < 5; k++) {
            assertEquals("e" + (2 * k + 1 - off), s(rest.event(k)));
            if (k > 0) assertTrue(rest.seq(k) > rest.seq(k - 1), "seqs increase within the group");
            seqs.add(rest.seq(k));
        }
        assertEquals(first, (off == 0 ? l : rest).seq(), "the batch's first seq is its first event's");
        assertEquals(10, seqs.size(), "10 distinct seqs");
    }

    @Test
    void scheduledEvent() {
        Instant at = queue.now().plusSeconds(1);
        long seq = queue.publish("g", b("later"), P.notBefore(at));
        assertFalse(queue.claim().isPresent(), "not claimable before its time");
        Lease l = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(seq, l.seq());
        assertFalse(queue.now().isBefore(at), "claimed no earlier than scheduled, on the queue clock");
    }

    private long killOne(String group) {
        long seq = queue.publish(group, b("doomed"));
        queue.nack(must(queue.claim()), Duration.ZERO);
        queue.nack(must(queue.claim()), Duration.ZERO);
        assertFalse(queue.claim().isPresent(), "the third delivery goes to the dead letters instead");
        return seq;
    }

    @Test
    void deadLetters() {
        queue.setMaxAttempts(2);
        long seq = killOne("g");
        assertEquals(1, queue.deadCount());
        long again = queue.deadRequeue(seq);
        assertTrue(again > seq, "requeue gives a new seq");
        assertEquals(0, queue.deadCount());
        Lease l = must(queue.claim());
        assertEquals(again, l.seq());
        assertEquals("doomed", s(l.event()));
        queue.ack(l);
        killOne("h");
        assertEquals(1, queue.deadCount());
        assertEquals(1, queue.deadPurge());
        assertEquals(0, queue.deadCount());
    }

    @Test
    void statsParsed() {
        queue.publish("low", b("1"));
        queue.publish("low", b("2"));
        queue.publish("high", b("3"), P.priority(3));
        must(queue.claim(C.minPriority(3)));
        Stats st = queue.stats();
        assertEquals(db + ".q", st.queue());
        assertEquals(3, st.messages());
        assertEquals(0, st.dead());
        assertEquals(new Stats.Groups(1, 1, 0, 0, 2), st.groups());
        assertEquals(3, st.published());
        assertEquals(5, st.priorities().size());
        assertEquals(new Stats.PriorityCounts(1, 2), st.priority(0));
        assertEquals(new Stats.PriorityCounts(1, 1), st.priority(3));
        assertEquals(new Stats.PriorityCounts(0, 0), st.priority(4));
        assertTrue(st.oldestMessageAge().isPresent());
        assertFalse(st.oldestMessageAge().get().isNegative());
        assertTrue(Math.abs(Duration.between(st.now(), queue.now()).toSeconds()) < 60, "now is the queue clock");
        // The JSON text is there too, with the same keys.
        assertTrue(queue.statsJson().contains("\"priorities\""));
    }

    @Test
    void repair() {
        queue.publish("g", b("orphan"));
        try (MongoClient raw = MongoClients.create(uri())) {
            long deleted = raw.getDatabase(db).getCollection("q_locks").deleteMany(new Document()).getDeletedCount();
            assertEquals(1, deleted);
        }
        assertFalse(queue.claim().isPresent(), "without its lock the group is invisible");
        assertEquals(1, queue.repair());
        assertEquals("orphan", s(must(queue.claim()).event()));
    }

    @Test
    void repairAutomatic() throws InterruptedException {
        badArg("interval", () -> queue.setRepairInterval(Duration.ofSeconds(-1)));
        badArg("interval", () -> queue.setRepairInterval(null));
        assertEquals(new RepairCounts(0, 0), queue.repairCounts());
        queue.setRepairInterval(Duration.ofMillis(200));
        queue.publish("g", b("orphan"));
        try (MongoClient raw = MongoClients.create(uri())) {
            assertEquals(1, raw.getDatabase(db).getCollection("q_locks").deleteMany(new Document()).getDeletedCount());
        }
        // The first empty claim starts the period; a claim after it repairs and claims.
        Lease got = null;
        long end = System.nanoTime() + 10_000_000_000L;
        while (got == null && System.nanoTime() < end) {
            got = queue.claim().orElse(null);
            if (got == null) Thread.sleep(100);
        }
        assertNotNull(got, "a claim repaired the orphan by itself");
        assertEquals("orphan", s(got.event()));
        queue.ack(got);
        RepairCounts rc = queue.repairCounts();
        assertTrue(rc.runs() >= 1, "runs: " + rc);
        assertEquals(1, rc.fixed(), "one lock re-created: " + rc);

        // Zero turns it off: an orphan stays invisible.
        queue.setRepairInterval(Duration.ZERO);
        long runs = queue.repairCounts().runs();
        queue.publish("h", b("orphan 2"));
        try (MongoClient raw = MongoClients.create(uri())) {
            assertEquals(1, raw.getDatabase(db).getCollection("q_locks").deleteMany(new Document()).getDeletedCount());
        }
        for (int i = 0; i < 4; i++) {
            assertFalse(queue.claim().isPresent(), "no automatic repair when it is off");
            Thread.sleep(100);
        }
        assertEquals(new RepairCounts(runs, 1), queue.repairCounts());
        assertEquals(1, queue.repair());
    }

    @Test
    void peek() {
        long a1 = queue.publish("A", b("a1"), P.priority(2));
        byte[] bin = {0, (byte) 0xff, 1, (byte) 0xfe, 0};
        long a2 = queue.publish("A", bin);
        Instant later = queue.now().plusSeconds(3600);
        long s1 = queue.publish("S", b("scheduled \u00e9"), P.priority(1).notBefore(later));
        long e1 = queue.publish("E", new byte[0]);

        List<StoredEvent> all = queue.peek(10);
        // Lowest seq first: publish order with one partition, not across groups with P.
        List<Long> bySeq = new ArrayList<>(List.of(a1, a2, s1, e1));
        java.util.Collections.sort(bySeq);
        if (PARTITIONS == 1) assertEquals(List.of(a1, a2, s1, e1), bySeq);
        assertEquals(bySeq, all.stream().map(StoredEvent::seq).toList());
        Map<Long, StoredEvent> peeked = new java.util.HashMap<>();
        for (StoredEvent e : all) peeked.put(e.seq(), e);
        StoredEvent first = peeked.get(a1);
        assertEquals("A", first.group());
        assertEquals(2, first.priority());
        assertEquals(0, first.attempts());
        assertEquals("a1", s(first.event()));
        assertNotNull(first.publishedAt());
        assertTrue(Math.abs(Duration.between(first.publishedAt(), queue.now()).toSeconds()) < 60, "published on the queue clock");
        assertTrue(first.notBefore().isEmpty());
        assertTrue(first.deadAt().isEmpty());
        assertArrayEquals(bin, peeked.get(a2).event(), "binary bytes (NUL, 0xff) come back exactly");
        assertEquals("scheduled \u00e9", s(peeked.get(s1).event()), "non-ASCII text comes back as its UTF-8");
        assertEquals(1, peeked.get(s1).priority());
        assertTrue(peeked.get(s1).notBefore().isPresent(), "a scheduled event has notBefore");
        assertTrue(Math.abs(Duration.between(peeked.get(s1).notBefore().get(), later).toMillis()) < 5);
        assertArrayEquals(new byte[0], peeked.get(e1).event(), "an empty event");

        // One group, the limit, nothing claimed.
        assertEquals(List.of(a1, a2), queue.peek("A", 10).stream().map(StoredEvent::seq).toList());
        assertEquals(List.of(a1), queue.peek("A", 1).stream().map(StoredEvent::seq).toList());
        assertEquals(2, queue.peek(2).size());
        assertTrue(queue.peek("nobody", 5).isEmpty());
        Lease l = must(queue.claim(in("A")));
        assertEquals(a1, l.seq(), "peek claimed nothing");
        queue.nack(l);
        StoredEvent head = queue.peek("A", 1).get(0);
        assertEquals(a1, head.seq(), "the nacked head is still the head");
        assertEquals(0, head.attempts(), "a live event's deliveries are counted on its group's lock");
        assertEquals(4, queue.stats().messages());

        // A copy: changing the returned array changes nothing.
        byte[] ev = first.event();
        ev[0] = 'X';
        assertEquals("a1", s(first.event()));

        badArg("limit", () -> queue.peek(0));
        badArg("limit", () -> queue.peek("A", 10001));
        badArg("groupId", () -> queue.peek("", 5));
    }

    @Test
    void deadList() {
        queue.setMaxAttempts(1);
        long seq = queue.publish("g", new byte[] {1, 0, 2}, P.priority(3));
        queue.publish("g", b("next"), P.priority(3));
        queue.nack(must(queue.claim()));
        Lease next = must(queue.claim()); // the head goes to the dead letters, "next" is claimed
        assertEquals("next", s(next.event()));
        queue.ack(next);
        List<StoredEvent> dead = queue.deadList(10);
        assertEquals(1, dead.size());
        StoredEvent d = dead.get(0);
        assertEquals(seq, d.seq());
        assertEquals("g", d.group());
        assertEquals(3, d.priority());
        assertEquals(1, d.attempts());
        assertArrayEquals(new byte[] {1, 0, 2}, d.event());
        assertTrue(d.deadAt().isPresent(), "a dead letter has deadAt");
        assertFalse(d.deadAt().get().isBefore(d.publishedAt()), d.toString());
        assertEquals(1, queue.deadCount(), "listing changes nothing");
        queue.deadPurge();
        assertTrue(queue.deadList(10).isEmpty());
        badArg("limit", () -> queue.deadList(0));
    }

    @Test
    void writeConcernErrors() {
        queue.publish("g", b("x"));
        queue.ack(must(queue.claim()));
        // The test server confirms every write: none unconfirmed.
        assertEquals(0, client.writeConcernErrors());
        assertTrue(client.commandCount() > 0);
    }

    @Test
    void purgeGroup() {
        queue.publish("g", b("1"));
        queue.publish("g", b("2"));
        queue.publish("other", b("3"));
        Lease held = must(queue.claim(in("g")));
        assertEquals("g", held.group());
        queue.purgeGroup("g");
        assertThrows(LeaseLostException.class, () -> queue.ack(held));
        assertEquals(1, queue.stats().messages());
        assertEquals("other", must(queue.claim()).group());
    }

    @Test
    void drop() {
        for (int i = 0; i < 3; i++) queue.publish("g", b("x"));
        queue.drop();
        Stats st = queue.stats();
        assertEquals(0, st.messages());
        assertEquals(0, st.groups().total());
        assertTrue(st.oldestMessageAge().isEmpty(), "no events: no oldest age (JSON null)");
        assertFalse(queue.claim().isPresent());
        // Seq 1, the first of partition 0; with P partitions g's first is its partition's, k + 1.
        assertEquals(MongoMqQueue.groupPartition("g", PARTITIONS) + 1, queue.publish("g", b("y")));
    }

    @Test
    void leaseDeadline() {
        queue.publish("g", b("x"));
        Instant before = queue.now();
        Lease l = must(queue.claim());
        Instant after = queue.now();
        Instant d = l.deadline();
        assertFalse(d.isBefore(before.plus(VIS).minusMillis(5)), d + " vs claim start " + before);
        assertFalse(d.isAfter(after.plus(VIS).plusMillis(5)), d + " vs claim end " + after);
        queue.extend(l, Duration.ofSeconds(90));
        assertTrue(l.deadline().isAfter(d.plusSeconds(50)), "extend moved the deadline: " + l.deadline());
    }

    // ---- waiting claims ----------------------------------------------------------------

    @Test
    void waitWokenByPublish() throws Exception {
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            Future<?> pub = ex.submit(() -> {
                Thread.sleep(200);
                return queue.publish("g", b("wake"));
            });
            long t0 = System.nanoTime();
            Lease l = must(queue.claim(C.wait(Duration.ofSeconds(10))));
            double took = (System.nanoTime() - t0) / 1e9;
            assertEquals("wake", s(l.event()));
            assertTrue(took < 5, "woken by the publish, well before the 10 s timeout: " + took + " s");
            pub.get();
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void waitCancelOne() throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            CountDownLatch started = new CountDownLatch(2);
            Thread[] cancelled = new Thread[1];
            Future<Boolean> one = ex.submit(() -> {
                cancelled[0] = Thread.currentThread();
                started.countDown();
                long t0 = System.nanoTime();
                CancelledException e = assertThrows(CancelledException.class,
                        () -> queue.claim(C.wait(Duration.ofSeconds(30))));
                assertEquals(Status.CANCELLED, e.status());
                double took = (System.nanoTime() - t0) / 1e9;
                assertTrue(took < 10, "the interrupted claim returned promptly: " + took + " s");
                return Thread.interrupted(); // the interrupt status stayed set (and is cleared for the pool)
            });
            Future<Lease> other = ex.submit(() -> {
                started.countDown();
                return must(queue.claim(C.wait(Duration.ofSeconds(30))));
            });
            assertTrue(started.await(10, TimeUnit.SECONDS));
            Thread.sleep(300); // both are in their waits
            cancelled[0].interrupt();
            assertTrue(one.get(10, TimeUnit.SECONDS), "the thread keeps its interrupt status");
            assertFalse(other.isDone(), "the other waiter is still waiting");
            queue.publish("g", b("for the other"));
            assertEquals("for the other", s(other.get(10, TimeUnit.SECONDS).event()));
            // The queue goes on: a later wait on this thread is not cancelled.
            queue.publish("g2", b("later"));
            assertEquals("later", s(must(queue.claim(C.wait(Duration.ofSeconds(5)))).event()));
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void waitingClaimOnInterruptedThread() {
        queue.publish("g", b("x"));
        Thread.currentThread().interrupt();
        try {
            assertThrows(CancelledException.class, () -> queue.claim(C.wait(Duration.ofSeconds(5))));
            assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status stays set");
        } finally {
            Thread.interrupted();
        }
        assertEquals("x", s(must(queue.claim(C.wait(Duration.ofSeconds(5)))).event()), "nothing was taken");
    }

    @Test
    void interruptStopsAll() throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(2);
        try {
            CountDownLatch started = new CountDownLatch(2);
            List<Future<MongoMqException>> waiters = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                waiters.add(ex.submit(() -> {
                    started.countDown();
                    return assertThrows(QueueInterruptedException.class,
                            () -> queue.claim(C.wait(Duration.ofSeconds(30))));
                }));
            }
            assertTrue(started.await(10, TimeUnit.SECONDS));
            Thread.sleep(300);
            long t0 = System.nanoTime();
            queue.interrupt();
            for (Future<MongoMqException> w : waiters) assertEquals(Status.INTERRUPTED, w.get(10, TimeUnit.SECONDS).status());
            assertTrue((System.nanoTime() - t0) / 1e9 < 5, "every waiter returned promptly");
            long t1 = System.nanoTime();
            assertThrows(QueueInterruptedException.class, () -> queue.claim(C.wait(Duration.ofSeconds(30))));
            assertTrue((System.nanoTime() - t1) / 1e9 < 5, "a later wait ends at once");
            long seq = queue.publish("g", b("still works"));
            assertTrue(seq > 0);
            assertEquals(1, queue.stats().messages(), "publish still works");
            // A plain claim (no wait) through the interrupted queue object still works, and so do ack ...
            Lease l = must(queue.claim());
            assertEquals("still works", s(l.event()));
            queue.ack(l);
            assertFalse(queue.claim().isPresent(), "a plain claim on an empty queue is empty, not interrupted");
            // ... while waiting claims stay interrupted.
            assertThrows(QueueInterruptedException.class, () -> queue.claim(C.wait(Duration.ofSeconds(30))));
            // Another queue object on the same collections is not interrupted.
            queue.publish("g", b("fresh"));
            try (MongoMqQueue fresh = sameQueue(client)) {
                assertEquals("fresh", s(must(fresh.claim(C.wait(Duration.ofSeconds(5)))).event()));
            }
        } finally {
            ex.shutdownNow();
        }
    }

    // ---- errors ------------------------------------------------------------------------

    private static void badArg(String name, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, name);
        assertTrue(e.getMessage().contains(name), "the message names " + name + ": " + e.getMessage());
    }

    @Test
    void errorBadArgument() {
        badArg("groupId", () -> queue.publish("", b("x")));
        badArg("groupId", () -> queue.publish((String) null, b("x")));
        badArg("groupId", () -> queue.publish("a\0b", b("x")));
        badArg("groupId", () -> queue.publish("x".repeat(1001), b("x")));
        badArg("event", () -> queue.publish("g", (byte[]) null));
        badArg("priority", () -> queue.publish("g", b("x"), P.priority(5)));
        badArg("priority", () -> queue.publish("g", b("x"), P.priority(-1)));
        badArg("visibility", () -> C.visibility(Duration.ofSeconds(-1)));
        badArg("visibility", () -> C.visibility(Duration.ZERO));
        badArg("visibility", () -> C.visibility(null));
        badArg("minPriority", () -> C.minPriority(-1));
        badArg("minPriority", () -> queue.claim(C.minPriority(5)));
        badArg("maxEvents", () -> queue.claim(C.maxEvents(0)));
        badArg("maxEvents", () -> queue.claim(C.maxEvents(10001)));
        badArg("wait", () -> C.wait(Duration.ofSeconds(-1)));
        badArg("wait", () -> C.wait(null));
        badArg("workerId", () -> C.workerId(""));
        badArg("workerId", () -> C.workerId("a\0b"));
        badArg("options", () -> queue.claim(null));
        badArg("options", () -> queue.publish("g", b("x"), null));
        badArg("notBefore", () -> P.notBefore(Instant.ofEpochSecond(-1)));
        badArg("notBefore", () -> queue.publish("g", b("x"), P.notBefore(null)));
        badArg("maxAttempts", () -> queue.setMaxAttempts(-1));
        badArg("uri", () -> Client.connect(null));
        badArg("lease", () -> queue.ack(null));
        badArg("groupId", () -> queue.purgeGroup(""));
        try (Batch batch = new Batch()) {
            badArg("priority", () -> batch.add("g", b("x"), P.priority(9)));
            badArg("groupId", () -> batch.add("", b("x")));
        }
        queue.publish("g", b("x"));
        Lease l = must(queue.claim());
        badArg("delay", () -> queue.nack(l, Duration.ofSeconds(-1)));
        badArg("visibility", () -> queue.extend(l, Duration.ZERO));
        // Arguments only the library can judge: its MQ_ERR_ARG is the same exception.
        badArg("uri", () -> Client.connect("not a mongodb uri"));
        badArg("db_name", () -> client.queue("bad/db", "q"));
        badArg("seq", () -> queue.deadRequeue(987654));
        try (Batch empty = new Batch()) {
            badArg("batch", () -> queue.publish(empty));
        }
    }

    @Test
    void errorConnect() {
        try (Client c = Client.connect("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200")) {
            MongoMqConnectException e = assertThrows(MongoMqConnectException.class, () -> c.queue("mqt_java_connect", "q"));
            assertEquals(Status.ERR_CONNECT, e.status());
            assertInstanceOf(MongoMqException.class, e);
        }
    }

    @Test
    void errorLeaseLostType() {
        queue.publish("g", b("x"));
        Lease l = must(queue.claim());
        queue.purgeGroup("g");
        MongoMqException e = assertThrows(MongoMqException.class, () -> queue.extend(l, VIS));
        assertInstanceOf(LeaseLostException.class, e);
        assertEquals(Status.LEASE_LOST, e.status());
        assertTrue(e.getMessage().contains("MQ_LEASE_LOST"), e.getMessage());
    }

    // ---- clock and log -----------------------------------------------------------------

    @Test
    void manualClock() throws Exception {
        Instant t = Instant.parse("2030-01-01T00:00:00Z");
        ManualClock clock = new ManualClock(t);
        queue.setClock(clock);
        assertEquals(t, clock.now());
        assertEquals(t, queue.now(), "the queue reads the manual clock");
        long seq = queue.publish("g", b("later"), P.notBefore(t.plusSeconds(60)));
        assertFalse(queue.claim().isPresent(), "not due before T + 60 s");
        clock.advance(Duration.ofSeconds(61));
        assertEquals(t.plusSeconds(61), queue.now());
        Lease l = must(queue.claim());
        assertEquals(seq, l.seq());
        assertEquals(t.plusSeconds(61).plus(VIS), l.deadline(), "deadline: T + 61 + visibility");

        // Closing the clock handle while the queue runs on it: the queue keeps the clock.
        clock.set(t.plusSeconds(100));
        clock.close();
        assertTrue(clock.handle().isFreed(), "the Java handle is gone");
        assertEquals(t.plusSeconds(100), queue.now(), "the queue still reads the closed clock");
        queue.extend(l, VIS);
        assertEquals(t.plusSeconds(100).plus(VIS), l.deadline());
        queue.ack(l);

        // Dropping it (the garbage collector): the same.
        Handle dropped = giveDroppedClock(t.plusSeconds(500));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!dropped.isFreed() && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertTrue(dropped.isFreed(), "the Cleaner released the clock handle");
        assertEquals(t.plusSeconds(500), queue.now(), "the queue still reads the collected clock");

        // No clock: back on server time.
        queue.setClock(null);
        Duration off = Duration.between(Instant.now(), queue.now()).abs();
        assertTrue(off.compareTo(Duration.ofMinutes(1)) < 0, "server time again, off by " + off);
        queue.publish("g", b("now"));
        assertEquals("now", s(must(queue.claim()).event()));
    }

    /** A clock given to the queue and left unreachable; its handle, for the test to watch. */
    private Handle giveDroppedClock(Instant at) {
        ManualClock c = new ManualClock(at);
        queue.setClock(c);
        return c.handle();
    }

    @Test
    void logHandler() throws Exception {
        final String uri = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1";
        java.util.concurrent.BlockingQueue<Object[]> got = new java.util.concurrent.LinkedBlockingQueue<>();
        try {
            Client.setLogHandler((level, domain, message) ->
                    got.add(new Object[] {level, domain, message, Thread.currentThread()}));
            try (Client c = Client.connect(uri)) {
                assertNotNull(c);
            }
            Object[] line = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (line == null) {
                long left = deadline - System.nanoTime();
                assertTrue(left > 0, "no libmongoc line naming mongomqnosuchoption within 10 s");
                Object[] next = got.poll(left, TimeUnit.NANOSECONDS);
                if (next != null && ((String) next[2]).toLowerCase(java.util.Locale.ROOT).contains("mongomqnosuchoption")) line = next;
            }
            assertEquals(2, line[0], "a warning");
            assertEquals("mongoc", line[1]);
            Thread t = (Thread) line[3];
            assertEquals("mongomq-log", t.getName(), "on the binding's thread");
            assertTrue(t.isDaemon());
            assertEquals(LogPump.thread(), t);

            // Silenced: a second such client brings nothing.
            Client.setLogHandler(null);
            got.clear();
            try (Client c = Client.connect(uri)) {
                assertNotNull(c);
            }
            // (Stricter than the contract: once setLogHandler(null) returned, nothing at all.)
            Object[] after = got.poll(1, TimeUnit.SECONDS);
            assertTrue(after == null, () -> "a line after silence: " + java.util.Arrays.toString(after));
        } finally {
            Client.setLogHandler(null);
        }
    }

    // ---- concurrency -------------------------------------------------------------------

    /** {@code uri} with one more option: after {@code &} when it has options, else after {@code ?} (and a {@code /} first when it has no path). */
    static String withOption(String uri, String option) {
        if (uri.contains("?")) return uri + (uri.endsWith("?") || uri.endsWith("&") ? "" : "&") + option;
        return uri + (uri.indexOf('/', uri.indexOf("://") + 3) >= 0 ? "?" : "/?") + option;
    }

    private static final Duration BOUND = Duration.ofSeconds(60);

    /** Runs one call, failing the test (not hanging it) if it has not returned within 60 s. */
    private static <T> T bounded(String call, ThrowingSupplier<T> body) {
        return assertTimeoutPreemptively(BOUND, body, () -> call + " did not return within 60 s with maxPoolSize=1");
    }

    private static void bounded(String call, Executable body) {
        assertTimeoutPreemptively(BOUND, body, () -> call + " did not return within 60 s with maxPoolSize=1");
    }

    @Test
    void smallPool() {
        assertEquals("mongodb://h:1/?maxPoolSize=1", withOption("mongodb://h:1", "maxPoolSize=1"));
        assertEquals("mongodb://h:1/?maxPoolSize=1", withOption("mongodb://h:1/", "maxPoolSize=1"));
        assertEquals("mongodb://h:1/db?maxPoolSize=1", withOption("mongodb://h:1/db", "maxPoolSize=1"));
        assertEquals("mongodb://h:1/?w=1&maxPoolSize=1", withOption("mongodb://h:1/?w=1", "maxPoolSize=1"));
        String small = withOption(uri(), "maxPoolSize=1");
        try (Client c = Client.connect(small); MongoMqQueue q = bounded("queue open", () -> c.queue(db, "q", QUEUE))) {
            bounded("publish", () -> q.publish("a", b("a1")));
            long b1 = bounded("batch publish", () -> {
                try (Batch batch = new Batch()) {
                    batch.add("a", b("a2")).add("b", b("b1")).add("b", b("b2"));
                    return q.publishWith(batch).get(1).seq();
                }
            });
            Lease l1 = bounded("claim", () -> must(q.claim(in("a"))));
            assertEquals("a1", s(l1.event()));
            bounded("extend", () -> q.extend(l1, VIS));
            bounded("nack", () -> q.nack(l1, Duration.ZERO));
            Lease l2 = bounded("batch claim", () -> must(q.claim(in(C.maxEvents(2), "a"))));
            assertEquals(List.of("a1", "a2"), l2.events().stream().map(QueueTestBase::s).toList());
            assertEquals(2, l2.attempts());
            bounded("unclaim", () -> q.unclaim(l2));
            Lease l3 = bounded("waiting claim", () -> must(q.claim(in(C.maxEvents(2).wait(Duration.ofSeconds(10)), "a"))));
            assertEquals(List.of("a", 2, 2), List.of(l3.group(), l3.count(), l3.attempts()));
            bounded("ack", () -> q.ack(l3));

            bounded("set max attempts", () -> q.setMaxAttempts(1));
            Lease l4 = bounded("claim", () -> must(q.claim()));
            assertEquals(b1, l4.seq());
            bounded("nack", () -> q.nack(l4, Duration.ZERO));
            Lease l5 = bounded("claim past max attempts", () -> must(q.claim()));
            assertEquals("b2", s(l5.event()), "b1 went to the dead letters, the claim went on with b2");
            bounded("ack", () -> q.ack(l5));
            assertEquals(1, (long) bounded("dead count", q::deadCount));
            long again = bounded("dead requeue", () -> q.deadRequeue(b1));
            bounded("set max attempts", () -> q.setMaxAttempts(0));
            assertEquals(0, (long) bounded("repair", q::repair));
            Stats st = bounded("stats", q::stats);
            assertEquals(1, st.messages());
            List<StoredEvent> peeked = bounded("peek", () -> q.peek(10));
            assertEquals(List.of(again), peeked.stream().map(StoredEvent::seq).toList());
            bounded("purge group", () -> q.purgeGroup("b"));
            assertEquals(0, bounded("stats", q::stats).messages());

            // A worker with more threads than connections drains 20 events in 4 groups.
            for (int i = 0; i < 20; i++) q.publish("w" + (i % 4), b("e" + i));
            Map<Long, Integer> handled = new ConcurrentHashMap<>();
            List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
            bounded("worker (concurrency 4) draining 20 events", () -> {
                try (Worker w = q.worker(WorkerOptions.defaults().concurrency(4).onError(errors::add),
                        lease -> handled.merge(lease.seq(), 1, Integer::sum))) {
                    while (handled.size() < 20 || q.stats().messages() > 0) Thread.sleep(20);
                }
            });
            assertEquals(20, handled.size());
            assertTrue(handled.values().stream().allMatch(n -> n == 1), "each event handled once: " + handled);
            assertEquals(List.of(), errors);
        }
    }

    @Test
    void concurrency16x2000() throws Exception {
        final int events = 2000;
        final int groups = 100;
        Map<Long, String> groupOf = new ConcurrentHashMap<>();
        try (Batch batch = new Batch()) {
            for (int i = 0; i < events; i++) batch.add("g" + (i % groups), b("e" + i), P.priority(i % 5));
            List<Published> out = queue.publishWith(batch);
            for (int i = 0; i < events; i++) {
                if (PARTITIONS == 1) assertEquals(out.get(0).seq() + i, out.get(i).seq(), "consecutive seqs");
                groupOf.put(out.get(i).seq(), "g" + (i % groups));
            }
            assertEquals(events, groupOf.size(), "distinct seqs");
        }
        Map<Long, Integer> acked = new ConcurrentHashMap<>();
        Map<String, List<Long>> ackOrder = new ConcurrentHashMap<>();
        Set<String> held = ConcurrentHashMap.newKeySet();
        AtomicInteger heldTwice = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        ExecutorService ex = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < 16; w++) {
                workers.add(ex.submit(() -> {
                    while (done.get() < events) {
                        Optional<Lease> got = queue.claim(C.wait(Duration.ofMillis(500)));
                        if (got.isEmpty()) continue;
                        Lease l = got.get();
                        if (!held.add(l.group())) heldTwice.incrementAndGet();
                        ackOrder.computeIfAbsent(l.group(), k -> java.util.Collections.synchronizedList(new ArrayList<>())).add(l.seq());
                        Thread.sleep(1); // some work while the group is held: a second holder would show
                        held.remove(l.group()); // before the ack: after it the group is another's
                        queue.ack(l);
                        acked.merge(l.seq(), 1, Integer::sum);
                        done.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) f.get(240, TimeUnit.SECONDS);
        } finally {
            ex.shutdownNow();
        }
        assertEquals(0, heldTwice.get(), "no group held twice at once");
        assertEquals(events, acked.size(), "every event acked");
        assertTrue(acked.values().stream().allMatch(n -> n == 1), "each event acked exactly once");
        assertEquals(groups, ackOrder.size());
        for (Map.Entry<String, List<Long>> e : ackOrder.entrySet()) {
            List<Long> seqs = e.getValue();
            for (int i = 1; i < seqs.size(); i++) {
                assertTrue(seqs.get(i - 1) < seqs.get(i), "group " + e.getKey() + " acked in publish order: " + seqs);
            }
            for (long s : seqs) assertEquals(e.getKey(), groupOf.get(s));
        }
        assertEquals(0, queue.stats().messages());
    }
}
