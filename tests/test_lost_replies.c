/* Lost replies, and attempts that count one event's deliveries (the "fix first"
 * issue). A lost reply is injected with MONGOMQ_FAULT_LOSE_REPLY: the server applies
 * the command, then the call sees a dropped connection (lib/fault.hpp). The checks:
 * no event is ever left without a lock once the call returns, a retried call after
 * MQ_ERR_CONNECT does the right thing, and attempts is the number of deliveries of the
 * event it is reported with. Links the static copy of the library, which has the hook. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.hpp"
#include "fault_rules.h"

static int64_t locks_of(tq *t, const char *group) {
    char filter[256];
    snprintf(filter, sizeof filter, "{\"_id\": \"%s\"}", group);
    return tq_count(t, "locks", filter);
}

/* The sequence: a worker holds G (only e1); another process publishes e2 (its
 * insert lands, its lock upsert finds the lock); the worker's ack drops the lock but
 * the reply is lost. e2 must still be claimable, and a retried ack says MQ_OK. */
static void ack_drop_reply_lost_with_a_publish_racing(void **state) {
    tq *t = *state;
    int64_t e1 = tq_publish(t, "G", "e1", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e1);
    int64_t e2 = tq_publish(t, "G", "e2", 0); /* the lock was there: nothing to insert */

    add_rule("ack.drop", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    assert_non_null(strstr(err.message, "ack.drop"));
    assert_int_equal(rule_calls("ack.drop"), 1);
    /* Before the error came back the re-check re-created G's lock for e2. */
    assert_int_equal(locks_of(t, "G"), 1);

    /* The retry: the events are gone, the lock is not ours (a fresh one for e2): it
     * was our own drop, so MQ_OK, not MQ_LEASE_LOST. */
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
    mq_lease_destroy(lease);
    no_faults();

    mq_lease *next = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(next), e2);
    assert_int_equal(mq_lease_attempts(next), 1);
    tq_ack(t, next);
    mq_lease_destroy(next);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

/* The drop's reply and then the re-check's first try are lost: the re-check is
 * retried inside the call, and the event still gets its lock. */
static void ack_drop_and_recheck_replies_lost(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e1", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    int64_t e2 = tq_publish(t, "G", "e2", 0);

    add_rule("ack.drop", g_unknown, 1, 1);
    add_rule("ack.recheck", MONGOMQ_FAULT_CONNECT, 1, 1);
    add_rule("ack.relock", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    assert_int_equal(rule_calls("ack.recheck"), 2); /* failed once, retried */
    assert_int_equal(rule_calls("ack.relock"), 2);  /* lost once (applied), retried: $setOnInsert */
    no_faults();
    assert_int_equal(locks_of(t, "G"), 1);
    mq_lease_destroy(lease);

    mq_lease *next = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(next), e2);
    tq_ack(t, next);
    mq_lease_destroy(next);
}

/* The drop is not applied at all (the connection dropped before it was sent): the
 * lock stays ours; the retried ack drops it for real. */
static void ack_drop_not_sent_then_retried(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e1", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    add_rule("ack.drop", MONGOMQ_FAULT_CONNECT, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    assert_int_equal(locks_of(t, "G"), 1); /* still ours */
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
    no_faults();
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
}

/* The claim's drop of an empty stale lock, reply lost (applied): the claim reports the
 * failure, the lock is gone, and an event published afterwards is delivered. */
static void claim_drop_reply_lost(void **state) {
    tq *t = *state;
    tq_insert_json(t, "locks", "{\"_id\": \"G\", \"available_at\": 0.0, \"token\": null, \"priority\": 0}");
    add_rule("claim.drop", g_unknown, 1, 1);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, NULL, 30, 0, &lease, &err), err);
    assert_null(lease);
    assert_int_equal(rule_calls("claim.drop"), 1);
    assert_int_equal(tq_count(t, "locks", "{}"), 0); /* applied: dropped */
    no_faults();
    int64_t e = tq_publish(t, "G", "e", 0);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* A publish racing the claim's drop for real: the publish's insert lands after the
 * claim read no head, its lock upsert before the drop (so it finds the lock), and the
 * drop's reply is lost: the re-check must re-lock. The publish is run from inside the
 * hook, just before claim.drop is sent. */
