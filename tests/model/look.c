/* The model test's calls that look without claiming (tests/test_model.c), each
 * compared with the model: mq_peek_json (one group or all) and mq_dead_list_json
 * element by element; mq_dead_list_with walked page by page (offset, total, every
 * letter); mq_groups_json walked page by page with a random limit, sort and filters
 * (states, id prefix, attempts, lease age, park length), every row against the model's
 * lock and events, every group the filters match listed exactly once, in the sort's
 * order. */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void base64_of(const unsigned char *in, size_t len, char *out) {
    static const char *const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v =
            (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < len ? in[i + 2] : 0);
        out[o++] = abc[(v >> 18) & 63];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? abc[v & 63] : '=';
    }
    out[o] = '\0';
}

/* One element of mq_peek_json / mq_dead_list_json against the model's event; the
 * first difference goes to msg. */
static void compare_listed(const mev *e, json_t *el, int dead, char *msg, size_t size) {
    json_t *v;
    if (!json_is_object(el)) {
        snprintf(msg, size, "an element is not an object");
        return;
    }
    v = json_object_get(el, "seq");
    if (!json_is_integer(v) || json_integer_value(v) != e->seq) {
        snprintf(msg, size, "seq %lld expected", (long long)e->seq);
        return;
    }
    v = json_object_get(el, "group");
    if (!json_is_string(v) || strcmp(json_string_value(v), GROUP[e->group]) != 0) {
        snprintf(msg, size, "seq %lld: group %s expected", (long long)e->seq, GROUP[e->group]);
        return;
    }
    v = json_object_get(el, "priority");
    if (!json_is_integer(v) || json_integer_value(v) != e->priority) {
        snprintf(msg, size, "seq %lld: priority %d expected", (long long)e->seq, e->priority);
        return;
    }
    v = json_object_get(el, "published_at");
    if (!json_is_number(v) || fabs(json_number_value(v) - e->published_at) > 1e-6) {
        snprintf(msg, size, "seq %lld: published_at +%.3f expected", (long long)e->seq, e->published_at - MODEL_T0);
        return;
    }
    v = json_object_get(el, "event");
    int text = e->len == 0 || e->bytes[0] != 0; /* the test's binary events start with a NUL */
    if (text) {
        if (!json_is_string(v) || json_string_length(v) != e->len ||
            memcmp(json_string_value(v), e->bytes, e->len) != 0) {
            snprintf(msg, size, "seq %lld: the event should be the text '%.*s'", (long long)e->seq, (int)e->len,
                     (const char *)e->bytes);
            return;
        }
    } else {
        char b64[32];
        base64_of(e->bytes, e->len, b64);
        json_t *b = json_object_get(v, "base64");
        if (!json_is_string(b) || strcmp(json_string_value(b), b64) != 0) {
            snprintf(msg, size, "seq %lld: the event should be {\"base64\": \"%s\"}", (long long)e->seq, b64);
            return;
        }
    }
    if (dead) {
        v = json_object_get(el, "attempts");
        if (!json_is_integer(v) || json_integer_value(v) != e->lo) {
            snprintf(msg, size, "dead letter %lld: attempts %d expected", (long long)e->seq, e->lo);
            return;
        }
        v = json_object_get(el, "dead_at");
        if (!json_is_number(v) || fabs(json_number_value(v) - e->dead_at) > 1e-6) {
            snprintf(msg, size, "dead letter %lld: dead_at +%.3f expected", (long long)e->seq, e->dead_at - MODEL_T0);
            return;
        }
    } else {
        v = json_object_get(el, "not_before");
        if (e->not_before > 0 ? !json_is_number(v) || fabs(json_number_value(v) - e->not_before) > 1e-6 : v != NULL) {
            snprintf(msg, size, "seq %lld: not_before should be %s", (long long)e->seq,
                     e->not_before > 0 ? "the scheduled time" : "absent");
            return;
        }
    }
}

/* Frees text and fails with msg and (the start of) the text, when msg says something. */
static void fail_on(model *m, const char *call, const char *msg, char *text) {
    if (msg[0] == '\0') return;
    char copy[900];
    snprintf(copy, sizeof copy, "%s", text != NULL ? text : "(no text)");
    mq_free(text);
    mfail(m, "%s: %s: %s", call, msg, copy);
}

