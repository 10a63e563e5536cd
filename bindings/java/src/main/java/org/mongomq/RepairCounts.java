package org.mongomq;

/**
 * The automatic repairs one queue object ran ({@link MongoMqQueue#repairCounts()},
 * {@code mq_queue_repair_counts}).
 *
 * @param runs  automatic repairs run
 * @param fixed locks they re-created
 */
public record RepairCounts(long runs, long fixed) {}
