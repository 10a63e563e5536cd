/* The queue's behaviour, one thread at a time: harel's cases (FIFO, exclusivity,
 * round-robin, priority floor, ack/nack/extend, fencing, lease expiry), the document
 * shapes harel reads and writes, payload round-trips, and the round trips each
 * operation costs. Time is the injected clock wherever expiry matters. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- FIFO and exclusivity ---- */

static void fifo_within_group(void **state) {
    tq *t = *state;
    int64_t seqs[5];
    char text[32], buf[64];
    for (int i = 0; i < 5; i++) {
        snprintf(text, sizeof text, "e%d", i);
        seqs[i] = tq_publish(t, "g", text, 0);
        if (i > 0) assert_true(seqs[i] > seqs[i - 1]);
    }
    for (int i = 0; i < 5; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        snprintf(text, sizeof text, "e%d", i);
        assert_int_equal(mq_lease_seq(lease), seqs[i]);
        assert_string_equal(tq_event_text(lease, buf, sizeof buf), text);
        assert_string_equal(mq_lease_group(lease), "g");
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    tq_expect_empty(t, 0);
}

static void one_in_flight_per_group(void **state) {
    tq *t = *state;
    int64_t a1 = tq_publish(t, "a", "a1", 0);
    int64_t a2 = tq_publish(t, "a", "a2", 0);
    int64_t b1 = tq_publish(t, "b", "b1", 0);
    /* Both groups are new (available_at 0): either may come first. */
    mq_lease *x = tq_claim(t, 30, 0);
    mq_lease *y = tq_claim(t, 30, 0); /* the other group proceeds while one is held */
    assert_string_not_equal(mq_lease_group(x), mq_lease_group(y));
    mq_lease *on_a = strcmp(mq_lease_group(x), "a") == 0 ? x : y;
    mq_lease *on_b = on_a == x ? y : x;
    assert_int_equal(mq_lease_seq(on_a), a1);
    assert_int_equal(mq_lease_seq(on_b), b1);
    tq_expect_empty(t, 0); /* a2 waits behind a1 */
    tq_ack(t, on_a);
    mq_lease *third = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(third), a2);
    tq_ack(t, on_b);
    tq_ack(t, third);
    tq_expect_empty(t, 0);
    mq_lease_destroy(x);
    mq_lease_destroy(y);
    mq_lease_destroy(third);
}

static void every_ready_group_gets_claimed(void **state) {
    tq *t = *state;
    enum { GROUPS = 25 };
    char group[16];
    int seen[GROUPS] = {0};
    for (int i = 0; i < GROUPS; i++) {
        snprintf(group, sizeof group, "g%02d", i);
        tq_publish(t, group, "x", 0);
        tq_publish(t, group, "y", 0);
    }
    mq_lease *leases[GROUPS];
    for (int i = 0; i < GROUPS; i++) {
        leases[i] = tq_claim(t, 30, 0);
        int g = -1;
        assert_int_equal(sscanf(mq_lease_group(leases[i]), "g%d", &g), 1);
        assert_in_range(g, 0, GROUPS - 1);
        seen[g]++;
    }
    for (int i = 0; i < GROUPS; i++) assert_int_equal(seen[i], 1);
    tq_expect_empty(t, 0);
    for (int i = 0; i < GROUPS; i++) mq_lease_destroy(leases[i]);
}

