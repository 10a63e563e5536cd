/* mongomq web: the JSON API under /api/ that the pages use (cli/README.md lists it).
 * GETs read (stats through the cache, groups, a group, dead letters, workers); POSTs
 * act (purge, pause, resume a group; requeue, purge dead letters), each refused in
 * --read-only and without the CSRF token. Event bytes leave only as previews. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web.h"

#define PREVIEW_TEXT 512  /* bytes of a text event shown */
#define PREVIEW_HEX 256   /* bytes of a binary event shown, as hex */
#define WORKERS_MAX 10000 /* leased groups read for the workers page */

static int b64v(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* The event of a peek/dead row as a preview: {"text"|"hex", "size", "truncated"}. */
static void preview(json_t *row) {
    json_t *ev = json_object_get(row, "event");
    json_t *p = NULL;
    if (json_is_string(ev)) {
        const char *s = json_string_value(ev);
        size_t n = json_string_length(ev), cut = n > PREVIEW_TEXT ? PREVIEW_TEXT : n;
        while (cut < n && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--; /* a whole character */
        p = json_pack("{s:s%,s:I,s:b}", "text", s, cut, "size", (json_int_t)n, "truncated", cut < n);
    } else if (json_is_object(ev) && json_is_string(json_object_get(ev, "base64"))) {
        const char *s = json_string_value(json_object_get(ev, "base64"));
        size_t len = strlen(s), size = 0;
        char hex[PREVIEW_HEX * 2 + 1];
        size_t h = 0;
        unsigned acc = 0;
        int bits = 0;
        for (size_t i = 0; i < len; i++) {
            int v = b64v((unsigned char)s[i]);
            if (v < 0) continue;
            acc = (acc << 6) | (unsigned)v;
            bits += 6;
            if (bits >= 8) {
                bits -= 8;
                unsigned byte = (acc >> bits) & 0xFF;
                if (size < PREVIEW_HEX) h += (size_t)sprintf(hex + h, "%02x", byte);
                size++;
            }
        }
        hex[h] = '\0';
        p = json_pack("{s:s,s:I,s:b}", "hex", hex, "size", (json_int_t)size, "truncated", size > PREVIEW_HEX);
    } else {
        p = json_pack("{s:s,s:I,s:b}", "text", "", "size", (json_int_t)0, "truncated", 0);
    }
    json_object_set_new(row, "event", p);
}

static void preview_all(json_t *rows) {
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) preview(row);
}

static int fail(web_app *app, web_resp *out, const char *what, mq_status st, mq_error *err) {
    web_redact(app, err->message);
    int code = st == MQ_ERR_ARG ? 400 : st == MQ_ERR_CONNECT ? 503 : 500;
    web_resp_error(out, code, "%s: %s: %s", what, mq_status_name(st), err->message);
    return -1;
}

static json_t *loads_free(char *text) {
    json_t *j = json_loads(text, 0, NULL);
    mq_free(text);
    return j;
}

/* A non-negative number parameter; -1 with a 400 response when malformed. */
static int num_arg(web_req *r, const char *key, double max, double *out, web_resp *resp) {
    const char *v = web_arg(r, key);
    *out = 0;
    if (v == NULL || v[0] == '\0') return 0;
    if (cli_parse_double(v, 0, max, out) != 0) {
        web_resp_error(resp, 400, "%s=%.40s: not a number from 0 to %g", key, v, max);
        return -1;
    }
    return 0;
}

static void session(web_app *app, web_resp *out) {
    json_t *qs = json_array();
    for (size_t i = 0; i < app->nqueues; i++) json_array_append_new(qs, json_string(app->queues[i].name));
    web_resp_json(
        out, 200,
        json_pack("{s:s,s:b,s:o,s:s,s:f,s:I,s:b,s:b}", "csrf", app->csrf, "read_only", app->read_only, "queues", qs,
                  "version", mq_version(), "history_interval_s", app->history_s, "history_keep",
                  (json_int_t)app->history_keep, "history_capped", app->history_capped, "token", app->token != NULL));
}

static void overview(web_app *app, web_queue *q, web_resp *out) {
    char why[400];
    json_t *st = web_stats(app, q, app->cache_s, why, sizeof why);
    if (st == NULL) {
        web_resp_error(out, 503, "reading the stats of %s: %s", q->name, why);
        return;
    }
    web_resp_json(out, 200, st);
}

/* GET /api/groups: the filters are the page's GET parameters, passed through. */
static void groups(web_app *app, web_queue *q, web_req *r, web_resp *out) {
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    const char *state = web_arg(r, "state");
    if (state != NULL && state[0] != '\0') {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", state);
        for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
            if (strcmp(tok, "ready") == 0)
                o.states |= MQ_GROUP_READY;
            else if (strcmp(tok, "leased") == 0)
                o.states |= MQ_GROUP_LEASED;
            else if (strcmp(tok, "parked") == 0)
                o.states |= MQ_GROUP_PARKED;
            else if (strcmp(tok, "paused") == 0)
                o.states |= MQ_GROUP_PAUSED;
            else {
                web_resp_error(out, 400, "state=%.40s: ready, leased, parked or paused (comma-separated)", tok);
                return;
            }
        }
    }
    o.id_prefix = web_arg(r, "prefix");
    const char *stuck = web_arg(r, "stuck");
    if (stuck != NULL && stuck[0] != '\0' && strcmp(stuck, "0") != 0) o.min_attempts = 2;
    double v, limit;
    if (num_arg(r, "min_attempts", 1e9, &v, out) != 0) return;
    if (v > 0) o.min_attempts = (int)v;
    if (num_arg(r, "held", 1e9, &o.held_longer_than_s, out) != 0) return;
    if (num_arg(r, "parked", 1e9, &o.parked_beyond_s, out) != 0) return;
    if (num_arg(r, "limit", 1000, &limit, out) != 0) return;
    o.limit = (size_t)limit;
    const char *sort = web_arg(r, "sort");
    if (sort != NULL && strcmp(sort, "due") == 0)
        o.sort = MQ_GROUPS_SORT_DUE;
    else if (sort != NULL && sort[0] != '\0' && strcmp(sort, "id") != 0) {
        web_resp_error(out, 400, "sort=%.40s: id or due", sort);
        return;
    }
    o.after = web_arg(r, "after");
    char *text;
    mq_error err;
    mq_status st = mq_groups_json(q->queue, &o, &text, &err);
    if (st != MQ_OK) {
        fail(app, out, "listing the groups", st, &err);
        return;
    }
    web_resp_json(out, 200, loads_free(text));
}