/* mq_peek_json of one group or of the whole queue, or mq_dead_list_json: the model's
 * events (live, or dead), oldest seq first, up to max_events. */
void op_peek(model *m) {
    int dead = below(m, 3) == 0;
    int g = dead || below(m, 3) == 0 ? -1 : below(m, m->ngroups);
    size_t max_events = (size_t)(1 + below(m, 6));
    mq_error err;
    char *text = NULL;
    mq_status st;
    if (dead) {
        begin_op(m, "dead_list_json max %zu", max_events);
        st = mq_dead_list_json(m->q[m->h], max_events, &text, &err);
    } else {
        begin_op(m, "peek_json %s max %zu", g >= 0 ? GROUP[g] : "(all)", max_events);
        st = mq_peek_json(m->q[m->h], g >= 0 ? GROUP[g] : NULL, max_events, &text, &err);
    }
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, dead ? "mq_dead_list_json" : "mq_peek_json", st, MQ_OK, &err);
    const mev *want[MAX_EV];
    size_t n = 0;
    for (int i = 0; i < m->nev && n < max_events; i++) {
        const mev *e = &m->ev[i];
        if (dead ? e->state == EV_DEAD : e->state == EV_LIVE && (g < 0 || e->group == g)) want[n++] = e;
    }
    char msg[300] = "";
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL || !json_is_array(root)) {
        snprintf(msg, sizeof msg, "not a JSON array");
    } else if (json_array_size(root) != n) {
        snprintf(msg, sizeof msg, "%zu elements, the model has %zu", json_array_size(root), n);
    } else {
        for (size_t i = 0; i < n && msg[0] == '\0'; i++)
            compare_listed(want[i], json_array_get(root, i), dead, msg, sizeof msg);
    }
    json_decref(root);
    fail_on(m, dead ? "mq_dead_list_json" : "mq_peek_json", msg, text);
    mq_free(text);
    cover.listed += (long)n;
    say(m, " %zu events", n);
    end_op(m);
}

/* mq_dead_list_with, every page from a random offset with a random limit (0: 50),
 * and the empty page past the end: {"letters": the model's dead letters from offset,
 * oldest seq first, "offset", "total"}. */
void op_dead_pages(model *m) {
    const mev *dead[MAX_EV];
    size_t ndead = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_DEAD) dead[ndead++] = &m->ev[i];
    mq_dead_list_opts o;
    if (mq_dead_list_opts_init(&o, MQ_DEAD_LIST_OPTS_VERSION) != MQ_OK) mfail(m, "mq_dead_list_opts_init failed");
    o.limit = below(m, 6) == 0 ? 0 : (size_t)(1 + below(m, 3));
    o.offset = below(m, 3) == 0 ? (size_t)below(m, 4) : 0;
    const size_t limit = o.limit == 0 ? 50 : o.limit;
    begin_op(m, "dead_list_with limit %zu from offset %zu (%zu dead letters):", o.limit, o.offset, ndead);
    for (int pages = 0;; pages++) {
        mq_error err;
        char *text = NULL;
        mq_status st = mq_dead_list_with(m->q[m->h], &o, &text, &err);
        if (st != MQ_OK)
            mfail(m, "mq_dead_list_with (offset %zu) returned %s: %s", o.offset, mq_status_name(st), err.message);
        size_t want = o.offset < ndead ? ndead - o.offset : 0;
        if (want > limit) want = limit;
        char msg[300] = "";
        json_error_t jerr;
        json_t *root = json_loads(text, 0, &jerr);
        json_t *letters = json_object_get(root, "letters");
        json_t *total = json_object_get(root, "total"), *offset = json_object_get(root, "offset");
        if (root == NULL || !json_is_array(letters)) {
            snprintf(msg, sizeof msg, "not an object with an array \"letters\"");
        } else if (!json_is_integer(total) || json_integer_value(total) != (json_int_t)ndead) {
            snprintf(msg, sizeof msg, "total should be %zu, the model's dead letters", ndead);
        } else if (!json_is_integer(offset) || json_integer_value(offset) != (json_int_t)o.offset) {
            snprintf(msg, sizeof msg, "offset should be %zu, the one asked for", o.offset);
        } else if (json_array_size(letters) != want) {
            snprintf(msg, sizeof msg, "offset %zu limit %zu: %zu letters, the model has %zu", o.offset, limit,
                     json_array_size(letters), want);
        } else {
            for (size_t i = 0; i < want && msg[0] == '\0'; i++)
                compare_listed(dead[o.offset + i], json_array_get(letters, i), 1, msg, sizeof msg);
        }
        json_decref(root);
        fail_on(m, "mq_dead_list_with", msg, text);
        mq_free(text);
        say(m, " [%zu: %zu]", o.offset, want);
        cover.dead_pages++;
        cover.dead_rows += (long)want;
        if (o.offset >= ndead) break; /* the empty page past the end was asked for too */
        if (pages > MAX_EV) mfail(m, "mq_dead_list_with: more pages than letters");
        o.offset += limit;
    }
    end_op(m);
}