/* A held lease blocks every other claimer until it expires (injected clock). */
static void held_lease_blocks_others(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e1", 0);
    mq_lease *lease = tq_claim(t, 60, 0);
    tq_expect_empty(t, 0);
    tq_advance(t, 59.9);
    tq_expect_empty(t, 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

/* ---- round-robin and priorities ---- */

/* The line is by time waited (docs/design.md, "Round-robin and fairness"): a group
 * released by an ack goes behind every group already waiting, including a new group
 * published before the release; a new group published after it goes behind it (harel
 * put every new group first, at 0, so a stream of new groups could starve old ones). */
static void round_robin_by_time_waited(void **state) {
    tq *t = *state;
    tq_publish(t, "a", "a1", 0);
    tq_publish(t, "a", "a2", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease), "a");
    tq_advance(t, 1);
    tq_publish(t, "b", "b1", 0); /* new group, waiting since now */
    tq_advance(t, 1);
    tq_ack(t, lease); /* "a" goes to the back: available_at = now, after b's */
    mq_lease_destroy(lease);
    tq_advance(t, 1);
    tq_publish(t, "c", "c1", 0); /* new group after a's release: behind a */
    const char *order[] = {"b", "a", "c"};
    for (int i = 0; i < 3; i++) {
        lease = tq_claim(t, 30, 0);
        assert_string_equal(mq_lease_group(lease), order[i]);
        mq_lease_destroy(lease);
    }
}

/* Fairness under a steady stream of new groups (one per order, per request): three old
 * groups with a backlog and, every second, one new group of one event, one claim and
 * its ack. New groups arrive as fast as claims come, so the line grows and every
 * group waits longer each round, but in turn: the old groups' 15 events are all
 * served within 60 claims. With new groups first in line (harel's 0.0) each claim
 * took the newest group and the old groups were never served at all. */
static void new_groups_do_not_starve_old_ones(void **state) {
    tq *t = *state;
    const char *old[] = {"old-a", "old-b", "old-c"};
    for (int e = 0; e < 5; e++)
        for (int g = 0; g < 3; g++) tq_publish(t, old[g], "o", 0);
    int last_seen[3] = {0, 0, 0};
    int left[3] = {5, 5, 5};
    int worst_gap = 0;
    for (int step = 1; step <= 60 && (left[0] + left[1] + left[2]) > 0; step++) {
        tq_advance(t, 1);
        char group[32];
        snprintf(group, sizeof group, "new-%d", step);
        tq_publish(t, group, "n", 0);
        mq_lease *lease = tq_claim(t, 30, 0);
        for (int g = 0; g < 3; g++) {
            if (strcmp(mq_lease_group(lease), old[g]) != 0) continue;
            if (step - last_seen[g] > worst_gap) worst_gap = step - last_seen[g];
            last_seen[g] = step;
            left[g]--;
        }
        tq_advance(t, 0.5);
        tq_ack(t, lease); /* released behind every group that waited since before now */
        mq_lease_destroy(lease);
    }
    print_message("[ fairness ] old groups' events left: %d %d %d; longest wait between their claims: %d claims\n",
                  left[0], left[1], left[2], worst_gap);
    assert_int_equal(left[0] + left[1] + left[2], 0);
}

/* mq_unclaim: a lease no handler ran goes back as the claim found it (its place in
 * line, its attempts); fenced by its token like ack; bad arguments change nothing. */
static void unclaim_gives_back_without_a_delivery(void **state) {
    tq *t = *state;
    tq_publish(t, "a", "a1", 0);
    tq_advance(t, 1);
    tq_publish(t, "b", "b1", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease), "a");
    tq_advance(t, 1);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_unclaim(t->queue, lease, &err), err);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease), "a"); /* still ahead of b */
    assert_int_equal(mq_lease_attempts(lease), 1);   /* not 2: no delivery counted */

    /* stale: the lease expired and another claim took the group (b held meanwhile) */
    mq_lease *held = tq_claim(t, 100, 0);
    assert_string_equal(mq_lease_group(held), "b");
    tq_advance(t, 31);
    mq_lease *newer = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(newer), "a");
    assert_int_equal(mq_lease_attempts(newer), 2);
    ASSERT_MQ(MQ_LEASE_LOST, mq_unclaim(t->queue, lease, &err), err);
    assert_non_null(strstr(err.message, "mq_unclaim"));
    mq_lease_destroy(lease);
    tq_ack(t, newer); /* the new holder's lease is untouched */
    tq_ack(t, held);
    mq_lease_destroy(held);

    ASSERT_MQ(MQ_ERR_ARG, mq_unclaim(t->queue, NULL, &err), err);
    assert_non_null(strstr(err.message, "lease is NULL"));
    ASSERT_MQ(MQ_ERR_ARG, mq_unclaim(NULL, newer, &err), err);
    mq_lease_destroy(newer);
}

