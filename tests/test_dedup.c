/* Deduplication keys (include/mongomq.h "Deduplication", docs/design.md
 * "Deduplication"): a key taken makes MQ_DUPLICATE with the first seq and adds
 * nothing, while the event is queued and for the window after its publish (also once
 * acked or dead-lettered); what each costs in commands; the window and the records it
 * leaves; the scopes; batches and mq_batch_outcome; a publisher that died between its
 * insert and its lock; bad keys and windows refused with nothing sent; a version 1
 * options struct; a drop that keeps the unique index. The lost replies of each keyed command are in test_lost_replies.c
 * and keys in random sequences in test_model.c. */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t commands(tq *t) { return mq_client_command_count(t->client); }

/* A publish with a key: its status, *seq the seq it gives. */
static mq_status publish_key(tq *t, const char *group, const char *event, const char *key, int64_t *seq) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.dedup_key = key;
    mq_error err;
    mq_status st = mq_publish_with(t->queue, group, event, strlen(event), &o, seq, &err);
    if (st < 0) fail_msg("mq_publish_with(%s, %s): %s", group, key, err.message);
    return st;
}

static int64_t messages(tq *t) { return tq_count(t, "messages", "{\"group_id\": {\"$exists\": true}}"); }
static int64_t records(tq *t) { return tq_count(t, "messages", "{\"group_id\": {\"$exists\": false}}"); }

static void same_key_is_one_event(void **state) {
    tq *t = *state;
    int64_t first = 0, again = 0;
    uint64_t before = commands(t);
    assert_int_equal(publish_key(t, "a", "one", "k", &first), MQ_OK);
    assert_int_equal(commands(t) - before, 3); /* a key costs nothing when it is free */
    before = commands(t);
    assert_int_equal(publish_key(t, "b", "two", "k", &again), MQ_DUPLICATE);
    assert_int_equal(commands(t) - before, 4); /* seq, insert (refused), dedup.read, lock */
    assert_int_equal(again, first);
    assert_int_equal(messages(t), 1);

    mq_error err;
    int64_t seq = 9;
    ASSERT_MQ(MQ_DUPLICATE,
              mq_publish_with(t->queue, "a", "x", 1,
                              &(mq_publish_opts){.version = MQ_PUBLISH_OPTS_VERSION, .dedup_key = "k"}, &seq, &err),
              err);
    assert_int_equal(err.status, MQ_DUPLICATE);
    assert_int_equal(seq, first);
    assert_string_equal(mq_status_name(MQ_DUPLICATE), "MQ_DUPLICATE");

    /* acked: the event goes, the record of its key stays, and so does the duplicate */
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), first);
    char buf[16];
    assert_string_equal(tq_event_text(lease, buf, sizeof buf), "one");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    assert_int_equal(messages(t), 0);
    assert_int_equal(records(t), 1);
    assert_int_equal(publish_key(t, "c", "three", "k", &again), MQ_DUPLICATE);
    assert_int_equal(again, first);
    tq_expect_empty(t, 0);

    /* the record is no event: stats and peek do not show it, a repair makes no lock */
    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_stats_json(t->queue, &json, &err), err);
    assert_non_null(strstr(json, "\"messages\":0,\"now\""));
    mq_free(json);
    ASSERT_MQ(MQ_OK, mq_peek_json(t->queue, NULL, 10, &json, &err), err);
    assert_string_equal(json, "[]");
    mq_free(json);
    int64_t fixed = -1;
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err);
    assert_int_equal(fixed, 0);
}

