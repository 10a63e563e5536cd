/* Server crash and restart (issue 14), against mongo-java-server's H2 backend (a
 * file, committed after every command; tests/faults/restart.sh starts it).
 *
 * 1. Before relying on it: H2's findAndModify is as atomic as the library needs.
 *    Threads $inc one counter by findAndModify returning the pre-image (what
 *    publish.seq does): no value twice. Threads claim locks as claim.lease does: no
 *    group twice. (The post-image is NOT atomic on this server, H2 or memory: the
 *    returned document can carry another thread's update. The library never asks
 *    for it; the count of duplicates is printed.)
 * 2. Workers drain a queue; the server is killed with SIGKILL in the middle and
 *    restarted on the same file and port (MONGOMQ_RESTART_CMD). Then: every event
 *    whose ack returned MQ_OK is gone, every event nobody tried to ack is there, the
 *    leases of the killed moment expire and their heads are redelivered, and the
 *    workers, with the same client and queue handles, drain the queue to the end.
 *
 * Environment: MONGOMQ_TEST_URI (the H2 server), MONGOMQ_RESTART_CMD (a shell
 * command that SIGKILLs the server and starts it again on the same file and port). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- 1. atomicity ---- */

#define FAM_THREADS 8
#define FAM_CALLS 150

typedef struct {
    tq *t;
    int return_new;
    int64_t values[FAM_THREADS * FAM_CALLS];
    int errors;
    mongoc_client_pool_t *pool;
} fam_ctx;

