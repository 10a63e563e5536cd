package org.mongomq;

import org.mongomq.internal.mongomq_raw;

/**
 * Where a dedup key must be unique ({@link MongoMqQueue#setDedupScope(DedupScope)},
 * {@code mq_dedup_scope}). Every publisher of a queue should use one scope: keys
 * published with one scope never match keys published with the other.
 *
 * @since 0.6.0
 */
public enum DedupScope {
    /** In the queue: the same key in two groups is a duplicate. The default. */
    QUEUE(mongomq_raw.MQ_DEDUP_SCOPE_QUEUE),
    /**
     * In the event's group only (SQS FIFO's high-throughput mode), which a queue sharded
     * by group can keep on every shard.
     */
    GROUP(mongomq_raw.MQ_DEDUP_SCOPE_GROUP);

    private final int code;

    DedupScope(int code) {
        this.code = code;
    }

    /** Its {@code MQ_DEDUP_SCOPE_*} value. */
    int code() {
        return code;
    }
}
