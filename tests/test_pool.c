/* Small connection pools: no call of the library may hold one pooled client while it
 * takes another, or a pool of k slots deadlocks under k such calls at once
 * (libmongoc's pop waits for a free client, without limit unless the URI sets
 * waitQueueTimeoutMS). Every call of the API runs on a client with maxPoolSize=1, and
 * k threads run the calls that need more than one command (dead-letter requeue,
 * claims that run the automatic repair) on a k-slot pool. Each test is bounded by an
 * alarm: a deadlock fails it (exit 1 with the test's name) instead of hanging CI. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *volatile g_running = "";

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_pool: a call did not return within the time limit (a pool deadlock?): ";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    ignored = write(2, g_running, strlen(g_running));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(1);
}

static void bound(const char *test, unsigned seconds) {
    g_running = test;
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

/* A client on `options` and the test's queue (the same database and prefix). */
static void open_small(tq *t, const char *options, mq_client **client, mq_queue **queue) {
    char *uri = tq_uri_with(options);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(uri, client, &err), err);
    free(uri);
    ASSERT_MQ(MQ_OK, tq_queue_new(*client, t->db, t->prefix, queue, &err), err);
}

static mq_lease *claim(mq_queue *q) {
    mq_error err;
    mq_lease *l = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(q, "w", 30, 0, &l, &err), err);
    return l;
}