static void fam_main(void *arg, int index) {
    fam_ctx *f = arg;
    mongoc_client_t *client = mongoc_client_pool_pop(f->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(client, f->t->db, "fam_counter");
    bson_t *query = BCON_NEW("_id", BCON_UTF8("seq"));
    bson_t *update = BCON_NEW("$inc", "{", "n", BCON_INT64(1), "}");
    for (int i = 0; i < FAM_CALLS; i++) {
        bson_t reply;
        bson_error_t error;
        int64_t v = -1;
        if (mongoc_collection_find_and_modify(coll, query, NULL, update, NULL, false, false, f->return_new != 0, &reply,
                                              &error)) {
            bson_iter_t it;
            if (bson_iter_init_find(&it, &reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
                bson_iter_t child;
                if (bson_iter_recurse(&it, &child) && bson_iter_find(&child, "n")) v = bson_iter_as_int64(&child);
            }
        } else {
            __sync_add_and_fetch(&f->errors, 1);
        }
        bson_destroy(&reply);
        f->values[index * FAM_CALLS + i] = v;
    }
    bson_destroy(query);
    bson_destroy(update);
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(f->pool, client);
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int fam_duplicates(tq *t, int return_new) {
    fam_ctx *f = calloc(1, sizeof *f);
    f->t = t;
    f->return_new = return_new;
    mongoc_uri_t *uri = mongoc_uri_new(test_uri());
    f->pool = mongoc_client_pool_new(uri);
    mongoc_uri_destroy(uri);
    tq_insert_json(t, "x", "{}"); /* makes the database */
    mongoc_collection_t *coll = mongoc_client_get_collection(t->raw, t->db, "fam_counter");
    bson_t all = BSON_INITIALIZER;
    mongoc_collection_delete_many(coll, &all, NULL, NULL, NULL);
    bson_t *seed = BCON_NEW("_id", BCON_UTF8("seq"), "n", BCON_INT64(0));
    assert_true(mongoc_collection_insert_one(coll, seed, NULL, NULL, NULL));
    bson_destroy(seed);
    mongoc_collection_destroy(coll);
    tq_run_threads(FAM_THREADS, fam_main, f);
    assert_int_equal(f->errors, 0);
    qsort(f->values, FAM_THREADS * FAM_CALLS, sizeof(int64_t), cmp64);
    int dups = 0;
    for (int i = 1; i < FAM_THREADS * FAM_CALLS; i++)
        if (f->values[i] == f->values[i - 1]) dups++;
    mongoc_client_pool_destroy(f->pool);
    free(f);
    return dups;
}

typedef struct {
    tq *t;
    char groups[FAM_THREADS][64][32];
    int count[FAM_THREADS];
    int errors;
} claim_ctx;

static void claim_main(void *arg, int index) {
    claim_ctx *c = arg;
    mq_queue *q = NULL;
    mq_error err;
    if (mq_queue_new(c->t->client, c->t->db, c->t->prefix, &q, &err) != MQ_OK) {
        __sync_add_and_fetch(&c->errors, 1);
        return;
    }
    for (;;) {
        mq_lease *lease = NULL;
        mq_status st = mq_claim(q, "atomic", 60, 0, &lease, &err);
        if (st == MQ_EMPTY) break;
        if (st != MQ_OK || c->count[index] >= 64) {
            __sync_add_and_fetch(&c->errors, 1);
            mq_lease_destroy(lease);
            break;
        }
        snprintf(c->groups[index][c->count[index]++], 32, "%s", mq_lease_group(lease));
        mq_lease_destroy(lease);
    }
    mq_queue_destroy(q);
}

static void h2_find_and_modify_is_atomic(void **state) {
    tq *t = *state;
    int pre = fam_duplicates(t, 0);
    int post = fam_duplicates(t, 1);
    printf(
        "    findAndModify $inc, %d threads x %d: pre-image duplicates %d, post-image duplicates %d "
        "(the library uses the pre-image)\n",
        FAM_THREADS, FAM_CALLS, pre, post);
    assert_int_equal(pre, 0);

    /* concurrent claims never share a group */
    for (int g = 0; g < 120; g++) {
        char gid[16];
        snprintf(gid, sizeof gid, "g%d", g);
        tq_publish(t, gid, "e", 0);
    }
    claim_ctx *c = calloc(1, sizeof *c);
    c->t = t;
    tq_run_threads(FAM_THREADS, claim_main, c);
    assert_int_equal(c->errors, 0);
    int total = 0;
    for (int i = 0; i < FAM_THREADS; i++) total += c->count[i];
    assert_int_equal(total, 120);
    for (int i = 0; i < FAM_THREADS; i++)
        for (int j = 0; j < c->count[i]; j++)
            for (int k = i; k < FAM_THREADS; k++)
                for (int l = k == i ? j + 1 : 0; l < c->count[k]; l++)
                    if (strcmp(c->groups[i][j], c->groups[k][l]) == 0)
                        fail_msg("group %s claimed twice by concurrent claims", c->groups[i][j]);
    printf("    %d concurrent claims of 120 groups: each group once\n", FAM_THREADS);
    free(c);
}

/* ---- 2. SIGKILL mid-drain ---- */

#define EVENTS 300
#define KGROUPS 15
#define KWORKERS 3

typedef struct {
    tq *t;
    mq_queue *queues[KWORKERS];
    pthread_mutex_t mu;
    int ack_ok[EVENTS], ack_tried[EVENTS], delivered[EVENTS], attempts[EVENTS];
    int acked_total;
    int connect_errors, other_errors;
    char other[600];
    volatile int stop, paused, idle;
} kill_ctx;

static void kill_worker(void *arg, int index) {
    kill_ctx *k = arg;
    mq_queue *q = k->queues[index];
    while (!k->stop) {
        if (k->paused) {
            __sync_add_and_fetch(&k->idle, 1);
            while (k->paused && !k->stop) tq_sleep(0.02);
            __sync_sub_and_fetch(&k->idle, 1);
            continue;
        }
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim(q, "killed", 2.0, 0, &lease, &err);
        if (st == MQ_EMPTY) {
            tq_sleep(0.05);
            continue;
        }
        if (st != MQ_OK) {
            pthread_mutex_lock(&k->mu);
            if (st == MQ_ERR_CONNECT)
                k->connect_errors++;
            else
                k->other_errors++, snprintf(k->other, sizeof k->other, "claim: %s", err.message);
            pthread_mutex_unlock(&k->mu);
            tq_sleep(0.1);
            continue;
        }
        char text[32];
        tq_event_text(lease, text, sizeof text);
        int ev = atoi(text);
        pthread_mutex_lock(&k->mu);
        k->delivered[ev]++;
        k->ack_tried[ev] = 1;
        if (mq_lease_attempts(lease) > k->attempts[ev]) k->attempts[ev] = mq_lease_attempts(lease);
        pthread_mutex_unlock(&k->mu);
        tq_sleep(0.005); /* some work */
        st = mq_ack(q, lease, &err);
        pthread_mutex_lock(&k->mu);
        if (st == MQ_OK) {
            if (!k->ack_ok[ev]) k->acked_total++;
            k->ack_ok[ev]++;
        } else if (st == MQ_ERR_CONNECT) {
            k->connect_errors++;
        } else if (st != MQ_LEASE_LOST) {
            k->other_errors++;
            snprintf(k->other, sizeof k->other, "ack: %s", err.message);
        }
        pthread_mutex_unlock(&k->mu);
        mq_lease_destroy(lease);
    }
}

static void *kill_workers_thread(void *arg) {
    tq_run_threads(KWORKERS, kill_worker, arg);
    return NULL;
}

/* The events in the messages collection, straight from the server (retried while
 * the server comes back). */
static void present_events(tq *t, int *present) {
    for (int attempt = 0;; attempt++) {
        memset(present, 0, sizeof(int) * EVENTS);
        mongoc_collection_t *coll = tq_collection(t, "messages");
        bson_t all = BSON_INITIALIZER;
        mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &all, NULL, NULL);
        const bson_t *doc;
        while (mongoc_cursor_next(cursor, &doc)) {
            bson_iter_t it;
            if (bson_iter_init_find(&it, doc, "event") && BSON_ITER_HOLDS_UTF8(&it))
                present[atoi(bson_iter_utf8(&it, NULL))] = 1;
        }
        bson_error_t error;
        int failed = mongoc_cursor_error(cursor, &error);
        mongoc_cursor_destroy(cursor);
        mongoc_collection_destroy(coll);
        if (!failed) return;
        if (attempt > 100) fail_msg("reading the messages after the restart: %s", error.message);
        tq_sleep(0.1);
    }
}

static void sigkill_mid_drain_and_restart(void **state) {
    tq *t = *state;
    const char *restart = getenv("MONGOMQ_RESTART_CMD");
    if (restart == NULL) fail_msg("MONGOMQ_RESTART_CMD is not set (tests/faults/restart.sh sets it)");
    kill_ctx *k = calloc(1, sizeof *k);
    k->t = t;
    pthread_mutex_init(&k->mu, NULL);
    mq_error err;
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    for (int i = 0; i < EVENTS; i++) {
        char gid[16], text[16];
        snprintf(gid, sizeof gid, "G%d", i % KGROUPS);
        snprintf(text, sizeof text, "%d", i);
        ASSERT_MQ(MQ_OK, mq_batch_add(batch, gid, text, strlen(text), 0, &err), err);
    }
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, NULL, &err), err);
    mq_batch_destroy(batch);
    for (int w = 0; w < KWORKERS; w++) {
        ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, t->prefix, &k->queues[w], &err), err);
        ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(k->queues[w], 1.0, &err), err);
    }
    pthread_t workers;
    pthread_create(&workers, NULL, kill_workers_thread, k);
    /* mid-drain: a third of the events acked */
    double until = tq_monotonic() + 60;
    while (tq_monotonic() < until) {
        pthread_mutex_lock(&k->mu);
        int n = k->acked_total;
        pthread_mutex_unlock(&k->mu);
        if (n >= EVENTS / 3) break;
        tq_sleep(0.01);
    }
    /* a lease held by a worker that dies with the server, taken just before the kill
     * so that it is still running when the server dies: never acked */
    mq_lease *orphan = tq_claim(t, 5.0, 0);
    char orphan_text[16];
    int orphan_ev = atoi(tq_event_text(orphan, orphan_text, sizeof orphan_text));
    double orphan_left = mq_lease_deadline(orphan) - mq_queue_now(t->queue);
    mq_lease_destroy(orphan);
    printf("    SIGKILL with %d of %d events acked, a lease on event %d running for %.1f s more\n", k->acked_total,
           EVENTS, orphan_ev, orphan_left);
    fflush(stdout);
    if (orphan_left <= 0) fail_msg("the orphan lease ran out before the kill (%.2f s)", orphan_left);
    if (system(restart) != 0) fail_msg("the restart command failed: %s", restart);

    /* the server is back: stop the workers between calls and look */
    k->paused = 1;
    while (k->idle < KWORKERS) tq_sleep(0.02);
    int present[EVENTS];
    present_events(t, present);
    int gone_acked = 0, kept = 0, unsure = 0;
    pthread_mutex_lock(&k->mu);
    for (int i = 0; i < EVENTS; i++) {
        if (k->ack_ok[i]) {
            if (present[i]) fail_msg("event %d was acked (MQ_OK) but is back after the restart", i);
            gone_acked++;
        } else if (!k->ack_tried[i]) {
            if (!present[i]) fail_msg("event %d was never acked and is gone after the restart: lost", i);
            kept++;
        } else {
            unsure++; /* its ack failed: applied or not */
        }
    }
    pthread_mutex_unlock(&k->mu);
    printf("    after the restart: %d acked events gone, %d unacked events there, %d with a failed ack\n", gone_acked,
           kept, unsure);
    k->paused = 0;

    /* the same handles drain the rest (leases of the killed moment expire after 2 s) */
    until = tq_monotonic() + 60;
    int quiet = 0;
    while (tq_monotonic() < until && quiet < 3) {
        tq_sleep(0.5);
        quiet = tq_count(t, "messages", "{}") == 0 && tq_count(t, "locks", "{}") == 0 ? quiet + 1 : 0;
    }
    k->stop = 1;
    pthread_join(workers, NULL);
    for (int w = 0; w < KWORKERS; w++) mq_queue_destroy(k->queues[w]);
    int redelivered = 0;
    for (int i = 0; i < EVENTS; i++) {
        if (k->delivered[i] < 1) fail_msg("event %d never delivered", i);
        if (k->delivered[i] > 1) redelivered++;
    }
    /* the orphan lease expired and its head was redelivered, its attempts counting
     * the lost delivery */
    if (k->attempts[orphan_ev] < 2)
        fail_msg("event %d (leased before the kill, never acked) redelivered with attempts %d", orphan_ev,
                 k->attempts[orphan_ev]);
    printf("    the lease held at the kill expired: event %d redelivered with attempts %d\n", orphan_ev,
           k->attempts[orphan_ev]);
    printf("    drained: all %d delivered (%d more than once), %d MQ_ERR_CONNECT seen by the workers\n", EVENTS,
           redelivered, k->connect_errors);
    if (k->other_errors) fail_msg("an error other than MQ_ERR_CONNECT: %s", k->other);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    /* No assertion on connect_errors: the kill is proven by the restart command's exit
     * status (kill -9 of the recorded pid, then a new server on the same file), and
     * the workers may ride through it without an error, since server selection waits
     * up to serverSelectionTimeoutMS and idempotent commands are retried in the call. */
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* ---- 3. a waiting claim across a restart ---- */

