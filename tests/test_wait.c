/* Waiting claims (lib/wait.cpp): mq_claim_wait returns at once when a group is due,
 * at the timeout when none comes, and soon after a publish, a release, a park or a
 * lease running out; it does not hammer the server while idle; mq_queue_interrupt
 * wakes every waiter, also from a signal handler; a refused or failing change stream
 * is logged once, and once more when it comes back, and its mode can be read. Every
 * test passes with and without
 * change streams on the server (scripts/test-server.sh start [--oplog]); the tests
 * print which mode they saw, and the fault hook forces the fallback where a test
 * needs it (hence the static library). Times are printed, never asserted from above:
 * only command counts are. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault.hpp"

/* Lower bounds on elapsed time allow for clock granularity. */
#define EPS 0.02

/* ---- the server's mode, probed with the raw client ---- */

static int g_streams = -1;

static int server_has_change_streams(tq *t) {
    if (g_streams >= 0) return g_streams;
    mongoc_collection_t *coll = tq_collection(t, "probe");
    bson_t pipeline = BSON_INITIALIZER;
    mongoc_change_stream_t *stream = mongoc_collection_watch(coll, &pipeline, NULL);
    bson_error_t error;
    g_streams = !mongoc_change_stream_error_document(stream, &error, NULL);
    mongoc_change_stream_destroy(stream);
    mongoc_collection_destroy(coll);
    printf("[ wait     ] server %s: mq_claim_wait runs in %s mode\n",
           g_streams ? "has change streams" : "has no change streams", g_streams ? "watcher" : "fallback");
    return g_streams;
}

static const char *mode(tq *t) { return server_has_change_streams(t) ? "watcher" : "fallback"; }

/* ---- the fault hook: make "wait.watch" fail (code > 0: a server error, -1: a
 * dropped connection), counting its calls. Runs on the watcher thread. ---- */

static pthread_mutex_t g_hook_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_watch_code;
static int g_watch_calls;

static int hook(const char *command, void *ctx) {
    (void)ctx;
    if (strcmp(command, "wait.watch") != 0) return 0;
    pthread_mutex_lock(&g_hook_mu);
    g_watch_calls++;
    int code = g_watch_code;
    pthread_mutex_unlock(&g_hook_mu);
    return code;
}

static void fail_watch(int code) {
    pthread_mutex_lock(&g_hook_mu);
    g_watch_code = code;
    g_watch_calls = 0;
    pthread_mutex_unlock(&g_hook_mu);
    mongomq_fault_set(hook, NULL);
}

static int watch_calls(void) {
    pthread_mutex_lock(&g_hook_mu);
    int n = g_watch_calls;
    pthread_mutex_unlock(&g_hook_mu);
    return n;
}

static int setup(void **state) {
    int rc = tq_setup(state);
    server_has_change_streams(*state);
    return rc;
}

static int teardown(void **state) {
    mongomq_fault_set(NULL, NULL);
    return tq_teardown(state);
}

/* A second queue handle on the test's queue, on a client of its own (its command
 * count is its own). */
typedef struct {
    mq_client *client;
    mq_queue *queue;
} handle;

static handle open_handle(tq *t) {
    handle h;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(test_uri(), &h.client, &err), err);
    ASSERT_MQ(MQ_OK, tq_queue_new(h.client, t->db, t->prefix, &h.queue, &err), err);
    return h;
}

static void close_handle(handle *h) {
    mq_queue_destroy(h->queue);
    mq_client_destroy(h->client);
}

/* ---- a thread that publishes (or acks) after a pause ---- */

typedef struct {
    mq_queue *queue;
    double delay; /* seconds before acting */
    const char *group;
    int priority;
    const mq_lease *ack; /* ack this lease instead of publishing */
    mq_status status;
    double done_at; /* monotonic time when the call returned */
    pthread_t thread;
} actor;

static void *actor_main(void *p) {
    actor *a = p;
    tq_sleep(a->delay);
    mq_error err;
    if (a->ack != NULL)
        a->status = mq_ack(a->queue, a->ack, &err);
    else
        a->status = mq_publish(a->queue, a->group, "late", 4, a->priority, NULL, &err);
    a->done_at = tq_monotonic();
    return NULL;
}

static void start_actor(actor *a) { assert_int_equal(pthread_create(&a->thread, NULL, actor_main, a), 0); }

static void join_actor(actor *a) {
    pthread_join(a->thread, NULL);
    assert_int_equal(a->status, MQ_OK);
}

/* ---- a thread that waits ---- */

typedef struct {
    mq_queue *queue;
    double timeout;
    mq_status status;
    mq_lease *lease;
    mq_error err;
    double returned_at;
    pthread_t thread;
} waiter;

static void *waiter_main(void *p) {
    waiter *w = p;
    w->lease = (mq_lease *)&w->err; /* must come back NULL unless MQ_OK */
    w->status = mq_claim_wait(w->queue, "waiter", 30, 0, w->timeout, &w->lease, &w->err);
    w->returned_at = tq_monotonic();
    return NULL;
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- 1. a due group: at once; timeout 0: one claim, nothing else ---- */

static void due_group_returns_at_once(void **state) {
    tq *t = *state;
    int64_t seq = tq_publish(t, "g", "now", 0);
    mq_error err;
    mq_lease *lease = NULL;
    double t0 = tq_monotonic();
    ASSERT_MQ(MQ_OK, mq_claim_wait(t->queue, "w", 30, 0, 10, &lease, &err), err);
    double took = tq_monotonic() - t0;
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(err.status, MQ_OK);
    printf("[ wait     ] %s: due group claimed in %.1f ms\n", mode(t), took * 1e3);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

static void zero_timeout_is_one_claim(void **state) {
    tq *t = *state;
    handle h = open_handle(t);
    uint64_t before = mq_client_command_count(h.client);
    mq_error err;
    mq_lease *lease = (mq_lease *)&err;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, NULL, 30, 0, 0, &lease, &err), err);
    assert_null(lease);
    tq_sleep(0.3); /* a watcher, had one started, would have sent its aggregate by now */
    assert_int_equal(mq_client_command_count(h.client) - before, 1); /* claim.lease, as mq_claim */
    close_handle(&h);
}

