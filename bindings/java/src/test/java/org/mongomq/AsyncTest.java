package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The async scenarios of bindings/CONTRACT.md ("Async (0.6.0)") through {@link AsyncQueue}
 * and {@link AsyncWorker}, and the async surface's edges (errors through the futures,
 * the executor's thread interrupted, heartbeat, unclaim after a stop).
 */
class AsyncTest extends QueueTestBase {
    private static final WorkerOptions W = WorkerOptions.defaults();
    /** Completes the handlers' stages later, from threads of its own (not the worker's). */
    private ScheduledExecutorService later;

    @BeforeEach
    void startTimer() {
        later = Executors.newScheduledThreadPool(2);
    }

    @AfterEach
    void stopTimer() {
        later.shutdownNow();
    }

    /** A stage completed with null after {@code millis} on another thread. */
    private CompletableFuture<Void> after(long millis) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        later.schedule(() -> f.complete(null), millis, TimeUnit.MILLISECONDS);
        return f;
    }

    private static <T> T await(CompletableFuture<T> f) throws Exception {
        return f.get(30, TimeUnit.SECONDS);
    }

    /** The claim task has left the one-thread executor: a task queued behind it runs. */
    private static double secondsUntilFree(ExecutorService one) throws Exception {
        long t0 = System.nanoTime();
        one.submit(() -> {}).get(10, TimeUnit.SECONDS);
        return (System.nanoTime() - t0) / 1e9;
    }

    // ---- the CONTRACT scenarios --------------------------------------------------------

    @Test
    void asyncRoundTrip() throws Exception {
        AsyncQueue a = queue.async();
        long s1 = await(a.publish("g", b("e1")));
        Published k1 = await(a.publishWith("g", b("e2"), P.dedupKey("k")));
        Published k2 = await(a.publishWith("other", b("e3"), P.dedupKey("k")));
        assertFalse(k1.duplicate());
        assertEquals(new Published(k1.seq(), true), k2, "the dedup flag and the seq of the key's event");
        assertEquals(later(s1, 1), k1.seq(), "g's next seq");
        List<Published> outcomes;
        long first;
        try (Batch batch = new Batch(); Batch plain = new Batch()) {
            batch.add("h", b("b1"), P.dedupKey("x")).add("h", b("b2"), P.dedupKey("x")).add("h", b("b3"));
            outcomes = await(a.publishWith(batch));
            plain.add("i", b("p1")).add("i", b("p2"));
            first = await(a.publish(plain));
        }
        assertEquals(3, outcomes.size());
        assertFalse(outcomes.get(0).duplicate());
        assertEquals(new Published(outcomes.get(0).seq(), true), outcomes.get(1), "the second x is a duplicate");
        assertEquals(new Published(later(outcomes.get(0).seq(), 2), false), outcomes.get(2), "the duplicate took a seq");
        if (PARTITIONS == 1) assertEquals(outcomes.get(2).seq() + 1, first);
        assertTrue(inPartitionOf(first, "i"), "the plain batch's first seq is i's: " + first);
        assertEquals(6, await(a.stats()).messages(), "e1, e2, b1, b3, p1, p2");

        Lease l = must(await(a.claim(in("g"))));
        assertEquals("g", l.group());
        assertEquals(s1, l.seq());
        assertEquals("e1", s(l.event()));
        assertEquals(1, l.attempts());
        Instant before = l.deadline();
        assertEquals(null, await(a.extend(l, Duration.ofSeconds(120))));
        assertTrue(l.deadline().isAfter(before.plusSeconds(60)), "extend moved the deadline: " + before + " -> " + l.deadline());
        await(a.nack(l));
        Lease again = must(await(a.claim(in(C.wait(Duration.ofSeconds(5)), "g"))));
        assertEquals(s1, again.seq(), "the nacked event again");
        assertEquals(2, again.attempts());
        await(a.ack(again));
        Lease next = must(await(a.claim()));
        assertTrue(next.seq() != s1, "the ack removed e1");
        await(a.unclaim(next));
        assertEquals(5, await(a.stats()).messages());
        assertEquals(5, queue.stats().messages(), "the sync view agrees");
        // An error is the sync call's exception, unwrapped in the ExecutionException.
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(a.ack(again)));
        assertInstanceOf(LeaseLostException.class, e.getCause(), "a second ack is lease lost");
    }

    @Test
    void asyncClaimCancelled() throws Exception {
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            AsyncQueue a = queue.async(one);
            ClaimOptions wait30 = C.wait(Duration.ofSeconds(30));

            // future.cancel(true)
            CompletableFuture<Optional<Lease>> f = a.claim(wait30);
            Thread.sleep(300); // in its wait
            assertFalse(f.isDone());
            long t0 = System.nanoTime();
            assertTrue(f.cancel(true));
            double freed = secondsUntilFree(one);
            assertTrue(freed < 5, "cancel(true) ended the C claim: the executor's thread was free after " + freed + " s");
            assertThrows(CancellationException.class, f::join);
            System.out.printf("asyncClaimCancelled: cancel(true) freed the claim in %.3f s%n", (System.nanoTime() - t0) / 1e9);

            // an interrupted waiter: the thread blocked in get()
            CompletableFuture<Optional<Lease>> g = a.claim(wait30);
            AtomicReference<Throwable> waiterGot = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    g.get();
                } catch (Throwable t) {
                    waiterGot.set(t);
                }
            });
            waiter.start();
            Thread.sleep(300);
            waiter.interrupt();
            waiter.join(5000);
            assertInstanceOf(InterruptedException.class, waiterGot.get());
            assertTrue(g.isCancelled(), "the interrupted get() cancelled the claim");
            freed = secondsUntilFree(one);
            assertTrue(freed < 5, "the interrupted waiter ended the C claim: free after " + freed + " s");

            // a timeout (orTimeout completes the future; the claim ends with it)
            CompletableFuture<Optional<Lease>> h = a.claim(wait30);
            h.orTimeout(300, TimeUnit.MILLISECONDS);
            ExecutionException e = assertThrows(ExecutionException.class, () -> h.get(10, TimeUnit.SECONDS));
            assertInstanceOf(TimeoutException.class, e.getCause());
            freed = secondsUntilFree(one);
            assertTrue(freed < 5, "the timeout ended the C claim: free after " + freed + " s");

            // No claim is left running in C: no group leased, and the next claim gets a
            // new event with attempts 1.
            assertEquals(0, queue.stats().groups().leased(), "no leased group");
            long seq = queue.publish("g", b("after"));
            Thread.sleep(200); // a claim still running would take it now
            assertEquals(0, queue.stats().groups().leased(), "nobody took the new event");
            Lease l = must(await(a.claim(C.wait(Duration.ofSeconds(5)))));
            assertEquals(seq, l.seq());
            assertEquals(1, l.attempts());
            queue.ack(l);
        } finally {
            one.shutdownNow();
        }
    }

    @Test
    void asyncWorkerHandlesAll() throws Exception {
        for (int i = 0; i < 40; i++) queue.publish("g" + (i % 8), b("e" + i));
        Map<String, List<Integer>> seen = new ConcurrentHashMap<>();
        Set<String> held = ConcurrentHashMap.newKeySet();
        AtomicInteger heldTwice = new AtomicInteger();
        AtomicInteger pending = new AtomicInteger();
        AtomicInteger maxPending = new AtomicInteger();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch all = new CountDownLatch(40);
        try (AsyncWorker w = queue.async().worker(W.concurrency(4).onError(errors::add), lease -> {
            if (!held.add(lease.group())) heldTwice.incrementAndGet();
            maxPending.accumulateAndGet(pending.incrementAndGet(), Math::max);
            seen.computeIfAbsent(lease.group(), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(Integer.parseInt(s(lease.event()).substring(1)));
            return after(20).thenRun(() -> {
                pending.decrementAndGet();
                held.remove(lease.group());
                all.countDown();
            });
        })) {
            assertTrue(all.await(60, TimeUnit.SECONDS), "all 40 handled");
        }
        assertEquals(List.of(), errors);
        assertEquals(0, heldTwice.get(), "no group in two handlers at once");
        assertTrue(maxPending.get() <= 4, "at most concurrency stages pending: " + maxPending.get());
        assertTrue(maxPending.get() >= 2, "stages pending at once (no thread each): " + maxPending.get());
        assertEquals(8, seen.size());
        for (Map.Entry<String, List<Integer>> e : seen.entrySet()) {
            int g = Integer.parseInt(e.getKey().substring(1));
            List<Integer> expect = new ArrayList<>();
            for (int i = g; i < 40; i += 8) expect.add(i);
            assertEquals(expect, e.getValue(), "group " + e.getKey() + " handled once each, in publish order");
        }
        assertEquals(0, queue.stats().messages(), "every event acked");
    }

    @Test
    void asyncWorkerRetriesFailure() throws Exception {
        long seq = queue.publish("g", b("flaky"));
        List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch succeeded = new CountDownLatch(1);
        WorkerOptions opts = W.backoffBase(Duration.ofMillis(10)).onError(failures::add);
        try (AsyncWorker w = queue.async().worker(opts, lease -> {
            assertEquals(seq, lease.seq());
            attempts.add(lease.attempts());
            if (lease.attempts() <= 2) {
                return after(5).thenRun(() -> {
                    throw new IllegalStateException("fail #" + lease.attempts());
                });
            }
            return after(5).thenRun(succeeded::countDown);
        })) {
            assertTrue(succeeded.await(30, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (queue.stats().messages() > 0 && System.nanoTime() < deadline) Thread.sleep(20);
        }
        assertEquals(List.of(1, 2, 3), attempts, "seen 3 times with attempts 1, 2, 3");
        assertEquals(2, failures.size(), "each failure reported: " + failures);
        for (Throwable t : failures) {
            assertInstanceOf(IllegalStateException.class, t, "the stage's own exception, unwrapped");
        }
        assertEquals(0, queue.stats().messages(), "then acked");
    }

    @Test
    void asyncWorkerIdleStop() throws Exception {
        for (int i = 0; i < 5; i++) queue.publish("g" + (i % 2), b("e" + i));
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        long t0 = System.nanoTime();
        CompletableFuture<Void> run = queue.async().work(W.concurrency(2).idleTimeout(Duration.ofSeconds(1)), lease -> {
            handled.add(lease.text());
            return after(10);
        });
        run.get(30, TimeUnit.SECONDS); // the awaited run returns
        double took = (System.nanoTime() - t0) / 1e9;
        assertEquals(5, handled.size(), "the 5 handled: " + handled);
        assertTrue(took >= 0.9, "not before the queue was idle 1 s: " + took + " s");
        assertTrue(took < 20, "stopped by itself: " + took + " s");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void asyncWorkerGracefulStop() throws Exception {
        queue.publish("a", b("first"));
        queue.publish("b", b("second"));
        CountDownLatch running = new CountDownLatch(1);
        AtomicBoolean finished = new AtomicBoolean();
        AtomicInteger handled = new AtomicInteger();
        List<String> ran = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        AsyncWorker w = queue.async().worker(W.concurrency(1).onError(errors::add), lease -> {
            handled.incrementAndGet();
            ran.add(s(lease.event()));
            running.countDown();
            return after(1000).thenRun(() -> finished.set(true));
        });
        assertTrue(running.await(20, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        w.stop();
        assertFalse(w.isRunning());
        w.termination().get(10, TimeUnit.SECONDS); // the stop's await returns
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(finished.get(), "the stop waited for the running handler");
        assertTrue(took < 10, "the stop's await returned: " + took + " s");
        assertTrue(w.isTerminated());
        Thread.sleep(300);
        assertEquals(1, handled.get(), "no claim after the stop");
        assertEquals(List.of(), errors);
        assertEquals(1, queue.stats().messages(), "the running handler's event was acked, the other left");
        // a waited longest; with P partitions the first claim may start at b's partition.
        if (PARTITIONS == 1) assertEquals(List.of("first"), ran);
        assertEquals(ran.equals(List.of("first")) ? "second" : "first", s(must(queue.claim()).event()));
    }

    // ---- beyond the scenarios ----------------------------------------------------------

    @Test
    void asyncErrorsComeThroughTheFuture() throws Exception {
        AsyncQueue a = queue.async();
        ExecutionException e = assertThrows(ExecutionException.class, () -> await(a.publish("", b("x"))));
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
        e = assertThrows(ExecutionException.class, () -> await(a.claim(null)));
        assertInstanceOf(IllegalArgumentException.class, e.getCause());
        assertEquals(Optional.empty(), await(a.claim()), "an empty queue: no lease");
        try (Client c = Client.connect(uri()); MongoMqQueue q = sameQueue(c)) {
            AsyncQueue closed = q.async();
            q.close();
            e = assertThrows(ExecutionException.class, () -> await(closed.stats()));
            assertInstanceOf(ClosedException.class, e.getCause());
            assertThrows(ClosedException.class, () -> closed.worker(W, l -> after(0)));
        }
    }

    @Test
    void asyncClaimEndedByInterruptOfItsThread() throws Exception {
        ExecutorService one = Executors.newSingleThreadExecutor();
        try {
            CompletableFuture<Optional<Lease>> f = queue.async(one).claim(C.wait(Duration.ofSeconds(30)));
            Thread.sleep(300);
            long t0 = System.nanoTime();
            one.shutdownNow(); // interrupts the executor's thread, in the claim
            ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
            assertInstanceOf(CancelledException.class, e.getCause());
            assertTrue((System.nanoTime() - t0) / 1e9 < 5);
            assertTrue(one.awaitTermination(5, TimeUnit.SECONDS), "the claim's thread ended");
        } finally {
            one.shutdownNow();
        }
    }

    @Test
    void asyncCancelRaceNeverKeepsALease() throws Exception {
        // Cancels land before, during and just after claims that find an event: each lease
        // a cancelled claim got is given back (unclaim), so the event stays at attempts 1.
        long seq = queue.publish("g", b("x"));
        AsyncQueue a = queue.async();
        int got = 0;
        java.util.Random random = new java.util.Random();
        for (int i = 0; i < 40; i++) {
            CompletableFuture<Optional<Lease>> f = a.claim(C.wait(Duration.ofSeconds(5)));
            LockSupport.parkNanos(random.nextInt(3000) * 1000L);
            if (!f.cancel(true)) {
                Lease l = must(f.join());
                got++;
                queue.unclaim(l); // ours: give it back ourselves
            }
        }
        Thread.sleep(200); // the last cancelled claim's unclaim
        Lease l = must(queue.claim(C.wait(Duration.ofSeconds(5))));
        assertEquals(seq, l.seq());
        assertEquals(1, l.attempts(), "no lease of a cancelled claim was counted or kept");
        System.out.printf("asyncCancelRaceNeverKeepsALease: %d of 40 claims completed before their cancel%n", got);
    }

    @Test
    void asyncWorkerHandlerThrowsOrReturnsNull() throws Exception {
        queue.publish("g", b("x"));
        List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(1);
        WorkerOptions opts = W.backoffBase(Duration.ofMillis(5)).onError(failures::add);
        try (AsyncWorker w = queue.async().worker(opts, lease -> {
            attempts.add(lease.attempts());
            if (lease.attempts() == 1) throw new IllegalStateException("thrown, not a stage");
            if (lease.attempts() == 2) return null;
            done.countDown();
            return CompletableFuture.completedFuture("ok");
        })) {
            assertTrue(done.await(20, TimeUnit.SECONDS));
        }
        assertEquals(List.of(1, 2, 3), attempts);
        assertInstanceOf(IllegalStateException.class, failures.get(0));
        assertInstanceOf(NullPointerException.class, failures.get(1));
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void asyncWorkerExtendsWhileStagePending() throws Exception {
        queue.publish("g", b("slow"));
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Void> slow = new CompletableFuture<>();
        AtomicInteger stolen = new AtomicInteger();
        WorkerOptions opts = W.visibility(Duration.ofSeconds(2)).onError(errors::add);
        try (Client other = Client.connect(uri()); MongoMqQueue rival = sameQueue(other);
             AsyncWorker w = queue.async().worker(opts, lease -> {
                 started.countDown();
                 return slow;
             })) {
            assertTrue(started.await(20, TimeUnit.SECONDS));
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6); // 3x the visibility
            while (System.nanoTime() < end) {
                if (rival.claim().isPresent()) stolen.incrementAndGet();
                Thread.sleep(200);
            }
            slow.complete(null);
        }
        assertEquals(0, stolen.get(), "nobody else got the group while the stage was pending");
        assertEquals(List.of(), errors, "the heartbeat kept the lease and the ack was OK");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void asyncWorkerStopAfterClaim() throws Exception {
        long seq = queue.publish("g", b("always fails"));
        AtomicInteger calls = new AtomicInteger();
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        WorkerOptions opts = W.concurrency(2).backoffBase(Duration.ofMillis(1)).backoffCap(Duration.ofMillis(1))
                .onError(t -> {
                    if (!(t instanceof IllegalStateException)) errors.add(t);
                });
        java.util.Random random = new java.util.Random();
        for (int cycle = 0; cycle < 30; cycle++) {
            AsyncWorker w = queue.async().worker(opts, lease -> {
                calls.incrementAndGet();
                return CompletableFuture.failedFuture(new IllegalStateException("always fails"));
            });
            int pauseMicros = random.nextInt(4000);
            if (pauseMicros > 0) LockSupport.parkNanos(pauseMicros * 1000L);
            w.close();
            assertTrue(w.isTerminated());
        }
        Lease l = must(queue.claim(C.wait(Duration.ofSeconds(10))));
        assertEquals(seq, l.seq());
        assertEquals(calls.get() + 1, l.attempts(),
                "each delivery was seen by a handler: attempts = handler calls (" + calls.get() + ") + 1");
        assertEquals(List.of(), errors);
    }

    @Test
    void asyncWorkerAbandonsAfterShutdownTimeout() throws Exception {
        queue.publish("g", b("never ends"));
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Void> never = new CompletableFuture<>();
        AsyncWorker w = queue.async().worker(W.visibility(Duration.ofSeconds(2)).shutdownTimeout(Duration.ofMillis(500)),
                lease -> {
                    started.countDown();
                    return never;
                });
        assertTrue(started.await(20, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        w.close();
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(took >= 0.4 && took < 5, "close waited the shutdown timeout, then abandoned: " + took + " s");
        assertTrue(never.isCancelled(), "the abandoned stage was cancelled");
        assertEquals(1, queue.stats().messages(), "not acked: the lease expires and is redelivered");
        Lease l = must(queue.claim(C.wait(Duration.ofSeconds(10))));
        assertEquals(2, l.attempts(), "redelivered after the lease ran out");
    }
}
