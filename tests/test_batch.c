/* Batches: mq_publish_batch (3 commands for any size, seqs in add order, first publish
 * of a group sets its priority) and mq_claim_batch (one lease on up to n consecutive
 * events of one group: ack removes them all, nack returns them all), and the round
 * trips a batched publish-claim-ack cycle costs. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mq_batch *new_batch(void) {
    mq_batch *batch = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    return batch;
}

static void add(mq_batch *batch, const char *group, const char *text, int priority) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, group, text, strlen(text), priority, &err), err);
}

static void publish_batch_keeps_add_order(void **state) {
    tq *t = *state;
    tq_publish(t, "a", "before", 0); /* seq 1 */
    mq_batch *batch = new_batch();
    char text[16];
    for (int i = 0; i < 12; i++) {
        snprintf(text, sizeof text, "e%d", i);
        add(batch, i % 2 ? "b" : "a", text, i % 2 ? 3 : 1);
    }
    assert_int_equal(mq_batch_count(batch), 12);
    mq_error err;
    int64_t first = 0;
    uint64_t c0 = mq_client_command_count(t->client);
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, &first, &err), err);
    assert_int_equal(mq_client_command_count(t->client) - c0, 3); /* seq, insertMany, one bulk of upserts */
    assert_int_equal(first, 2);
    int64_t next = tq_publish(t, "a", "after", 0);
    assert_int_equal(next, first + 12); /* the counter moved by the batch's size */

    /* "b" is new: the batch's first event for it set priority 3; "a" kept its 0. */
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"b\", \"priority\": 3}"), 1);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"a\", \"priority\": 0}"), 1);

    /* Group "a" in order: before, e0, e2, ..., e10, after. */
    char buf[32];
    const char *want_a[] = {"before", "e0", "e2", "e4", "e6", "e8", "e10", "after"};
    for (size_t i = 0; i < 8; i++) {
        mq_lease *lease = NULL;
        ASSERT_MQ(MQ_OK, mq_claim(t->queue, "w", 30, 0, &lease, &err), err);
        if (strcmp(mq_lease_group(lease), "a") != 0) { /* "b" is served too: ack it aside */
            tq_ack(t, lease);
            mq_lease_destroy(lease);
            i--;
            continue;
        }
        assert_string_equal(tq_event_text(lease, buf, sizeof buf), want_a[i]);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    mq_batch_destroy(batch);
}

/* A batch can be published twice: new seqs, same events. */
static void batch_can_be_published_again(void **state) {
    tq *t = *state;
    mq_batch *batch = new_batch();
    add(batch, "g", "x", 0);
    add(batch, "g", "y", 0);
    mq_error err;
    int64_t first = 0, second = 0;
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, &first, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, &second, &err), err);
    assert_int_equal(second, first + 2);
    assert_int_equal(tq_count(t, "messages", "{}"), 4);
    mq_batch_destroy(batch);
}

static void claim_batch_takes_consecutive_events(void **state) {
    tq *t = *state;
    int64_t seqs[7];
    char text[16];
    for (int i = 0; i < 7; i++) {
        snprintf(text, sizeof text, "e%d", i);
        seqs[i] = tq_publish(t, "g", text, 0);
    }
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 5, &lease, &err), err);
    assert_string_equal(mq_lease_group(lease), "g");
    assert_int_equal(mq_lease_count(lease), 5);
    char buf[16];
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(mq_lease_seq_at(lease, i), seqs[i]);
        size_t len = 0;
        const void *event = mq_lease_event_at(lease, i, &len);
        snprintf(text, sizeof text, "e%zu", i);
        assert_int_equal(len, strlen(text));
        assert_memory_equal(event, text, len);
    }
    assert_int_equal(mq_lease_seq(lease), seqs[0]);
    assert_string_equal(tq_event_text(lease, buf, sizeof buf), "e0");
    assert_int_equal(mq_lease_seq_at(lease, 5), 0); /* out of range */
    assert_null(mq_lease_event_at(lease, 5, NULL));

    tq_expect_empty(t, 0); /* the group is held as a whole */
    uint64_t c0 = mq_client_command_count(t->client);
    tq_ack(t, lease);
    assert_int_equal(mq_client_command_count(t->client) - c0, 2); /* deleteMany, release */
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "messages", "{\"group_id\": \"g\"}"), 2);

    /* The rest: fewer than asked, and the ack drains the group. */
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 5, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 2);
    assert_int_equal(mq_lease_seq_at(lease, 0), seqs[5]);
    assert_int_equal(mq_lease_seq_at(lease, 1), seqs[6]);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"g\"}"), 0);
}

static void nack_returns_the_whole_batch(void **state) {
    tq *t = *state;
    int64_t first = tq_publish(t, "g", "a", 0);
    tq_publish(t, "g", "b", 0);
    tq_publish(t, "g", "c", 0);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 3, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 3);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 3, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 3);
    assert_int_equal(mq_lease_seq(lease), first);
    assert_int_equal(mq_lease_attempts(lease), 2);
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "messages", "{}"), 3);
}

