/* Event attributes (include/mongomq.h "Event attributes", docs/design.md "Event
 * attributes"): they round-trip in order with a publish and with each event of a
 * batch and a batch lease; they stay with the event through nack, the dead letters
 * and a requeue; peek and the dead list show them; bad ones are MQ_ERR_ARG naming the
 * attribute with nothing sent; version 2 options (which end before attrs) still
 * work; a stored document with malformed attributes is claimed without them. */
#include "support.h"

#include <string.h>

static uint64_t commands(tq *t) { return mq_client_command_count(t->client); }

static int64_t publish_attrs(tq *t, const char *group, const char *event, const mq_event_attr *attrs, size_t n) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.attrs = attrs;
    o.attr_count = n;
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, group, event, strlen(event), &o, &seq, &err), err);
    return seq;
}

/* The lease's event i has exactly these attributes, in this order. */
static void expect_attrs(const mq_lease *l, size_t i, const mq_event_attr *want, size_t n) {
    assert_int_equal(mq_lease_attr_count(l, i), n);
    mq_error err;
    for (size_t j = 0; j < n; j++) {
        const char *k = NULL, *v = NULL;
        ASSERT_MQ(MQ_OK, mq_lease_attr_at(l, i, j, &k, &v, &err), err);
        assert_string_equal(k, want[j].key);
        assert_string_equal(v, want[j].value);
        assert_string_equal(mq_lease_attr(l, i, want[j].key), want[j].value);
    }
}

static const mq_event_attr THREE[] = {{"content-type", "application/json"}, {"tenant.id", "t-42"}, {"empty", ""}};

