/* The model test's checks after every step (tests/test_model.c): the queue clock of
 * both handles, their automatic repair counts, the messages and dead letters on the
 * server against the model's events, the keyed messages and the records of dedup keys
 * (check_dedup, tests/model/dedup.c), every lock document against the model's lock
 * (paused ones included), and mq_stats_json. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void check_repair_counts(model *m) {
    for (int h = 0; h < 2; h++) {
        uint64_t runs = 99, fixed = 99;
        mq_queue_repair_counts(m->q[h], &runs, &fixed);
        if (runs != m->repair_runs[h] || fixed != m->repair_fixed[h])
            mfail(m, "mq_queue_repair_counts of handle %d: %llu runs, %llu fixed; the model counts %llu, %llu", h,
                  (unsigned long long)runs, (unsigned long long)fixed, (unsigned long long)m->repair_runs[h],
                  (unsigned long long)m->repair_fixed[h]);
    }
}

static void missing_event(model *m, const mev *e) {
    int dead = srv_dead(m, e->seq, NULL);
    mfail(m, "event %lld (%s) is in the model's queue but not in the messages collection%s", (long long)e->seq,
          GROUP[e->group], dead ? " (it is a dead letter)" : ": it is in neither the queue nor the dead letters");
}

/* The messages on the server are exactly the model's live events: every published
 * event not acked, purged or dead is there, and nothing else but the records of dedup
 * keys (no group_id), which check_dedup compares with the model's. */
static void check_messages(model *m) {
    int n = read_ids(m, "messages", m->scratch, MAX_EV);
    int i = 0; /* the model's next event, in seq order */
    for (int k = 0; k < n; k++) {
        if (m->scratch[k].no_group) continue; /* a record */
        int64_t seq = m->scratch[k].seq;
        for (; i < m->nev && m->ev[i].seq < seq; i++)
            if (m->ev[i].state == EV_LIVE) missing_event(m, &m->ev[i]);
        mev *e = find_ev(m, seq);
        if (e == NULL || e->state != EV_LIVE)
            mfail(m, "event %lld (%s) is in the messages collection, the model has it %s", (long long)seq,
                  m->scratch[k].group, e ? EV_STATE[e->state] : "never published");
        if (strcmp(m->scratch[k].group, GROUP[e->group]) != 0)
            mfail(m, "event %lld is in group %s on the server, %s in the model", (long long)seq, m->scratch[k].group,
                  GROUP[e->group]);
        i = (int)(e - m->ev) + 1;
    }
    for (; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE) missing_event(m, &m->ev[i]);
}

/* The dead letters on the server are exactly the model's. */
static void check_dead(model *m) {
    int n = read_ids(m, "dead", m->scratch, MAX_EV);
    for (int k = 0; k < n; k++) {
        mev *e = find_ev(m, m->scratch[k].seq);
        if (e == NULL || e->state != EV_DEAD)
            mfail(m, "event %lld (%s) is a dead letter on the server, the model has it %s",
                  (long long)m->scratch[k].seq, m->scratch[k].group, e ? EV_STATE[e->state] : "never published");
    }
    if (n != dead_count_model(m)) {
        for (int i = 0; i < m->nev; i++)
            if (m->ev[i].state == EV_DEAD && !srv_dead(m, m->ev[i].seq, NULL))
                mfail(m, "event %lld (%s) is a dead letter in the model but not on the server", (long long)m->ev[i].seq,
                      GROUP[m->ev[i].group]);
    }
}

/* A time of the fake clock (which starts at MODEL_T0) as the trace shows it: +s, or 0. */
static const char *shown(double t, char *buf, size_t size) {
    if (t == 0)
        snprintf(buf, size, "0");
    else
        snprintf(buf, size, "+%.3f", t - MODEL_T0);
    return buf;
}

/* The locks on the server are the model's: which groups have one, and every field of
 * the schema in docs/design.md: available_at, token, priority (-1 - p while paused,
 * with paused_at), attempts and the head they count, leased_at. */
static void check_locks(model *m) {
    mongoc_collection_t *coll;
    bson_t *filter = bson_new();
    mongoc_cursor_t *cursor = raw_find(m, "locks", filter, 0, &coll);
    const bson_t *doc;
    mlock srv[NGROUPS];
    memset(srv, 0, sizeof srv);
    char unknown[128] = "";
    while (mongoc_cursor_next(cursor, &doc)) {
        bson_iter_t it;
        const char *id =
            bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "?";
        int g = group_index(id);
        if (g < 0)
            snprintf(unknown, sizeof unknown, "%s", id);
        else
            parse_lock(doc, &srv[g]);
    }
    raw_done(m, cursor, coll, filter, "the locks");
    if (unknown[0]) mfail(m, "a lock for an unknown group '%s'", unknown);
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *a = &srv[g], *b = &m->lock[g];
        if (a->exists != b->exists)
            mfail(m, "group %s: %s on the server, %s in the model (%d events)", GROUP[g],
                  a->exists ? "a lock" : "no lock", b->exists ? "a lock" : "no lock", live_count(m, g));
        if (!a->exists) continue;
        char t1[32], t2[32];
        if (a->avail != b->avail || strcmp(a->token, b->token) != 0 || a->priority != b->priority ||
            a->paused != b->paused)
            mfail(m, "group %s: the lock is {available_at %s, token %s, priority %d%s}, the model's {%s, %s, %d%s}",
                  GROUP[g], shown(a->avail, t1, sizeof t1), a->token[0] ? a->token : "null",
                  a->paused ? -1 - a->priority : a->priority, a->paused ? " (paused)" : "",
                  shown(b->avail, t2, sizeof t2), b->token[0] ? b->token : "null",
                  b->paused ? -1 - b->priority : b->priority, b->paused ? " (paused)" : "");
        if (a->paused_at != b->paused_at)
            mfail(m, "group %s: the lock's paused_at is %s, the model's %s (0: absent)", GROUP[g],
                  shown(a->paused_at, t1, sizeof t1), shown(b->paused_at, t2, sizeof t2));
        if (a->attempts != b->attempts || a->head != b->head)
            mfail(m, "group %s: the lock's {attempts %d, head %lld}, the model's {%d, %lld} (head 0: absent)", GROUP[g],
                  a->attempts, (long long)a->head, b->attempts, (long long)b->head);
        if (a->leased_at != b->leased_at)
            mfail(m, "group %s: the lock's leased_at is %s, the model's %s (0: absent)", GROUP[g],
                  shown(a->leased_at, t1, sizeof t1), shown(b->leased_at, t2, sizeof t2));
    }
}

