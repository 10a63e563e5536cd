/* Scheduled events (mq_publish_at): a group a scheduled event creates starts parked;
 * a scheduled head holds its group, FIFO stays strict, and other groups go on. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t publish_at(tq *t, const char *group, const char *text, double not_before) {
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish_at(t->queue, group, text, strlen(text), 0, not_before, &seq, &err), err);
    return seq;
}

static double lock_available_at(tq *t, const char *group) {
    char filter[64];
    snprintf(filter, sizeof filter, "{\"_id\": \"%s\"}", group);
    bson_t *lock = tq_find_one(t, "locks", filter);
    assert_non_null(lock);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, lock, "available_at"));
    double v = bson_iter_as_double(&it);
    bson_destroy(lock);
    return v;
}

static void new_group_starts_parked(void **state) {
    tq *t = *state;
    assert_true(mq_queue_now(t->queue) == t->now); /* what not_before is compared with */
    assert_true(mq_queue_now(NULL) == 0);
    double at = t->now + 100;
    int64_t seq = publish_at(t, "g", "later", at);
    assert_true(lock_available_at(t, "g") == at);
    tq_expect_empty(t, 0);
    tq_advance(t, 99.5);
    tq_expect_empty(t, 0);
    tq_advance(t, 0.5);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 1);
    mq_lease_destroy(lease);
}

static void scheduled_head_holds_its_group(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e1", 0);
    int64_t e2 = publish_at(t, "g", "e2", t->now + 50);
    int64_t e3 = tq_publish(t, "g", "e3", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    tq_ack(t, lease); /* e2 is next: the group goes back in line */
    mq_lease_destroy(lease);

    uint64_t c0 = mq_client_command_count(t->client);
    tq_expect_empty(t, 0); /* the claim met e2, parked the group and found nothing else */
    print_message("a claim that parks a group: %llu commands\n",
                  (unsigned long long)(mq_client_command_count(t->client) - c0));
    assert_true(lock_available_at(t, "g") == t->now + 50);
    bson_t *lock = tq_find_one(t, "locks", "{\"_id\": \"g\", \"token\": null, \"attempts\": 0}");
    assert_non_null(lock); /* parked without a lease, and that claim's attempt undone */
    bson_destroy(lock);

    tq_advance(t, 50);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e2);
    assert_int_equal(mq_lease_attempts(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e3); /* strict FIFO: e3 only after e2 */
    mq_lease_destroy(lease);
}

static void parked_group_does_not_block_others(void **state) {
    tq *t = *state;
    publish_at(t, "later", "x", t->now + 100);
    int64_t now_seq = tq_publish(t, "now", "y", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), now_seq);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

static void batch_claim_stops_before_a_scheduled_event(void **state) {
    tq *t = *state;
    int64_t e1 = tq_publish(t, "g", "e1", 0);
    int64_t e2 = tq_publish(t, "g", "e2", 0);
    publish_at(t, "g", "e3", t->now + 10);
    tq_publish(t, "g", "e4", 0);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 10, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 2);
    assert_int_equal(mq_lease_seq_at(lease, 0), e1);
    assert_int_equal(mq_lease_seq_at(lease, 1), e2);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
    tq_advance(t, 10);
    ASSERT_MQ(MQ_OK, mq_claim_batch(t->queue, "w", 30, 0, 10, &lease, &err), err);
    assert_int_equal(mq_lease_count(lease), 2); /* e3 and e4 */
    mq_lease_destroy(lease);
}

static void a_time_in_the_past_is_now(void **state) {
    tq *t = *state;
    int64_t seq = publish_at(t, "g", "x", t->now - 10);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    mq_lease_destroy(lease);
}

static void bad_not_before(void **state) {
    tq *t = *state;
    char *before = tq_snapshot(t);
    mq_error err;
    int64_t seq = 7;
    const double bad[] = {NAN, INFINITY, -INFINITY, -1, 1e12, -1e-9};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_MQ(MQ_ERR_ARG, mq_publish_at(t->queue, "g", "x", 1, 0, bad[i], &seq, &err), err);
        assert_non_null(strstr(err.message, "not_before_epoch_s"));
        assert_non_null(strstr(err.message, "mq_publish_at"));
        assert_int_equal(seq, 0);
    }
    char *after = tq_snapshot(t);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, tq_teardown)
    const struct CMUnitTest tests[] = {
        T(new_group_starts_parked),
        T(scheduled_head_holds_its_group),
        T(parked_group_does_not_block_others),
        T(batch_claim_stops_before_a_scheduled_event),
        T(a_time_in_the_past_is_now),
        T(bad_not_before),
    };
#undef T
    return cmocka_run_group_tests_name("schedule", tests, NULL, NULL);
}
