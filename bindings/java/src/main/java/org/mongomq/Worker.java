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
import java.util.function.Consumer;
import org.mongomq.internal.mongomq_raw;

/**
 * Workers started by {@link Queue#work}: {@code concurrency} threads, each claiming a
 * lease (waiting claims of at most 1 s, never a polling loop), running the handler on
 * it, acking on a normal return and nacking with exponential back-off and equal jitter
 * on an exception, while a heartbeat extends the lease every third of its visibility.
 * Errors of the queue back off (100 ms doubling to 5 s) and never end the workers.
 * Semantics: bindings/CONTRACT.md, "The worker helper".
 *
 * <p>{@link #close()} shuts down in two phases: 1. stop claiming (the waiting claims
 * are cancelled at once); 2. wait up to the shutdown timeout for running handlers to
 * finish and be acked or nacked. Handlers still running then are abandoned (no ack,
 * no heartbeat: their leases expire and are redelivered) and close returns. A lease a
 * claim returned just as the stop came, whose handler was not started, is given back
 * with {@link Queue#unclaim}: not a delivery, so its attempts count stays as it was.
 */
public final class Worker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("org.mongomq");

    private final Queue queue;
    private final LeaseHandler handler;
    private final int concurrency;
    private final double visibility;
    private final long heartbeatMillis;
    private final int minPriority;
    private final int batch;
    private final double backoffBase;
    private final double backoffCap;
    private final Duration shutdownTimeout;
    private final String workerId;
    private final Consumer<Throwable> onError;

    private final CountDownLatch stop = new CountDownLatch(1);
    private final AtomicBoolean closing = new AtomicBoolean();
    private final ScheduledThreadPoolExecutor heartbeat;
    private final List<Loop> loops = new ArrayList<>();
    private volatile boolean abandoned;

    Worker(Queue queue, WorkerOptions o, LeaseHandler handler) {
        this.queue = queue;
        this.handler = handler;
        this.concurrency = o.concurrency();
        this.visibility = Native.seconds(o.visibility());
        this.heartbeatMillis = Math.max(1, o.visibility().toMillis() / 3);
        this.minPriority = o.minPriority();
        this.batch = o.batch();
        this.backoffBase = Native.seconds(o.backoffBase());
        this.backoffCap = Native.seconds(o.backoffCap());
        this.shutdownTimeout = o.shutdownTimeout();
        this.workerId = o.workerId();
        this.onError = o.onError();
        if (o.maxAttempts() > 0) queue.setMaxAttempts(o.maxAttempts());
        // A few threads, so that one extend stuck on an unreachable server does not
        // hold up the heartbeats of every other running handler.
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
            loop.thread.setDaemon(true);
        }
        for (Loop loop : loops) loop.thread.start();
    }

    /** True until {@link #close()} was called. */
    public boolean isRunning() {
        return !closing.get();
    }

    /**
     * Stops gracefully (see the class comment): returns once every worker thread ended,
     * or after the shutdown timeout with the still-running handlers abandoned. A second
     * call does nothing.
     */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) return;
        stop.countDown();
        for (Loop loop : loops) loop.cancel();
        long deadline = System.nanoTime() + shutdownTimeout.toNanos();
        boolean interrupted = false;
        for (Loop loop : loops) {
            if (loop.thread == Thread.currentThread()) continue; // close() from a handler
            while (loop.thread.isAlive()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) break;
                try {
                    loop.thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    interrupted = true;
                    deadline = System.nanoTime(); // asked to hurry: abandon what still runs
                }
            }
        }
        for (Loop loop : loops) {
            if (loop.thread.isAlive() && loop.thread != Thread.currentThread()) abandoned = true;
        }
        heartbeat.shutdownNow();
        if (interrupted) Thread.currentThread().interrupt();
    }

    private void report(Throwable t) {
        if (onError != null) {
            try {
                onError.accept(t);
            } catch (RuntimeException ignored) {
                // the error callback's own failure must not end a worker
            }
        } else {
            LOG.log(System.Logger.Level.WARNING, "mongomq worker: " + t, t);
        }
    }

    /** The nack delay after a failure of a head delivered {@code attempts} times. */
    Duration backoff(int attempts) {
        double d = Math.min(backoffCap, backoffBase * Math.pow(2, Math.max(0, attempts - 1)));
        d *= ThreadLocalRandom.current().nextDouble(0.5, 1.0);
        return Duration.ofNanos(Math.round(d * 1e9));
    }

    /** Sleeps, returning early (true) when a stop comes. */
    private boolean sleepUnlessStopped(long millis) {
        try {
            return stop.await(millis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            return true;
        }
    }

    private final class Loop implements Runnable {
        Thread thread;
        private final long cancel = mongomq_raw.mqs_cancel_new();
        private boolean cancelFreed;

        synchronized void cancel() {
            if (!cancelFreed) mongomq_raw.mqs_cancel_trigger(cancel);
        }

        @Override
        public void run() {
            try {
                loop();
            } finally {
                synchronized (this) {
                    cancelFreed = true;
                    mongomq_raw.mqs_cancel_destroy(cancel);
                }
            }
        }

        private void loop() {
            long errorDelay = 100;
            while (stop.getCount() > 0) {
                Optional<Lease> got;
                try {
                    got = queue.claimNative(workerId, visibility, minPriority, batch, 1.0, cancel);
                    errorDelay = 100;
                } catch (CancelledException e) {
                    return; // close() cancelled the wait
                } catch (QueueInterruptedException e) {
                    report(e);
                    return; // the queue can never wait again
                } catch (MongoMqException e) {
                    if (e.status() == Status.CLOSED) return; // the queue was closed under us
                    report(e);
                    if (sleepUnlessStopped(errorDelay)) return;
                    errorDelay = Math.min(5000, errorDelay * 2);
                    continue;
                } catch (RuntimeException e) {
                    report(e);
                    if (sleepUnlessStopped(errorDelay)) return;
                    errorDelay = Math.min(5000, errorDelay * 2);
                    continue;
                }
                if (got.isPresent()) run(got.get());
            }
        }

        private void run(Lease lease) {
            try {
                if (stop.getCount() == 0) {
                    // Claimed just as the stop came (a claim that had its lease when the
                    // cancel was seen returns it): no handler ran, so give it back with
                    // unclaim, not a nack, which would count a delivery nobody saw.
                    try {
                        queue.unclaim(lease);
                    } catch (RuntimeException e) {
                        report(e); // lease lost, or the server unreachable: it expires and is redelivered
                    }
                    return;
                }
                ScheduledFuture<?> beat = heartbeat.scheduleAtFixedRate(() -> {
                    try {
                        queue.extend(lease, Duration.ofNanos(Math.round(visibility * 1e9)));
                    } catch (LeaseLostException e) {
                        report(e);
                        throw e; // an exception ends a periodic task: the heartbeat stops
                    } catch (MongoMqException e) {
                        if (e.status() == Status.CLOSED) throw e;
                        report(e);
                    }
                }, heartbeatMillis, heartbeatMillis, TimeUnit.MILLISECONDS);
                Throwable failure = null;
                try {
                    handler.handle(lease);
                } catch (Throwable t) {
                    failure = t;
                } finally {
                    beat.cancel(false);
                }
                if (abandoned) return; // close() gave up on this handler: the lease will expire
                try {
                    if (failure == null) {
                        queue.ack(lease);
                    } else {
                        report(failure);
                        queue.nack(lease, backoff(lease.attempts()));
                    }
                } catch (RuntimeException e) {
                    report(e);
                }
            } finally {
                lease.close();
            }
        }
    }
}
