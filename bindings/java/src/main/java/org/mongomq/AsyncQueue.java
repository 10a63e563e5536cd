package org.mongomq;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.mongomq.internal.mongomq_raw;

/**
 * The asynchronous view of a {@link MongoMqQueue} ({@link MongoMqQueue#async()}): the
 * queue's server calls returning {@link CompletableFuture}s, each run on an executor as
 * the blocking call of the queue, and a {@linkplain #worker(WorkerOptions,
 * AsyncLeaseHandler) worker} whose handler returns a {@link java.util.concurrent.CompletionStage}.
 *
 * <p>A future completes with what the sync call returns, or exceptionally with what it
 * throws, unwrapped (a bad argument, a closed queue and a {@link LeaseLostException}
 * alike: {@code join()} wraps it in a {@code CompletionException}, {@code get()} in an
 * {@code ExecutionException}). A future cancelled before its call started makes no call;
 * once a call runs, only a claim can be cut short: the others (one to three server
 * commands) run to their end and their outcome is dropped.
 *
 * <p><b>Claims</b> ({@link #claim(ClaimOptions)}) end early, through the claim's own
 * {@code mq_cancel}, when the future is cancelled ({@code cancel(true)} or
 * {@code cancel(false)}: CompletableFuture does not tell them apart), times out
 * ({@code orTimeout}, {@code completeOnTimeout}) or is completed by anyone else, when a
 * thread blocked in the future's {@code get()} is interrupted (the future is the claim's
 * only consumer: a lease it brought later would be held by nobody), and when the
 * executor's thread running it is interrupted ({@code shutdownNow()}; the future then
 * fails with {@link CancelledException}). A lease the claim got just as it was
 * cancelled is given back with {@link MongoMqQueue#unclaim} (no delivery counted), never
 * left held.
 *
 * <p>A view holds no resources of its own: closing the queue closes it, and the
 * executor is the caller's to shut down (the {@linkplain #defaultExecutor() default} one
 * never needs it). A waiting claim holds one of the executor's threads for as long as it
 * waits.
 *
 * @since 0.6.0
 */
public final class AsyncQueue {
    private static final System.Logger LOG = System.getLogger("mongomq");

    /** The default executor's threads. */
    public static final int DEFAULT_THREADS = 64;

    /** Made on first use only. */
    private static final class DefaultPool {
        static final ExecutorService POOL = pool();

        private static ExecutorService pool() {
            AtomicInteger n = new AtomicInteger();
            ThreadPoolExecutor p = new ThreadPoolExecutor(DEFAULT_THREADS, DEFAULT_THREADS, 60, TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(), r -> {
                        Thread t = new Thread(r, "mongomq-async-" + n.getAndIncrement());
                        t.setDaemon(true);
                        return t;
                    });
            p.allowCoreThreadTimeOut(true);
            return p;
        }
    }

    private final MongoMqQueue queue;
    private final Executor executor;

    AsyncQueue(MongoMqQueue queue, Executor executor) {
        if (executor == null) throw new IllegalArgumentException("executor must not be null");
        this.queue = queue;
        this.executor = executor;
    }

    /**
     * The executor of {@link MongoMqQueue#async()}, one for the process: at most
     * {@value #DEFAULT_THREADS} daemon threads ({@code mongomq-async-N}, made as needed,
     * gone after 60 s unused), the calls beyond those waiting in an unbounded line.
     * Not {@code ForkJoinPool.commonPool()}: every call blocks a thread on the network,
     * and the common pool, sized to the CPUs and shared with parallel streams, would be
     * starved by a few waiting claims. Bounded because a call holds one of the client's
     * connections while it runs (libmongoc's pool: {@code maxPoolSize}, 100 by default):
     * more threads would only wait for a connection. Daemons, so that it never keeps a
     * program alive (a worker's own threads do, as the sync worker's).
     */
    public static Executor defaultExecutor() {
        return DefaultPool.POOL;
    }

    /** The queue this is a view of. */
    public MongoMqQueue queue() {
        return queue;
    }

    /** The executor the calls run on. */
    public Executor executor() {
        return executor;
    }

