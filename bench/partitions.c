/*
 * partitions.c — bench --partitions: one workload on queues of P = 1, 4 and 16
 * partitions side by side (include/mongomq.h, "Partitioned queues").
 *
 * For each P, on a fresh prefix of the run's database, in each mode (single: B = 1;
 * batch(10): B = 10; --batch B: that mode only):
 *   publish  one thread publishes --events events {"i":i} round-robin over --groups
 *            groups (priority 0), B at a time (mq_publish, or mq_publish_batch);
 *   drain    --workers threads, each with its own mq_client, claim (mq_claim_with,
 *            max_events B, every partition) and ack until every event is acked; the
 *            mq_client_command_count delta around each call is its commands; a
 *            claim that returns MQ_EMPTY sleeps 2 ms and is counted apart.
 * Then, once per P, after the first mode's drain, on its drained queue:
 *   empty claims   100 claims of every partition by one worker's handle, then 100
 *                  given one partition each (0, 1, ... in turn): commands per claim;
 *   idle wait      one waiting claim (mq_claim_with, timeout 3 s, every partition) on
 *                  a client of its own that has not waited before: every command that
 *                  client sent during the call (claim.lease, next.due, and the change
 *                  stream its first waiting call starts: aggregate, getMores); then the
 *                  same client's commands over 3 s more with nothing waiting (its
 *                  watcher's getMores alone).
 * Before all that, an unreported warm-up (2000 single events at P = 1, prefix
 * part_warmup) so that P = 1, which runs first, does not get the coldest server.
 * Checks, per mode: every event acked exactly once, each lease's seq the one publish
 * returned, each group's events delivered in publish order (checked when the claim
 * returns: a group's next claim can only return after the ack of the one before),
 * each lease's partition its group's (mq_group_partition). Exit 1 when one fails, or
 * on any error; nothing is asserted about time.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PART_RUNS 3
#define PART_MAX_P 16
#define PART_MODES 2
#define PART_EMPTY_CLAIMS 100
#define PART_IDLE_WAIT_S 3.0
#define PART_IDLE_SLEEP_MS 2
#define PART_WARM_EVENTS 2000

static const int part_ps[PART_RUNS] = {1, 4, 16};

/* One mode at one P. */
typedef struct {
    long batch;
    char mode[32];
    bench_phase pub; /* finish_phase: seconds, the publisher's commands, call latency */
    double drain_s;
    uint64_t cmd_claim, cmd_empty, cmd_ack, cmd_workers; /* cmd_workers: all the workers' clients sent */
    long claims_ok, claims_empty, lease_lost;
    long acked, lost, duplicates, out_of_order, seq_mismatch, wrong_partition;
    long leases_in[PART_MAX_P]; /* leases claimed per partition */
    long events_in[PART_MAX_P]; /* events published per partition */
    long groups_in[PART_MAX_P]; /* groups per partition */
    int failed, ok;
} part_mode;

/* One P: its modes, and the drained queue's figures. */
typedef struct {
    int p;
    int nmodes;
    part_mode modes[PART_MODES];
    int measured;           /* the empty claims and the idle wait ran */
    bench_phase empty_all;  /* PART_EMPTY_CLAIMS claims of every partition */
    bench_phase empty_one;  /* as many, each given one partition */
    uint64_t empty_repairs; /* automatic repairs those claims ran (their commands are in) */
    uint64_t idle_cmds;     /* the idle waiting claim's client's commands */
    double idle_s;          /* how long it waited */
    uint64_t watch_cmds;    /* that client's commands over as long again, nothing waiting */
} part_run;

typedef struct part_shared part_shared;

typedef struct {
    part_shared *sh;
    char worker_id[48];
    mq_client *client;
    mq_queue *queue;
    uint64_t cmd_start, cmd_claim, cmd_empty, cmd_ack;
    long claims_ok, claims_empty, lease_lost;
    long leases_in[PART_MAX_P];
    int failed;
} part_worker;

