/*
 * bench.c — throughput, latency and server commands per event of libmongomq.
 *
 *   bench [--uri URI] [--events N] [--groups G] [--workers W] [--visibility S]
 *         [--batch B] [--wait] [--json]
 *   bench [--uri URI] --waiters N [--events E] [--json]
 *   bench [--uri URI] --partitions [--events N] [--groups G] [--workers W] [--batch B] [--json]
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
 *
 * The files: bench.c (this: main, the arguments, the helpers every mode uses),
 * throughput.c (the single and batch modes), waiters.c (--waiters), soak.c (--soak),
 * listing.c (--listing), dedup.c (--dedup), attrs.c (--attrs), partitions.c
 * (--partitions: the modes on queues of 1, 4 and 16 partitions, and what an empty
 * and an idle waiting claim cost there), phases.c (what those share), bench.h (what
 * they all share).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_MODES 2

double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void bench_log(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (level <= 2) fprintf(stderr, "libmongoc: [%s] %s\n", domain ? domain : "?", message ? message : "");
}

void report_error(const char *what, mq_status st, const mq_error *err) {
    fprintf(stderr, "bench: %s failed: %s: %s\n", what, mq_status_name(st),
            err && err->message[0] ? err->message : "(no message)");
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: bench [--uri URI] [--events N] [--groups G] [--workers W]\n"
            "             [--visibility S] [--batch B] [--wait] [--json]\n"
            "       bench [--uri URI] --waiters N [--events E] [--json]\n"
            "       bench [--uri URI] --soak MINUTES [--groups G]\n"
            "       bench [--uri URI] --listing [--listing-sizes N,N,...] [--json]\n"
            "       bench [--uri URI] --dedup [--events N] [--groups G] [--json]\n"
            "       bench [--uri URI] --attrs [--events N] [--groups G] [--json]\n"
            "       bench [--uri URI] --partitions [--events N] [--groups G] [--workers W]\n"
            "             [--batch B] [--json]\n"
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
            "  --listing        the groups listing (mq_groups_json): commands and latency\n"
            "                   per page view at 1000, 10000, 100000 groups\n"
            "  --dedup          publishes and acks with and without dedup keys: commands\n"
            "                   per event, events/s, latency\n"
            "  --attrs          publishes and claims with no, 2 (a trace context's) and 16\n"
            "                   attributes: events/s, latency, commands per event\n"
            "  --partitions     the modes on queues of 1, 4 and 16 partitions side by side:\n"
            "                   events/s, commands per event, per empty claim (all\n"
            "                   partitions, one) and of an idle 3 s waiting claim\n"
            "  --json           print one JSON object instead of the tables\n",
            BENCH_DEFAULT_BATCH, BENCH_WAIT_S);
}

/* --name VALUE or --name=VALUE; returns the value or NULL (and advances *i). */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "bench: %s needs a value\n", name);
        exit(2);
    }
    return argv[++*i];
}

static long parse_long(const char *name, const char *v, long min, long max) {
    char *end;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min || x > max) {
        fprintf(stderr, "bench: %s must be an integer in %ld..%ld (got \"%s\")\n", name, min, max, v);
        exit(2);
    }
    return x;
}

static double parse_double(const char *name, const char *v) {
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

static void parse_args(int argc, char **argv, bench_opts *o) {
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
    o->listing = 0;
    o->dedup = 0;
    o->attrs = 0;
    o->partitions = 0;
    o->listing_nsizes = 3;
    o->listing_sizes[0] = 1000;
    o->listing_sizes[1] = 10000;
    o->listing_sizes[2] = 100000;
    for (i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--wait") == 0)
            o->wait = 1;
        else if (strcmp(argv[i], "--listing") == 0)
            o->listing = 1;
        else if (strcmp(argv[i], "--dedup") == 0)
            o->dedup = 1;
        else if (strcmp(argv[i], "--attrs") == 0)
            o->attrs = 1;
        else if (strcmp(argv[i], "--partitions") == 0)
            o->partitions = 1;
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
        else if ((v = opt_value(argc, argv, &i, "--listing-sizes")) != NULL) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            o->listing_nsizes = 0;
            for (char *t = strtok(buf, ","); t != NULL && o->listing_nsizes < 8; t = strtok(NULL, ","))
                o->listing_sizes[o->listing_nsizes++] = parse_long("--listing-sizes", t, 20, 10000000L);
        } else {
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

double per_event(uint64_t cmds, long events) { return events > 0 ? (double)cmds / (double)events : 0.0; }

double rate(long n, double secs) { return secs > 0.0 ? (double)n / secs : 0.0; }

/* x rounded to `digits` decimals (x >= 0), so the JSON shows no float noise. */
double rnd(double x, int digits) {
    double scale = 1.0;
    while (digits-- > 0) scale *= 10.0;
    return (double)(long long)(x * scale + 0.5) / scale;
}

int main(int argc, char **argv) {
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
    if (opt.listing) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_listing(&opt, db);
    }
    if (opt.dedup) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_dedup(&opt, db);
    }
    if (opt.attrs) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_attrs(&opt, db);
    }
    if (opt.partitions) {
        snprintf(db, sizeof db, "mongomq_bench_%ld_%ld", (long)getpid(), (long)time(NULL));
        return run_partitions(&opt, db);
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
