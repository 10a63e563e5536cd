/* Faults injected between the server commands of one operation (lib/fault.hpp):
 * duplicate-key races on first use, a process that dies between two commands, and
 * the publish-during-drain race forced open by pausing one side at each step.
 * Links the static copy of the library, which has the hook. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.hpp"

/* ---- the hook: fail the nth call of a command, or pause at it ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const char *command; /* the command this rule applies to */
    int code;            /* error to inject (11000, or -1 for a dropped connection) */
    int times;           /* how many calls to fail; -1 = all */
    int calls;           /* calls of `command` seen */
    int pause;           /* pause instead of failing */
    int paused, resume;  /* the paused thread's state */
} rule;

static rule g_rule = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0};

static int hook(const char *command, void *ctx) {
    rule *r = ctx;
    pthread_mutex_lock(&r->mu);
    int code = 0;
    if (r->command != NULL && strcmp(command, r->command) == 0) {
        r->calls++;
        if (r->pause && r->calls == 1) {
            r->paused = 1;
            pthread_cond_broadcast(&r->cv);
            while (!r->resume) pthread_cond_wait(&r->cv, &r->mu);
        } else if (!r->pause && (r->times < 0 || r->calls <= r->times)) {
            code = r->code;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return code;
}

static void inject(const char *command, int code, int times) {
    pthread_mutex_lock(&g_rule.mu);
    g_rule.command = command;
    g_rule.code = code;
    g_rule.times = times;
    g_rule.calls = 0;
    g_rule.pause = 0;
    pthread_mutex_unlock(&g_rule.mu);
    mongomq_fault_set(hook, &g_rule);
}

static void pause_at(const char *command) {
    pthread_mutex_lock(&g_rule.mu);
    g_rule.command = command;
    g_rule.calls = 0;
    g_rule.pause = 1;
    g_rule.paused = 0;
    g_rule.resume = 0;
    pthread_mutex_unlock(&g_rule.mu);
    mongomq_fault_set(hook, &g_rule);
}

static void wait_paused(void) {
    pthread_mutex_lock(&g_rule.mu);
    while (!g_rule.paused) pthread_cond_wait(&g_rule.cv, &g_rule.mu);
    pthread_mutex_unlock(&g_rule.mu);
}

static void resume_paused(void) {
    pthread_mutex_lock(&g_rule.mu);
    g_rule.resume = 1;
    g_rule.command = NULL; /* later calls of the command run freely */
    pthread_cond_broadcast(&g_rule.cv);
    pthread_mutex_unlock(&g_rule.mu);
}

static int calls(void) {
    pthread_mutex_lock(&g_rule.mu);
    int n = g_rule.calls;
    pthread_mutex_unlock(&g_rule.mu);
    return n;
}

static int teardown(void **state) {
    mongomq_fault_set(NULL, NULL);
    return tq_teardown(state);
}

/* ---- duplicate keys: concurrent first upserts (mongo-java-server never raises
 * them, so they are injected) ---- */

static void duplicate_key_on_lock_upsert_is_retried(void **state) {
    tq *t = *state;
    inject("publish.lock", 11000, 1);
    int64_t seq = tq_publish(t, "g", "e", 0);
    assert_int_equal(calls(), 2); /* failed once, retried once */
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    mq_lease_destroy(lease);
}

static void duplicate_key_on_counter_upsert_is_retried(void **state) {
    tq *t = *state;
    inject("publish.seq", 11000, 2);
    int64_t first = tq_publish(t, "g", "e1", 0);
    assert_int_equal(calls(), 3);
    int64_t second = tq_publish(t, "g", "e2", 0);
    assert_int_equal(second, first + 1); /* no seq was skipped or reused */
}

static void lasting_duplicate_key_is_an_error(void **state) {
    tq *t = *state;
    inject("publish.lock", 11000, -1);
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_ERR_SERVER, mq_publish(t->queue, "g", "e", 1, 0, &seq, &err), err);
    assert_int_equal(err.server_code, 11000);
    assert_non_null(strstr(err.message, "publish.lock"));
    assert_int_equal(calls(), 5); /* bounded retries */
    assert_int_equal(seq, 0);
}

/* ---- a process that dies between two commands loses nothing ---- */

/* The ack deleted the event, then lost the connection before releasing the group:
 * the group stays held until the lease expires, then the next event is delivered. */
static void ack_dies_after_delete(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e1", 0);
    int64_t second = tq_publish(t, "g", "e2", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    inject("ack.release", -1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0); /* held until the lease runs out */
    tq_advance(t, 31);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), second);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

/* The same on the drain path: the last event is gone, its lock is not; the claim
 * that meets the expired, empty lock drops it. */
static void drain_dies_before_drop(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "only", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    inject("ack.drop", -1, 1);
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_ack(t->queue, lease, &err), err);
    mq_lease_destroy(lease);
    tq_advance(t, 31);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
}

