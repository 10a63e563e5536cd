#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void quiet_log(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    /* Keep test output clean, but never hide what libmongoc thinks is wrong. */
    if (level <= 1) fprintf(stderr, "libmongoc %s: %s\n", domain, message);
}

const char *test_uri(void) {
    const char *uri = getenv("MONGOMQ_TEST_URI");
    if (uri == NULL || uri[0] == '\0')
        fail_msg(
            "MONGOMQ_TEST_URI is not set: start a server (scripts/test-server.sh start) "
            "or run scripts/test.sh");
    return uri;
}

char *tq_uri_with(const char *options) {
    const char *uri = test_uri();
    const char *hosts = strstr(uri, "://");
    hosts = hosts != NULL ? hosts + 3 : uri;
    const char *sep = strchr(uri, '?') != NULL ? "&" : strchr(hosts, '/') != NULL ? "?" : "/?";
    size_t n = strlen(uri) + strlen(sep) + strlen(options) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%s%s%s", uri, sep, options);
    return out;
}

static double fake_clock(void *ctx) { return ((tq *)ctx)->now; }

int tq_partitions(void) {
    const char *v = getenv("MONGOMQ_TEST_PARTITIONS");
    if (v == NULL || v[0] == '\0') return 1;
    char *end = NULL;
    long p = strtol(v, &end, 10);
    if (*end != '\0' || p < 1 || p > MQ_PARTITIONS_MAX) fail_msg("MONGOMQ_TEST_PARTITIONS is \"%s\", not 1..1024", v);
    return (int)p;
}

int tq_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, const char *const *p1_only) {
    const int partitions = tq_partitions();
    struct CMUnitTest *run = calloc(count, sizeof *run);
    if (run == NULL) return 1;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const char *reason = NULL;
        for (const char *const *p = p1_only; partitions > 1 && p != NULL && *p != NULL; p += 2)
            if (strcmp(p[0], tests[i].name) == 0) reason = p[1];
        if (reason != NULL) {
            printf("[ P=%d      ] not run: %s (%s)\n", partitions, tests[i].name, reason);
            continue;
        }
        run[n++] = tests[i];
    }
    if (partitions > 1)
        printf("[ P=%d      ] %zu of %zu tests run on queues of %d partitions\n", partitions, n, count, partitions);
    int failed = _cmocka_run_group_tests(group, run, n, NULL, NULL);
    free(run);
    return failed;
}

mq_status tq_queue_new(mq_client *client, const char *db, const char *prefix, mq_queue **out, mq_error *err) {
    mq_queue_opts opts = MQ_QUEUE_OPTS_INIT;
    opts.partitions = tq_partitions();
    return mq_queue_new_with(client, db, prefix, &opts, out, err);
}

static int setup(void **state, int fake) {
    static int counter;
    mq_log_set_handler(quiet_log, NULL);
    tq *t = calloc(1, sizeof *t);
    assert_non_null(t);
    snprintf(t->db, sizeof t->db, "mqt_%d_%d_%ld", (int)getpid(), __sync_add_and_fetch(&counter, 1),
             (long)(tq_monotonic() * 1000) % 100000);
    t->prefix = "mq";
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(test_uri(), &t->client, &err), err);
    ASSERT_MQ(MQ_OK, tq_queue_new(t->client, t->db, t->prefix, &t->queue, &err), err);
    if (fake) {
        t->fake_clock = 1;
        t->now = 1e9;
        mq_queue_set_clock(t->queue, fake_clock, t);
    }
    t->raw = mongoc_client_new(test_uri());
    assert_non_null(t->raw);
    *state = t;
    return 0;
}

int tq_setup(void **state) { return setup(state, 0); }
int tq_setup_fake_clock(void **state) { return setup(state, 1); }

int tq_teardown(void **state) {
    tq *t = *state;
    if (t == NULL) return 0;
    mongoc_database_t *db = mongoc_client_get_database(t->raw, t->db);
    mongoc_database_drop(db, NULL);
    mongoc_database_destroy(db);
    mongoc_client_destroy(t->raw);
    mq_queue_destroy(t->queue);
    mq_client_destroy(t->client);
    free(t);
    return 0;
}

void tq_advance(tq *t, double seconds) { t->now += seconds; }

int64_t tq_publish(tq *t, const char *group, const char *text, int priority) {
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, group, text, strlen(text), priority, &seq, &err), err);
    assert_true(seq > 0);
    return seq;
}

mq_lease *tq_claim(tq *t, double visibility, int min_priority) {
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(t->queue, "tester", visibility, min_priority, &lease, &err), err);
    assert_non_null(lease);
    return lease;
}