/* The lock of one group, as a listing row; json null when it has none. */
static json_t *group_row(web_queue *q, const char *id, mq_status *st, mq_error *err) {
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    o.id_prefix = id;
    o.limit = 1; /* by id: the group itself sorts before every longer id it prefixes */
    char *text;
    *st = mq_groups_json(q->queue, &o, &text, err);
    if (*st != MQ_OK) return NULL;
    json_t *page = loads_free(text);
    json_t *row = json_array_get(json_object_get(page, "groups"), 0);
    json_t *out = json_null();
    if (row != NULL && strcmp(json_string_value(json_object_get(row, "group")), id) == 0) out = json_incref(row);
    json_decref(page);
    return out;
}

static void group(web_app *app, web_queue *q, web_req *r, web_resp *out) {
    const char *id = web_arg(r, "id");
    double n;
    if (id == NULL || id[0] == '\0') {
        web_resp_error(out, 400, "id: which group?");
        return;
    }
    if (num_arg(r, "n", 1000, &n, out) != 0) return;
    mq_status st;
    mq_error err;
    json_t *lock = group_row(q, id, &st, &err);
    if (lock == NULL) {
        fail(app, out, "reading the group's lock", st, &err);
        return;
    }
    char *text;
    st = mq_peek_json(q->queue, id, n > 0 ? (size_t)n : 20, &text, &err);
    if (st != MQ_OK) {
        json_decref(lock);
        fail(app, out, "peeking at the group", st, &err);
        return;
    }
    json_t *events = loads_free(text);
    preview_all(events);
    web_resp_json(out, 200, json_pack("{s:s,s:o,s:o}", "group", id, "lock", lock, "events", events));
}

