/* Many threads on one queue: the server's atomicity first (one due group, many
 * claimers, one lease), then exclusivity, order and nothing lost under contention.
 * Worker threads only count; the test thread asserts on the counts. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. the server's findAndModify is atomic: 16 claimers, one due group ---- */

enum { ATOM_THREADS = 16, ATOM_ROUNDS = 40 };

typedef struct {
    tq *t;
    pthread_barrier_t start, done;
    int wins[ATOM_ROUNDS];
    int errors;
    pthread_mutex_t mu;
} atom_ctx;

static void atom_worker(void *arg, int index) {
    atom_ctx *c = arg;
    char worker[32];
    snprintf(worker, sizeof worker, "w%d", index);
    for (int round = 0; round < ATOM_ROUNDS; round++) {
        pthread_barrier_wait(&c->start); /* the test thread has published round's event */
        mq_lease *lease = NULL;
        mq_error err;
        mq_status st = mq_claim(c->t->queue, worker, 600, 0, &lease, &err);
        pthread_mutex_lock(&c->mu);
        if (st == MQ_OK)
            c->wins[round]++;
        else if (st != MQ_EMPTY)
            c->errors++;
        pthread_mutex_unlock(&c->mu);
        mq_lease_destroy(lease); /* leave it held: it must not be claimable again */
        pthread_barrier_wait(&c->done);
    }
}

static void *atom_driver(void *arg) {
    atom_ctx *c = arg;
    char group[32];
    for (int round = 0; round < ATOM_ROUNDS; round++) {
        snprintf(group, sizeof group, "round-%d", round);
        mq_error err;
        if (mq_publish(c->t->queue, group, "x", 1, 0, NULL, &err) != MQ_OK) c->errors++;
        pthread_barrier_wait(&c->start);
        pthread_barrier_wait(&c->done);
    }
    return NULL;
}

static void sixteen_claimers_one_group_one_lease(void **state) {
    atom_ctx c;
    memset(&c, 0, sizeof c);
    c.t = *state;
    pthread_mutex_init(&c.mu, NULL);
    pthread_barrier_init(&c.start, NULL, ATOM_THREADS + 1);
    pthread_barrier_init(&c.done, NULL, ATOM_THREADS + 1);
    pthread_t driver;
    pthread_create(&driver, NULL, atom_driver, &c);
    tq_run_threads(ATOM_THREADS, atom_worker, &c);
    pthread_join(driver, NULL);
    assert_int_equal(c.errors, 0);
    for (int round = 0; round < ATOM_ROUNDS; round++) {
        if (c.wins[round] != 1) fail_msg("round %d: %d claimers got the one due group", round, c.wins[round]);
    }
    pthread_barrier_destroy(&c.start);
    pthread_barrier_destroy(&c.done);
    pthread_mutex_destroy(&c.mu);
}

/* ---- 2. workers draining published groups, with checks on every delivery ---- */

typedef struct {
    tq *t;
    int groups, per_group, total;
    double visibility;
    int nack_percent; /* chance a delivery is nacked instead of acked */
    int slow_percent; /* chance a worker sleeps past its lease before acking */
    double slow_seconds;
    int publishers;  /* > 0: events are published while workers run */
    int batch;       /* events per lease (mq_claim_batch) */
    double deadline; /* monotonic seconds: give up (and fail) after this */

    pthread_mutex_t mu; /* guards everything below */
    int64_t *seq_of;    /* [group * per_group + n] -> seq */
    int *acked;         /* successful acks per event */
    int *processed;     /* acks attempted (OK or LEASE_LOST) per event */
    int *next_n;        /* per group: the n the next successful ack must carry */
    int *in_flight;     /* per group: 1 while a live lease is held */
    int done;           /* events acked at least once */
    int double_held, out_of_order, errors, lost_leases, nacks, foreign;
    int multi; /* leases that held more than one event */
    char first_error[600];
} drain_ctx;

static void drain_error(drain_ctx *c, const char *what, const mq_error *err) {
    pthread_mutex_lock(&c->mu);
    if (c->errors++ == 0) snprintf(c->first_error, sizeof c->first_error, "%s: %s", what, err ? err->message : "");
    pthread_mutex_unlock(&c->mu);
}

static unsigned next_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

