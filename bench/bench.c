/*
 * bench.c — throughput, latency and server commands per event of libmongomq.
 *
 *   bench [--uri URI] [--events N] [--groups G] [--workers W] [--visibility S]
 *         [--batch B] [--wait] [--json]
 *   bench [--uri URI] --waiters N [--events E] [--json]
 *
 * --waiters N measures wake-ups instead (see run_waiters): N threads of one process
 * wait in mq_claim_wait on one queue of one client, another client publishes E
 * events one at a time, and the bench reports how many waiters each event woke.
 *
 * Modes. By default the bench runs twice, one mode after the other, each on a fresh
 * queue (prefix) of the same fresh database:
 *   single     B = 1: mq_publish, and mq_claim (one event per lease);
 *   batch(10)  B = 10: mq_publish_batch in batches of 10, and mq_claim_batch with up
 *              to 10 events per lease.
 * --batch B runs only the mode with that B (B = 1: single only).
 *
 * Phase 1 (publish): one thread publishes N events round-robin over G groups
 *   (group g has priority g % 5; event i is the JSON text {"i":i}).
 * Phase 2 (drain): W threads claim and ack until every event is acked. Each worker
 *   has its own mq_client (as separate machines would), so mq_client_command_count
 *   deltas around each call count exactly that call's server commands. Claims that
 *   return MQ_EMPTY (the tail of the run, or all groups held) are counted apart; their
 *   commands are in the total. Without --wait a worker sleeps 2 ms after MQ_EMPTY.
 *   With --wait it waits in mq_claim_wait (timeout 1 s) instead: in single mode every
 *   claim is an mq_claim_wait; in a batch mode the claim stays mq_claim_batch (there
 *   is no batched waiting claim) and only its MQ_EMPTY is followed by an
 *   mq_claim_wait. The worker that acks the last event calls mq_queue_interrupt on
 *   every worker's queue, so waiting workers end at once (MQ_INTERRUPTED).
 *
 * Figures, per mode: publish/drain events per second, p50/p99 latency of successful
 * claims and of acks (clock_gettime(CLOCK_MONOTONIC) around each call), commands per
 * event for publish, claim, ack and in total; then one line comparing the modes'
 * total commands per event. Each mode checks that every event was acked exactly once
 * (lost = never acked, duplicated = delivered again after an ack) and that each
 * lease's seq is the one publish returned; the program exits 1 if a mode fails that,
 * or on any error; it asserts nothing about timing.
 *
 * Every run uses a fresh database, mongomq_bench_<pid>_<time>. The API cannot drop a
 * database; against the in-memory test server (scripts/test-server.sh) it vanishes
 * with the server. Against a real MongoDB, drop the mongomq_bench_* databases by hand.
 */
#define _POSIX_C_SOURCE 200809L

#include <mongomq.h>

#include <jansson.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_IDLE_SLEEP_MS 2
#define BENCH_WAIT_S 1.0 /* mq_claim_wait's timeout with --wait */
#define BENCH_PRIORITIES (MQ_PRIORITY_MAX - MQ_PRIORITY_MIN + 1)
#define BENCH_DEFAULT_BATCH 10 /* the batch mode's B when both modes run */
#define BENCH_MAX_MODES 2

typedef struct {
    const char *uri;
    long events;
    long groups;
    long workers;
    long batch; /* 0: both modes (1 and BENCH_DEFAULT_BATCH) */
    double visibility;
    int wait;
    int json;
    long waiters; /* --waiters N: the wake-up measurement instead of the modes */
    double soak;  /* --soak MINUTES: publish/claim/ack for that long, a line a minute */
} bench_opts;

typedef struct {
    double *v;
    size_t n, cap;
} samples;

typedef struct bench_shared bench_shared;

typedef struct {
    bench_shared *sh;
    char worker_id[48];
    mq_client *client;
    mq_queue *queue;
    samples claim_ms;
    samples ack_ms;
    uint64_t cmd_start; /* the client's command count when the drain started */
    uint64_t cmd_claim, cmd_empty, cmd_ack;
    long claims_ok, claims_empty, empty_waits, acks, lease_lost;
    int failed;
} bench_worker;

struct bench_shared {
    const bench_opts *opt;
    long batch;            /* this mode's B */
    bench_worker *workers; /* all of them, for mq_queue_interrupt */
    int64_t *seq_of;       /* seq returned by publish, per event index */
    pthread_mutex_t mu;    /* guards the fields below */
    int *acked;            /* times each event index was acked */
    long acked_total;      /* distinct events acked */
    long duplicates;       /* deliveries of an already acked event */
    long seq_mismatch;     /* lease seq != publish seq */
    int stop;              /* an error happened somewhere */
    double last_progress;
};

/* One mode's figures. */
typedef struct {
    long batch;
    int wait;
    char mode[24];       /* "single", "batch(10)" */
    char prefix[32];     /* the queue's prefix in the run's database */
    char claim_call[96]; /* which claim call the workers used */
    double t_pub, t_drain;
    double claim_p50, claim_p99, ack_p50, ack_p99;
    uint64_t cmd_pub, cmd_claim, cmd_empty, cmd_ack, cmd_other, cmd_total;
    long claims_ok, claims_empty, empty_waits, acks, lease_lost;
    long acked_total, lost, duplicates, seq_mismatch;
    int failed; /* a call failed: the figures are partial */
    int ok;     /* every event acked exactly once, with its seq, and nothing failed */
} bench_result;

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void bench_log(int level, const char *domain, const char *message, void *ctx)
{
    (void)ctx;
    if (level <= 2)
        fprintf(stderr, "libmongoc: [%s] %s\n", domain ? domain : "?", message ? message : "");
}

