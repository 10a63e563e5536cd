package org.mongomq;

/**
 * What a publish did ({@link MongoMqQueue#publishWith(String, byte[], PublishOptions)},
 * one element of {@link MongoMqQueue#publishWith(Batch)}): the event's sequence number,
 * and whether it was a duplicate. A duplicate (its {@link PublishOptions#dedupKey(String)
 * dedup key} was taken) added nothing: {@code seq} is then the seq of the event that
 * took the key, which may already be acked (within the dedup window). A duplicate is a
 * success, never an exception (the library's {@code MQ_DUPLICATE}).
 *
 * @param seq       the event's seq; for a duplicate, that of the event holding the key
 * @param duplicate true when the key was taken and nothing was added
 * @since 0.6.0
 */
public record Published(long seq, boolean duplicate) {
    /** The shims' seq: negated for a duplicate (seqs are &gt;= 1). */
    static Published of(long shimSeq) {
        return shimSeq < 0 ? new Published(-shimSeq, true) : new Published(shimSeq, false);
    }
}
