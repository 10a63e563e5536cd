package org.mongomq;

/**
 * A waiting claim on a queue that {@link MongoMqQueue#interrupt()} ended for good (status
 * {@link Status#INTERRUPTED}); every later waiting claim on that Queue throws it at once.
 */
public class QueueInterruptedException extends MongoMqException {
    private static final long serialVersionUID = 1L;

    public QueueInterruptedException(String message) {
        super(Status.INTERRUPTED, 0, message);
    }
}
