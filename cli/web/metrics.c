/* mongomq web: GET /metrics, the Prometheus text format (version 0.0.4). One time
 * series per queue (label queue="db.prefix"), read from the stats cache: a scrape
 * costs at most one mq_stats_json per queue per --cache interval, however many
 * scrapers ask. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web.h"

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n + 1;
        char *p = realloc(b->p, cap);
        if (p == NULL) return;
        b->p = p;
        b->cap = cap;
    }
}

/* A label value: backslash, double quote and line feed escaped. */
static void label(char *out, size_t size, const char *v) {
    size_t o = 0;
    for (; *v && o + 3 < size; v++) {
        if (*v == '\\' || *v == '"')
            out[o++] = '\\', out[o++] = *v;
        else if (*v == '\n')
            out[o++] = '\\', out[o++] = 'n';
        else
            out[o++] = *v;
    }
    out[o] = '\0';
}

typedef struct sample {
    char queue[700];
    json_t *stats; /* NULL when the read failed */
    long long reads;
} sample;

static double num(json_t *obj, const char *a, const char *b) {
    json_t *v = json_object_get(obj, a);
    if (b != NULL) v = json_object_get(v, b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void family(buf *b, const char *name, const char *type, const char *help) {
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{queue="..."[,key="val"]} value, for every queue whose value is known. */
static void series(buf *b, const sample *s, size_t n, const char *name, const char *key, const char *val, const char *a,
                   const char *c) {
    for (size_t i = 0; i < n; i++) {
        if (s[i].stats == NULL) continue;
        double v = num(s[i].stats, a, c);
        if (isnan(v)) continue;
        if (key != NULL)
            put(b, "%s{queue=\"%s\",%s=\"%s\"} %.17g\n", name, s[i].queue, key, val, v);
        else
            put(b, "%s{queue=\"%s\"} %.17g\n", name, s[i].queue, v);
    }
}

void web_metrics(web_app *app, web_resp *out) {
    sample *s = calloc(app->nqueues ? app->nqueues : 1, sizeof *s);
    for (size_t i = 0; i < app->nqueues; i++) {
        web_queue *q = &app->queues[i];
        label(s[i].queue, sizeof s[i].queue, q->name);
        s[i].stats = web_stats(app, q, app->cache_s, NULL, 0);
        pthread_mutex_lock(&q->mu);
        s[i].reads = q->reads;
        pthread_mutex_unlock(&q->mu);
        /* No messages: nothing waits, the oldest age is 0 (the library says null). */
        if (s[i].stats != NULL && num(s[i].stats, "messages", NULL) == 0)
            json_object_set_new(s[i].stats, "oldest_message_age_s", json_real(0));
    }
    size_t n = app->nqueues;
    buf b = {malloc(4096), 0, 4096};
    if (b.p == NULL) {
        free(s);
        web_resp_text(out, 500, "text/plain", "out of memory\n");
        return;
    }
    b.p[0] = '\0';
    family(&b, "mongomq_queue_up", "gauge", "1 when the last stats read of the queue succeeded, else 0.");
    for (size_t i = 0; i < n; i++) put(&b, "mongomq_queue_up{queue=\"%s\"} %d\n", s[i].queue, s[i].stats != NULL);
    family(&b, "mongomq_queue_messages", "gauge", "Events in the queue (its messages collection).");
    series(&b, s, n, "mongomq_queue_messages", NULL, NULL, "messages", NULL);
    family(&b, "mongomq_queue_groups", "gauge",
           "Groups by state: ready (claimable now), leased (held by a worker, nacked with a delay included), "
           "parked (waiting for a scheduled head), paused.");
    static const char *states[] = {"ready", "leased", "parked", "paused"};
    for (size_t k = 0; k < 4; k++) series(&b, s, n, "mongomq_queue_groups", "state", states[k], "groups", states[k]);
    family(&b, "mongomq_queue_paused_groups", "gauge", "Groups paused (mq_pause_group): never claimed until resumed.");
    series(&b, s, n, "mongomq_queue_paused_groups", NULL, NULL, "groups", "paused");
    family(&b, "mongomq_queue_dead_messages", "gauge", "Dead letters.");
    series(&b, s, n, "mongomq_queue_dead_messages", NULL, NULL, "dead", NULL);
    family(&b, "mongomq_queue_oldest_message_age_seconds", "gauge",
           "How long the oldest event (smallest seq) has been in the queue; 0 when it is empty.");
    series(&b, s, n, "mongomq_queue_oldest_message_age_seconds", NULL, NULL, "oldest_message_age_s", NULL);
    family(&b, "mongomq_queue_published_total", "counter", "Events ever published (the seq counter).");
    series(&b, s, n, "mongomq_queue_published_total", NULL, NULL, "published", NULL);
    family(&b, "mongomq_queue_priority_messages", "gauge", "Events by the priority they were published with.");
    for (int p = 0; p <= 4; p++) {
        char key[2] = {(char)('0' + p), '\0'};
        for (size_t i = 0; i < n; i++) {
            double v = s[i].stats != NULL ? num(json_object_get(s[i].stats, "priorities"), key, "messages") : NAN;
            if (!isnan(v))
                put(&b, "mongomq_queue_priority_messages{queue=\"%s\",priority=\"%s\"} %.17g\n", s[i].queue, key, v);
        }
    }
    family(&b, "mongomq_queue_priority_groups", "gauge", "Groups by their priority.");
    for (int p = 0; p <= 4; p++) {
        char key[2] = {(char)('0' + p), '\0'};
        for (size_t i = 0; i < n; i++) {
            double v = s[i].stats != NULL ? num(json_object_get(s[i].stats, "priorities"), key, "groups") : NAN;
            if (!isnan(v))
                put(&b, "mongomq_queue_priority_groups{queue=\"%s\",priority=\"%s\"} %.17g\n", s[i].queue, key, v);
        }
    }
    family(&b, "mongomq_queue_stats_timestamp_seconds", "gauge",
           "The queue clock (epoch seconds) when these values were read: they are cached.");
    series(&b, s, n, "mongomq_queue_stats_timestamp_seconds", NULL, NULL, "now", NULL);
    family(&b, "mongomq_web_stats_reads_total", "counter", "Stats reads this dashboard made of the queue.");
    for (size_t i = 0; i < n; i++)
        put(&b, "mongomq_web_stats_reads_total{queue=\"%s\"} %lld\n", s[i].queue, s[i].reads);
    for (size_t i = 0; i < n; i++) json_decref(s[i].stats);
    free(s);
    out->status = 200;
    out->type = "text/plain; version=0.0.4; charset=utf-8";
    out->body = b.p;
    out->len = b.len;
}
