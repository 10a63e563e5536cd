/* mongomq web: the history behind the overview's charts. A thread samples each
 * queue's stats into {prefix}_web_history of the queue's database, a capped
 * collection, at most once per interval whoever is looking: a sample's _id is the
 * interval's number (queue clock / interval), so a second dashboard's insert of the
 * same interval fails with a duplicate key and it skips it (it first looks, to spare
 * the stats read). Where the server refuses capped collections the collection is a
 * plain one, trimmed to the same number of samples at each insert.
 * GET /api/history reads it back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "web.h"

static pthread_t sampler;
static int running;
static pthread_mutex_t stop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_cv = PTHREAD_COND_INITIALIZER;
static int stopping;
static int *modes; /* per queue: 1 capped, 0 plain (trimmed by us), -1 not made yet */

static void coll_name(const web_queue *q, char *out, size_t size) { snprintf(out, size, "%s_web_history", q->prefix); }

/* Creates the capped collection (NamespaceExists is fine); 1 capped, 0 plain, -1 error. */
static int ensure(web_app *app, mongoc_client_t *c, web_queue *q) {
    char name[300];
    coll_name(q, name, sizeof name);
    mongoc_database_t *db = mongoc_client_get_database(c, q->db);
    bson_t *cmd = BCON_NEW("create", BCON_UTF8(name), "capped", BCON_BOOL(true), "size",
                           BCON_INT64((int64_t)app->history_keep * 1024), "max", BCON_INT64(app->history_keep));
    bson_error_t error;
    bson_t reply;
    bool ok = mongoc_database_command_simple(db, cmd, NULL, &reply, &error);
    bson_destroy(cmd);
    int capped = 1;
    if (!ok && error.code == 48) { /* exists: capped or not, as it was made */
        bson_iter_t it;
        bson_t *filter = BCON_NEW("name", BCON_UTF8(name));
        bson_t *opts = BCON_NEW("filter", BCON_DOCUMENT(filter));
        mongoc_cursor_t *cur = mongoc_database_find_collections_with_opts(db, opts);
        const bson_t *doc;
        capped = 0;
        while (mongoc_cursor_next(cur, &doc))
            if (bson_iter_init_find(&it, doc, "options") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
                bson_iter_t sub;
                if (bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "capped")) capped = bson_iter_as_bool(&sub);
            }
        mongoc_cursor_destroy(cur);
        bson_destroy(opts);
        bson_destroy(filter);
        ok = true;
    } else if (!ok && error.domain == MONGOC_ERROR_SERVER) {
        /* The server has no capped collections: a plain one, trimmed by us. */
        fprintf(stderr, "mongomq web: %s.%s: no capped collection (%s); trimming it to %ld samples instead\n", q->db,
                name, error.message, app->history_keep);
        capped = 0;
        ok = true;
    }
    bson_destroy(&reply);
    mongoc_database_destroy(db);
    if (!ok) {
        web_redact(app, error.message);
        fprintf(stderr, "mongomq web: history of %s: %s\n", q->name, error.message);
        return -1;
    }
    return capped;
}