static void different_keys_and_no_key(void **state) {
    tq *t = *state;
    int64_t s1, s2, s3;
    assert_int_equal(publish_key(t, "g", "1", "k1", &s1), MQ_OK);
    assert_int_equal(publish_key(t, "g", "2", "k2", &s2), MQ_OK);
    s3 = tq_publish(t, "g", "3", 0);
    assert_true(s1 < s2 && s2 < s3);
    for (int64_t want = s1; want <= s3; want++) {
        mq_lease *lease = tq_claim(t, 30, 0);
        assert_int_equal(mq_lease_seq(lease), want);
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    assert_int_equal(records(t), 2); /* the two keyed ones */
}

/* The fake clock, started in the real clock's future (2036): the records this test
 * keeps would be removed by a real MongoDB's TTL monitor, which runs on the server's
 * clock, if their dates were in its past (below 2^31 s: tests/server/README.md). */
static int setup_future_clock(void **state) {
    int rc = tq_setup_fake_clock(state);
    if (rc == 0) ((tq *)*state)->now = 2.1e9;
    return rc;
}

static void the_window(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_window(t->queue, 10, &err), err);
    int64_t first, seq;
    assert_int_equal(publish_key(t, "g", "e", "k", &first), MQ_OK);

    /* queued past the window: still the key's holder */
    tq_advance(t, 11);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, first);
    mq_lease *lease = tq_claim(t, 30, 0);
    tq_ack(t, lease); /* acked past its window: deleted, no record */
    mq_lease_destroy(lease);
    assert_int_equal(records(t), 0);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_OK);
    assert_true(seq > first);

    /* acked within the window: a record until then; after it the key is free again */
    first = seq;
    lease = tq_claim(t, 30, 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    assert_int_equal(records(t), 1);
    tq_advance(t, 5);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, first);
    tq_advance(t, 6);
    uint64_t before = commands(t);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_OK);
    /* seq, insert (refused by the expired record), dedup.read, dedup.expire, insert, lock */
    assert_int_equal(commands(t) - before, 6);
    assert_true(seq > first);
    assert_int_equal(records(t), 0);
    assert_int_equal(messages(t), 1);

    /* each event keeps the window it was published with */
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_window(t->queue, MQ_DEDUP_WINDOW_MAX, &err), err);
    int64_t long_one;
    assert_int_equal(publish_key(t, "h", "e", "long", &long_one), MQ_OK);
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_window(t->queue, 1, &err), err);
    tq_advance(t, 86400);
    assert_int_equal(publish_key(t, "h", "e", "long", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, long_one);
}

