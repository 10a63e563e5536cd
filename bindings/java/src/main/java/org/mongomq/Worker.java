package org.mongomq;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.mongomq.internal.mongomq_raw;

/**
 * Workers started by {@link MongoMqQueue#worker} (or run by {@link MongoMqQueue#work}):
 * {@code concurrency} threads, each claiming a lease (waiting claims of at most 1 s,
 * never a polling loop), running the handler on it, acking on a normal return and
 * nacking with exponential back-off and equal jitter on an exception, while a heartbeat
 * extends the lease every third of its visibility. Errors of the queue back off (100 ms
 * doubling to 5 s) and never end the workers. Semantics: bindings/CONTRACT.md, "The
 * worker helper".
 *
 * <p>The worker threads ("mongomq-worker-N") are not daemons: a program whose main
 * thread returns keeps running its workers until they are stopped.
 *
 * <p>A stop ({@link #stop()}, the idle timeout, SIGINT/SIGTERM with
 * {@code handleSignals}, {@link MongoMqQueue#interrupt()}) is graceful, in two phases:
 * 1. stop claiming (the waiting claims are cancelled at once); 2. let running handlers
 * finish and be acked or nacked, for up to the shutdown timeout. {@link #close()} and
 * {@link MongoMqQueue#work} wait that long, then abandon the handlers still running
 * (interrupted, no ack, no heartbeat: their leases expire and are redelivered) and
 * return. A lease a claim returned just as the stop came, whose handler was not
 * started, is given back with {@link MongoMqQueue#unclaim}: not a delivery, so its
 * attempts count stays as it was.
 */
