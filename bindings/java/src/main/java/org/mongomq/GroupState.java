package org.mongomq;

import org.mongomq.internal.mongomq_raw;

/**
 * A group's state, as {@link MongoMqQueue#groups(GroupsOptions)} shows it
 * ({@link GroupInfo#state()}) and filters on ({@link GroupsOptions#states}). The first
 * three are the stats' ({@link Stats.Groups}); a paused group is only paused, whatever
 * its lease or schedule. Its text is the library's ({@link #libraryName()}: "ready",
 * "leased", "parked", "paused"), read back by {@link #of(String)}.
 *
 * @since 0.5.0
 */
public enum GroupState {
    /** Due now: the next claim may take it (new, released, retried, or a lease that ran out). */
    READY("ready", mongomq_raw.MQ_GROUP_READY),
    /** Held by a worker (a nack with a delay keeps it held). */
    LEASED("leased", mongomq_raw.MQ_GROUP_LEASED),
    /** Waiting for a scheduled head. */
    PARKED("parked", mongomq_raw.MQ_GROUP_PARKED),
    /** Paused ({@link MongoMqQueue#pauseGroup}): no claim takes it until it is resumed. */
    PAUSED("paused", mongomq_raw.MQ_GROUP_PAUSED);

    private final String libraryName;
    private final long flag;

    GroupState(String libraryName, long flag) {
        this.libraryName = libraryName;
        this.flag = flag;
    }

    /** The library's name of the state: "ready", "leased", "parked" or "paused". */
    public String libraryName() {
        return libraryName;
    }

    /** Its {@code MQ_GROUP_*} flag. */
    long flag() {
        return flag;
    }

    /**
     * The state of a library name (a state from a command line or a URL, say).
     *
     * @throws IllegalArgumentException naming the state, for a name that is none of them
     */
    public static GroupState of(String libraryName) {
        for (GroupState s : values()) {
            if (s.libraryName.equals(libraryName)) return s;
        }
        throw new IllegalArgumentException("state \"" + libraryName + "\" is none of ready, leased, parked, paused");
    }
}
