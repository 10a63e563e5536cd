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
 * }</pre>
 */
public final class PublishOptions {
    private static final PublishOptions DEFAULTS = new PublishOptions(0, null);

    private final int priority;
    private final Instant notBefore; // null: now

    private PublishOptions(int priority, Instant notBefore) {
        this.priority = priority;
        this.notBefore = notBefore;
    }

    /** Priority 0, due at once. */
    public static PublishOptions defaults() {
        return DEFAULTS;
    }

    /**
     * The group's priority, 0..4 (default 0): it counts only when this publish creates
     * the group (a group keeps its priority until it is drained).
     */
    public PublishOptions priority(int priority) {
        Native.priority("priority", priority);
        return new PublishOptions(priority, notBefore);
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
        return new PublishOptions(priority, notBefore);
    }

    public int priority() {
        return priority;
    }

    /** Empty: due at once. */
    public Optional<Instant> notBefore() {
        return Optional.ofNullable(notBefore);
    }

    /** The shim's not-before: epoch seconds, 0 for now. */
    double notBeforeEpochSeconds() {
        if (notBefore == null) return 0;
        double at = Native.epochSeconds(notBefore);
        return at == 0 ? Double.MIN_VALUE : at; // the shim reads 0 as "now"; the epoch itself is long past anyway
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PublishOptions p && p.priority == priority && Objects.equals(p.notBefore, notBefore);
    }

    @Override
    public int hashCode() {
        return Objects.hash(priority, notBefore);
    }

    @Override
    public String toString() {
        return "PublishOptions{priority=" + priority + (notBefore == null ? "" : ", notBefore=" + notBefore) + "}";
    }
}