static void round_trip(void **state) {
    tq *t = *state;
    uint64_t before = commands(t);
    int64_t seq = publish_attrs(t, "g", "{}", THREE, 3);
    assert_int_equal(commands(t) - before, 3); /* no command more */
    mq_lease *l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(l), seq);
    expect_attrs(l, 0, THREE, 3);
    assert_null(mq_lease_attr(l, 0, "absent"));
    assert_null(mq_lease_attr(l, 1, "tenant.id")); /* no event 1 */
    assert_null(mq_lease_attr(l, 0, NULL));
    assert_int_equal(mq_lease_attr_count(l, 1), 0);
    assert_int_equal(mq_lease_attr_count(NULL, 0), 0);
    mq_error err;
    const char *k = "x", *v = "y";
    ASSERT_MQ(MQ_ERR_ARG, mq_lease_attr_at(l, 0, 3, &k, &v, &err), err);
    assert_null(k);
    assert_null(v);
    assert_non_null(strstr(err.message, "j is 3"));
    ASSERT_MQ(MQ_ERR_ARG, mq_lease_attr_at(l, 1, 0, &k, &v, &err), err);
    assert_non_null(strstr(err.message, "i is 1"));
    ASSERT_MQ(MQ_ERR_ARG, mq_lease_attr_at(l, 0, 0, NULL, &v, &err), err);

    /* kept through a nack */
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    mq_lease_destroy(l);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(l), 2);
    expect_attrs(l, 0, THREE, 3);

    /* peek shows them */
    char *json;
    ASSERT_MQ(MQ_OK, mq_peek_json(t->queue, "g", 5, &json, &err), err);
    assert_non_null(
        strstr(json, "\"attrs\":{\"content-type\":\"application/json\",\"tenant.id\":\"t-42\",\"empty\":\"\"}"));
    mq_free(json);
    tq_ack(t, l);
    mq_lease_destroy(l);

    /* an event without attributes has none */
    tq_publish(t, "g", "plain", 0);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attr_count(l, 0), 0);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void batches(void **state) {
    tq *t = *state;
    mq_error err;
    mq_batch *b;
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    const mq_event_attr one[] = {{"n", "1"}};
    const mq_event_attr two[] = {{"n", "2"}, {"extra", "yes"}};
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.attrs = one;
    o.attr_count = 1;
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g", "1", 1, &o, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(b, "g", "x", 1, 0, &err), err);
    o.attrs = two;
    o.attr_count = 2;
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g", "2", 1, &o, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, b, NULL, &err), err);
    mq_batch_destroy(b);
    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.max_events = 3;
    mq_lease *l;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &c, &l, &err), err);
    assert_int_equal(mq_lease_count(l), 3);
    expect_attrs(l, 0, one, 1);
    assert_int_equal(mq_lease_attr_count(l, 1), 0);
    expect_attrs(l, 2, two, 2);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void dead_letters_and_requeue_keep_them(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    int64_t seq = publish_attrs(t, "g", "e", THREE, 3);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    mq_lease_destroy(l);
    tq_expect_empty(t, 0); /* moved to the dead letters */
    char *json;
    ASSERT_MQ(MQ_OK, mq_dead_list_json(t->queue, 5, &json, &err), err);
    assert_non_null(strstr(json, "\"tenant.id\":\"t-42\""));
    mq_free(json);
    int64_t fresh;
    ASSERT_MQ(MQ_OK, mq_dead_requeue(t->queue, seq, &fresh, &err), err);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(l), fresh);
    expect_attrs(l, 0, THREE, 3);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void bad_attributes_send_nothing(void **state) {
    tq *t = *state;
    mq_error err;
    char long_key[MQ_ATTR_KEY_MAX + 2], long_value[MQ_ATTR_VALUE_MAX + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    memset(long_value, 'v', sizeof long_value - 1);
    long_value[sizeof long_value - 1] = '\0';
    mq_event_attr many[MQ_ATTR_MAX + 1];
    char names[MQ_ATTR_MAX + 1][8];
    for (int i = 0; i <= MQ_ATTR_MAX; i++) {
        snprintf(names[i], sizeof names[i], "k%d", i);
        many[i] = (mq_event_attr){names[i], "v"};
    }
    struct {
        mq_event_attr attrs[2];
        size_t n;
        const char *why;
    } bad[] = {
        {{{"", "v"}}, 1, "attrs[0].key is empty"},
        {{{"has space", "v"}}, 1, "attrs[0].key \"has space\" has a byte other than"},
        {{{"a/b", "v"}}, 1, "offset 1"},
        {{{"ok", "v"}, {"k\xc3\xa9", "v"}}, 2, "attrs[1].key"},
        {{{long_key, "v"}}, 1, "attrs[0].key is 129 bytes"},
        {{{"k", long_value}}, 1, "attrs[0].value (key \"k\") is 4097 bytes"},
        {{{"k", "\xff"}}, 1, "is not valid UTF-8"},
        {{{"k", "1"}, {"k", "2"}}, 2, "attrs[1].key \"k\" appears twice"},
        {{{NULL, "v"}}, 1, "attrs[0].key is NULL"},
        {{{"k", NULL}}, 1, "attrs[0].value is NULL"},
    };
    mq_batch *b;
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    uint64_t before = commands(t);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
        o.attrs = bad[i].attrs;
        o.attr_count = bad[i].n;
        int64_t seq = 9;
        ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &o, &seq, &err), err);
        if (strstr(err.message, bad[i].why) == NULL) fail_msg("case %zu: %s", i, err.message);
        assert_int_equal(seq, 0);
        ASSERT_MQ(MQ_ERR_ARG, mq_batch_add_with(b, "g", "e", 1, &o, &err), err);
        if (strstr(err.message, bad[i].why) == NULL) fail_msg("batch case %zu: %s", i, err.message);
    }
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.attrs = many;
    o.attr_count = MQ_ATTR_MAX + 1;
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &o, NULL, &err), err);
    assert_non_null(strstr(err.message, "attr_count is 17"));
    o.attrs = NULL;
    o.attr_count = 1;
    ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &o, NULL, &err), err);
    assert_non_null(strstr(err.message, "attrs is NULL"));
    assert_int_equal(commands(t), before);
    assert_int_equal(mq_batch_count(b), 0);
    mq_batch_destroy(b);

    /* the bounds themselves are fine */
    long_key[MQ_ATTR_KEY_MAX] = '\0';
    long_value[MQ_ATTR_VALUE_MAX] = '\0';
    mq_event_attr edge[MQ_ATTR_MAX];
    memcpy(edge, many, sizeof edge);
    edge[0] = (mq_event_attr){long_key, long_value};
    publish_attrs(t, "g", "e", edge, MQ_ATTR_MAX);
    mq_lease *l = tq_claim(t, 30, 0);
    expect_attrs(l, 0, edge, MQ_ATTR_MAX);
    mq_lease_destroy(l);
}