/* ---- 2. nothing due: MQ_EMPTY after the timeout ---- */

static void times_out_with_empty(void **state) {
    tq *t = *state;
    tq_publish(t, "low", "below the floor", 1); /* due, but not at floor 2 */
    const double timeouts[] = {0.05, 0.5, 1.2};
    for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
        mq_error err;
        mq_lease *lease = (mq_lease *)&err;
        double t0 = tq_monotonic();
        ASSERT_MQ(MQ_EMPTY, mq_claim_wait(t->queue, "w", 30, 2, timeouts[i], &lease, &err), err);
        double took = tq_monotonic() - t0;
        assert_null(lease);
        assert_int_equal(err.status, MQ_EMPTY);
        assert_true(took >= timeouts[i] - EPS);
        printf("[ wait     ] %s: timeout %.2f s returned MQ_EMPTY after %.3f s\n", mode(t), timeouts[i], took);
    }
}

/* ---- 3. a publish (or a release) from another thread wakes the waiter ---- */

/* Publishes from another thread, `rounds` times, while this thread waits; each must
 * be claimed by the waiter. Prints the latencies under `label`. */
static void publish_while_waiting(tq *t, int rounds, double step, const char *label) {
    double latency[8];
    assert_true(rounds <= 8);
    for (int round = 0; round < rounds; round++) {
        char group[32];
        snprintf(group, sizeof group, "g%d", round);
        actor a = {.queue = t->queue, .delay = 0.3 + step * round, .group = group};
        start_actor(&a);
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err);
        double got_at = tq_monotonic();
        join_actor(&a);
        ASSERT_MQ(MQ_OK, st, err);
        assert_string_equal(mq_lease_group(lease), group);
        latency[round] = got_at - a.done_at; /* < 0: claimed before mq_publish returned */
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    qsort(latency, (size_t)rounds, sizeof latency[0], cmp_double);
    printf("[ wait     ] %s: publish -> claimed: min %.1f ms, median %.1f ms, max %.1f ms\n", label, latency[0] * 1e3,
           latency[rounds / 2] * 1e3, latency[rounds - 1] * 1e3);
}

/* One publish from another thread while `q` waits: claimed, and soon (a hint). */
static void publish_while_waiting_on(tq *t, mq_queue *q) {
    actor a = {.queue = t->queue, .delay = 0.3, .group = "after"};
    start_actor(&a);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(q, "w", 30, 0, 20, &lease, &err);
    double got_at = tq_monotonic();
    join_actor(&a);
    ASSERT_MQ(MQ_OK, st, err);
    assert_string_equal(mq_lease_group(lease), "after");
    printf("[ wait     ] live again: publish -> claimed: %.1f ms\n", (got_at - a.done_at) * 1e3);
    mq_lease_destroy(lease);
}

static void publish_while_waiting_is_claimed(void **state) {
    tq *t = *state;
    publish_while_waiting(t, 5, 0.07, mode(t));
}

static void release_by_ack_is_claimed(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "first", 0);
    int64_t second = tq_publish(t, "g", "second", 0);
    mq_lease *held = tq_claim(t, 60, 0); /* the group is held for a minute */
    actor a = {.queue = t->queue, .delay = 0.3, .ack = held};
    start_actor(&a);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err);
    double got_at = tq_monotonic();
    join_actor(&a);
    ASSERT_MQ(MQ_OK, st, err);
    assert_int_equal(mq_lease_seq(lease), second);
    printf("[ wait     ] %s: ack releasing a group -> claimed: %.1f ms\n", mode(t), (got_at - a.done_at) * 1e3);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    mq_lease_destroy(held);
}

static void floor_ignores_lower_priorities(void **state) {
    tq *t = *state;
    actor low = {.queue = t->queue, .delay = 0.2, .group = "low", .priority = 1};
    actor high = {.queue = t->queue, .delay = 0.5, .group = "high", .priority = 4};
    start_actor(&low);
    start_actor(&high);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(t->queue, "w", 30, 3, 20, &lease, &err);
    join_actor(&low);
    join_actor(&high);
    ASSERT_MQ(MQ_OK, st, err);
    assert_string_equal(mq_lease_group(lease), "high");
    mq_lease_destroy(lease);
}

/* On MongoDB a drop invalidates the change stream; the watcher opens a new one. */
static void drop_while_waiting(void **state) {
    tq *t = *state;
    tq_publish(t, "old", "e", 0);
    mq_lease *old = tq_claim(t, 30, 0);
    mq_lease_destroy(old);
    handle other = open_handle(t);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(t->queue, "w", 30, 0, 0.3, &lease, &err), err); /* watcher up */
    ASSERT_MQ(MQ_OK, mq_queue_drop(other.queue, &err), err);
    actor a = {.queue = other.queue, .delay = 0.4, .group = "new"};
    start_actor(&a);
    mq_status st = mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err);
    double got_at = tq_monotonic();
    join_actor(&a);
    ASSERT_MQ(MQ_OK, st, err);
    assert_string_equal(mq_lease_group(lease), "new");
    printf("[ wait     ] %s: after mq_queue_drop, publish -> claimed: %.1f ms\n", mode(t), (got_at - a.done_at) * 1e3);
    mq_lease_destroy(lease);
    close_handle(&other);
}

