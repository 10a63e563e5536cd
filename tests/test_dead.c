/* Dead letters: with max_attempts n, the claim that would deliver a head the (n+1)th
 * time moves it to {prefix}_dead and goes on with the group; requeue and purge; a
 * claim that dies in the middle of the move loses nothing. Also the clock-offset
 * formula (lib/queue.cpp), through the static library's test entry point. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.hpp"

static void set_max(tq *t, int n) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, n, &err), err);
}

static int64_t dead_count(tq *t) {
    mq_error err;
    int64_t n = -1;
    ASSERT_MQ(MQ_OK, mq_dead_count(t->queue, &n, &err), err);
    return n;
}

static void nack(tq *t, mq_lease *lease) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    mq_lease_destroy(lease);
}

static void head_goes_to_dead_letters_after_max_attempts(void **state) {
    tq *t = *state;
    set_max(t, 2);
    int64_t poison = tq_publish(t, "g", "poison", 3);
    int64_t next = tq_publish(t, "g", "fine", 3);
    nack(t, tq_claim(t, 30, 0)); /* delivery 1 */
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(lease), 2);
    nack(t, lease);             /* delivery 2 */
    lease = tq_claim(t, 30, 0); /* a 3rd delivery would be too many: moved, next one */
    assert_int_equal(mq_lease_seq(lease), next);
    assert_int_equal(mq_lease_attempts(lease), 1);
    mq_lease_destroy(lease);

    assert_int_equal(dead_count(t), 1);
    char filter[64];
    snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)poison);
    assert_int_equal(tq_count(t, "messages", filter), 0);
    bson_t *dead = tq_find_one(t, "dead", filter);
    assert_non_null(dead);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, dead, "group_id") && strcmp(bson_iter_utf8(&it, NULL), "g") == 0);
    assert_true(bson_iter_init_find(&it, dead, "event") && strcmp(bson_iter_utf8(&it, NULL), "poison") == 0);
    assert_true(bson_iter_init_find(&it, dead, "priority") && bson_iter_as_int64(&it) == 3);
    assert_true(bson_iter_init_find(&it, dead, "attempts") && bson_iter_as_int64(&it) == 2);
    assert_true(bson_iter_init_find(&it, dead, "dead_at") && bson_iter_as_double(&it) == t->now);
    bson_destroy(dead);
}

static void unlimited_by_default(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "x", 0);
    for (int i = 1; i <= 6; i++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        assert_int_equal(mq_lease_attempts(lease), i);
        nack(t, lease);
    }
    assert_int_equal(dead_count(t), 0);
}

/* Expired leases count as deliveries too; a group whose only event dies drains. */
static void expired_leases_count_and_the_group_drains(void **state) {
    tq *t = *state;
    set_max(t, 1);
    tq_publish(t, "g", "x", 0);
    mq_lease_destroy(tq_claim(t, 10, 0)); /* delivered once, never acked */
    tq_advance(t, 11);
    tq_expect_empty(t, 0); /* moved to the dead letters, and the empty group dropped */
    assert_int_equal(dead_count(t), 1);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
}

static void requeue_publishes_at_the_tail(void **state) {
    tq *t = *state;
    set_max(t, 1);
    static const unsigned char binary[] = {0x00, 0xff, 0x10};
    mq_error err;
    int64_t dead_seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "g", binary, sizeof binary, 2, &dead_seq, &err), err);
    nack(t, tq_claim(t, 30, 0));
    tq_expect_empty(t, 0);
    assert_int_equal(dead_count(t), 1);

    int64_t later = tq_publish(t, "g", "later", 0);
    int64_t again = 0;
    ASSERT_MQ(MQ_OK, mq_dead_requeue(t->queue, dead_seq, &again, &err), err);
    assert_true(again > later); /* a new seq, behind what the group already had */
    assert_int_equal(dead_count(t), 0);

    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), later);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), again);
    size_t len = 0;
    const void *event = mq_lease_event(lease, &len);
    assert_int_equal(len, sizeof binary);
    assert_memory_equal(event, binary, len); /* the same bytes, still binary */
    mq_lease_destroy(lease);

    ASSERT_MQ(MQ_ERR_ARG, mq_dead_requeue(t->queue, dead_seq, &again, &err), err);
    assert_non_null(strstr(err.message, "seq"));
    assert_int_equal(again, 0);
}

