package org.mongomq;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.mongomq.internal.mongomq_raw;

/**
 * Events to publish together with {@link MongoMqQueue#publish(Batch)} (or {@link
 * MongoMqQueue#publishWith(Batch)}, which says what became of each): 3 server commands for
 * the whole batch. The batch copies each event; it may be published again (new seqs).
 * Its methods are synchronized, so sharing one between threads is safe (if rarely useful).
 */
public final class Batch implements AutoCloseable {
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    public Batch() {
        this.handle = new Handle("batch", mongomq_raw.mq_batch_new(), mongomq_raw::mq_batch_destroy);
        this.cleanable = Native.CLEANER.register(this, handle);
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
    synchronized Outcome publishTo(long queue, boolean outcomes) {
        long b = handle.acquire();
        try {
            long first = mongomq_raw.mqs_publish_batch(queue, b); // < 0: some event was a duplicate
            if (!outcomes) return new Outcome(Math.abs(first), null);
            int n = (int) mongomq_raw.mq_batch_count(b);
            List<Published> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(Published.of(mongomq_raw.mqs_batch_outcome(b, i)));
            return new Outcome(Math.abs(first), List.copyOf(out));
        } finally {
            handle.release();
        }
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