/* A stale batch lease is fenced like a single one. */
static void stale_batch_lease_is_fenced(void **state) {
    tq *t = *state;
    for (int i = 0; i < 4; i++) tq_publish(t, "g", "x", 0);
    mq_error err;
    mq_lease *stale = NULL, *owner = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w1", 10, 0, 2, &stale, &err), err);
    tq_advance(t, 11);
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w2", 10, 0, 2, &owner, &err), err);
    assert_int_equal(mq_lease_seq(owner), mq_lease_seq(stale));
    bson_t *before = tq_find_one(t, "locks", "{\"_id\": \"g\"}");
    ASSERT_MQ(MQ_LEASE_LOST, mq_nack(t->queue, stale, 0, &err), err);
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, stale, &err), err);
    bson_t *after = tq_find_one(t, "locks", "{\"_id\": \"g\"}");
    assert_true(bson_equal(before, after));
    bson_destroy(before);
    bson_destroy(after);
    tq_ack(t, owner);
    mq_lease_destroy(stale);
    mq_lease_destroy(owner);
    assert_int_equal(tq_count(t, "messages", "{}"), 2);
}

/* With batches of 10 the whole publish-claim-ack cycle costs at most 1 command per
 * event: 3 to publish 10, 2 to claim them, 2 (3 on the last) to ack them. */
static void batches_of_ten_cost_under_one_command_per_event(void **state) {
    tq *t = *state;
    enum { GROUPS = 4, PER_GROUP = 30, BATCH = 10 };
    mq_error err;
    char group[16], text[32];
    uint64_t c0 = mq_client_command_count(t->client);
    for (int round = 0; round < GROUPS * PER_GROUP / BATCH; round++) {
        mq_batch *batch = new_batch();
        for (int i = 0; i < BATCH; i++) {
            snprintf(group, sizeof group, "g%d", round % GROUPS);
            snprintf(text, sizeof text, "%d:%d", round, i);
            add(batch, group, text, 0);
        }
        ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, NULL, &err), err);
        mq_batch_destroy(batch);
    }
    int events = 0;
    for (;;) {
        mq_lease *lease = NULL;
        mq_status st = mq_claim_batch(t->queue, "w", 30, 0, BATCH, &lease, &err);
        if (st == MQ_EMPTY) break;
        ASSERT_MQ(MQ_OK, st, err);
        events += (int)mq_lease_count(lease);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    uint64_t commands = mq_client_command_count(t->client) - c0;
    assert_int_equal(events, GROUPS * PER_GROUP);
    print_message("batches of %d: %llu commands for %d events (%.2f per event)\n", BATCH, (unsigned long long)commands,
                  events, (double)commands / events);
    assert_true(commands <= (uint64_t)events);
}

static void batch_wait_returns_a_batch(void **state) {
    tq *t = *state;
    for (int i = 0; i < 3; i++) tq_publish(t, "g", "x", 0);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_batch_wait(t->queue, "w", 30, 0, 10, 1.0, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 3);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    /* nothing due: the (fake-clock) queue waits out the timeout, then MQ_EMPTY */
    ASSERT_MQ(MQ_EMPTY, mq_claim_batch_wait(t->queue, "w", 30, 0, 10, 0.05, &lease, &err), err);
    assert_null(lease);
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_batch_wait(t->queue, "w", 30, 0, 0, 0.05, &lease, &err), err);
    assert_non_null(strstr(err.message, "max_events"));
}

static void bad_batch_arguments(void **state) {
    tq *t = *state;
    mq_error err;
    mq_batch *batch = new_batch();
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_add(batch, "", "x", 1, 0, &err), err);
    assert_non_null(strstr(err.message, "group_id"));
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_add(batch, "g", "x", 1, 5, &err), err);
    assert_non_null(strstr(err.message, "priority"));
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_add(batch, "g", NULL, 3, 0, &err), err);
    assert_non_null(strstr(err.message, "event"));
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_add(NULL, "g", "x", 1, 0, &err), err);
    assert_non_null(strstr(err.message, "batch"));
    assert_int_equal(mq_batch_count(batch), 0); /* refused adds add nothing */

    uint64_t c0 = mq_client_command_count(t->client);
    int64_t first = 99;
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_batch(t->queue, batch, &first, &err), err);
    assert_non_null(strstr(err.message, "empty"));
    assert_int_equal(first, 0);
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_batch(t->queue, NULL, NULL, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_batch(NULL, batch, NULL, &err), err);
    mq_lease *lease = (mq_lease *)&err;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_batch(t->queue, "w", 30, 0, 0, &lease, &err), err);
    assert_non_null(strstr(err.message, "max_events"));
    assert_null(lease);
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_batch(t->queue, "w", 30, 0, MQ_BATCH_MAX + 1, &lease, &err), err);
    assert_int_equal(mq_client_command_count(t->client), c0); /* nothing was sent */
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_new(NULL, &err), err);
    mq_batch_destroy(batch);
    mq_batch_destroy(NULL);
    assert_int_equal(mq_batch_count(NULL), 0);
    assert_int_equal(mq_lease_count(NULL), 0);
}

#define CONSECUTIVE                                                                           \
  "a batch's seqs are consecutive across groups with one partition only (test_partitions.c: " \
  "seqs_follow_their_partition)"

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, tq_teardown)
    const struct CMUnitTest tests[] = {
        T(publish_batch_keeps_add_order),        T(batch_can_be_published_again),
        T(claim_batch_takes_consecutive_events), T(nack_returns_the_whole_batch),
        T(stale_batch_lease_is_fenced),          T(batches_of_ten_cost_under_one_command_per_event),
        T(batch_wait_returns_a_batch),           T(bad_batch_arguments),
    };
#undef T
    static const char *const p1_only[] = {
        "publish_batch_keeps_add_order", CONSECUTIVE, "batch_can_be_published_again", CONSECUTIVE, NULL,
    };
    return TQ_RUN_TESTS("batch", tests, p1_only);
}
