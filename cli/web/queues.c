/* mongomq web: the queues it serves. Opening the client and each queue (with bounded
 * server selection and socket timeouts), finding the queues of a database (a
 * {prefix}_locks / {prefix}_messages pair), and the stats cache that the metrics and
 * the overview share: one mq_stats_json per queue per interval, whoever asks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "web.h"

#define WEB_SOCKET_TIMEOUT_MS 10000

double web_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The URI with the command's bounded waits, as text (bson_free it); the password kept
 * aside for redaction. NULL with a message on a malformed URI. */
static char *bounded_uri(web_app *app, const char *text) {
    bson_error_t error;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(text, &error);
    if (uri == NULL) {
        cli_error(app->ctx, "bad --uri: %s", error.message);
        return NULL;
    }
    const char *pw = mongoc_uri_get_password(uri);
    if (pw != NULL) snprintf(app->password, sizeof app->password, "%s", pw);
    if (!mongoc_uri_has_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, CLI_DEFAULT_TIMEOUT_MS);
    if (!mongoc_uri_has_option(uri, MONGOC_URI_SOCKETTIMEOUTMS))
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, WEB_SOCKET_TIMEOUT_MS);
    if (!mongoc_uri_has_option(uri, MONGOC_URI_CONNECTTIMEOUTMS))
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS, CLI_DEFAULT_TIMEOUT_MS);
    char *out = bson_strdup(mongoc_uri_get_string(uri));
    mongoc_uri_destroy(uri);
    return out;
}

static int add_queue(web_app *app, const char *db, const char *prefix) {
    for (size_t i = 0; i < app->nqueues; i++)
        if (strcmp(app->queues[i].db, db) == 0 && strcmp(app->queues[i].prefix, prefix) == 0) return EXIT_OK;
    if (strlen(db) >= sizeof app->queues[0].db || strlen(prefix) >= sizeof app->queues[0].prefix) {
        cli_error(app->ctx, "queue name too long: %s.%s", db, prefix);
        return EXIT_USAGE;
    }
    web_queue *qs = realloc(app->queues, (app->nqueues + 1) * sizeof *qs);
    if (qs == NULL) return EXIT_FAIL;
    app->queues = qs;
    web_queue *q = &qs[app->nqueues];
    memset(q, 0, sizeof *q);
    snprintf(q->db, sizeof q->db, "%s", db);
    snprintf(q->prefix, sizeof q->prefix, "%s", prefix);
    snprintf(q->name, sizeof q->name, "%s.%s", db, prefix);
    pthread_mutex_init(&q->mu, NULL);
    mq_error err;
    mq_status st = cli_queue_open(app->ctx, app->client, db, prefix, &q->queue, &err);
    if (st != MQ_OK) {
        web_redact(app, err.message);
        char what[400];
        snprintf(what, sizeof what, "opening the queue %s", q->name);
        pthread_mutex_destroy(&q->mu);
        return cli_fail(app->ctx, what, st, &err);
    }
    app->nqueues++;
    return EXIT_OK;
}

static int by_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Every prefix P of db with both P_locks and P_messages, in name order. */
static int find_queues(web_app *app, const char *db, int *found) {
    *found = 0;
    mongoc_client_t *c = mongoc_client_pool_pop(app->pool);
    mongoc_database_t *d = mongoc_client_get_database(c, db);
    bson_error_t error;
    char **names = mongoc_database_get_collection_names_with_opts(d, NULL, &error);
    mongoc_database_destroy(d);
    mongoc_client_pool_push(app->pool, c);
    if (names == NULL) {
        web_redact(app, error.message);
        cli_error(app->ctx, "listing the collections of %s: %s", db, error.message);
        return error.domain == MONGOC_ERROR_SERVER_SELECTION ? EXIT_UNREACHABLE : EXIT_FAIL;
    }
    size_t n = 0;
    while (names[n] != NULL) n++;
    qsort(names, n, sizeof *names, by_name);
    int rc = EXIT_OK;
    for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
        size_t len = strlen(names[i]);
        if (len <= 6 || strcmp(names[i] + len - 6, "_locks") != 0) continue;
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(len - 6), names[i]);
        char messages[300];
        snprintf(messages, sizeof messages, "%s_messages", prefix);
        for (size_t j = 0; j < n; j++)
            if (strcmp(names[j], messages) == 0) {
                rc = add_queue(app, db, prefix);
                (*found)++;
                break;
            }
    }
    bson_strfreev(names);
    return rc;
}

