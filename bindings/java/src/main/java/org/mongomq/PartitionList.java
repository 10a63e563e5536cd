package org.mongomq;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * The partitions a claim or a worker takes from (0.8.0: {@link ClaimOptions#partitions},
 * {@link WorkerOptions#partitions}), as given, and packed once the way
 * {@code mqs_claim_in} takes them: little-endian int32s, none for every partition. The
 * library judges the list at each claim ({@code mq_claim_opts.partitions}); a worker
 * judges it once at its start by the same rule ({@link #check}), so that a bad list is
 * an exception of {@code worker()}, not an error each of its claims reports.
 */
final class PartitionList {
    /** Every partition of the queue. */
    static final PartitionList ALL = new PartitionList(Collections.emptyList());

    private final List<Integer> list; // unmodifiable
    private final byte[] packed;

    private PartitionList(List<Integer> list) {
        this.list = list;
        ByteBuffer b = ByteBuffer.allocate(4 * list.size()).order(ByteOrder.LITTLE_ENDIAN);
        for (int p : list) b.putInt(p);
        this.packed = b.array();
    }

    static PartitionList of(int... partitions) {
        if (partitions == null) throw new IllegalArgumentException("partitions must not be null");
        List<Integer> l = new ArrayList<>(partitions.length);
        for (int p : partitions) l.add(p);
        return of(l);
    }

    static PartitionList of(Collection<Integer> partitions) {
        if (partitions == null) throw new IllegalArgumentException("partitions must not be null");
        List<Integer> l = new ArrayList<>(partitions);
        for (int i = 0; i < l.size(); i++)
            if (l.get(i) == null) throw new IllegalArgumentException("partitions[" + i + "] must not be null");
        return l.isEmpty() ? ALL : new PartitionList(Collections.unmodifiableList(l));
    }

    /** The list as given; empty: every partition. */
    List<Integer> list() {
        return list;
    }

    /** For mqs_claim_in. */
    byte[] packed() {
        return packed;
    }

    /**
     * The library's rule for a queue of {@code queuePartitions} (lib/partition.cpp,
     * check_partition_list), in its words: each in 0..P - 1, none twice.
     */
    void check(int queuePartitions) {
        boolean[] seen = new boolean[queuePartitions];
        for (int i = 0; i < list.size(); i++) {
            int k = list.get(i);
            if (k < 0 || k >= queuePartitions)
                throw new IllegalArgumentException("partitions[" + i + "] is " + k + ", outside 0.."
                        + (queuePartitions - 1) + " (the queue has " + queuePartitions + " partitions)");
            if (seen[k]) throw new IllegalArgumentException("partitions[" + i + "] is " + k + ", given twice");
            seen[k] = true;
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PartitionList p && p.list.equals(list);
    }

    @Override
    public int hashCode() {
        return list.hashCode();
    }

    @Override
    public String toString() {
        return list.toString();
    }
}
