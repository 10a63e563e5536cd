package org.mongomq;

import java.util.concurrent.CompletionStage;

/**
 * The work an {@link AsyncWorker} does on each lease: return a stage that completes
 * normally to ack, exceptionally to nack (with back-off). A handler that throws, or
 * returns null, has failed as well.
 *
 * @since 0.6.0
 */
@FunctionalInterface
public interface AsyncLeaseHandler {
    /**
     * Starts the handling of one lease (its events: {@link Lease#events()}) and returns
     * at once; the lease is extended until the stage completes. It runs on the view's
     * executor, so it may block briefly, but a handler that blocks for long holds that
     * executor's thread: return a stage instead. Do not ack, nack or close the lease:
     * the worker does that with the stage's outcome.
     */
    CompletionStage<?> handle(Lease lease) throws Exception;
}
