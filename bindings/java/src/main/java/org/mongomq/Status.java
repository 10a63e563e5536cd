package org.mongomq;

import org.mongomq.internal.mongomq_raw;

/**
 * The library's statuses ({@code mq_status}). The numbers are the C header's (read
 * through the SWIG constants) and the names C's own {@code mq_status_name}: there is no
 * table of them here.
 */
public enum Status {
    OK(mongomq_raw.MQ_OK),
    /** A claim found nothing due (never an exception: the claim returns {@code Optional.empty()}). */
    EMPTY(mongomq_raw.MQ_EMPTY),
    /** The lease expired and the group moved on ({@link LeaseLostException}). */
    LEASE_LOST(mongomq_raw.MQ_LEASE_LOST),
    /** The queue was interrupted for good ({@link QueueInterruptedException}). */
    INTERRUPTED(mongomq_raw.MQ_INTERRUPTED),
    /** One waiting claim was cancelled ({@link CancelledException}). */
    CANCELLED(mongomq_raw.MQ_CANCELLED),
    /**
     * A publish whose dedup key was taken (0.6.0): never an exception, a {@link
     * Published#duplicate()} instead.
     */
    DUPLICATE(mongomq_raw.MQ_DUPLICATE),
    /** A bad argument (thrown as {@link IllegalArgumentException}). */
    ERR_ARG(mongomq_raw.MQ_ERR_ARG),
    /** The server is unreachable or timed out ({@link MongoMqConnectException}). */
    ERR_CONNECT(mongomq_raw.MQ_ERR_CONNECT),
    ERR_SERVER(mongomq_raw.MQ_ERR_SERVER),
    ERR_NOMEM(mongomq_raw.MQ_ERR_NOMEM),
    ERR_INTERNAL(mongomq_raw.MQ_ERR_INTERNAL);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /** The C value ({@code MQ_OK} is 0, ...). */
    public int code() {
        return code;
    }

    /** The C name, from the library's {@code mq_status_name}: "MQ_LEASE_LOST", ... */
    public String cName() {
        return mongomq_raw.mq_status_name(code);
    }

    static Status of(int code) {
        for (Status s : values()) {
            if (s.code == code) return s;
        }
        return ERR_INTERNAL;
    }
}