void tq_expect_empty(tq *t, int min_priority) {
    mq_error err;
    mq_lease *lease = (mq_lease *)&err; /* must be set to NULL */
    mq_status st = mq_claim(t->queue, "tester", 30, min_priority, &lease, &err);
    if (st != MQ_EMPTY)
        fail_msg("expected MQ_EMPTY, got %s (group %s, seq %lld): %s", mq_status_name(st),
                 st == MQ_OK ? mq_lease_group(lease) : "-", (long long)mq_lease_seq(lease), err.message);
    assert_null(lease);
}

void tq_ack(tq *t, const mq_lease *lease) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
}

const char *tq_event_text(const mq_lease *lease, char *buf, size_t size) {
    size_t len = 0;
    const void *event = mq_lease_event(lease, &len);
    assert_true(len < size);
    memcpy(buf, event, len);
    buf[len] = '\0';
    return buf;
}

mongoc_collection_t *tq_collection(tq *t, const char *suffix) {
    char name[128];
    snprintf(name, sizeof name, "%s_%s", t->prefix, suffix);
    return mongoc_client_get_collection(t->raw, t->db, name);
}

int64_t tq_count(tq *t, const char *suffix, const char *json_filter) {
    bson_error_t error;
    bson_t *filter = bson_new_from_json((const uint8_t *)json_filter, -1, &error);
    if (filter == NULL) fail_msg("bad filter %s: %s", json_filter, error.message);
    mongoc_collection_t *coll = tq_collection(t, suffix);
    int64_t n = mongoc_collection_count_documents(coll, filter, NULL, NULL, NULL, &error);
    if (n < 0) fail_msg("count %s: %s", suffix, error.message);
    mongoc_collection_destroy(coll);
    bson_destroy(filter);
    return n;
}

bson_t *tq_find_one(tq *t, const char *suffix, const char *json_filter) {
    bson_error_t error;
    bson_t *filter = bson_new_from_json((const uint8_t *)json_filter, -1, &error);
    if (filter == NULL) fail_msg("bad filter %s: %s", json_filter, error.message);
    mongoc_collection_t *coll = tq_collection(t, suffix);
    mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
    const bson_t *doc;
    bson_t *found = mongoc_cursor_next(cursor, &doc) ? bson_copy(doc) : NULL;
    if (mongoc_cursor_error(cursor, &error)) fail_msg("find %s: %s", suffix, error.message);
    mongoc_cursor_destroy(cursor);
    mongoc_collection_destroy(coll);
    bson_destroy(filter);
    return found;
}

void tq_insert_json(tq *t, const char *suffix, const char *json) {
    bson_error_t error;
    bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
    if (doc == NULL) fail_msg("bad document %s: %s", json, error.message);
    mongoc_collection_t *coll = tq_collection(t, suffix);
    if (!mongoc_collection_insert_one(coll, doc, NULL, NULL, &error)) fail_msg("insert %s: %s", suffix, error.message);
    mongoc_collection_destroy(coll);
    bson_destroy(doc);
}

char *tq_snapshot(tq *t) {
    static const char *suffixes[] = {"messages", "locks", "counters"};
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    out[0] = '\0';
    for (size_t i = 0; i < 3; i++) {
        mongoc_collection_t *coll = tq_collection(t, suffixes[i]);
        bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
        bson_t empty = BSON_INITIALIZER;
        mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &empty, opts, NULL);
        const bson_t *doc;
        while (mongoc_cursor_next(cursor, &doc)) {
            char *json = bson_as_canonical_extended_json(doc, NULL);
            size_t need = len + strlen(suffixes[i]) + strlen(json) + 4;
            if (need > cap) {
                cap = need * 2;
                out = realloc(out, cap);
                assert_non_null(out);
            }
            len += (size_t)sprintf(out + len, "%s %s\n", suffixes[i], json);
            bson_free(json);
        }
        bson_error_t error;
        if (mongoc_cursor_error(cursor, &error)) fail_msg("snapshot: %s", error.message);
        mongoc_cursor_destroy(cursor);
        bson_destroy(opts);
        mongoc_collection_destroy(coll);
    }
    return out;
}

typedef struct {
    void (*fn)(void *, int);
    void *arg;
    int index;
} thread_start;

static void *thread_main(void *p) {
    thread_start *s = p;
    s->fn(s->arg, s->index);
    return NULL;
}

void tq_run_threads(int threads, void (*fn)(void *arg, int index), void *arg) {
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    thread_start *starts = calloc((size_t)threads, sizeof *starts);
    assert_non_null(ids);
    assert_non_null(starts);
    for (int i = 0; i < threads; i++) {
        starts[i] = (thread_start){fn, arg, i};
        assert_int_equal(pthread_create(&ids[i], NULL, thread_main, &starts[i]), 0);
    }
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    free(ids);
    free(starts);
}

double tq_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tq_sleep(double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}