static void publish_group_events(drain_ctx *c, int group) {
    char name[32], event[64];
    snprintf(name, sizeof name, "grp-%03d", group);
    for (int n = 0; n < c->per_group; n++) {
        snprintf(event, sizeof event, "%d:%d", group, n);
        int64_t seq = 0;
        mq_error err;
        if (mq_publish(c->t->queue, name, event, strlen(event), group % 5, &seq, &err) != MQ_OK) {
            drain_error(c, "publish", &err);
            continue;
        }
        pthread_mutex_lock(&c->mu);
        c->seq_of[group * c->per_group + n] = seq;
        pthread_mutex_unlock(&c->mu);
    }
}

static void drain_publisher(void *arg, int index) {
    drain_ctx *c = arg;
    /* Each group has one publisher, so its publish order is defined. */
    for (int g = index; g < c->groups; g += c->publishers) publish_group_events(c, g);
}

/* The events of a lease as indexes into the ctx's arrays (all of one group, in
 * order); 0 when one is not ours. */
static size_t lease_indexes(drain_ctx *c, const mq_lease *lease, int *group, int *first_n, int idx[]) {
    size_t count = mq_lease_count(lease);
    for (size_t k = 0; k < count; k++) {
        int g = -1, n = -1;
        size_t len = 0;
        const char *event = mq_lease_event_at(lease, k, &len);
        char text[64] = {0};
        memcpy(text, event, len < sizeof text - 1 ? len : sizeof text - 1);
        if (sscanf(text, "%d:%d", &g, &n) != 2 || g < 0 || g >= c->groups || n < 0 || n >= c->per_group) return 0;
        if (k == 0) {
            *group = g;
            *first_n = n;
        } else if (g != *group || n != *first_n + (int)k) {
            return 0; /* a batch lease must hold consecutive events of one group */
        }
        idx[k] = g * c->per_group + n;
    }
    return count;
}

static void drain_worker(void *arg, int index) {
    drain_ctx *c = arg;
    unsigned rnd = 7919u * (unsigned)(index + 1);
    char worker[32];
    snprintf(worker, sizeof worker, "worker-%d", index);
    int *idx = calloc((size_t)c->batch, sizeof *idx);
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int finished = c->done >= c->total || c->errors > 0;
        pthread_mutex_unlock(&c->mu);
        if (finished || tq_monotonic() > c->deadline) break;

        mq_lease *lease = NULL;
        mq_error err;
        mq_status st = mq_claim_batch(c->t->queue, worker, c->visibility, 0, (size_t)c->batch, &lease, &err);
        if (st == MQ_EMPTY) {
            tq_sleep(0.002);
            continue;
        }
        if (st != MQ_OK) {
            drain_error(c, "claim", &err);
            break;
        }
        int g = -1, n = -1;
        size_t count = lease_indexes(c, lease, &g, &n, idx);
        if (count == 0) {
            pthread_mutex_lock(&c->mu);
            c->foreign++;
            pthread_mutex_unlock(&c->mu);
            mq_lease_destroy(lease);
            continue;
        }

        pthread_mutex_lock(&c->mu);
        if (count > 1) c->multi++;
        if (c->in_flight[g]) c->double_held++;
        c->in_flight[g] = 1;
        pthread_mutex_unlock(&c->mu);

        int slow = c->slow_percent > 0 && (int)(next_rand(&rnd) % 100) < c->slow_percent;
        if (slow) tq_sleep(c->slow_seconds);
        int nack = c->nack_percent > 0 && (int)(next_rand(&rnd) % 100) < c->nack_percent;

        pthread_mutex_lock(&c->mu);
        /* Cleared while the lease still holds the group: nobody can claim it until
         * the ack or nack below reaches the server. */
        c->in_flight[g] = 0;
        /* Checked and advanced before the ack: once it reaches the server another
         * worker may claim the group's next event. */
        int in_order = n == c->next_n[g];
        if (!nack) c->next_n[g] = n + (int)count;
        pthread_mutex_unlock(&c->mu);

        if (nack) {
            st = mq_nack(c->t->queue, lease, 0, &err);
            pthread_mutex_lock(&c->mu);
            c->nacks++;
            if (st == MQ_LEASE_LOST) c->lost_leases++;
            pthread_mutex_unlock(&c->mu);
            if (st != MQ_OK && st != MQ_LEASE_LOST) drain_error(c, "nack", &err);
        } else {
            /* Order is checked before the ack (afterwards another worker may already
             * hold the group), and only counted once the ack says we still held it. */
            st = mq_ack(c->t->queue, lease, &err);
            pthread_mutex_lock(&c->mu);
            for (size_t k = 0; k < count; k++) {
                /* OK or LEASE_LOST, the ack deleted the events: they were processed. */
                if ((st == MQ_OK || st == MQ_LEASE_LOST) && c->processed[idx[k]]++ == 0) c->done++;
                if (st == MQ_OK) c->acked[idx[k]]++;
            }
            if (st == MQ_OK && !in_order) c->out_of_order++;
            if (st == MQ_LEASE_LOST) c->lost_leases++;
            pthread_mutex_unlock(&c->mu);
            if (st != MQ_OK && st != MQ_LEASE_LOST) drain_error(c, "ack", &err);
        }
        mq_lease_destroy(lease);
    }
    free(idx);
}