static tq *g_racer;
static int64_t g_raced_seq;

static int publish_then_lose(const char *command, void *ctx) {
    (void)ctx;
    if (strcmp(command, "claim.drop") != 0) return 0;
    mongomq_fault_set(NULL, NULL); /* the publish below must run freely */
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_publish(g_racer->queue, "G", "raced", 5, 0, &g_raced_seq, &err), err);
    return g_unknown;
}

static void claim_drop_reply_lost_publish_inside(void **state) {
    tq *t = *state;
    tq_insert_json(t, "locks", "{\"_id\": \"G\", \"available_at\": 0.0, \"token\": null, \"priority\": 2}");
    g_racer = t;
    g_raced_seq = 0;
    mongomq_fault_set(publish_then_lose, NULL);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, NULL, 30, 0, &lease, &err), err);
    assert_true(g_raced_seq > 0);
    /* The lock the drop removed was re-created by the re-check, with its priority. */
    bson_t *lock = tq_find_one(t, "locks", "{\"_id\": \"G\"}");
    assert_non_null(lock);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, lock, "priority"));
    assert_int_equal(bson_iter_as_int64(&it), 2);
    bson_destroy(lock);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), g_raced_seq);
    assert_int_equal(mq_lease_attempts(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* The claim's lease reply is lost: the claim finds its lease by token and delivers;
 * nothing is held by a token nobody knows, and attempts is 1. */
static void claim_lease_reply_lost_is_recovered(void **state) {
    tq *t = *state;
    /* "b": partition 0 with 4 partitions, where a fresh handle's first claim starts */
    int64_t e = tq_publish(t, "b", "e", 0);
    add_rule("claim.lease", g_unknown, 1, 1);
    add_rule("claim.recover", 0, 1, 0); /* counts its calls, injects nothing */
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(rule_calls("claim.lease"), 1);   /* not sent again */
    assert_int_equal(rule_calls("claim.recover"), 1); /* found by its token */
    assert_int_equal(mq_lease_seq(lease), e);
    assert_int_equal(mq_lease_attempts(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

/* A claim.lease that failed before it reached the server: nothing was leased, the
 * claim reports the failure, and the next claim gets the event on its first attempt. */
static void claim_lease_not_sent(void **state) {
    tq *t = *state;
    int64_t e = tq_publish(t, "G", "e", 0);
    add_rule("claim.lease", MONGOMQ_FAULT_CONNECT, 1, 1);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, NULL, 30, 0, &lease, &err), err);
    no_faults();
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e);
    assert_int_equal(mq_lease_attempts(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* nack(0)'s reply lost: the retry says MQ_OK (its own write cleared the token). */
static void nack_reply_lost_then_retried(void **state) {
    tq *t = *state;
    int64_t e = tq_publish(t, "G", "e", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    add_rule("nack.retry", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_nack(t->queue, lease, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    no_faults();
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e);
    assert_int_equal(mq_lease_attempts(lease), 2);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* ack.release's reply lost (more events wait): the retry says MQ_OK. */
static void ack_release_reply_lost_then_retried(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e1", 0);
    int64_t e2 = tq_publish(t, "G", "e2", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    add_rule("ack.release", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
    no_faults();
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e2);
    assert_int_equal(mq_lease_attempts(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* publish.insert's reply lost: the events are in, and the publish locked their group
 * before reporting the failure, so nothing is stranded. */
static void publish_insert_reply_lost_still_locks(void **state) {
    tq *t = *state;
    add_rule("publish.insert", g_unknown, 1, 1);
    add_rule("publish.lock", 0, 1, 0); /* counts its calls, injects nothing */
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_publish(t->queue, "G", "e", 1, 0, &seq, &err), err);
    assert_int_equal(rule_calls("publish.lock"), 1); /* the groups were locked before the error */
    no_faults();
    assert_int_equal(locks_of(t, "G"), 1);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_true(mq_lease_seq(lease) > 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* publish.lock fails twice with a dropped connection: retried inside the call. */
static void publish_lock_connect_failures_are_retried(void **state) {
    tq *t = *state;
    add_rule("publish.lock", MONGOMQ_FAULT_CONNECT, 1, 2);
    int64_t seq = tq_publish(t, "G", "e", 0);
    assert_int_equal(rule_calls("publish.lock"), 3);
    no_faults();
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* What no retry covers heals by itself: a publish whose lock never lands (the network
 * stays down past the retries) leaves an event without a lock; a claim after the
 * repair interval finds it. */
static void automatic_repair_heals_a_stranded_event(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(t->queue, 0.2, &err), err);
    add_rule("publish.lock", MONGOMQ_FAULT_CONNECT, 1, 100);
    int64_t seq = 0;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_publish(t->queue, "G", "e", 1, 0, &seq, &err), err);
    no_faults();
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    tq_expect_empty(t, 0); /* starts the period */
    uint64_t runs = 0, fixed = 0;
    mq_queue_repair_counts(t->queue, &runs, &fixed);
    assert_int_equal(runs, 0);
    tq_sleep(0.3);
    mq_lease *lease = tq_claim(t, 30, 0);
    mq_queue_repair_counts(t->queue, &runs, &fixed);
    assert_int_equal(runs, 1);
    assert_int_equal(fixed, 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);

    /* 0 turns it off; bad values are refused and change nothing. */
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_set_repair_interval(t->queue, -1, &err), err);
    assert_non_null(strstr(err.message, "interval_s"));
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(t->queue, 0, &err), err);
    tq_sleep(0.3);
    tq_expect_empty(t, 0);
    mq_queue_repair_counts(t->queue, &runs, NULL);
    assert_int_equal(runs, 1);
}

/* ---- attempts count deliveries of the event they are reported with ---- */

/* The first sequence: w1's stale ack removes a (taken over by w2); w2 nacks;
 * b must be delivered as its first attempt, not dead-lettered. */
static void stale_ack_does_not_pass_attempts_on(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t a = tq_publish(t, "g", "a", 0);
    int64_t b = tq_publish(t, "g", "b", 0);
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 2, &err), err);
    mq_lease *w1 = tq_claim(t, 5, 0);
    assert_int_equal(mq_lease_seq(w1), a);
    tq_advance(t, 6);
    mq_lease *w2 = tq_claim(t, 5, 0);
    assert_int_equal(mq_lease_seq(w2), a);
    assert_int_equal(mq_lease_attempts(w2), 2);
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, w1, &err), err); /* a deleted all the same */
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, w2, 0, &err), err);
    mq_lease *next = tq_claim(t, 5, 0);
    assert_int_equal(mq_lease_seq(next), b);
    assert_int_equal(mq_lease_attempts(next), 1);
    int64_t dead = -1;
    ASSERT_MQ(MQ_OK, mq_dead_count(t->queue, &dead, &err), err);
    assert_int_equal(dead, 0);
    tq_ack(t, next);
    mq_lease_destroy(w1);
    mq_lease_destroy(w2);
    mq_lease_destroy(next);
}

/* The shorter one: claim a, nack(0), ack with the same lease (deletes a): b's first
 * delivery says 1. */
static void ack_after_own_nack_does_not_pass_attempts_on(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "g", "a", 0);
    int64_t b = tq_publish(t, "g", "b", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, l, &err), err); /* its nack gave the group back */
    mq_lease_destroy(l);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(l), b);
    assert_int_equal(mq_lease_attempts(l), 1);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

/* A purge while leased, then new events: the first delivery says 1. */
static void purge_then_publish_starts_at_one(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "g", "a", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    mq_lease_destroy(l);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(l), 2);
    ASSERT_MQ(MQ_OK, mq_purge_group(t->queue, "g", &err), err);
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, l, &err), err);
    mq_lease_destroy(l);
    int64_t c = tq_publish(t, "g", "c", 0);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(l), c);
    assert_int_equal(mq_lease_attempts(l), 1);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