static void report_error(const char *what, mq_status st, const mq_error *err)
{
    fprintf(stderr, "bench: %s failed: %s: %s\n", what, mq_status_name(st),
            err && err->message[0] ? err->message : "(no message)");
}

static int samples_add(samples *s, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *p = (double *)realloc(s->v, cap * sizeof *p);
        if (p == NULL)
            return -1;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples; 0 when there are none. */
static double percentile(const samples *s, double p)
{
    size_t rank;
    if (s->n == 0)
        return 0.0;
    rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return s->v[rank - 1];
}

static int samples_merge(samples *dst, const samples *src)
{
    size_t i;
    for (i = 0; i < src->n; i++)
        if (samples_add(dst, src->v[i]) != 0)
            return -1;
    return 0;
}

/* With --wait: ends every worker's mq_claim_wait (at the end, or on an error). */
static void wake_workers(bench_shared *sh)
{
    long i;
    if (!sh->opt->wait)
        return;
    for (i = 0; i < sh->opt->workers; i++)
        mq_queue_interrupt(sh->workers[i].queue);
}

static void set_stop(bench_shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->stop = 1;
    pthread_mutex_unlock(&sh->mu);
    wake_workers(sh);
}

static void worker_fail(bench_worker *w)
{
    w->failed = 1;
    set_stop(w->sh);
}

/* Event i: its group name, its text {"i":i} (length returned) and its priority. */
static int make_event(long i, long groups, char group[32], char ev[48], int *priority)
{
    long g = i % groups;
    snprintf(group, 32, "bench-%06ld", g);
    *priority = (int)(g % BENCH_PRIORITIES);
    return snprintf(ev, 48, "{\"i\":%ld}", i);
}

/* The event index from {"i":N}; -1 if it is not that. */
static long parse_index(const void *data, size_t len)
{
    char buf[64];
    long i;
    if (data == NULL || len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (sscanf(buf, "{\"i\":%ld}", &i) != 1)
        return -1;
    return i;
}

static void describe_claim_call(char *buf, size_t cap, long batch, int wait)
{
    if (!wait && batch == 1)
        snprintf(buf, cap, "mq_claim");
    else if (!wait)
        snprintf(buf, cap, "mq_claim_batch(max %ld)", batch);
    else if (batch == 1)
        snprintf(buf, cap, "mq_claim_wait(timeout %.0f s)", BENCH_WAIT_S);
    else
        snprintf(buf, cap, "mq_claim_batch(max %ld), on MQ_EMPTY mq_claim_wait(timeout %.0f s)", batch,
                 BENCH_WAIT_S);
}

/* One claim as the mode asks, with its commands and latency counted. MQ_EMPTY from a
 * waiting claim is an empty wait; from a plain one, an empty claim. */
static mq_status claim_one(bench_worker *w, mq_lease **lease, mq_error *err)
{
    const bench_opts *opt = w->sh->opt;
    long batch = w->sh->batch;
    uint64_t c0 = mq_client_command_count(w->client), c1;
    double t0 = now_mono(), t1;
    int waited = 0;
    mq_status st;

    if (opt->wait && batch == 1) {
        st = mq_claim_wait(w->queue, w->worker_id, opt->visibility, 0, BENCH_WAIT_S, lease, err);
        waited = 1;
    } else {
        if (batch == 1)
            st = mq_claim(w->queue, w->worker_id, opt->visibility, 0, lease, err);
        else
            st = mq_claim_batch(w->queue, w->worker_id, opt->visibility, 0, (size_t)batch, lease, err);
        if (st == MQ_EMPTY && opt->wait) {
            c1 = mq_client_command_count(w->client);
            w->claims_empty++;
            w->cmd_empty += c1 - c0;
            c0 = c1;
            t0 = now_mono();
            st = mq_claim_wait(w->queue, w->worker_id, opt->visibility, 0, BENCH_WAIT_S, lease, err);
            waited = 1;
        }
    }
    t1 = now_mono();
    c1 = mq_client_command_count(w->client);

    if (st == MQ_OK) {
        w->claims_ok++;
        w->cmd_claim += c1 - c0;
        if (samples_add(&w->claim_ms, (t1 - t0) * 1e3) != 0) {
            mq_lease_destroy(*lease);
            *lease = NULL;
            if (err != NULL) {
                err->status = MQ_ERR_NOMEM;
                err->server_code = 0;
                snprintf(err->message, sizeof err->message, "bench: out of memory for samples");
            }
            return MQ_ERR_NOMEM;
        }
    } else if (st == MQ_EMPTY) {
        if (waited)
            w->empty_waits++;
        else
            w->claims_empty++;
        w->cmd_empty += c1 - c0;
    } else if (st == MQ_INTERRUPTED) {
        w->cmd_empty += c1 - c0; /* the idle rounds of a wait the interrupt ended */
    }
    return st;
}

static void *worker_main(void *arg)
{
    bench_worker *w = (bench_worker *)arg;
    bench_shared *sh = w->sh;
    const bench_opts *opt = sh->opt;
    /* A lost lease is redelivered after visibility_s; wait that long and more. */
    double stall_s = opt->visibility + 30.0;

    for (;;) {
        mq_lease *lease = NULL;
        mq_error err;
        mq_status st;
        uint64_t c0, c1;
        double t0, t1;
        long idx;
        size_t len = 0, count = 0, k = 0;
        const void *ev;
        int stop, done;

        pthread_mutex_lock(&sh->mu);
        stop = sh->stop;
        pthread_mutex_unlock(&sh->mu);
        if (stop)
            break;

        st = claim_one(w, &lease, &err);
        if (st == MQ_INTERRUPTED) /* --wait: the last event was acked, or a stop */
            break;
        if (st == MQ_EMPTY) {
            int stalled;
            pthread_mutex_lock(&sh->mu);
            done = sh->acked_total >= opt->events;
            stalled = !done && now_mono() - sh->last_progress > stall_s;
            if (stalled && !sh->stop) {
                fprintf(stderr, "bench: no event acked for %.0f s; %ld of %ld acked\n", stall_s,
                        sh->acked_total, opt->events);
                sh->stop = 1;
            }
            pthread_mutex_unlock(&sh->mu);
            if (done || stalled)
                break;
            if (!opt->wait)
                sleep_ms(BENCH_IDLE_SLEEP_MS);
            continue;
        }
        if (st != MQ_OK) {
            report_error("claim", st, &err);
            worker_fail(w);
            break;
        }

        count = mq_lease_count(lease);
        for (k = 0; k < count; k++) {
            ev = mq_lease_event_at(lease, k, &len);
            idx = parse_index(ev, len);
            if (idx < 0 || idx >= opt->events) {
                fprintf(stderr, "bench: unexpected event %.*s (group %s, seq %lld)\n", (int)len,
                        (const char *)ev, mq_lease_group(lease), (long long)mq_lease_seq_at(lease, k));
                worker_fail(w);
                break;
            }
        }
        if (k < count) {
            mq_lease_destroy(lease);
            break;
        }

        c0 = mq_client_command_count(w->client);
        t0 = now_mono();
        st = mq_ack(w->queue, lease, &err);
        t1 = now_mono();
        c1 = mq_client_command_count(w->client);
        w->cmd_ack += c1 - c0;

        if (st != MQ_OK && st != MQ_LEASE_LOST) {
            report_error("mq_ack", st, &err);
            worker_fail(w);
            mq_lease_destroy(lease);
            break;
        }
        /* MQ_LEASE_LOST: the event is removed all the same (it was processed), but
         * the new owner will process it again: counted, and shows as a duplicate. */
        if (st == MQ_LEASE_LOST)
            w->lease_lost++;
        w->acks++;
        if (samples_add(&w->ack_ms, (t1 - t0) * 1e3) != 0) {
            fprintf(stderr, "bench: out of memory\n");
            worker_fail(w);
            mq_lease_destroy(lease);
            break;
        }

        pthread_mutex_lock(&sh->mu);
        for (k = 0; k < count; k++) {
            ev = mq_lease_event_at(lease, k, &len);
            idx = parse_index(ev, len);
            if (sh->acked[idx]++ == 0)
                sh->acked_total++;
            else
                sh->duplicates++;
            if (mq_lease_seq_at(lease, k) != sh->seq_of[idx])
                sh->seq_mismatch++;
        }
        sh->last_progress = now_mono();
        done = sh->acked_total >= opt->events;
        pthread_mutex_unlock(&sh->mu);
        mq_lease_destroy(lease);
        if (done)
            wake_workers(sh); /* --wait: nothing is left to wait for */
    }
    return NULL;
}

/* Phase 1: every event, in batches of `batch` (1: mq_publish). seq_of[i] receives
 * event i's seq. 0 on success. */
static int publish_all(mq_queue *queue, const bench_opts *opt, long batch, int64_t *seq_of)
{
    long i, k;
    char group[32], ev[48];
    int len, priority;
    mq_error err;
    mq_status st = MQ_OK;

    for (i = 0; i < opt->events; i += batch) {
        long n = opt->events - i < batch ? opt->events - i : batch;
        if (batch == 1) {
            len = make_event(i, opt->groups, group, ev, &priority);
            st = mq_publish(queue, group, ev, (size_t)len, priority, &seq_of[i], &err);
        } else {
            mq_batch *b = NULL;
            int64_t first = 0;
            st = mq_batch_new(&b, &err);
            for (k = 0; st == MQ_OK && k < n; k++) {
                len = make_event(i + k, opt->groups, group, ev, &priority);
                st = mq_batch_add(b, group, ev, (size_t)len, priority, &err);
            }
            if (st == MQ_OK)
                st = mq_publish_batch(queue, b, &first, &err);
            mq_batch_destroy(b);
            for (k = 0; st == MQ_OK && k < n; k++)
                seq_of[i + k] = first + k;
        }
        if (st != MQ_OK) {
            report_error(batch == 1 ? "mq_publish" : "mq_publish_batch", st, &err);
            return -1;
        }
    }
    return 0;
}

/* Runs one mode (B = batch) on the queue db.prefix: publish, drain, check. Fills *res
 * and returns 0 when there are figures (res->ok tells whether the checks passed);
 * -1 when the run could not start or its publish failed (nothing to report). */
static int run_mode(const bench_opts *opt, const char *db, long batch, bench_result *res)
{
    bench_shared sh;
    bench_worker *w = NULL;
    pthread_t *threads = NULL;
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    mq_error err;
    mq_status st;
    samples claim_all = {NULL, 0, 0}, ack_all = {NULL, 0, 0};
    uint64_t c0, cmd_workers = 0;
    long i, started = 0;
    double t0;
    int rc = -1;

    memset(res, 0, sizeof *res);
    res->batch = batch;
    res->wait = opt->wait;
    if (batch == 1)
        snprintf(res->mode, sizeof res->mode, "single");
    else
        snprintf(res->mode, sizeof res->mode, "batch(%ld)", batch);
    snprintf(res->prefix, sizeof res->prefix, batch == 1 ? "bench_single" : "bench_batch%ld", batch);
    describe_claim_call(res->claim_call, sizeof res->claim_call, batch, opt->wait);

    memset(&sh, 0, sizeof sh);
    sh.opt = opt;
    sh.batch = batch;
    if (pthread_mutex_init(&sh.mu, NULL) != 0) {
        fprintf(stderr, "bench: pthread_mutex_init failed\n");
        return -1;
    }
    sh.seq_of = (int64_t *)calloc((size_t)opt->events, sizeof *sh.seq_of);
    sh.acked = (int *)calloc((size_t)opt->events, sizeof *sh.acked);
    w = (bench_worker *)calloc((size_t)opt->workers, sizeof *w);
    threads = (pthread_t *)calloc((size_t)opt->workers, sizeof *threads);
    if (!sh.seq_of || !sh.acked || !w || !threads) {
        fprintf(stderr, "bench: out of memory\n");
        goto out;
    }
    sh.workers = w;

    st = mq_client_new(opt->uri, &client, &err);
    if (st != MQ_OK) {
        report_error("mq_client_new", st, &err);
        goto out;
    }
    st = mq_queue_new(client, db, res->prefix, &queue, &err);
    if (st != MQ_OK) {
        report_error("mq_queue_new", st, &err);
        goto out;
    }

    /* Workers' clients and queues are opened before any timing: their index
     * creation is not part of the figures. */
    for (i = 0; i < opt->workers; i++) {
        w[i].sh = &sh;
        snprintf(w[i].worker_id, sizeof w[i].worker_id, "bench-worker-%ld", i + 1);
        st = mq_client_new(opt->uri, &w[i].client, &err);
        if (st != MQ_OK) {
            report_error("mq_client_new (worker)", st, &err);
            goto out;
        }
        st = mq_queue_new(w[i].client, db, res->prefix, &w[i].queue, &err);
        if (st != MQ_OK) {
            report_error("mq_queue_new (worker)", st, &err);
            goto out;
        }
    }

    /* Phase 1: publish. */
    c0 = mq_client_command_count(client);
    t0 = now_mono();
    if (publish_all(queue, opt, batch, sh.seq_of) != 0)
        goto out;
    res->t_pub = now_mono() - t0;
    res->cmd_pub = mq_client_command_count(client) - c0;

    /* Phase 2: drain. */
    for (i = 0; i < opt->workers; i++)
        w[i].cmd_start = mq_client_command_count(w[i].client);
    sh.last_progress = now_mono();
    t0 = now_mono();
    for (i = 0; i < opt->workers; i++) {
        if (pthread_create(&threads[i], NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "bench: pthread_create failed\n");
            set_stop(&sh);
            res->failed = 1;
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    res->t_drain = now_mono() - t0;

    for (i = 0; i < opt->workers; i++) {
        res->failed |= w[i].failed;
        res->cmd_claim += w[i].cmd_claim;
        res->cmd_empty += w[i].cmd_empty;
        res->cmd_ack += w[i].cmd_ack;
        res->claims_ok += w[i].claims_ok;
        res->claims_empty += w[i].claims_empty;
        res->empty_waits += w[i].empty_waits;
        res->acks += w[i].acks;
        res->lease_lost += w[i].lease_lost;
        /* Everything the worker's client sent, timed calls or not (a waiting
         * claim's change-stream watcher sends commands of its own). */
        cmd_workers += mq_client_command_count(w[i].client) - w[i].cmd_start;
        if (samples_merge(&claim_all, &w[i].claim_ms) != 0 ||
            samples_merge(&ack_all, &w[i].ack_ms) != 0) {
            fprintf(stderr, "bench: out of memory\n");
            res->failed = 1;
        }
    }
    qsort(claim_all.v, claim_all.n, sizeof *claim_all.v, cmp_double);
    qsort(ack_all.v, ack_all.n, sizeof *ack_all.v, cmp_double);
    res->claim_p50 = percentile(&claim_all, 50);
    res->claim_p99 = percentile(&claim_all, 99);
    res->ack_p50 = percentile(&ack_all, 50);
    res->ack_p99 = percentile(&ack_all, 99);
    for (i = 0; i < opt->events; i++)
        if (sh.acked[i] == 0)
            res->lost++;
    res->acked_total = sh.acked_total;
    res->duplicates = sh.duplicates;
    res->seq_mismatch = sh.seq_mismatch;
    res->cmd_other = cmd_workers - (res->cmd_claim + res->cmd_empty + res->cmd_ack);
    res->cmd_total = res->cmd_pub + cmd_workers;
    res->ok = !res->failed && res->lost == 0 && res->duplicates == 0 && res->seq_mismatch == 0;
    rc = 0;

out:
    if (w != NULL) {
        for (i = 0; i < opt->workers; i++) {
            mq_queue_destroy(w[i].queue);
            mq_client_destroy(w[i].client);
            free(w[i].claim_ms.v);
            free(w[i].ack_ms.v);
        }
    }
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    free(claim_all.v);
    free(ack_all.v);
    free(sh.seq_of);
    free(sh.acked);
    free(w);
    free(threads);
    pthread_mutex_destroy(&sh.mu);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench [--uri URI] [--events N] [--groups G] [--workers W]\n"
            "             [--visibility S] [--batch B] [--wait] [--json]\n"
            "       bench [--uri URI] --waiters N [--events E] [--json]\n"
            "       bench [--uri URI] --soak MINUTES [--groups G]\n"
            "  --uri URI        MongoDB URI (default: env MONGOMQ_URI)\n"
            "  --events N       events to publish and drain per mode (default 2000)\n"
            "  --groups G       groups, events spread round-robin (default 50)\n"
            "  --workers W      draining threads, one client each (default 4)\n"
            "  --visibility S   lease seconds for each claim (default 30)\n"
            "  --batch B        run only the mode that publishes and claims B events at\n"
            "                   a time (default: both single, B = 1, and batch, B = %d)\n"
            "  --wait           claim with mq_claim_wait (timeout %.0f s) instead of\n"
            "                   sleeping after MQ_EMPTY\n"
            "  --waiters N      measure wake-ups per event: N threads wait on one queue,\n"
            "                   E events are published one at a time (use --events 100)\n"
            "  --soak MINUTES   publish, claim and ack for MINUTES (faults off), printing\n"
            "                   events/s and the process RSS each minute\n"
            "  --json           print one JSON object instead of the tables\n",
            BENCH_DEFAULT_BATCH, BENCH_WAIT_S);
}

/* --name VALUE or --name=VALUE; returns the value or NULL (and advances *i). */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "bench: %s needs a value\n", name);
        exit(2);
    }
    return argv[++*i];
}