/* A claim that leased a group and died before reading its head: the lease expires
 * and the head is delivered (attempts counts that first lease too). */
static void claim_dies_after_lease(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "e", 0);
    inject("claim.head", -1, 1);
    mq_lease *lease = NULL;
    mq_error err;
    ASSERT_MQ(MQ_ERR_CONNECT, mq_claim(t->queue, "w", 30, 0, &lease, &err), err);
    assert_null(lease);
    tq_expect_empty(t, 0);
    tq_advance(t, 31);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 2);
    mq_lease_destroy(lease);
}

/* A publisher that died between its insert and its lock upsert leaves an event whose
 * group has no lock; the group's next publish makes both claimable, in order. (A
 * server error stands for the death: a dropped connection is retried.) */
static void publish_dies_before_lock(void **state) {
    tq *t = *state;
    inject("publish.lock", 96 /* OperationFailed: not a step-down */, 1);
    mq_error err;
    int64_t orphan = 0;
    ASSERT_MQ(MQ_ERR_SERVER, mq_publish(t->queue, "g", "first", 5, 0, &orphan, &err), err);
    assert_int_equal(tq_count(t, "messages", "{}"), 1); /* inserted, but no lock */
    tq_expect_empty(t, 0);
    int64_t next = tq_publish(t, "g", "second", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_true(mq_lease_seq(lease) < next); /* the orphan first */
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), next);
    mq_lease_destroy(lease);
}

/* ---- the publish-during-drain race, forced open at each step ---- */

typedef struct {
    tq *t;
    mq_lease *lease;
    mq_status status;
    int64_t seq;
} side;

static void *ack_side(void *arg) {
    side *s = arg;
    mq_error err;
    s->status = mq_ack(s->t->queue, s->lease, &err);
    return NULL;
}

static void *publish_side(void *arg) {
    side *s = arg;
    mq_error err;
    s->status = mq_publish(s->t->queue, "g", "late", 4, 0, &s->seq, &err);
    return NULL;
}

static void *claim_side(void *arg) {
    side *s = arg;
    mq_error err;
    s->status = mq_claim(s->t->queue, "w", 30, 0, &s->lease, &err);
    return NULL;
}

/* Pauses `slow` at `command`, runs `fast` whole meanwhile, then lets `slow` finish;
 * afterwards the late event must be claimable (an orphan would be MQ_EMPTY). */
static void race(tq *t, const char *command, void *(*slow)(void *), side *slow_side, void *(*fast)(void *),
                 side *fast_side) {
    pause_at(command);
    pthread_t thread;
    pthread_create(&thread, NULL, slow, slow_side);
    wait_paused();
    fast(fast_side);
    resume_paused();
    pthread_join(thread, NULL);
    mongomq_fault_set(NULL, NULL);
    (void)t;
}