/* Dead letters count the deliveries of that event only, and lowering max attempts
 * applies to a head already past it. */
static void dead_letters_count_that_event_only(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t a = tq_publish(t, "g", "a", 0);
    int64_t b = tq_publish(t, "g", "b", 0);
    for (int i = 1; i <= 3; i++) {
        mq_lease *l = tq_claim(t, 30, 0);
        assert_int_equal(mq_lease_seq(l), a);
        assert_int_equal(mq_lease_attempts(l), i);
        ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
        mq_lease_destroy(l);
    }
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 2, &err), err);
    mq_lease *l = tq_claim(t, 30, 0); /* a had 3 deliveries: dead; b is delivered */
    assert_int_equal(mq_lease_seq(l), b);
    assert_int_equal(mq_lease_attempts(l), 1);
    bson_t *dead = tq_find_one(t, "dead", "{}");
    assert_non_null(dead);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, dead, "attempts"));
    assert_int_equal(bson_iter_as_int64(&it), 3);
    bson_destroy(dead);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

/* A lease's deadline is the claim's time plus its visibility on the queue clock;
 * extend and a delayed nack move it. */
static void lease_deadline_follows_the_lock(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "g", "a", 0);
    double now = mq_queue_now(t->queue);
    mq_lease *l = tq_claim(t, 30, 0);
    assert_true(mq_lease_deadline(l) == now + 30);
    tq_advance(t, 10);
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, l, 60, &err), err);
    assert_true(mq_lease_deadline(l) == now + 10 + 60);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 5, &err), err);
    assert_true(mq_lease_deadline(l) == now + 10 + 5);
    assert_true(mq_lease_deadline(NULL) == 0);
    mq_lease_destroy(l);
}