/* ---- mq_groups_json ---- */

static const char *state_of(model *m, const mlock *l) {
    if (l->paused) return "paused";
    if (l->avail <= now_of(m)) return "ready";
    return l->token[0] ? "leased" : "parked";
}

static unsigned state_bit(model *m, const mlock *l) {
    if (l->paused) return MQ_GROUP_PAUSED;
    if (l->avail <= now_of(m)) return MQ_GROUP_READY;
    return l->token[0] ? MQ_GROUP_LEASED : MQ_GROUP_PARKED;
}

static int held(model *m, const mlock *l) { return l->token[0] && l->avail > now_of(m); }

/* Whether group g is in a listing with these filters (include/mongomq.h,
 * mq_groups_opts; docs/design.md, "Listing groups"). */
static int listed(model *m, int g, const mq_groups_opts *o) {
    const mlock *l = &m->lock[g];
    double now = now_of(m);
    if (!l->exists) return 0;
    if (o->id_prefix != NULL && strncmp(GROUP[g], o->id_prefix, strlen(o->id_prefix)) != 0) return 0;
    if (o->states != 0 && !(o->states & state_bit(m, l))) return 0;
    if (o->min_attempts > 0 && l->attempts < o->min_attempts) return 0;
    if (o->held_longer_than_s > 0 && !(held(m, l) && l->leased_at <= now - o->held_longer_than_s)) return 0;
    if (o->parked_beyond_s > 0 && !(l->avail > now + o->parked_beyond_s)) return 0;
    return 1;
}

/* A real (or null) field against the model's value (known: not null). */
static int real_is(json_t *v, int known, double want) {
    if (!known) return json_is_null(v);
    return json_is_number(v) && fabs(json_number_value(v) - want) <= 1e-6;
}

/* One row of mq_groups_json against the model's group g: the first difference goes
 * to msg. */
