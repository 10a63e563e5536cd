package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** The safety scenarios: no sequence of calls crashes the JVM. */
class SafetyTest extends QueueTestBase {

    private static void closedError(String what, Executable call) {
        ClosedException e = assertThrows(ClosedException.class, call, what);
        assertInstanceOf(IllegalStateException.class, e, "Java's own error for a closed object");
        assertTrue(e.getMessage().contains(what + " is closed"), e.getMessage());
    }

    @Test
    void safetyUseAfterClose() {
        queue.publish("g", b("x"));
        Lease lease = must(queue.claim(C.visibility(Duration.ofSeconds(1))));

        lease.close();
        closedError("lease", lease::seq);
        closedError("lease", lease::group);
        closedError("lease", lease::event);
        closedError("lease", lease::attempts);
        closedError("lease", lease::partition);
        closedError("lease", lease::deadline);
        closedError("lease", lease::events);
        closedError("lease", lease::text);
        closedError("lease", lease::json);
        closedError("lease", lease::attrs);
        closedError("lease", () -> lease.attrsAt(0));
        closedError("lease", () -> lease.attr("a"));
        closedError("lease", () -> queue.ack(lease));
        closedError("lease", () -> queue.nack(lease, Duration.ZERO));
        closedError("lease", () -> queue.unclaim(lease));
        closedError("lease", () -> queue.extend(lease, VIS));

        Client c2 = Client.connect(uri());
        MongoMqQueue q2 = sameQueue(c2);
        Lease l2 = must(q2.claim(C.wait(Duration.ofSeconds(15)))); // the closed lease's group, once it expired
        q2.close();
        closedError("queue", () -> q2.publish("g", b("x")));
        closedError("queue", () -> q2.claim());
        closedError("queue", () -> q2.claim(C.wait(Duration.ofSeconds(1))));
        closedError("queue", () -> q2.ack(l2));
        closedError("queue", () -> q2.nack(l2, Duration.ZERO));
        closedError("queue", () -> q2.unclaim(l2));
        closedError("queue", () -> q2.extend(l2, VIS));
        closedError("queue", q2::stats);
        closedError("queue", q2::deadCount);
        closedError("queue", q2::repair);
        closedError("queue", q2::drop);
        closedError("queue", q2::interrupt);
        closedError("queue", q2::now);
        closedError("queue", q2::partitions);
        closedError("queue", () -> q2.claim(C.partitions(0)));
        closedError("queue", () -> q2.purgeGroup("g"));
        closedError("queue", () -> q2.setMaxAttempts(1));
        closedError("queue", () -> q2.peek(1));
        closedError("queue", () -> q2.deadList(1));
        closedError("queue", () -> q2.setRepairInterval(VIS));
        closedError("queue", q2::repairCounts);
        closedError("queue", q2::groups);
        closedError("queue", () -> q2.groups(GroupsOptions.defaults().limit(2)));
        closedError("queue", () -> q2.pauseGroup("g"));
        closedError("queue", () -> q2.resumeGroup("g"));
        closedError("queue", () -> q2.deadPage(0, 1));
        closedError("queue", () -> q2.publishWith("g", b("x"), P.dedupKey("k")));
        closedError("queue", () -> q2.setDedupWindow(VIS));
        closedError("queue", () -> q2.setDedupScope(DedupScope.GROUP));
        closedError("queue", () -> q2.worker(WorkerOptions.defaults(), l -> {}));
        closedError("queue", () -> q2.work(WorkerOptions.defaults(), l -> {}));
        try (Batch batch = new Batch().add("g", b("x"))) {
            closedError("queue", () -> q2.publish(batch));
            closedError("queue", () -> q2.publishWith(batch));
        }
        // The lease outlived its queue: still a value, and another queue handle acks it.
        assertEquals("g", l2.group());
        queue.ack(l2);

        c2.close();
        closedError("client", () -> c2.queue(db, "q"));
        closedError("client", () -> c2.queue(db, "q", QueueOptions.defaults()));
        closedError("client", c2::writeConcernErrors);
        closedError("client", c2::commandCount);

        Batch batch = new Batch();
        batch.close();
        closedError("batch", () -> batch.add("g", b("x")));
        closedError("batch", batch::size);
        closedError("batch", () -> queue.publish(batch));
        closedError("batch", () -> queue.publishWith(batch));
    }

    @Test
    void safetyCloseTwice() {
        Client c = Client.connect(uri());
        MongoMqQueue q = sameQueue(c);
        q.publish("g", b("x"));
        Lease l = must(q.claim());
        Batch batch = new Batch();
        Worker w = q.worker(WorkerOptions.defaults().shutdownTimeout(Duration.ofSeconds(5)), lease -> {});
        assertDoesNotThrow(() -> {
            w.close();
            w.close();
            l.close();
            l.close();
            batch.close();
            batch.close();
            q.close();
            q.close();
            c.close();
            c.close();
        });
        assertTrue(q.handle().isFreed() && c.handle().isFreed() && l.handle().isFreed() && batch.handle().isFreed());
    }

    @Test
    void safetyQueueKeepsClient() throws Exception {
        // Client closed first: the queue goes on working; the client goes with the queue.
        Client c = Client.connect(uri());
        MongoMqQueue q = sameQueue(c);
        c.close();
        assertFalse(c.handle().isFreed(), "the queue holds the client");
        long seq = q.publish("g", b("x"));
        Lease l = must(q.claim());
        assertEquals(seq, l.seq());
        q.ack(l);
        q.close();
        assertTrue(q.handle().isFreed());
        assertTrue(c.handle().isFreed(), "the last queue's close freed the client");

        // The other order.
        Client c2 = Client.connect(uri());
        MongoMqQueue q2 = sameQueue(c2);
        q2.close();
        assertFalse(c2.handle().isFreed());
        c2.close();
        assertTrue(c2.handle().isFreed());

        // A close while another thread waits on the queue: the wait finishes, then the queue goes.
        Client c3 = Client.connect(uri());
        MongoMqQueue q3 = sameQueue(c3);
        ExecutorService ex = Executors.newSingleThreadExecutor();
        try {
            Future<Boolean> waiting = ex.submit(() -> q3.claim(C.wait(Duration.ofSeconds(2))).isPresent());
            Thread.sleep(300);
            q3.close();
            c3.close();
            assertFalse(waiting.get(10, TimeUnit.SECONDS));
            assertTrue(q3.handle().isFreed() && c3.handle().isFreed());
        } finally {
            ex.shutdownNow();
        }
    }

    @Test
    void safetyGcAnyOrder() throws Exception {
        queue.publish("g", b("x"));
        List<Handle> handles = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            // Nothing closed: clients, queues, leases and batches left to the garbage collector.
            for (int i = 0; i < 10; i++) {
                Client c = Client.connect(uri());
                MongoMqQueue q = sameQueue(c);
                Batch batch = new Batch().add("h" + i, b("y"));
                handles.add(c.handle());
                handles.add(q.handle());
                handles.add(batch.handle());
                if (i == 0 && round == 0) {
                    Lease l = must(q.claim()); // a lease outliving its queue and client
                    handles.add(l.handle());
                }
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (handles.stream().anyMatch(h -> !h.isFreed()) && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        long left = handles.stream().filter(h -> !h.isFreed()).count();
        assertEquals(0, left, "every C handle was freed by the Cleaner");
        // And the process is fine: the queue still works.
        queue.publish("g2", b("z"));
    }
}
