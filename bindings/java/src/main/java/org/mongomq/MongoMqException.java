package org.mongomq;

import java.nio.charset.StandardCharsets;

/**
 * An error of the queue: its {@link #status()}, the MongoDB error code when the server
 * gave one ({@link #serverCode()}), and the library's message. Unchecked.
 *
 * <p>Subclasses for the statuses callers test: {@link LeaseLostException},
 * {@link MongoMqConnectException}, {@link QueueInterruptedException},
 * {@link CancelledException}. A bad argument is an {@link IllegalArgumentException}
 * instead (its message names the argument), and use of a closed object a
 * {@link ClosedException}: neither is a failure of the queue.
 */
public class MongoMqException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status status;
    private final int serverCode;

    public MongoMqException(Status status, int serverCode, String message) {
        super(format(status, serverCode, message));
        this.status = status;
        this.serverCode = serverCode;
    }

    /** What went wrong, as the library's status. */
    public Status status() {
        return status;
    }

    /** The status's C name, from the library's {@code mq_status_name} ("MQ_LEASE_LOST", ...). */
    public String statusName() {
        return status.cName();
    }

    /** The MongoDB error code, or 0. */
    public int serverCode() {
        return serverCode;
    }

    private static String format(Status status, int serverCode, String message) {
        StringBuilder sb = new StringBuilder(message == null ? "" : message);
        sb.append(" (").append(status.cName());
        if (serverCode != 0) sb.append(", server code ").append(serverCode);
        return sb.append(')').toString();
    }

    /** Called by the JNI wrapper (lang/java.i) when a call fails; the wrapper throws the result. */
    static RuntimeException fromNative(int code, int serverCode, byte[] message) {
        String msg = new String(message, StandardCharsets.UTF_8);
        Status status = Status.of(code);
        switch (status) {
            case ERR_ARG:
                return new IllegalArgumentException(msg);
            case LEASE_LOST:
                return new LeaseLostException(serverCode, msg);
            case ERR_CONNECT:
                return new MongoMqConnectException(serverCode, msg);
            case INTERRUPTED:
                return new QueueInterruptedException(msg);
            case CANCELLED:
                return new CancelledException(msg);
            default:
                return new MongoMqException(status, serverCode, msg);
        }
    }
}
