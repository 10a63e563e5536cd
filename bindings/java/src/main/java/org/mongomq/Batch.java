package org.mongomq;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.mongomq.internal.mongomq_raw;

/**
 * Events to publish together with {@link MongoMqQueue#publish(Batch)} (or {@link
 * MongoMqQueue#publishWith(Batch)}, which says what became of each): 3 server commands for
 * the whole batch. The batch copies each event; it may be published again (new seqs).
 * Its methods are synchronized, so sharing one between threads is safe (if rarely useful).
 *
 * <p>Tracing (0.7.0): a queue with a {@link Telemetry} puts its send's trace context into
 * each event's attributes when it publishes the batch, so the batch must still have its
 * events then. A batch made once some queue of the JVM was given a telemetry keeps a copy
 * of each event for that (beside the library's copy); one made before has none, and is
 * published with its send recorded but no trace context in its events. A program that
 * never sets a telemetry keeps no second copy.
 */
public final class Batch implements AutoCloseable {
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final List<Entry> entries; // null: kept no copy (no telemetry in this JVM when made)

    /** One event as it was added, for a traced publish. */
    private record Entry(String groupId, byte[] event, PublishOptions options) {}

    public Batch() {
        this.handle = new Handle("batch", mongomq_raw.mq_batch_new(), mongomq_raw::mq_batch_destroy);
        this.cleanable = Native.CLEANER.register(this, handle);
        this.entries = Tracing.everUsed() ? new ArrayList<>() : null;
    }

    /**
     * Adds an event, published with {@code options} (its priority, a not-before time, a
     * dedup key and attributes: a batch event may be scheduled, keyed and carry
     * attributes); checked as
     * {@link MongoMqQueue#publish(String, byte[], PublishOptions)} checks it.
     */
    public synchronized Batch add(String groupId, byte[] event, PublishOptions options) {
        Native.group(groupId);
        Native.event(event);
        if (options == null) throw new IllegalArgumentException("options must not be null");
        long b = handle.acquire();
        try {
            mongomq_raw.mqs_batch_add_at(b, groupId, event, options.priority(), options.notBeforeEpochSeconds(),
                    options.hasDedupKey(), options.dedupKey().orElse(null), options.packedAttrs());
        } finally {
            handle.release();
        }
        if (entries != null) entries.add(new Entry(groupId, event.clone(), options));
        return this;
    }

    /** Adds an event with the default options (priority 0, due at once). */
    public Batch add(String groupId, byte[] event) {
        return add(groupId, event, PublishOptions.defaults());
    }

    /** Adds a text event (its UTF-8 bytes). */
    public Batch add(String groupId, String event, PublishOptions options) {
        if (event == null) throw new IllegalArgumentException("event must not be null");
        return add(groupId, event.getBytes(StandardCharsets.UTF_8), options);
    }

    /** Adds a text event with the default options. */
    public Batch add(String groupId, String event) {
        return add(groupId, event, PublishOptions.defaults());
    }

    /** The number of events added. */
    public synchronized int size() {
        long b = handle.acquire();
        try {
            return (int) mongomq_raw.mq_batch_count(b);
        } finally {
            handle.release();
        }
    }

    /** A publish of the batch: the first seq, and with outcomes each event's, in add order. */
    record Outcome(long first, List<Published> outcomes) {}

    /**
     * Publishes the batch to the queue handle; with {@code outcomes}, reads each event's
     * ({@code mq_batch_outcome}) under the same lock, so that no other publish of this
     * batch comes between.
     */
    Outcome publishTo(long queue, boolean outcomes) {
        return publishTo(queue, outcomes, null);
    }

    /**
     * {@link #publishTo(long, boolean)} with {@code headers} (a traced publish's, null or
     * empty for none) added to each event's attributes as {@link Tracing#withHeaders} does:
     * through a batch of the copies made for this, since the library's copy cannot be
     * changed. Without copies (made before any telemetry) or headers, the batch itself.
     */
    synchronized Outcome publishTo(long queue, boolean outcomes, Map<String, String> headers) {
        long b = handle.acquire();
        try {
            if (entries == null || headers == null || headers.isEmpty()) return publishFrom(queue, b, outcomes);
            long traced = mongomq_raw.mq_batch_new();
            try {
                for (Entry e : entries) addTraced(traced, e, headers);
                return publishFrom(queue, traced, outcomes);
            } finally {
                mongomq_raw.mq_batch_destroy(traced);
            }
        } finally {
            handle.release();
        }
    }

    /** An event with the headers; as it was added should the library refuse them (tracing never fails a publish). */
    private static void addTraced(long b, Entry e, Map<String, String> headers) {
        PublishOptions o = Tracing.withHeaders(e.options(), headers);
        try {
            mongomq_raw.mqs_batch_add_at(b, e.groupId(), e.event(), o.priority(), o.notBeforeEpochSeconds(),
                    o.hasDedupKey(), o.dedupKey().orElse(null), o.packedAttrs());
        } catch (IllegalArgumentException refused) {
            if (o == e.options()) throw refused;
            o = e.options();
            mongomq_raw.mqs_batch_add_at(b, e.groupId(), e.event(), o.priority(), o.notBeforeEpochSeconds(),
                    o.hasDedupKey(), o.dedupKey().orElse(null), o.packedAttrs());
        }
    }

    private static Outcome publishFrom(long queue, long b, boolean outcomes) {
        long first = mongomq_raw.mqs_publish_batch(queue, b); // < 0: some event was a duplicate
        if (!outcomes) return new Outcome(Math.abs(first), null);
        int n = (int) mongomq_raw.mq_batch_count(b);
        List<Published> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(Published.of(mongomq_raw.mqs_batch_outcome(b, i)));
        return new Outcome(Math.abs(first), List.copyOf(out));
    }

    /** Frees the batch. Twice does nothing. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /** For the tests. */
    Handle handle() {
        return handle;
    }
}