struct part_shared {
    const bench_opts *opt;
    long batch;
    int p;
    const int64_t *seq_of; /* the seq publish returned, per event */
    pthread_mutex_t mu;    /* guards the fields below */
    int *acked;            /* acks per event */
    long *next_of;         /* per group: the event it must deliver next */
    long acked_total, duplicates, out_of_order, seq_mismatch, wrong_partition;
    int stop;
    double last_progress;
};

static void group_name(long g, char group[32]) { snprintf(group, 32, "bench-%06ld", g); }

/* The event index from {"i":N}; -1 if it is not that. */
static long event_index(const void *data, size_t len) {
    char buf[64];
    long i;
    if (data == NULL || len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (sscanf(buf, "{\"i\":%ld}", &i) != 1) return -1;
    return i;
}

static void stop_all(part_shared *sh) {
    pthread_mutex_lock(&sh->mu);
    sh->stop = 1;
    pthread_mutex_unlock(&sh->mu);
}

/* A lease just claimed: its events must be its group's next ones in publish order,
 * with the seqs publish returned, in its group's partition. -1 (and a stop) when an
 * event is not one of the bench's. */
static int note_claim(part_worker *w, const mq_lease *lease) {
    part_shared *sh = w->sh;
    const char *group = mq_lease_group(lease);
    int part = mq_lease_partition(lease);
    size_t count = mq_lease_count(lease);
    int bad = 0;
    if (part >= 0 && part < sh->p) w->leases_in[part]++;
    pthread_mutex_lock(&sh->mu);
    if (part != mq_group_partition(group, sh->p)) sh->wrong_partition++;
    for (size_t k = 0; k < count && !bad; k++) {
        size_t len = 0;
        const void *ev = mq_lease_event_at(lease, k, &len);
        long i = event_index(ev, len);
        char want[32];
        if (i >= 0 && i < sh->opt->events) group_name(i % sh->opt->groups, want);
        if (i < 0 || i >= sh->opt->events || strcmp(want, group) != 0) {
            fprintf(stderr, "bench: unexpected event %.*s in group %s\n", (int)len, (const char *)ev, group);
            bad = 1;
            break;
        }
        long g = i % sh->opt->groups;
        if (i != sh->next_of[g]) sh->out_of_order++;
        sh->next_of[g] = i + sh->opt->groups;
        if (mq_lease_seq_at(lease, k) != sh->seq_of[i]) sh->seq_mismatch++;
    }
    if (bad) sh->stop = 1;
    pthread_mutex_unlock(&sh->mu);
    return bad ? -1 : 0;
}

static void *drain_worker(void *arg) {
    part_worker *w = (part_worker *)arg;
    part_shared *sh = w->sh;
    const bench_opts *opt = sh->opt;
    double stall_s = opt->visibility + 30.0; /* a lost lease comes back after visibility_s */
    mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
    o.worker_id = w->worker_id;
    o.visibility_s = opt->visibility;
    o.max_events = (size_t)sh->batch;
    for (;;) {
        mq_lease *lease = NULL;
        mq_error err;
        int stop, done, stalled;
        pthread_mutex_lock(&sh->mu);
        stop = sh->stop;
        pthread_mutex_unlock(&sh->mu);
        if (stop) break;

        uint64_t c0 = mq_client_command_count(w->client);
        mq_status st = mq_claim_with(w->queue, &o, &lease, &err);
        uint64_t c1 = mq_client_command_count(w->client);
        if (st == MQ_EMPTY) {
            w->claims_empty++;
            w->cmd_empty += c1 - c0;
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
            sleep_ms(PART_IDLE_SLEEP_MS);
            continue;
        }
        if (st != MQ_OK) {
            report_error("mq_claim_with", st, &err);
            w->failed = 1;
            stop_all(sh);
            break;
        }
        w->claims_ok++;
        w->cmd_claim += c1 - c0;
        if (note_claim(w, lease) != 0) {
            w->failed = 1;
            mq_lease_destroy(lease);
            break;
        }

        c0 = mq_client_command_count(w->client);
        st = mq_ack(w->queue, lease, &err);
        w->cmd_ack += mq_client_command_count(w->client) - c0;
        if (st != MQ_OK && st != MQ_LEASE_LOST) {
            report_error("mq_ack", st, &err);
            w->failed = 1;
            stop_all(sh);
            mq_lease_destroy(lease);
            break;
        }
        /* MQ_LEASE_LOST: removed all the same, but another worker has it again: it
         * shows as a duplicate and out of order. */
        if (st == MQ_LEASE_LOST) w->lease_lost++;
        pthread_mutex_lock(&sh->mu);
        for (size_t k = 0; k < mq_lease_count(lease); k++) {
            size_t len = 0;
            const void *ev = mq_lease_event_at(lease, k, &len);
            long i = event_index(ev, len); /* note_claim checked it */
            if (sh->acked[i]++ == 0)
                sh->acked_total++;
            else
                sh->duplicates++;
        }
        sh->last_progress = now_mono();
        pthread_mutex_unlock(&sh->mu);
        mq_lease_destroy(lease);
    }
    return NULL;
}

/* Publishes every event, B at a time; seq_of[i] gets event i's seq. */
static int publish_all(mq_queue *q, mq_client *client, const bench_opts *opt, long batch, int64_t *seq_of, double *lat,
                       bench_phase *ph) {
    mq_error err;
    long calls = 0;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    for (long i = 0; i < opt->events; i += batch) {
        long n = opt->events - i < batch ? opt->events - i : batch;
        char group[32], ev[48];
        mq_status st;
        double a;
        if (batch == 1) {
            group_name(i % opt->groups, group);
            int len = snprintf(ev, sizeof ev, "{\"i\":%ld}", i);
            a = now_mono();
            st = mq_publish(q, group, ev, (size_t)len, 0, &seq_of[i], &err);
            lat[calls++] = (now_mono() - a) * 1e3;
        } else {
            mq_batch *b = NULL;
            int64_t first = 0;
            st = mq_batch_new(&b, &err);
            for (long k = 0; st == MQ_OK && k < n; k++) {
                group_name((i + k) % opt->groups, group);
                int len = snprintf(ev, sizeof ev, "{\"i\":%ld}", i + k);
                st = mq_batch_add(b, group, ev, (size_t)len, 0, &err);
            }
            a = now_mono();
            if (st == MQ_OK) st = mq_publish_batch(q, b, &first, &err);
            lat[calls++] = (now_mono() - a) * 1e3;
            /* Seqs are per partition ((n - 1) * P + k + 1): a batch over several
             * partitions does not get first, first + 1, ... */
            for (long k = 0; st == MQ_OK && k < n; k++) st = mq_batch_outcome(b, (size_t)k, &seq_of[i + k], &err);
            mq_batch_destroy(b);
        }
        if (st != MQ_OK) {
            report_error(batch == 1 ? "mq_publish" : "mq_publish_batch", st, &err);
            return -1;
        }
    }
    ph->events = opt->events;
    finish_phase(ph, lat, calls, t0, c0, client);
    return 0;
}

static int open_queue(mq_client *client, const char *db, const char *prefix, int p, mq_queue **q) {
    mq_error err;
    mq_queue_opts qo = MQ_QUEUE_OPTS_INIT;
    qo.partitions = p;
    mq_status st = mq_queue_new_with(client, db, prefix, &qo, q, &err);
    if (st != MQ_OK) return report_error("mq_queue_new_with", st, &err), -1;
    if (mq_queue_partitions(*q) != p) {
        fprintf(stderr, "bench: %s has %d partitions, not %d\n", prefix, mq_queue_partitions(*q), p);
        return -1;
    }
    return 0;
}

/* n claims on the drained queue by worker w's handle, every partition (one = 0) or
 * each given one partition in turn; each must be MQ_EMPTY. */
static int empty_claims(part_worker *w, int p, int one, long n, double *lat, bench_phase *ph) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(w->client);
    for (long i = 0; i < n; i++) {
        int only = (int)(i % p);
        mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
        o.worker_id = w->worker_id;
        o.visibility_s = w->sh->opt->visibility;
        if (one) o.partitions = &only, o.partition_count = 1;
        mq_lease *lease = NULL;
        double a = now_mono();
        mq_status st = mq_claim_with(w->queue, &o, &lease, &err);
        lat[i] = (now_mono() - a) * 1e3;
        if (st == MQ_OK) {
            fprintf(stderr, "bench: a claim on the drained queue got group %s\n", mq_lease_group(lease));
            mq_lease_destroy(lease);
            return -1;
        }
        if (st != MQ_EMPTY) return report_error("empty claim", st, &err), -1;
    }
    ph->events = n;
    finish_phase(ph, lat, n, t0, c0, w->client);
    return 0;
}