/* Waiters on one queue share a publisher's events: each exactly once. */
typedef struct {
    mq_queue *queue;
    pthread_mutex_t mu;
    int seen[64]; /* deliveries per event index */
    int total, expected, errors;
    char first_error[600];
} share;

static void share_worker(void *arg, int index) {
    share *sh = arg;
    char worker[16];
    snprintf(worker, sizeof worker, "w%d", index);
    for (;;) {
        pthread_mutex_lock(&sh->mu);
        int done = sh->total >= sh->expected || sh->errors > 0;
        pthread_mutex_unlock(&sh->mu);
        if (done) return;
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim_wait(sh->queue, worker, 30, 0, 0.5, &lease, &err);
        if (st == MQ_EMPTY) continue;
        if (st == MQ_OK) {
            size_t len = 0;
            const char *event = mq_lease_event(lease, &len);
            char text[16] = "";
            if (len < sizeof text) memcpy(text, event, len); /* not NUL-terminated */
            int n = len < sizeof text ? atoi(text) : -1;
            st = mq_ack(sh->queue, lease, &err);
            mq_lease_destroy(lease);
            pthread_mutex_lock(&sh->mu);
            if (n >= 0 && n < 64) sh->seen[n]++;
            sh->total++;
            pthread_mutex_unlock(&sh->mu);
            if (st == MQ_OK) continue;
        }
        pthread_mutex_lock(&sh->mu);
        if (sh->errors++ == 0)
            snprintf(sh->first_error, sizeof sh->first_error, "%s: %s", mq_status_name(st), err.message);
        pthread_mutex_unlock(&sh->mu);
        return;
    }
}

typedef struct {
    share *sh;
    int count;
} share_publisher;

static void *share_publish(void *p) {
    share_publisher *sp = p;
    for (int i = 0; i < sp->count; i++) {
        char group[16], event[16];
        snprintf(group, sizeof group, "g%d", i % 5);
        snprintf(event, sizeof event, "%d", i);
        mq_error err;
        if (mq_publish(sp->sh->queue, group, event, strlen(event), 0, NULL, &err) != MQ_OK) {
            pthread_mutex_lock(&sp->sh->mu);
            if (sp->sh->errors++ == 0)
                snprintf(sp->sh->first_error, sizeof sp->sh->first_error, "publish: %s", err.message);
            pthread_mutex_unlock(&sp->sh->mu);
            return NULL;
        }
        tq_sleep(0.02);
    }
    return NULL;
}

static void many_waiters_share_the_work(void **state) {
    tq *t = *state;
    share sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    sh.queue = t->queue;
    sh.expected = 60;
    share_publisher sp = {&sh, sh.expected};
    pthread_t publisher;
    assert_int_equal(pthread_create(&publisher, NULL, share_publish, &sp), 0);
    tq_run_threads(6, share_worker, &sh);
    pthread_join(publisher, NULL);
    if (sh.errors > 0) fail_msg("%d errors, first: %s", sh.errors, sh.first_error);
    assert_int_equal(sh.total, sh.expected);
    for (int i = 0; i < sh.expected; i++) assert_int_equal(sh.seen[i], 1);
    pthread_mutex_destroy(&sh.mu);
}

/* ---- 4. idle: few commands ---- */

/* Commands a waiter's own client sends while it waits `seconds` on an idle queue. */
static uint64_t idle_commands(tq *t, double seconds) {
    handle h = open_handle(t);
    uint64_t before = mq_client_command_count(h.client);
    mq_error err;
    mq_lease *lease = NULL;
    double t0 = tq_monotonic();
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "idle", 30, 0, seconds, &lease, &err), err);
    assert_true(tq_monotonic() - t0 >= seconds - EPS);
    uint64_t n = mq_client_command_count(h.client) - before;
    close_handle(&h);
    return n;
}

static void idle_waiter_sends_few_commands(void **state) {
    tq *t = *state;
    const double seconds = 2.0;
    /* The queue is not empty: a group is leased for a minute, so the waiter's
     * next-due lookup finds something, just not soon. */
    tq_publish(t, "held", "e", 0);
    mq_lease *held = tq_claim(t, 60, 0);

    uint64_t usual = idle_commands(t, seconds);
    fail_watch(40573); /* "$changeStream is only supported on replica sets" */
    uint64_t fallback = idle_commands(t, seconds);
    assert_int_equal(watch_calls(), 1);
    mongomq_fault_set(NULL, NULL);

    printf("[ wait     ] idle %.0f s: %llu commands in %s mode, %llu in fallback mode (forced)\n", seconds,
           (unsigned long long)usual, mode(t), (unsigned long long)fallback);
    /* Backing off to 50 ms, a round being a claim and a next-due lookup: about 80.
     * Polling without sleeping would be thousands. */
    assert_true(fallback < 100);
    assert_true(usual < 100);
    mq_lease_destroy(held);
}

/* ---- 5. a park or a lease running out wakes the waiter at that time ---- */

static void nack_delay_wakes_when_park_ends(void **state) {
    tq *t = *state;
    const double delay = 0.6;
    int64_t seq = tq_publish(t, "g", "again", 0);
    mq_lease *first = tq_claim(t, 30, 0);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, first, delay, &err), err);
    double parked_at = tq_monotonic();
    mq_lease_destroy(first);

    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err), err);
    double took = tq_monotonic() - parked_at;
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 2);
    assert_true(took >= delay - EPS);
    printf("[ wait     ] %s: park of %.1f s -> claimed after %.3f s (%.1f ms late)\n", mode(t), delay, took,
           (took - delay) * 1e3);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

