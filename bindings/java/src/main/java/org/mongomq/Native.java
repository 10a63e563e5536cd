package org.mongomq;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/** Shared helpers of the hand-written layer: the Cleaner, argument checks, conversions. */
final class Native {
    /** The safety net for every handle nobody closed. */
    static final Cleaner CLEANER = Cleaner.create();

    private Native() {}

    static double seconds(Duration d) {
        return d.getSeconds() + d.getNano() / 1e9;
    }

    static Instant instant(double epochSeconds) {
        long s = (long) Math.floor(epochSeconds);
        long nanos = Math.round((epochSeconds - s) * 1e9);
        return Instant.ofEpochSecond(s, nanos);
    }

    static double epochSeconds(Instant t) {
        return t.getEpochSecond() + t.getNano() / 1e9;
    }

    // ---- argument checks: the same rules as the C library, named as the Java parameter ----

    static void group(String groupId) {
        if (groupId == null) throw new IllegalArgumentException("groupId must not be null");
        if (groupId.isEmpty()) throw new IllegalArgumentException("groupId must not be empty");
        if (groupId.indexOf('\0') >= 0) throw new IllegalArgumentException("groupId must not contain NUL characters");
        if (groupId.getBytes(StandardCharsets.UTF_8).length > 1000)
            throw new IllegalArgumentException("groupId must be at most 1000 bytes of UTF-8");
    }

    static void event(byte[] event) {
        if (event == null) throw new IllegalArgumentException("event must not be null");
    }

    static void priority(String name, int priority) {
        if (priority < 0 || priority > 4)
            throw new IllegalArgumentException(name + " must be 0..4, got " + priority);
    }

    static double positive(String name, Duration d) {
        if (d == null) throw new IllegalArgumentException(name + " must not be null");
        if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be positive, got " + d);
        return seconds(d);
    }

    static double nonNegative(String name, Duration d) {
        if (d == null) throw new IllegalArgumentException(name + " must not be null");
        if (d.isNegative()) throw new IllegalArgumentException(name + " must not be negative, got " + d);
        return seconds(d);
    }

    static void maxEvents(int maxEvents) {
        range("maxEvents", maxEvents);
    }

    /** A list size or events per lease: 1..10000 (MQ_BATCH_MAX). */
    static void range(String name, int n) {
        if (n < 1 || n > 10000) throw new IllegalArgumentException(name + " must be 1..10000, got " + n);
    }

    static void workerId(String id) {
        text("workerId", id);
        if (id != null && id.isEmpty()) throw new IllegalArgumentException("workerId must not be empty (null: the library's default)");
    }

    static Duration duration(double seconds) {
        return Duration.ofNanos(Math.round(seconds * 1e9));
    }

    static void text(String name, String s) {
        if (s != null && s.indexOf('\0') >= 0)
            throw new IllegalArgumentException(name + " must not contain NUL characters");
    }
}