static void dead(web_app *app, web_queue *q, web_req *r, web_resp *out) {
    mq_dead_list_opts o = MQ_DEAD_LIST_OPTS_INIT;
    double off, lim;
    if (num_arg(r, "offset", 1e12, &off, out) != 0 || num_arg(r, "limit", 1000, &lim, out) != 0) return;
    o.offset = (size_t)off;
    o.limit = (size_t)lim;
    char *text;
    mq_error err;
    mq_status st = mq_dead_list_with(q->queue, &o, &text, &err);
    if (st != MQ_OK) {
        fail(app, out, "listing the dead letters", st, &err);
        return;
    }
    json_t *page = loads_free(text);
    preview_all(json_object_get(page, "letters"));
    web_resp_json(out, 200, page);
}

/* Who holds what: the leased groups, by holder (the worker id in the token). */
static void workers(web_app *app, web_queue *q, web_resp *out) {
    json_t *by = json_object(); /* holder -> [rows] */
    char *after = NULL;
    size_t seen = 0;
    int truncated = 0;
    for (;;) {
        mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
        o.states = MQ_GROUP_LEASED;
        o.limit = 1000;
        o.after = after;
        char *text;
        mq_error err;
        mq_status st = mq_groups_json(q->queue, &o, &text, &err);
        free(after);
        after = NULL;
        if (st != MQ_OK) {
            json_decref(by);
            fail(app, out, "listing the leased groups", st, &err);
            return;
        }
        json_t *page = loads_free(text);
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(page, "groups"), i, row) {
            const char *h = json_string_value(json_object_get(row, "holder"));
            if (h == NULL) h = "";
            json_t *list = json_object_get(by, h);
            if (list == NULL) json_object_set_new(by, h, list = json_array());
            json_array_append_new(
                list,
                json_pack("{s:O,s:O,s:O,s:O,s:O}", "group", json_object_get(row, "group"), "held_for_s",
                          json_object_get(row, "held_for_s"), "lease_deadline", json_object_get(row, "lease_deadline"),
                          "attempts", json_object_get(row, "attempts"), "state", json_object_get(row, "state")));
            seen++;
        }
        const char *next = json_string_value(json_object_get(page, "next"));
        if (next != NULL) after = strdup(next);
        json_decref(page);
        if (after == NULL) break;
        if (seen >= WORKERS_MAX) {
            truncated = 1;
            free(after);
            break;
        }
    }
    json_t *list = json_array();
    const char *holder;
    json_t *rows;
    json_object_foreach(by, holder, rows) {
        json_array_append_new(list, json_pack("{s:s,s:I,s:O}", "holder", holder, "count",
                                              (json_int_t)json_array_size(rows), "groups", rows));
    }
    json_decref(by);
    web_resp_json(
        out, 200,
        json_pack("{s:o,s:I,s:b}", "workers", list, "leased_groups", (json_int_t)seen, "truncated", truncated));
}