static void expect_late_event(tq *t, int64_t seq) {
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

/* The ack paused before it deletes the lock; a whole publish runs (its upsert finds
 * the lock and does nothing); the ack deletes the lock, and its re-check finds the
 * new event and re-creates the lock. */
static void drain_race_publish_before_drop(void **state) {
    tq *t = *state;
    side a = {t, NULL, MQ_ERR_INTERNAL, 0}, p = {t, NULL, MQ_ERR_INTERNAL, 0};
    tq_publish(t, "g", "last", 0);
    a.lease = tq_claim(t, 30, 0);
    race(t, "ack.drop", ack_side, &a, publish_side, &p);
    assert_int_equal(a.status, MQ_OK);
    assert_int_equal(p.status, MQ_OK);
    mq_lease_destroy(a.lease);
    expect_late_event(t, p.seq);
}

/* The ack paused after deleting the lock, before its re-check; the publish's upsert
 * creates a fresh lock, the re-check sees the event, its upsert finds the lock. */
static void drain_race_publish_between_drop_and_recheck(void **state) {
    tq *t = *state;
    side a = {t, NULL, MQ_ERR_INTERNAL, 0}, p = {t, NULL, MQ_ERR_INTERNAL, 0};
    tq_publish(t, "g", "last", 0);
    a.lease = tq_claim(t, 30, 0);
    race(t, "ack.recheck", ack_side, &a, publish_side, &p);
    assert_int_equal(a.status, MQ_OK);
    assert_int_equal(p.status, MQ_OK);
    mq_lease_destroy(a.lease);
    expect_late_event(t, p.seq);
}

/* The publish paused between its insert and its upsert while a whole ack drains the
 * group: the ack's re-check sees the inserted event and re-creates the lock. This is
 * the interleaving that orphans an event in harel. */
static void drain_race_ack_inside_publish(void **state) {
    tq *t = *state;
    side a = {t, NULL, MQ_ERR_INTERNAL, 0}, p = {t, NULL, MQ_ERR_INTERNAL, 0};
    tq_publish(t, "g", "last", 0);
    a.lease = tq_claim(t, 30, 0);
    race(t, "publish.lock", publish_side, &p, ack_side, &a);
    assert_int_equal(a.status, MQ_OK);
    assert_int_equal(p.status, MQ_OK);
    mq_lease_destroy(a.lease);
    expect_late_event(t, p.seq);
}

/* The same for the claim that drops a stale, empty lock: paused between its drop and
 * its re-check while a publish runs; the event must stay claimable. */
static void stale_drop_race_publish_between_drop_and_recheck(void **state) {
    tq *t = *state;
    side c = {t, NULL, MQ_ERR_INTERNAL, 0}, p = {t, NULL, MQ_ERR_INTERNAL, 0};
    tq_insert_json(t, "locks", "{\"_id\": \"g\", \"available_at\": 0.0, \"token\": null, \"priority\": 0}");
    race(t, "claim.recheck", claim_side, &c, publish_side, &p);
    assert_int_equal(p.status, MQ_OK);
    /* The claim went on after its drop and found the re-created group. */
    assert_int_equal(c.status, MQ_OK);
    assert_int_equal(mq_lease_seq(c.lease), p.seq);
    tq_ack(t, c.lease);
    mq_lease_destroy(c.lease);
    tq_expect_empty(t, 0);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, teardown)
    const struct CMUnitTest tests[] = {
        T(duplicate_key_on_lock_upsert_is_retried),
        T(duplicate_key_on_counter_upsert_is_retried),
        T(lasting_duplicate_key_is_an_error),
        T(ack_dies_after_delete),
        T(drain_dies_before_drop),
        T(claim_dies_after_lease),
        T(publish_dies_before_lock),
        T(drain_race_publish_before_drop),
        T(drain_race_publish_between_drop_and_recheck),
        T(drain_race_ack_inside_publish),
        T(stale_drop_race_publish_between_drop_and_recheck),
    };
#undef T
    return cmocka_run_group_tests_name("faults", tests, NULL, NULL);
}