static void round_robin_longest_waiting_first(void **state) {
    tq *t = *state;
    const char *groups[] = {"a", "b", "c"};
    char order[3][4];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) tq_publish(t, groups[i], "x", 0);
    /* Serve each group once (new groups tie at available_at 0, so in any order), acking
     * at t+1, t+2, t+3: from then on they must come round in that order. */
    for (int i = 0; i < 3; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        snprintf(order[i], sizeof order[i], "%s", mq_lease_group(lease));
        for (int k = 0; k < i; k++) assert_string_not_equal(order[k], order[i]);
        tq_advance(t, 1);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            mq_lease *lease = tq_claim(t, 30, 0);
            assert_string_equal(mq_lease_group(lease), order[i]);
            tq_advance(t, 1);
            tq_ack(t, lease);
            mq_lease_destroy(lease);
        }
    }
    tq_expect_empty(t, 0);
}

static void priority_floor(void **state) {
    tq *t = *state;
    tq_publish(t, "low", "l", 1);
    tq_publish(t, "high", "h", 3);
    tq_publish(t, "top", "t", 4);
    mq_lease *lease = tq_claim(t, 30, 3);
    mq_lease *lease2 = tq_claim(t, 30, 3);
    /* both are new groups (a tie), so either order */
    assert_true((strcmp(mq_lease_group(lease), "high") == 0 && strcmp(mq_lease_group(lease2), "top") == 0) ||
                (strcmp(mq_lease_group(lease), "top") == 0 && strcmp(mq_lease_group(lease2), "high") == 0));
    tq_expect_empty(t, 3);
    tq_expect_empty(t, 2);
    mq_lease *lease3 = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease3), "low");
    mq_lease_destroy(lease);
    mq_lease_destroy(lease2);
    mq_lease_destroy(lease3);
}

static void priority_fixed_by_first_publish_and_reset_on_drain(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "first", 1);
    tq_publish(t, "g", "second", 4); /* does not raise the group */
    tq_expect_empty(t, 4);
    for (int i = 0; i < 2; i++) {
        mq_lease *lease = tq_claim(t, 30, 1);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    assert_int_equal(tq_count(t, "locks", "{}"), 0); /* drained: the lock is gone */
    tq_publish(t, "g", "third", 4);                  /* a new life at a new priority */
    mq_lease *lease = tq_claim(t, 30, 4);
    assert_string_equal(mq_lease_group(lease), "g");
    mq_lease_destroy(lease);
}

/* ---- ack, nack, extend ---- */

static void ack_removes(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e", 0);
    char filter[64];
    snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)seq);
    assert_int_equal(tq_count(t, "messages", filter), 1);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(tq_count(t, "messages", filter), 1); /* claim does not remove */
    tq_ack(t, lease);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    tq_expect_empty(t, 0);
    mq_lease_destroy(lease);
}

static void nack_now_redelivers(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e", 0);
    tq_publish(t, "g", "next", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(lease), 1);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 2);
    tq_ack(t, lease); /* ack resets attempts with the head */
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(lease), 1);
    mq_lease_destroy(lease);
}

static void nack_with_delay_parks(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 100, &err), err);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
    tq_advance(t, 99);
    tq_expect_empty(t, 0);
    tq_advance(t, 2);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 2);
    mq_lease_destroy(lease);
}

static void extend_keeps_the_lease(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e", 0);
    mq_lease *lease = tq_claim(t, 10, 0);
    tq_advance(t, 8);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, lease, 10, &err), err); /* now until t+18 */
    tq_advance(t, 5);
    tq_expect_empty(t, 0);
    tq_advance(t, 5.5);
    mq_lease *other = tq_claim(t, 10, 0);
    assert_int_equal(mq_lease_seq(other), mq_lease_seq(lease));
    mq_lease_destroy(other);
    mq_lease_destroy(lease);
}

/* ---- leases that expire: crash recovery and fencing ---- */

static void expired_lease_is_claimable_with_attempts_2(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e", 0);
    mq_lease *lease = tq_claim(t, 5, 0);
    tq_advance(t, 5.1);
    mq_lease *again = tq_claim(t, 5, 0);
    assert_int_equal(mq_lease_seq(again), seq);
    assert_int_equal(mq_lease_attempts(again), 2);
    assert_string_not_equal(mq_lease_token(again), mq_lease_token(lease));
    mq_lease_destroy(lease);
    mq_lease_destroy(again);
}