int web_open_queues(web_app *app, const char *const *specs, size_t nspecs) {
    cli_ctx *ctx = app->ctx;
    int bad = cli_resolve_partitions(ctx);
    if (bad != EXIT_OK) return bad;
    char *text = bounded_uri(app, cli_resolve_env(ctx));
    if (text == NULL) return EXIT_USAGE;
    mq_error err;
    mq_status st = mq_client_new(text, &app->client, &err);
    if (st == MQ_OK) {
        mongoc_uri_t *u = mongoc_uri_new(text);
        app->pool = mongoc_client_pool_new(u);
        mongoc_uri_destroy(u);
        mongoc_client_pool_set_error_api(app->pool, MONGOC_ERROR_API_VERSION_2);
    }
    bson_free(text);
    if (st != MQ_OK) {
        web_redact(app, err.message);
        return cli_fail(ctx, "bad --uri", st, &err);
    }
    const char *db = ctx->db != NULL ? ctx->db : "mongomq";
    int rc = EXIT_OK;
    for (size_t i = 0; i < nspecs && rc == EXIT_OK; i++) {
        const char *dot = strchr(specs[i], '.');
        if (dot == NULL) {
            rc = add_queue(app, db, specs[i]);
        } else {
            char d[128];
            if ((size_t)(dot - specs[i]) >= sizeof d || dot == specs[i] || dot[1] == '\0') {
                cli_error(ctx, "bad queue '%s': DB.PREFIX or PREFIX", specs[i]);
                return EXIT_USAGE;
            }
            snprintf(d, sizeof d, "%.*s", (int)(dot - specs[i]), specs[i]);
            rc = add_queue(app, d, dot + 1);
        }
    }
    if (rc != EXIT_OK || nspecs > 0) return rc;
    if (ctx->prefix != NULL) return add_queue(app, db, ctx->prefix);
    int found = 0;
    rc = find_queues(app, db, &found);
    if (rc == EXIT_OK && found == 0) {
        fprintf(stderr, "mongomq web: no queue in the database %s yet; showing %s.mq\n", db, db);
        rc = add_queue(app, db, "mq");
    }
    return rc;
}

void web_close_queues(web_app *app) {
    for (size_t i = 0; i < app->nqueues; i++) {
        mq_queue_destroy(app->queues[i].queue);
        free(app->queues[i].stats);
        pthread_mutex_destroy(&app->queues[i].mu);
    }
    free(app->queues);
    app->queues = NULL;
    app->nqueues = 0;
    if (app->pool != NULL) mongoc_client_pool_destroy(app->pool);
    app->pool = NULL;
    mq_client_destroy(app->client);
    app->client = NULL;
}

web_queue *web_find_queue(web_app *app, const char *name) {
    if (app->nqueues == 0) return NULL;
    if (name == NULL || name[0] == '\0') return &app->queues[0];
    for (size_t i = 0; i < app->nqueues; i++)
        if (strcmp(app->queues[i].name, name) == 0) return &app->queues[i];
    return NULL;
}

json_t *web_stats(web_app *app, web_queue *q, double max_age_s, char *why, size_t why_len) {
    pthread_mutex_lock(&q->mu);
    double now = web_mono();
    /* One reader at a time: the others wait on the mutex and take its result. */
    if (q->stats_at == 0 || now - q->stats_at > max_age_s) {
        char *text = NULL;
        mq_error err;
        mq_status st = mq_stats_json(q->queue, &text, &err);
        q->reads++;
        q->stats_at = web_mono();
        free(q->stats);
        q->stats = NULL;
        q->stats_err[0] = '\0';
        if (st == MQ_OK) {
            q->stats = strdup(text);
            mq_free(text);
        } else {
            web_redact(app, err.message);
            snprintf(q->stats_err, sizeof q->stats_err, "%s: %.250s", mq_status_name(st), err.message);
        }
    }
    json_t *obj = NULL;
    if (q->stats != NULL) obj = json_loads(q->stats, 0, NULL);
    if (obj == NULL && why != NULL) snprintf(why, why_len, "%s", q->stats_err[0] ? q->stats_err : "no stats");
    pthread_mutex_unlock(&q->mu);
    return obj;
}

void web_stats_invalidate(web_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->stats_at = 0;
    pthread_mutex_unlock(&q->mu);
}