static long parse_long(const char *name, const char *v, long min, long max)
{
    char *end;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "bench: %s must be an integer in %ld..%ld (got \"%s\")\n", name, min,
                max, v);
        exit(2);
    }
    return x;
}

static double parse_double(const char *name, const char *v)
{
    char *end;
    double x;
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(x > 0.0) || x > 1e6) {
        fprintf(stderr, "bench: %s must be a number of seconds > 0 (got \"%s\")\n", name, v);
        exit(2);
    }
    return x;
}

static void parse_args(int argc, char **argv, bench_opts *o)
{
    int i;
    o->uri = getenv("MONGOMQ_URI");
    o->events = 2000;
    o->groups = 50;
    o->workers = 4;
    o->visibility = 30.0;
    o->batch = 0;
    o->wait = 0;
    o->json = 0;
    o->waiters = 0;
    o->soak = 0;
    for (i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--wait") == 0)
            o->wait = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value(argc, argv, &i, "--uri")) != NULL)
            o->uri = v;
        else if ((v = opt_value(argc, argv, &i, "--events")) != NULL)
            o->events = parse_long("--events", v, 1, 100000000L);
        else if ((v = opt_value(argc, argv, &i, "--groups")) != NULL)
            o->groups = parse_long("--groups", v, 1, 10000000L);
        else if ((v = opt_value(argc, argv, &i, "--workers")) != NULL)
            o->workers = parse_long("--workers", v, 1, 1024);
        else if ((v = opt_value(argc, argv, &i, "--visibility")) != NULL)
            o->visibility = parse_double("--visibility", v);
        else if ((v = opt_value(argc, argv, &i, "--batch")) != NULL)
            o->batch = parse_long("--batch", v, 1, MQ_BATCH_MAX);
        else if ((v = opt_value(argc, argv, &i, "--waiters")) != NULL)
            o->waiters = parse_long("--waiters", v, 1, 1024);
        else if ((v = opt_value(argc, argv, &i, "--soak")) != NULL)
            o->soak = parse_double("--soak", v);
        else {
            fprintf(stderr, "bench: unknown argument: %s\n", argv[i]);
            usage(stderr);
            exit(2);
        }
    }
    if (o->uri == NULL || o->uri[0] == '\0') {
        fprintf(stderr, "bench: no URI: pass --uri or set MONGOMQ_URI\n");
        usage(stderr);
        exit(2);
    }
}

