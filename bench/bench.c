/*
 * bench.c — throughput, latency and server commands per event of libmongomq.
 *
 *   bench [--uri URI] [--events N] [--groups G] [--workers W] [--visibility S] [--batch B] [--json]
 *
 * --batch B (default 1) publishes with mq_publish_batch, B events per batch, and
 * drains with mq_claim_batch, up to B events per lease.
 *
 * Phase 1 (publish): one thread publishes N events round-robin over G groups
 *   (group g has priority g % 5; event i is the JSON text {"i":i}).
 * Phase 2 (drain): W threads claim and ack until every event is acked. Each worker
 *   has its own mq_client (as separate machines would), so mq_client_command_count
 *   deltas around each call count exactly that call's server commands. Claims that
 *   return MQ_EMPTY (the tail of the run, or all groups held) are counted apart; their
 *   commands are in the total.
 *
 * Figures: publish/drain events per second, p50/p99 latency of successful claims and
 * of acks (clock_gettime(CLOCK_MONOTONIC) around each call), commands per event for
 * publish, claim, ack and in total. It checks that every event was acked exactly once
 * (lost = never acked, duplicated = delivered again after an ack) and exits 1 if not,
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
#define BENCH_PRIORITIES (MQ_PRIORITY_MAX - MQ_PRIORITY_MIN + 1)

typedef struct {
    const char *uri;
    long events;
    long groups;
    long workers;
    long batch;
    double visibility;
    int json;
} bench_opts;

typedef struct {
    double *v;
    size_t n, cap;
} samples;

typedef struct bench_shared bench_shared;

typedef struct {
    bench_shared *sh;
    int index;
    char worker_id[32];
    mq_client *client;
    mq_queue *queue;
    samples claim_ms;
    samples ack_ms;
    uint64_t cmd_claim, cmd_empty, cmd_ack;
    long claims_ok, claims_empty, acks, lease_lost;
    int failed;
} bench_worker;

struct bench_shared {
    const bench_opts *opt;
    int64_t *seq_of;       /* seq returned by publish, per event index */
    pthread_mutex_t mu;    /* guards the fields below */
    int *acked;            /* times each event index was acked */
    long acked_total;      /* distinct events acked */
    long duplicates;       /* deliveries of an already acked event */
    long seq_mismatch;     /* lease seq != publish seq */
    int stop;              /* an error happened somewhere */
    double last_progress;
};

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

