package org.mongomq;

/**
 * A waiting claim ended by {@link Thread#interrupt()} of the thread that waited (status
 * {@link Status#CANCELLED}). As with Kafka's consumer, the thread's interrupt status
 * stays set; other waiters and later calls on the queue are not affected.
 */
public class CancelledException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public CancelledException(String message) {
        super(Status.CANCELLED, 0, message);
    }
}
