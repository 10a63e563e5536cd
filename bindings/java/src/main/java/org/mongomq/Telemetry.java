package org.mongomq;

import java.util.Map;

/**
 * The hooks a queue calls when it was given a telemetry ({@link
 * MongoMqQueue#setTelemetry(Telemetry)}): the core's own interface, naming no type of
 * any tracing library, so that the core never loads one. The implementation this
 * package ships is {@code org.mongomq.otel.MongoMqTelemetry} (OpenTelemetry: its
 * {@code create(OpenTelemetry)} and {@code global()}); what it records is
 * bindings/CONTRACT.md's "Tracing" (issue 22).
 *
 * <p>Who calls what: every publish (single, batch, with a dedup key, and those of the
 * {@link AsyncQueue}) calls {@link #startSend} before the library's publish, puts
 * {@link Sending#headers()} into each event's attributes, and calls {@link Sending#end} once
 * it returned or failed; {@link MongoMqQueue#ack}/{@link MongoMqQueue#nack} call
 * {@link #recordOperation}; the workers ({@link Worker}, {@link AsyncWorker}) call
 * {@link #startProcess} for each lease they hand to a handler, run the handler with
 * {@link Processing#makeCurrent()}, then {@link Processing#handled}, {@link Processing#settle}
 * around their ack or nack, and {@link Processing#end}. An implementation must be
 * thread-safe and must not throw: the queue calls it on every thread it runs on.
 *
 * @since 0.7.0
 */
public interface Telemetry {

    /**
     * A publish to {@code destination} ("db.prefix") starts, in the caller's context:
     * {@code group} is a single publish's group, null for a batch of {@code count}
     * events.
     */
    Sending startSend(String destination, String group, int count);

    /**
     * A worker hands {@code lease} (of {@code destination}) to its handler, on the thread
     * that will run it.
     */
    Processing startProcess(String destination, Lease lease);

    /**
     * An {@code operation} ("ack" or "nack") of {@code destination} took {@code seconds}
     * and failed with {@code error} (null: it succeeded); for every ack and nack of the
     * queue, the workers' and a hand-claimer's.
     */
    void recordOperation(String destination, String operation, double seconds, Throwable error);

    /**
     * {@code task}, to run later on another thread in the context current now (the
     * {@link AsyncQueue}'s calls, so that an async publish is a child of its caller's
     * span).
     */
    Runnable wrap(Runnable task);

    /** What {@link Processing#makeCurrent()} returns: closing it restores the context before. */
    @FunctionalInterface
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }

    /** One publish's telemetry. */
    interface Sending {
        /**
         * The attributes to add to each event (W3C {@code traceparent}, ...), in order;
         * the queue adds those the event's own do not name and the attribute bounds let
         * in, and leaves the others out. Empty: none.
         */
        Map<String, String> headers();

        /**
         * The publish returned ({@code error} null; {@code seq} a single publish's seq,
         * -1 for a batch) or failed with {@code error}.
         */
        void end(long seq, Throwable error);
    }

    /** One handler run of a worker. */
    interface Processing {
        /** Makes the process current on this thread until the scope is closed. */
        Scope makeCurrent();

        /** The handler returned ({@code failure} null) or failed with {@code failure}. */
        void handled(Throwable failure);

        /** The worker's ack or nack ({@code operation}) of the lease starts. */
        Settling settle(String operation);

        /** The run is over (after its settlement, or when the worker gave up on it). */
        void end();
    }

    /** One ack or nack of a worker. */
    interface Settling {
        /** It succeeded ({@code error} null) or failed with {@code error}. */
        void end(Throwable error);
    }
}