typedef struct {
    tq *t;
    mq_queue *queue;
    volatile int waiting;
    mq_status last;
    int got, connect_errors, empties;
    char text[32], other[600];
} wait_ctx;

/* A worker's loop around one waiting claim: MQ_ERR_CONNECT means wait again (what the
 * header tells a worker to do); anything else ends it. */
static void *waiter_thread(void *arg) {
    wait_ctx *w = arg;
    double until = tq_monotonic() + 60;
    while (tq_monotonic() < until) {
        mq_error err;
        mq_lease *lease = NULL;
        w->waiting = 1;
        mq_status st = mq_claim_wait(w->queue, "waiter", 5.0, 0, 20.0, &lease, &err);
        w->last = st;
        if (st == MQ_ERR_CONNECT) {
            w->connect_errors++;
            tq_sleep(0.1);
            continue;
        }
        if (st == MQ_EMPTY) {
            w->empties++;
            continue;
        }
        if (st == MQ_OK) {
            w->got++;
            tq_event_text(lease, w->text, sizeof w->text);
            mq_status ack = mq_ack(w->queue, lease, &err);
            if (ack != MQ_OK) snprintf(w->other, sizeof w->other, "ack: %s: %s", mq_status_name(ack), err.message);
            mq_lease_destroy(lease);
        } else {
            snprintf(w->other, sizeof w->other, "claim_wait: %s: %s", mq_status_name(st), err.message);
        }
        break;
    }
    return NULL;
}

