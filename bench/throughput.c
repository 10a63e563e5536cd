/*
 * throughput.c — the bench's default modes, single (B = 1) and batch (B > 1): one
 * thread publishes, W workers (one client each) claim and ack until every event is
 * acked, and each call's latency and server commands are counted (bench.c's top
 * comment: phases, figures, checks). run_mode runs one mode; print_table and
 * result_json report it.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_IDLE_SLEEP_MS 2
#define BENCH_PRIORITIES (MQ_PRIORITY_MAX - MQ_PRIORITY_MIN + 1)

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

static int samples_add(samples *s, double v) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        double *p = (double *)realloc(s->v, cap * sizeof *p);
        if (p == NULL) return -1;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples; 0 when there are none. */
static double percentile(const samples *s, double p) {
    size_t rank;
    if (s->n == 0) return 0.0;
    rank = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > s->n) rank = s->n;
    return s->v[rank - 1];
}

static int samples_merge(samples *dst, const samples *src) {
    size_t i;
    for (i = 0; i < src->n; i++)
        if (samples_add(dst, src->v[i]) != 0) return -1;
    return 0;
}

/* With --wait: ends every worker's mq_claim_wait (at the end, or on an error). */
static void wake_workers(bench_shared *sh) {
    long i;
    if (!sh->opt->wait) return;
    for (i = 0; i < sh->opt->workers; i++) mq_queue_interrupt(sh->workers[i].queue);
}

static void set_stop(bench_shared *sh) {
    pthread_mutex_lock(&sh->mu);
    sh->stop = 1;
    pthread_mutex_unlock(&sh->mu);
    wake_workers(sh);
}

static void worker_fail(bench_worker *w) {
    w->failed = 1;
    set_stop(w->sh);
}

/* Event i: its group name, its text {"i":i} (length returned) and its priority. */
static int make_event(long i, long groups, char group[32], char ev[48], int *priority) {
    long g = i % groups;
    snprintf(group, 32, "bench-%06ld", g);
    *priority = (int)(g % BENCH_PRIORITIES);
    return snprintf(ev, 48, "{\"i\":%ld}", i);
}

/* The event index from {"i":N}; -1 if it is not that. */
static long parse_index(const void *data, size_t len) {
    char buf[64];
    long i;
    if (data == NULL || len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (sscanf(buf, "{\"i\":%ld}", &i) != 1) return -1;
    return i;
}

static void describe_claim_call(char *buf, size_t cap, long batch, int wait) {
    if (!wait && batch == 1)
        snprintf(buf, cap, "mq_claim");
    else if (!wait)
        snprintf(buf, cap, "mq_claim_batch(max %ld)", batch);
    else if (batch == 1)
        snprintf(buf, cap, "mq_claim_wait(timeout %.0f s)", BENCH_WAIT_S);
    else
        snprintf(buf, cap, "mq_claim_batch(max %ld), on MQ_EMPTY mq_claim_wait(timeout %.0f s)", batch, BENCH_WAIT_S);
}

/* One claim as the mode asks, with its commands and latency counted. MQ_EMPTY from a
 * waiting claim is an empty wait; from a plain one, an empty claim. */
static mq_status claim_one(bench_worker *w, mq_lease **lease, mq_error *err) {
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

static void *worker_main(void *arg) {
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
        if (stop) break;

        st = claim_one(w, &lease, &err);
        if (st == MQ_INTERRUPTED) /* --wait: the last event was acked, or a stop */
            break;
        if (st == MQ_EMPTY) {
            int stalled;
            pthread_mutex_lock(&sh->mu);
            done = sh->acked_total >= opt->events;
            stalled = !done && now_mono() - sh->last_progress > stall_s;
            if (stalled && !sh->stop) {
                fprintf(stderr, "bench: no event acked for %.0f s; %ld of %ld acked\n", stall_s, sh->acked_total,
                        opt->events);
                sh->stop = 1;
            }
            pthread_mutex_unlock(&sh->mu);
            if (done || stalled) break;
            if (!opt->wait) sleep_ms(BENCH_IDLE_SLEEP_MS);
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
                fprintf(stderr, "bench: unexpected event %.*s (group %s, seq %lld)\n", (int)len, (const char *)ev,
                        mq_lease_group(lease), (long long)mq_lease_seq_at(lease, k));
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
        if (st == MQ_LEASE_LOST) w->lease_lost++;
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
            if (mq_lease_seq_at(lease, k) != sh->seq_of[idx]) sh->seq_mismatch++;
        }
        sh->last_progress = now_mono();
        done = sh->acked_total >= opt->events;
        pthread_mutex_unlock(&sh->mu);
        mq_lease_destroy(lease);
        if (done) wake_workers(sh); /* --wait: nothing is left to wait for */
    }
    return NULL;
}

/* Phase 1: every event, in batches of `batch` (1: mq_publish). seq_of[i] receives
 * event i's seq. 0 on success. */
static int publish_all(mq_queue *queue, const bench_opts *opt, long batch, int64_t *seq_of) {
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
            if (st == MQ_OK) st = mq_publish_batch(queue, b, &first, &err);
            mq_batch_destroy(b);
            for (k = 0; st == MQ_OK && k < n; k++) seq_of[i + k] = first + k;
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
int run_mode(const bench_opts *opt, const char *db, long batch, bench_result *res) {
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
    if (publish_all(queue, opt, batch, sh.seq_of) != 0) goto out;
    res->t_pub = now_mono() - t0;
    res->cmd_pub = mq_client_command_count(client) - c0;

    /* Phase 2: drain. */
    for (i = 0; i < opt->workers; i++) w[i].cmd_start = mq_client_command_count(w[i].client);
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
    for (i = 0; i < started; i++) pthread_join(threads[i], NULL);
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
        if (samples_merge(&claim_all, &w[i].claim_ms) != 0 || samples_merge(&ack_all, &w[i].ack_ms) != 0) {
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
        if (sh.acked[i] == 0) res->lost++;
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

void print_table(const bench_opts *opt, const char *db, const bench_result *r) {
    long n = opt->events;
    printf("== %s: queue %s.%s_*\n", r->mode, db, r->prefix);
    printf("events %ld  groups %ld  workers %ld  batch %ld  visibility %.3g s\n", n, opt->groups, opt->workers,
           r->batch, opt->visibility);
    printf("publish call: %s   claim call: %s\n\n", r->batch == 1 ? "mq_publish" : "mq_publish_batch", r->claim_call);
    printf("%-10s %10s %12s %10s %10s %14s\n", "phase", "seconds", "events/s", "p50 ms", "p99 ms", "commands/event");
    printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "publish", r->t_pub, rate(n, r->t_pub), "-", "-",
           per_event(r->cmd_pub, n));
    printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "drain", r->t_drain, rate(r->acked_total, r->t_drain), "-", "-",
           per_event(r->cmd_total - r->cmd_pub, n));
    printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  claim", "-", "-", r->claim_p50, r->claim_p99,
           per_event(r->cmd_claim, n));
    printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  ack", "-", "-", r->ack_p50, r->ack_p99,
           per_event(r->cmd_ack, n));
    printf("%-10s %10s %12s %10s %10s %14.2f\n", "  empty", "-", "-", "-", "-", per_event(r->cmd_empty, n));
    printf("%-10s %10s %12s %10s %10s %14.2f\n", "  other", "-", "-", "-", "-", per_event(r->cmd_other, n));
    printf("%-10s %10.3f %12s %10s %10s %14.2f\n\n", "total", r->t_pub + r->t_drain, "-", "-", "-",
           per_event(r->cmd_total, n));
    printf("claims %ld (+ %ld empty)  empty waits %ld  acks %ld  lease lost %ld\n", r->claims_ok, r->claims_empty,
           r->empty_waits, r->acks, r->lease_lost);
    printf("commands: publish %llu  claim %llu  ack %llu  empty claims %llu  other %llu  total %llu\n",
           (unsigned long long)r->cmd_pub, (unsigned long long)r->cmd_claim, (unsigned long long)r->cmd_ack,
           (unsigned long long)r->cmd_empty, (unsigned long long)r->cmd_other, (unsigned long long)r->cmd_total);
    printf("every event acked exactly once: %s (lost %ld, duplicated %ld, seq mismatch %ld)\n\n", r->ok ? "yes" : "NO",
           r->lost, r->duplicates, r->seq_mismatch);
}

