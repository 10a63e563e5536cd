package org.mongomq;

import org.mongomq.internal.mongomq_raw;

/**
 * The order of a page of groups ({@link GroupsOptions#sort(GroupsSort)}).
 *
 * @since 0.5.0
 */
public enum GroupsSort {
    /** By group id, ascending (byte order of the UTF-8). The default. */
    ID(mongomq_raw.MQ_GROUPS_SORT_ID),
    /**
     * By when each group is due ({@code available_at}), soonest first: the order claims
     * take them (paused groups come in their place too).
     */
    DUE(mongomq_raw.MQ_GROUPS_SORT_DUE);

    private final int code;

    GroupsSort(int code) {
        this.code = code;
    }

    /** Its {@code MQ_GROUPS_SORT_*} value. */
    int code() {
        return code;
    }
}