static void stale_owner_is_fenced(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e1", 0);
    tq_publish(t, "g", "e2", 0);
    mq_lease *stale = tq_claim(t, 10, 0);
    tq_advance(t, 11);
    mq_lease *owner = tq_claim(t, 10, 0);
    assert_int_equal(mq_lease_seq(owner), seq);

    char *before = tq_snapshot(t);
    mq_error err;
    ASSERT_MQ(MQ_LEASE_LOST, mq_nack(t->queue, stale, 0, &err), err);
    assert_int_equal(err.status, MQ_LEASE_LOST);
    assert_non_null(strstr(err.message, "lost"));
    ASSERT_MQ(MQ_LEASE_LOST, mq_nack(t->queue, stale, 50, &err), err);
    ASSERT_MQ(MQ_LEASE_LOST, mq_extend(t->queue, stale, 500, &err), err);
    char *after = tq_snapshot(t);
    assert_string_equal(before, after); /* nothing changed at all */
    free(after);

    /* A stale ack may delete the event it processed (at-least-once), but the lock
     * stays the new owner's. */
    bson_t *lock_before = tq_find_one(t, "locks", "{\"_id\": \"g\"}");
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, stale, &err), err);
    bson_t *lock_after = tq_find_one(t, "locks", "{\"_id\": \"g\"}");
    assert_non_null(lock_after);
    assert_true(bson_equal(lock_before, lock_after));
    bson_destroy(lock_before);
    bson_destroy(lock_after);

    tq_ack(t, owner); /* the owner's ack still works */
    mq_lease *next = tq_claim(t, 10, 0);
    assert_string_equal(mq_lease_group(next), "g");
    assert_true(mq_lease_seq(next) > seq);
    free(before);
    mq_lease_destroy(stale);
    mq_lease_destroy(owner);
    mq_lease_destroy(next);
}

static void abandoned_leases_are_redelivered(void **state) {
    tq *t = *state;
    enum { GROUPS = 6 };
    char group[16];
    for (int i = 0; i < GROUPS; i++) {
        snprintf(group, sizeof group, "g%d", i);
        tq_publish(t, group, "work", 0);
    }
    for (int i = 0; i < GROUPS; i++) mq_lease_destroy(tq_claim(t, 30, 0)); /* a worker dies */
    tq_expect_empty(t, 0);
    tq_advance(t, 31);
    for (int i = 0; i < GROUPS; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        assert_int_equal(mq_lease_attempts(lease), 2);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
}

/* An event published while its group's last event is leased is claimable right
 * after that ack (the ack's drain path re-checks for it), and the group keeps the
 * priority its first publish gave it (the second publish joined a live group). */
static void publish_while_last_event_leased(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e1", 3);
    mq_lease *lease = tq_claim(t, 30, 0);
    int64_t seq2 = tq_publish(t, "g", "e2", 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 3);
    assert_int_equal(mq_lease_seq(lease), seq2);
    mq_lease_destroy(lease);
}

/* ---- payloads and documents ---- */

static void payloads_round_trip(void **state) {
    tq *t = *state;
    static const char nul_text[] = "a\0b"; /* UTF-8 but with a NUL: binary */
    static const unsigned char bytes[] = {0xff, 0x00, 0xfe, 0x80, 0x41};
    static const char utf8[] = "h\xc3\xa9llo \xe2\x9c\x93 {\"k\": [1,2]}";
    struct {
        const void *data;
        size_t len;
        int binary;
    } cases[] = {
        {nul_text, 3, 1},
        {bytes, sizeof bytes, 1},
        {utf8, sizeof utf8 - 1, 0},
        {"", 0, 0},
    };
    mq_error err;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t seq = 0;
        ASSERT_MQ(MQ_OK, mq_publish(t->queue, "p", cases[i].data, cases[i].len, 0, &seq, &err), err);
        char filter[64];
        snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)seq);
        bson_t *doc = tq_find_one(t, "messages", filter);
        assert_non_null(doc);
        bson_iter_t it;
        assert_true(bson_iter_init_find(&it, doc, "event"));
        assert_int_equal(bson_iter_type(&it), cases[i].binary ? BSON_TYPE_BINARY : BSON_TYPE_UTF8);
        bson_destroy(doc);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        size_t len = 99;
        const void *event = mq_lease_event(lease, &len);
        assert_int_equal(len, cases[i].len);
        assert_non_null(event);
        assert_memory_equal(event, cases[i].data, len);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
}

/* The documents are harel's: message {_id: seq, group_id, event, priority}, lock
 * {_id: group, available_at, token, priority, attempts}, counter {_id: "seq", n}. */