static void lease_running_out_wakes_waiter(void **state) {
    tq *t = *state;
    const double visibility = 0.6;
    int64_t seq = tq_publish(t, "g", "abandoned", 0);
    mq_error err;
    mq_lease *abandoned = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(t->queue, "crashed", visibility, 0, &abandoned, &err), err);
    double leased_at = tq_monotonic();
    mq_lease_destroy(abandoned); /* never acked: no write tells anyone */

    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err), err);
    double took = tq_monotonic() - leased_at;
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 2);
    assert_true(took >= visibility - EPS);
    printf("[ wait     ] %s: lease of %.1f s ran out -> claimed after %.3f s (%.1f ms late)\n", mode(t), visibility,
           took, (took - visibility) * 1e3);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

static void scheduled_event_wakes_waiter(void **state) {
    tq *t = *state;
    const double in = 0.6;
    mq_error err;
    int64_t seq = 0;
    double not_before = wall_now() + mq_queue_clock_offset(t->queue) + in;
    double published_at = tq_monotonic();
    ASSERT_MQ(MQ_OK, mq_publish_at(t->queue, "later", "e", 1, 0, not_before, &seq, &err), err);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err), err);
    double took = tq_monotonic() - published_at;
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_true(took >= in - EPS);
    printf("[ wait     ] %s: event scheduled %.1f s ahead -> claimed after %.3f s\n", mode(t), in, took);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* ---- 6. mq_queue_interrupt ---- */

static void interrupt_wakes_every_waiter(void **state) {
    tq *t = *state;
    enum { WAITERS = 4 };
    waiter w[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (waiter){.queue = t->queue, .timeout = 30};
        assert_int_equal(pthread_create(&w[i].thread, NULL, waiter_main, &w[i]), 0);
    }
    tq_sleep(0.4); /* all asleep by now */
    double interrupted_at = tq_monotonic();
    mq_queue_interrupt(t->queue);
    double slowest = 0;
    for (int i = 0; i < WAITERS; i++) {
        pthread_join(w[i].thread, NULL);
        if (w[i].status != MQ_INTERRUPTED)
            fail_msg("waiter %d: %s: %s", i, mq_status_name(w[i].status), w[i].err.message);
        assert_null(w[i].lease);
        assert_int_equal(w[i].err.status, MQ_INTERRUPTED);
        assert_non_null(strstr(w[i].err.message, "mq_queue_interrupt"));
        if (w[i].returned_at - interrupted_at > slowest) slowest = w[i].returned_at - interrupted_at;
    }
    printf("[ wait     ] %s: interrupt -> all %d waiters returned within %.1f ms\n", mode(t), WAITERS, slowest * 1e3);

    /* Later waits return at once, without a command, even with a group due. */
    tq_publish(t, "g", "e", 0);
    mq_queue_interrupt(t->queue); /* twice is fine */
    tq_sleep(0.5);                /* the watcher ends within one getMore */
    uint64_t before = mq_client_command_count(t->client);
    mq_error err;
    mq_lease *lease = (mq_lease *)&err;
    ASSERT_MQ(MQ_INTERRUPTED, mq_claim_wait(t->queue, "w", 30, 0, 30, &lease, &err), err);
    assert_null(lease);
    ASSERT_MQ(MQ_INTERRUPTED, mq_claim_wait(t->queue, "w", 30, 0, 0, &lease, &err), err);
    tq_sleep(0.5); /* nothing at all: the watcher has stopped */
    assert_int_equal(mq_client_command_count(t->client), before);

    /* Everything else works. */
    tq_publish(t, "g2", "e", 0);
    lease = tq_claim(t, 30, 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    mq_queue_interrupt(NULL); /* nothing */
}

/* ---- 7. ... from a signal handler ---- */

static mq_queue *volatile g_signal_queue;

static void on_sigusr1(int sig) {
    (void)sig;
    int saved = errno;
    mq_queue_interrupt(g_signal_queue);
    if (errno != saved) abort(); /* async-signal-safe functions keep errno */
}

typedef struct {
    int to_waiter; /* 1: the signal goes to the waiting thread; 0: to this one */
    pthread_t waiter;
    double sent_at;
} signaller;

static void *signaller_main(void *p) {
    signaller *s = p;
    tq_sleep(0.4);
    s->sent_at = tq_monotonic();
    pthread_kill(s->to_waiter ? s->waiter : pthread_self(), SIGUSR1);
    return NULL;
}

/* SIGUSR1's handler interrupts the queue while this thread waits on it, in watcher
 * and in fallback mode. to_waiter: the signal interrupts the waiter's own sleep (a
 * poll or a condition-variable wait); otherwise another thread handles it and the
 * waiter must notice the flag by itself. */
static void interrupt_from_signal(tq *t, int to_waiter, const char *how) {
    struct sigaction action, old;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_sigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; /* no SA_RESTART: the waiter's poll sees EINTR */
    assert_int_equal(sigaction(SIGUSR1, &action, &old), 0);
    for (int fallback = 0; fallback <= 1; fallback++) {
        handle h = open_handle(t); /* a fresh queue: not interrupted yet, its own watcher */
        if (fallback) fail_watch(40573);
        g_signal_queue = h.queue;
        signaller s = {.to_waiter = to_waiter, .waiter = pthread_self()};
        pthread_t thread;
        assert_int_equal(pthread_create(&thread, NULL, signaller_main, &s), 0);
        mq_error err;
        mq_lease *lease = (mq_lease *)&err;
        mq_status st = mq_claim_wait(h.queue, "w", 30, 0, 30, &lease, &err);
        double returned_at = tq_monotonic();
        pthread_join(thread, NULL);
        ASSERT_MQ(MQ_INTERRUPTED, st, err);
        assert_null(lease);
        printf("[ wait     ] %s mode: SIGUSR1 %s -> MQ_INTERRUPTED after %.1f ms\n", fallback ? "fallback" : mode(t),
               how, (returned_at - s.sent_at) * 1e3);
        mongomq_fault_set(NULL, NULL);
        g_signal_queue = NULL;
        close_handle(&h);
    }
    sigaction(SIGUSR1, &old, NULL);
}

static void interrupt_from_signal_handler(void **state) { interrupt_from_signal(*state, 1, "to the waiting thread"); }

static void interrupt_from_signal_on_other_thread(void **state) {
    interrupt_from_signal(*state, 0, "handled on another thread");
}

/* ---- 8. without a change stream: backing off still notices a publish ---- */

static void fallback_notices_publish(void **state) {
    tq *t = *state;
    fail_watch(40573);
    publish_while_waiting(t, 4, 0.05, "fallback mode (forced)");
    assert_int_equal(watch_calls(), 1); /* tried once, then backs off for good */
}

/* A watcher whose connection fails keeps trying (backing off meanwhile); the
 * waiters notice publishes all the same. */
static void watcher_retries_after_connection_failure(void **state) {
    tq *t = *state;
    fail_watch(-1);
    actor a = {.queue = t->queue, .delay = 1.2, .group = "g"};
    start_actor(&a);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err);
    join_actor(&a);
    ASSERT_MQ(MQ_OK, st, err);
    int calls = watch_calls();
    assert_true(calls >= 2);
    mq_lease_destroy(lease);
    printf("[ wait     ] watcher with failing connection: %d attempts in 1.2 s, publish still claimed\n", calls);
}