/* Documents in a collection after the restart, straight from the server: the test's
 * own client may first meet a connection of the killed server, so retried. */
static int64_t count_after_restart(tq *t, const char *suffix) {
    for (int attempt = 0;; attempt++) {
        mongoc_collection_t *coll = tq_collection(t, suffix);
        bson_t all = BSON_INITIALIZER;
        bson_error_t error;
        int64_t n = mongoc_collection_count_documents(coll, &all, NULL, NULL, NULL, &error);
        mongoc_collection_destroy(coll);
        if (n >= 0) return n;
        if (attempt > 100) fail_msg("counting %s after the restart: %s", suffix, error.message);
        tq_sleep(0.1);
    }
}

static void waiting_claim_across_restart(void **state) {
    tq *t = *state;
    const char *restart = getenv("MONGOMQ_RESTART_CMD");
    if (restart == NULL) fail_msg("MONGOMQ_RESTART_CMD is not set (tests/faults/restart.sh sets it)");
    wait_ctx *w = calloc(1, sizeof *w);
    w->t = t;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, t->prefix, &w->queue, &err), err);
    pthread_t waiter;
    pthread_create(&waiter, NULL, waiter_thread, w);
    while (!w->waiting) tq_sleep(0.01);
    tq_sleep(0.5); /* inside mq_claim_wait, on an empty queue */
    if (system(restart) != 0) fail_msg("the restart command failed: %s", restart);

    /* publish after the restart from a client made now: its insert cannot meet a
     * connection of the killed server, so MQ_OK is certain and the event is there */
    mq_client *fresh = NULL;
    mq_queue *pub = NULL;
    ASSERT_MQ(MQ_OK, mq_client_new(test_uri(), &fresh, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(fresh, t->db, t->prefix, &pub, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish(pub, "after-restart", "e1", 2, 0, NULL, &err), err);
    pthread_join(waiter, NULL);
    printf("    the waiter: %s, %d MQ_ERR_CONNECT, %d timeouts, then \"%s\"\n", mq_status_name(w->last),
           w->connect_errors, w->empties, w->text);
    if (w->other[0]) fail_msg("%s", w->other);
    assert_int_equal(w->got, 1);
    assert_string_equal(w->text, "e1");
    assert_int_equal(count_after_restart(t, "messages"), 0);
    assert_int_equal(count_after_restart(t, "locks"), 0);
    mq_queue_destroy(pub);
    mq_client_destroy(fresh);
    mq_queue_destroy(w->queue);
    free(w);
}

static int setup(void **state) {
    int rc = tq_setup(state);
    return rc;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(h2_find_and_modify_is_atomic, setup, tq_teardown),
        cmocka_unit_test_setup_teardown(sigkill_mid_drain_and_restart, setup, tq_teardown),
        cmocka_unit_test_setup_teardown(waiting_claim_across_restart, setup, tq_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
