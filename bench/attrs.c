/*
 * attrs.c — bench --attrs: what event attributes cost (docs/design.md, "Event
 * attributes").
 *
 * On one fresh prefix, --events events (default 2000) over --groups groups, three
 * kinds of event, each published one at a time and then drained (claim and ack, one
 * event per lease, every attribute read from the lease):
 *   none      no attributes
 *   trace     the two a trace context adds (traceparent, 55 bytes; tracestate)
 *   16x64     16 attributes of 64-byte values (the most an event may carry)
 * After a warm-up of 200 plain events (not counted), each phase timed and its server
 * commands counted (mq_client_command_count). It
 * checks on the way that every lease gives back exactly what its event was published
 * with, so a run whose figures were not what they claim fails. The in-memory test
 * server scans every query: compare commands, and latency only between phases.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KINDS 3

/* Kind k's attributes: *n of them into a (keys and values in kbuf/vbuf). */
static void kind_attrs(int k, long i, mq_event_attr *a, size_t *n, char kbuf[16][16], char vbuf[16][80]) {
    *n = 0;
    if (k == 1) {
        snprintf(vbuf[0], sizeof vbuf[0], "00-%032lx-%016lx-01", i + 1, i + 7);
        snprintf(vbuf[1], sizeof vbuf[1], "mongomq=b%ld", i);
        a[0] = (mq_event_attr){"traceparent", vbuf[0]};
        a[1] = (mq_event_attr){"tracestate", vbuf[1]};
        *n = 2;
    } else if (k == 2) {
        for (int j = 0; j < 16; j++) {
            snprintf(kbuf[j], sizeof kbuf[j], "key.%02d", j);
            snprintf(vbuf[j], sizeof vbuf[j], "%064ld", i * 16 + j);
            a[j] = (mq_event_attr){kbuf[j], vbuf[j]};
        }
        *n = 16;
    }
}

static int publish_kind(mq_queue *q, mq_client *client, int k, long n, long groups, double *lat, bench_phase *p) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    for (long i = 0; i < n; i++) {
        char group[48], ev[48], kbuf[16][16], vbuf[16][80];
        mq_event_attr a[16];
        snprintf(group, sizeof group, "k%d-%ld", k, i % groups);
        snprintf(ev, sizeof ev, "{\"i\":%ld}", i);
        mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
        kind_attrs(k, i, a, &o.attr_count, kbuf, vbuf);
        o.attrs = o.attr_count > 0 ? a : NULL;
        int64_t seq;
        double t = now_mono();
        mq_status st = mq_publish_with(q, group, ev, strlen(ev), &o, &seq, &err);
        lat[i] = (now_mono() - t) * 1000;
        if (st != MQ_OK) return report_error(p->name, st, &err), -1;
    }
    p->events = n;
    finish_phase(p, lat, n, t0, c0, client);
    return 0;
}

/* Claims and acks kind k's n events; each lease's attributes must be its event's. */
static int drain_kind(mq_queue *q, mq_client *client, int k, long n, double *lat, bench_phase *p) {
    mq_error err;
    double t0 = now_mono();
    uint64_t c0 = mq_client_command_count(client);
    long got = 0;
    for (;;) {
        mq_lease *l;
        double t = now_mono();
        mq_status st = mq_claim(q, "bench:attrs", 60, 0, &l, &err);
        if (st == MQ_EMPTY) break;
        if (st != MQ_OK) return report_error(p->name, st, &err), -1;
        /* the event's index is in its JSON: {"i":N} */
        size_t len;
        const char *ev = mq_lease_event(l, &len);
        char num[24] = "";
        if (len > 5 && len - 5 < sizeof num) memcpy(num, ev + 5, len - 6);
        long i = strtol(num, NULL, 10);
        char kbuf[16][16], vbuf[16][80];
        mq_event_attr a[16];
        size_t want;
        kind_attrs(k, i, a, &want, kbuf, vbuf);
        int bad = mq_lease_attr_count(l, 0) != want;
        for (size_t j = 0; j < want && !bad; j++) {
            const char *key, *value;
            bad = mq_lease_attr_at(l, 0, j, &key, &value, &err) != MQ_OK || strcmp(key, a[j].key) != 0 ||
                  strcmp(value, a[j].value) != 0;
        }
        st = mq_ack(q, l, &err);
        mq_lease_destroy(l);
        if (bad) {
            fprintf(stderr, "bench: %s: event %ld came back with other attributes than it was published with\n",
                    p->name, i);
            return -1;
        }
        if (st != MQ_OK) return report_error(p->name, st, &err), -1;
        if (got < n) lat[got] = (now_mono() - t) * 1000;
        got++;
    }
    if (got != n) {
        fprintf(stderr, "bench: %s: %ld events acked, %ld published\n", p->name, got, n);
        return -1;
    }
    p->events = n;
    finish_phase(p, lat, n, t0, c0, client);
    return 0;
}

int run_attrs(const bench_opts *opt, const char *db) {
    mq_client *client;
    mq_queue *q;
    mq_error err;
    if (mq_client_new(opt->uri, &client, &err) != MQ_OK) return report_error("client", err.status, &err), 1;
    if (mq_queue_new(client, db, "attrs", &q, &err) != MQ_OK) {
        report_error("queue", err.status, &err);
        mq_client_destroy(client);
        return 1;
    }
    const long n = opt->events;
    double *lat = calloc((size_t)n, sizeof *lat);
    static const char *const names[2 * KINDS] = {"publish",   "publish+trace",   "publish+16x64",
                                                 "claim+ack", "claim+ack+trace", "claim+ack+16x64"};
    bench_phase ph[2 * KINDS];
    memset(ph, 0, sizeof ph);
    for (int i = 0; i < 2 * KINDS; i++) ph[i].name = names[i];
    int failed = lat == NULL;
    /* A warm-up of up to 200 plain events, not counted: the first publishes of a queue
     * make its indexes, and the test server's JIT warms up. */
    bench_phase warm = {"warm-up", 0, 0, 0, 0, 0};
    long nw = n < 200 ? n : 200;
    failed = failed || publish_kind(q, client, 0, nw, opt->groups, lat, &warm) != 0;
    failed = failed || drain_kind(q, client, 0, nw, lat, &warm) != 0;
    /* Each kind published and drained before the next: a drain sees one kind only. */
    for (int k = 0; k < KINDS && !failed; k++) {
        failed = publish_kind(q, client, k, n, opt->groups, lat, &ph[k]) != 0;
        failed = failed || drain_kind(q, client, k, n, lat, &ph[KINDS + k]) != 0;
    }
    if (!failed) print_phases(opt, db, "attrs", ph, 2 * KINDS, "(latency per call: a publish, a claim and its ack)");
    free(lat);
    mq_queue_drop(q, &err);
    mq_queue_destroy(q);
    mq_client_destroy(client);
    return failed;
}