static void group_scope(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t a, b, seq;
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_scope(t->queue, MQ_DEDUP_SCOPE_GROUP, &err), err);
    assert_int_equal(publish_key(t, "A", "e", "k", &a), MQ_OK);
    assert_int_equal(publish_key(t, "B", "e", "k", &b), MQ_OK);
    assert_int_equal(publish_key(t, "A", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, a);
    assert_int_equal(publish_key(t, "B", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, b);
    /* a queue-scope key is another key */
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_scope(t->queue, MQ_DEDUP_SCOPE_QUEUE, &err), err);
    assert_int_equal(publish_key(t, "A", "e", "k", &seq), MQ_OK);
    assert_int_equal(publish_key(t, "B", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(messages(t), 3);
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_dedup_scope(t->queue, (mq_dedup_scope)7, &err), err);
    assert_non_null(strstr(err.message, "scope"));
}

static void batches(void **state) {
    tq *t = *state;
    mq_error err;
    mq_batch *b;
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    int64_t seq = 5;
    o.dedup_key = "a";
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g1", "1", 1, &o, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_outcome(b, 0, &seq, &err), err); /* not published yet */
    assert_non_null(strstr(err.message, "outcome"));
    o.dedup_key = "b";
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g1", "2", 1, &o, &err), err);
    o.dedup_key = "a";
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g2", "3", 1, &o, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(b, "g2", "4", 1, 0, &err), err);
    int64_t first = 0;
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_DUPLICATE, mq_publish_batch(t->queue, b, &first, &err), err);
    assert_int_equal(commands(t) - before, 4); /* the duplicate inside the batch: one read more */
    int64_t want[4] = {first, first + 1, first, first + 3};
    mq_status dup[4] = {MQ_OK, MQ_OK, MQ_DUPLICATE, MQ_OK};
    for (size_t i = 0; i < 4; i++) {
        ASSERT_MQ(dup[i], mq_batch_outcome(b, i, &seq, &err), err);
        assert_int_equal(seq, want[i]);
    }
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_outcome(b, 4, &seq, &err), err);
    assert_int_equal(messages(t), 3);
    /* g2's lock comes from its first added event, seq first + 3 */
    bson_t *lock = tq_find_one(t, "locks", "{\"_id\": \"g2\"}");
    assert_non_null(lock);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, lock, "head") && bson_iter_as_int64(&it) == first + 3);
    bson_destroy(lock);
    mq_batch_destroy(b);

    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    o.dedup_key = "b";
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g1", "5", 1, &o, &err), err);
    o.dedup_key = "c";
    ASSERT_MQ(MQ_OK, mq_batch_add_with(b, "g3", "6", 1, &o, &err), err);
    int64_t second;
    ASSERT_MQ(MQ_DUPLICATE, mq_publish_batch(t->queue, b, &second, &err), err);
    ASSERT_MQ(MQ_DUPLICATE, mq_batch_outcome(b, 0, &seq, &err), err);
    assert_int_equal(seq, first + 1);
    ASSERT_MQ(MQ_OK, mq_batch_outcome(b, 1, &seq, &err), err);
    assert_int_equal(seq, second + 1);
    assert_int_equal(messages(t), 4);
    /* again: both taken now; an add clears the outcome */
    ASSERT_MQ(MQ_DUPLICATE, mq_publish_batch(t->queue, b, &second, &err), err);
    ASSERT_MQ(MQ_DUPLICATE, mq_batch_outcome(b, 1, &seq, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(b, "g3", "7", 1, 0, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_batch_outcome(b, 0, &seq, &err), err);
    mq_batch_destroy(b);
    assert_int_equal(messages(t), 4);

    /* a batch without keys: every outcome is its seq */
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(b, "g9", "x", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(b, "g9", "y", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, b, &first, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_outcome(b, 1, &seq, &err), err);
    assert_int_equal(seq, first + 1);
    mq_batch_destroy(b);

    /* a batch lease of keyed and unkeyed events: records of the keyed ones only */
    mq_lease *lease;
    mq_claim_opts c = MQ_CLAIM_OPTS_INIT;
    c.max_events = 10;
    int acked_keyed = 0;
    while (mq_claim_with(t->queue, &c, &lease, &err) == MQ_OK) {
        ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
        mq_lease_destroy(lease);
        acked_keyed++;
    }
    assert_true(acked_keyed > 0);
    assert_int_equal(messages(t), 0);
    assert_int_equal(records(t), 3); /* a, b and c; the keyless 4, x and y are gone */
}

static void dead_letters_keep_the_key(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    int64_t first, seq;
    assert_int_equal(publish_key(t, "g", "e", "k", &first), MQ_OK);
    mq_lease *lease = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0); /* the second delivery went to the dead letters */
    int64_t dead = 0;
    ASSERT_MQ(MQ_OK, mq_dead_count(t->queue, &dead, &err), err);
    assert_int_equal(dead, 1);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, first);
    bson_t *letter = tq_find_one(t, "dead", "{}");
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, letter, "dedup_key") && strcmp(bson_iter_utf8(&it, NULL), "k") == 0);
    bson_destroy(letter);
    /* requeued: a new event, without the key, which stays taken by the record */
    int64_t fresh;
    ASSERT_MQ(MQ_OK, mq_dead_requeue(t->queue, first, &fresh, &err), err);
    assert_int_equal(messages(t), 1);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, first);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), fresh);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