static double per_event(uint64_t cmds, long events)
{
    return events > 0 ? (double)cmds / (double)events : 0.0;
}

static double rate(long n, double secs)
{
    return secs > 0.0 ? (double)n / secs : 0.0;
}

/* x rounded to `digits` decimals (x >= 0), so the JSON shows no float noise. */
static double rnd(double x, int digits)
{
    double scale = 1.0;
    while (digits-- > 0)
        scale *= 10.0;
    return (double)(long long)(x * scale + 0.5) / scale;
}

static void print_table(const bench_opts *opt, const char *db, const bench_result *r)
{
    long n = opt->events;
    printf("== %s: queue %s.%s_*\n", r->mode, db, r->prefix);
    printf("events %ld  groups %ld  workers %ld  batch %ld  visibility %.3g s\n", n, opt->groups,
           opt->workers, r->batch, opt->visibility);
    printf("publish call: %s   claim call: %s\n\n", r->batch == 1 ? "mq_publish" : "mq_publish_batch",
           r->claim_call);
    printf("%-10s %10s %12s %10s %10s %14s\n", "phase", "seconds", "events/s", "p50 ms",
           "p99 ms", "commands/event");
    printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "publish", r->t_pub, rate(n, r->t_pub), "-",
           "-", per_event(r->cmd_pub, n));
    printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "drain", r->t_drain,
           rate(r->acked_total, r->t_drain), "-", "-", per_event(r->cmd_total - r->cmd_pub, n));
    printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  claim", "-", "-", r->claim_p50,
           r->claim_p99, per_event(r->cmd_claim, n));
    printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  ack", "-", "-", r->ack_p50, r->ack_p99,
           per_event(r->cmd_ack, n));
    printf("%-10s %10s %12s %10s %10s %14.2f\n", "  empty", "-", "-", "-", "-",
           per_event(r->cmd_empty, n));
    printf("%-10s %10s %12s %10s %10s %14.2f\n", "  other", "-", "-", "-", "-",
           per_event(r->cmd_other, n));
    printf("%-10s %10.3f %12s %10s %10s %14.2f\n\n", "total", r->t_pub + r->t_drain, "-", "-", "-",
           per_event(r->cmd_total, n));
    printf("claims %ld (+ %ld empty)  empty waits %ld  acks %ld  lease lost %ld\n", r->claims_ok,
           r->claims_empty, r->empty_waits, r->acks, r->lease_lost);
    printf("commands: publish %llu  claim %llu  ack %llu  empty claims %llu  other %llu  total %llu\n",
           (unsigned long long)r->cmd_pub, (unsigned long long)r->cmd_claim,
           (unsigned long long)r->cmd_ack, (unsigned long long)r->cmd_empty,
           (unsigned long long)r->cmd_other, (unsigned long long)r->cmd_total);
    printf("every event acked exactly once: %s (lost %ld, duplicated %ld, seq mismatch %ld)\n\n",
           r->ok ? "yes" : "NO", r->lost, r->duplicates, r->seq_mismatch);
}