static void drain_init(drain_ctx *c, tq *t, int groups, int per_group) {
    memset(c, 0, sizeof *c);
    c->t = t;
    c->groups = groups;
    c->per_group = per_group;
    c->total = groups * per_group;
    c->visibility = 120;
    c->batch = 1;
    c->deadline = tq_monotonic() + 600;
    pthread_mutex_init(&c->mu, NULL);
    c->seq_of = calloc((size_t)c->total, sizeof *c->seq_of);
    c->acked = calloc((size_t)c->total, sizeof *c->acked);
    c->processed = calloc((size_t)c->total, sizeof *c->processed);
    c->next_n = calloc((size_t)groups, sizeof *c->next_n);
    c->in_flight = calloc((size_t)groups, sizeof *c->in_flight);
}

static void drain_free(drain_ctx *c) {
    free(c->seq_of);
    free(c->acked);
    free(c->processed);
    free(c->next_n);
    free(c->in_flight);
    pthread_mutex_destroy(&c->mu);
}

typedef struct {
    drain_ctx *c;
    int workers;
} run_args;

static void *run_workers(void *arg) {
    run_args *r = arg;
    tq_run_threads(r->workers, drain_worker, r->c);
    return NULL;
}

/* Workers run while `publishers` threads publish (or after, when 0). */
static void drain_run(drain_ctx *c, int workers, int publishers) {
    c->publishers = publishers;
    if (publishers == 0) {
        for (int g = 0; g < c->groups; g++) publish_group_events(c, g);
        tq_run_threads(workers, drain_worker, c);
        return;
    }
    run_args r = {c, workers};
    pthread_t pool;
    pthread_create(&pool, NULL, run_workers, &r);
    tq_run_threads(publishers, drain_publisher, c);
    pthread_join(pool, NULL);
}