static void set_stop(bench_shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->stop = 1;
    pthread_mutex_unlock(&sh->mu);
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
        int stop;

        pthread_mutex_lock(&sh->mu);
        stop = sh->stop;
        pthread_mutex_unlock(&sh->mu);
        if (stop)
            break;

        c0 = mq_client_command_count(w->client);
        t0 = now_mono();
        st = mq_claim_batch(w->queue, w->worker_id, opt->visibility, 0, (size_t)opt->batch, &lease, &err);
        t1 = now_mono();
        c1 = mq_client_command_count(w->client);

        if (st == MQ_EMPTY) {
            int done, stalled;
            w->claims_empty++;
            w->cmd_empty += c1 - c0;
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
            sleep_ms(BENCH_IDLE_SLEEP_MS);
            continue;
        }
        if (st != MQ_OK) {
            report_error("mq_claim", st, &err);
            w->failed = 1;
            set_stop(sh);
            break;
        }
        w->claims_ok++;
        w->cmd_claim += c1 - c0;
        if (samples_add(&w->claim_ms, (t1 - t0) * 1e3) != 0) {
            fprintf(stderr, "bench: out of memory\n");
            w->failed = 1;
            set_stop(sh);
            mq_lease_destroy(lease);
            break;
        }

        count = mq_lease_count(lease);
        for (k = 0; k < count; k++) {
            ev = mq_lease_event_at(lease, k, &len);
            idx = parse_index(ev, len);
            if (idx < 0 || idx >= opt->events) {
                fprintf(stderr, "bench: unexpected event %.*s (group %s, seq %lld)\n", (int)len,
                        (const char *)ev, mq_lease_group(lease), (long long)mq_lease_seq_at(lease, k));
                w->failed = 1;
                set_stop(sh);
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
            w->failed = 1;
            set_stop(sh);
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
            w->failed = 1;
            set_stop(sh);
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
        pthread_mutex_unlock(&sh->mu);
        mq_lease_destroy(lease);
    }
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench [--uri URI] [--events N] [--groups G] [--workers W]\n"
            "             [--visibility S] [--batch B] [--json]\n"
            "  --uri URI        MongoDB URI (default: env MONGOMQ_URI)\n"
            "  --events N       events to publish and drain (default 2000)\n"
            "  --groups G       groups, events spread round-robin (default 50)\n"
            "  --workers W      draining threads, one client each (default 4)\n"
            "  --visibility S   lease seconds for each claim (default 30)\n"
            "  --batch B        publish and claim B events at a time (default 1)\n"
            "  --json           print one JSON object instead of the table\n");
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
    o->batch = 1;
    o->json = 0;
    for (i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
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

int main(int argc, char **argv)
{
    bench_opts opt;
    bench_shared sh;
    bench_worker *w = NULL;
    pthread_t *threads = NULL;
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    mq_error err;
    mq_status st;
    char db[96];
    char **group_names = NULL;
    samples claim_all = {NULL, 0, 0}, ack_all = {NULL, 0, 0};
    uint64_t cmd_pub = 0, cmd_claim = 0, cmd_empty = 0, cmd_ack = 0, cmd_total, c0;
    long claims_ok = 0, claims_empty = 0, acks = 0, lease_lost = 0, lost = 0, i;
    double t0, t_pub = 0.0, t_drain = 0.0;
    int rc = 1, failed = 0, started = 0;

    parse_args(argc, argv, &opt);
    mq_log_set_handler(bench_log, NULL);

    memset(&sh, 0, sizeof sh);
    sh.opt = &opt;
    if (pthread_mutex_init(&sh.mu, NULL) != 0) {
        fprintf(stderr, "bench: pthread_mutex_init failed\n");
        return 1;
    }
    sh.seq_of = (int64_t *)calloc((size_t)opt.events, sizeof *sh.seq_of);
    sh.acked = (int *)calloc((size_t)opt.events, sizeof *sh.acked);
    group_names = (char **)calloc((size_t)opt.groups, sizeof *group_names);
    w = (bench_worker *)calloc((size_t)opt.workers, sizeof *w);
    threads = (pthread_t *)calloc((size_t)opt.workers, sizeof *threads);
    if (!sh.seq_of || !sh.acked || !group_names || !w || !threads) {
        fprintf(stderr, "bench: out of memory\n");
        goto out;
    }
    for (i = 0; i < opt.groups; i++) {
        group_names[i] = (char *)malloc(32);
        if (group_names[i] == NULL) {
            fprintf(stderr, "bench: out of memory\n");
            goto out;
        }
        snprintf(group_names[i], 32, "bench-%06ld", i);
    }

    /* A fresh database per run (the test server is in-memory: it goes with it). */
    snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));

    st = mq_client_new(opt.uri, &client, &err);
    if (st != MQ_OK) {
        report_error("mq_client_new", st, &err);
        goto out;
    }
    st = mq_queue_new(client, db, "bench", &queue, &err);
    if (st != MQ_OK) {
        report_error("mq_queue_new", st, &err);
        goto out;
    }

    /* Workers' clients and queues are opened before any timing: their index
     * creation is not part of the figures. */
    for (i = 0; i < opt.workers; i++) {
        w[i].sh = &sh;
        w[i].index = (int)i + 1;
        snprintf(w[i].worker_id, sizeof w[i].worker_id, "bench-worker-%ld", i + 1);
        st = mq_client_new(opt.uri, &w[i].client, &err);
        if (st != MQ_OK) {
            report_error("mq_client_new (worker)", st, &err);
            goto out;
        }
        st = mq_queue_new(w[i].client, db, "bench", &w[i].queue, &err);
        if (st != MQ_OK) {
            report_error("mq_queue_new (worker)", st, &err);
            goto out;
        }
    }

    /* Phase 1: publish. */
    c0 = mq_client_command_count(client);
    t0 = now_mono();
    for (i = 0; i < opt.events; i += opt.batch) {
        long n = opt.events - i < opt.batch ? opt.events - i : opt.batch;
        long k;
        mq_batch *batch = NULL;
        int64_t first = 0;
        if (opt.batch == 1) {
            long g = i % opt.groups;
            char ev[48];
            int len = snprintf(ev, sizeof ev, "{\"i\":%ld}", i);
            st = mq_publish(queue, group_names[g], ev, (size_t)len, (int)(g % BENCH_PRIORITIES), &sh.seq_of[i],
                            &err);
        } else {
            st = mq_batch_new(&batch, &err);
            for (k = 0; st == MQ_OK && k < n; k++) {
                long g = (i + k) % opt.groups;
                char ev[48];
                int len = snprintf(ev, sizeof ev, "{\"i\":%ld}", i + k);
                st = mq_batch_add(batch, group_names[g], ev, (size_t)len, (int)(g % BENCH_PRIORITIES), &err);
            }
            if (st == MQ_OK)
                st = mq_publish_batch(queue, batch, &first, &err);
            mq_batch_destroy(batch);
            for (k = 0; st == MQ_OK && k < n; k++)
                sh.seq_of[i + k] = first + k;
        }
        if (st != MQ_OK) {
            report_error("mq_publish", st, &err);
            goto out;
        }
    }
    t_pub = now_mono() - t0;
    cmd_pub = mq_client_command_count(client) - c0;

    /* Phase 2: drain. */
    sh.last_progress = now_mono();
    t0 = now_mono();
    for (i = 0; i < opt.workers; i++) {
        if (pthread_create(&threads[i], NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "bench: pthread_create failed\n");
            set_stop(&sh);
            failed = 1;
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    t_drain = now_mono() - t0;

    for (i = 0; i < opt.workers; i++) {
        failed |= w[i].failed;
        cmd_claim += w[i].cmd_claim;
        cmd_empty += w[i].cmd_empty;
        cmd_ack += w[i].cmd_ack;
        claims_ok += w[i].claims_ok;
        claims_empty += w[i].claims_empty;
        acks += w[i].acks;
        lease_lost += w[i].lease_lost;
        if (samples_merge(&claim_all, &w[i].claim_ms) != 0 ||
            samples_merge(&ack_all, &w[i].ack_ms) != 0) {
            fprintf(stderr, "bench: out of memory\n");
            goto out;
        }
    }
    qsort(claim_all.v, claim_all.n, sizeof *claim_all.v, cmp_double);
    qsort(ack_all.v, ack_all.n, sizeof *ack_all.v, cmp_double);
    for (i = 0; i < opt.events; i++)
        if (sh.acked[i] == 0)
            lost++;
    cmd_total = cmd_pub + cmd_claim + cmd_empty + cmd_ack;

    if (opt.json) {
        json_t *o = json_pack(
            "{s:s, s:s, s:I, s:I, s:I, s:I, s:f, "
            "s:f, s:f, s:f, s:f, "
            "s:f, s:f, s:f, s:f, "
            "s:{s:f, s:f, s:f, s:f, s:f}, "
            "s:{s:I, s:I, s:I, s:I, s:I}, "
            "s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
            "library", mq_version(), "database", db,
            "events", (json_int_t)opt.events, "groups", (json_int_t)opt.groups,
            "workers", (json_int_t)opt.workers, "batch", (json_int_t)opt.batch, "visibility_s", opt.visibility,
            "publish_s", rnd(t_pub, 4), "publish_eps", rnd(rate(opt.events, t_pub), 1),
            "drain_s", rnd(t_drain, 4), "drain_eps", rnd(rate(sh.acked_total, t_drain), 1),
            "claim_p50_ms", rnd(percentile(&claim_all, 50), 4),
            "claim_p99_ms", rnd(percentile(&claim_all, 99), 4),
            "ack_p50_ms", rnd(percentile(&ack_all, 50), 4),
            "ack_p99_ms", rnd(percentile(&ack_all, 99), 4),
            "commands_per_event",
            "publish", rnd(per_event(cmd_pub, opt.events), 3),
            "claim", rnd(per_event(cmd_claim, opt.events), 3),
            "ack", rnd(per_event(cmd_ack, opt.events), 3),
            "empty_claim", rnd(per_event(cmd_empty, opt.events), 3),
            "total", rnd(per_event(cmd_total, opt.events), 3),
            "commands",
            "publish", (json_int_t)cmd_pub, "claim", (json_int_t)cmd_claim,
            "ack", (json_int_t)cmd_ack, "empty_claim", (json_int_t)cmd_empty,
            "total", (json_int_t)cmd_total,
            "claims", (json_int_t)claims_ok, "empty_claims", (json_int_t)claims_empty,
            "lease_lost", (json_int_t)lease_lost, "lost", (json_int_t)lost,
            "duplicated", (json_int_t)sh.duplicates, "seq_mismatch", (json_int_t)sh.seq_mismatch,
            "ok", (int)(!failed && lost == 0 && sh.duplicates == 0 && sh.seq_mismatch == 0));
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
        if (s == NULL) {
            fprintf(stderr, "bench: building the JSON output failed\n");
            json_decref(o);
            goto out;
        }
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        printf("libmongomq %s  database %s\n", mq_version(), db);
        printf("events %ld  groups %ld  workers %ld  batch %ld  visibility %.3g s\n\n", opt.events,
               opt.groups, opt.workers, opt.batch, opt.visibility);
        printf("%-10s %10s %12s %10s %10s %14s\n", "phase", "seconds", "events/s", "p50 ms",
               "p99 ms", "commands/event");
        printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "publish", t_pub,
               rate(opt.events, t_pub), "-", "-", per_event(cmd_pub, opt.events));
        printf("%-10s %10.3f %12.1f %10s %10s %14.2f\n", "drain", t_drain,
               rate(sh.acked_total, t_drain), "-", "-",
               per_event(cmd_claim + cmd_ack + cmd_empty, opt.events));
        printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  claim", "-", "-",
               percentile(&claim_all, 50), percentile(&claim_all, 99),
               per_event(cmd_claim, opt.events));
        printf("%-10s %10s %12s %10.3f %10.3f %14.2f\n", "  ack", "-", "-",
               percentile(&ack_all, 50), percentile(&ack_all, 99),
               per_event(cmd_ack, opt.events));
        printf("%-10s %10s %12s %10s %10s %14.2f\n", "  empty", "-", "-", "-", "-",
               per_event(cmd_empty, opt.events));
        printf("%-10s %10.3f %12s %10s %10s %14.2f\n\n", "total", t_pub + t_drain, "-", "-",
               "-", per_event(cmd_total, opt.events));
        printf("claims %ld (+ %ld empty)  acks %ld  lease lost %ld\n", claims_ok, claims_empty,
               acks, lease_lost);
        printf("commands: publish %llu  claim %llu  ack %llu  empty claims %llu  total %llu\n",
               (unsigned long long)cmd_pub, (unsigned long long)cmd_claim,
               (unsigned long long)cmd_ack, (unsigned long long)cmd_empty,
               (unsigned long long)cmd_total);
        printf("every event acked exactly once: %s (lost %ld, duplicated %ld, seq mismatch %ld)\n",
               (!failed && lost == 0 && sh.duplicates == 0 && sh.seq_mismatch == 0) ? "yes"
                                                                                   : "NO",
               lost, sh.duplicates, sh.seq_mismatch);
    }

    rc = (failed || lost != 0 || sh.duplicates != 0 || sh.seq_mismatch != 0) ? 1 : 0;

out:
    if (w != NULL) {
        for (i = 0; i < opt.workers; i++) {
            mq_queue_destroy(w[i].queue);
            mq_client_destroy(w[i].client);
            free(w[i].claim_ms.v);
            free(w[i].ack_ms.v);
        }
    }
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    if (group_names != NULL) {
        for (i = 0; i < opt.groups; i++)
            free(group_names[i]);
    }
    free(group_names);
    free(claim_all.v);
    free(ack_all.v);
    free(sh.seq_of);
    free(sh.acked);
    free(w);
    free(threads);
    pthread_mutex_destroy(&sh.mu);
    return rc;
}