static void documents_are_harels(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "orders", "{\"id\": 7}", 2);
    bson_t *msg = tq_find_one(t, "messages", "{}");
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, msg, "_id") && bson_iter_as_int64(&it) == seq);
    assert_true(bson_iter_init_find(&it, msg, "group_id") && BSON_ITER_HOLDS_UTF8(&it));
    assert_string_equal(bson_iter_utf8(&it, NULL), "orders");
    assert_true(bson_iter_init_find(&it, msg, "event") && BSON_ITER_HOLDS_UTF8(&it));
    assert_string_equal(bson_iter_utf8(&it, NULL), "{\"id\": 7}");
    assert_true(bson_iter_init_find(&it, msg, "priority") && bson_iter_as_int64(&it) == 2);
    assert_true(bson_iter_init_find(&it, msg, "published_at") && BSON_ITER_HOLDS_DOUBLE(&it));
    const double published_at = bson_iter_double(&it);
    assert_true(published_at > 0);
    bson_destroy(msg);

    bson_t *lock = tq_find_one(t, "locks", "{\"_id\": \"orders\"}");
    assert_non_null(lock);
    /* harel's fields; available_at is the publish's time (harel's publish writes 0.0:
     * docs/design.md, "Round-robin and fairness") */
    assert_true(bson_iter_init_find(&it, lock, "available_at") && BSON_ITER_HOLDS_DOUBLE(&it));
    assert_true(bson_iter_double(&it) == published_at);
    assert_true(bson_iter_init_find(&it, lock, "token") && BSON_ITER_HOLDS_NULL(&it));
    assert_true(bson_iter_init_find(&it, lock, "priority") && bson_iter_as_int64(&it) == 2);
    bson_destroy(lock);

    bson_t *counter = tq_find_one(t, "counters", "{\"_id\": \"seq\"}");
    assert_non_null(counter);
    assert_true(bson_iter_init_find(&it, counter, "n") && bson_iter_as_int64(&it) == seq);
    bson_destroy(counter);

    mq_lease *lease = tq_claim(t, 30, 0);
    lock = tq_find_one(t, "locks", "{\"_id\": \"orders\"}");
    assert_true(bson_iter_init_find(&it, lock, "token") && BSON_ITER_HOLDS_UTF8(&it));
    assert_string_equal(bson_iter_utf8(&it, NULL), mq_lease_token(lease));
    assert_true(bson_iter_init_find(&it, lock, "available_at") && bson_iter_double(&it) == t->now + 30);
    assert_true(bson_iter_init_find(&it, lock, "attempts") && bson_iter_as_int64(&it) == 1);
    assert_int_equal(strncmp(mq_lease_token(lease), "tester:", 7), 0); /* "{worker_id}:{uuid}" */
    bson_destroy(lock);
    mq_lease_destroy(lease);
}

/* What a harel publisher writes (int32 seqs from Python ints, a lock without
 * attempts, an int32 counter) we claim, ack and continue. */
