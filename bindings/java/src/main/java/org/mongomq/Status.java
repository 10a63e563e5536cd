package org.mongomq;

/** The library's statuses ({@code mq_status}), plus {@link #CLOSED} for a Java object used after close. */
public enum Status {
    OK(0),
    /** A claim found nothing due (never an exception: the claim returns {@code Optional.empty()}). */
    EMPTY(1),
    /** The lease expired and the group moved on ({@link LeaseLostException}). */
    LEASE_LOST(2),
    /** The queue was interrupted for good ({@link QueueInterruptedException}). */
    INTERRUPTED(3),
    /** One waiting claim was cancelled ({@link CancelledException}). */
    CANCELLED(4),
    /** A bad argument (thrown as {@link IllegalArgumentException}). */
    ERR_ARG(-1),
    /** The server is unreachable or timed out ({@link ConnectException}). */
    ERR_CONNECT(-2),
    ERR_SERVER(-3),
    ERR_NOMEM(-4),
    ERR_INTERNAL(-5),
    /** Java only: the client, queue, lease or batch was closed (no C status). */
    CLOSED(Integer.MIN_VALUE);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /** The C value ({@code MQ_OK} is 0, ...); {@code Integer.MIN_VALUE} for {@link #CLOSED}. */
    public int code() {
        return code;
    }

    /** The C name: "MQ_LEASE_LOST", ...; "CLOSED" for {@link #CLOSED}. */
    public String cName() {
        return this == CLOSED ? "CLOSED" : "MQ_" + name();
    }

    static Status of(int code) {
        for (Status s : values()) {
            if (s.code == code) return s;
        }
        return ERR_INTERNAL;
    }
}