static void compare_group_row(model *m, int g, json_t *r, char *msg, size_t size) {
    const mlock *l = &m->lock[g];
    const mev *h = head_of(m, g);
    double now = now_of(m);
    const char *want_state = state_of(m, l);
    json_t *v = json_object_get(r, "state");
    if (!json_is_string(v) || strcmp(json_string_value(v), want_state) != 0) {
        snprintf(msg, size, "%s: state should be %s", GROUP[g], want_state);
        return;
    }
    if (!json_is_boolean(json_object_get(r, "paused")) || json_is_true(json_object_get(r, "paused")) != l->paused) {
        snprintf(msg, size, "%s: paused should be %s", GROUP[g], l->paused ? "true" : "false");
        return;
    }
    v = json_object_get(r, "priority");
    if (!json_is_integer(v) || json_integer_value(v) != l->priority) {
        snprintf(msg, size, "%s: priority should be %d (the lock's, paused or not)", GROUP[g], l->priority);
        return;
    }
    v = json_object_get(r, "attempts");
    if (!json_is_integer(v) || json_integer_value(v) != l->attempts) {
        snprintf(msg, size, "%s: attempts should be %d (the lock's count of its head %lld)", GROUP[g], l->attempts,
                 (long long)l->head);
        return;
    }
    if (!real_is(json_object_get(r, "available_at"), 1, l->avail)) {
        snprintf(msg, size, "%s: available_at should be %.3f", GROUP[g], l->avail == 0 ? 0 : l->avail - MODEL_T0);
        return;
    }
    char holder[256];
    holder_of_token(l->token, holder, sizeof holder);
    v = json_object_get(r, "holder");
    if (l->token[0] ? !json_is_string(v) || strcmp(json_string_value(v), holder) != 0 : !json_is_null(v)) {
        snprintf(msg, size, "%s: holder should be %s", GROUP[g], l->token[0] ? holder : "null");
        return;
    }
    int is_held = held(m, l);
    if (!real_is(json_object_get(r, "held_for_s"), is_held, now - l->leased_at)) {
        snprintf(msg, size, "%s: held_for_s should be %s%.3f", GROUP[g], is_held ? "" : "null, not ",
                 is_held ? now - l->leased_at : 0.0);
        return;
    }
    if (!real_is(json_object_get(r, "lease_deadline"), is_held, l->avail)) {
        snprintf(msg, size, "%s: lease_deadline should be %s", GROUP[g], is_held ? "available_at" : "null");
        return;
    }
    v = json_object_get(r, "backlog");
    if (!json_is_integer(v) || json_integer_value(v) != live_count(m, g)) {
        snprintf(msg, size, "%s: backlog should be %d", GROUP[g], live_count(m, g));
        return;
    }
    v = json_object_get(r, "head");
    if (h != NULL ? !json_is_integer(v) || json_integer_value(v) != h->seq : !json_is_null(v)) {
        snprintf(msg, size, "%s: head should be %lld", GROUP[g], h != NULL ? (long long)h->seq : 0LL);
        return;
    }
    if (!real_is(json_object_get(r, "head_age_s"), h != NULL, h != NULL ? now - h->published_at : 0)) {
        snprintf(msg, size, "%s: head_age_s should be %s%.3f", GROUP[g], h ? "" : "null, not ",
                 h ? now - h->published_at : 0.0);
        return;
    }
}

/* Random options: a limit of 1..3 (0: 50, sometimes), either sort, a state filter
 * every other time, and now and then one of the other filters. */
static void random_groups_opts(model *m, mq_groups_opts *o, char *prefix, size_t size) {
    if (mq_groups_opts_init(o, MQ_GROUPS_OPTS_VERSION) != MQ_OK) mfail(m, "mq_groups_opts_init failed");
    o->sort = below(m, 2) ? MQ_GROUPS_SORT_DUE : MQ_GROUPS_SORT_ID;
    o->limit = below(m, 8) == 0 ? 0 : (size_t)(1 + below(m, 3));
    if (below(m, 2)) o->states = 1u + (unsigned)below(m, 15);
    static const double held_for[] = {0.5, 1.5, 3}, parked_for[] = {0.5, 2, 5};
    switch (below(m, 14)) {
        case 0:
            snprintf(prefix, size, "%s", GROUP[below(m, m->ngroups)]);
            o->id_prefix = prefix;
            break;
        case 1:
            snprintf(prefix, size, "%s", below(m, 2) ? "g" : "x");
            o->id_prefix = prefix;
            break;
        case 2:
            o->min_attempts = 1 + below(m, 3);
            break;
        case 3:
            o->held_longer_than_s = held_for[below(m, 3)];
            break;
        case 4:
            o->parked_beyond_s = parked_for[below(m, 3)];
            break;
        default:
            break;
    }
}

/* mq_groups_json walked to its last page: every row is the model's (group, state,
 * priority, attempts, holder, backlog, head, ...), the rows come in the sort's order,
 * each group the filters match exactly once, pages before the last are full. */
