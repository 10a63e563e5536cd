/* Lost replies of a keyed publish, one case per command it may send (docs/design.md,
 * "Deduplication": the argument for each): publish.seq, publish.insert (and a process
 * that dies after it, before publish.lock), publish.lock, dedup.read, dedup.expire,
 * and the writes that keep a key after its event left: ack.record and
 * claim.dead_record. Each ends the same way: the publish retried with its key (as
 * often as it fails) leaves exactly one event, claimed once, and nothing without a
 * lock. Run three times, once per way a write's outcome becomes unknown
 * (fault_rules.h). Links the static copy of the library, which has the hook. */
#include "support.h"

#include <stdio.h>
#include <string.h>

#include "fault.hpp"
#include "fault_rules.h"

/* The caller's loop: publish with the key until it is not an outcome-unknown failure.
 * Returns the final status (MQ_OK or MQ_DUPLICATE); *seq its seq; *failures how many
 * tries failed first. */
static mq_status publish_until_known(tq *t, const char *group, const char *key, int64_t *seq, int *failures) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.dedup_key = key;
    *failures = 0;
    for (int i = 0; i < 10; i++) {
        mq_error err;
        mq_status st = mq_publish_with(t->queue, group, "payload", 7, &o, seq, &err);
        if (st == MQ_OK || st == MQ_DUPLICATE) return st;
        if (st != MQ_ERR_CONNECT) fail_msg("publish with %s: %s", key, err.message);
        (*failures)++;
    }
    fail_msg("publish with %s kept failing", key);
    return MQ_ERR_INTERNAL;
}

/* Exactly one event, with this seq, claimable now (its lock exists: no repair ran),
 * acked; then nothing. */
static void exactly_one(tq *t, int64_t seq) {
    assert_int_equal(tq_count(t, "messages", "{\"group_id\": {\"$exists\": true}}"), 1);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    char buf[16];
    assert_string_equal(tq_event_text(lease, buf, sizeof buf), "payload");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

static void lost_seq(void **state) {
    tq *t = *state;
    add_rule("publish.seq", g_unknown, 1, 1);
    int64_t seq;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK); /* nothing was inserted */
    assert_int_equal(failures, 1);
    no_faults();
    exactly_one(t, seq);
}

static void lost_insert(void **state) {
    tq *t = *state;
    add_rule("publish.insert", g_unknown, 1, 1);
    int64_t seq;
    int failures;
    /* the insert was applied: the retry finds the event by its key */
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_DUPLICATE);
    assert_int_equal(failures, 1);
    no_faults();
    exactly_one(t, seq);
}

/* The process dies after its insert: no publish.lock is ever sent (the network never
 * comes back for that call). The retry's duplicate makes the lock. */
static void insert_then_death(void **state) {
    tq *t = *state;
    add_rule("publish.insert", g_unknown, 1, 1);
    add_rule("publish.lock", MONGOMQ_FAULT_CONNECT, 1, 4); /* every lock try of the first call */
    int64_t seq;
    int failures;
    mq_error err;
    mq_status st = publish_until_known(t, "G", "k", &seq, &failures);
    assert_int_equal(st, MQ_DUPLICATE);
    assert_int_equal(failures, 1);
    no_faults();
    int64_t fixed = -1;
    exactly_one(t, seq);
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err);
    assert_int_equal(fixed, 0);
}

static void lost_lock(void **state) {
    tq *t = *state;
    add_rule("publish.lock", g_unknown, 1, 1);
    int64_t seq;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK); /* retried inside */
    assert_int_equal(failures, 0);
    /* and the duplicate's lock write, lost too: retried inside as well */
    add_rule("publish.lock", g_unknown, 2, 1);
    int64_t again;
    assert_int_equal(publish_until_known(t, "H", "k", &again, &failures), MQ_DUPLICATE);
    assert_int_equal(again, seq);
    no_faults();
    exactly_one(t, seq);
}

static void lost_dedup_read(void **state) {
    tq *t = *state;
    int64_t seq, again;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK);
    add_rule("dedup.read", g_unknown == MONGOMQ_FAULT_LOSE_REPLY ? MONGOMQ_FAULT_LOSE_REPLY : MONGOMQ_FAULT_CONNECT, 1,
             1); /* a read: its reply lost, or never sent */
    assert_int_equal(publish_until_known(t, "G", "k", &again, &failures), MQ_DUPLICATE);
    assert_int_equal(rule_calls("dedup.read"), 2); /* read again inside the call */
    assert_int_equal(again, seq);
    no_faults();
    exactly_one(t, seq);
}