public final class Worker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("mongomq");

    private final MongoMqQueue queue;
    private final LeaseHandler handler;
    private final double visibility;
    private final long heartbeatMillis;
    private final int minPriority;
    private final int maxEvents;
    private final double backoffBase;
    private final double backoffCap;
    private final Duration shutdownTimeout;
    private final String workerId;
    private final byte[] partitions; // packed (PartitionList); none: every partition
    private final long idleNanos; // 0: never idle
    private final boolean signals;
    private final Consumer<Throwable> onError;

    private final AtomicBoolean stopping = new AtomicBoolean();
    private final CountDownLatch stopped = new CountDownLatch(1); // a stop was asked for (or every loop ended)
    private final CountDownLatch terminated = new CountDownLatch(1); // every loop ended
    private volatile long stopNanos;
    private final ScheduledThreadPoolExecutor heartbeat;
    private final List<Loop> loops = new ArrayList<>();
    private final AtomicInteger live = new AtomicInteger();
    private final AtomicInteger busy = new AtomicInteger(); // handlers running
    private final AtomicLong lastActivity = new AtomicLong(System.nanoTime()); // last claim or handler end
    private volatile boolean abandoned;

    Worker(MongoMqQueue queue, WorkerOptions o, LeaseHandler handler) {
        this.queue = queue;
        this.handler = handler;
        int concurrency = o.concurrency();
        this.visibility = Native.seconds(o.visibility());
        this.heartbeatMillis = Math.max(1, o.visibility().toMillis() / 3);
        this.minPriority = o.minPriority();
        this.maxEvents = o.maxEvents();
        this.backoffBase = Native.seconds(o.backoffBase());
        this.backoffCap = Native.seconds(o.backoffCap());
        this.shutdownTimeout = o.shutdownTimeout();
        this.workerId = o.workerId().orElse(null);
        o.partitionList().check(queue.partitions()); // an exception of worker(), before anything starts
        this.partitions = o.partitionList().packed();
        this.idleNanos = o.idleTimeout().map(Duration::toNanos).orElse(0L);
        this.signals = o.handleSignals();
        this.onError = o.onError().orElse(null);
        if (o.maxAttempts() > 0) queue.setMaxAttempts(o.maxAttempts());
        if (signals) SignalStop.register(this, this::stop); // before anything needs undoing
        // A few threads, so that one extend stuck on an unreachable server does not
        // hold up the heartbeats of every other running handler. Daemons: they only
        // serve the worker threads, which keep the JVM alive themselves.
        this.heartbeat = new ScheduledThreadPoolExecutor(Math.min(concurrency, 4), r -> {
            Thread t = new Thread(r, "mongomq-heartbeat");
            t.setDaemon(true);
            return t;
        });
        heartbeat.setRemoveOnCancelPolicy(true);
        for (int i = 0; i < concurrency; i++) {
            Loop loop = new Loop();
            loops.add(loop);
            loop.thread = new Thread(loop, "mongomq-worker-" + i);
            loop.thread.setDaemon(false);
        }
        live.set(concurrency);
        for (Loop loop : loops) loop.thread.start();
    }

    /** True until a stop was asked for. */
    public boolean isRunning() {
        return !stopping.get();
    }

    /** True once every worker thread ended. */
    public boolean isTerminated() {
        return terminated.getCount() == 0;
    }

    /**
     * Stops gracefully without waiting: no new claims (the waiting ones are cancelled at
     * once); running handlers finish and are acked or nacked. Wait for that with
     * {@link #awaitTermination(Duration)}, or use {@link #close()}. Twice does nothing.
     */
    public void stop() {
        if (!stopping.compareAndSet(false, true)) return;
        stopNanos = System.nanoTime();
        stopped.countDown();
        for (Loop loop : loops) loop.cancel();
    }

    /**
     * Waits up to {@code timeout} for every worker thread to end (after a stop); true if
     * they did.
     */
    public boolean awaitTermination(Duration timeout) throws InterruptedException {
        if (timeout == null) throw new IllegalArgumentException("timeout must not be null");
        return terminated.await(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
    }

    /**
     * {@link #stop()}, then waits up to the shutdown timeout for the running handlers;
     * those still running then are abandoned (interrupted; their leases expire and are
     * redelivered). An interrupt of the closing thread abandons them at once (its
     * interrupt status stays set). Twice does nothing more; from a handler, it only
     * stops.
     */
    @Override
    public void close() {
        stop();
        for (Loop loop : loops) {
            if (loop.thread == Thread.currentThread()) return; // close() from a handler: it cannot wait for itself
        }
        if (awaitShutdown()) Thread.currentThread().interrupt();
    }

    /** {@link MongoMqQueue#work}: blocks until a stop, then as {@link #close()}. */
    void run() {
        boolean interrupted = false;
        for (;;) {
            try {
                stopped.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // Thread.interrupt() of the caller of work(): a stop
                stop();
            }
        }
        if (awaitShutdown() || interrupted) Thread.currentThread().interrupt();
    }

    /** Waits until the loops end or the shutdown timeout after the stop passed (then abandons); true if interrupted. */
    private boolean awaitShutdown() {
        try {
            stopped.await(); // at once after a stop; it makes stopNanos visible when another thread stopped
            long left = stopNanos + shutdownTimeout.toNanos() - System.nanoTime();
            if (!terminated.await(Math.max(0, left), TimeUnit.NANOSECONDS)) abandon();
            return false;
        } catch (InterruptedException e) {
            abandon(); // asked to hurry
            return true;
        }
    }

    private void abandon() {
        if (isTerminated()) return;
        abandoned = true;
        for (Loop loop : loops) {
            if (loop.thread.isAlive()) loop.thread.interrupt();
        }
    }

    /** The last loop ended. */
    private void terminate() {
        heartbeat.shutdownNow();
        if (signals) SignalStop.unregister(this);
        if (stopping.compareAndSet(false, true)) {
            stopNanos = System.nanoTime();
            stopped.countDown(); // the loops ended on their own (the queue was interrupted or closed)
        }
        terminated.countDown();
    }

    private void report(Throwable t, boolean handlerFailure, String what) {
        if (onError != null) {
            try {
                onError.accept(t);
            } catch (RuntimeException ignored) {
                // the error callback's own failure must not end a worker
            }
        } else {
            LOG.log(handlerFailure ? System.Logger.Level.ERROR : System.Logger.Level.WARNING, "mongomq worker: " + what, t);
        }
    }

    /** The nack delay after a failure of a head delivered {@code attempts} times. */
    Duration backoff(int attempts) {
        return backoff(backoffBase, backoffCap, attempts);
    }

    /** min(cap, base * 2^(attempts - 1)) seconds times a jitter drawn from [0.5, 1]: also AsyncWorker's. */
    static Duration backoff(double base, double cap, int attempts) {
        double d = Math.min(cap, base * Math.pow(2, Math.max(0, attempts - 1)));
        d *= ThreadLocalRandom.current().nextDouble(0.5, 1.0);
        return Native.duration(d);
    }

    /** Sleeps, returning early (true) when a stop comes. */
    private boolean sleepUnlessStopped(long millis) {
        try {
            return stopped.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            return true;
        }
    }

    /** How long the next claim may wait: 1 s, or less when the idle timeout comes sooner. */
    private double claimSlice() {
        if (idleNanos == 0 || busy.get() > 0) return 1.0;
        long left = idleNanos - (System.nanoTime() - lastActivity.get());
        return Math.max(0.01, Math.min(1.0, left / 1e9));
    }

    /** After an empty claim: stop when nothing was claimed and nothing ran for the idle timeout. */
    private void stopIfIdle() {
        if (idleNanos > 0 && busy.get() == 0 && System.nanoTime() - lastActivity.get() >= idleNanos) stop();
    }

    private final class Loop implements Runnable {
        Thread thread;
        private final long cancel = mongomq_raw.mq_cancel_new();
        private boolean cancelFreed;

        synchronized void cancel() {
            if (!cancelFreed) mongomq_raw.mq_cancel_trigger(cancel);
        }

        @Override
        public void run() {
            try {
                loop();
            } finally {
                synchronized (this) {
                    cancelFreed = true;
                    mongomq_raw.mq_cancel_destroy(cancel);
                }
                if (live.decrementAndGet() == 0) terminate();
            }
        }

        private void loop() {
            long errorDelay = 100;
            while (isRunning()) {
                Optional<Lease> got;
                try {
                    got = queue.claimNative(workerId, visibility, minPriority, maxEvents, claimSlice(), cancel,
                            partitions);
                    errorDelay = 100;
                } catch (CancelledException e) {
                    return; // stop() cancelled the wait
                } catch (QueueInterruptedException e) {
                    report(e, false, "the queue was interrupted: the worker ends");
                    return; // the queue can never wait again
                } catch (ClosedException e) {
                    return; // the queue was closed under us
                } catch (RuntimeException e) {
                    report(e, false, "claim failed (retried in " + errorDelay + " ms)");
                    if (sleepUnlessStopped(errorDelay)) return;
                    errorDelay = Math.min(5000, errorDelay * 2);
                    continue;
                }
                if (got.isPresent()) {
                    lastActivity.set(System.nanoTime());
                    run(got.get());
                } else {
                    stopIfIdle();
                }
            }
        }

        private void run(Lease lease) {
            try {
                if (!isRunning()) {
                    // Claimed just as the stop came (a claim that had its lease when the
                    // cancel was seen returns it): no handler ran, so give it back with
                    // unclaim, not a nack, which would count a delivery nobody saw.
                    try {
                        queue.unclaim(lease);
                    } catch (RuntimeException e) {
                        report(e, false, "unclaim after the stop failed (the lease will expire)");
                    }
                    return;
                }
                busy.incrementAndGet();
                try {
                    handle(lease);
                } finally {
                    busy.decrementAndGet();
                    lastActivity.set(System.nanoTime());
                }
            } finally {
                lease.close();
            }
        }

        private void handle(Lease lease) {
            Duration vis = Native.duration(visibility);
            ScheduledFuture<?> beat = heartbeat.scheduleAtFixedRate(() -> {
                try {
                    queue.extend(lease, vis);
                } catch (LeaseLostException e) {
                    report(e, false, "lease lost while its handler ran: " + lease);
                    throw e; // an exception ends a periodic task: the heartbeat stops
                } catch (MongoMqException e) {
                    report(e, false, "extend failed: " + lease);
                }
            }, heartbeatMillis, heartbeatMillis, TimeUnit.MILLISECONDS);
            // With a telemetry: the handler runs in its process span, the ack or nack in a
            // settle span under it (null, no-ops, without).
            Telemetry.Processing process = Tracing.startProcess(queue, lease);
            Throwable failure = null;
            try (Telemetry.Scope current = Tracing.current(process)) {
                handler.handle(lease);
            } catch (Throwable t) {
                failure = t;
            } finally {
                beat.cancel(false);
            }
            Tracing.handled(process, failure);
            try {
                if (abandoned) return; // the stop gave up on this handler: the lease will expire
                if (failure == null) {
                    Tracing.settle(process, "ack", () -> queue.ack(lease));
                } else {
                    Duration delay = backoff(lease.attempts());
                    report(failure, true, "handler failed on " + lease + " (retried in " + delay.toMillis() + " ms)");
                    Tracing.settle(process, "nack", () -> queue.nack(lease, delay));
                }
            } catch (RuntimeException e) {
                report(e, false, (failure == null ? "ack" : "nack") + " failed: " + lease);
            } finally {
                Tracing.end(process);
            }
        }
    }
}