/* POST actions. */
static void act(web_app *app, web_queue *q, const char *what, web_req *r, web_resp *out) {
    mq_error err;
    mq_status st = MQ_OK;
    const char *id = web_field(r, "id");
    int group_action =
        strcmp(what, "group/purge") == 0 || strcmp(what, "group/pause") == 0 || strcmp(what, "group/resume") == 0;
    if (group_action && (id == NULL || id[0] == '\0')) {
        web_resp_error(out, 400, "id: which group?");
        return;
    }
    if (strcmp(what, "group/purge") == 0) {
        st = mq_purge_group(q->queue, id, &err);
    } else if (strcmp(what, "group/pause") == 0) {
        st = mq_pause_group(q->queue, id, &err);
    } else if (strcmp(what, "group/resume") == 0) {
        st = mq_resume_group(q->queue, id, &err);
    } else if (strcmp(what, "dead/purge") == 0) {
        int64_t purged = 0;
        st = mq_dead_purge(q->queue, &purged, &err);
        web_stats_invalidate(q);
        if (st != MQ_OK) {
            fail(app, out, "purging the dead letters", st, &err);
            return;
        }
        web_resp_json(out, 200, json_pack("{s:I}", "purged", (json_int_t)purged));
        return;
    } else if (strcmp(what, "dead/requeue") == 0) {
        json_t *done = json_array();
        const char *all = web_field(r, "all");
        if (all != NULL && strcmp(all, "1") == 0) {
            /* Every letter there is now: pages of the oldest, each requeued to messages. */
            int64_t count = 0;
            st = mq_dead_count(q->queue, &count, &err);
            while (st == MQ_OK && (int64_t)json_array_size(done) < count) {
                char *text;
                st = mq_dead_list_json(q->queue, 1000, &text, &err);
                if (st != MQ_OK) break;
                json_t *rows = loads_free(text);
                size_t i, before = json_array_size(done);
                json_t *row;
                json_array_foreach(rows, i, row) {
                    int64_t seq = json_integer_value(json_object_get(row, "seq")), nseq = 0;
                    if ((int64_t)json_array_size(done) >= count) break;
                    st = mq_dead_requeue(q->queue, seq, &nseq, &err);
                    if (st == MQ_ERR_ARG) { /* another requeued it first */
                        st = MQ_OK;
                        continue;
                    }
                    if (st != MQ_OK) break;
                    json_array_append_new(done,
                                          json_pack("{s:I,s:I}", "seq", (json_int_t)seq, "new_seq", (json_int_t)nseq));
                }
                json_decref(rows);
                if (json_array_size(done) == before) break; /* nothing left */
            }
        } else {
            const char *seqs[1000];
            size_t n = web_fields(r, "seq", seqs, 1000);
            if (n == 0) {
                json_decref(done);
                web_resp_error(out, 400, "seq: which dead letters? (or all=1)");
                return;
            }
            for (size_t i = 0; i < n && st == MQ_OK; i++) {
                long seq;
                if (cli_parse_int(seqs[i], 1, 0x7fffffffffffffffL, &seq) != 0) {
                    json_decref(done);
                    web_resp_error(out, 400, "seq=%.40s: not a seq", seqs[i]);
                    return;
                }
                int64_t nseq = 0;
                st = mq_dead_requeue(q->queue, seq, &nseq, &err);
                if (st == MQ_OK)
                    json_array_append_new(done,
                                          json_pack("{s:I,s:I}", "seq", (json_int_t)seq, "new_seq", (json_int_t)nseq));
            }
        }
        web_stats_invalidate(q);
        if (st != MQ_OK) {
            json_decref(done);
            fail(app, out, "requeueing", st, &err);
            return;
        }
        web_resp_json(out, 200, json_pack("{s:o}", "requeued", done));
        return;
    } else {
        web_resp_error(out, 404, "no action /api/%.60s", what);
        return;
    }
    web_stats_invalidate(q);
    if (st != MQ_OK) {
        fail(app, out, what, st, &err);
        return;
    }
    web_resp_json(out, 200, json_pack("{s:b,s:s,s:s}", "ok", 1, "group", id, "done", what));
}

void web_api(web_app *app, const char *method, const char *path, web_req *r, web_resp *out) {
    if (strcmp(path, "session") == 0 && strcmp(method, "GET") == 0) {
        session(app, out);
        return;
    }
    const char *qname = strcmp(method, "POST") == 0 ? web_field(r, "q") : web_arg(r, "q");
    web_queue *q = web_find_queue(app, qname);
    if (q == NULL) {
        web_resp_error(out, 404, "no queue '%.200s' here", qname != NULL ? qname : "");
        return;
    }
    if (strcmp(method, "POST") == 0) {
        if (app->read_only) {
            web_resp_error(out, 403, "read-only: this dashboard was started with --read-only");
            return;
        }
        if (!web_csrf_ok(app, r)) {
            web_resp_error(out, 403, "missing or wrong CSRF token (X-CSRF-Token, from /api/session)");
            return;
        }
        act(app, q, path, r, out);
        return;
    }
    if (strcmp(path, "overview") == 0)
        overview(app, q, out);
    else if (strcmp(path, "history") == 0) {
        double range;
        if (num_arg(r, "range", 86400 * 30, &range, out) != 0) return;
        web_history_get(app, q, range > 0 ? range : 3600, out);
    } else if (strcmp(path, "groups") == 0)
        groups(app, q, r, out);
    else if (strcmp(path, "group") == 0)
        group(app, q, r, out);
    else if (strcmp(path, "dead") == 0)
        dead(app, q, r, out);
    else if (strcmp(path, "workers") == 0)
        workers(app, q, out);
    else
        web_resp_error(out, 404, "no API /api/%.60s (GET)", path);
}