/* The mode's JSON object (NULL when jansson fails). */
static json_t *result_json(const bench_opts *opt, const char *db, const bench_result *r)
{
    long n = opt->events;
    return json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:b, s:s, s:s, "
        "s:f, s:f, s:f, s:f, "
        "s:f, s:f, s:f, s:f, "
        "s:{s:f, s:f, s:f, s:f, s:f, s:f}, "
        "s:{s:I, s:I, s:I, s:I, s:I, s:I}, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
        "mode", r->batch == 1 ? "single" : "batch", "database", db, "prefix", r->prefix,
        "events", (json_int_t)n, "groups", (json_int_t)opt->groups,
        "workers", (json_int_t)opt->workers, "batch", (json_int_t)r->batch,
        "visibility_s", opt->visibility, "wait", r->wait,
        "publish_call", r->batch == 1 ? "mq_publish" : "mq_publish_batch", "claim_call", r->claim_call,
        "publish_s", rnd(r->t_pub, 4), "publish_eps", rnd(rate(n, r->t_pub), 1),
        "drain_s", rnd(r->t_drain, 4), "drain_eps", rnd(rate(r->acked_total, r->t_drain), 1),
        "claim_p50_ms", rnd(r->claim_p50, 4), "claim_p99_ms", rnd(r->claim_p99, 4),
        "ack_p50_ms", rnd(r->ack_p50, 4), "ack_p99_ms", rnd(r->ack_p99, 4),
        "commands_per_event",
        "publish", rnd(per_event(r->cmd_pub, n), 3), "claim", rnd(per_event(r->cmd_claim, n), 3),
        "ack", rnd(per_event(r->cmd_ack, n), 3), "empty_claim", rnd(per_event(r->cmd_empty, n), 3),
        "other", rnd(per_event(r->cmd_other, n), 3), "total", rnd(per_event(r->cmd_total, n), 3),
        "commands",
        "publish", (json_int_t)r->cmd_pub, "claim", (json_int_t)r->cmd_claim,
        "ack", (json_int_t)r->cmd_ack, "empty_claim", (json_int_t)r->cmd_empty,
        "other", (json_int_t)r->cmd_other, "total", (json_int_t)r->cmd_total,
        "claims", (json_int_t)r->claims_ok, "empty_claims", (json_int_t)r->claims_empty,
        "empty_waits", (json_int_t)r->empty_waits, "lease_lost", (json_int_t)r->lease_lost,
        "lost", (json_int_t)r->lost, "duplicated", (json_int_t)r->duplicates,
        "seq_mismatch", (json_int_t)r->seq_mismatch, "ok", r->ok);
}

