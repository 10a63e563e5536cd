package org.mongomq;

/**
 * A call on a client, queue, lease, batch or manual clock after its {@code close()}:
 * the binding's own error, with no C status (the library never sees the call). The
 * message says which object is closed ("queue is closed").
 *
 * <p>An {@link IllegalStateException}, as the JDK's own closed objects throw (a closed
 * {@code Scanner}, a shut-down executor's {@code Cleaner}...): a use after close is a
 * mistake of the program, like a bad argument ({@link IllegalArgumentException}), not a
 * failure of the queue ({@link MongoMqException}, which always carries a C status).
 */
public class ClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ClosedException(String what) {
        super(what + " is closed");
    }
}