/* ---- every write of design.md's lost-reply table, one scenario each ----
 * The write's outcome is made unknown (g_unknown) on its first call; the call is
 * retried as the header says; then nothing may be stranded (mq_repair finds no event
 * without a lock), no retry of an applied call may answer MQ_LEASE_LOST, and every
 * event is still in the queue or in the dead letters (never neither). */

/* mq_repair fixes nothing: every event has its lock. */
static void nothing_stranded(tq *t) {
    mq_error err;
    int64_t fixed = -1;
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err);
    assert_int_equal(fixed, 0);
}

/* Claims and acks until nothing is due; returns the events seen. */
static int drain(tq *t) {
    int n = 0;
    for (;;) {
        mq_error err;
        mq_lease *l = NULL;
        mq_status st = mq_claim(t->queue, NULL, 30, 0, &l, &err);
        if (st == MQ_EMPTY) return n;
        ASSERT_MQ(MQ_OK, st, err);
        n += (int)mq_lease_count(l);
        tq_ack(t, l);
        mq_lease_destroy(l);
    }
}

/* The call failed with the outcome unknown (or the library healed it inside). */
static void unknown_or_ok(mq_status st, const mq_error *err) {
    if (st != MQ_OK && st != MQ_ERR_CONNECT) fail_msg("%s: %s", mq_status_name(st), err->message);
}

static void table_publish_seq(void **state) {
    tq *t = *state;
    add_rule("publish.seq", g_unknown, 1, 1);
    mq_error err;
    int64_t seq = 0;
    mq_status st = mq_publish(t->queue, "G", "e", 1, 0, &seq, &err);
    unknown_or_ok(st, &err);
    no_faults();
    if (st != MQ_OK) ASSERT_MQ(MQ_OK, mq_publish(t->queue, "G", "e", 1, 0, &seq, &err), err);
    nothing_stranded(t);
    assert_int_equal(drain(t), 1); /* the counter moved, nothing was inserted twice */
}

