package org.mongomq;

/**
 * How {@link Client#queue(String, String, QueueOptions)} opens a queue
 * ({@code mq_queue_opts}): immutable, each method returns a new options object, as
 * {@link ClaimOptions}.
 *
 * <pre>{@code
 * MongoMqQueue orders = client.queue("shop", "orders", QueueOptions.defaults().partitions(16));
 * }</pre>
 *
 * @since 0.8.0
 */
public final class QueueOptions {
    /** The most partitions a queue may have ({@code MQ_PARTITIONS_MAX}). */
    public static final int PARTITIONS_MAX = 1024;

    private static final QueueOptions DEFAULTS = new QueueOptions(1);

    private final int partitions;

    private QueueOptions(int partitions) {
        this.partitions = partitions;
    }

    /** One partition: the queue of {@link Client#queue(String, String)}. */
    public static QueueOptions defaults() {
        return DEFAULTS;
    }

    /**
     * The queue's number of partitions, 1..{@value #PARTITIONS_MAX} (default 1): a group
     * lives in partition {@link MongoMqQueue#groupPartition(String, int)
     * groupPartition(group, partitions)}, and each partition's locks and counters may go
     * to a shard of their own (include/mongomq.h, "Partitioned queues"). Fixed when the
     * queue is first opened with it: opening it again with another number is an
     * {@link IllegalArgumentException} naming the one it has. Judged by the library when
     * the queue is opened (an {@code IllegalArgumentException} naming {@code partitions}).
     */
    public QueueOptions partitions(int partitions) {
        return new QueueOptions(partitions);
    }

    public int partitions() {
        return partitions;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof QueueOptions q && q.partitions == partitions;
    }

    @Override
    public int hashCode() {
        return partitions;
    }

    @Override
    public String toString() {
        return "QueueOptions{partitions=" + partitions + "}";
    }
}
