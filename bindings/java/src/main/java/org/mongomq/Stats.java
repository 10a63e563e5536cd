package org.mongomq;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A queue's state ({@link MongoMqQueue#stats()}): the keys of {@code mq_stats_json}
 * (docs/design.md, "Stats") as Java values.
 *
 * @param queue            "db.prefix"
 * @param now              the queue clock when the stats were taken
 * @param messages         events in the queue (harel's included)
 * @param dead             dead letters
 * @param published        events ever published to the queue (its seq counter; a requeued dead
 *                         letter counts again; since 0.5.0)
 * @param groups           groups by state
 * @param oldestMessageAge age of the oldest event; empty when there is none (or it has no publish time)
 * @param priorities       five entries, index = priority 0..4
 * @param partitions       the queue's number of partitions ({@link MongoMqQueue#partitions()};
 *                         {@code published} then sums every partition's counter; since 0.8.0)
 */
public record Stats(String queue, Instant now, long messages, long dead, long published, Groups groups,
                    Optional<Duration> oldestMessageAge, List<PriorityCounts> priorities, int partitions) {

    /** The stats of a queue of one partition (the constructor before 0.8.0). */
    public Stats(String queue, Instant now, long messages, long dead, long published, Groups groups,
                 Optional<Duration> oldestMessageAge, List<PriorityCounts> priorities) {
        this(queue, now, messages, dead, published, groups, oldestMessageAge, priorities, 1);
    }

    /**
     * Groups by state. {@code leased} includes groups nacked with a delay; {@code parked}
     * are groups waiting for a scheduled head; {@code paused} (since 0.5.0) are paused
     * groups ({@link MongoMqQueue#pauseGroup}), whatever their lease or schedule, counted
     * in none of the other three.
     */
    public record Groups(long ready, long leased, long parked, long paused, long total) {}

    /** Groups whose priority is this one, and events published with it. */
    public record PriorityCounts(long groups, long messages) {}

    /** The priority's counts, 0..4. */
    public PriorityCounts priority(int priority) {
        return priorities.get(priority);
    }

    @SuppressWarnings("unchecked")
    static Stats parse(String json) {
        Map<String, Object> m = (Map<String, Object>) Json.parse(json);
        Map<String, Object> g = (Map<String, Object>) m.get("groups");
        Map<String, Object> p = (Map<String, Object>) m.get("priorities");
        List<PriorityCounts> pr = new ArrayList<>();
        for (int i = 0; i <= 4; i++) {
            Map<String, Object> e = (Map<String, Object>) p.get(Integer.toString(i));
            pr.add(new PriorityCounts(num(e, "groups"), num(e, "messages")));
        }
        Object age = m.get("oldest_message_age_s");
        return new Stats((String) m.get("queue"),
                Native.instant(((Number) m.get("now")).doubleValue()),
                num(m, "messages"), num(m, "dead"), num(m, "published"),
                new Groups(num(g, "ready"), num(g, "leased"), num(g, "parked"), num(g, "paused"), num(g, "total")),
                age == null ? Optional.empty()
                        : Optional.of(Duration.ofNanos(Math.round(((Number) age).doubleValue() * 1e9))),
                Collections.unmodifiableList(pr), (int) num(m, "partitions"));
    }

    private static long num(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Number)) throw new IllegalStateException("mongomq: stats without \"" + key + "\"");
        return ((Number) v).longValue();
    }
}