static void table_publish_lock(void **state) {
    tq *t = *state;
    add_rule("publish.lock", g_unknown, 1, 1);
    mq_error err;
    int64_t seq = 0;
    /* the lock upserts are retried inside the call */
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "G", "e", 1, 0, &seq, &err), err);
    no_faults();
    nothing_stranded(t);
    assert_int_equal(drain(t), 1);
}

static void table_ack_delete(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e1", 0);
    tq_publish(t, "G", "e2", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    add_rule("ack.delete", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, l, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, l, &err), err);
    mq_lease_destroy(l);
    nothing_stranded(t);
    assert_int_equal(drain(t), 1);
}

static void table_nack_park(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    add_rule("nack.park", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_nack(t->queue, l, 5, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 5, &err), err); /* the park keeps the token */
    mq_lease_destroy(l);
    tq_expect_empty(t, 0);
    tq_advance(t, 6);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(l), 2);
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void table_extend_lease(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    add_rule("extend.lease", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_extend(t->queue, l, 60, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, l, 60, &err), err);
    tq_advance(t, 45);
    tq_expect_empty(t, 0); /* still held */
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void table_unclaim_release(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    add_rule("unclaim.release", g_unknown, 1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_unclaim(t->queue, l, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_unclaim(t->queue, l, &err), err); /* its own give-back, not a lost lease */
    mq_lease_destroy(l);
    l = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_attempts(l), 1); /* no delivery was counted */
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void table_claim_park(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e1", 0);
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish_at(t->queue, "G", "later", 5, 0, t->now + 10, &seq, &err), err);
    mq_lease *l = tq_claim(t, 30, 0);
    tq_ack(t, l); /* the scheduled event is the head now */
    mq_lease_destroy(l);
    add_rule("claim.park", g_unknown, 1, 1);
    mq_status st = mq_claim(t->queue, NULL, 30, 0, &l, &err);
    unknown_or_ok(st == MQ_EMPTY ? MQ_OK : st, &err);
    no_faults();
    tq_expect_empty(t, 0); /* parked, or held by the lost park's lease */
    nothing_stranded(t);
    tq_advance(t, 31);
    assert_int_equal(drain(t), 1);
}

static void table_claim_rehead(void **state) {
    tq *t = *state;
    /* a harel peer's lock: no head recorded, so the claim records it (claim.rehead) */
    tq_insert_json(t, "messages", "{\"_id\": {\"$numberLong\": \"5\"}, \"group_id\": \"G\", \"event\": \"x\"}");
    tq_insert_json(t, "locks", "{\"_id\": \"G\", \"available_at\": 0.0, \"token\": null, \"priority\": 0}");
    add_rule("claim.rehead", g_unknown, 1, 1);
    mq_error err;
    mq_lease *l = NULL;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, NULL, 30, 0, &l, &err), err);
    no_faults();
    tq_expect_empty(t, 0); /* held by the lease the call could not hand out */
    tq_advance(t, 31);
    assert_int_equal(drain(t), 1);
}

static void table_claim_dead_moves(void **state) {
    static const char *const commands[] = {"claim.dead_insert", "claim.dead_delete"};
    for (int c = 0; c < 2; c++) {
        tq *t = *state;
        mq_error err;
        ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
        char group[8];
        snprintf(group, sizeof group, "G%d", c);
        tq_publish(t, group, "e", 0);
        mq_lease *l = tq_claim(t, 30, 0);
        ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
        mq_lease_destroy(l);
        add_rule(commands[c], g_unknown, 1, 1);
        ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, NULL, 30, 0, &l, &err), err);
        no_faults();
        tq_advance(t, 31);
        tq_expect_empty(t, 0); /* the next claim finishes the move and drops the lock */
        char filter[64];
        snprintf(filter, sizeof filter, "{\"group_id\": \"%s\"}", group);
        assert_int_equal(tq_count(t, "messages", filter), 0);
        assert_int_equal(tq_count(t, "dead", filter), 1); /* in the dead letters, never neither */
        nothing_stranded(t);
    }
}