static void purge_removes_them_all(void **state) {
    tq *t = *state;
    set_max(t, 1);
    char group[8];
    for (int i = 0; i < 3; i++) {
        snprintf(group, sizeof group, "g%d", i);
        tq_publish(t, group, "x", 0);
    }
    for (int i = 0; i < 3; i++) nack(t, tq_claim(t, 30, 0));
    tq_expect_empty(t, 0);
    assert_int_equal(dead_count(t), 3);
    mq_error err;
    int64_t purged = 0;
    ASSERT_MQ(MQ_OK, mq_dead_purge(t->queue, &purged, &err), err);
    assert_int_equal(purged, 3);
    assert_int_equal(dead_count(t), 0);
}

/* ---- a claim that dies between the dead letter's insert and the delete ---- */

static int fail_dead_delete_once(const char *command, void *ctx) {
    int *left = ctx;
    if (strcmp(command, "claim.dead_delete") == 0 && *left > 0) {
        (*left)--;
        return -1;
    }
    return 0;
}

static void crash_during_the_move_loses_nothing(void **state) {
    tq *t = *state;
    set_max(t, 1);
    int64_t poison = tq_publish(t, "g", "poison", 0);
    int64_t next = tq_publish(t, "g", "next", 0);
    nack(t, tq_claim(t, 10, 0));
    int left = 1;
    mongomq_fault_set(fail_dead_delete_once, &left);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, "w", 10, 0, &lease, &err), err);
    mongomq_fault_set(NULL, NULL);
    char filter[64];
    snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)poison);
    /* In both collections: never in neither. */
    assert_int_equal(tq_count(t, "dead", filter), 1);
    assert_int_equal(tq_count(t, "messages", filter), 1);

    tq_advance(t, 11);          /* the dead claim's lease runs out */
    lease = tq_claim(t, 10, 0); /* repeats the move (the insert finds it there) */
    assert_int_equal(mq_lease_seq(lease), next);
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "dead", filter), 1);
    assert_int_equal(tq_count(t, "messages", filter), 0);
}

static void bad_arguments(void **state) {
    tq *t = *state;
    mq_error err;
    uint64_t c0 = mq_client_command_count(t->client);
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_max_attempts(t->queue, -1, &err), err);
    assert_non_null(strstr(err.message, "max_attempts"));
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_max_attempts(NULL, 1, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_count(t->queue, NULL, &err), err);
    assert_non_null(strstr(err.message, "count"));
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_count(NULL, NULL, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_purge(NULL, NULL, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_requeue(NULL, 1, NULL, &err), err);
    assert_int_equal(mq_client_command_count(t->client), c0);
}

/* ---- the clock ---- */

static void clock_offset_formula(void **state) {
    (void)state;
    /* Server 5 s ahead, measured over a 2 ms round trip. */
    double offset = mongomq_clock_offset(100.000, 100.002, 105001);
    assert_true(offset > 5.0004 && offset < 5.0006);
    /* 3 s behind. */
    offset = mongomq_clock_offset(100.000, 100.002, 97001);
    assert_true(offset < -2.9994 && offset > -2.9996);
    /* Within the measurement's error (1 ms + 0.5 ms): no offset. */
    assert_true(mongomq_clock_offset(100.000, 100.002, 100001) == 0);
    assert_true(mongomq_clock_offset(100.000, 100.002, 100000) == 0);
}

static void same_machine_server_has_no_offset(void **state) {
    tq *t = *state;
    /* The test server shares this machine's clock: whatever was measured is within the
     * measurement's error, so the queue runs on the wall clock as harel's peers do. */
    assert_true(mq_queue_clock_offset(t->queue) == 0);
    assert_true(mq_queue_clock_offset(NULL) == 0);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, tq_teardown)
    const struct CMUnitTest tests[] = {
        T(head_goes_to_dead_letters_after_max_attempts),
        T(unlimited_by_default),
        T(expired_leases_count_and_the_group_drains),
        T(requeue_publishes_at_the_tail),
        T(purge_removes_them_all),
        T(crash_during_the_move_loses_nothing),
        T(bad_arguments),
        cmocka_unit_test(clock_offset_formula),
        cmocka_unit_test_setup_teardown(same_machine_server_has_no_offset, tq_setup, tq_teardown),
    };
#undef T
    return cmocka_run_group_tests_name("dead", tests, NULL, NULL);
}
