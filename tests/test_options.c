/* The versioned options (mq_publish_opts, mq_claim_opts) and their one entry per
 * operation (mq_publish_with, mq_batch_add_with, mq_claim_with): defaults from the
 * _INIT macros and the _init functions agree, NULL options are the defaults, an
 * unknown version is MQ_ERR_ARG with nothing sent, a batch event can be scheduled,
 * and mq_claim_with is the plain claim without a wait and the waiting claim with a
 * timeout or a cancel. */
#include "support.h"

#include <string.h>

static uint64_t commands(tq *t) { return mq_client_command_count(t->client); }

static void init_functions_match_the_macros(void **state) {
    (void)state;
    mq_publish_opts p, p_macro = MQ_PUBLISH_OPTS_INIT;
    memset(&p, 0x7f, sizeof p);
    assert_int_equal(mq_publish_opts_init(&p, MQ_PUBLISH_OPTS_VERSION), MQ_OK);
    assert_int_equal(p.version, MQ_PUBLISH_OPTS_VERSION);
    assert_int_equal(p.priority, p_macro.priority);
    assert_true(p.not_before == p_macro.not_before);

    mq_claim_opts c, c_macro = MQ_CLAIM_OPTS_INIT;
    memset(&c, 0x7f, sizeof c);
    assert_int_equal(mq_claim_opts_init(&c, MQ_CLAIM_OPTS_VERSION), MQ_OK);
    assert_int_equal(c.version, MQ_CLAIM_OPTS_VERSION);
    assert_null(c.worker_id);
    assert_true(c.visibility_s == 30.0 && c_macro.visibility_s == 30.0);
    assert_int_equal(c.min_priority, 0);
    assert_int_equal(c.max_events, 1);
    assert_true(c.timeout_s == 0.0);
    assert_null(c.cancel);

    assert_int_equal(mq_publish_opts_init(&p, 0), MQ_ERR_ARG);
    assert_int_equal(mq_claim_opts_init(&c, MQ_CLAIM_OPTS_VERSION + 1), MQ_ERR_ARG);
    assert_int_equal(mq_claim_opts_init(NULL, MQ_CLAIM_OPTS_VERSION), MQ_ERR_ARG);
}

static void unknown_versions_are_refused_and_send_nothing(void **state) {
    tq *t = *state;
    mq_error err;
    uint64_t before = commands(t);
    mq_publish_opts p = MQ_PUBLISH_OPTS_INIT;
    p.version = 99;
    int64_t seq = 7;
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &p, &seq, &err), err);
    assert_int_equal(seq, 0);
    assert_non_null(strstr(err.message, "mq_publish_with"));
    assert_non_null(strstr(err.message, "version is 99"));
    mq_batch *batch;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_add_with(batch, "g", "e", 1, &p, &err), err);
    assert_int_equal(mq_batch_count(batch), 0);
    mq_batch_destroy(batch);
    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.version = 0;
    mq_lease *lease = (mq_lease *)&c;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_null(lease);
    assert_non_null(strstr(err.message, "mq_claim_with"));
    /* bad fields are named as the older calls name them */
    c = (mq_claim_opts)MQ_CLAIM_OPTS_INIT;
    c.visibility_s = -1;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_non_null(strstr(err.message, "visibility_s"));
    c = (mq_claim_opts)MQ_CLAIM_OPTS_INIT;
    c.timeout_s = -1;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_non_null(strstr(err.message, "timeout_s"));
    p = (mq_publish_opts)MQ_PUBLISH_OPTS_INIT;
    p.priority = 5;
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &p, NULL, &err), err);
    assert_non_null(strstr(err.message, "priority"));
    assert_int_equal(commands(t), before);
}

static void null_options_are_the_defaults(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "g", "e", 1, NULL, &seq, &err), err);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, NULL, &lease, &err), err);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_count(lease), 1);
    assert_true(mq_lease_deadline(lease) == t->now + 30); /* default visibility */
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_EMPTY, mq_claim_with(t->queue, NULL, &lease, &err), err);
    assert_null(lease);
}

/* priority and not_before through the options; a batch event scheduled. */
static void publish_options_priority_and_schedule(void **state) {
    tq *t = *state;
    mq_error err;
    mq_publish_opts p = MQ_PUBLISH_OPTS_INIT;
    p.priority = 3;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "hi", "h", 1, &p, NULL, &err), err);
    p.priority = 0;
    p.not_before = t->now + 10;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "later", "l", 1, &p, NULL, &err), err);

    mq_batch *batch;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add_with(batch, "b", "now", 3, NULL, &err), err);
    p.not_before = t->now + 20; /* the group's second event waits: FIFO holds the group */
    ASSERT_MQ(MQ_OK, mq_batch_add_with(batch, "b", "b20", 3, &p, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add_with(batch, "c", "c20", 3, &p, &err), err); /* creates c parked */
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, NULL, &err), err);
    mq_batch_destroy(batch);

    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.min_priority = 3;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_string_equal(mq_lease_group(lease), "hi");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    c.min_priority = 0;
    c.max_events = 5;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_string_equal(mq_lease_group(lease), "b");
    assert_int_equal(mq_lease_count(lease), 1); /* stops before the scheduled event */
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_EMPTY, mq_claim_with(t->queue, &c, &lease, &err), err); /* later: +10, b: +20, c: +20 */
    tq_advance(t, 11);
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_string_equal(mq_lease_group(lease), "later");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_EMPTY, mq_claim_with(t->queue, &c, &lease, &err), err);
    tq_advance(t, 10);
    int seen_b = 0, seen_c = 0;
    while (mq_claim_with(t->queue, &c, &lease, &err) == MQ_OK) {
        seen_b += strcmp(mq_lease_group(lease), "b") == 0;
        seen_c += strcmp(mq_lease_group(lease), "c") == 0;
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    assert_int_equal(seen_b, 1);
    assert_int_equal(seen_c, 1);
}

/* Without a timeout or a cancel, mq_claim_with is the plain claim: no MQ_INTERRUPTED
 * after mq_queue_interrupt. With a cancel (already triggered) or a timeout it waits
 * as mq_claim_wait_cancel does. */
static void claim_with_waits_only_when_asked(void **state) {
    tq *t = *state;
    mq_error err;
    mq_lease *lease = NULL;
    mq_cancel *cancel;
    ASSERT_MQ(MQ_OK, mq_cancel_new(&cancel, &err), err);
    mq_cancel_trigger(cancel);
    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.cancel = cancel;
    ASSERT_MQ(MQ_CANCELLED, mq_claim_with(t->queue, &c, &lease, &err), err);
    assert_non_null(strstr(err.message, "mq_claim_with"));
    mq_cancel_destroy(cancel);

    c = (mq_claim_opts)MQ_CLAIM_OPTS_INIT;
    c.timeout_s = 0.2;
    ASSERT_MQ(MQ_EMPTY, mq_claim_with(t->queue, &c, &lease, &err), err); /* waited, then the timeout */

    mq_queue_interrupt(t->queue);
    ASSERT_MQ(MQ_INTERRUPTED, mq_claim_with(t->queue, &c, &lease, &err), err);
    c.timeout_s = 0;
    ASSERT_MQ(MQ_EMPTY, mq_claim_with(t->queue, &c, &lease, &err), err); /* the plain claim */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_functions_match_the_macros),
        cmocka_unit_test_setup_teardown(unknown_versions_are_refused_and_send_nothing, tq_setup_fake_clock,
                                        tq_teardown),
        cmocka_unit_test_setup_teardown(null_options_are_the_defaults, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(publish_options_priority_and_schedule, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(claim_with_waits_only_when_asked, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