static void table_dead_delete(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    int64_t seq = tq_publish(t, "G", "e", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    mq_lease_destroy(l);
    tq_expect_empty(t, 0); /* moved to the dead letters */
    add_rule("dead.delete", g_unknown, 1, 1);
    int64_t fresh = 0;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_dead_requeue(t->queue, seq, &fresh, &err), err);
    no_faults();
    /* the header: a retry that finds the letter gone is MQ_ERR_ARG; one that finds it
     * there publishes it again */
    mq_status st = mq_dead_requeue(t->queue, seq, &fresh, &err);
    if (st != MQ_ERR_ARG) ASSERT_MQ(MQ_OK, st, err);
    assert_int_equal(tq_count(t, "dead", "{}"), 0);
    nothing_stranded(t);
    int n = drain(t);
    assert_true(n >= 1 && n <= 2); /* at least once */
}

static void table_purge(void **state) {
    static const char *const commands[] = {"purge.messages", "purge.lock"};
    for (int c = 0; c < 2; c++) {
        tq *t = *state;
        tq_publish(t, "G", "e", 0);
        add_rule(commands[c], g_unknown, 1, 1);
        mq_error err;
        ASSERT_MQ(MQ_ERR_CONNECT, mq_purge_group(t->queue, "G", &err), err);
        no_faults();
        ASSERT_MQ(MQ_OK, mq_purge_group(t->queue, "G", &err), err);
        assert_int_equal(tq_count(t, "messages", "{}"), 0);
        assert_int_equal(tq_count(t, "locks", "{}"), 0);
    }
}

static void table_repair_lock(void **state) {
    tq *t = *state;
    tq_publish(t, "G", "e", 0);
    bson_t *filter = BCON_NEW("_id", BCON_UTF8("G"));
    bson_error_t error;
    mongoc_collection_t *locks = tq_collection(t, "locks");
    assert_true(mongoc_collection_delete_one(locks, filter, NULL, NULL, &error));
    mongoc_collection_destroy(locks);
    bson_destroy(filter);
    add_rule("repair.lock", g_unknown, 1, 1);
    mq_error err;
    int64_t fixed = 0;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_repair(t->queue, &fixed, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err); /* 0 or 1: the first may have applied */
    nothing_stranded(t);
    assert_int_equal(drain(t), 1);
}

/* ---- pausing (0.5.0): every write of a pause, resume and of what keeps a pause ---- */

static int64_t paused_locks_of(tq *t, const char *group) {
    char filter[256];
    snprintf(filter, sizeof filter, "{\"_id\": \"%s\", \"priority\": {\"$lt\": 0}}", group);
    return tq_count(t, "locks", filter);
}

/* pause.set and resume.set: an unknown outcome is settled by reading again inside the
 * call, which then reports what is true (MQ_OK). */
static void table_pause_and_resume_set(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "G", "e", 0);
    add_rule("pause.set", g_unknown, 1, 1);
    ASSERT_MQ(MQ_OK, mq_pause_group(t->queue, "G", &err), err);
    assert_int_equal(rule_calls("pause.set"), 1);
    no_faults();
    assert_int_equal(paused_locks_of(t, "G"), 1);
    tq_expect_empty(t, 0);
    add_rule("resume.set", g_unknown, 1, 1);
    ASSERT_MQ(MQ_OK, mq_resume_group(t->queue, "G", &err), err);
    no_faults();
    assert_int_equal(paused_locks_of(t, "G"), 0);
    assert_int_equal(drain(t), 1);
}