/* ---- 8a. what the watcher says: its mode, and the log ---- */

/* lib/wait.hpp's test hooks (in the static library; not exported from the shared). */
void mongomq_watch_set_intervals(double refused_retry_s, double down_log_after_s);
const char *mongomq_change_stream_mode(mq_queue *queue);

/* The "mongomq" domain's lines about change streams, from whichever thread logs. */
enum { LOG_LINES = 16 };
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[LOG_LINES][800];
static int g_log_count;

static void capture_log(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (strcmp(domain, "mongomq") != 0 || strstr(message, "change stream") == NULL) {
        if (level <= 1) fprintf(stderr, "libmongoc %s: %s\n", domain, message); /* as support.c's */
        return;
    }
    pthread_mutex_lock(&g_log_mu);
    if (g_log_count < LOG_LINES) snprintf(g_log[g_log_count], sizeof g_log[0], "%s", message);
    g_log_count++;
    pthread_mutex_unlock(&g_log_mu);
}

static void capture_start(void) {
    pthread_mutex_lock(&g_log_mu);
    g_log_count = 0;
    pthread_mutex_unlock(&g_log_mu);
    mq_log_set_handler(capture_log, NULL); /* the next test's setup puts support.c's back */
}

/* How many captured lines contain `what`; the first of them copied into `first`. */
static int lines_with(const char *what, char *first, size_t size) {
    int n = 0;
    if (first != NULL && size > 0) first[0] = '\0';
    pthread_mutex_lock(&g_log_mu);
    for (int i = 0; i < g_log_count && i < LOG_LINES; i++) {
        if (strstr(g_log[i], what) == NULL) continue;
        if (n++ == 0 && first != NULL && size > 0) {
            size_t len = strlen(g_log[i]) < size - 1 ? strlen(g_log[i]) : size - 1;
            memcpy(first, g_log[i], len);
            first[len] = '\0';
        }
    }
    pthread_mutex_unlock(&g_log_mu);
    return n;
}

static int log_lines(void) {
    pthread_mutex_lock(&g_log_mu);
    int n = g_log_count;
    pthread_mutex_unlock(&g_log_mu);
    return n;
}

/* Polls the mode until it reads `want` or `seconds` pass; returns the last read. */
static const char *await_mode(mq_queue *q, const char *want, double seconds) {
    double until = tq_monotonic() + seconds;
    const char *mode_now = mongomq_change_stream_mode(q);
    while (strcmp(mode_now, want) != 0 && tq_monotonic() < until) {
        tq_sleep(0.01);
        mode_now = mongomq_change_stream_mode(q);
    }
    return mode_now;
}

/* No watcher until a call may wait; then "live" (or, without change streams on the
 * server, "unsupported", said once in the log). */
static void mode_is_none_until_a_wait(void **state) {
    tq *t = *state;
    capture_start();
    handle h = open_handle(t);
    assert_string_equal(mongomq_change_stream_mode(h.queue), "none");
    assert_string_equal(mongomq_change_stream_mode(NULL), "none");
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "w", 30, 0, 0, &lease, &err), err); /* timeout 0: a claim */
    assert_string_equal(mongomq_change_stream_mode(h.queue), "none");
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "w", 30, 0, 0.2, &lease, &err), err);
    const char *want = server_has_change_streams(t) ? "live" : "unsupported";
    assert_string_equal(await_mode(h.queue, want, 5), want);
    char line[800];
    if (server_has_change_streams(t)) {
        assert_int_equal(log_lines(), 0);
    } else {
        assert_int_equal(lines_with("not available", line, sizeof line), 1);
        assert_non_null(strstr(line, t->db));
        printf("[ wait     ] unsupported: %s\n", line);
    }
    printf("[ wait     ] %s: mode \"none\" before the first wait, \"%s\" after\n", mode(t), want);
    close_handle(&h);
}

