/* What every part of the model test (tests/test_model.c, tests/model/) shares: the
 * random numbers, the trace of operations and the failure report with its replay
 * line, the model's queries (heads, counts), and reading the queue's documents on the
 * server the way docs/design.md, "Schema", describes them. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const GROUP[NGROUPS] = {"g0", "g1", "g2", "g3", "g4"};
const char *const WORKER[3] = {"w0", "w1", "w2"};
const char *const EV_STATE[] = {"live", "acked", "dead", "gone"};

/* ---- random numbers: splitmix64, the same sequence on every platform ---- */

uint64_t rnd_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int below(model *m, int n) { return (int)(rnd_next(&m->rng) % (uint64_t)n); }
double now_of(model *m) { return m->t->now; }

/* ---- trace and failure ---- */

static void push_trace(model *m, const char *line) {
    snprintf(m->trace[m->ntrace % TRACE], LINE, "%s", line);
    m->ntrace++;
}

/* Adds to the description of the running operation. */
void say(model *m, const char *fmt, ...) {
    size_t len = strlen(m->cur);
    if (len + 1 >= LINE) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->cur + len, LINE - len, fmt, ap);
    va_end(ap);
}

void begin_op(model *m, const char *fmt, ...) {
    m->h = below(m, 2);
    int n = snprintf(m->cur, LINE, "step %d t=+%.2f h%d: ", m->step, now_of(m) - MODEL_T0, m->h);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->cur + n, LINE - (size_t)n, fmt, ap);
    va_end(ap);
}

void end_op(model *m) {
    push_trace(m, m->cur);
    m->cur[0] = '\0';
}

static void dump_model(model *m) {
    printf("  model state (t=+%.3f, max attempts: handle 0 %d, handle 1 %d):\n", now_of(m) - MODEL_T0, m->hmax[0],
           m->hmax[1]);
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *l = &m->lock[g];
        printf("    %s: ", GROUP[g]);
        if (l->exists) {
            printf("lock available_at %s%.3f token %s priority %d%s attempts %d head %lld;",
                   l->avail == 0 ? "0 = " : "+", l->avail == 0 ? 0 : l->avail - MODEL_T0,
                   l->token[0] ? l->token : "null", l->priority, l->paused ? " PAUSED" : "", l->attempts,
                   (long long)l->head);
        } else {
            printf("no lock;");
        }
        printf(" events");
        for (int i = 0; i < m->nev; i++) {
            const mev *e = &m->ev[i];
            if (e->group != g || e->state == EV_GONE || e->state == EV_ACKED) continue;
            printf(" %lld%s(d%d", (long long)e->seq, e->state == EV_DEAD ? "[dead]" : "", e->lo);
            if (e->hi != e->lo) printf("..%d", e->hi);
            if (e->not_before > 0) printf(",nb+%.2f", e->not_before - MODEL_T0);
            printf(")");
        }
        printf("\n");
    }
    dump_dedup(m);
}

void mfail(model *m, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m->cur[0]) end_op(m);
    printf("\n[model] FAILED: sequence %d (seed %llu), step %d: %s\n", m->sequence, (unsigned long long)m->seed,
           m->step, msg);
    printf("[model] replay: MONGOMQ_MODEL_SEED=%llu MONGOMQ_MODEL_SEQUENCES=1 (steps: %d)\n",
           (unsigned long long)m->seed, m->step + 1);
    int first = m->ntrace > TRACE ? m->ntrace - TRACE : 0;
    printf("[model] the last %d operations:\n", m->ntrace - first);
    for (int i = first; i < m->ntrace; i++) printf("  %s\n", m->trace[i % TRACE]);
    dump_model(m);
    fflush(stdout);
    longjmp(m->fail_jmp, 1);
}

void expect_status(model *m, const char *call, mq_status got, mq_status want, const mq_error *err) {
    if (got != want)
        mfail(m, "%s returned %s, the model expects %s (%s)", call, mq_status_name(got), mq_status_name(want),
              err->message);
}

/* ---- the model's queries ---- */

int group_index(const char *name) {
    for (int g = 0; g < NGROUPS; g++)
        if (name != NULL && strcmp(name, GROUP[g]) == 0) return g;
    return -1;
}

mev *head_of(model *m, int g) {
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == g) return &m->ev[i];
    return NULL;
}

mev *next_in_group(model *m, const mev *e) {
    for (int i = (int)(e - m->ev) + 1; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == e->group) return &m->ev[i];
    return NULL;
}

mev *find_ev(model *m, int64_t seq) {
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].seq == seq) return &m->ev[i];
    return NULL;
}

