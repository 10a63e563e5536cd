package org.mongomq;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.mongomq.internal.mongomq_raw;

/**
 * A worker whose handler returns a {@link CompletionStage} ({@link AsyncQueue#worker},
 * {@link AsyncQueue#work}): the options and behaviour of {@link Worker}
 * (bindings/CONTRACT.md, "The worker helper"), with {@code concurrency} counting the
 * handlers whose stages are pending at once, not threads.
 *
 * <p>Threads: {@code min(concurrency, 4)} claimer threads ({@code mongomq-async-claimer-N},
 * not daemons, as the sync worker's), each taking a free slot of {@code concurrency},
 * then claiming (waiting claims of at most 1 s, never a polling loop); the handler is
 * started on the view's executor, and so are the ack or nack when its stage completes
 * (never on the thread that completed it, which may be an event loop's). A pending
 * stage holds no thread. The heartbeat extends every pending lease by
 * {@code visibility} every third of it, on daemon {@code mongomq-heartbeat} threads.
 * Four claimers at most: each holds a thread while it waits, and four claims in flight
 * keep up with the acks of many more pending handlers.
 *
 * <p>A normal completion acks; an exceptional one (or a handler that throws or returns
 * null) nacks with {@code min(backoffCap, backoffBase * 2^(attempts - 1))} times a
 * jitter in [0.5, 1]. Errors of the queue back off (100 ms doubling to 5 s) and never
 * end the worker.
 *
 * <p>A stop ({@link #stop()}, the idle timeout, SIGINT/SIGTERM with
 * {@code handleSignals}, the queue's interrupt or close) is graceful, in two phases:
 * 1. stop claiming (the waiting claims are cancelled at once); 2. let the pending stages
 * complete and be acked or nacked for up to the shutdown timeout, counted from the stop
 * (no thread needs to wait for that: unlike the sync worker's {@code stop()}, every stop
 * abandons what is still pending then: its stage is cancelled if it is a
 * {@code CompletableFuture}, and its lease is neither acked nor extended any more, so it
 * expires and is redelivered). A lease claimed just as the stop came, whose handler had
 * not started, is given back with {@link MongoMqQueue#unclaim}.
 *
 * @since 0.6.0
 */