static double jnum(json_t *o, const char *a, const char *b) {
    json_t *v = json_object_get(o, a);
    if (b != NULL) v = json_object_get(v, b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void append_num(bson_t *doc, const char *key, double v) {
    if (isnan(v))
        BSON_APPEND_NULL(doc, key);
    else
        BSON_APPEND_DOUBLE(doc, key, v);
}

/* One sample of one queue for interval `slot`, unless some dashboard took it. */
static void sample(web_app *app, mongoc_client_t *c, web_queue *q, int64_t slot, int capped) {
    char name[300];
    coll_name(q, name, sizeof name);
    mongoc_collection_t *coll = mongoc_client_get_collection(c, q->db, name);
    bson_t *filter = BCON_NEW("_id", BCON_INT64(slot));
    bson_error_t error;
    int64_t have = mongoc_collection_count_documents(coll, filter, NULL, NULL, NULL, &error);
    bson_destroy(filter);
    if (have != 0) { /* another instance wrote it (or the server is away: next time) */
        mongoc_collection_destroy(coll);
        return;
    }
    json_t *st = web_stats(app, q, app->history_s / 2, NULL, 0);
    if (st == NULL) {
        mongoc_collection_destroy(coll);
        return;
    }
    bson_t doc = BSON_INITIALIZER;
    BSON_APPEND_INT64(&doc, "_id", slot);
    append_num(&doc, "t", jnum(st, "now", NULL));
    append_num(&doc, "interval", app->history_s);
    append_num(&doc, "messages", jnum(st, "messages", NULL));
    append_num(&doc, "dead", jnum(st, "dead", NULL));
    append_num(&doc, "published", jnum(st, "published", NULL));
    append_num(&doc, "oldest_age_s", jnum(st, "oldest_message_age_s", NULL));
    static const char *states[] = {"ready", "leased", "parked", "paused"};
    for (int i = 0; i < 4; i++) append_num(&doc, states[i], jnum(st, "groups", states[i]));
    json_decref(st);
    if (!mongoc_collection_insert_one(coll, &doc, NULL, NULL, &error) && error.code != 11000) {
        web_redact(app, error.message);
        fprintf(stderr, "mongomq web: history sample of %s: %s\n", q->name, error.message);
    } else if (!capped) {
        bson_t *old = BCON_NEW("_id", "{", "$lte", BCON_INT64(slot - app->history_keep), "}");
        mongoc_collection_delete_many(coll, old, NULL, NULL, NULL);
        bson_destroy(old);
    }
    bson_destroy(&doc);
    mongoc_collection_destroy(coll);
}

static void *run(void *arg) {
    web_app *app = arg;
    int64_t *last = calloc(app->nqueues, sizeof *last);
    int *mode = modes;
    for (;;) {
        mongoc_client_t *c = mongoc_client_pool_pop(app->pool);
        for (size_t i = 0; i < app->nqueues; i++) {
            web_queue *q = &app->queues[i];
            if (mode[i] < 0) mode[i] = ensure(app, c, q);
            if (mode[i] < 0) continue; /* the server is away: again next round */
            int64_t slot = (int64_t)floor(mq_queue_now(q->queue) / app->history_s);
            if (slot == last[i]) continue;
            sample(app, c, q, slot, mode[i]);
            last[i] = slot;
        }
        mongoc_client_pool_push(app->pool, c);
        /* Wake a few times an interval (at most every second) to catch the next one. */
        double wait = app->history_s / 4 < 1 ? app->history_s / 4 : 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long ns = until.tv_nsec + (long)(wait * 1e9);
        until.tv_sec += ns / 1000000000L;
        until.tv_nsec = ns % 1000000000L;
        pthread_mutex_lock(&stop_mu);
        if (!stopping) pthread_cond_timedwait(&stop_cv, &stop_mu, &until);
        int done = stopping;
        pthread_mutex_unlock(&stop_mu);
        if (done) break;
    }
    free(last);
    return NULL;
}

int web_history_start(web_app *app) {
    if (app->history_s <= 0) return EXIT_OK; /* --history-interval 0: no sampling */
    mongoc_client_t *c = mongoc_client_pool_pop(app->pool);
    app->history_capped = 1;
    modes = calloc(app->nqueues ? app->nqueues : 1, sizeof *modes);
    if (modes == NULL) return EXIT_FAIL;
    for (size_t i = 0; i < app->nqueues; i++)
        if ((modes[i] = ensure(app, c, &app->queues[i])) == 0) app->history_capped = 0;
    mongoc_client_pool_push(app->pool, c);
    if (pthread_create(&sampler, NULL, run, app) != 0) {
        cli_error(app->ctx, "cannot start the history thread");
        return EXIT_FAIL;
    }
    running = 1;
    return EXIT_OK;
}

void web_history_stop(web_app *app) {
    (void)app;
    if (!running) return;
    pthread_mutex_lock(&stop_mu);
    stopping = 1;
    pthread_cond_signal(&stop_cv);
    pthread_mutex_unlock(&stop_mu);
    pthread_join(sampler, NULL);
    running = 0;
    free(modes);
    modes = NULL;
}

void web_history_get(web_app *app, web_queue *q, double range_s, web_resp *out) {
    char name[300];
    coll_name(q, name, sizeof name);
    double interval = app->history_s > 0 ? app->history_s : 10;
    int64_t from = (int64_t)floor((mq_queue_now(q->queue) - range_s) / interval);
    mongoc_client_t *c = mongoc_client_pool_pop(app->pool);
    mongoc_collection_t *coll = mongoc_client_get_collection(c, q->db, name);
    bson_t *filter = BCON_NEW("_id", "{", "$gte", BCON_INT64(from), "}");
    bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(10000));
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
    json_t *rows = json_array();
    const bson_t *doc;
    while (mongoc_cursor_next(cur, &doc)) {
        char *text = bson_as_relaxed_extended_json(doc, NULL);
        json_t *row = text != NULL ? json_loads(text, 0, NULL) : NULL;
        bson_free(text);
        if (row != NULL) json_array_append_new(rows, row);
    }
    bson_error_t error;
    int failed = mongoc_cursor_error(cur, &error);
    mongoc_cursor_destroy(cur);
    bson_destroy(opts);
    bson_destroy(filter);
    mongoc_collection_destroy(coll);
    mongoc_client_pool_push(app->pool, c);
    if (failed) {
        json_decref(rows);
        web_redact(app, error.message);
        web_resp_error(out, 503, "reading the history of %s: %s", q->name, error.message);
        return;
    }
    web_resp_json(out, 200,
                  json_pack("{s:o,s:f,s:I,s:b,s:s}", "samples", rows, "interval_s", interval, "keep",
                            (json_int_t)app->history_keep, "capped", app->history_capped, "collection", name));
}
