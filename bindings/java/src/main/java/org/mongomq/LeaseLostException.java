package org.mongomq;

/**
 * An ack, nack, unclaim or extend whose lease expired and whose group another worker
 * took (status {@link Status#LEASE_LOST}). For an ack the event is removed all the
 * same; an unclaim changes nothing. Also thrown for a call on a lease that was already
 * acked, nacked or given back.
 */
public class LeaseLostException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public LeaseLostException(int serverCode, String message) {
        super(Status.LEASE_LOST, serverCode, message);
    }
}
