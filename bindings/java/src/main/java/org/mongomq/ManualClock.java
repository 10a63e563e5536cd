package org.mongomq;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.time.Instant;
import org.mongomq.internal.mongomq_raw;

/**
 * A clock for tests and simulations, set and advanced by the program: a queue given one
 * ({@link MongoMqQueue#setClock(ManualClock)}) reads its time from it instead of the server's,
 * for {@link MongoMqQueue#now()}, scheduled publishes, visibility and lease deadlines.
 * Thread-safe.
 *
 * <p>The time is kept in C (the library reads it from its own threads, never calling
 * into the JVM). A queue keeps every clock it was given until the queue is closed, so
 * {@link #close()} (or the garbage collector) may end this handle while queues still
 * run on it: they keep reading the time it was last set to. Closing only ends this
 * handle; its methods then throw {@link ClosedException}.
 *
 * <pre>{@code
 * try (ManualClock clock = new ManualClock(Instant.parse("2030-01-01T00:00:00Z"))) {
 *     queue.setClock(clock);
 *     queue.publish("g", data, PublishOptions.defaults().notBefore(clock.now().plusSeconds(60)));
 *     clock.advance(Duration.ofSeconds(61)); // the event is due now
 * }
 * queue.setClock(null); // back to server time
 * }</pre>
 *
 * <p>A waiting claim ({@link ClaimOptions#wait(Duration)}) on a manual clock sleeps in real time until the due
 * times it knows of; advancing the clock does not wake it.
 */
public final class ManualClock implements AutoCloseable {
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    /**
     * A clock reading {@code start}.
     *
     * @throws IllegalArgumentException start is null
     */
    public ManualClock(Instant start) {
        if (start == null) throw new IllegalArgumentException("start must not be null");
        long ptr = mongomq_raw.mqs_clock_new(Native.epochSeconds(start));
        if (ptr == 0) throw new OutOfMemoryError("mongomq: manual clock");
        this.handle = new Handle("clock", ptr, mongomq_raw::mqs_clock_release);
        this.cleanable = Native.CLEANER.register(this, handle);
    }

    /** The clock's time. */
    public Instant now() {
        long c = handle.acquire();
        try {
            return Native.instant(mongomq_raw.mqs_clock_now(c));
        } finally {
            handle.release();
        }
    }

    /**
     * Sets the clock's time (backwards too).
     *
     * @throws IllegalArgumentException t is null
     */
    public void set(Instant t) {
        if (t == null) throw new IllegalArgumentException("t must not be null");
        double s = Native.epochSeconds(t);
        long c = handle.acquire();
        try {
            mongomq_raw.mqs_clock_set(c, s);
        } finally {
            handle.release();
        }
    }

    /**
     * Moves the clock's time by {@code d} (a negative duration moves it back).
     *
     * @throws IllegalArgumentException d is null
     */
    public void advance(Duration d) {
        if (d == null) throw new IllegalArgumentException("d must not be null");
        double s = Native.seconds(d);
        long c = handle.acquire();
        try {
            mongomq_raw.mqs_clock_advance(c, s);
        } finally {
            handle.release();
        }
    }

    /**
     * Ends this handle (queues given the clock keep it until they are closed). Twice
     * does nothing.
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        try {
            return "ManualClock{" + now() + "}";
        } catch (ClosedException closed) {
            return "ManualClock{closed}";
        }
    }

    /** For Queue.setClock and the tests. */
    Handle handle() {
        return handle;
    }
}