public final class AsyncWorker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("mongomq");
    private static final int MAX_CLAIMERS = 4;
    /** True on a thread while it runs a handler's start, for close() from a handler. */
    private static final ThreadLocal<Boolean> IN_HANDLER = ThreadLocal.withInitial(() -> false);

    private final MongoMqQueue queue;
    private final Executor executor;
    private final AsyncLeaseHandler handler;
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

    private final Semaphore slots; // free handler slots (concurrency)
    private final AtomicBoolean stopping = new AtomicBoolean();
    private final CountDownLatch stopped = new CountDownLatch(1); // a stop was asked for
    private final AtomicBoolean done = new AtomicBoolean(); // terminate() ran
    private final CompletableFuture<Void> terminated = new CompletableFuture<>();
    private final ScheduledThreadPoolExecutor heartbeat;
    private final List<Claimer> claimers = new ArrayList<>();
    private final AtomicInteger liveClaimers = new AtomicInteger();
    private final AtomicInteger held = new AtomicInteger(); // leases claimed and not yet settled
    private final AtomicInteger busy = new AtomicInteger(); // handlers started and not yet settled
    private final Set<Running> running = ConcurrentHashMap.newKeySet();
    private final AtomicLong lastActivity = new AtomicLong(System.nanoTime()); // last claim or handler end
    private volatile boolean abandoned;

    AsyncWorker(MongoMqQueue queue, Executor executor, WorkerOptions o, AsyncLeaseHandler handler) {
        this.queue = queue;
        this.executor = executor;
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
        this.slots = new Semaphore(concurrency);
        if (o.maxAttempts() > 0) queue.setMaxAttempts(o.maxAttempts());
        if (signals) SignalStop.register(this, this::stop); // before anything needs undoing
        this.heartbeat = new ScheduledThreadPoolExecutor(Math.min(concurrency, 4), r -> {
            Thread t = new Thread(r, "mongomq-heartbeat");
            t.setDaemon(true);
            return t;
        });
        heartbeat.setRemoveOnCancelPolicy(true);
        int n = Math.min(concurrency, MAX_CLAIMERS);
        for (int i = 0; i < n; i++) {
            Claimer c = new Claimer();
            claimers.add(c);
            c.thread = new Thread(c, "mongomq-async-claimer-" + i);
            c.thread.setDaemon(false);
        }
        liveClaimers.set(n);
        for (Claimer c : claimers) c.thread.start();
    }

    /** True until a stop was asked for. */
    public boolean isRunning() {
        return !stopping.get();
    }

    /** True once the claimers ended and every lease was settled (or abandoned). */
    public boolean isTerminated() {
        return terminated.isDone();
    }

    /**
     * A future that completes once the worker ended (after a stop: the claimers ended and
     * every pending stage was acked, nacked or abandoned). A new future each call:
     * completing or cancelling it changes nothing else.
     */
    public CompletableFuture<Void> termination() {
        return terminated.copy();
    }

    /**
     * Stops gracefully without waiting: no new claims (the waiting ones are cancelled at
     * once); pending stages are acked or nacked as they complete, and abandoned once the
     * shutdown timeout passed. Twice does nothing.
     */
    public void stop() {
        if (!stopping.compareAndSet(false, true)) return;
        stopped.countDown();
        for (Claimer c : claimers) c.cancel();
        slots.release(claimers.size()); // wakes claimers waiting for a slot
        try {
            heartbeat.schedule(this::abandon, Math.max(0, shutdownTimeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // terminated already
        }
        maybeTerminate();
    }

    /** Waits up to {@code timeout} for the worker to end (after a stop); true if it did. */
    public boolean awaitTermination(Duration timeout) throws InterruptedException {
        if (timeout == null) throw new IllegalArgumentException("timeout must not be null");
        try {
            terminated.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (ExecutionException e) {
            return true; // never completed exceptionally
        }
    }

    /**
     * {@link #stop()}, then waits for the end: at most the shutdown timeout, after which
     * the stages still pending are abandoned. An interrupt of the closing thread abandons
     * them at once (its interrupt status stays set). From a handler's start it only
     * stops.
     */
    @Override
    public void close() {
        stop();
        if (IN_HANDLER.get()) return;
        try {
            terminated.get();
        } catch (InterruptedException e) {
            abandon();
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            // never completed exceptionally
        }
    }

    /** Gives up on the pending stages: no ack, no heartbeat; their leases expire. */
    private void abandon() {
        if (isTerminated()) return;
        abandoned = true;
        for (Running r : running) {
            if (!r.started) { // queued on the executor, no handler ran yet
                giveBack(r);
                continue;
            }
            if (!r.settle()) continue;
            if (r.beat != null) r.beat.cancel(false);
            CompletionStage<?> s = r.stage;
            if (s instanceof CompletableFuture<?> f) f.cancel(true);
            Tracing.end(r.process);
            settled(r);
        }
        maybeTerminate();
    }

    private void maybeTerminate() {
        if (liveClaimers.get() == 0 && held.get() == 0 && done.compareAndSet(false, true)) terminate();
    }

    private void terminate() {
        heartbeat.shutdownNow();
        if (signals) SignalStop.unregister(this);
        stopping.set(true);
        stopped.countDown();
        terminated.complete(null);
    }

    private void report(Throwable t, boolean handlerFailure, String what) {
        if (onError != null) {
            try {
                onError.accept(t);
            } catch (RuntimeException ignored) {
                // the error callback's own failure must not end the worker
            }
        } else {
            LOG.log(handlerFailure ? System.Logger.Level.ERROR : System.Logger.Level.WARNING,
                    "mongomq async worker: " + what, t);
        }
    }

    /** The nack delay after a failure of a head delivered {@code attempts} times. */
    Duration backoff(int attempts) {
        return Worker.backoff(backoffBase, backoffCap, attempts);
    }

    /** How long the next claim may wait: 1 s, or less when the idle timeout comes sooner. */
    private double claimSlice() {
        if (idleNanos == 0 || busy.get() > 0) return 1.0;
        long left = idleNanos - (System.nanoTime() - lastActivity.get());
        return Math.max(0.01, Math.min(1.0, left / 1e9));
    }

    private void stopIfIdle() {
        if (idleNanos > 0 && busy.get() == 0 && held.get() == 0 && System.nanoTime() - lastActivity.get() >= idleNanos) {
            stop();
        }
    }

    // ---- one lease -------------------------------------------------------------------

    /** A claimed lease, from its claim to its settling (ack, nack, unclaim or abandon: exactly one). */
    private final class Running {
        final Lease lease;
        private final AtomicBoolean settled = new AtomicBoolean();
        volatile ScheduledFuture<?> beat;
        volatile CompletionStage<?> stage;
        volatile boolean starting;
        volatile boolean started;
        volatile Telemetry.Processing process; // the handler's, with a telemetry

        Running(Lease lease) {
            this.lease = lease;
        }

        boolean settle() {
            return settled.compareAndSet(false, true);
        }
    }

    /** The end of a lease's life here: its slot is free again. */
    private void settled(Running r) {
        running.remove(r);
        r.lease.close();
        if (r.started) {
            busy.decrementAndGet();
            lastActivity.set(System.nanoTime());
        }
        held.decrementAndGet();
        slots.release();
        maybeTerminate();
    }

    /** No handler saw the lease: back with unclaim (not a delivery). */
    private void giveBack(Running r) {
        if (!r.settle()) return;
        try {
            queue.unclaim(r.lease);
        } catch (RuntimeException e) {
            report(e, false, "unclaim after the stop failed (the lease will expire)");
        } finally {
            settled(r);
        }
    }

    private void dispatch(Lease lease) {
        Running r = new Running(lease);
        held.incrementAndGet();
        running.add(r);
        try {
            executor.execute(() -> start(r));
        } catch (RejectedExecutionException e) {
            report(e, false, "the executor refused a handler: its lease is given back");
            giveBack(r);
        }
    }

    private void start(Running r) {
        if (!isRunning()) { // the stop came between the claim and here: no handler ran
            giveBack(r);
            return;
        }
        r.started = true;
        busy.incrementAndGet();
        Lease lease = r.lease;
        Duration vis = Native.duration(visibility);
        try {
            r.beat = heartbeat.scheduleAtFixedRate(() -> {
                try {
                    queue.extend(lease, vis);
                } catch (LeaseLostException e) {
                    report(e, false, "lease lost while its handler ran: " + lease);
                    throw e; // an exception ends a periodic task: the heartbeat stops
                } catch (MongoMqException e) {
                    report(e, false, "extend failed: " + lease);
                }
            }, heartbeatMillis, heartbeatMillis, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // terminated: abandoned under us
        }
        CompletionStage<?> stage;
        // With a telemetry: the handler's start runs in its process span (which ends once
        // the stage's ack or nack, in a settle span under it, is done).
        Telemetry.Processing process = Tracing.startProcess(queue, lease);
        r.process = process;
        IN_HANDLER.set(true);
        try (Telemetry.Scope current = Tracing.current(process)) {
            stage = handler.handle(lease);
            if (stage == null) throw new NullPointerException("the handler returned null, not a CompletionStage");
        } catch (Throwable t) {
            finish(r, t);
            return;
        } finally {
            IN_HANDLER.set(false);
        }
        r.stage = stage;
        Thread self = Thread.currentThread();
        r.starting = true;
        stage.whenComplete((v, t) -> {
            if (r.starting && Thread.currentThread() == self) {
                finish(r, t); // already complete: this executor thread acks at once
                return;
            }
            try {
                executor.execute(() -> finish(r, t));
            } catch (RejectedExecutionException e) {
                finish(r, t); // no executor any more: ack here rather than never
            }
        });
        r.starting = false;
    }

    private void finish(Running r, Throwable failure) {
        if (!r.settle()) { // abandoned: the lease will expire
            Tracing.end(r.process); // a second end (abandon's) does nothing
            return;
        }
        if (r.beat != null) r.beat.cancel(false);
        Lease lease = r.lease;
        if (failure instanceof CompletionException && failure.getCause() != null) failure = failure.getCause();
        Telemetry.Processing process = r.process;
        try {
            if (abandoned) return;
            Tracing.handled(process, failure);
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
            settled(r);
        }
    }

    // ---- claiming --------------------------------------------------------------------

    private final class Claimer implements Runnable {
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
                if (liveClaimers.decrementAndGet() == 0) {
                    stop(); // the claimers ended on their own (the queue was interrupted or closed): a stop
                    maybeTerminate();
                }
            }
        }

        private void loop() {
            long errorDelay = 100;
            while (isRunning()) {
                try {
                    slots.acquire();
                } catch (InterruptedException e) {
                    return;
                }
                if (!isRunning()) return; // the slot is not given back: nothing claims any more
                Optional<Lease> got;
                try {
                    got = queue.claimNative(workerId, visibility, minPriority, maxEvents, claimSlice(), cancel,
                            partitions);
                    errorDelay = 100;
                } catch (CancelledException e) {
                    return; // stop() cancelled the wait
                } catch (QueueInterruptedException e) {
                    report(e, false, "the queue was interrupted: the worker ends");
                    return;
                } catch (ClosedException e) {
                    return;
                } catch (RuntimeException e) {
                    slots.release();
                    report(e, false, "claim failed (retried in " + errorDelay + " ms)");
                    if (sleepUnlessStopped(errorDelay)) return;
                    errorDelay = Math.min(5000, errorDelay * 2);
                    continue;
                }
                if (got.isPresent()) {
                    lastActivity.set(System.nanoTime());
                    dispatch(got.get());
                } else {
                    slots.release();
                    stopIfIdle();
                }
            }
        }

        /** Sleeps, returning early (true) when a stop comes. */
        private boolean sleepUnlessStopped(long millis) {
            try {
                return stopped.await(millis, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return true;
            }
        }
    }
}