/* An integer at a dotted path of the stats, or -1 with *bad set. */
static long long json_int_at(json_t *root, const char *path, int *bad) {
    json_t *j = root;
    char buf[64];
    snprintf(buf, sizeof buf, "%.60s", path);
    char *save = NULL;
    for (char *part = strtok_r(buf, ".", &save); part != NULL; part = strtok_r(NULL, ".", &save))
        j = json_object_get(j, part);
    if (!json_is_integer(j)) {
        *bad = 1;
        return -1;
    }
    return (long long)json_integer_value(j);
}

/* mq_stats_json agrees with the model. The first difference is written to msg. */
static void compare_stats(model *m, json_t *root, char *msg, size_t size) {
    double now = now_of(m);
    long long want_groups[5] = {0}, want_msgs[5] = {0};
    long long total = 0, ready = 0, leased = 0, parked = 0, paused = 0, messages = 0;
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *l = &m->lock[g];
        if (!l->exists) continue;
        total++;
        want_groups[l->priority]++; /* a paused group under its priority p */
        if (l->paused)
            paused++; /* whatever its available_at and token */
        else if (l->avail <= now)
            ready++;
        else if (l->token[0])
            leased++;
        else
            parked++;
    }
    const mev *oldest = NULL;
    for (int i = 0; i < m->nev; i++) {
        if (m->ev[i].state != EV_LIVE) continue;
        if (oldest == NULL) oldest = &m->ev[i];
        messages++;
        want_msgs[m->ev[i].priority]++;
    }
    struct {
        char path[40];
        long long want;
    } ints[20] = {{"messages", messages},
                  {"dead", dead_count_model(m)},
                  {"published", (long long)seq_published(m)}, /* the seq counters */
                  {"groups.total", total},
                  {"groups.ready", ready},
                  {"groups.leased", leased},
                  {"groups.parked", parked},
                  {"groups.paused", paused}};
    int n = 8;
    for (int p = 0; p < 5; p++) {
        snprintf(ints[n].path, sizeof ints[n].path, "priorities.%d.groups", p);
        ints[n++].want = want_groups[p];
        snprintf(ints[n].path, sizeof ints[n].path, "priorities.%d.messages", p);
        ints[n++].want = want_msgs[p];
    }
    for (int i = 0; i < n; i++) {
        int bad = 0;
        long long got = json_int_at(root, ints[i].path, &bad);
        if (bad || got != ints[i].want) {
            snprintf(msg, size, "%.39s is %lld, the model says %lld", ints[i].path, got, ints[i].want);
            return;
        }
    }
    json_t *jnow = json_object_get(root, "now");
    if (!json_is_real(jnow) || fabs(json_real_value(jnow) - now) > 1e-6) {
        snprintf(msg, size, "now is not the queue clock (+%.3f)", now - MODEL_T0);
        return;
    }
    json_t *age = json_object_get(root, "oldest_message_age_s");
    if (oldest == NULL ? !json_is_null(age)
                       : !json_is_real(age) || fabs(json_real_value(age) - (now - oldest->published_at)) > 1e-6)
        snprintf(msg, size, "oldest_message_age_s should be %s%.3f", oldest ? "" : "null, not ",
                 oldest ? now - oldest->published_at : 0.0);
}

static void check_stats(model *m) {
    mq_error err;
    char *text = NULL;
    mq_status st = mq_stats_json(m->q[m->h], &text, &err);
    if (st != MQ_OK) mfail(m, "mq_stats_json returned %s: %s", mq_status_name(st), err.message);
    char msg[200] = "";
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL) {
        snprintf(msg, sizeof msg, "not JSON (%s)", jerr.text);
    } else {
        compare_stats(m, root, msg, sizeof msg);
        json_decref(root);
    }
    if (msg[0] != '\0') {
        char copy[1200];
        snprintf(copy, sizeof copy, "%s", text);
        mq_free(text);
        mfail(m, "mq_stats_json: %s: %s", msg, copy);
    }
    mq_free(text);
}

void check_all(model *m) {
    for (int h = 0; h < 2; h++)
        if (mq_queue_now(m->q[h]) != now_of(m))
            mfail(m, "mq_queue_now of handle %d is +%.3f, the fake clock +%.3f", h, mq_queue_now(m->q[h]) - MODEL_T0,
                  now_of(m) - MODEL_T0);
    check_repair_counts(m);
    check_messages(m);
    check_dedup(m);
    check_dead(m);
    check_locks(m);
    check_stats(m);
}
