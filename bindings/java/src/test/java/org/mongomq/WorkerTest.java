package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** The worker scenarios of bindings/CONTRACT.md. */
class WorkerTest extends QueueTestBase {

    @Test
    void workerAcksSuccess() throws Exception {
        for (int i = 0; i < 50; i++) queue.publish("g" + (i % 5), b("e" + i));
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        Set<String> held = ConcurrentHashMap.newKeySet();
        AtomicInteger heldTwice = new AtomicInteger();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch all = new CountDownLatch(50);
        WorkerOptions opts = WorkerOptions.defaults().concurrency(4).onError(errors::add);
        try (Worker w = queue.worker(opts, lease -> {
            if (!held.add(lease.group())) heldTwice.incrementAndGet();
            seen.computeIfAbsent(lease.group(), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(Integer.parseInt(s(lease.event()).substring(1)));
            Thread.sleep(5);
            held.remove(lease.group());
            all.countDown();
        })) {
            assertTrue(all.await(60, TimeUnit.SECONDS), "all 50 handled");
        }
        assertEquals(List.of(), errors);
        assertEquals(0, heldTwice.get());
        assertEquals(5, seen.size());
        for (Map.Entry<String, List<Integer>> e : seen.entrySet()) {
            int g = Integer.parseInt(e.getKey().substring(1));
            List<Integer> expect = new ArrayList<>();
            for (int i = g; i < 50; i += 5) expect.add(i);
            assertEquals(expect, e.getValue(), "group " + e.getKey() + " handled once each, in order");
        }
        assertEquals(0, queue.stats().messages(), "every event acked");
    }

    @Test
    void workerNacksFailureBackoff() throws Exception {
        long seq = queue.publish("g", b("flaky"));
        List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
        List<Long> times = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch succeeded = new CountDownLatch(1);
        WorkerOptions opts = WorkerOptions.defaults().backoffBase(Duration.ofMillis(300)).backoffCap(Duration.ofSeconds(5))
                .onError(t -> {});
        try (Worker w = queue.worker(opts, lease -> {
            assertEquals(seq, lease.seq());
            attempts.add(lease.attempts());
            times.add(System.nanoTime());
            if (lease.attempts() <= 2) throw new IllegalStateException("fail #" + lease.attempts());
            succeeded.countDown();
        })) {
            assertTrue(succeeded.await(30, TimeUnit.SECONDS));
            // The delays the worker asks for grow: min(cap, base * 2^(attempts-1)) * [0.5, 1].
            for (int a = 1; a <= 6; a++) {
                double max = Math.min(5.0, 0.3 * Math.pow(2, a - 1));
                for (int k = 0; k < 50; k++) {
                    double d = w.backoff(a).toNanos() / 1e9;
                    assertTrue(d >= max * 0.5 - 1e-9 && d <= max + 1e-9, "attempt " + a + ": " + d);
                }
            }
        }
        assertEquals(List.of(1, 2, 3), attempts, "seen 3 times, then acked");
        assertEquals(0, queue.stats().messages());
        System.out.printf("workerNacksFailureBackoff: redelivery gaps %.3f s, %.3f s%n",
                (times.get(1) - times.get(0)) / 1e9, (times.get(2) - times.get(1)) / 1e9);
    }

    @Test
    void workerExtendsLease() throws Exception {
        queue.publish("g", b("slow"));
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch finished = new CountDownLatch(1);
        AtomicInteger stolen = new AtomicInteger();
        WorkerOptions opts = WorkerOptions.defaults().visibility(Duration.ofSeconds(2)).onError(errors::add);
        try (Client other = Client.connect(uri()); MongoMqQueue rival = sameQueue(other);
             Worker w = queue.worker(opts, lease -> {
                 started.countDown();
                 Thread.sleep(6000); // 3x the visibility
                 finished.countDown();
             })) {
            assertTrue(started.await(20, TimeUnit.SECONDS));
            while (finished.getCount() > 0) {
                if (rival.claim().isPresent()) stolen.incrementAndGet();
                Thread.sleep(200);
            }
        }
        assertEquals(0, stolen.get(), "nobody else got the group while the handler ran");
        assertEquals(List.of(), errors, "the heartbeat kept the lease and the ack was OK");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void workerDeadLetters() throws Exception {
        queue.publish("g", b("poison"));
        AtomicInteger calls = new AtomicInteger();
        WorkerOptions opts = WorkerOptions.defaults().maxAttempts(2).backoffBase(Duration.ofMillis(20))
                .backoffCap(Duration.ofMillis(50)).onError(t -> {});
        try (Worker w = queue.worker(opts, lease -> {
            calls.incrementAndGet();
            throw new RuntimeException("always fails");
        })) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (queue.deadCount() < 1 && System.nanoTime() < deadline) Thread.sleep(100);
        }
        assertEquals(1, queue.deadCount(), "the event ended in the dead letters");
        assertEquals(2, calls.get(), "handled max attempts times");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void workerGracefulShutdown() throws Exception {
        queue.publish("a", b("first"));
        queue.publish("b", b("second"));
        CountDownLatch running = new CountDownLatch(1);
        AtomicBoolean finished = new AtomicBoolean();
        AtomicInteger handled = new AtomicInteger();
        List<String> ran = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        Worker w = queue.worker(WorkerOptions.defaults().concurrency(1).onError(errors::add), lease -> {
            handled.incrementAndGet();
            ran.add(s(lease.event()));
            running.countDown();
            Thread.sleep(1000);
            finished.set(true);
        });
        assertTrue(running.await(20, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        w.close();
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(finished.get(), "close waited for the running handler");
        assertFalse(w.isRunning());
        assertTrue(took < 10, "close returned: " + took + " s");
        Thread.sleep(300);
        assertEquals(1, handled.get(), "no claim after the stop");
        assertEquals(List.of(), errors);
        assertEquals(1, queue.stats().messages(), "the running handler's event was acked, the other left");
        // a waited longest; with P partitions the first claim may start at b's partition.
        if (PARTITIONS == 1) assertEquals(List.of("first"), ran);
        assertEquals(ran.equals(List.of("first")) ? "second" : "first", s(must(queue.claim()).event()));
    }

    @Test
    void workerStopAfterClaim() throws Exception {
        long seq = queue.publish("g", b("always fails"));
        AtomicInteger calls = new AtomicInteger();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        WorkerOptions opts = WorkerOptions.defaults().concurrency(2).backoffBase(Duration.ofMillis(1))
                .backoffCap(Duration.ofMillis(1)).onError(t -> {
                    if (!(t instanceof IllegalStateException)) errors.add(t); // not the handler's own failure
                });
        Random random = new Random();
        for (int cycle = 0; cycle < 30; cycle++) {
            Worker w = queue.worker(opts, lease -> {
                calls.incrementAndGet();
                throw new IllegalStateException("always fails");
            });
            // Stop at once, or a moment later: the stop lands before, during or just after
            // the first claims, so sometimes a claim returns its lease just as it comes.
            int pauseMicros = random.nextInt(4000);
            if (pauseMicros > 0) LockSupport.parkNanos(pauseMicros * 1000L);
            w.close();
        }
        Lease l = must(queue.claim(C.wait(Duration.ofSeconds(10))));
        assertEquals(seq, l.seq());
        assertEquals(calls.get() + 1, l.attempts(),
                "each delivery was seen by a handler: attempts = handler calls (" + calls.get() + ") + 1");
        assertEquals(List.of(), errors);
        System.out.printf("workerStopAfterClaim: %d handler calls in 30 cycles%n", calls.get());
    }
}
