package org.mongomq;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Settings of {@link Queue#work}: fluent setters, each checked at once. Defaults (those
 * of bindings/CONTRACT.md): concurrency 1, visibility 30 s, min priority 0, batch 1,
 * back-off base 1 s and cap 60 s, max attempts 0 (unlimited), shutdown timeout 30 s,
 * the library's worker id, errors logged through {@link System.Logger} "org.mongomq".
 */
public final class WorkerOptions {
    private int concurrency = 1;
    private Duration visibility = Duration.ofSeconds(30);
    private int minPriority = 0;
    private int batch = 1;
    private Duration backoffBase = Duration.ofSeconds(1);
    private Duration backoffCap = Duration.ofSeconds(60);
    private int maxAttempts = 0;
    private Duration shutdownTimeout = Duration.ofSeconds(30);
    private String workerId;
    private Consumer<Throwable> onError;

    public WorkerOptions() {}

    /** Workers (threads) claiming and handling at once; >= 1. */
    public WorkerOptions concurrency(int n) {
        if (n < 1) throw new IllegalArgumentException("concurrency must be >= 1, got " + n);
        concurrency = n;
        return this;
    }

    /** Lease length; the lease is extended by this every third of it while a handler runs. */
    public WorkerOptions visibility(Duration d) {
        Native.positive("visibility", d);
        visibility = d;
        return this;
    }

    /** Claim only groups of at least this priority (0..4). */
    public WorkerOptions minPriority(int p) {
        Native.priority("minPriority", p);
        minPriority = p;
        return this;
    }

    /** Events per lease (1..10000); the handler gets the whole lease. */
    public WorkerOptions batch(int n) {
        Native.maxEvents(n);
        batch = n;
        return this;
    }

    /** A failed handler's nack delay: min(cap, base * 2^(attempts - 1)) times a jitter in [0.5, 1]. */
    public WorkerOptions backoffBase(Duration d) {
        Native.nonNegative("backoffBase", d);
        backoffBase = d;
        return this;
    }

    public WorkerOptions backoffCap(Duration d) {
        Native.nonNegative("backoffCap", d);
        backoffCap = d;
        return this;
    }

    /** > 0: set on the queue, so a head delivered that often goes to the dead letters on its next claim. */
    public WorkerOptions maxAttempts(int n) {
        if (n < 0) throw new IllegalArgumentException("maxAttempts must not be negative, got " + n);
        maxAttempts = n;
        return this;
    }

    /** How long {@link Worker#close()} waits for running handlers. */
    public WorkerOptions shutdownTimeout(Duration d) {
        Native.nonNegative("shutdownTimeout", d);
        shutdownTimeout = d;
        return this;
    }

    /** The worker id recorded with each lease; null for the library's default (host:pid). */
    public WorkerOptions workerId(String id) {
        Native.text("workerId", id);
        if (id != null && id.isEmpty()) throw new IllegalArgumentException("workerId must not be empty");
        workerId = id;
        return this;
    }

    /**
     * Called with every error the worker goes on after: a handler's exception, a lease
     * lost on ack, nack or extend, an error of the queue (after which claiming backs off).
     */
    public WorkerOptions onError(Consumer<Throwable> handler) {
        onError = handler;
        return this;
    }

    public int concurrency() { return concurrency; }
    public Duration visibility() { return visibility; }
    public int minPriority() { return minPriority; }
    public int batch() { return batch; }
    public Duration backoffBase() { return backoffBase; }
    public Duration backoffCap() { return backoffCap; }
    public int maxAttempts() { return maxAttempts; }
    public Duration shutdownTimeout() { return shutdownTimeout; }
    public String workerId() { return workerId; }
    public Consumer<Throwable> onError() { return onError; }
}