/* After the fault is lifted: a stream opens and the log says it is back (or, without
 * change streams on the server, that there are none). */
static void expect_comeback(tq *t, handle *h, const char *was) {
    char line[800];
    if (server_has_change_streams(t)) {
        assert_string_equal(await_mode(h->queue, "live", 5), "live");
        assert_int_equal(lines_with("live again", line, sizeof line), 1);
        assert_non_null(strstr(line, was));
        assert_non_null(strstr(line, t->db));
        printf("[ wait     ] back: %s\n", line);
        /* hints again: a publish is claimed by a waiter woken by its change */
        publish_while_waiting_on(t, h->queue);
    } else {
        assert_string_equal(await_mode(h->queue, "unsupported", 5), "unsupported");
        assert_int_equal(lines_with("not available", line, sizeof line), 1);
        assert_int_equal(lines_with("live again", NULL, 0), 0);
    }
}

/* 13 Unauthorized (a user without the changeStream privilege): logged once, however
 * often the watcher tries again; the mode reads "refused"; waiting claims poll and
 * still get the events. Granted (the fault lifted), the next try opens the stream. */
static void refused_stream_is_logged_once(void **state) {
    tq *t = *state;
    mongomq_watch_set_intervals(0.3, 0); /* the slow retry (60 s) made short */
    capture_start();
    fail_watch(13);
    handle h = open_handle(t);
    actor a = {.queue = t->queue, .delay = 1.3, .group = "g"};
    start_actor(&a);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(h.queue, "w", 30, 0, 20, &lease, &err);
    double got_at = tq_monotonic();
    join_actor(&a);
    ASSERT_MQ(MQ_OK, st, err);
    assert_string_equal(mq_lease_group(lease), "g");
    mq_lease_destroy(lease);
    assert_string_equal(mongomq_change_stream_mode(h.queue), "refused");
    int tries = watch_calls();
    assert_true(tries >= 3); /* tried again (every 0.3 s here), not once and never again */
    char line[800];
    assert_int_equal(lines_with("refused", line, sizeof line), 1);
    assert_int_equal(log_lines(), 1);
    assert_non_null(strstr(line, "server error 13"));
    assert_non_null(strstr(line, t->db));
    assert_non_null(strstr(line, "poll the locks"));
    assert_non_null(strstr(line, "5 ms to 50 ms"));
    assert_non_null(strstr(line, "every 0.3 s"));
    printf("[ wait     ] refused: %d opens tried, 1 line: %s\n", tries, line);
    printf("[ wait     ] refused: publish -> claimed by polling: %.1f ms\n", (got_at - a.done_at) * 1e3);

    mongomq_fault_set(NULL, NULL); /* the privilege granted */
    expect_comeback(t, &h, "refused");
    assert_int_equal(lines_with("refused on", NULL, 0), 1); /* still the one */
    close_handle(&h);
    mongomq_watch_set_intervals(0, 0);
}

/* Transient errors are retried at the usual pace without a line, until they have
 * lasted a while (30 s; 0.5 s here): then one line, and one when the stream opens. */
static void failing_stream_is_logged_after_a_while(void **state) {
    tq *t = *state;
    mongomq_watch_set_intervals(0, 0.5);
    capture_start();
    fail_watch(-1); /* a dropped connection, every time */
    handle h = open_handle(t);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "w", 30, 0, 0.3, &lease, &err), err);
    assert_int_equal(log_lines(), 0); /* not yet: 0.3 s of failures */
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "w", 30, 0, 1.5, &lease, &err), err);
    assert_string_equal(mongomq_change_stream_mode(h.queue), "starting"); /* never opened */
    char line[800];
    assert_int_equal(lines_with("down for", line, sizeof line), 1);
    assert_int_equal(log_lines(), 1);
    assert_non_null(strstr(line, "injected connection failure"));
    assert_non_null(strstr(line, "poll the locks"));
    int tries = watch_calls();
    assert_true(tries >= 4);
    printf("[ wait     ] failing: %d opens tried in 1.8 s, 1 line: %s\n", tries, line);

    mongomq_fault_set(NULL, NULL);
    expect_comeback(t, &h, "down");
    close_handle(&h);
    mongomq_watch_set_intervals(0, 0);
}

/* ---- 8b. cancelling one waiting claim (mq_cancel) ---- */

typedef struct {
    mq_queue *queue;
    mq_cancel *cancel;
    mq_status status;
    mq_lease *lease;
    mq_error err;
    double returned_at;
    pthread_t thread;
} cancel_waiter;

static void *cancel_waiter_main(void *p) {
    cancel_waiter *w = p;
    w->lease = (mq_lease *)&w->err; /* must come back NULL unless MQ_OK */
    w->status = mq_claim_wait_cancel(w->queue, "waiter", 30, 0, 1, 30, w->cancel, &w->lease, &w->err);
    w->returned_at = tq_monotonic();
    return NULL;
}

/* Two waiters on one queue; cancelling one ends that one promptly, the other still
 * gets the next event, and the queue keeps working. */
