package org.mongomq;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Settings of {@link MongoMqQueue#work} and {@link MongoMqQueue#worker}: immutable, each
 * method returns a new options object, checked at once (the style of
 * {@link PublishOptions} and {@link ClaimOptions}). Defaults (bindings/CONTRACT.md):
 * concurrency 1, visibility 30 s, min priority 0, max events 1, back-off base 1 s and cap
 * 60 s, max attempts 0 (unlimited), shutdown timeout 30 s, the library's worker id, no
 * idle timeout, no signal handling, errors logged through {@link System.Logger}
 * "mongomq", every partition.
 *
 * <pre>{@code
 * WorkerOptions opts = WorkerOptions.defaults().concurrency(8).visibility(Duration.ofMinutes(1))
 *         .handleSignals(true);
 * }</pre>
 */
public final class WorkerOptions {
    private static final WorkerOptions DEFAULTS = new WorkerOptions(1, Duration.ofSeconds(30), 0, 1,
            Duration.ofSeconds(1), Duration.ofSeconds(60), 0, Duration.ofSeconds(30), null, null, false, null,
            PartitionList.ALL);

    private final int concurrency;
    private final Duration visibility;
    private final int minPriority;
    private final int maxEvents;
    private final Duration backoffBase;
    private final Duration backoffCap;
    private final int maxAttempts;
    private final Duration shutdownTimeout;
    private final String workerId; // null: the library's default
    private final Duration idleTimeout; // null: never
    private final boolean handleSignals;
    private final Consumer<Throwable> onError; // null: logged
    private final PartitionList partitions;

    private WorkerOptions(int concurrency, Duration visibility, int minPriority, int maxEvents, Duration backoffBase,
                          Duration backoffCap, int maxAttempts, Duration shutdownTimeout, String workerId,
                          Duration idleTimeout, boolean handleSignals, Consumer<Throwable> onError,
                          PartitionList partitions) {
        this.concurrency = concurrency;
        this.visibility = visibility;
        this.minPriority = minPriority;
        this.maxEvents = maxEvents;
        this.backoffBase = backoffBase;
        this.backoffCap = backoffCap;
        this.maxAttempts = maxAttempts;
        this.shutdownTimeout = shutdownTimeout;
        this.workerId = workerId;
        this.idleTimeout = idleTimeout;
        this.handleSignals = handleSignals;
        this.onError = onError;
        this.partitions = partitions;
    }

    /** The defaults of the class comment. */
    public static WorkerOptions defaults() {
        return DEFAULTS;
    }

    /** Worker threads claiming and handling at once; >= 1. */
    public WorkerOptions concurrency(int n) {
        if (n < 1) throw new IllegalArgumentException("concurrency must be >= 1, got " + n);
        return new WorkerOptions(n, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** Lease length; the lease is extended by this every third of it while a handler runs. */
    public WorkerOptions visibility(Duration d) {
        Native.positive("visibility", d);
        return new WorkerOptions(concurrency, d, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** Claim only groups of at least this priority (0..4). */
    public WorkerOptions minPriority(int p) {
        Native.priority("minPriority", p);
        return new WorkerOptions(concurrency, visibility, p, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** Events per lease (1..10000); the handler gets the whole lease. */
    public WorkerOptions maxEvents(int n) {
        Native.maxEvents(n);
        return new WorkerOptions(concurrency, visibility, minPriority, n, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** A failed handler's nack delay: min(cap, base * 2^(attempts - 1)) times a jitter in [0.5, 1]. */
    public WorkerOptions backoffBase(Duration d) {
        Native.nonNegative("backoffBase", d);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, d, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** The longest back-off (see {@link #backoffBase}). */
    public WorkerOptions backoffCap(Duration d) {
        Native.nonNegative("backoffCap", d);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, d, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** > 0: set on the queue, so a head delivered that often goes to the dead letters on its next claim. */
    public WorkerOptions maxAttempts(int n) {
        if (n < 0) throw new IllegalArgumentException("maxAttempts must not be negative, got " + n);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, n,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** How long a stop waits for running handlers before it abandons them. */
    public WorkerOptions shutdownTimeout(Duration d) {
        Native.nonNegative("shutdownTimeout", d);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                d, workerId, idleTimeout, handleSignals, onError, partitions);
    }

    /** The worker id recorded with each lease; null for the library's default (host:pid). */
    public WorkerOptions workerId(String id) {
        Native.workerId(id);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, id, idleTimeout, handleSignals, onError, partitions);
    }

    /**
     * Stop by itself (gracefully) once no lease was claimed and no handler ran for this
     * long; positive. Unset (the default): never.
     */
    public WorkerOptions idleTimeout(Duration d) {
        Native.positive("idleTimeout", d);
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, d, handleSignals, onError, partitions);
    }

    /**
     * true: SIGINT and SIGTERM stop the worker gracefully (as Sidekiq does) instead of
     * ending the JVM; the handlers they had (the JVM's: run the shutdown hooks and exit)
     * are put back when the worker ends. Default false.
     */
    public WorkerOptions handleSignals(boolean on) {
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, on, onError, partitions);
    }

    /**
     * Called with every error the worker goes on after: a handler's exception, a lease
     * lost on ack, nack or extend, an error of the queue (after which claiming backs
     * off). Null (the default): each is logged through {@link System.Logger} "mongomq"
     * with its stack trace (a handler's failure at ERROR, the others at WARNING).
     */
    public WorkerOptions onError(Consumer<Throwable> handler) {
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, handler, partitions);
    }

    /**
     * Claim only from these partitions of a partitioned queue (0.8.0), as
     * {@link ClaimOptions#partitions(int...)}: a worker per shard of a queue's partitions.
     * Judged when the worker starts, by the library's rule (each in 0..{@link
     * MongoMqQueue#partitions()} - 1, none twice: an {@link IllegalArgumentException}
     * naming {@code partitions[i]}). None (the default): every partition.
     *
     * @since 0.8.0
     */
    public WorkerOptions partitions(int... partitions) {
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, PartitionList.of(partitions));
    }

    /** {@link #partitions(int...)} from a collection, in its iteration order. */
    public WorkerOptions partitions(Collection<Integer> partitions) {
        return new WorkerOptions(concurrency, visibility, minPriority, maxEvents, backoffBase, backoffCap, maxAttempts,
                shutdownTimeout, workerId, idleTimeout, handleSignals, onError, PartitionList.of(partitions));
    }

    public int concurrency() { return concurrency; }
    public Duration visibility() { return visibility; }
    public int minPriority() { return minPriority; }
    public int maxEvents() { return maxEvents; }
    public Duration backoffBase() { return backoffBase; }
    public Duration backoffCap() { return backoffCap; }
    public int maxAttempts() { return maxAttempts; }
    public Duration shutdownTimeout() { return shutdownTimeout; }
    /** Empty: the library's default. */
    public Optional<String> workerId() { return Optional.ofNullable(workerId); }
    /** Empty: never. */
    public Optional<Duration> idleTimeout() { return Optional.ofNullable(idleTimeout); }
    public boolean handleSignals() { return handleSignals; }
    /** Empty: the default, logging. */
    public Optional<Consumer<Throwable>> onError() { return Optional.ofNullable(onError); }
    /** Unmodifiable; empty: every partition. */
    public List<Integer> partitions() { return partitions.list(); }

    PartitionList partitionList() { return partitions; }

    @Override
    public String toString() {
        return "WorkerOptions{concurrency=" + concurrency + ", visibility=" + visibility + ", minPriority=" + minPriority
                + ", maxEvents=" + maxEvents + ", backoffBase=" + backoffBase + ", backoffCap=" + backoffCap
                + ", maxAttempts=" + maxAttempts + ", shutdownTimeout=" + shutdownTimeout
                + (workerId == null ? "" : ", workerId=" + workerId)
                + (idleTimeout == null ? "" : ", idleTimeout=" + idleTimeout) + ", handleSignals=" + handleSignals
                + (onError == null ? "" : ", onError=" + onError)
                + (partitions.list().isEmpty() ? "" : ", partitions=" + partitions) + "}";
    }
}