/* The mode's JSON object (NULL when jansson fails). */
json_t *result_json(const bench_opts *opt, const char *db, const bench_result *r) {
    long n = opt->events;
    return json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:b, s:s, s:s, "
        "s:f, s:f, s:f, s:f, "
        "s:f, s:f, s:f, s:f, "
        "s:{s:f, s:f, s:f, s:f, s:f, s:f}, "
        "s:{s:I, s:I, s:I, s:I, s:I, s:I}, "
        "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
        "mode", r->batch == 1 ? "single" : "batch", "database", db, "prefix", r->prefix, "events", (json_int_t)n,
        "groups", (json_int_t)opt->groups, "workers", (json_int_t)opt->workers, "batch", (json_int_t)r->batch,
        "visibility_s", opt->visibility, "wait", r->wait, "publish_call",
        r->batch == 1 ? "mq_publish" : "mq_publish_batch", "claim_call", r->claim_call, "publish_s", rnd(r->t_pub, 4),
        "publish_eps", rnd(rate(n, r->t_pub), 1), "drain_s", rnd(r->t_drain, 4), "drain_eps",
        rnd(rate(r->acked_total, r->t_drain), 1), "claim_p50_ms", rnd(r->claim_p50, 4), "claim_p99_ms",
        rnd(r->claim_p99, 4), "ack_p50_ms", rnd(r->ack_p50, 4), "ack_p99_ms", rnd(r->ack_p99, 4), "commands_per_event",
        "publish", rnd(per_event(r->cmd_pub, n), 3), "claim", rnd(per_event(r->cmd_claim, n), 3), "ack",
        rnd(per_event(r->cmd_ack, n), 3), "empty_claim", rnd(per_event(r->cmd_empty, n), 3), "other",
        rnd(per_event(r->cmd_other, n), 3), "total", rnd(per_event(r->cmd_total, n), 3), "commands", "publish",
        (json_int_t)r->cmd_pub, "claim", (json_int_t)r->cmd_claim, "ack", (json_int_t)r->cmd_ack, "empty_claim",
        (json_int_t)r->cmd_empty, "other", (json_int_t)r->cmd_other, "total", (json_int_t)r->cmd_total, "claims",
        (json_int_t)r->claims_ok, "empty_claims", (json_int_t)r->claims_empty, "empty_waits",
        (json_int_t)r->empty_waits, "lease_lost", (json_int_t)r->lease_lost, "lost", (json_int_t)r->lost, "duplicated",
        (json_int_t)r->duplicates, "seq_mismatch", (json_int_t)r->seq_mismatch, "ok", r->ok);
}