static void lost_dedup_expire(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_dedup_window(t->queue, 5, &err), err);
    int64_t old, seq;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &old, &failures), MQ_OK);
    mq_lease *lease = tq_claim(t, 30, 0);
    tq_ack(t, lease); /* within the window: a record */
    mq_lease_destroy(lease);
    tq_advance(t, 6);
    add_rule("dedup.expire", g_unknown, 1, 1);
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK); /* the expired record went */
    assert_true(seq > old);
    no_faults();
    exactly_one(t, seq);
}

static void lost_ack_record(void **state) {
    tq *t = *state;
    int64_t seq, again;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK);
    mq_lease *lease = tq_claim(t, 30, 0);
    add_rule("ack.record", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
    assert_int_equal(publish_until_known(t, "G", "k", &again, &failures), MQ_DUPLICATE);
    assert_int_equal(again, seq);
    tq_expect_empty(t, 0);
}

static void lost_dead_record(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    int64_t seq, again;
    int failures;
    assert_int_equal(publish_until_known(t, "G", "k", &seq, &failures), MQ_OK);
    mq_lease *lease = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    mq_lease_destroy(lease);
    add_rule("claim.dead_record", g_unknown, 1, 1);
    lease = NULL;
    mq_status st = mq_claim(t->queue, NULL, 30, 0, &lease, &err);
    if (st != MQ_ERR_CONNECT && st != MQ_EMPTY) fail_msg("claim: %s", err.message);
    no_faults();
    tq_expect_empty(t, 0); /* the move is done (or finished by this claim) */
    int64_t dead = 0;
    ASSERT_MQ(MQ_OK, mq_dead_count(t->queue, &dead, &err), err);
    assert_int_equal(dead, 1);
    assert_int_equal(publish_until_known(t, "G", "k", &again, &failures), MQ_DUPLICATE);
    assert_int_equal(again, seq);
    tq_expect_empty(t, 0);
}

/* A batch whose insert's reply is lost: the retried batch is all duplicates, each of
 * its own first seq, in 4 commands (seq, refused insert, read, locks). */
static void lost_batch_insert(void **state) {
    tq *t = *state;
    mq_error err;
    mq_batch *b;
    ASSERT_MQ(MQ_OK, mq_batch_new(&b, &err), err);
    const char *keys[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
        o.dedup_key = keys[i];
        ASSERT_MQ(MQ_OK, mq_batch_add_with(b, i < 2 ? "G" : "H", "payload", 7, &o, &err), err);
    }
    add_rule("publish.insert", g_unknown, 1, 1);
    int64_t first = 0;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_publish_batch(t->queue, b, &first, &err), err);
    no_faults();
    uint64_t before = mq_client_command_count(t->client);
    ASSERT_MQ(MQ_DUPLICATE, mq_publish_batch(t->queue, b, &first, &err), err);
    assert_int_equal(mq_client_command_count(t->client) - before, 4);
    int64_t seqs[3];
    for (size_t i = 0; i < 3; i++) ASSERT_MQ(MQ_DUPLICATE, mq_batch_outcome(b, i, &seqs[i], &err), err);
    assert_true(seqs[1] == seqs[0] + 1 && seqs[2] == seqs[0] + 2 && seqs[0] < first);
    mq_batch_destroy(b);
    assert_int_equal(tq_count(t, "messages", "{}"), 3);
}

/* The fake clock, started in the real clock's future (2036): the records these tests
 * keep would be removed by a real MongoDB's TTL monitor, which runs on the server's
 * clock, if their dates were in its past (below 2^31 s: tests/server/README.md). */
static int setup_future_clock(void **state) {
    int rc = tq_setup_fake_clock(state);
    if (rc == 0) ((tq *)*state)->now = 2.1e9;
    return rc;
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup_future_clock, teardown)
    const struct CMUnitTest tests[] = {
        T(lost_seq),          T(lost_insert),     T(insert_then_death), T(lost_lock),         T(lost_dedup_read),
        T(lost_dedup_expire), T(lost_ack_record), T(lost_dead_record),  T(lost_batch_insert),
    };
#undef T
    return fault_rules_run_modes("dedup_", tests, sizeof tests / sizeof tests[0], NULL);
}
