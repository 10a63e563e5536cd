package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * Each test gets a queue in a database of its own (mqt_java_<random>), dropped at the end,
 * with {@link #PARTITIONS} partitions.
 */
abstract class QueueTestBase {
    /** The default visibility (ClaimOptions.defaults()). */
    static final Duration VIS = Duration.ofSeconds(30);
    /** The default options, to derive the tests' options from. */
    static final ClaimOptions C = ClaimOptions.defaults();
    static final PublishOptions P = PublishOptions.defaults();
    /**
     * The partitions of every test's queue: MONGOMQ_TEST_PARTITIONS (default 1).
     * scripts/test-java.sh runs the contract scenarios a second time with 4
     * (bindings/CONTRACT.md, "Twice: one partition and four").
     */
    static final int PARTITIONS = testPartitions();
    /** The options the tests' queue is opened with (every handle on it needs them). */
    static final QueueOptions QUEUE = QueueOptions.defaults().partitions(PARTITIONS);

    Client client;
    MongoMqQueue queue;
    String db;

    static String uri() {
        String u = System.getenv("MONGOMQ_TEST_URI");
        assertNotNull(u, "MONGOMQ_TEST_URI must name the test server (scripts/test-server.sh start)");
        return u;
    }

    /**
     * {@code base} taking only from {@code group}'s partition: for a scenario whose
     * claims are about a group's place in line, which with P partitions is a line of
     * its partition (include/mongomq.h: round-robin holds within each partition, and a
     * claim starts at the next partition in turn). {@code base} itself with one partition.
     */
    static ClaimOptions in(ClaimOptions base, String group) {
        return PARTITIONS == 1 ? base : base.partitions(MongoMqQueue.groupPartition(group, PARTITIONS));
    }

    static ClaimOptions in(String group) {
        return in(C, group);
    }

    /**
     * The seq of the event published {@code n} publishes after {@code seq} into the same
     * partition (a group's next events, with no other group of its partition published
     * between): {@code seq + n} with one partition, {@code seq + n * P} with P, since
     * partition k's i-th event gets {@code (i - 1) * P + k + 1} (include/mongomq.h).
     */
    static long later(long seq, int n) {
        return seq + (long) n * PARTITIONS;
    }

    /** Whether {@code seq} is one of {@code group}'s partition: {@code (seq - 1) mod P}. */
    static boolean inPartitionOf(long seq, String group) {
        return (seq - 1) % PARTITIONS == MongoMqQueue.groupPartition(group, PARTITIONS);
    }

    static int testPartitions() {
        String p = System.getenv("MONGOMQ_TEST_PARTITIONS");
        return p == null || p.isEmpty() ? 1 : Integer.parseInt(p);
    }

    @BeforeEach
    void openQueue() {
        db = "mqt_java_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        client = Client.connect(uri());
        queue = client.queue(db, "q", QUEUE);
    }

    @AfterEach
    void dropQueue() {
        try (Client c = Client.connect(uri()); MongoMqQueue q = c.queue(db, "q", QUEUE)) {
            q.drop();
        } finally {
            queue.close();
            client.close();
        }
    }

    /** Another handle on the same queue, as another process would have. */
    MongoMqQueue sameQueue(Client c) {
        return c.queue(db, "q", QUEUE);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String s(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    static Lease must(Optional<Lease> l) {
        assertTrue(l.isPresent(), "expected a lease, the claim found nothing");
        return l.get();
    }
}