static void consumes_what_harel_wrote(void **state) {
    tq *t = *state;
    tq_insert_json(t, "counters", "{\"_id\": \"seq\", \"n\": {\"$numberInt\": \"2\"}}");
    tq_insert_json(t, "messages",
                   "{\"_id\": {\"$numberInt\": \"1\"}, \"group_id\": \"h\", \"event\": \"{\\\"a\\\": 1}\"}");
    tq_insert_json(t, "messages",
                   "{\"_id\": {\"$numberInt\": \"2\"}, \"group_id\": \"h\", \"event\": \"{\\\"a\\\": 2}\"}");
    tq_insert_json(t, "locks",
                   "{\"_id\": \"h\", \"available_at\": 0.0, \"token\": null, \"priority\": {\"$numberInt\": \"0\"}}");
    int64_t ours = tq_publish(t, "h", "{\"a\": 3}", 0); /* continues harel's counter */
    assert_int_equal(ours, 3);
    char buf[64];
    for (int i = 1; i <= 3; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        assert_int_equal(mq_lease_seq(lease), i);
        assert_int_equal(mq_lease_attempts(lease), 1);
        char want[16];
        snprintf(want, sizeof want, "{\"a\": %d}", i);
        assert_string_equal(tq_event_text(lease, buf, sizeof buf), want);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

/* A lock left with no messages (harel's leftovers, or a lost ack) is dropped by the
 * claim that meets it, which goes on to the next group. */
static void claim_skips_a_stale_empty_group(void **state) {
    tq *t = *state;
    tq_insert_json(t, "locks", "{\"_id\": \"ghost\", \"available_at\": 0.0, \"token\": null, \"priority\": 0}");
    int64_t seq = tq_publish(t, "real", "e", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"ghost\"}"), 0);
    mq_lease_destroy(lease);
}

/* ---- round trips: what docs/design.md promises ---- */

static void commands_per_operation(void **state) {
    tq *t = *state;
    mq_error err;
    uint64_t c0 = mq_client_command_count(t->client);
    tq_publish(t, "g", "e1", 0);
    uint64_t c1 = mq_client_command_count(t->client);
    assert_int_equal(c1 - c0, 3); /* seq, insert, lock */
    tq_publish(t, "g", "e2", 0);
    uint64_t c2 = mq_client_command_count(t->client);

    mq_lease *lease = tq_claim(t, 30, 0);
    uint64_t c3 = mq_client_command_count(t->client);
    assert_int_equal(c3 - c2, 2); /* lease, head */
    tq_ack(t, lease);
    uint64_t c4 = mq_client_command_count(t->client);
    assert_int_equal(c4 - c3, 2); /* delete, release: an event with more behind it costs 3 + 2 + 2 = 7 */
    mq_lease_destroy(lease);

    lease = tq_claim(t, 30, 0);
    uint64_t c5 = mq_client_command_count(t->client);
    tq_ack(t, lease);
    uint64_t c6 = mq_client_command_count(t->client);
    assert_int_equal(c6 - c5, 3); /* delete, drop, recheck: the group drained */
    mq_lease_destroy(lease);

    lease = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim(t->queue, NULL, 30, 0, &lease, &err), err);
    assert_int_equal(mq_client_command_count(t->client) - c6, 1); /* an empty claim: one command */

    tq_publish(t, "g", "e3", 0);
    lease = tq_claim(t, 30, 0);
    uint64_t c7 = mq_client_command_count(t->client);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 5, &err), err);
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, lease, 5, &err), err);
    assert_int_equal(mq_client_command_count(t->client) - c7, 2); /* one each */
    mq_lease_destroy(lease);
}

#define ONE_LINE                                                                                       \
  "the order across groups of one line; with partitions a claim starts at the next partition in turn " \
  "(test_partitions.c: fifo_and_rotation)"

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, tq_teardown)
    const struct CMUnitTest tests[] = {
        T(fifo_within_group),
        T(one_in_flight_per_group),
        T(every_ready_group_gets_claimed),
        T(held_lease_blocks_others),
        T(round_robin_by_time_waited),
        T(round_robin_longest_waiting_first),
        T(new_groups_do_not_starve_old_ones),
        T(unclaim_gives_back_without_a_delivery),
        T(priority_floor),
        T(priority_fixed_by_first_publish_and_reset_on_drain),
        T(ack_removes),
        T(nack_now_redelivers),
        T(nack_with_delay_parks),
        T(extend_keeps_the_lease),
        T(expired_lease_is_claimable_with_attempts_2),
        T(stale_owner_is_fenced),
        T(abandoned_leases_are_redelivered),
        T(publish_while_last_event_leased),
        T(payloads_round_trip),
        T(documents_are_harels),
        T(consumes_what_harel_wrote),
        T(claim_skips_a_stale_empty_group),
        T(commands_per_operation),
    };
#undef T
    static const char *const p1_only[] = {
        "round_robin_by_time_waited",
        ONE_LINE,
        "round_robin_longest_waiting_first",
        ONE_LINE,
        "new_groups_do_not_starve_old_ones",
        ONE_LINE,
        "unclaim_gives_back_without_a_delivery",
        ONE_LINE,
        "documents_are_harels",
        "harel's documents are one partition's",
        "consumes_what_harel_wrote",
        "harel's documents are one partition's",
        "claim_skips_a_stale_empty_group",
        "a lock made by hand without a partition",
        "commands_per_operation",
        "one partition's counts (test_partitions.c counts an empty claim's)",
        NULL,
    };
    return TQ_RUN_TESTS("queue", tests, p1_only);
}
