/*
 * bench.h — what the bench's files share: the options, one throughput mode's figures,
 * the helpers of bench.c, and each mode's entry point (bench.c holds main and the
 * arguments; throughput.c the single and batch modes; waiters.c --waiters; soak.c
 * --soak; listing.c --listing; dedup.c --dedup; attrs.c --attrs; partitions.c
 * --partitions; phases.c the phase tables of --dedup and --attrs, and the phase helper
 * partitions.c uses too). What the bench measures and how: the comment at the top of
 * bench.c.
 */
#ifndef MONGOMQ_BENCH_H
#define MONGOMQ_BENCH_H

#include <mongomq.h>

#include <jansson.h>

#include <stdint.h>

#define BENCH_WAIT_S 1.0       /* mq_claim_wait's timeout with --wait */
#define BENCH_DEFAULT_BATCH 10 /* the batch mode's B when both modes run */

/* The arguments (bench.c, parse_args). */
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
    int listing;  /* --listing: the groups listing's page views (listing.c) */
    long listing_sizes[8];
    size_t listing_nsizes; /* --listing-sizes N,N,... (default 1000,10000,100000) */
    int dedup;             /* --dedup: what dedup keys cost (dedup.c) */
    int attrs;             /* --attrs: what event attributes cost (attrs.c) */
    int partitions;        /* --partitions: P = 1, 4, 16 side by side (partitions.c) */
} bench_opts;

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

/* bench.c: the helpers every mode uses. */
double now_mono(void);
void sleep_ms(long ms);
void report_error(const char *what, mq_status st, const mq_error *err);
double per_event(uint64_t cmds, long events);
double rate(long n, double secs);
double rnd(double x, int digits);

/* throughput.c: one mode (B = batch), its table and its JSON object. */
int run_mode(const bench_opts *opt, const char *db, long batch, bench_result *res);
void print_table(const bench_opts *opt, const char *db, const bench_result *r);
json_t *result_json(const bench_opts *opt, const char *db, const bench_result *r);

/* waiters.c: --waiters N, wake-ups per event. */
int run_waiters(const bench_opts *opt, const char *db);

/* soak.c: --soak MINUTES, a long steady run. */
int run_soak(const bench_opts *opt, const char *db);

/* listing.c: --listing, mq_groups_json's page views at several numbers of groups. */
int run_listing(const bench_opts *opt, const char *db);

/* phases.c: one timed phase of --dedup or --attrs (its events, seconds, server
 * commands and call latency percentiles), and their table or JSON object. */
typedef struct {
    const char *name;
    long events;
    double secs;
    uint64_t commands;
    double p50, p99;
} bench_phase;
/* Ends phase p begun at t0 (now_mono) with c0 commands: sorts lat[0..calls). */
void finish_phase(bench_phase *p, double *lat, long calls, double t0, uint64_t c0, mq_client *client);
/* Prints the phases as a table (with `note` under it) or, with opt->json, one JSON
 * object {"library", "mode", "phases": [...]}. */
void print_phases(const bench_opts *opt, const char *db, const char *mode, const bench_phase *ph, int n,
                  const char *note);

/* dedup.c: --dedup, publishes and acks with and without dedup keys. */
int run_dedup(const bench_opts *opt, const char *db);

/* attrs.c: --attrs, publishes and claims with no, 2 (a trace context's) and 16 attributes. */
int run_attrs(const bench_opts *opt, const char *db);

/* partitions.c: --partitions, one workload on queues of 1, 4 and 16 partitions: rates,
 * commands per event, per empty claim and per idle wait, the spread over partitions. */
int run_partitions(const bench_opts *opt, const char *db);

#endif