/* pause.lock (a group paused ahead of its first event): the upsert is retried. */
static void table_pause_lock(void **state) {
    tq *t = *state;
    mq_error err;
    add_rule("pause.lock", g_unknown, 1, 1);
    ASSERT_MQ(MQ_OK, mq_pause_group(t->queue, "G", &err), err);
    no_faults();
    assert_int_equal(paused_locks_of(t, "G"), 1);
    tq_publish(t, "G", "e", 0);
    tq_expect_empty(t, 0);
    ASSERT_MQ(MQ_OK, mq_resume_group(t->queue, "G", &err), err);
    assert_int_equal(drain(t), 1);
}

/* ack.keep_paused: the last event's ack of a paused group; its retry says MQ_OK and the
 * lock stays, paused and released. */
static void table_ack_keep_paused(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "G", "e", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_pause_group(t->queue, "G", &err), err);
    add_rule("ack.keep_paused", g_unknown, 1, 1);
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, l, &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, l, &err), err);
    mq_lease_destroy(l);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"G\", \"priority\": -1, \"token\": null}"), 1);
    tq_publish(t, "G", "again", 0);
    tq_expect_empty(t, 0);
    ASSERT_MQ(MQ_OK, mq_resume_group(t->queue, "G", &err), err);
    assert_int_equal(drain(t), 1);
}

/* purge.unlease: purging a paused group; the retried purge is MQ_OK and the pause stays. */
static void table_purge_unlease(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "G", "e", 0);
    ASSERT_MQ(MQ_OK, mq_pause_group(t->queue, "G", &err), err);
    add_rule("purge.unlease", g_unknown, 1, 1);
    ASSERT_MQ(MQ_ERR_CONNECT, mq_purge_group(t->queue, "G", &err), err);
    no_faults();
    ASSERT_MQ(MQ_OK, mq_purge_group(t->queue, "G", &err), err);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(paused_locks_of(t, "G"), 1);
    tq_publish(t, "G", "after", 0);
    tq_expect_empty(t, 0);
    ASSERT_MQ(MQ_OK, mq_resume_group(t->queue, "G", &err), err);
    assert_int_equal(drain(t), 1);
}

#define LOCK_BY_HAND "a lock made by hand without a partition (harel's): with partitions every lock has one"

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, teardown)
#define W(f) cmocka_unit_test_setup_teardown(f, tq_setup, teardown)
    const struct CMUnitTest tests[] = {
        T(ack_drop_reply_lost_with_a_publish_racing),
        T(ack_drop_and_recheck_replies_lost),
        T(ack_drop_not_sent_then_retried),
        T(claim_drop_reply_lost),
        T(claim_drop_reply_lost_publish_inside),
        T(claim_lease_reply_lost_is_recovered),
        T(claim_lease_not_sent),
        T(nack_reply_lost_then_retried),
        T(ack_release_reply_lost_then_retried),
        T(publish_insert_reply_lost_still_locks),
        T(publish_lock_connect_failures_are_retried),
        W(automatic_repair_heals_a_stranded_event),
        T(stale_ack_does_not_pass_attempts_on),
        T(ack_after_own_nack_does_not_pass_attempts_on),
        T(purge_then_publish_starts_at_one),
        T(dead_letters_count_that_event_only),
        T(lease_deadline_follows_the_lock),
        T(table_publish_seq),
        T(table_publish_lock),
        T(table_ack_delete),
        T(table_nack_park),
        T(table_extend_lease),
        T(table_unclaim_release),
        T(table_claim_park),
        T(table_claim_rehead),
        T(table_claim_dead_moves),
        T(table_dead_delete),
        T(table_purge),
        T(table_repair_lock),
        T(table_pause_and_resume_set),
        T(table_pause_lock),
        T(table_ack_keep_paused),
        T(table_purge_unlease),
    };
#undef T
#undef W
    static const char *const p1_only[] = {
        "claim_drop_reply_lost",
        LOCK_BY_HAND,
        "claim_drop_reply_lost_publish_inside",
        LOCK_BY_HAND,
        "table_claim_rehead",
        LOCK_BY_HAND,
        NULL,
    };
    return fault_rules_run_modes("", tests, sizeof tests / sizeof tests[0], p1_only);
}