static void a_publisher_that_died_before_its_lock(void **state) {
    tq *t = *state;
    /* what a publish that died between publish.insert and publish.lock leaves */
    tq_insert_json(t, "messages",
                   "{\"_id\": {\"$numberLong\": \"41\"}, \"group_id\": \"g\", \"event\": \"e\", \"priority\": 2, "
                   "\"published_at\": 1000000000.0, \"dedup_key\": \"k\", \"dedup_until\": {\"$date\": "
                   "{\"$numberLong\": \"9000000000000\"}}}");
    tq_expect_empty(t, 0);
    int64_t seq;
    assert_int_equal(publish_key(t, "g", "again", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, 41);
    mq_lease *lease = tq_claim(t, 30, 2); /* its retry made the lock, with its priority */
    assert_int_equal(mq_lease_seq(lease), 41);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    assert_int_equal(messages(t), 0);
}

static void bad_keys_and_windows(void **state) {
    tq *t = *state;
    mq_error err;
    uint64_t before = commands(t);
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    int64_t seq = 3;
    char long_key[MQ_DEDUP_KEY_MAX + 2];
    memset(long_key, 'x', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = '\0';
    const char *bad[] = {"", long_key, "\xff\xfe"};
    const char *why[] = {"dedup_key is empty", "dedup_key is 513 bytes", "dedup_key is not valid UTF-8"};
    mq_batch *b;
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    for (size_t i = 0; i < 3; i++) {
        o.dedup_key = bad[i];
        ASSERT_MQ(MQ_ERR_ARG, mq_publish_with(t->queue, "g", "e", 1, &o, &seq, &err), err);
        assert_non_null(strstr(err.message, why[i]));
        assert_int_equal(seq, 0);
        ASSERT_MQ(MQ_ERR_ARG, mq_batch_add_with(b, "g", "e", 1, &o, &err), err);
        assert_non_null(strstr(err.message, why[i]));
    }
    assert_int_equal(mq_batch_count(b), 0);
    mq_batch_destroy(b);
    long_key[MQ_DEDUP_KEY_MAX] = '\0'; /* exactly the bound is fine (sent below) */
    const double windows[] = {0, 0.5, MQ_DEDUP_WINDOW_MAX + 1, -1, NAN, INFINITY};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
        ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_dedup_window(t->queue, windows[i], &err), err);
        assert_non_null(strstr(err.message, "seconds"));
    }
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_dedup_window(NULL, 10, &err), err);
    assert_int_equal(commands(t), before);
    o.dedup_key = long_key;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "g", "e", 1, &o, &seq, &err), err);
    assert_int_equal(messages(t), 1);
}

/* What a caller built against the 0.4/0.5 header passes: a version 1 struct, which
 * ends before dedup_key. */
struct publish_opts_v1 {
    unsigned int version;
    int priority;
    double not_before;
};

static void version_1_options_still_work(void **state) {
    tq *t = *state;
    mq_error err;
    struct publish_opts_v1 v1[2]; /* the second one's bytes stand where a v2 dedup_key would */
    memset(v1, 0x41, sizeof v1);
    v1[0].version = 1;
    v1[0].priority = 3;
    v1[0].not_before = 0;
    int64_t a, b;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "g", "e", 1, (const mq_publish_opts *)&v1[0], &a, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "g", "e", 1, (const mq_publish_opts *)&v1[0], &b, &err), err);
    assert_int_equal(b, a + 1); /* no key read from beyond the struct */
    mq_lease *lease = tq_claim(t, 30, 3);
    assert_int_equal(mq_lease_seq(lease), a);
    mq_lease_destroy(lease);
    struct publish_opts_v1 filled;
    memset(&filled, 0x7f, sizeof filled);
    assert_int_equal(mq_publish_opts_init((mq_publish_opts *)&filled, 1), MQ_OK);
    assert_int_equal(filled.version, 1);
    assert_int_equal(filled.priority, 0);
    assert_int_equal(records(t), 0);
}

/* mq_queue_drop takes the indexes with the collections; the handle's next publish
 * makes them again first (2 commands more, once): the handle goes on deduplicating. */
static void drop_keeps_the_unique_index(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t seq;
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_OK);
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_OK, mq_queue_drop(t->queue, &err), err);
    assert_int_equal(commands(t) - before, 4);
    before = commands(t);
    assert_int_equal(publish_key(t, "g", "e", "k", &seq), MQ_OK);
    assert_int_equal(commands(t) - before, 5); /* publish.indexes (2), then the publish */
    assert_int_equal(seq, 1);
    assert_int_equal(publish_key(t, "h", "e", "k", &seq), MQ_DUPLICATE);
    assert_int_equal(seq, 1);
    assert_int_equal(messages(t), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(same_key_is_one_event, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(different_keys_and_no_key, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(the_window, setup_future_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(group_scope, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(batches, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(dead_letters_keep_the_key, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(a_publisher_that_died_before_its_lock, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(bad_keys_and_windows, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(version_1_options_still_work, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(drop_keeps_the_unique_index, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests_name("dedup", tests, NULL, NULL);
}
