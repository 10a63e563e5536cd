package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The Partitions (0.8.0) scenarios of bindings/CONTRACT.md. Each opens queues of its own
 * (prefixes of the test's database, whatever MONGOMQ_TEST_PARTITIONS says), dropped at
 * the end.
 */
class PartitionsTest extends QueueTestBase {
    private static final QueueOptions FOUR = QueueOptions.defaults().partitions(4);

    private final List<MongoMqQueue> opened = new ArrayList<>();

    /** The queue db.prefix with these options, dropped after the test. */
    private MongoMqQueue open(String prefix, QueueOptions options) {
        MongoMqQueue q = client.queue(db, prefix, options);
        opened.add(q);
        return q;
    }

    @AfterEach
    void dropOwnQueues() {
        for (MongoMqQueue q : opened) {
            try {
                q.drop();
            } finally {
                q.close();
            }
        }
    }

    private static void badArg(String name, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, name);
        assertTrue(e.getMessage().contains(name), "the message names " + name + ": " + e.getMessage());
    }

    @Test
    void partitionsOpen() {
        MongoMqQueue q = open("parts", FOUR);
        assertEquals(4, q.partitions());
        assertEquals(4, q.stats().partitions());
        badArg("4 partitions", () -> client.queue(db, "parts").close());
        badArg("4 partitions", () -> client.queue(db, "parts", QueueOptions.defaults()).close());
        badArg("4 partitions", () -> client.queue(db, "parts", QueueOptions.defaults().partitions(8)).close());
        badArg("partitions", () -> client.queue(db, "zero", QueueOptions.defaults().partitions(0)).close());
        badArg("partitions", () -> client.queue(db, "many", QueueOptions.defaults().partitions(1025)).close());
        badArg("options", () -> client.queue(db, "none", null));
        MongoMqQueue one = client.queue(db, "one");
        opened.add(one);
        assertEquals(1, one.partitions());
        assertEquals(1, one.stats().partitions());
        // Another handle on the partitioned queue, opened with its number, works on it.
        try (MongoMqQueue again = client.queue(db, "parts", FOUR)) {
            assertEquals(4, again.partitions());
        }
        assertEquals(QueueOptions.defaults(), QueueOptions.defaults().partitions(1));
        // The Java constant is the header's.
        assertEquals(org.mongomq.internal.mongomq_raw.MQ_PARTITIONS_MAX, QueueOptions.PARTITIONS_MAX);
    }

    @Test
    void partitionsGroupHash() {
        Map<String, Integer> four = Map.of("a", 3, "b", 0, "customer-17", 1, "g1", 1, "g2", 3, "g3", 0);
        for (Map.Entry<String, Integer> e : four.entrySet())
            assertEquals(e.getValue(), MongoMqQueue.groupPartition(e.getKey(), 4), e.getKey() + " with 4 partitions");
        Map<String, Integer> sixteen = Map.of("a", 11, "customer-17", 9, "g2", 7);
        for (Map.Entry<String, Integer> e : sixteen.entrySet())
            assertEquals(e.getValue(), MongoMqQueue.groupPartition(e.getKey(), 16), e.getKey() + " with 16 partitions");
        for (String g : List.of("a", "b", "customer-17", "g1", "g2", "g3", "ünïcødé"))
            assertEquals(0, MongoMqQueue.groupPartition(g, 1), g + " with 1 partition");
        badArg("partitions", () -> MongoMqQueue.groupPartition("a", 0));
        badArg("partitions", () -> MongoMqQueue.groupPartition("a", QueueOptions.PARTITIONS_MAX + 1));
        badArg("groupId", () -> MongoMqQueue.groupPartition("", 4));
    }

    @Test
    void partitionsFifo() {
        MongoMqQueue q = open("parts", FOUR);
        Map<String, List<Long>> published = new HashMap<>();
        for (int i = 0; i < 5; i++)
            for (int g = 1; g <= 8; g++)
                published.computeIfAbsent("g" + g, k -> new ArrayList<>()).add(q.publish("g" + g, b("g" + g + "-" + i)));
        Map<String, List<Long>> claimed = new HashMap<>();
        Set<Long> seqs = new HashSet<>();
        int acks = 0;
        for (Lease l = q.claim().orElse(null); l != null; l = q.claim().orElse(null)) {
            List<Long> mine = claimed.computeIfAbsent(l.group(), k -> new ArrayList<>());
            assertEquals(l.group() + "-" + mine.size(), s(l.event()), "each group's events in publish order");
            assertEquals(MongoMqQueue.groupPartition(l.group(), 4), l.partition(), l.group() + "'s partition");
            if (!mine.isEmpty()) assertTrue(l.seq() > mine.get(mine.size() - 1), "seqs increase within " + l.group());
            mine.add(l.seq());
            seqs.add(l.seq());
            q.ack(l);
            acks++;
        }
        assertEquals(40, acks);
        assertEquals(40, seqs.size(), "the 40 seqs are distinct");
        assertEquals(published, claimed, "every event claimed once, with the seq its publish returned");
        Stats st = q.stats();
        assertEquals(0, st.messages());
        assertEquals(40, st.published());
    }

    @Test
    void partitionsClaimSubset() {
        MongoMqQueue q = open("parts", FOUR);
        assertEquals(0, MongoMqQueue.groupPartition("b", 4));
        assertEquals(1, MongoMqQueue.groupPartition("customer-17", 4));
        for (int i = 0; i < 2; i++) {
            q.publish("b", b("b" + i));
            q.publish("customer-17", b("c" + i));
        }
        ClaimOptions one = C.partitions(1);
        assertEquals(List.of(1), one.partitions());
        for (int i = 0; i < 2; i++) {
            Lease l = must(q.claim(one));
            assertEquals("customer-17", l.group());
            assertEquals("c" + i, s(l.event()));
            assertEquals(1, l.partition());
            q.ack(l);
        }
        assertFalse(q.claim(one).isPresent(), "partition 1 is drained");
        assertEquals(2, q.stats().messages(), "b still has 2");

        // A worker on partition 0 handles b's 2 and nothing of partition 1's.
        q.publish("customer-17", b("c2"));
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        WorkerOptions opts = WorkerOptions.defaults().partitions(0).idleTimeout(Duration.ofSeconds(1)).onError(errors::add);
        assertEquals(List.of(0), opts.partitions());
        assertTimeoutPreemptively(Duration.ofSeconds(60),
                () -> q.work(opts, l -> handled.add(l.group() + " " + s(l.event()) + " p" + l.partition())));
        assertEquals(List.of("b b0 p0", "b b1 p0"), handled);
        assertEquals(List.of(), errors);
        List<StoredEvent> left = q.peek(10);
        assertEquals(1, left.size());
        assertEquals("customer-17", left.get(0).group());

        badArg("partitions", () -> q.claim(C.partitions(4)));
        badArg("partitions", () -> q.claim(C.partitions(0, 0)));
        badArg("partitions", () -> q.claim(C.partitions(0, 0).wait(Duration.ofSeconds(1))));
        badArg("partitions", () -> q.worker(WorkerOptions.defaults().partitions(4), l -> {}));
        badArg("partitions", () -> q.worker(WorkerOptions.defaults().partitions(0, 0), l -> {}));
        badArg("partitions", () -> C.partitions((int[]) null));
        badArg("partitions", () -> C.partitions(java.util.Arrays.asList(1, null)));
    }

    @Test
    void partitionsWaitHint() throws Exception {
        MongoMqQueue q = open("parts", FOUR);
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            Future<?> pub = ex.submit(() -> {
                Thread.sleep(100);
                q.publish("b", b("not this")); // partition 0: not the claim's
                Thread.sleep(100);
                return q.publish("a", b("wake")); // partition 3
            });
            long t0 = System.nanoTime();
            Lease l = must(q.claim(C.partitions(3).wait(Duration.ofSeconds(10))));
            double took = (System.nanoTime() - t0) / 1e9;
            assertEquals("a", l.group());
            assertEquals("wake", s(l.event()));
            assertEquals(3, l.partition());
            assertTrue(took < 5, "woken by a's publish, well before the 10 s timeout: " + took + " s");
            pub.get();
            assertEquals("b", must(q.claim()).group(), "b's event is still there for a claim of every partition");
        } finally {
            ex.shutdownNow();
        }
    }

    /** Not a scenario: a batch claim and the async surface take the partitions too. */
    @Test
    void partitionsBatchAndAsync() throws Exception {
        MongoMqQueue q = open("parts", FOUR);
        for (int i = 0; i < 3; i++) {
            q.publish("b", b("b" + i));
            q.publish("a", b("a" + i));
        }
        Lease batch = must(q.claim(C.partitions(List.of(3)).maxEvents(3)));
        assertEquals(List.of("a0", "a1", "a2"), batch.events().stream().map(QueueTestBase::s).toList());
        assertEquals(3, batch.partition());
        q.ack(batch);
        AsyncQueue aq = q.async();
        assertFalse(aq.claim(C.partitions(3)).get(10, TimeUnit.SECONDS).isPresent());
        Lease l = aq.claim(C.partitions(3, 0).wait(Duration.ofSeconds(5))).get(10, TimeUnit.SECONDS).orElseThrow();
        assertEquals("b", l.group());
        aq.ack(l).get(10, TimeUnit.SECONDS);
        badArg("partitions", () -> aq.worker(WorkerOptions.defaults().partitions(-1), x -> CompletableFuture.completedFuture(null)));
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        q.publish("a", b("a3"));
        WorkerOptions opts = WorkerOptions.defaults().partitions(0).idleTimeout(Duration.ofSeconds(1));
        aq.work(opts, x -> {
            handled.add(s(x.event()));
            return CompletableFuture.completedFuture(null);
        }).get(60, TimeUnit.SECONDS);
        assertEquals(List.of("b1", "b2"), handled);
        assertEquals("a3", must(q.claim()).text());
        assertEquals("ClaimOptions{visibility=PT30S, minPriority=0, maxEvents=1, wait=PT0S, partitions=[3, 0]}",
                C.partitions(3, 0).toString());
        assertEquals(C, C.partitions(List.of()));
    }
}