static void assert_queue_empty(tq *t) {
    tq_expect_empty(t, 0); /* also drops a lock a lost lease left without messages */
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

static void report(const drain_ctx *c, const char *name, double elapsed) {
    print_message("%s: %d events, %d nacks, %d lost leases, %.1f s\n", name, c->total, c->nacks, c->lost_leases,
                  elapsed);
    if (c->errors) fail_msg("%d errors; first: %s", c->errors, c->first_error);
}

/* Long leases: no lease lost, no group held twice, every event acked exactly once and
 * each group's in publish order, and the queue ends empty. */
static void assert_exactly_once_in_order(const drain_ctx *c) {
    assert_int_equal(c->foreign, 0);
    assert_int_equal(c->double_held, 0);
    assert_int_equal(c->lost_leases, 0);
    assert_int_equal(c->out_of_order, 0);
    for (int i = 0; i < c->total; i++) {
        if (c->acked[i] != 1) fail_msg("event %d (seq %lld) acked %d times", i, (long long)c->seq_of[i], c->acked[i]);
    }
    assert_queue_empty(c->t);
}

/* 16 workers spinning on 4 hot groups never see a head twice. */
static void hot_groups_never_deliver_a_head_twice(void **state) {
    drain_ctx c;
    drain_init(&c, *state, 4, 100);
    double t0 = tq_monotonic();
    drain_run(&c, 16, 0);
    report(&c, "hot groups", tq_monotonic() - t0);
    for (int i = 0; i < c.total; i++) { /* no nacks: one delivery, one ack attempt each */
        if (c.processed[i] != 1) fail_msg("event %d was delivered and acked %d times", i, c.processed[i]);
    }
    assert_exactly_once_in_order(&c);
    drain_free(&c);
}

/* 16 workers, 4 publishers, 120 groups, random nacks, long leases: every event acked
 * exactly once, each group's acks in publish order, never two live leases on a group. */
static void stress_exactly_once_in_order(void **state) {
    drain_ctx c;
    drain_init(&c, *state, 120, 10);
    c.nack_percent = 10;
    double t0 = tq_monotonic();
    drain_run(&c, 16, 4);
    report(&c, "stress", tq_monotonic() - t0);
    assert_exactly_once_in_order(&c);
    drain_free(&c);
}

/* The same with batch leases of up to 5 events: each lease holds consecutive events
 * of one group, and every event is still acked exactly once, in order. */
static void stress_with_batch_leases(void **state) {
    drain_ctx c;
    drain_init(&c, *state, 60, 20);
    c.nack_percent = 10;
    c.batch = 5;
    double t0 = tq_monotonic();
    drain_run(&c, 16, 4);
    report(&c, "batch stress", tq_monotonic() - t0);
    print_message("batch stress: %d leases held more than one event\n", c.multi);
    assert_true(c.multi > 0); /* the test did exercise batch leases */
    assert_exactly_once_in_order(&c);
    drain_free(&c);
}

/* Short leases and slow workers: leases expire mid-work and groups move on, so an
 * event may be processed twice, but none is lost and the queue ends empty. */
static void short_leases_slow_workers_lose_nothing(void **state) {
    drain_ctx c;
    drain_init(&c, *state, 12, 15);
    c.visibility = 0.15;
    c.slow_percent = 15;
    c.slow_seconds = 0.25;
    c.nack_percent = 5;
    double t0 = tq_monotonic();
    drain_run(&c, 16, 2);
    report(&c, "short leases", tq_monotonic() - t0);
    assert_int_equal(c.foreign, 0);
    int twice = 0;
    for (int i = 0; i < c.total; i++) {
        if (c.processed[i] == 0) fail_msg("event %d (seq %lld) was never processed", i, (long long)c.seq_of[i]);
        if (c.processed[i] > 1) twice++;
    }
    print_message("short leases: %d events processed more than once (at-least-once)\n", twice);
    assert_true(c.lost_leases > 0); /* the test did exercise expiry */
    assert_queue_empty(*state);
    drain_free(&c);
}

/* ---- 3. the publish-during-drain race, with real threads ---- */

enum { RACE_ROUNDS = 150 };

typedef struct {
    tq *t;
    mq_lease *lease;
    char group[32];
    pthread_barrier_t go;
    mq_status ack_status, publish_status;
    int64_t new_seq;
} race_ctx;

static void race_thread(void *arg, int index) {
    race_ctx *r = arg;
    mq_error err;
    pthread_barrier_wait(&r->go);
    if (index == 0)
        r->ack_status = mq_ack(r->t->queue, r->lease, &err);
    else
        r->publish_status = mq_publish(r->t->queue, r->group, "late", 4, 0, &r->new_seq, &err);
}

static void publish_during_drain_race(void **state) {
    tq *t = *state;
    race_ctx r;
    memset(&r, 0, sizeof r);
    r.t = t;
    pthread_barrier_init(&r.go, NULL, 2);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        snprintf(r.group, sizeof r.group, "drain-%d", round);
        tq_publish(t, r.group, "last", 0);
        r.lease = tq_claim(t, 60, 0); /* the group's only event: ack will drain it */
        tq_run_threads(2, race_thread, &r);
        assert_int_equal(r.ack_status, MQ_OK);
        assert_int_equal(r.publish_status, MQ_OK);
        mq_lease_destroy(r.lease);
        mq_lease *late = tq_claim(t, 60, 0); /* MQ_EMPTY here would be an orphan */
        assert_int_equal(mq_lease_seq(late), r.new_seq);
        tq_ack(t, late);
        mq_lease_destroy(late);
    }
    pthread_barrier_destroy(&r.go);
    assert_queue_empty(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sixteen_claimers_one_group_one_lease, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(hot_groups_never_deliver_a_head_twice, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(stress_exactly_once_in_order, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(stress_with_batch_leases, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(short_leases_slow_workers_lose_nothing, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(publish_during_drain_race, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests_name("concurrency", tests, NULL, NULL);
}