static void cancel_ends_one_waiter(tq *t, const char *label) {
    mq_error err;
    cancel_waiter a = {.queue = t->queue}, b = {.queue = t->queue};
    ASSERT_MQ(MQ_OK, mq_cancel_new(&a.cancel, &err), err);
    ASSERT_MQ(MQ_OK, mq_cancel_new(&b.cancel, &err), err);
    assert_int_equal(pthread_create(&a.thread, NULL, cancel_waiter_main, &a), 0);
    assert_int_equal(pthread_create(&b.thread, NULL, cancel_waiter_main, &b), 0);
    tq_sleep(0.4); /* both asleep */
    double cancelled_at = tq_monotonic();
    mq_cancel_trigger(a.cancel);
    assert_int_equal(mq_cancel_triggered(a.cancel), 1);
    pthread_join(a.thread, NULL);
    if (a.status != MQ_CANCELLED)
        fail_msg("%s: cancelled waiter: %s: %s", label, mq_status_name(a.status), a.err.message);
    assert_null(a.lease);
    assert_non_null(strstr(a.err.message, "cancelled"));
    double took = a.returned_at - cancelled_at;
    assert_true(took < 5.0); /* promptly (measured below), not at its 30 s timeout */

    int64_t seq = tq_publish(t, "g", "for b", 0);
    pthread_join(b.thread, NULL);
    if (b.status != MQ_OK) fail_msg("%s: other waiter: %s: %s", label, mq_status_name(b.status), b.err.message);
    assert_int_equal(mq_lease_seq(b.lease), seq);
    tq_ack(t, b.lease);
    mq_lease_destroy(b.lease);
    printf("[ wait     ] %s: cancel -> that waiter returned in %.1f ms; the other got the next event\n", label,
           took * 1e3);

    /* A triggered cancel stays triggered: the next call with it returns at once and
     * sends nothing; reset re-arms it. */
    tq_publish(t, "g2", "e", 0);
    uint64_t before = mq_client_command_count(t->client);
    mq_lease *lease = (mq_lease *)&err;
    ASSERT_MQ(MQ_CANCELLED, mq_claim_wait_cancel(t->queue, NULL, 30, 0, 1, 30, a.cancel, &lease, &err), err);
    assert_null(lease);
    ASSERT_MQ(MQ_CANCELLED, mq_claim_wait_cancel(t->queue, NULL, 30, 0, 1, 0, a.cancel, &lease, &err), err);
    assert_int_equal(mq_client_command_count(t->client), before);
    mq_cancel_reset(a.cancel);
    assert_int_equal(mq_cancel_triggered(a.cancel), 0);
    ASSERT_MQ(MQ_OK, mq_claim_wait_cancel(t->queue, NULL, 30, 0, 1, 30, a.cancel, &lease, &err), err);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    mq_cancel_destroy(a.cancel);
    mq_cancel_destroy(b.cancel);
}

static void cancel_one_waiter(void **state) { cancel_ends_one_waiter(*state, mode(*state)); }

static void cancel_one_waiter_fallback(void **state) {
    fail_watch(40573); /* no change streams: the waiters poll() on the eventfds */
    cancel_ends_one_waiter(*state, "fallback mode (forced)");
}

/* From a signal handler: mq_cancel_trigger is async-signal-safe. */
static mq_cancel *volatile g_signal_cancel;

static void on_sigusr2(int sig) {
    (void)sig;
    mq_cancel_trigger(g_signal_cancel);
}

static void cancel_from_signal_handler(void **state) {
    tq *t = *state;
    mq_error err;
    cancel_waiter w = {.queue = t->queue};
    ASSERT_MQ(MQ_OK, mq_cancel_new(&w.cancel, &err), err);
    g_signal_cancel = w.cancel;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr2;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
    assert_int_equal(pthread_create(&w.thread, NULL, cancel_waiter_main, &w), 0);
    tq_sleep(0.3);
    pthread_kill(w.thread, SIGUSR2);
    pthread_join(w.thread, NULL);
    signal(SIGUSR2, SIG_DFL);
    ASSERT_MQ(MQ_CANCELLED, w.status, w.err);
    assert_null(w.lease);
    /* The queue goes on: a plain waiting claim gets a published event. */
    tq_publish(t, "g", "e", 0);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_wait(t->queue, NULL, 30, 0, 5, &lease, &err), err);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    mq_cancel_destroy(w.cancel);
}

/* NULL is no cancel; the cancel calls accept NULL; bad arguments are checked as
 * mq_claim_batch_wait's. */
static void cancel_null_and_arguments(void **state) {
    tq *t = *state;
    mq_error err;
    mq_cancel_trigger(NULL);
    mq_cancel_reset(NULL);
    mq_cancel_destroy(NULL);
    assert_int_equal(mq_cancel_triggered(NULL), 0);
    ASSERT_MQ(MQ_ERR_ARG, mq_cancel_new(NULL, &err), err);
    assert_non_null(strstr(err.message, "out"));
    mq_lease *lease = (mq_lease *)&err;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait_cancel(t->queue, NULL, 30, 0, 1, 0.2, NULL, &lease, &err), err);
    assert_null(lease);
    mq_cancel *c;
    ASSERT_MQ(MQ_OK, mq_cancel_new(&c, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_wait_cancel(t->queue, NULL, 30, 0, 0, 1, c, &lease, &err), err);
    assert_non_null(strstr(err.message, "max_events"));
    assert_non_null(strstr(err.message, "mq_claim_wait_cancel"));
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_wait_cancel(t->queue, NULL, -1, 0, 1, 1, c, &lease, &err), err);
    assert_non_null(strstr(err.message, "visibility_s"));
    mq_cancel_destroy(c);
}

/* ---- 9. bad arguments ---- */