void op_groups(model *m) {
    mq_groups_opts o;
    char prefix[16];
    random_groups_opts(m, &o, prefix, sizeof prefix);
    const size_t limit = o.limit == 0 ? 50 : o.limit;
    begin_op(m, "groups_json by %s limit %zu states %u", o.sort == MQ_GROUPS_SORT_DUE ? "due" : "id", o.limit,
             o.states);
    if (o.id_prefix) say(m, " prefix '%s'", o.id_prefix);
    if (o.min_attempts) say(m, " min_attempts %d", o.min_attempts);
    if (o.held_longer_than_s > 0) say(m, " held_longer_than %g", o.held_longer_than_s);
    if (o.parked_beyond_s > 0) say(m, " parked_beyond %g", o.parked_beyond_s);
    say(m, ":");
    char after[128] = "";
    unsigned seen = 0;
    double last_due = -INFINITY;
    int last_g = -1;
    for (int pages = 0;; pages++) {
        o.after = after[0] ? after : NULL;
        mq_error err;
        char *text = NULL;
        mq_status st = mq_groups_json(m->q[m->h], &o, &text, &err);
        if (st != MQ_OK)
            mfail(m, "mq_groups_json (after '%s') returned %s: %s", after, mq_status_name(st), err.message);
        char msg[300] = "";
        json_error_t jerr;
        json_t *root = json_loads(text, 0, &jerr);
        json_t *rows = json_object_get(root, "groups"), *next = json_object_get(root, "next");
        if (root == NULL || !json_is_array(rows)) {
            snprintf(msg, sizeof msg, "not an object with an array \"groups\"");
        } else if (!real_is(json_object_get(root, "now"), 1, now_of(m))) {
            snprintf(msg, sizeof msg, "now is not the queue clock (+%.3f)", now_of(m) - MODEL_T0);
        } else if (json_array_size(rows) > limit) {
            snprintf(msg, sizeof msg, "%zu rows, more than the limit %zu", json_array_size(rows), limit);
        } else if (!json_is_null(next) && (!json_is_string(next) || json_array_size(rows) != limit)) {
            snprintf(msg, sizeof msg, "a page before the last (next not null) should hold %zu rows and a text next",
                     limit);
        }
        say(m, " [");
        for (size_t i = 0; msg[0] == '\0' && i < json_array_size(rows); i++) {
            json_t *r = json_array_get(rows, i);
            json_t *id = json_object_get(r, "group");
            int g = json_is_string(id) ? group_index(json_string_value(id)) : -1;
            say(m, i ? " %s" : "%s", g >= 0 ? GROUP[g] : "?");
            if (g < 0) {
                snprintf(msg, sizeof msg, "row %zu is no group of the model's", i);
            } else if (seen & (1u << g)) {
                snprintf(msg, sizeof msg, "%s is listed twice", GROUP[g]);
            } else if (!listed(m, g, &o)) {
                snprintf(msg, sizeof msg, "%s is listed, but the model's %s does not match the filters", GROUP[g],
                         m->lock[g].exists ? "lock" : "group has no lock and");
            } else if (o.sort == MQ_GROUPS_SORT_ID && last_g >= 0 && strcmp(GROUP[last_g], GROUP[g]) > 0) {
                snprintf(msg, sizeof msg, "%s after %s in the sort by id", GROUP[g], GROUP[last_g]);
            } else if (o.sort == MQ_GROUPS_SORT_DUE && m->lock[g].avail < last_due) {
                snprintf(msg, sizeof msg, "%s (available_at %.3f) after one due at %.3f in the sort by due", GROUP[g],
                         m->lock[g].avail == 0 ? 0 : m->lock[g].avail - MODEL_T0,
                         last_due == 0 ? 0 : last_due - MODEL_T0);
            } else {
                if (i == 0 && pages > 0 && o.sort == MQ_GROUPS_SORT_DUE && m->lock[g].avail == last_due)
                    cover.group_tie_pages++; /* the due cursor's skip at work */
                compare_group_row(m, g, r, msg, sizeof msg);
                seen |= 1u << g;
                last_g = g;
                last_due = m->lock[g].avail;
                cover.group_rows++;
            }
        }
        say(m, "]");
        int last = json_is_null(next);
        if (msg[0] == '\0' && !last) snprintf(after, sizeof after, "%s", json_string_value(next));
        json_decref(root);
        fail_on(m, "mq_groups_json", msg, text);
        mq_free(text);
        cover.group_pages++;
        if (last) break;
        if (pages > NGROUPS) mfail(m, "mq_groups_json: more pages than groups (next '%s')", after);
    }
    for (int g = 0; g < NGROUPS; g++)
        if (listed(m, g, &o) && !(seen & (1u << g)))
            mfail(m, "mq_groups_json: %s (%s, priority %d, attempts %d) matches the filters and is on no page",
                  GROUP[g], state_of(m, &m->lock[g]), m->lock[g].priority, m->lock[g].attempts);
    cover.group_walks++;
    end_op(m);
}
