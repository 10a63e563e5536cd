package org.mongomq;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One group as {@link MongoMqQueue#groups(GroupsOptions)} shows it: its lock, and its
 * events counted (a row of {@code mq_groups_json}). Instants are on the queue clock; what
 * the library gives as null is empty.
 *
 * @param group         the group id
 * @param state         its state at the page's {@link GroupsPage#now()}
 * @param paused        whether it is paused (then {@code state} is {@link GroupState#PAUSED})
 * @param priority      its priority (0..4), paused or not
 * @param attempts      deliveries of its head so far
 * @param availableAt   when it is due: the lease's deadline while held
 * @param holder        the worker id of its lease holder (its last holder's, when the lease ran out)
 * @param heldFor       how long the current lease has been held; empty unless held (and for a lease
 *                      taken by harel or a library before 0.5.0, which records no lease time)
 * @param leaseDeadline when the current lease runs out; empty unless held
 * @param backlog       events in the group
 * @param head          the seq of its oldest event; empty when it has none
 * @param headAge       how long ago the head was published (zero when two machines' clocks put it a
 *                      little ahead); empty without a head or its publish time
 * @since 0.5.0
 */
public record GroupInfo(String group, GroupState state, boolean paused, int priority, int attempts,
                        Optional<Instant> availableAt, Optional<String> holder, Optional<Duration> heldFor,
                        Optional<Instant> leaseDeadline, long backlog, OptionalLong head,
                        Optional<Duration> headAge) {

    /** A row of the library's JSON. */
    static GroupInfo parse(Map<String, Object> m) {
        Object g = m.get("group");
        Object st = m.get("state");
        if (!(g instanceof String) || !(st instanceof String))
            throw new IllegalStateException("mongomq: a group row without \"group\" or \"state\"");
        GroupState state;
        try {
            state = GroupState.of((String) st);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("mongomq: a group row's " + e.getMessage(), e);
        }
        Object holder = m.get("holder");
        Object head = m.get("head");
        return new GroupInfo((String) g, state, Boolean.TRUE.equals(m.get("paused")), (int) num(m, "priority"),
                (int) num(m, "attempts"), time(m, "available_at"),
                holder instanceof String ? Optional.of((String) holder) : Optional.empty(), age(m, "held_for_s"),
                time(m, "lease_deadline"), num(m, "backlog"),
                head instanceof Number ? OptionalLong.of(((Number) head).longValue()) : OptionalLong.empty(),
                age(m, "head_age_s"));
    }

    private static long num(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Number)) throw new IllegalStateException("mongomq: a group row without \"" + key + "\"");
        return ((Number) v).longValue();
    }

    private static Optional<Instant> time(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof Number ? Optional.of(Native.instant(((Number) v).doubleValue())) : Optional.empty();
    }

    /** Seconds as a Duration; a negative age (two machines' clocks) is zero. */
    private static Optional<Duration> age(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Number)) return Optional.empty();
        double s = ((Number) v).doubleValue();
        return Optional.of(s > 0 ? Native.duration(s) : Duration.ZERO);
    }
}
