/*
 * listing.c — bench --listing: what a page view of `mongomq web`'s groups costs
 * (mq_groups_json, issue 19) at 10^3, 10^4 and 10^5 groups (--listing-sizes).
 *
 * For each size N: a fresh prefix with N groups of one event each (batches of 1000),
 * 20 of them held (claimed with a lease of an hour; their heads delivered twice, so
 * "stuck"), then each page view the dashboard makes, REPS times: the first page by id,
 * a page deep in the id order (the cursor after min(N/2, 5000) groups), the first page by due,
 * the leased ones, the stuck ones, an id prefix, and a filter nothing matches. For
 * each: server commands per view (mq_client_command_count: libmongoc's APM) and the
 * latency p50/p99. A view is exactly one mq_groups_json call (limit 50), as the page
 * is. The in-memory test server scans every query, so its latencies grow with N
 * whatever the indexes; a real mongod serves these from the locks' indexes.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTING_REPS 20
#define LISTING_HELD 20

typedef struct {
    const char *name;
    mq_groups_opts o;
} view;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int fill(mq_queue *q, long n) {
    mq_error err;
    mq_batch *b = NULL;
    for (long i = 0; i < n; i++) {
        if (b == NULL && mq_batch_new(&b, &err) != MQ_OK) return report_error("batch", err.status, &err), -1;
        char group[32], ev[32];
        /* The held ones first in the round-robin (priority 4: the claims take them). */
        snprintf(group, sizeof group, "g-%07ld", i);
        snprintf(ev, sizeof ev, "{\"i\":%ld}", i);
        if (mq_batch_add(b, group, ev, strlen(ev), i % (n / LISTING_HELD) == 0 ? 4 : 0, &err) != MQ_OK)
            return report_error("batch add", err.status, &err), -1;
        if (mq_batch_count(b) == 1000 || i == n - 1) {
            mq_status st = mq_publish_batch(q, b, NULL, &err);
            mq_batch_destroy(b);
            b = NULL;
            if (st != MQ_OK) return report_error("publish batch", st, &err), -1;
        }
    }
    for (int i = 0; i < LISTING_HELD; i++) {
        mq_lease *l;
        mq_status st = mq_claim(q, "bench:1", 60, 4, &l, &err);
        if (st == MQ_OK) st = mq_nack(q, l, 0, &err), mq_lease_destroy(l);
        if (st == MQ_OK) st = mq_claim(q, "bench:1", 3600, 4, &l, &err);
        if (st != MQ_OK) return report_error("claim", st, &err), -1;
        mq_lease_destroy(l);
    }
    return 0;
}

/* The cursor after `skip` groups by id, found by paging 1000 at a time (not timed). */
static char *cursor_after(mq_queue *q, long skip) {
    char *after = NULL;
    for (long seen = 0; seen < skip;) {
        mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
        o.limit = (size_t)(skip - seen < 1000 ? skip - seen : 1000);
        o.after = after;
        char *text;
        mq_error err;
        if (mq_groups_json(q, &o, &text, &err) != MQ_OK) break;
        json_t *page = json_loads(text, 0, NULL);
        mq_free(text);
        seen += (long)json_array_size(json_object_get(page, "groups"));
        const char *next = json_string_value(json_object_get(page, "next"));
        free(after);
        after = next != NULL ? strdup(next) : NULL;
        json_decref(page);
        if (after == NULL) break;
    }
    return after;
}

int run_listing(const bench_opts *opt, const char *db) {
    mq_error err;
    mq_client *client;
    if (mq_client_new(opt->uri, &client, &err) != MQ_OK) return report_error("client", err.status, &err), 1;
    json_t *out = json_array();
    int failed = 0;
    if (!opt->json) printf("%-8s %-22s %8s %6s %10s %10s\n", "GROUPS", "VIEW", "CMDS/VIEW", "ROWS", "P50_MS", "P99_MS");
    for (size_t s = 0; s < opt->listing_nsizes && !failed; s++) {
        long n = opt->listing_sizes[s];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "list_%ld", n);
        mq_queue *q;
        if (mq_queue_new(client, db, prefix, &q, &err) != MQ_OK) {
            report_error("queue", err.status, &err);
            failed = 1;
            break;
        }
        double t0 = now_mono();
        if (fill(q, n) != 0) {
            mq_queue_destroy(q);
            failed = 1;
            break;
        }
        double t_fill = now_mono() - t0;
        char *deep = cursor_after(q, n / 2 < 5000 ? n / 2 : 5000);
        view views[7];
        for (int i = 0; i < 7; i++) views[i].o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
        views[0].name = "first page, by id";
        views[1].name = "deep page, by id";
        views[1].o.after = deep;
        views[2].name = "first page, by due";
        views[2].o.sort = MQ_GROUPS_SORT_DUE;
        views[3].name = "state=leased";
        views[3].o.states = MQ_GROUP_LEASED;
        views[4].name = "stuck=1";
        views[4].o.min_attempts = 2;
        views[5].name = "prefix=g-00001";
        views[5].o.id_prefix = "g-00001";
        views[6].name = "parked=86400 (none)";
        views[6].o.parked_beyond_s = 86400;
        for (int v = 0; v < 7 && !failed; v++) {
            double lat[LISTING_REPS];
            uint64_t c0 = mq_client_command_count(client);
            long rows = 0;
            for (int r = 0; r < LISTING_REPS; r++) {
                char *text;
                double a = now_mono();
                mq_status st = mq_groups_json(q, &views[v].o, &text, &err);
                lat[r] = (now_mono() - a) * 1000;
                if (st != MQ_OK) {
                    report_error(views[v].name, st, &err);
                    failed = 1;
                    break;
                }
                json_t *page = json_loads(text, 0, NULL);
                rows = (long)json_array_size(json_object_get(page, "groups"));
                json_decref(page);
                mq_free(text);
            }
            if (failed) break;
            double cmds = (double)(mq_client_command_count(client) - c0) / LISTING_REPS;
            qsort(lat, LISTING_REPS, sizeof lat[0], cmp_double);
            double p50 = lat[LISTING_REPS / 2], p99 = lat[LISTING_REPS - 1];
            if (opt->json)
                json_array_append_new(
                    out, json_pack("{s:I,s:s,s:f,s:I,s:f,s:f,s:f}", "groups", (json_int_t)n, "view", views[v].name,
                                   "commands_per_view", cmds, "rows", (json_int_t)rows, "p50_ms", rnd(p50, 2), "p99_ms",
                                   rnd(p99, 2), "fill_s", rnd(t_fill, 2)));
            else
                printf("%-8ld %-22s %8.2f %6ld %10.2f %10.2f\n", n, views[v].name, cmds, rows, p50, p99);
            fflush(stdout);
        }
        free(deep);
        mq_queue_drop(q, &err);
        mq_queue_destroy(q);
    }
    if (opt->json) {
        char *text = json_dumps(json_pack("{s:s,s:o}", "mode", "listing", "views", out), JSON_COMPACT);
        printf("%s\n", text);
        free(text);
    } else {
        json_decref(out);
        printf(
            "(p99 of %d views; the test server scans every query: compare commands, and latency only "
            "between sizes)\n",
            LISTING_REPS);
    }
    mq_client_destroy(client);
    return failed;
}
