package org.mongomq;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * How {@link MongoMqQueue#claim(ClaimOptions)} claims ({@code mq_claim_opts}): immutable,
 * each method returns a new options object, checked at once.
 *
 * <pre>{@code
 * ClaimOptions opts = ClaimOptions.defaults().visibility(Duration.ofMinutes(2)).maxEvents(10)
 *         .wait(Duration.ofSeconds(5));
 * Optional<Lease> lease = queue.claim(opts);
 * }</pre>
 *
 * <p>A claim with a {@link #wait(Duration) wait} is cancelled by {@link Thread#interrupt()}
 * of the waiting thread ({@link CancelledException}); one without does not wait.
 *
 * <p>The getter of {@code wait} is {@link #waitTimeout()}: {@code wait()} is
 * {@link Object#wait()}'s name.
 */
public final class ClaimOptions {
    private static final ClaimOptions DEFAULTS = new ClaimOptions(Duration.ofSeconds(30), 0, 1, Duration.ZERO, null,
            PartitionList.ALL);

    private final Duration visibility;
    private final int minPriority;
    private final int maxEvents;
    private final Duration wait;
    private final String workerId; // null: the library's host:pid
    private final PartitionList partitions;

    private ClaimOptions(Duration visibility, int minPriority, int maxEvents, Duration wait, String workerId,
                         PartitionList partitions) {
        this.visibility = visibility;
        this.minPriority = minPriority;
        this.maxEvents = maxEvents;
        this.wait = wait;
        this.workerId = workerId;
        this.partitions = partitions;
    }

    /** Visibility 30 s, min priority 0, one event, no wait, the library's worker id, every partition. */
    public static ClaimOptions defaults() {
        return DEFAULTS;
    }

    /** How long the lease lasts before another claim may take the group (default 30 s); positive. */
    public ClaimOptions visibility(Duration visibility) {
        Native.positive("visibility", visibility);
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    /** Claim only groups of at least this priority, 0..4 (default 0). */
    public ClaimOptions minPriority(int minPriority) {
        Native.priority("minPriority", minPriority);
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    /** Up to this many consecutive events of one group in the lease, 1..10000 (default 1). */
    public ClaimOptions maxEvents(int maxEvents) {
        Native.maxEvents(maxEvents);
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    /**
     * Wait up to this long for a group to become due, returning as soon as one is
     * (default zero: do not wait).
     */
    public ClaimOptions wait(Duration wait) {
        Native.nonNegative("wait", wait);
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    /** The worker id the lease records; null for the library's default ("host:pid"). */
    public ClaimOptions workerId(String workerId) {
        Native.workerId(workerId);
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    /**
     * Take only from these partitions of a partitioned queue (0.8.0; {@link
     * QueueOptions#partitions(int)}): each in 0..{@link MongoMqQueue#partitions()} - 1,
     * none twice, judged by the library at the claim (an {@link IllegalArgumentException}
     * naming {@code partitions[i]}). None (the default) is every partition; a claim with
     * a wait then also waits for those only.
     *
     * @since 0.8.0
     */
    public ClaimOptions partitions(int... partitions) {
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, PartitionList.of(partitions));
    }

    /** {@link #partitions(int...)} from a collection, in its iteration order. */
    public ClaimOptions partitions(Collection<Integer> partitions) {
        return new ClaimOptions(visibility, minPriority, maxEvents, wait, workerId, PartitionList.of(partitions));
    }

    public Duration visibility() {
        return visibility;
    }

    public int minPriority() {
        return minPriority;
    }

    public int maxEvents() {
        return maxEvents;
    }

    /** The {@link #wait(Duration)} option (zero: no wait). */
    public Duration waitTimeout() {
        return wait;
    }

    /** Empty: the library's default. */
    public Optional<String> workerId() {
        return Optional.ofNullable(workerId);
    }

    /** The {@link #partitions(int...)} option, unmodifiable; empty: every partition. */
    public List<Integer> partitions() {
        return partitions.list();
    }

    PartitionList partitionList() {
        return partitions;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClaimOptions c && c.visibility.equals(visibility) && c.minPriority == minPriority
                && c.maxEvents == maxEvents && c.wait.equals(wait) && Objects.equals(c.workerId, workerId)
                && c.partitions.equals(partitions);
    }

    @Override
    public int hashCode() {
        return Objects.hash(visibility, minPriority, maxEvents, wait, workerId, partitions);
    }

    @Override
    public String toString() {
        return "ClaimOptions{visibility=" + visibility + ", minPriority=" + minPriority + ", maxEvents=" + maxEvents
                + ", wait=" + wait + (workerId == null ? "" : ", workerId=" + workerId)
                + (partitions.list().isEmpty() ? "" : ", partitions=" + partitions) + "}";
    }
}
