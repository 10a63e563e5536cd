package org.mongomq;

/** The server is unreachable or timed out (status {@link Status#ERR_CONNECT}). */
public class ConnectException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public ConnectException(int serverCode, String message) {
        super(Status.ERR_CONNECT, serverCode, message);
    }
}