int live_count(model *m, int g) {
    int n = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && (g < 0 || m->ev[i].group == g)) n++;
    return n;
}

int dead_count_model(model *m) {
    int n = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_DEAD) n++;
    return n;
}

void holder_of_token(const char *token, char *out, size_t size) {
    const char *colon = strrchr(token, ':');
    size_t len = colon != NULL ? (size_t)(colon - token) : strlen(token);
    snprintf(out, size, "%.*s", (int)len, token);
}

/* ---- reading the server (the documents of docs/design.md, "Schema") ---- */

mongoc_cursor_t *raw_find(model *m, const char *suffix, bson_t *filter, int sorted, mongoc_collection_t **coll) {
    *coll = tq_collection(m->t, suffix);
    bson_t *opts = sorted ? BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}") : bson_new();
    mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(*coll, filter, opts, NULL);
    bson_destroy(opts);
    return cursor;
}

void raw_done(model *m, mongoc_cursor_t *cursor, mongoc_collection_t *coll, bson_t *filter, const char *what) {
    bson_error_t error;
    int bad = mongoc_cursor_error(cursor, &error);
    mongoc_cursor_destroy(cursor);
    mongoc_collection_destroy(coll);
    bson_destroy(filter);
    if (bad) mfail(m, "reading %s: %s", what, error.message);
}

static double doc_double(const bson_t *doc, const char *field, double fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return bson_iter_as_double(&it);
}

/* A lock document as the model holds one: the stored priority -1 - p is p, paused;
 * fields that are absent are 0 (attempts: -1). */
void parse_lock(const bson_t *doc, mlock *out) {
    memset(out, 0, sizeof *out);
    out->exists = 1;
    out->avail = doc_double(doc, "available_at", -1);
    int stored = (int)doc_double(doc, "priority", 99);
    out->paused = stored < 0;
    out->priority = stored < 0 ? -1 - stored : stored;
    out->paused_at = doc_double(doc, "paused_at", 0);
    out->attempts = (int)doc_double(doc, "attempts", -1);
    out->leased_at = doc_double(doc, "leased_at", 0);
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "head") && BSON_ITER_HOLDS_NUMBER(&it)) out->head = bson_iter_as_int64(&it);
    if (bson_iter_init_find(&it, doc, "token") && BSON_ITER_HOLDS_UTF8(&it))
        snprintf(out->token, sizeof out->token, "%s", bson_iter_utf8(&it, NULL));
}

/* The lock of group g on the server. */
void srv_lock(model *m, int g, mlock *out) {
    mongoc_collection_t *coll;
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(GROUP[g]));
    mongoc_cursor_t *cursor = raw_find(m, "locks", filter, 0, &coll);
    const bson_t *doc;
    memset(out, 0, sizeof *out);
    if (mongoc_cursor_next(cursor, &doc)) parse_lock(doc, out);
    raw_done(m, cursor, coll, filter, "a lock");
}

/* Whether seq is a dead letter on the server, and its attempts. */
int srv_dead(model *m, int64_t seq, int *attempts) {
    mongoc_collection_t *coll;
    bson_t *filter = BCON_NEW("_id", BCON_INT64(seq));
    mongoc_cursor_t *cursor = raw_find(m, "dead", filter, 0, &coll);
    const bson_t *doc;
    int found = mongoc_cursor_next(cursor, &doc);
    if (found && attempts != NULL) *attempts = (int)doc_double(doc, "attempts", -1);
    raw_done(m, cursor, coll, filter, "a dead letter");
    return found;
}

/* Read whole before anything is compared, so that a failure leaves no cursor open. */
int read_ids(model *m, const char *suffix, srv_doc *out, int cap) {
    mongoc_collection_t *coll;
    bson_t *filter = bson_new();
    mongoc_cursor_t *cursor = raw_find(m, suffix, filter, 1, &coll);
    const bson_t *doc;
    int n = 0, over = 0;
    while (mongoc_cursor_next(cursor, &doc)) {
        if (n == cap) {
            over = 1;
            continue;
        }
        bson_iter_t it;
        out[n].seq = bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
        out[n].no_group = !bson_iter_init_find(&it, doc, "group_id");
        snprintf(
            out[n].group, sizeof out[n].group, "%s",
            bson_iter_init_find(&it, doc, "group_id") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "?");
        n++;
    }
    raw_done(m, cursor, coll, filter, suffix);
    if (over) mfail(m, "%s holds more than %d documents", suffix, cap);
    return n;
}
