package org.mongomq;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What {@link MongoMqQueue#groups(GroupsOptions)} lists ({@code mq_groups_opts}):
 * immutable, each method returns a new options object, checked at once. Every filter
 * narrows the page (they combine with "and").
 *
 * <pre>{@code
 * // Held for more than a minute, longest-due last, 100 a page:
 * GroupsOptions slow = GroupsOptions.defaults().states(GroupState.LEASED)
 *         .heldLongerThan(Duration.ofMinutes(1)).sort(GroupsSort.DUE).limit(100);
 * // Delivered twice or more ("stuck"), among the customer-* groups:
 * GroupsOptions stuck = GroupsOptions.defaults().idPrefix("customer-").minAttempts(2);
 * }</pre>
 *
 * @since 0.5.0
 */
public final class GroupsOptions {
    /** Groups per page the library allows. */
    public static final int LIMIT_MAX = 1000;

    private static final GroupsOptions DEFAULTS =
            new GroupsOptions(Set.of(), null, 0, Duration.ZERO, Duration.ZERO, GroupsSort.ID, null, 50);

    private final Set<GroupState> states; // empty: every state
    private final String idPrefix;        // null: every id
    private final int minAttempts;
    private final Duration heldLongerThan;
    private final Duration parkedBeyond;
    private final GroupsSort sort;
    private final String after;           // null: the first page
    private final int limit;

    private GroupsOptions(Set<GroupState> states, String idPrefix, int minAttempts, Duration heldLongerThan,
                          Duration parkedBeyond, GroupsSort sort, String after, int limit) {
        this.states = states;
        this.idPrefix = idPrefix;
        this.minAttempts = minAttempts;
        this.heldLongerThan = heldLongerThan;
        this.parkedBeyond = parkedBeyond;
        this.sort = sort;
        this.after = after;
        this.limit = limit;
    }

    /** Every group, by id, 50 a page: every state, every id, any attempts, no lease or park filter. */
    public static GroupsOptions defaults() {
        return DEFAULTS;
    }

    /** Only groups in one of these states; none (the default): every state. Replaces an earlier call's. */
    public GroupsOptions states(GroupState... states) {
        if (states == null) throw new IllegalArgumentException("states must not be null (none: every state)");
        return states(Arrays.asList(states));
    }

    /** As {@link #states(GroupState...)}, from a collection (empty: every state). */
    public GroupsOptions states(Collection<GroupState> states) {
        if (states == null) throw new IllegalArgumentException("states must not be null (empty: every state)");
        EnumSet<GroupState> set = EnumSet.noneOf(GroupState.class);
        for (GroupState s : states) {
            if (s == null) throw new IllegalArgumentException("states must not contain null");
            set.add(s);
        }
        return new GroupsOptions(Collections.unmodifiableSet(set), idPrefix, minAttempts, heldLongerThan,
                parkedBeyond, sort, after, limit);
    }

    /** Only groups whose id starts with {@code prefix} (literally: no pattern); null or "": every id. */
    public GroupsOptions idPrefix(String prefix) {
        Native.text("idPrefix", prefix);
        return new GroupsOptions(states, prefix == null || prefix.isEmpty() ? null : prefix, minAttempts,
                heldLongerThan, parkedBeyond, sort, after, limit);
    }

    /** Only groups whose head was delivered at least this often (2: "stuck"); 0 (the default): any. */
    public GroupsOptions minAttempts(int minAttempts) {
        if (minAttempts < 0) throw new IllegalArgumentException("minAttempts must not be negative, got " + minAttempts);
        return new GroupsOptions(states, idPrefix, minAttempts, heldLongerThan, parkedBeyond, sort, after, limit);
    }

    /**
     * Only groups whose current lease was taken more than {@code held} ago (so only held
     * groups); zero (the default): no filter.
     */
    public GroupsOptions heldLongerThan(Duration held) {
        Native.nonNegative("heldLongerThan", held);
        return new GroupsOptions(states, idPrefix, minAttempts, held, parkedBeyond, sort, after, limit);
    }

    /**
     * Only groups not due for more than {@code parked} (leased, parked or paused ones
     * whose due time is that far ahead); zero (the default): no filter.
     */
    public GroupsOptions parkedBeyond(Duration parked) {
        Native.nonNegative("parkedBeyond", parked);
        return new GroupsOptions(states, idPrefix, minAttempts, heldLongerThan, parked, sort, after, limit);
    }

    /** The page's order: {@link GroupsSort#ID} (the default) or {@link GroupsSort#DUE}. */
    public GroupsOptions sort(GroupsSort sort) {
        if (sort == null) throw new IllegalArgumentException("sort must not be null");
        return new GroupsOptions(states, idPrefix, minAttempts, heldLongerThan, parkedBeyond, sort, after, limit);
    }

    /**
     * The page after the one whose {@link GroupsPage#next()} this is (a cursor of the same
     * sort; another is an {@link IllegalArgumentException} from the listing); null: the
     * first page. Pages go by a cursor, not an offset: each costs the same, and a walk
     * visits every group once.
     */
    public GroupsOptions after(String cursor) {
        Native.text("after", cursor);
        return new GroupsOptions(states, idPrefix, minAttempts, heldLongerThan, parkedBeyond, sort,
                cursor == null || cursor.isEmpty() ? null : cursor, limit);
    }

    /** Groups per page, 1..1000 (default 50). */
    public GroupsOptions limit(int limit) {
        if (limit < 1 || limit > LIMIT_MAX)
            throw new IllegalArgumentException("limit must be 1.." + LIMIT_MAX + ", got " + limit);
        return new GroupsOptions(states, idPrefix, minAttempts, heldLongerThan, parkedBeyond, sort, after, limit);
    }

    /** Empty: every state. */
    public Set<GroupState> states() {
        return states;
    }

    /** Empty: every id. */
    public Optional<String> idPrefix() {
        return Optional.ofNullable(idPrefix);
    }

    public int minAttempts() {
        return minAttempts;
    }

    public Duration heldLongerThan() {
        return heldLongerThan;
    }

    public Duration parkedBeyond() {
        return parkedBeyond;
    }

    public GroupsSort sort() {
        return sort;
    }

    /** Empty: the first page. */
    public Optional<String> after() {
        return Optional.ofNullable(after);
    }

    public int limit() {
        return limit;
    }

    /** The OR of the states' MQ_GROUP_* flags (0: every state). */
    long stateFlags() {
        long bits = 0;
        for (GroupState s : states) bits |= s.flag();
        return bits;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GroupsOptions g && g.states.equals(states) && Objects.equals(g.idPrefix, idPrefix)
                && g.minAttempts == minAttempts && g.heldLongerThan.equals(heldLongerThan)
                && g.parkedBeyond.equals(parkedBeyond) && g.sort == sort && Objects.equals(g.after, after)
                && g.limit == limit;
    }

    @Override
    public int hashCode() {
        return Objects.hash(states, idPrefix, minAttempts, heldLongerThan, parkedBeyond, sort, after, limit);
    }

    @Override
    public String toString() {
        return "GroupsOptions{states=" + states + (idPrefix == null ? "" : ", idPrefix=" + idPrefix)
                + ", minAttempts=" + minAttempts + ", heldLongerThan=" + heldLongerThan + ", parkedBeyond="
                + parkedBeyond + ", sort=" + sort + (after == null ? "" : ", after=" + after) + ", limit=" + limit
                + "}";
    }
}
