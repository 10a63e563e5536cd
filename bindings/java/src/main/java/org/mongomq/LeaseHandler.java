package org.mongomq;

/** The work a {@link Worker} does on each lease: return normally to ack, throw to nack. */
@FunctionalInterface
public interface LeaseHandler {
    /**
     * Handles one lease (its events: {@link Lease#events()}). Do not ack, nack or close
     * the lease here: the worker does that with the outcome.
     */
    void handle(Lease lease) throws Exception;
}
