package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Each test gets a queue in a database of its own (mqt_java_<random>), dropped at the end. */
abstract class QueueTestBase {
    /** The default visibility (ClaimOptions.defaults()). */
    static final Duration VIS = Duration.ofSeconds(30);
    /** The default options, to derive the tests' options from. */
    static final ClaimOptions C = ClaimOptions.defaults();
    static final PublishOptions P = PublishOptions.defaults();

    Client client;
    MongoMqQueue queue;
    String db;

    static String uri() {
        String u = System.getenv("MONGOMQ_TEST_URI");
        assertNotNull(u, "MONGOMQ_TEST_URI must name the test server (scripts/test-server.sh start)");
        return u;
    }

    @BeforeEach
    void openQueue() {
        db = "mqt_java_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        client = Client.connect(uri());
        queue = client.queue(db, "q");
    }

    @AfterEach
    void dropQueue() {
        try (Client c = Client.connect(uri()); MongoMqQueue q = c.queue(db, "q")) {
            q.drop();
        } finally {
            queue.close();
            client.close();
        }
    }

    /** Another handle on the same queue, as another process would have. */
    MongoMqQueue sameQueue(Client c) {
        return c.queue(db, "q");
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