static void expect_arg(mq_queue *queue, const char *worker, double visibility, int min_priority, double timeout,
                       int null_out, const char *name, mq_client *client) {
    uint64_t before = mq_client_command_count(client);
    mq_error err;
    mq_lease *lease = (mq_lease *)&err;
    mq_status st = mq_claim_wait(queue, worker, visibility, min_priority, timeout, null_out ? NULL : &lease, &err);
    if (st != MQ_ERR_ARG) fail_msg("%s: got %s, expected MQ_ERR_ARG", name, mq_status_name(st));
    assert_int_equal(err.status, MQ_ERR_ARG);
    if (strstr(err.message, name) == NULL) fail_msg("message \"%s\" does not name %s", err.message, name);
    assert_non_null(strstr(err.message, "mq_claim_wait"));
    if (!null_out) assert_null(lease);
    assert_int_equal(mq_client_command_count(client), before);
    /* err NULL is fine too */
    assert_int_equal(mq_claim_wait(queue, worker, visibility, min_priority, timeout, null_out ? NULL : &lease, NULL),
                     MQ_ERR_ARG);
}

static void bad_arguments(void **state) {
    tq *t = *state;
    mq_queue *q = t->queue;
    mq_client *c = t->client;
    char long_worker[MQ_WORKER_ID_MAX + 2];
    memset(long_worker, 'w', sizeof long_worker - 1);
    long_worker[sizeof long_worker - 1] = '\0';

    expect_arg(NULL, "w", 30, 0, 1, 0, "queue", c);
    expect_arg(q, "w", 30, 0, 1, 1, "out", c);
    expect_arg(q, "", 30, 0, 1, 0, "worker_id", c);
    expect_arg(q, "\xff", 30, 0, 1, 0, "worker_id", c);
    expect_arg(q, long_worker, 30, 0, 1, 0, "worker_id", c);
    expect_arg(q, "w", 0, 0, 1, 0, "visibility_s", c);
    expect_arg(q, "w", -1, 0, 1, 0, "visibility_s", c);
    expect_arg(q, "w", NAN, 0, 1, 0, "visibility_s", c);
    expect_arg(q, "w", INFINITY, 0, 1, 0, "visibility_s", c);
    expect_arg(q, "w", 30, -1, 1, 0, "min_priority", c);
    expect_arg(q, "w", 30, 5, 1, 0, "min_priority", c);
    expect_arg(q, "w", 30, 0, NAN, 0, "timeout_s", c);
    expect_arg(q, "w", 30, 0, -0.5, 0, "timeout_s", c);
    expect_arg(q, "w", 30, 0, INFINITY, 0, "timeout_s", c);
    expect_arg(q, "w", 30, 0, -INFINITY, 0, "timeout_s", c);
    expect_arg(q, "w", 30, 0, 4e9, 0, "timeout_s", c);

    /* an interrupted queue still checks its arguments first */
    mq_queue_interrupt(q);
    expect_arg(q, "w", 30, 0, NAN, 0, "timeout_s", c);
}

/* ---- 10. destroying a queue whose watcher runs ---- */

static void destroy_with_running_watcher(void **state) {
    tq *t = *state;
    double slowest = 0;
    /* waits of 0.3 s: the watcher is up; of 1 ms: it is likely still starting;
     * forced fallback: it has ended. */
    const double waits[] = {0.3, 0.3, 0.001, 0.001, 0.3};
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
        if (i == 4) fail_watch(40573);
        mq_queue *q = NULL;
        mq_error err;
        ASSERT_MQ(MQ_OK, tq_queue_new(t->client, t->db, t->prefix, &q, &err), err);
        mq_lease *lease = NULL;
        ASSERT_MQ(MQ_EMPTY, mq_claim_wait(q, "w", 30, 0, waits[i], &lease, &err), err);
        double t0 = tq_monotonic();
        mq_queue_destroy(q);
        double took = tq_monotonic() - t0;
        if (took > slowest) slowest = took;
    }
    mongomq_fault_set(NULL, NULL);
    printf("[ wait     ] %s: mq_queue_destroy with a watcher took at most %.1f ms\n", mode(t), slowest * 1e3);
    /* the client is still fine */
    tq_publish(t, "g", "e", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    mq_lease_destroy(lease);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(due_group_returns_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(zero_timeout_is_one_claim, setup, teardown),
        cmocka_unit_test_setup_teardown(times_out_with_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(publish_while_waiting_is_claimed, setup, teardown),
        cmocka_unit_test_setup_teardown(release_by_ack_is_claimed, setup, teardown),
        cmocka_unit_test_setup_teardown(floor_ignores_lower_priorities, setup, teardown),
        cmocka_unit_test_setup_teardown(drop_while_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(many_waiters_share_the_work, setup, teardown),
        cmocka_unit_test_setup_teardown(idle_waiter_sends_few_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(nack_delay_wakes_when_park_ends, setup, teardown),
        cmocka_unit_test_setup_teardown(lease_running_out_wakes_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(scheduled_event_wakes_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupt_wakes_every_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupt_from_signal_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupt_from_signal_on_other_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(fallback_notices_publish, setup, teardown),
        cmocka_unit_test_setup_teardown(watcher_retries_after_connection_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(mode_is_none_until_a_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(refused_stream_is_logged_once, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_stream_is_logged_after_a_while, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_one_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_one_waiter_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_from_signal_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_null_and_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_with_running_watcher, setup, teardown),
    };
    static const char *const p1_only[] = {
        "zero_timeout_is_one_claim",
        "one claim.lease with one partition; one per partition with more (test_partitions.c counts them)",
        NULL,
    };
    return TQ_RUN_TESTS("wait", tests, p1_only);
}
