package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** The worker's lifecycle beyond the CONTRACT scenarios (WorkerTest): work/worker, idle timeout, signals, on_error. */
class WorkerLifecycleTest extends QueueTestBase {
    private static final WorkerOptions W = WorkerOptions.defaults();

    @Test
    void idleTimeoutEndsWork() {
        for (int i = 0; i < 6; i++) queue.publish("g" + (i % 3), b("e" + i));
        List<String> handled = Collections.synchronizedList(new ArrayList<>());
        long t0 = System.nanoTime();
        queue.work(W.concurrency(2).idleTimeout(Duration.ofMillis(1500)), lease -> handled.add(lease.text()));
        double took = (System.nanoTime() - t0) / 1e9;
        assertEquals(6, handled.size(), "work() returned after handling everything: " + handled);
        assertTrue(took >= 1.4, "not before the queue was idle 1.5 s: " + took + " s");
        assertTrue(took < 20, "work() ended by itself: " + took + " s");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void idleTimeoutCountsFromTheLastHandler() {
        queue.publish("g", b("slow"));
        long t0 = System.nanoTime();
        queue.work(W.idleTimeout(Duration.ofMillis(500)), lease -> Thread.sleep(1500));
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(took >= 1.9, "a running handler is not idleness: " + took + " s");
        assertEquals(0, queue.stats().messages(), "the slow handler's event was acked");
    }

    @Test
    void workerStopAndAwait() throws Exception {
        queue.publish("g", b("x"));
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Worker w = queue.worker(W.concurrency(3), lease -> {
            running.countDown();
            release.await();
        });
        try {
            assertTrue(running.await(20, TimeUnit.SECONDS));
            List<Thread> threads = workerThreads();
            assertEquals(3, threads.size(), "concurrency 3: " + threads);
            for (Thread t : threads) assertFalse(t.isDaemon(), t + " keeps the JVM alive: not a daemon");
            assertTrue(w.isRunning());
            long t0 = System.nanoTime();
            w.stop();
            assertTrue((System.nanoTime() - t0) / 1e9 < 1, "stop() does not wait");
            assertFalse(w.isRunning());
            assertFalse(w.awaitTermination(Duration.ofMillis(300)), "the handler still runs");
            assertFalse(w.isTerminated());
            release.countDown();
            assertTrue(w.awaitTermination(Duration.ofSeconds(20)), "ended once the handler returned");
            assertTrue(w.isTerminated());
        } finally {
            release.countDown();
            w.close();
        }
        assertEquals(0, queue.stats().messages(), "the running handler's event was acked");
    }

    private static List<Thread> workerThreads() {
        List<Thread> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("mongomq-worker-") && t.isAlive()) out.add(t);
        }
        return out;
    }

    @Test
    void closeAbandonsAfterShutdownTimeout() throws Exception {
        queue.publish("g", b("stuck"));
        CountDownLatch running = new CountDownLatch(1);
        AtomicReference<Throwable> seen = new AtomicReference<>();
        Worker w = queue.worker(W.shutdownTimeout(Duration.ofMillis(500)).visibility(Duration.ofSeconds(2)), lease -> {
            running.countDown();
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                seen.set(e); // abandoned: the handler is interrupted
                throw e;
            }
        });
        assertTrue(running.await(20, TimeUnit.SECONDS));
        long t0 = System.nanoTime();
        w.close();
        double took = (System.nanoTime() - t0) / 1e9;
        assertTrue(took >= 0.4 && took < 10, "close waited the shutdown timeout, then returned: " + took + " s");
        assertTrue(w.awaitTermination(Duration.ofSeconds(10)), "the interrupted handler's thread ended");
        assertTrue(seen.get() instanceof InterruptedException, "the abandoned handler was interrupted");
        // Abandoned: neither acked nor nacked; the lease expires and the event comes back (attempts 2).
        Lease again = must(queue.claim(C.wait(Duration.ofSeconds(15))));
        assertEquals(2, again.attempts());
    }

    @Test
    void interruptOfWorkStopsIt() throws Exception {
        queue.publish("g", b("x"));
        CountDownLatch running = new CountDownLatch(1);
        AtomicInteger handled = new AtomicInteger();
        AtomicReference<Boolean> interruptedAfter = new AtomicReference<>();
        Thread t = new Thread(() -> {
            queue.work(W, lease -> {
                running.countDown();
                Thread.sleep(500);
                handled.incrementAndGet();
            });
            interruptedAfter.set(Thread.currentThread().isInterrupted());
        });
        t.start();
        assertTrue(running.await(20, TimeUnit.SECONDS));
        t.interrupt(); // the caller's thread: a graceful stop
        t.join(20_000);
        assertFalse(t.isAlive(), "work() returned");
        assertEquals(1, handled.get(), "the running handler finished");
        assertEquals(Boolean.TRUE, interruptedAfter.get(), "work() returns with the interrupt status set");
        assertEquals(0, queue.stats().messages());
    }

    @Test
    void queueInterruptEndsWork() throws Exception {
        Thread t = new Thread(() -> queue.work(W.concurrency(2).onError(e -> {}), lease -> {}));
        t.start();
        Thread.sleep(300);
        queue.interrupt();
        t.join(20_000);
        assertFalse(t.isAlive(), "interrupt() of the queue ends its workers, so work() returns");
    }

    @Test
    void handlerCanStopItsWorker() throws Exception {
        for (int i = 0; i < 3; i++) queue.publish("g", b("e" + i));
        AtomicReference<Worker> self = new AtomicReference<>();
        AtomicInteger handled = new AtomicInteger();
        CountDownLatch started = new CountDownLatch(1);
        Worker w = queue.worker(W, lease -> {
            started.await();
            handled.incrementAndGet();
            self.get().close(); // from its own thread: stops, cannot wait for itself
        });
        self.set(w);
        started.countDown();
        assertTrue(w.awaitTermination(Duration.ofSeconds(20)));
        assertEquals(1, handled.get(), "no claim after the stop");
        assertEquals(2, queue.stats().messages());
    }

    /** Collects the records of java.util.logging's "mongomq" logger (System.Logger's default backend). */
    static final class Captured extends Handler implements AutoCloseable {
        final LinkedBlockingQueue<LogRecord> records = new LinkedBlockingQueue<>();
        private final Logger logger = Logger.getLogger("mongomq");
        private final boolean parents = logger.getUseParentHandlers();

        Captured() {
            logger.addHandler(this);
            logger.setUseParentHandlers(false); // the test's own records stay off the console
        }

        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        @Override
        public void flush() {}

        @Override
        public void close() {
            logger.removeHandler(this);
            logger.setUseParentHandlers(parents);
        }
    }

    @Test
    void onErrorDefaultLogs() throws Exception {
        queue.publish("g", b("bad"));
        IllegalStateException boom = new IllegalStateException("handler failure for the test");
        try (Captured log = new Captured()) {
            try (Worker w = queue.worker(W.backoffBase(Duration.ofSeconds(10)), lease -> {
                throw boom;
            })) {
                LogRecord r = null;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (r == null && System.nanoTime() < deadline) {
                    LogRecord next = log.records.poll(100, TimeUnit.MILLISECONDS);
                    if (next != null && next.getThrown() == boom) r = next;
                }
                assertNotNull(r, "the handler's failure was logged");
                assertEquals(Level.SEVERE, r.getLevel(), "a handler failure is an ERROR");
                assertSame(boom, r.getThrown(), "with its stack trace");
                assertTrue(r.getMessage().contains("handler failed"), r.getMessage());
            }
        }
    }

    @Test
    void handleSignalsStopsGracefully() throws Exception {
        String jvm = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        String cp = Paths.get("target", "classes").toAbsolutePath() + java.io.File.pathSeparator
                + Paths.get("target", "test-classes").toAbsolutePath();
        ProcessBuilder pb = new ProcessBuilder(jvm, "-cp", cp, "org.mongomq.TestProcess", "signals", uri(), db);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            expect(out, lines, "handler started run 1");
            signal(p, "INT");
            expect(out, lines, "handler done run 1");
            expect(out, lines, "work returned, messages 0");
            expect(out, lines, "handler started run 2");
            signal(p, "TERM");
            expect(out, lines, "handler done run 2");
            expect(out, lines, "work returned, messages 0");
            expect(out, lines, "waiting");
            signal(p, "TERM"); // the JVM's handler is back: it exits
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "ended by SIGTERM: " + lines);
            assertEquals(143, p.exitValue(), "the JVM's own SIGTERM exit: " + lines);
        } finally {
            p.destroyForcibly();
        }
    }

    private static void signal(Process p, String sig) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start();
        assertEquals(0, kill.waitFor());
    }

    /** Reads lines until one equals {@code want} (60 s at most, the lines kept for the message). */
    private static void expect(BufferedReader out, List<String> lines, String want) throws Exception {
        String got = assertTimeoutPreemptivelyLine(out, lines, want);
        assertEquals(want, got, "output so far: " + lines);
    }

    private static String assertTimeoutPreemptivelyLine(BufferedReader out, List<String> lines, String want) {
        return org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            for (String line; (line = out.readLine()) != null; ) {
                lines.add(line);
                if (line.equals(want)) return line;
            }
            return null;
        }, () -> "no line \"" + want + "\" within 60 s: " + lines);
    }

    @Test
    void optionsAreImmutable() {
        WorkerOptions a = W.concurrency(4);
        assertEquals(1, W.concurrency(), "defaults() is unchanged");
        assertEquals(4, a.concurrency());
        assertEquals(4, a.maxEvents(7).concurrency(), "each method keeps the others");
        assertEquals(7, a.maxEvents(7).maxEvents());
        assertTrue(W.idleTimeout().isEmpty());
        assertFalse(W.handleSignals());
        assertEquals(Duration.ofSeconds(30), W.visibility());
        assertEquals(Duration.ofSeconds(30), W.shutdownTimeout());
        assertThrows(IllegalArgumentException.class, () -> W.idleTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> W.maxEvents(0));
        assertThrows(IllegalArgumentException.class, () -> W.concurrency(0));
        ClaimOptions c = C.wait(Duration.ofSeconds(2)).maxEvents(3);
        assertEquals(Duration.ZERO, C.waitTimeout());
        assertEquals(Duration.ofSeconds(2), c.waitTimeout());
        assertEquals(3, c.maxEvents());
        assertEquals(c, C.maxEvents(3).wait(Duration.ofSeconds(2)), "value equality");
        PublishOptions p = P.priority(3);
        assertEquals(0, P.priority());
        assertEquals(3, p.priority());
        assertTrue(p.notBefore().isEmpty());
    }
}