/* What a caller built against the 0.6 header passes: a version 2 struct, which ends
 * before attrs. */
struct publish_opts_v2 {
    unsigned int version;
    int priority;
    double not_before;
    const char *dedup_key;
};

static void version_2_options_still_work(void **state) {
    tq *t = *state;
    mq_error err;
    struct publish_opts_v2 v2[2]; /* the second one's bytes stand where attrs would be */
    memset(v2, 0x41, sizeof v2);
    v2[0].version = 2;
    v2[0].priority = 1;
    v2[0].not_before = 0;
    v2[0].dedup_key = "k";
    int64_t a, b;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "g", "e", 1, (const mq_publish_opts *)&v2[0], &a, &err), err);
    ASSERT_MQ(MQ_DUPLICATE, mq_publish_with(t->queue, "g", "e", 1, (const mq_publish_opts *)&v2[0], &b, &err), err);
    assert_int_equal(b, a);
    mq_lease *l = tq_claim(t, 30, 1);
    assert_int_equal(mq_lease_attr_count(l, 0), 0);
    mq_lease_destroy(l);
    struct publish_opts_v2 filled;
    memset(&filled, 0x7f, sizeof filled);
    assert_int_equal(mq_publish_opts_init((mq_publish_opts *)&filled, 2), MQ_OK);
    assert_int_equal(filled.version, 2);
    assert_null(filled.dedup_key);
}

/* Attributes another writer stored badly: skipped, the event still delivered. */
static void malformed_stored_attributes(void **state) {
    tq *t = *state;
    tq_insert_json(t, "messages",
                   "{\"_id\": {\"$numberLong\": \"5\"}, \"group_id\": \"h\", \"event\": \"e\", \"attrs\": "
                   "[{\"k\": \"ok\", \"v\": \"1\"}, {\"k\": 7, \"v\": \"x\"}, \"junk\", {\"v\": \"no key\"}, "
                   "{\"k\": \"\", \"v\": \"empty key\"}, {\"k\": \"also\", \"v\": \"2\"}]}");
    tq_insert_json(t, "messages",
                   "{\"_id\": {\"$numberLong\": \"6\"}, \"group_id\": \"h\", \"event\": \"e\", \"attrs\": 3}");
    mq_error err;
    int64_t fixed;
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err);
    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.max_events = 2;
    mq_lease *l;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &c, &l, &err), err);
    const mq_event_attr want[] = {{"ok", "1"}, {"also", "2"}};
    expect_attrs(l, 0, want, 2);
    assert_int_equal(mq_lease_attr_count(l, 1), 0);
    char *json;
    ASSERT_MQ(MQ_OK, mq_peek_json(t->queue, "h", 5, &json, &err), err);
    assert_non_null(strstr(json, "\"attrs\":{\"ok\":\"1\",\"also\":\"2\"}"));
    mq_free(json);
    mq_lease_destroy(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(batches, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(dead_letters_and_requeue_keep_them, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(bad_attributes_send_nothing, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(version_2_options_still_work, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(malformed_stored_attributes, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests_name("attrs", tests, NULL, NULL);
}