/* Every call of the API, once, on a pool of one. */
static void every_call_on_a_one_slot_pool(void **state) {
    tq *t = *state;
    bound("every_call_on_a_one_slot_pool", 60);
    mq_client *client;
    mq_queue *q;
    open_small(t, "maxPoolSize=1", &client, &q);
    mq_error err;
    int64_t seq = 0, n = 0;

    ASSERT_MQ(MQ_OK, mq_publish(q, "a", "1", 1, 0, &seq, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_at(q, "b", "2", 1, 1, mq_queue_now(q) - 1, &seq, &err), err);
    mq_batch *batch;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "c", "3", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "c", "4", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(q, batch, &seq, &err), err);
    mq_batch_destroy(batch);

    mq_lease *l = claim(q);
    ASSERT_MQ(MQ_OK, mq_extend(q, l, 30, &err), err);
    ASSERT_MQ(MQ_OK, mq_unclaim(q, l, &err), err);
    mq_lease_destroy(l);
    ASSERT_MQ(MQ_OK, mq_claim_batch(q, "w", 30, 0, 2, &l, &err), err);
    ASSERT_MQ(MQ_OK, mq_ack(q, l, &err), err);
    mq_lease_destroy(l);
    ASSERT_MQ(MQ_OK, mq_claim_wait(q, "w", 30, 0, 1.0, &l, &err), err);
    ASSERT_MQ(MQ_OK, mq_nack(q, l, 0, &err), err);
    mq_lease_destroy(l);
    mq_cancel *cancel;
    ASSERT_MQ(MQ_OK, mq_cancel_new(&cancel, &err), err);
    ASSERT_MQ(MQ_OK, mq_claim_wait_cancel(q, "w", 30, 0, 1, 1.0, cancel, &l, &err), err);
    ASSERT_MQ(MQ_OK, mq_ack(q, l, &err), err);
    mq_lease_destroy(l);
    mq_cancel_destroy(cancel);

    /* what is left acked (which groups those are depends on the partitions' turns),
     * then one event to dead-letter */
    while (mq_claim(q, "w", 30, 0, &l, &err) == MQ_OK) {
        ASSERT_MQ(MQ_OK, mq_ack(q, l, &err), err);
        mq_lease_destroy(l);
    }
    ASSERT_MQ(MQ_OK, mq_publish(q, "d", "5", 1, 0, &seq, &err), err);

    /* a dead letter and its requeue: requeue publishes (3 more commands) on its own
     * connection */
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(q, 1, &err), err);
    l = claim(q);
    const int64_t dead_seq = mq_lease_seq(l);
    ASSERT_MQ(MQ_OK, mq_nack(q, l, 0, &err), err);
    mq_lease_destroy(l);
    while (mq_claim(q, "w", 30, 0, &l, &err) == MQ_OK) { /* moves the head to the dead letters */
        ASSERT_MQ(MQ_OK, mq_ack(q, l, &err), err);
        mq_lease_destroy(l);
    }
    ASSERT_MQ(MQ_OK, mq_dead_count(q, &n, &err), err);
    assert_int_equal(n, 1);
    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_dead_list_json(q, 10, &json, &err), err);
    mq_free(json);
    ASSERT_MQ(MQ_OK, mq_dead_requeue(q, dead_seq, &seq, &err), err);
    ASSERT_MQ(MQ_OK, mq_dead_purge(q, &n, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(q, 0, &err), err);

    ASSERT_MQ(MQ_OK, mq_stats_json(q, &json, &err), err);
    mq_free(json);
    ASSERT_MQ(MQ_OK, mq_peek_json(q, NULL, 10, &json, &err), err);
    mq_free(json);
    ASSERT_MQ(MQ_OK, mq_repair(q, &n, &err), err);
    ASSERT_MQ(MQ_OK, mq_purge_group(q, "a", &err), err);

    /* the automatic repair inside an empty claim: on the claim's own connection */
    ASSERT_MQ(MQ_OK, mq_purge_group(q, "c", &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(q, 0.01, &err), err);
    l = NULL;
    while (mq_claim(q, "w", 30, 0, &l, &err) == MQ_OK) {
        ASSERT_MQ(MQ_OK, mq_ack(q, l, &err), err);
        mq_lease_destroy(l);
    }
    tq_sleep(0.05);
    uint64_t runs = 0;
    ASSERT_MQ(MQ_EMPTY, mq_claim(q, "w", 30, 0, &l, &err), err);
    mq_queue_repair_counts(q, &runs, NULL);
    assert_true(runs >= 1);

    ASSERT_MQ(MQ_OK, mq_queue_drop(q, &err), err);
    mq_queue_destroy(q);
    mq_client_destroy(client);
    alarm(0);
}

/* k threads, each requeueing dead letters and claiming empty with the automatic
 * repair due, on a pool of k slots: every call holds one client at most. */
typedef struct {
    tq *t;
    mq_queue *q;
    int failures; /* calls that did not return what they should (asserted after) */
} shared;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void failed(shared *s) {
    pthread_mutex_lock(&g_mu);
    s->failures++;
    pthread_mutex_unlock(&g_mu);
}

static void requeue_and_repair(void *arg, int index) {
    shared *s = arg;
    char group[16];
    snprintf(group, sizeof group, "g%d", index);
    for (int round = 0; round < 5; round++) {
        mq_error err;
        int64_t seq = 0;
        if (mq_publish(s->q, group, "e", 1, 0, &seq, &err) != MQ_OK) failed(s);
        /* to the dead letters: max attempts is 1, so a nack and the next claim move it */
        mq_lease *l = NULL;
        mq_status st = mq_claim(s->q, "w", 30, 0, &l, &err);
        if (st == MQ_OK) {
            if (mq_nack(s->q, l, 0, &err) != MQ_OK) failed(s);
            mq_lease_destroy(l);
        }
        st = mq_claim(s->q, "w", 30, 0, &l, &err); /* moves a head, maybe claims another */
        if (st == MQ_OK) {
            if (mq_ack(s->q, l, &err) != MQ_OK) failed(s);
            mq_lease_destroy(l);
        } else if (st != MQ_EMPTY) {
            failed(s);
        }
        int64_t fresh = 0;
        st = mq_dead_requeue(s->q, seq, &fresh, &err);
        if (st != MQ_OK && st != MQ_ERR_ARG) failed(s); /* ARG: another thread's claim had not moved it yet */
        while (mq_claim(s->q, "w", 30, 0, &l, &err) == MQ_OK) {
            if (mq_ack(s->q, l, &err) != MQ_OK) failed(s);
            mq_lease_destroy(l);
        }
    }
}

static void k_threads_on_a_k_slot_pool(void **state) {
    tq *t = *state;
    bound("k_threads_on_a_k_slot_pool", 120);
    for (int k = 1; k <= 2; k++) {
        char options[64];
        snprintf(options, sizeof options, "maxPoolSize=%d", k);
        shared s = {t, NULL, 0};
        mq_client *client;
        open_small(t, options, &client, &s.q);
        mq_error err;
        ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(s.q, 1, &err), err);
        ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(s.q, 0.001, &err), err);
        tq_run_threads(2 * k, requeue_and_repair, &s);
        assert_int_equal(s.failures, 0);
        uint64_t runs = 0;
        mq_queue_repair_counts(s.q, &runs, NULL);
        print_message("[ pool     ] maxPoolSize=%d, %d threads: %llu automatic repairs ran inside claims\n", k, 2 * k,
                      (unsigned long long)runs);
        assert_true(runs > 0);
        mq_queue_destroy(s.q);
        mq_client_destroy(client);
    }
    alarm(0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_call_on_a_one_slot_pool, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(k_threads_on_a_k_slot_pool, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
