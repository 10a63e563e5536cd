/*
 * dedup.c — bench --dedup: what a dedup key costs (docs/design.md, "Deduplication").
 *
 * On one fresh prefix, --events events (default 2000) over --groups groups, in these
 * phases, each timed and its server commands counted (mq_client_command_count:
 * libmongoc's APM):
 *   publish           single publishes without a key
 *   publish+key       single publishes, each with a fresh key
 *   duplicate         the same keys again (every publish MQ_DUPLICATE)
 *   batch(10)         batches of 10 without keys
 *   batch(10)+key     batches of 10 with fresh keys
 *   batch duplicate   those batches again (every event a duplicate)
 *   claim+ack         claim and ack of every unkeyed event
 *   claim+ack+key     the same for the keyed ones (their acks leave records)
 * and checks what it expects on the way (a duplicate's seq is the first's, every
 * event acked once), so a run whose figures were not what they claim fails. For each
 * phase: events/s, the latency p50/p99 of a call, commands per event. The in-memory
 * test server scans every query: compare commands, and latency only between phases.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Single publishes of n events; key_base NULL: no key, else key "<base>-<i>". With
 * want_dup, each must be MQ_DUPLICATE of seqs[i]; else seqs[i] gets the seq. */
static int singles(mq_queue *q, mq_client *client, long n, long groups, const char *key_base, int want_dup,
                   int64_t *seqs, double *lat, bench_phase *p) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    for (long i = 0; i < n; i++) {
        char group[32], key[48], ev[48];
        snprintf(group, sizeof group, "g-%ld", i % groups);
        snprintf(key, sizeof key, "%s-%ld", key_base != NULL ? key_base : "", i);
        snprintf(ev, sizeof ev, "{\"i\":%ld}", i);
        mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
        o.dedup_key = key_base != NULL ? key : NULL;
        int64_t seq;
        double a = now_mono();
        mq_status st = mq_publish_with(q, group, ev, strlen(ev), &o, &seq, &err);
        lat[i] = (now_mono() - a) * 1000;
        if (st != (want_dup ? MQ_DUPLICATE : MQ_OK) || (want_dup && seq != seqs[i])) {
            report_error(p->name, st, &err);
            fprintf(stderr, "bench: %s: event %ld: %s, seq %lld\n", p->name, i, mq_status_name(st), (long long)seq);
            return -1;
        }
        if (!want_dup) seqs[i] = seq;
    }
    p->events = n;
    finish_phase(p, lat, n, t0, c0, client);
    return 0;
}

/* Batches of 10, as singles. */
static int batches(mq_queue *q, mq_client *client, long n, long groups, const char *key_base, int want_dup,
                   int64_t *seqs, double *lat, bench_phase *p) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    long calls = 0;
    for (long i = 0; i < n; i += 10) {
        mq_batch *b;
        if (mq_batch_new(&b, &err) != MQ_OK) return report_error("batch", err.status, &err), -1;
        long k = n - i < 10 ? n - i : 10;
        for (long j = i; j < i + k; j++) {
            char group[32], key[48], ev[48];
            snprintf(group, sizeof group, "g-%ld", j % groups);
            snprintf(key, sizeof key, "%s-%ld", key_base != NULL ? key_base : "", j);
            snprintf(ev, sizeof ev, "{\"j\":%ld}", j);
            mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
            o.dedup_key = key_base != NULL ? key : NULL;
            if (mq_batch_add_with(b, group, ev, strlen(ev), &o, &err) != MQ_OK)
                return mq_batch_destroy(b), report_error("batch add", err.status, &err), -1;
        }
        int64_t first;
        double a = now_mono();
        mq_status st = mq_publish_batch(q, b, &first, &err);
        lat[calls++] = (now_mono() - a) * 1000;
        int bad = st != (want_dup ? MQ_DUPLICATE : MQ_OK);
        for (long j = 0; j < k && !bad; j++) {
            int64_t seq;
            mq_status one = mq_batch_outcome(b, (size_t)j, &seq, &err);
            if (want_dup)
                bad = one != MQ_DUPLICATE || seq != seqs[i + j];
            else
                bad = one != MQ_OK, seqs[i + j] = seq;
        }
        mq_batch_destroy(b);
        if (bad) {
            report_error(p->name, st, &err);
            fprintf(stderr, "bench: %s: the batch at event %ld was not what was expected\n", p->name, i);
            return -1;
        }
    }
    p->events = n;
    finish_phase(p, lat, calls, t0, c0, client);
    return 0;
}