/* ---- --waiters N: wake-ups per event ---------------------------------------------
 *
 * N threads share one client and one queue handle (one process's waiters) and loop on
 * mq_claim_wait(timeout 5 s), acking what they get. Another client publishes E events,
 * one at a time, each to a new group, and waits until a waiter acked it, then 100 ms
 * more so every waiter is asleep again. The waiters' client's command count across
 * that window, less the idle rate measured over 1 s before (the watcher's getMores
 * and the waiters' safety-net slices), is what the event cost there:
 *   the waiter that gets it: claim.lease + claim.head, then ack (ack.delete, ack.drop,
 *   ack.recheck), then its next wait's claim.lease and next.due = 7 commands;
 *   every other waiter the event woke: claim.lease (empty) + next.due = 2 commands.
 * So wake-ups per event = 1 + (commands - 7) / 2. */

typedef struct {
    mq_queue *queue;
    long acked;        /* under mu */
    int stop, failed;  /* under mu */
    pthread_mutex_t mu;
} waiters_shared;

typedef struct {
    waiters_shared *sh;
    int index;
} waiters_arg;

static void *waiter_main(void *p)
{
    waiters_arg *a = p;
    waiters_shared *sh = a->sh;
    char id[32];
    snprintf(id, sizeof id, "waiter-%d", a->index);
    for (;;) {
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim_wait(sh->queue, id, 30, 0, 5.0, &lease, &err);
        if (st == MQ_INTERRUPTED)
            return NULL;
        if (st == MQ_EMPTY)
            continue;
        if (st == MQ_OK)
            st = mq_ack(sh->queue, lease, &err);
        mq_lease_destroy(lease);
        pthread_mutex_lock(&sh->mu);
        if (st == MQ_OK) {
            sh->acked++;
        } else {
            report_error("waiter", st, &err);
            sh->failed = 1;
        }
        pthread_mutex_unlock(&sh->mu);
        if (st != MQ_OK)
            return NULL;
    }
}