    /**
     * Runs the sync call on the executor; a future cancelled before it started skips it.
     * With a telemetry, in the caller's context (an async publish's send is its child).
     */
    private <T> CompletableFuture<T> call(Supplier<T> sync) {
        CompletableFuture<T> f = new CompletableFuture<>();
        Runnable task = () -> {
            if (f.isDone()) return;
            try {
                f.complete(sync.get());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        };
        Telemetry telemetry = queue.telemetry();
        try {
            executor.execute(telemetry == null ? task : telemetry.wrap(task));
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    private CompletableFuture<Void> run(Runnable sync) {
        return call(() -> {
            sync.run();
            return null;
        });
    }

    // ---- publish ---------------------------------------------------------------------

    /** {@link MongoMqQueue#publish(String, byte[], PublishOptions)}: the seq. */
    public CompletableFuture<Long> publish(String groupId, byte[] event, PublishOptions options) {
        return call(() -> queue.publish(groupId, event, options));
    }

    /** {@link MongoMqQueue#publish(String, byte[])}. */
    public CompletableFuture<Long> publish(String groupId, byte[] event) {
        return call(() -> queue.publish(groupId, event));
    }

    /** {@link MongoMqQueue#publish(String, String, PublishOptions)}. */
    public CompletableFuture<Long> publish(String groupId, String event, PublishOptions options) {
        return call(() -> queue.publish(groupId, event, options));
    }

    /** {@link MongoMqQueue#publish(String, String)}. */
    public CompletableFuture<Long> publish(String groupId, String event) {
        return call(() -> queue.publish(groupId, event));
    }

    /** {@link MongoMqQueue#publishWith(String, byte[], PublishOptions)}: the seq and the dedup flag. */
    public CompletableFuture<Published> publishWith(String groupId, byte[] event, PublishOptions options) {
        return call(() -> queue.publishWith(groupId, event, options));
    }

    /** {@link MongoMqQueue#publishWith(String, String, PublishOptions)}. */
    public CompletableFuture<Published> publishWith(String groupId, String event, PublishOptions options) {
        return call(() -> queue.publishWith(groupId, event, options));
    }

    /**
     * {@link MongoMqQueue#publish(Batch)}: the first seq. The batch is read when the call
     * runs: do not change or close it before the future completes.
     */
    public CompletableFuture<Long> publish(Batch batch) {
        return call(() -> queue.publish(batch));
    }

    /** {@link MongoMqQueue#publishWith(Batch)}: each event's outcome, in add order (as {@link #publish(Batch)}). */
    public CompletableFuture<List<Published>> publishWith(Batch batch) {
        return call(() -> queue.publishWith(batch));
    }

    // ---- claim -----------------------------------------------------------------------

    /** {@link MongoMqQueue#claim()}: the default options, no wait. */
    public CompletableFuture<Optional<Lease>> claim() {
        return claim(ClaimOptions.defaults());
    }

    /**
     * {@link MongoMqQueue#claim(ClaimOptions)}; with a {@code wait}, the future completes
     * as soon as an event is due (empty after the wait), and ends early as the class
     * comment says. The lease is the caller's to ack, nack or unclaim (and close).
     */
    public CompletableFuture<Optional<Lease>> claim(ClaimOptions options) {
        ClaimFuture f = new ClaimFuture(options);
        try {
            executor.execute(f::run);
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    /**
     * A claim's future: any completion but the claim's own (cancel, a timeout, a
     * complete() by the user) triggers the claim's cancel while it waits; a lease that
     * arrives after such a completion is given back.
     */
    private final class ClaimFuture extends CompletableFuture<Optional<Lease>> implements MongoMqQueue.CancelSink {
        private final ClaimOptions options;
        private long cancel; // guarded by this: the running wait's mq_cancel, 0 when none

        ClaimFuture(ClaimOptions options) {
            this.options = options;
            whenComplete((v, t) -> trigger());
        }

        @Override
        public synchronized void attach(long c) {
            cancel = c;
            if (isDone()) mongomq_raw.mq_cancel_trigger(c); // completed before the wait began
        }

        @Override
        public synchronized void detach() {
            cancel = 0;
        }

        private synchronized void trigger() {
            if (cancel != 0) mongomq_raw.mq_cancel_trigger(cancel);
        }

        void run() {
            if (isDone()) return; // cancelled before it started: no claim
            Optional<Lease> got;
            try {
                got = queue.claim(options, this);
            } catch (Throwable t) {
                completeExceptionally(t); // a no-op when the future was cancelled (the claim's CancelledException)
                return;
            }
            if (!complete(got) && got.isPresent()) giveBack(got.get());
        }

        /** As CompletableFuture's; an interrupt of the waiting thread cancels the claim. */
        @Override
        public Optional<Lease> get() throws InterruptedException, ExecutionException {
            try {
                return super.get();
            } catch (InterruptedException e) {
                cancel(true);
                throw e;
            }
        }

        /** As CompletableFuture's; an interrupt of the waiting thread cancels the claim (a timeout does not). */
        @Override
        public Optional<Lease> get(long timeout, TimeUnit unit)
                throws InterruptedException, ExecutionException, java.util.concurrent.TimeoutException {
            try {
                return super.get(timeout, unit);
            } catch (InterruptedException e) {
                cancel(true);
                throw e;
            }
        }
    }

    /** A lease nobody will see (its claim's future was already done): back with unclaim. */
    private void giveBack(Lease lease) {
        try {
            queue.unclaim(lease);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "mongomq: unclaim of a cancelled claim's lease failed (it will expire): "
                    + lease, e);
        } finally {
            lease.close();
        }
    }

    // ---- ack, nack, unclaim, extend --------------------------------------------------

    /** {@link MongoMqQueue#ack(Lease)}. */
    public CompletableFuture<Void> ack(Lease lease) {
        return run(() -> queue.ack(lease));
    }

    /** {@link MongoMqQueue#nack(Lease, Duration)}. */
    public CompletableFuture<Void> nack(Lease lease, Duration delay) {
        return run(() -> queue.nack(lease, delay));
    }

    /** {@link MongoMqQueue#nack(Lease)}: redelivered now. */
    public CompletableFuture<Void> nack(Lease lease) {
        return run(() -> queue.nack(lease));
    }

    /** {@link MongoMqQueue#unclaim(Lease)}. */
    public CompletableFuture<Void> unclaim(Lease lease) {
        return run(() -> queue.unclaim(lease));
    }

    /** {@link MongoMqQueue#extend(Lease, Duration)}. */
    public CompletableFuture<Void> extend(Lease lease, Duration visibility) {
        return run(() -> queue.extend(lease, visibility));
    }

    // ---- dead letters, stats, maintenance, groups ------------------------------------

    /** {@link MongoMqQueue#deadCount()}. */
    public CompletableFuture<Long> deadCount() {
        return call(queue::deadCount);
    }

    /** {@link MongoMqQueue#deadRequeue(long)}: the new seq. */
    public CompletableFuture<Long> deadRequeue(long seq) {
        return call(() -> queue.deadRequeue(seq));
    }

    /** {@link MongoMqQueue#deadPurge()}: how many. */
    public CompletableFuture<Long> deadPurge() {
        return call(queue::deadPurge);
    }

    /** {@link MongoMqQueue#deadList(int)}. */
    public CompletableFuture<List<StoredEvent>> deadList(int limit) {
        return call(() -> queue.deadList(limit));
    }

    /** {@link MongoMqQueue#deadPage(long, int)}. */
    public CompletableFuture<DeadPage> deadPage(long offset, int limit) {
        return call(() -> queue.deadPage(offset, limit));
    }

    /** {@link MongoMqQueue#stats()}. */
    public CompletableFuture<Stats> stats() {
        return call(queue::stats);
    }

    /** {@link MongoMqQueue#statsJson()}. */
    public CompletableFuture<String> statsJson() {
        return call(queue::statsJson);
    }

    /** {@link MongoMqQueue#repair()}: the locks re-created. */
    public CompletableFuture<Long> repair() {
        return call(queue::repair);
    }

    /** {@link MongoMqQueue#peek(int)}. */
    public CompletableFuture<List<StoredEvent>> peek(int limit) {
        return call(() -> queue.peek(limit));
    }

    /** {@link MongoMqQueue#peek(String, int)}. */
    public CompletableFuture<List<StoredEvent>> peek(String groupId, int limit) {
        return call(() -> queue.peek(groupId, limit));
    }

    /** {@link MongoMqQueue#groups(GroupsOptions)}. */
    public CompletableFuture<GroupsPage> groups(GroupsOptions options) {
        return call(() -> queue.groups(options));
    }

    /** {@link MongoMqQueue#groups()}. */
    public CompletableFuture<GroupsPage> groups() {
        return call(queue::groups);
    }

    /** {@link MongoMqQueue#pauseGroup(String)}. */
    public CompletableFuture<Void> pauseGroup(String groupId) {
        return run(() -> queue.pauseGroup(groupId));
    }

    /** {@link MongoMqQueue#resumeGroup(String)}. */
    public CompletableFuture<Void> resumeGroup(String groupId) {
        return run(() -> queue.resumeGroup(groupId));
    }

    /** {@link MongoMqQueue#purgeGroup(String)}. */
    public CompletableFuture<Void> purgeGroup(String groupId) {
        return run(() -> queue.purgeGroup(groupId));
    }

    /** {@link MongoMqQueue#drop()}. */
    public CompletableFuture<Void> drop() {
        return run(queue::drop);
    }

    // ---- worker ----------------------------------------------------------------------

    /**
     * Starts an {@link AsyncWorker} and returns it at once: the options and behaviour of
     * {@link MongoMqQueue#worker}, with a handler that returns a stage (its normal
     * completion acks, an exceptional one nacks with back-off), run on this view's
     * executor.
     */
    public AsyncWorker worker(WorkerOptions options, AsyncLeaseHandler handler) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        if (handler == null) throw new IllegalArgumentException("handler must not be null");
        queue.handle().acquire(); // a closed queue is the closed error here, not a worker that ends at once
        queue.handle().release();
        return new AsyncWorker(queue, executor, options, handler);
    }

    /**
     * The async {@link MongoMqQueue#work}: starts an {@link AsyncWorker} and returns a
     * future that completes once it stopped (by the idle timeout, signals with
     * {@code handleSignals}, the queue's interrupt or close) and its running handlers
     * finished or were abandoned after the shutdown timeout. Cancelling the future stops
     * the worker (gracefully; the future is then done at once).
     */
    public CompletableFuture<Void> work(WorkerOptions options, AsyncLeaseHandler handler) {
        AsyncWorker w = worker(options, handler);
        CompletableFuture<Void> f = w.termination();
        f.whenComplete((v, t) -> {
            if (f.isCancelled()) w.stop();
        });
        return f;
    }

    @Override
    public String toString() {
        return "AsyncQueue{" + queue.name() + "}";
    }
}