/* One mode at P = run->p on the queue db.prefix; the drained-queue figures too when
 * `measure`. 0 when there are figures (m->ok says whether the checks passed). */
static int run_one(const bench_opts *opt, const char *db, part_run *run, part_mode *m, int measure) {
    part_shared sh;
    part_worker *w = NULL;
    pthread_t *threads = NULL;
    mq_client *client = NULL, *idle_client = NULL;
    mq_queue *queue = NULL, *idle_queue = NULL;
    double *lat = NULL;
    char prefix[32];
    long i, started = 0;
    int rc = -1;
    const int p = run->p;

    snprintf(prefix, sizeof prefix, "part_p%d_%s", p, m->batch == 1 ? "single" : "batch");
    if (strcmp(m->mode, "warm-up") == 0) snprintf(prefix, sizeof prefix, "part_warmup");
    memset(&sh, 0, sizeof sh);
    sh.opt = opt;
    sh.batch = m->batch;
    sh.p = p;
    if (pthread_mutex_init(&sh.mu, NULL) != 0) return fprintf(stderr, "bench: pthread_mutex_init failed\n"), -1;
    int64_t *seq_of = calloc((size_t)opt->events, sizeof *seq_of);
    sh.seq_of = seq_of;
    sh.acked = calloc((size_t)opt->events, sizeof *sh.acked);
    sh.next_of = calloc((size_t)opt->groups, sizeof *sh.next_of);
    lat = calloc((size_t)(opt->events > PART_EMPTY_CLAIMS ? opt->events : PART_EMPTY_CLAIMS), sizeof *lat);
    w = calloc((size_t)opt->workers, sizeof *w);
    threads = calloc((size_t)opt->workers, sizeof *threads);
    if (!seq_of || !sh.acked || !sh.next_of || !lat || !w || !threads) {
        fprintf(stderr, "bench: out of memory\n");
        goto out;
    }
    for (long g = 0; g < opt->groups; g++) {
        char group[32];
        group_name(g, group);
        sh.next_of[g] = g;
        int k = mq_group_partition(group, p);
        m->groups_in[k]++;
        m->events_in[k] += opt->events / opt->groups + (g < opt->events % opt->groups);
    }

    /* Every client and queue is opened before any timing (their index creation and
     * the partitions record are not part of the figures). */
    mq_error err;
    mq_status st = mq_client_new(opt->uri, &client, &err);
    if (st != MQ_OK) {
        report_error("mq_client_new", st, &err);
        goto out;
    }
    if (open_queue(client, db, prefix, p, &queue) != 0) goto out;
    for (i = 0; i < opt->workers; i++) {
        w[i].sh = &sh;
        snprintf(w[i].worker_id, sizeof w[i].worker_id, "bench-worker-%ld", i + 1);
        st = mq_client_new(opt->uri, &w[i].client, &err);
        if (st != MQ_OK) {
            report_error("mq_client_new (worker)", st, &err);
            goto out;
        }
        if (open_queue(w[i].client, db, prefix, p, &w[i].queue) != 0) goto out;
    }
    if (measure) {
        st = mq_client_new(opt->uri, &idle_client, &err);
        if (st != MQ_OK) {
            report_error("mq_client_new (idle waiter)", st, &err);
            goto out;
        }
        if (open_queue(idle_client, db, prefix, p, &idle_queue) != 0) goto out;
    }

    if (publish_all(queue, client, opt, m->batch, seq_of, lat, &m->pub) != 0) goto out;

    for (i = 0; i < opt->workers; i++) w[i].cmd_start = mq_client_command_count(w[i].client);
    sh.last_progress = now_mono();
    double t0 = now_mono();
    for (i = 0; i < opt->workers; i++) {
        if (pthread_create(&threads[i], NULL, drain_worker, &w[i]) != 0) {
            fprintf(stderr, "bench: pthread_create failed\n");
            stop_all(&sh);
            m->failed = 1;
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++) pthread_join(threads[i], NULL);
    m->drain_s = now_mono() - t0;

    for (i = 0; i < opt->workers; i++) {
        m->failed |= w[i].failed;
        m->cmd_claim += w[i].cmd_claim;
        m->cmd_empty += w[i].cmd_empty;
        m->cmd_ack += w[i].cmd_ack;
        m->cmd_workers += mq_client_command_count(w[i].client) - w[i].cmd_start;
        m->claims_ok += w[i].claims_ok;
        m->claims_empty += w[i].claims_empty;
        m->lease_lost += w[i].lease_lost;
        for (int k = 0; k < p; k++) m->leases_in[k] += w[i].leases_in[k];
    }
    for (i = 0; i < opt->events; i++) m->lost += sh.acked[i] == 0;
    m->acked = sh.acked_total;
    m->duplicates = sh.duplicates;
    m->out_of_order = sh.out_of_order;
    m->seq_mismatch = sh.seq_mismatch;
    m->wrong_partition = sh.wrong_partition;
    m->ok = !m->failed && m->lost == 0 && m->duplicates == 0 && m->out_of_order == 0 && m->seq_mismatch == 0 &&
            m->wrong_partition == 0;
    rc = 0;

    if (measure && !m->failed) {
        uint64_t runs0, runs1;
        mq_queue_repair_counts(w[0].queue, &runs0, NULL);
        run->empty_all.name = "empty claim, all partitions";
        run->empty_one.name = "empty claim, one partition";
        if (empty_claims(&w[0], p, 0, PART_EMPTY_CLAIMS, lat, &run->empty_all) != 0 ||
            empty_claims(&w[0], p, 1, PART_EMPTY_CLAIMS, lat, &run->empty_one) != 0) {
            m->failed = 1, m->ok = 0;
            goto out;
        }
        mq_queue_repair_counts(w[0].queue, &runs1, NULL);
        run->empty_repairs = runs1 - runs0;

        mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
        o.worker_id = "bench-idle";
        o.visibility_s = opt->visibility;
        o.timeout_s = PART_IDLE_WAIT_S;
        mq_lease *lease = NULL;
        uint64_t c0 = mq_client_command_count(idle_client);
        double a = now_mono();
        st = mq_claim_with(idle_queue, &o, &lease, &err);
        run->idle_s = now_mono() - a;
        run->idle_cmds = mq_client_command_count(idle_client) - c0;
        if (st != MQ_EMPTY) {
            if (st == MQ_OK)
                fprintf(stderr, "bench: the idle waiting claim got group %s\n", mq_lease_group(lease));
            else
                report_error("the idle waiting claim", st, &err);
            mq_lease_destroy(lease);
            m->failed = 1, m->ok = 0;
            goto out;
        }
        /* The watcher the wait started goes on while the handle lives: the same span
         * with nothing waiting is what it sends alone. */
        c0 = mq_client_command_count(idle_client);
        sleep_ms((long)(PART_IDLE_WAIT_S * 1000));
        run->watch_cmds = mq_client_command_count(idle_client) - c0;
        run->measured = 1;
    }

out:
    if (w != NULL) {
        for (i = 0; i < opt->workers; i++) {
            mq_queue_destroy(w[i].queue);
            mq_client_destroy(w[i].client);
        }
    }
    mq_queue_destroy(idle_queue);
    mq_client_destroy(idle_client);
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    free(seq_of);
    free(sh.acked);
    free(sh.next_of);
    free(lat);
    free(w);
    free(threads);
    pthread_mutex_destroy(&sh.mu);
    return rc;
}

/* The spread of a per-partition count: the largest over the mean (1.00: even). */
static double spread(const long *v, int p) {
    long sum = 0, max = 0;
    for (int k = 0; k < p; k++) sum += v[k], max = v[k] > max ? v[k] : max;
    return sum > 0 ? (double)max * p / (double)sum : 0.0;
}

static uint64_t mode_total(const part_mode *m) { return m->pub.commands + m->cmd_workers; }

static void print_counts(const char *what, const long *v, int p) {
    printf("    %-18s", what);
    for (int k = 0; k < p; k++) printf(" %ld", v[k]);
    printf("   (max/mean %.2f)\n", spread(v, p));
}

static void print_tables(const bench_opts *opt, const char *db, const part_run *runs, int nruns) {
    const long n = opt->events;
    int r, mi;
    printf("libmongomq %s  database %s  %ld events, %ld groups, %ld workers, visibility %.3g s\n", mq_version(), db, n,
           opt->groups, opt->workers, opt->visibility);
    printf("queues part_p<P>_<mode>; each figure per event is commands / %ld events\n\n", n);
#define ROW(label, fmt, expr)                  \
  do {                                         \
    printf("  %-34s", label);                  \
    for (r = 0; r < nruns; r++) {              \
      const part_mode *m = &runs[r].modes[mi]; \
      (void)m;                                 \
      printf(" %10" fmt, expr);                \
    }                                          \
    printf("\n");                              \
  } while (0)
    for (mi = 0; mi < runs[0].nmodes; mi++) {
        printf("%-36s", runs[0].modes[mi].mode);
        for (r = 0; r < nruns; r++) printf("       P=%-2d", runs[r].p);
        printf("\n");
        ROW("publish events/s", ".0f", rate(n, m->pub.secs));
        ROW("drain events/s", ".0f", rate(m->acked, m->drain_s));
        ROW("commands/event: publish", ".3f", per_event(m->pub.commands, n));
        ROW("  claim (leases)", ".3f", per_event(m->cmd_claim, n));
        ROW("  empty claims in the drain", ".3f", per_event(m->cmd_empty, n));
        ROW("  ack", ".3f", per_event(m->cmd_ack, n));
        ROW("  total", ".3f", per_event(mode_total(m), n));
        ROW("leases in the drain", "ld", m->claims_ok);
        ROW("empty claims in the drain", "ld", m->claims_empty);
        ROW("publish call p50 ms", ".3f", m->pub.p50);
        ROW("every event acked once, in order", "s", m->ok ? "yes" : "NO");
        printf("\n");
    }
#undef ROW
    printf("%-36s", "drained queue");
    for (r = 0; r < nruns; r++) printf("       P=%-2d", runs[r].p);
    printf("\n  %-34s", "commands/empty claim, all parts");
    for (r = 0; r < nruns; r++) printf(" %10.2f", per_event(runs[r].empty_all.commands, runs[r].empty_all.events));
    printf("\n  %-34s", "commands/empty claim, one part");
    for (r = 0; r < nruns; r++) printf(" %10.2f", per_event(runs[r].empty_one.commands, runs[r].empty_one.events));
    printf("\n  %-34s", "  automatic repairs among them");
    for (r = 0; r < nruns; r++) printf(" %10llu", (unsigned long long)runs[r].empty_repairs);
    printf("\n  %-34s", "idle wait (3 s): commands");
    for (r = 0; r < nruns; r++) printf(" %10llu", (unsigned long long)runs[r].idle_cmds);
    printf("\n  %-34s", "  it waited, s");
    for (r = 0; r < nruns; r++) printf(" %10.2f", runs[r].idle_s);
    printf("\n  %-34s", "  the watcher alone, 3 s after");
    for (r = 0; r < nruns; r++) printf(" %10llu", (unsigned long long)runs[r].watch_cmds);
    printf("\n  %-34s", "  the claim's own (difference)");
    for (r = 0; r < nruns; r++) printf(" %10lld", (long long)runs[r].idle_cmds - (long long)runs[r].watch_cmds);
    printf(
        "\n(%d empty claims each. The idle wait counts every command its client sent during the\n"
        " call: claim.lease, next.due, and the change stream the call starts (aggregate, getMores);\n"
        " not libmongoc's heartbeats, which are not commands in its APM. The watcher line is the\n"
        " same client over %.0f s more with nothing waiting: the change stream's getMores alone.)\n\n",
        PART_EMPTY_CLAIMS, PART_IDLE_WAIT_S);
    for (r = 0; r < nruns; r++) {
        if (runs[r].p == 1) continue;
        printf("P=%d per partition (0..%d):\n", runs[r].p, runs[r].p - 1);
        print_counts("groups", runs[r].modes[0].groups_in, runs[r].p);
        print_counts("events", runs[r].modes[0].events_in, runs[r].p);
        for (mi = 0; mi < runs[r].nmodes; mi++) {
            char what[32];
            snprintf(what, sizeof what, "leases %s", runs[r].modes[mi].mode);
            print_counts(what, runs[r].modes[mi].leases_in, runs[r].p);
        }
    }
}

static json_t *longs_json(const long *v, int p) {
    json_t *a = json_array();
    for (int k = 0; k < p; k++) json_array_append_new(a, json_integer((json_int_t)v[k]));
    return a;
}

static json_t *mode_json(const bench_opts *opt, const part_mode *m, int p) {
    const long n = opt->events;
    return json_pack(
        "{s:s, s:I, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f, s:f}, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:I, "
        "s:o, s:o, s:o, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
        "mode", m->mode, "batch", (json_int_t)m->batch, "publish_s", rnd(m->pub.secs, 4), "publish_eps",
        rnd(rate(n, m->pub.secs), 1), "drain_s", rnd(m->drain_s, 4), "drain_eps", rnd(rate(m->acked, m->drain_s), 1),
        "commands_per_event", "publish", rnd(per_event(m->pub.commands, n), 3), "claim",
        rnd(per_event(m->cmd_claim, n), 3), "empty_claim", rnd(per_event(m->cmd_empty, n), 3), "ack",
        rnd(per_event(m->cmd_ack, n), 3), "total", rnd(per_event(mode_total(m), n), 3), "commands", "publish",
        (json_int_t)m->pub.commands, "claim", (json_int_t)m->cmd_claim, "empty_claim", (json_int_t)m->cmd_empty, "ack",
        (json_int_t)m->cmd_ack, "total", (json_int_t)mode_total(m), "leases", (json_int_t)m->claims_ok, "empty_claims",
        (json_int_t)m->claims_empty, "groups_per_partition", longs_json(m->groups_in, p), "events_per_partition",
        longs_json(m->events_in, p), "leases_per_partition", longs_json(m->leases_in, p), "leases_max_over_mean",
        rnd(spread(m->leases_in, p), 3), "lease_lost", (json_int_t)m->lease_lost, "lost", (json_int_t)m->lost,
        "duplicated", (json_int_t)m->duplicates, "out_of_order", (json_int_t)m->out_of_order, "seq_mismatch",
        (json_int_t)m->seq_mismatch, "wrong_partition", (json_int_t)m->wrong_partition, "ok", m->ok);
}

static int print_json(const bench_opts *opt, const char *db, const part_run *runs, int nruns, int ok) {
    json_t *arr = json_array();
    for (int r = 0; r < nruns; r++) {
        json_t *modes = json_array();
        for (int mi = 0; mi < runs[r].nmodes; mi++)
            json_array_append_new(modes, mode_json(opt, &runs[r].modes[mi], runs[r].p));
        json_array_append_new(
            arr, json_pack("{s:i, s:o, s:{s:I, s:f, s:f, s:I}, s:{s:f, s:f, s:I, s:I}}", "partitions", runs[r].p,
                           "modes", modes, "empty_claim", "claims", (json_int_t)runs[r].empty_all.events,
                           "commands_all", rnd(per_event(runs[r].empty_all.commands, runs[r].empty_all.events), 3),
                           "commands_one", rnd(per_event(runs[r].empty_one.commands, runs[r].empty_one.events), 3),
                           "repairs", (json_int_t)runs[r].empty_repairs, "idle_wait", "timeout_s", PART_IDLE_WAIT_S,
                           "waited_s", rnd(runs[r].idle_s, 3), "commands", (json_int_t)runs[r].idle_cmds,
                           "watcher_alone_commands", (json_int_t)runs[r].watch_cmds));
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:b}", "library", mq_version(), "mode", "partitions",
                          "database", db, "events", (json_int_t)opt->events, "groups", (json_int_t)opt->groups,
                          "workers", (json_int_t)opt->workers, "runs", arr, "ok", ok);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(o);
    if (s == NULL) return fprintf(stderr, "bench: building the JSON output failed\n"), -1;
    printf("%s\n", s);
    free(s);
    return 0;
}

