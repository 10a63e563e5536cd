package org.mongomq;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * How {@link MongoMqQueue#publish(String, byte[], PublishOptions)} and
 * {@link Batch#add(String, byte[], PublishOptions)} publish an event ({@code mq_publish_opts}):
 * immutable, each method returns a new options object, checked at once.
 *
 * <pre>{@code
 * PublishOptions urgent = PublishOptions.defaults().priority(4);
 * queue.publish("customer-17", event, urgent);
 * queue.publish("customer-17", event, urgent.notBefore(queue.now().plusSeconds(60)));
 * Published p = queue.publishWith("customer-17", event, urgent.dedupKey("order-17-charge"));
 * }</pre>
 */
public final class PublishOptions {
    private static final PublishOptions DEFAULTS = new PublishOptions(0, null, null);

    private final int priority;
    private final Instant notBefore; // null: now
    private final String dedupKey; // null: none

    private PublishOptions(int priority, Instant notBefore, String dedupKey) {
        this.priority = priority;
        this.notBefore = notBefore;
        this.dedupKey = dedupKey;
    }

    /** Priority 0, due at once, no dedup key. */
    public static PublishOptions defaults() {
        return DEFAULTS;
    }

    /**
     * The group's priority, 0..4 (default 0): it counts only when this publish creates
     * the group (a group keeps its priority until it is drained).
     */
    public PublishOptions priority(int priority) {
        Native.priority("priority", priority);
        return new PublishOptions(priority, notBefore, dedupKey);
    }

    /**
     * Not delivered before this instant of the queue's clock ({@link MongoMqQueue#now()});
     * default: due at once. FIFO stays strict: its group waits for it.
     *
     * @throws IllegalArgumentException null, or before the epoch
     */
    public PublishOptions notBefore(Instant notBefore) {
        if (notBefore == null) throw new IllegalArgumentException("notBefore must not be null (leave it unset for now)");
        if (notBefore.getEpochSecond() < 0) throw new IllegalArgumentException("notBefore must not be before the epoch");
        return new PublishOptions(priority, notBefore, dedupKey);
    }

    /**
     * Publishes exactly once (0.6.0): while an event published with this key is in the
     * queue, and for the dedup window after its publish ({@link
     * MongoMqQueue#setDedupWindow(java.time.Duration)}, 5 minutes by default) even once it was
     * acked, a publish with the same key adds nothing and reports the first event's seq
     * as a duplicate ({@link MongoMqQueue#publishWith(String, byte[], PublishOptions)}).
     * So a publish retried with its key after any failure (a {@link
     * MongoMqConnectException}: a lost reply, a step-down) leaves exactly one event.
     * 1..512 bytes of UTF-8, checked by the library when the event is published or added
     * to a batch (an empty or longer key is then an {@link IllegalArgumentException}
     * naming {@code dedup_key}); {@code null} (the default): no key.
     *
     * @throws IllegalArgumentException the key contains a NUL character
     * @since 0.6.0
     */
    public PublishOptions dedupKey(String dedupKey) {
        Native.text("dedupKey", dedupKey);
        return new PublishOptions(priority, notBefore, dedupKey);
    }

    public int priority() {
        return priority;
    }

    /** Empty: due at once. */
    public Optional<Instant> notBefore() {
        return Optional.ofNullable(notBefore);
    }

    /** Empty: no dedup key. */
    public Optional<String> dedupKey() {
        return Optional.ofNullable(dedupKey);
    }

    /** The shim's has_key: 0 for none. */
    int hasDedupKey() {
        return dedupKey == null ? 0 : 1;
    }

    /** The shim's not-before: epoch seconds, 0 for now. */
    double notBeforeEpochSeconds() {
        if (notBefore == null) return 0;
        double at = Native.epochSeconds(notBefore);
        return at == 0 ? Double.MIN_VALUE : at; // the shim reads 0 as "now"; the epoch itself is long past anyway
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PublishOptions p && p.priority == priority && Objects.equals(p.notBefore, notBefore)
                && Objects.equals(p.dedupKey, dedupKey);
    }

    @Override
    public int hashCode() {
        return Objects.hash(priority, notBefore, dedupKey);
    }

    @Override
    public String toString() {
        return "PublishOptions{priority=" + priority + (notBefore == null ? "" : ", notBefore=" + notBefore)
                + (dedupKey == null ? "" : ", dedupKey=" + dedupKey) + "}";
    }
}