/* Claims and acks every due event; counts them. */
static int drain(mq_queue *q, mq_client *client, long want, double *lat, bench_phase *p) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    long n = 0;
    for (;;) {
        mq_lease *l;
        double a = now_mono();
        mq_status st = mq_claim(q, "bench:1", 60, 0, &l, &err);
        if (st == MQ_EMPTY) break;
        if (st == MQ_OK) st = mq_ack(q, l, &err), mq_lease_destroy(l);
        if (st != MQ_OK) return report_error(p->name, st, &err), -1;
        if (n < want) lat[n] = (now_mono() - a) * 1000;
        n++;
    }
    if (n != want) {
        fprintf(stderr, "bench: %s: %ld events acked, %ld published\n", p->name, n, want);
        return -1;
    }
    p->events = n;
    finish_phase(p, lat, n, t0, c0, client);
    return 0;
}

int run_dedup(const bench_opts *opt, const char *db) {
    mq_client *client;
    mq_queue *q;
    mq_error err;
    if (mq_client_new(opt->uri, &client, &err) != MQ_OK) return report_error("client", err.status, &err), 1;
    if (mq_queue_new(client, db, "dedup", &q, &err) != MQ_OK) {
        report_error("queue", err.status, &err);
        mq_client_destroy(client);
        return 1;
    }
    const long n = opt->events;
    int64_t *seqs = calloc((size_t)n, sizeof *seqs);
    double *lat = calloc((size_t)(2 * n), sizeof *lat); /* a drain times 2n calls */
    static const char *const names[8] = {"publish",       "publish+key",     "duplicate", "batch(10)",
                                         "batch(10)+key", "batch duplicate", "claim+ack", "claim+ack+key"};
    bench_phase ph[8];
    memset(ph, 0, sizeof ph);
    for (int i = 0; i < 8; i++) ph[i].name = names[i];
    int failed = seqs == NULL || lat == NULL;
    /* Unkeyed events drained apart from keyed ones: the two claim+ack phases each see
     * one kind (the keyed publishes come after the first drain). */
    failed = failed || singles(q, client, n, opt->groups, NULL, 0, seqs, lat, &ph[0]) != 0;
    failed = failed || batches(q, client, n, opt->groups, NULL, 0, seqs, lat, &ph[3]) != 0;
    failed = failed || drain(q, client, 2 * n, lat, &ph[6]) != 0;
    int64_t *bseqs = failed ? NULL : calloc((size_t)n, sizeof *bseqs);
    failed = failed || bseqs == NULL;
    failed = failed || singles(q, client, n, opt->groups, "s", 0, seqs, lat, &ph[1]) != 0;
    failed = failed || singles(q, client, n, opt->groups, "s", 1, seqs, lat, &ph[2]) != 0;
    failed = failed || batches(q, client, n, opt->groups, "b", 0, bseqs, lat, &ph[4]) != 0;
    failed = failed || batches(q, client, n, opt->groups, "b", 1, bseqs, lat, &ph[5]) != 0;
    failed = failed || drain(q, client, 2 * n, lat, &ph[7]) != 0;
    if (!failed)
        print_phases(opt, db, "dedup", ph, 8, "(latency per call: a publish, a batch of 10, a claim and its ack)");
    free(seqs);
    free(bseqs);
    free(lat);
    mq_queue_drop(q, &err);
    mq_queue_destroy(q);
    mq_client_destroy(client);
    return failed;
}
