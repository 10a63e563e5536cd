/*
 * soak.c — the bench's --soak MINUTES mode: publish, claim and ack in rounds of 100
 * for that long, printing events/s and the process's RSS each minute (issue 14).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- --soak: a long steady run, a line a minute (issue 14) ---- */

/* The process's resident set in KiB (from /proc/self/statm), or -1. */
static long rss_kib(void) {
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
int run_soak(const bench_opts *opt, const char *db) {
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
