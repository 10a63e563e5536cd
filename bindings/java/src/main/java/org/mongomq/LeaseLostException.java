package org.mongomq;

/**
 * An ack, nack or extend whose lease expired and whose group another worker took
 * (status {@link Status#LEASE_LOST}). For an ack the event is removed all the same.
 * Also thrown for an ack, nack or extend of a lease that was already acked or nacked.
 */
public class LeaseLostException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public LeaseLostException(int serverCode, String message) {
        super(Status.LEASE_LOST, serverCode, message);
    }
}