int run_partitions(const bench_opts *opt, const char *db) {
    part_run runs[PART_RUNS];
    long batches[PART_MODES];
    int nmodes = 0, ok = 1;
    if (opt->batch == 0) {
        batches[nmodes++] = 1;
        batches[nmodes++] = BENCH_DEFAULT_BATCH;
    } else {
        batches[nmodes++] = opt->batch;
    }
    memset(runs, 0, sizeof runs);
    /* A warm-up, not reported: a few single publishes and their drain on a queue of
     * its own, so P = 1, which runs first, does not get the coldest server (the test
     * server's JIT). */
    {
        bench_opts warm_opt = *opt;
        part_run warm;
        memset(&warm, 0, sizeof warm);
        warm_opt.events = opt->events < PART_WARM_EVENTS ? opt->events : PART_WARM_EVENTS;
        warm.p = 1;
        warm.nmodes = 1;
        warm.modes[0].batch = 1;
        snprintf(warm.modes[0].mode, sizeof warm.modes[0].mode, "warm-up");
        if (run_one(&warm_opt, db, &warm, &warm.modes[0], 0) != 0) return 1;
        if (!warm.modes[0].ok) {
            fprintf(stderr,
                    "bench: the warm-up failed its checks: lost %ld, duplicated %ld, out of order %ld, seq mismatch "
                    "%ld, wrong partition %ld\n",
                    warm.modes[0].lost, warm.modes[0].duplicates, warm.modes[0].out_of_order,
                    warm.modes[0].seq_mismatch, warm.modes[0].wrong_partition);
            return 1;
        }
    }
    if (!opt->json) fprintf(stderr, "bench: partitions: P = 1, 4, 16, %d mode(s) each\n", nmodes);
    for (int r = 0; r < PART_RUNS; r++) {
        runs[r].p = part_ps[r];
        runs[r].nmodes = nmodes;
        for (int mi = 0; mi < nmodes; mi++) {
            part_mode *m = &runs[r].modes[mi];
            m->batch = batches[mi];
            if (m->batch == 1)
                snprintf(m->mode, sizeof m->mode, "single");
            else
                snprintf(m->mode, sizeof m->mode, "batch(%ld)", m->batch);
            /* The drained-queue figures once per P, on the first mode's queue. */
            if (run_one(opt, db, &runs[r], m, mi == 0) != 0) return 1; /* nothing to report */
            ok &= m->ok;
            if (!opt->json)
                fprintf(stderr, "bench: P=%d %s: %.1f s publish, %.1f s drain%s\n", runs[r].p, m->mode, m->pub.secs,
                        m->drain_s, m->ok ? "" : ", CHECKS FAILED");
        }
        ok &= runs[r].measured;
    }
    if (opt->json) {
        if (print_json(opt, db, runs, PART_RUNS, ok) != 0) return 1;
    } else {
        print_tables(opt, db, runs, PART_RUNS);
        printf("every event acked exactly once, each group in publish order: %s\n", ok ? "yes" : "NO");
    }
    return ok ? 0 : 1;
}
