package org.mongomq;

/**
 * The server is unreachable or timed out, or a write's outcome is unknown (status
 * {@link Status#ERR_CONNECT}). Named so that it never shadows
 * {@code java.net.ConnectException}.
 */
public class MongoMqConnectException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public MongoMqConnectException(int serverCode, String message) {
        super(Status.ERR_CONNECT, serverCode, message);
    }
}