static long waiters_acked(waiters_shared *sh, int *failed)
{
    long n;
    pthread_mutex_lock(&sh->mu);
    n = sh->acked;
    *failed = sh->failed;
    pthread_mutex_unlock(&sh->mu);
    return n;
}

static int run_waiters(const bench_opts *opt, const char *db)
{
    mq_client *wclient = NULL, *pclient = NULL;
    mq_queue *pqueue = NULL;
    waiters_shared sh;
    waiters_arg *args = calloc((size_t)opt->waiters, sizeof *args);
    pthread_t *threads = calloc((size_t)opt->waiters, sizeof *threads);
    mq_error err;
    mq_status st;
    long i, started = 0;
    int failed = 0, rc = 1;
    double idle_rate, cmds = 0, window = 0, latency = 0;
    uint64_t c0;

    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    if (args == NULL || threads == NULL)
        goto out;
    if ((st = mq_client_new(opt->uri, &wclient, &err)) != MQ_OK ||
        (st = mq_client_new(opt->uri, &pclient, &err)) != MQ_OK) {
        report_error("mq_client_new", st, &err);
        goto out;
    }
    if ((st = mq_queue_new(wclient, db, "bench_waiters", &sh.queue, &err)) != MQ_OK ||
        (st = mq_queue_new(pclient, db, "bench_waiters", &pqueue, &err)) != MQ_OK) {
        report_error("mq_queue_new", st, &err);
        goto out;
    }
    for (i = 0; i < opt->waiters; i++) {
        args[i].sh = &sh;
        args[i].index = (int)i;
        if (pthread_create(&threads[i], NULL, waiter_main, &args[i]) != 0)
            goto stop;
        started++;
    }
    sleep_ms(1000); /* the watcher is up and every waiter asleep */
    c0 = mq_client_command_count(wclient);
    sleep_ms(1000);
    idle_rate = (double)(mq_client_command_count(wclient) - c0);

    for (i = 0; i < opt->events; i++) {
        char group[32];
        double t0 = now_mono(), t_acked;
        uint64_t before = mq_client_command_count(wclient);
        snprintf(group, sizeof group, "g%ld", i);
        if ((st = mq_publish(pqueue, group, "{}", 2, 0, NULL, &err)) != MQ_OK) {
            report_error("mq_publish", st, &err);
            goto stop;
        }
        while (waiters_acked(&sh, &failed) < i + 1 && !failed && now_mono() - t0 < 10)
            sleep_ms(1);
        if (failed || waiters_acked(&sh, &failed) < i + 1) {
            fprintf(stderr, "bench: event %ld was not acked within 10 s\n", i);
            goto stop;
        }
        t_acked = now_mono();
        latency += t_acked - t0;
        sleep_ms(100);
        cmds += (double)(mq_client_command_count(wclient) - before);
        window += now_mono() - t0;
    }
    {
        double n = (double)opt->events;
        double per_event = (cmds - idle_rate * window) / n;
        double wakeups = 1.0 + (per_event - 7.0) / 2.0;
        if (opt->json) {
            json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "library", mq_version(),
                                  "mode", "waiters", "waiters", (json_int_t)opt->waiters, "events",
                                  (json_int_t)opt->events, "idle_commands_per_s", rnd(idle_rate, 1),
                                  "raw_commands_per_event", rnd(cmds / n, 2), "commands_per_event",
                                  rnd(per_event > 0 ? per_event : 0, 2), "wakeups_per_event",
                                  rnd(wakeups > 0 ? wakeups : 0, 2), "publish_to_ack_ms",
                                  rnd(latency / n * 1e3, 2));
            char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
            if (text != NULL)
                printf("%s\n", text);
            free(text);
            json_decref(o);
        } else {
            printf("== waiters: %ld threads waiting on one queue of one client, %ld events one at a time\n",
                   opt->waiters, opt->events);
            printf("idle commands/s (watcher, safety-net slices)  %.1f\n", idle_rate);
            printf("waiters' commands per event, raw              %.2f\n", cmds / n);
            printf("waiters' commands per event, less idle        %.2f\n", per_event);
            printf("wake-ups per event (1 + (commands - 7) / 2)   %.2f\n", wakeups);
            printf("publish -> acked by a waiter, mean            %.2f ms\n", latency / n * 1e3);
        }
    }
    rc = 0;
stop:
    mq_queue_interrupt(sh.queue);
    for (i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
out:
    mq_queue_destroy(pqueue);
    mq_queue_destroy(sh.queue);
    mq_client_destroy(pclient);
    mq_client_destroy(wclient);
    pthread_mutex_destroy(&sh.mu);
    free(args);
    free(threads);
    return rc;
}

/* ---- --soak: a long steady run, a line a minute (issue 14) ---- */

/* The process's resident set in KiB (from /proc/self/statm), or -1. */
static long rss_kib(void)
{
    long pages_total = 0, pages_rss = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL) return -1;
    if (fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = -1;
    fclose(f);
    return pages_rss < 0 ? -1 : pages_rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Publishes 100 events over the groups, claims and acks until the queue is empty,
 * and again, for opt->soak minutes. Every event must be delivered once with its
 * text; a failed call ends the run (exit 1). */
static int run_soak(const bench_opts *opt, const char *db)
{
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    mq_error err;
    mq_status st;
    double t0 = now_mono(), minute_start = t0, end = t0 + opt->soak * 60.0;
    long total = 0, minute_events = 0, minute = 0, first_rss = -1, max_rss = 0;
    long round = 0;

    if ((st = mq_client_new(opt->uri, &client, &err)) != MQ_OK ||
        (st = mq_queue_new(client, db, "soak", &queue, &err)) != MQ_OK) {
        report_error("open", st, &err);
        if (client) mq_client_destroy(client);
        return 1;
    }
    printf("libmongomq %s  database %s  soak %.1f min\n", mq_version(), db, opt->soak);
    printf("%-7s %12s %12s %10s\n", "minute", "events", "events/s", "RSS MiB");
    fflush(stdout);
    while (now_mono() < end) {
        long i, n = 100, got = 0;
        char seen[100] = {0};
        for (i = 0; i < n; i++) {
            char group[32], ev[48];
            snprintf(group, sizeof group, "g%ld", i % opt->groups);
            snprintf(ev, sizeof ev, "%ld:%ld", round, i);
            if ((st = mq_publish(queue, group, ev, strlen(ev), 0, NULL, &err)) != MQ_OK) {
                report_error("publish", st, &err);
                goto fail;
            }
        }
        while (got < n) {
            mq_lease *lease = NULL;
            st = mq_claim(queue, "soak", opt->visibility, 0, &lease, &err);
            if (st == MQ_EMPTY) {
                fprintf(stderr, "bench: soak: MQ_EMPTY with %ld of %ld events still unclaimed\n", n - got, n);
                goto fail;
            }
            if (st != MQ_OK) {
                report_error("claim", st, &err);
                goto fail;
            }
            /* its text must be this round's "round:i", for an i not delivered yet */
            size_t len = 0;
            const char *text = mq_lease_event(lease, &len);
            char want[48], buf[48];
            long r = -1, k = -1;
            snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), text ? text : "");
            if (sscanf(buf, "%ld:%ld", &r, &k) != 2 || r != round || k < 0 || k >= n || seen[k] ||
                (snprintf(want, sizeof want, "%ld:%ld", r, k), strlen(want) != len || memcmp(want, text, len) != 0)) {
                fprintf(stderr, "bench: soak: round %ld delivered \"%s\" (%zu bytes): not an undelivered event of it\n",
                        round, buf, len);
                mq_lease_destroy(lease);
                goto fail;
            }
            seen[k] = 1;
            if ((st = mq_ack(queue, lease, &err)) != MQ_OK) {
                report_error("ack", st, &err);
                mq_lease_destroy(lease);
                goto fail;
            }
            mq_lease_destroy(lease);
            got++;
        }
        total += n;
        minute_events += n;
        round++;
        if (now_mono() - minute_start >= 60.0 || now_mono() >= end) {
            double secs = now_mono() - minute_start;
            long rss = rss_kib();
            if (first_rss < 0) first_rss = rss;
            if (rss > max_rss) max_rss = rss;
            printf("%-7ld %12ld %12.0f %10.1f\n", ++minute, minute_events, minute_events / secs, rss / 1024.0);
            fflush(stdout);
            minute_events = 0;
            minute_start = now_mono();
        }
    }
    printf("soak: %ld events in %.1f s (%.0f/s); RSS first minute %.1f MiB, max %.1f MiB, last %.1f MiB\n", total,
           now_mono() - t0, total / (now_mono() - t0), first_rss / 1024.0, max_rss / 1024.0, rss_kib() / 1024.0);
    mq_queue_drop(queue, &err);
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    return 0;
fail:
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    return 1;
}

int main(int argc, char **argv)
{
    bench_opts opt;
    bench_result res[BENCH_MAX_MODES];
    long batches[BENCH_MAX_MODES];
    int nmodes = 0, ran = 0, all_ok = 1, m;
    char db[96];
    json_t *modes = NULL;

    parse_args(argc, argv, &opt);
    mq_log_set_handler(bench_log, NULL);
    if (opt.waiters > 0) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_waiters(&opt, db);
    }
    if (opt.soak > 0) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_soak(&opt, db);
    }

    if (opt.batch == 0) {
        batches[nmodes++] = 1;
        batches[nmodes++] = BENCH_DEFAULT_BATCH;
    } else {
        batches[nmodes++] = opt.batch;
    }

    /* One fresh database per run, one fresh prefix per mode (the test server is
     * in-memory: the database goes with it). */
    snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));

    if (opt.json) {
        modes = json_array();
        if (modes == NULL) {
            fprintf(stderr, "bench: building the JSON output failed\n");
            return 1;
        }
    } else {
        printf("libmongomq %s  database %s\n\n", mq_version(), db);
        fflush(stdout);
    }

    for (m = 0; m < nmodes; m++) {
        if (run_mode(&opt, db, batches[m], &res[m]) != 0) {
            all_ok = 0; /* nothing to report, and the next mode would fail alike */
            break;
        }
        ran++;
        all_ok &= res[m].ok;
        if (opt.json) {
            if (json_array_append_new(modes, result_json(&opt, db, &res[m])) != 0) {
                fprintf(stderr, "bench: building the JSON output failed\n");
                json_decref(modes);
                return 1;
            }
        } else {
            print_table(&opt, db, &res[m]);
            fflush(stdout);
        }
    }

    if (opt.json) {
        json_t *o = json_pack("{s:s, s:o, s:b}", "library", mq_version(), "modes", modes, "ok", all_ok);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
        if (s == NULL) {
            fprintf(stderr, "bench: building the JSON output failed\n");
            json_decref(o);
            return 1;
        }
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else if (ran > 0) {
        printf("commands per event:");
        for (m = 0; m < ran; m++)
            printf("%s %s %.2f", m ? "," : "", res[m].mode, per_event(res[m].cmd_total, opt.events));
        printf("\n");
    }
    return all_ok ? 0 : 1;
}
