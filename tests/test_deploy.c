/* Ready for real deployments (docs/design.md, "Deployments"), shown with what the
 * library sends, seen through APM (lib/fault.hpp's command observer, fed by the
 * library's own APM callbacks):
 *   - whatever the URI's readPreference and readConcernLevel, every read on the
 *     queue's collections goes to the primary with read concern "local", and every
 *     write carries w:"majority" (or the URI's w);
 *   - w=0 is refused;
 *   - a write-concern error on an applied write is MQ_OK with the result, the code and
 *     a sentence in the mq_error, counted by mq_client_write_concern_errors;
 *   - the watcher retries a transient error and gives up only on "no change streams";
 *   - one watcher (one change stream) serves every waiting queue of a client in a
 *     database;
 *   - the claim index leads with priority and the claim's findAndModify is shaped for
 *     it; the open asks hello first; a collection with a collation is refused.
 * Links the static copy of the library (the fault hook and the observers). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.hpp"

/* ---- what the library sent: every command, in order ---- */

#define MAX_SEEN 4096

typedef struct {
    char name[32];
    char db[64];
    bson_t *body;
} seen_command;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static seen_command g_seen[MAX_SEEN];
static int g_nseen;
static int g_overflow;

/* the read preference of each named read the library sent */
typedef struct {
    char command[32];
    int mode;
} seen_read;
static seen_read g_reads[MAX_SEEN];
static int g_nreads;

static void on_command(const char *name, const char *db, const bson_t *body, void *ctx) {
    (void)ctx;
    pthread_mutex_lock(&g_mu);
    if (g_nseen < MAX_SEEN) {
        seen_command *c = &g_seen[g_nseen++];
        snprintf(c->name, sizeof c->name, "%s", name);
        snprintf(c->db, sizeof c->db, "%s", db);
        c->body = bson_copy(body);
    } else {
        g_overflow = 1;
    }
    pthread_mutex_unlock(&g_mu);
}

static void on_read(const char *command, int mode, void *ctx) {
    (void)ctx;
    pthread_mutex_lock(&g_mu);
    if (g_nreads < MAX_SEEN) {
        snprintf(g_reads[g_nreads].command, sizeof g_reads[g_nreads].command, "%s", command);
        g_reads[g_nreads++].mode = mode;
    }
    pthread_mutex_unlock(&g_mu);
}

static void forget_seen(void) {
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++) bson_destroy(g_seen[i].body);
    g_nseen = 0;
    g_nreads = 0;
    g_overflow = 0;
    pthread_mutex_unlock(&g_mu);
}

static void observe(void) {
    forget_seen();
    mongomq_command_observer_set(on_command, NULL);
    mongomq_read_prefs_observer_set(on_read, NULL);
}

static void stop_observing(void) {
    mongomq_command_observer_set(NULL, NULL);
    mongomq_read_prefs_observer_set(NULL, NULL);
}

static int seen_count(void) {
    pthread_mutex_lock(&g_mu);
    int n = g_nseen;
    pthread_mutex_unlock(&g_mu);
    return n;
}

/* A string field by dotted path, or NULL. */
static const char *str_at(const bson_t *doc, const char *path) {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_UTF8(&found))
        return NULL;
    return bson_iter_utf8(&found, NULL);
}

static int has_field(const bson_t *doc, const char *path) {
    bson_iter_t it, found;
    return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found);
}

static int is_change_stream(const seen_command *c) {
    return strcmp(c->name, "aggregate") == 0 && has_field(c->body, "pipeline.0.$changeStream");
}

static char *json_of(const bson_t *doc) { return bson_as_relaxed_extended_json(doc, NULL); }

/* ---- the fault hook: one rule (command, code, how many calls) ---- */

typedef struct {
    const char *command;
    int code;
    int times; /* calls to inject into; -1: all */
    int calls;
} rule;

static pthread_mutex_t g_rule_mu = PTHREAD_MUTEX_INITIALIZER;
static rule g_rule;

static int hook(const char *command, void *ctx) {
    (void)ctx;
    int code = 0;
    pthread_mutex_lock(&g_rule_mu);
    if (g_rule.command != NULL && strcmp(command, g_rule.command) == 0) {
        g_rule.calls++;
        if (g_rule.times < 0 || g_rule.calls <= g_rule.times) code = g_rule.code;
    }
    pthread_mutex_unlock(&g_rule_mu);
    return code;
}

static void inject(const char *command, int code, int times) {
    pthread_mutex_lock(&g_rule_mu);
    g_rule = (rule){command, code, times, 0};
    pthread_mutex_unlock(&g_rule_mu);
    mongomq_fault_set(hook, NULL);
}

static int rule_calls(void) {
    pthread_mutex_lock(&g_rule_mu);
    int n = g_rule.calls;
    pthread_mutex_unlock(&g_rule_mu);
    return n;
}

static int teardown(void **state) {
    mongomq_fault_set(NULL, NULL);
    stop_observing();
    forget_seen();
    return tq_teardown(state);
}

/* Whether the server has change streams (mongo-java-server has them with --oplog). */
static int server_has_change_streams(tq *t) {
    mongoc_collection_t *coll = tq_collection(t, "probe");
    bson_t empty = BSON_INITIALIZER;
    mongoc_change_stream_t *stream = mongoc_collection_watch(coll, &empty, NULL);
    bson_error_t error;
    int ok = !mongoc_change_stream_error_document(stream, &error, NULL);
    mongoc_change_stream_destroy(stream);
    mongoc_collection_destroy(coll);
    return ok;
}

/* A client and a queue on the test's database, through `uri`. */
typedef struct {
    mq_client *client;
    mq_queue *queue;
} handle;

static handle open_with(tq *t, const char *uri, const char *prefix) {
    handle h;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(uri, &h.client, &err), err);
    ASSERT_MQ(MQ_OK, tq_queue_new(h.client, t->db, prefix, &h.queue, &err), err);
    return h;
}

static void close_handle(handle *h) {
    mq_queue_destroy(h->queue);
    mq_client_destroy(h->client);
}

/* ---- 1. reads on the primary with "local", writes with w:"majority" ---- */

/* Every command the library sent to the test's database (and its hello/isMaster):
 * reads carry readConcern "local" (a change stream none of the URI's), writes
 * w:"majority" (or `w` when given), nothing carries a read preference other than the
 * primary; and every named read went out with the primary as its read preference. */
static void check_concerns(tq *t, const char *w_expected, int64_t wtimeout_expected, int min_reads, int min_writes) {
    static const char *reads[] = {"find", "aggregate", "count", "distinct", NULL};
    static const char *writes[] = {"insert", "update", "delete", "findAndModify", "createIndexes", "drop", NULL};
    int nreads = 0, nwrites = 0, nstreams = 0;
    pthread_mutex_lock(&g_mu);
    assert_false(g_overflow);
    for (int i = 0; i < g_nseen; i++) {
        seen_command *c = &g_seen[i];
        if (strcmp(c->db, t->db) != 0 && strcmp(c->db, "admin") != 0) continue;
        char *json = json_of(c->body);
        const char *mode = str_at(c->body, "$readPreference.mode");
        if (mode != NULL && strcmp(mode, "primary") != 0) fail_msg("a command left the primary: %s", json);
        int is_read = 0, is_write = 0;
        for (const char **r = reads; *r != NULL; r++) is_read |= strcmp(c->name, *r) == 0;
        for (const char **w = writes; *w != NULL; w++) is_write |= strcmp(c->name, *w) == 0;
        if (is_change_stream(c)) {
            nstreams++;
            if (has_field(c->body, "readConcern")) fail_msg("the change stream carries a read concern: %s", json);
        } else if (is_read) {
            nreads++;
            const char *level = str_at(c->body, "readConcern.level");
            if (level == NULL || strcmp(level, "local") != 0) fail_msg("a read without readConcern local: %s", json);
        } else if (is_write) {
            nwrites++;
            bson_iter_t it, w;
            if (!bson_iter_init(&it, c->body) || !bson_iter_find_descendant(&it, "writeConcern.w", &w))
                fail_msg("a write without writeConcern.w: %s", json);
            char got[32];
            if (BSON_ITER_HOLDS_UTF8(&w))
                snprintf(got, sizeof got, "%s", bson_iter_utf8(&w, NULL));
            else
                snprintf(got, sizeof got, "%lld", (long long)bson_iter_as_int64(&w));
            if (strcmp(got, w_expected) != 0) fail_msg("a write with w %s, not %s: %s", got, w_expected, json);
            if (wtimeout_expected > 0) {
                bson_iter_t wt;
                if (!bson_iter_init(&it, c->body) || !bson_iter_find_descendant(&it, "writeConcern.wtimeout", &wt) ||
                    bson_iter_as_int64(&wt) != wtimeout_expected)
                    fail_msg("a write without the URI's wtimeout %lld: %s", (long long)wtimeout_expected, json);
            }
        }
        if (has_field(c->body, "readConcern") && !is_read)
            fail_msg("a read concern on a command that is no read: %s", json);
        bson_free(json);
    }
    for (int i = 0; i < g_nreads; i++)
        if (g_reads[i].mode != MONGOC_READ_PRIMARY)
            fail_msg("%s went out with read preference mode %d, not the primary", g_reads[i].command, g_reads[i].mode);
    int named_reads = g_nreads;
    pthread_mutex_unlock(&g_mu);
    print_message("[ deploy   ] %d reads (%d named), %d writes, %d change streams checked\n", nreads, named_reads,
                  nwrites, nstreams);
    assert_true(nreads >= min_reads);
    assert_true(named_reads >= min_reads);
    assert_true(nwrites >= min_writes);
}

/* Every kind of call once: publish, batch, scheduled, claim, batch claim, ack, nack,
 * extend, a waiting claim (next.due, the watcher), dead letters, stats, repair, purge. */
static void exercise(mq_queue *q) {
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(q, "a", "1", 1, 0, &seq, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish(q, "a", "2", 1, 0, &seq, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_at(q, "later", "x", 1, 0, mq_queue_now(q) + 3600, &seq, &err), err);
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "b", "3", 1, 2, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "c", "4", 1, 4, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(q, batch, &seq, &err), err);
    mq_batch_destroy(batch);
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(q, 3, &err), err);

    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(q, "w", 30, 0, &lease, &err), err);
    ASSERT_MQ(MQ_OK, mq_extend(q, lease, 30, &err), err);
    ASSERT_MQ(MQ_OK, mq_nack(q, lease, 0, &err), err);
    mq_lease_destroy(lease);
    for (;;) {
        lease = NULL;
        mq_status st = mq_claim_batch(q, "w", 30, 0, 10, &lease, &err);
        if (st == MQ_EMPTY) break;
        ASSERT_MQ(MQ_OK, st, err);
        ASSERT_MQ(MQ_OK, mq_ack(q, lease, &err), err);
        mq_lease_destroy(lease);
    }
    lease = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim_wait(q, "w", 30, 0, 0.3, &lease, &err), err);

    int64_t n = 0;
    ASSERT_MQ(MQ_OK, mq_dead_count(q, &n, &err), err);
    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_stats_json(q, &json, &err), err);
    mq_free(json);
    ASSERT_MQ(MQ_OK, mq_repair(q, &n, &err), err);
    ASSERT_MQ(MQ_OK, mq_purge_group(q, "later", &err), err);
    ASSERT_MQ(MQ_OK, mq_dead_purge(q, &n, &err), err);
}

static void reads_go_to_primary_whatever_the_uri(void **state) {
    tq *t = *state;
    char *uri = tq_uri_with("readPreference=secondaryPreferred&readConcernLevel=majority");
    observe();
    handle h = open_with(t, uri, "dep");
    exercise(h.queue);
    stop_observing();
    /* a URI without wtimeoutMS: the library's majority carries its own limit, 10 s */
    check_concerns(t, "majority", 10000, 10, 20);

    /* The URI's options are in force for anyone else: a plain libmongoc client made
     * from it reads from secondaries with "majority" (so the checks above are not
     * vacuous). */
    mongoc_client_t *raw = mongoc_client_new(uri);
    assert_non_null(raw);
    mongoc_collection_t *coll = mongoc_client_get_collection(raw, t->db, "dep_locks");
    assert_int_equal(mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(coll)),
                     MONGOC_READ_SECONDARY_PREFERRED);
    assert_string_equal(mongoc_read_concern_get_level(mongoc_collection_get_read_concern(coll)), "majority");
    mongoc_collection_destroy(coll);
    mongoc_client_destroy(raw);

    close_handle(&h);
    free(uri);
}

/* A URI that sets w (and wtimeoutMS) is followed; one that sets only wtimeoutMS gets
 * w:"majority" with that wtimeout. */
static void uri_write_concern_is_kept(void **state) {
    tq *t = *state;
    char *uri = tq_uri_with("w=1&wtimeoutMS=4000&readPreference=secondary");
    observe();
    handle h = open_with(t, uri, "w1");
    tq_publish(t, "warm", "x", 0); /* (the tq's own client: majority, checked below too) */
    forget_seen();
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_publish(h.queue, "g", "e", 1, 0, NULL, &err), err);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(h.queue, "w", 30, 0, &lease, &err), err);
    ASSERT_MQ(MQ_OK, mq_ack(h.queue, lease, &err), err);
    mq_lease_destroy(lease);
    stop_observing();
    check_concerns(t, "1", 4000, 1, 5);
    close_handle(&h);
    free(uri);

    uri = tq_uri_with("wtimeoutMS=3000");
    observe();
    h = open_with(t, uri, "wt");
    exercise(h.queue);
    stop_observing();
    check_concerns(t, "majority", 3000, 10, 20);
    close_handle(&h);
    free(uri);

    /* an explicit w=majority without wtimeoutMS gets the 10 s limit too */
    uri = tq_uri_with("w=majority");
    observe();
    h = open_with(t, uri, "wm");
    exercise(h.queue);
    stop_observing();
    check_concerns(t, "majority", 10000, 10, 20);
    close_handle(&h);
    free(uri);
}

/* ---- 2. w=0 is refused ---- */

static void unacknowledged_writes_are_refused(void **state) {
    (void)state;
    char *uri = tq_uri_with("w=0");
    mq_client *client = (mq_client *)&uri; /* must be set to NULL */
    mq_error err;
    ASSERT_MQ(MQ_ERR_ARG, mq_client_new(uri, &client, &err), err);
    assert_null(client);
    assert_non_null(strstr(err.message, "w=0"));
    assert_non_null(strstr(err.message, "mq_client_new"));
    free(uri);
    /* journal=false with majority (the default w) is refused, naming the option */
    const char *no_journal[] = {"journal=false", "w=majority&journal=false"};
    for (size_t i = 0; i < sizeof no_journal / sizeof no_journal[0]; i++) {
        uri = tq_uri_with(no_journal[i]);
        client = (mq_client *)&uri;
        ASSERT_MQ(MQ_ERR_ARG, mq_client_new(uri, &client, &err), err);
        assert_null(client);
        assert_non_null(strstr(err.message, "journal=false"));
        free(uri);
    }
    /* w=1 and w=majority are fine, and so is journal=false with w=1 */
    const char *fine[] = {"w=1", "w=majority", "journal=true", "w=1&journal=false"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        uri = tq_uri_with(fine[i]);
        ASSERT_MQ(MQ_OK, mq_client_new(uri, &client, &err), err);
        mq_client_destroy(client);
        free(uri);
    }
}

/* On a mongos, a queue whose locks or counter is sharded is refused at open, naming the
 * collection and the fix (there is no mongos here: the check runs on the entries a
 * mongos's config.collections would return). */
static void sharded_locks_are_refused_on_a_mongos(void **state) {
    tq *t = *state;
    char locks[160], counters[160], messages[160], buf[1024];
    snprintf(locks, sizeof locks, "%s.%s_locks", t->db, t->prefix);
    snprintf(counters, sizeof counters, "%s.%s_counters", t->db, t->prefix);
    snprintf(messages, sizeof messages, "%s.%s_messages", t->db, t->prefix);
    bson_t *ok = BCON_NEW("0", "{", "_id", BCON_UTF8(messages), "key", "{", "group_id", BCON_INT32(1), "_id",
                          BCON_INT32(1), "}", "}", "1", "{", "_id", BCON_UTF8(locks), "dropped", BCON_BOOL(true), "}");
    assert_int_equal(mongomq_sharded_refusal(t->queue, ok, buf, sizeof buf), 0);
    bson_destroy(ok);
    bson_t *bad = BCON_NEW("0", "{", "_id", BCON_UTF8(locks), "key", "{", "_id", BCON_UTF8("hashed"), "}", "}");
    assert_int_equal(mongomq_sharded_refusal(t->queue, bad, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, locks));
    assert_non_null(strstr(buf, "hashed"));
    assert_non_null(strstr(buf, "unsharded"));
    bson_destroy(bad);
    bad = BCON_NEW("0", "{", "_id", BCON_UTF8(counters), "key", "{", "_id", BCON_INT32(1), "}", "}");
    assert_int_equal(mongomq_sharded_refusal(t->queue, bad, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, counters));
    bson_destroy(bad);
}

/* ---- 3. a write-concern error on an applied write ---- */

/* The reading of a failed write, on the replies a replica set sends: a writeConcernError
 * alone is an applied write; ok: 0 with a writeConcernError (libmongoc reports the
 * findAndModify's as a write-concern error) is the command's own failure, and a
 * step-down code or the RetryableWriteError label makes it "outcome unknown". */
static void failed_write_replies_are_read_right(void **state) {
    (void)state;
    int code = 0;
    bson_t *applied = BCON_NEW("ok", BCON_INT32(1), "value", BCON_NULL, "writeConcernError", "{", "code",
                               BCON_INT32(64), "errmsg", BCON_UTF8("waiting for replication timed out"), "}");
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_WRITE_CONCERN, 64, applied, &code), MQ_OK);
    assert_int_equal(code, 64);
    bson_destroy(applied);

    bson_t *stepped = BCON_NEW("ok", BCON_INT32(0), "code", BCON_INT32(10107), "errmsg", BCON_UTF8("not primary"),
                               "writeConcernError", "{", "code", BCON_INT32(64), "errmsg", BCON_UTF8("timed out"), "}");
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_WRITE_CONCERN, 64, stepped, &code), MQ_ERR_CONNECT);
    assert_int_equal(code, 10107);
    bson_destroy(stepped);

    bson_t *failed = BCON_NEW("ok", BCON_DOUBLE(0), "code", BCON_INT32(2), "errmsg", BCON_UTF8("bad value"),
                              "writeConcernError", "{", "code", BCON_INT32(64), "}");
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_WRITE_CONCERN, 64, failed, &code), MQ_ERR_SERVER);
    assert_int_equal(code, 2);
    bson_destroy(failed);

    static const int unknown[] = {91, 189, 10107, 11600, 11602, 13435, 13436};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_int_equal(mongomq_classify_error(MONGOC_ERROR_SERVER, (uint32_t)unknown[i], NULL, &code),
                         MQ_ERR_CONNECT);
        assert_int_equal(code, unknown[i]);
    }
    bson_t *labelled = BCON_NEW("ok", BCON_INT32(0), "code", BCON_INT32(96), "errorLabels", "[",
                                BCON_UTF8("RetryableWriteError"), "]");
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_SERVER, 96, labelled, &code), MQ_ERR_CONNECT);
    bson_destroy(labelled);
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_SERVER, 96, NULL, &code), MQ_ERR_SERVER);
    assert_int_equal(mongomq_classify_error(MONGOC_ERROR_STREAM, 0, NULL, &code), MQ_ERR_CONNECT);
}

static void expect_applied(const mq_error *err, uint64_t count_before, mq_client *client) {
    assert_int_equal(err->status, MQ_OK);
    assert_int_equal(err->server_code, 64);
    if (strstr(err->message, "applied but not confirmed by the write concern") == NULL)
        fail_msg("unexpected message: %s", err->message);
    assert_int_equal(mq_client_write_concern_errors(client), count_before + 1);
}

static void write_concern_error_is_an_applied_write(void **state) {
    tq *t = *state;
    mq_error err;
    assert_int_equal(mq_client_write_concern_errors(t->client), 0);
    assert_int_equal(mq_client_write_concern_errors(NULL), 0);

    /* publish: the message insert is applied, its write concern times out (64) */
    inject("publish.insert", MONGOMQ_FAULT_WRITE_CONCERN(64), 1);
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "g", "e1", 2, 0, &seq, &err), err);
    assert_true(seq > 0);
    expect_applied(&err, 0, t->client);
    assert_int_equal(tq_count(t, "messages", "{}"), 1);

    /* claim: the lease's findAndModify; the caller gets the lease */
    inject("claim.lease", MONGOMQ_FAULT_WRITE_CONCERN(64), 1);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(t->queue, "w", 30, 0, &lease, &err), err);
    assert_non_null(lease);
    assert_int_equal(mq_lease_seq(lease), seq);
    expect_applied(&err, 1, t->client);

    /* the lease is real: another claim finds nothing, extend works (no error now) */
    mongomq_fault_set(NULL, NULL);
    tq_expect_empty(t, 0);
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, lease, 30, &err), err);
    assert_int_equal(err.server_code, 0);
    assert_string_equal(err.message, "");

    /* ack: its delete is applied without confirmation; the event is gone */
    inject("ack.delete", MONGOMQ_FAULT_WRITE_CONCERN(64), 1);
    ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
    expect_applied(&err, 2, t->client);
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);

    /* a batch publish's lock upserts */
    inject("publish.lock", MONGOMQ_FAULT_WRITE_CONCERN(64), 1);
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "x", "1", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "y", "2", 1, 0, &err), err);
    int64_t first = 0;
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, &first, &err), err);
    mq_batch_destroy(batch);
    assert_true(first > seq);
    expect_applied(&err, 3, t->client);
    assert_int_equal(tq_count(t, "locks", "{}"), 2);

    /* nack: the fenced update reports its match through the write-concern error */
    mongomq_fault_set(NULL, NULL);
    lease = tq_claim(t, 30, 0);
    inject("nack.retry", MONGOMQ_FAULT_WRITE_CONCERN(64), 1);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0, &err), err);
    expect_applied(&err, 4, t->client);
    mq_lease_destroy(lease);

    /* a real failure still fails, and is no write-concern error */
    inject("publish.insert", 96 /* OperationFailed */, 1);
    ASSERT_MQ(MQ_ERR_SERVER, mq_publish(t->queue, "g", "e2", 2, 0, &seq, &err), err);
    assert_int_equal(err.server_code, 96);
    assert_int_equal(mq_client_write_concern_errors(t->client), 5);
}

/* The same through the server's own reply: the test server answers a write whose
 * writeConcern is {w: "mongomq-test-wcerror"} with a writeConcernError (64) after
 * applying it, as a replica set does for a write that timed out waiting for its
 * majority (on a real replica set the unknown tag gives 79, UnknownReplWriteConcern).
 * This goes through libmongoc's parsing of the reply and the library's
 * applied_or_fail, which the fault hook above skips. */
static void expect_server_applied(const mq_error *err, const char *what) {
    if (err->status != MQ_OK || (err->server_code != 64 && err->server_code != 79) ||
        strstr(err->message, "applied but not confirmed by the write concern") == NULL)
        fail_msg(
            "%s: status %d, server code %d, message \"%s\": expected an applied write with a write-concern "
            "error",
            what, err->status, err->server_code, err->message);
}

static void server_write_concern_error_is_an_applied_write(void **state) {
    tq *t = *state;
    char *uri = tq_uri_with("w=mongomq-test-wcerror");
    mq_client *client = NULL;
    mq_queue *q = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(uri, &client, &err), err);
    free(uri);
    ASSERT_MQ(MQ_OK, mq_queue_new(client, t->db, t->prefix, &q, &err), err);

    uint64_t before = mq_client_write_concern_errors(client);
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(q, "g", "e1", 2, 0, &seq, &err), err);
    expect_server_applied(&err, "publish");
    assert_true(mq_client_write_concern_errors(client) >= before + 3); /* seq, insert, lock */
    assert_int_equal(tq_count(t, "messages", "{}"), 1);
    assert_int_equal(tq_count(t, "locks", "{}"), 1);

    /* the claim's findAndModify: the lease is handed out, and it is real */
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(q, "w", 30, 0, &lease, &err), err);
    assert_non_null(lease);
    assert_int_equal(mq_lease_seq(lease), seq);
    expect_server_applied(&err, "claim");
    tq_expect_empty(t, 0);
    ASSERT_MQ(MQ_OK, mq_extend(q, lease, 30, &err), err);
    expect_server_applied(&err, "extend");
    ASSERT_MQ(MQ_OK, mq_ack(q, lease, &err), err);
    expect_server_applied(&err, "ack");
    mq_lease_destroy(lease);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);

    /* a batch (insertMany and a bulk of upserts), then a nack that releases its group */
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "x", "1", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_batch_add(batch, "y", "2", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(q, batch, NULL, &err), err);
    mq_batch_destroy(batch);
    expect_server_applied(&err, "publish_batch");
    assert_int_equal(tq_count(t, "messages", "{}"), 2);
    assert_int_equal(tq_count(t, "locks", "{}"), 2);
    ASSERT_MQ(MQ_OK, mq_claim(q, "w", 30, 0, &lease, &err), err);
    int64_t nacked = mq_lease_seq(lease);
    ASSERT_MQ(MQ_OK, mq_nack(q, lease, 0, &err), err);
    expect_server_applied(&err, "nack");
    mq_lease_destroy(lease);
    /* released: the plain client gets that group first (a nack puts it in front) */
    mq_lease *again = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(again), nacked);
    tq_ack(t, again);
    mq_lease_destroy(again);

    /* a command the server refuses is still an error, never "applied" */
    ASSERT_MQ(MQ_ERR_ARG, mq_publish(q, "", "e", 1, 0, NULL, &err), err);
    mq_queue_destroy(q);
    mq_client_destroy(client);
}

/* ---- 4. the watcher retries a transient error ---- */

typedef struct {
    mq_queue *queue;
    double delay;
    const char *group;
    pthread_t thread;
} publisher;

static void *publish_main(void *p) {
    publisher *a = p;
    tq_sleep(a->delay);
    mq_error err;
    mq_publish(a->queue, a->group, "e", 1, 0, NULL, &err);
    return NULL;
}

static int change_streams_opened(const char *db) {
    int n = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++)
        if (strcmp(g_seen[i].db, db) == 0 && is_change_stream(&g_seen[i])) n++;
    pthread_mutex_unlock(&g_mu);
    return n;
}

static void watcher_retries_transient_errors(void **state) {
    tq *t = *state;
    int streams = server_has_change_streams(t);
    /* 11602 InterruptedDueToReplStateChange (a step-down), twice; then the server
     * answers as it does. Before, any server error before the first stream meant
     * "polling for good". */
    inject("wait.watch", 11602, 2);
    observe();
    publisher a = {t->queue, 1.5, "g", 0};
    assert_int_equal(pthread_create(&a.thread, NULL, publish_main, &a), 0);
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = mq_claim_wait(t->queue, "w", 30, 0, 20, &lease, &err);
    pthread_join(a.thread, NULL);
    ASSERT_MQ(MQ_OK, st, err);
    mq_lease_destroy(lease);
    int calls = rule_calls();
    int opened = change_streams_opened(t->db);
    stop_observing();
    print_message("[ deploy   ] watcher: %d opens tried (2 failed with 11602), %d change-stream aggregates sent\n",
                  calls, opened);
    assert_true(calls >= 3); /* it tried again after each transient error */
    /* with change streams the third try opened one; without (mongo-java-server
     * without --oplog) the third try got "no change streams" and stopped there */
    assert_true(opened >= 1);
    if (!streams) assert_int_equal(calls, 3);

    /* "no change streams" codes stop it at once */
    const int unsupported[] = {40573, 115, 20, 40324};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        handle h = open_with(t, test_uri(), "nostream");
        inject("wait.watch", unsupported[i], -1);
        lease = NULL;
        ASSERT_MQ(MQ_EMPTY, mq_claim_wait(h.queue, "w", 30, 0, 0.6, &lease, &err), err);
        assert_int_equal(rule_calls(), 1);
        close_handle(&h);
    }
}

/* ---- 5. one watcher for every waiting queue of a client in a database ---- */

typedef struct {
    mq_queue *queue;
    double timeout;
    mq_status status;
    mq_lease *lease;
    pthread_t thread;
} waiter;

static void *wait_main(void *p) {
    waiter *w = p;
    mq_error err;
    w->status = mq_claim_wait(w->queue, "w", 30, 0, w->timeout, &w->lease, &err);
    return NULL;
}

static void one_watcher_per_client_and_database(void **state) {
    tq *t = *state;
    int streams = server_has_change_streams(t);
    mq_client *client = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(test_uri(), &client, &err), err);
    const char *prefixes[] = {"qa", "qb", "qc"};
    mq_queue *queues[3];
    for (int i = 0; i < 3; i++) ASSERT_MQ(MQ_OK, mq_queue_new(client, t->db, prefixes[i], &queues[i], &err), err);

    observe();
    waiter w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (waiter){queues[i], 5, MQ_ERR_INTERNAL, NULL, 0};
        assert_int_equal(pthread_create(&w[i].thread, NULL, wait_main, &w[i]), 0);
        tq_sleep(0.15);
    }
    tq_sleep(0.6); /* every queue subscribed, the stream reopened if it had to */
    int settled = seen_count();
    tq_sleep(0.5);

    /* the getMores of the last 0.5 s: all on one cursor */
    int getmores = 0, cursors = 0;
    int64_t cursor = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = settled; i < g_nseen; i++) {
        if (strcmp(g_seen[i].name, "getMore") != 0 || strcmp(g_seen[i].db, t->db) != 0) continue;
        bson_iter_t it;
        assert_true(bson_iter_init_find(&it, g_seen[i].body, "getMore"));
        int64_t id = bson_iter_as_int64(&it);
        if (getmores++ == 0 || id != cursor) cursors++;
        cursor = id;
    }
    /* the last change stream opened: on the database, following the three locks */
    const seen_command *last = NULL;
    int opened = 0;
    for (int i = 0; i < g_nseen; i++)
        if (strcmp(g_seen[i].db, t->db) == 0 && is_change_stream(&g_seen[i])) {
            last = &g_seen[i];
            opened++;
        }
    char *last_json = last != NULL ? json_of(last->body) : NULL;
    pthread_mutex_unlock(&g_mu);
    print_message(
        "[ deploy   ] 3 waiting queues of one client: %d change-stream aggregates, then %d getMores on "
        "%d cursor(s) in 0.5 s; last stream %s\n",
        opened, getmores, cursors, last_json != NULL ? last_json : "-");

    if (streams) {
        assert_non_null(last);
        assert_true(opened <= 3); /* one per change of the followed collections at most */
        assert_true(getmores >= 1);
        assert_int_equal(cursors, 1);
        bson_iter_t it;
        assert_true(bson_iter_init_find(&it, last->body, "aggregate")); /* aggregate: 1, the database */
        assert_true(BSON_ITER_HOLDS_NUMBER(&it));
        assert_non_null(strstr(last_json, "qa_locks"));
        assert_non_null(strstr(last_json, "qb_locks"));
        assert_non_null(strstr(last_json, "qc_locks"));
        assert_non_null(strstr(last_json, "ns.coll"));
    } else {
        assert_int_equal(opened, 1); /* tried once for all three, then polling */
        assert_int_equal(getmores, 0);
    }
    bson_free(last_json);
    stop_observing();

    /* every waiter still gets its queue's work (on a server whose database streams
     * say nothing, mongo-java-server, through the 1 s safety net) */
    for (int i = 0; i < 3; i++) {
        mq_error perr;
        ASSERT_MQ(MQ_OK, mq_publish(queues[i], "g", "e", 1, 0, NULL, &perr), perr);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(w[i].thread, NULL);
        assert_int_equal(w[i].status, MQ_OK);
        assert_non_null(w[i].lease);
        mq_lease_destroy(w[i].lease);
    }
    for (int i = 0; i < 3; i++) mq_queue_destroy(queues[i]);
    mq_client_destroy(client);
}

/* One queue in a database: a collection stream on its locks (what every server with
 * change streams offers, Cosmos DB included), and a hint wakes one of its waiters. */
static void single_queue_uses_a_collection_stream(void **state) {
    tq *t = *state;
    if (!server_has_change_streams(t)) {
        print_message(
            "[ deploy   ] server without change streams: the stream's shape is shown by the test with --oplog\n");
        observe();
        mq_lease *lease = NULL;
        mq_error err;
        ASSERT_MQ(MQ_EMPTY, mq_claim_wait(t->queue, "w", 30, 0, 0.3, &lease, &err), err);
        stop_observing();
        assert_int_equal(change_streams_opened(t->db), 1);
        return;
    }
    observe();
    waiter w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (waiter){t->queue, 3, MQ_ERR_INTERNAL, NULL, 0};
        assert_int_equal(pthread_create(&w[i].thread, NULL, wait_main, &w[i]), 0);
    }
    tq_sleep(0.5);
    tq_publish(t, "g", "e", 0);
    for (int i = 0; i < 4; i++) pthread_join(w[i].thread, NULL);
    stop_observing();
    int got = 0;
    for (int i = 0; i < 4; i++) {
        if (w[i].status == MQ_OK) {
            got++;
            mq_lease_destroy(w[i].lease);
        } else {
            assert_int_equal(w[i].status, MQ_EMPTY);
        }
    }
    assert_int_equal(got, 1);
    pthread_mutex_lock(&g_mu);
    int streams = 0;
    for (int i = 0; i < g_nseen; i++) {
        if (strcmp(g_seen[i].db, t->db) != 0 || !is_change_stream(&g_seen[i])) continue;
        streams++;
        const char *coll = str_at(g_seen[i].body, "aggregate");
        if (coll == NULL || strcmp(coll, "mq_locks") != 0) fail_msg("not a stream on mq_locks");
    }
    pthread_mutex_unlock(&g_mu);
    assert_int_equal(streams, 1);
}

/* ---- 6. the claim index and the claim's shape ---- */

static int has_index(tq *t, const char *suffix, const char *key_json) {
    mongoc_collection_t *coll = tq_collection(t, suffix);
    mongoc_cursor_t *cursor = mongoc_collection_find_indexes_with_opts(coll, NULL);
    bson_error_t error;
    bson_t *want = bson_new_from_json((const uint8_t *)key_json, -1, &error);
    assert_non_null(want);
    const bson_t *doc;
    int found = 0;
    while (mongoc_cursor_next(cursor, &doc)) {
        bson_iter_t it;
        if (!bson_iter_init_find(&it, doc, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it)) continue;
        const uint8_t *data;
        uint32_t len;
        bson_iter_document(&it, &len, &data);
        bson_t key;
        bson_init_static(&key, data, len);
        /* same fields in the same order (values compared as numbers) */
        bson_iter_t a, b;
        bson_iter_init(&a, &key);
        bson_iter_init(&b, want);
        int same = 1;
        for (;;) {
            int na = bson_iter_next(&a), nb = bson_iter_next(&b);
            if (!na || !nb) {
                same &= na == nb;
                break;
            }
            if (strcmp(bson_iter_key(&a), bson_iter_key(&b)) != 0 || bson_iter_as_int64(&a) != bson_iter_as_int64(&b))
                same = 0;
        }
        found |= same;
    }
    if (mongoc_cursor_error(cursor, &error)) fail_msg("listIndexes: %s", error.message);
    mongoc_cursor_destroy(cursor);
    mongoc_collection_destroy(coll);
    bson_destroy(want);
    return found;
}

static void claim_index_leads_with_priority(void **state) {
    tq *t = *state;
    assert_true(has_index(t, "locks", "{\"priority\": 1, \"available_at\": 1}"));
    assert_false(has_index(t, "locks", "{\"available_at\": 1, \"priority\": 1}")); /* a new queue: not the old one */
    assert_true(has_index(t, "messages", "{\"group_id\": 1, \"_id\": 1}"));

    /* A queue an earlier version opened has the old index: the open adds the new one
     * and keeps the old. */
    bson_t *cmd = BCON_NEW("createIndexes", BCON_UTF8("old_locks"), "indexes", "[", "{", "key", "{", "available_at",
                           BCON_INT32(1), "priority", BCON_INT32(1), "}", "name",
                           BCON_UTF8("available_at_1_priority_1"), "}", "]");
    bson_error_t error;
    if (!mongoc_client_write_command_with_opts(t->raw, t->db, cmd, NULL, NULL, &error))
        fail_msg("createIndexes: %s", error.message);
    bson_destroy(cmd);
    handle h = open_with(t, test_uri(), "old");
    const char *saved = t->prefix;
    t->prefix = "old";
    assert_true(has_index(t, "locks", "{\"priority\": 1, \"available_at\": 1}"));
    assert_true(has_index(t, "locks", "{\"available_at\": 1, \"priority\": 1}"));
    t->prefix = saved;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_publish(h.queue, "g", "e", 1, 3, NULL, &err), err);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(h.queue, "w", 30, 3, &lease, &err), err);
    mq_lease_destroy(lease);
    close_handle(&h);
}

/* The lease's findAndModify for floors 0, 2 and 4: priority $in [floor..4] and
 * available_at <= now, sorted on available_at alone. */
static void claim_is_shaped_for_the_index(void **state) {
    tq *t = *state;
    const int floors[] = {0, 2, 4};
    for (size_t f = 0; f < sizeof floors / sizeof floors[0]; f++) {
        observe();
        tq_expect_empty(t, floors[f]);
        stop_observing();
        int found = 0;
        pthread_mutex_lock(&g_mu);
        for (int i = 0; i < g_nseen; i++) {
            seen_command *c = &g_seen[i];
            if (strcmp(c->name, "findAndModify") != 0) continue;
            found++;
            char *json = json_of(c->body);
            const char *coll = str_at(c->body, "findAndModify");
            assert_non_null(coll);
            assert_string_equal(coll, "mq_locks");
            /* the filter: exactly priority and available_at */
            bson_iter_t q, it;
            assert_true(bson_iter_init_find(&q, c->body, "query") && BSON_ITER_HOLDS_DOCUMENT(&q));
            assert_true(bson_iter_recurse(&q, &it));
            int fields = 0;
            while (bson_iter_next(&it)) fields++;
            if (fields != 2) fail_msg("filter with %d fields: %s", fields, json);
            /* priority: {$in: [floor, ..., 4]} */
            bson_iter_t in;
            assert_true(bson_iter_init(&it, c->body) && bson_iter_find_descendant(&it, "query.priority.$in", &in));
            assert_true(BSON_ITER_HOLDS_ARRAY(&in));
            bson_iter_t v;
            assert_true(bson_iter_recurse(&in, &v));
            int expect = floors[f];
            while (bson_iter_next(&v)) assert_int_equal(bson_iter_as_int64(&v), expect++);
            assert_int_equal(expect, MQ_PRIORITY_MAX + 1);
            assert_true(bson_iter_init(&it, c->body) && bson_iter_find_descendant(&it, "query.available_at.$lte", &v));
            assert_true(BSON_ITER_HOLDS_NUMBER(&v));
            /* sort: {available_at: 1}, nothing else */
            bson_iter_t s, sv;
            assert_true(bson_iter_init_find(&s, c->body, "sort") && BSON_ITER_HOLDS_DOCUMENT(&s));
            assert_true(bson_iter_recurse(&s, &sv));
            assert_true(bson_iter_next(&sv));
            assert_string_equal(bson_iter_key(&sv), "available_at");
            assert_int_equal(bson_iter_as_int64(&sv), 1);
            assert_false(bson_iter_next(&sv));
            bson_free(json);
        }
        pthread_mutex_unlock(&g_mu);
        assert_int_equal(found, 1);
    }

    /* and it still serves floors and round-robin: a floor of 3 skips priority 0..2 */
    tq_publish(t, "low", "l", 0);
    tq_publish(t, "mid", "m", 2);
    tq_publish(t, "high", "h", 4);
    tq_publish(t, "three", "t", 3);
    mq_lease *a = tq_claim(t, 30, 3);
    mq_lease *b = tq_claim(t, 30, 3);
    assert_string_equal(mq_lease_group(a), "high");
    assert_string_equal(mq_lease_group(b), "three");
    tq_expect_empty(t, 3);
    mq_lease *c = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(c), "low");
    mq_lease_destroy(a);
    mq_lease_destroy(b);
    mq_lease_destroy(c);
}

/* ---- 7. the open: hello first, and collations refused ---- */

static void open_asks_hello_first(void **state) {
    tq *t = *state;
    observe();
    handle h = open_with(t, test_uri(), "hello");
    stop_observing();
    int hello = -1, ismaster = -1;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++) {
        if (strcmp(g_seen[i].db, "admin") != 0) continue;
        if (strcmp(g_seen[i].name, "hello") == 0 && hello < 0) hello = i;
        if (strcmp(g_seen[i].name, "isMaster") == 0 && ismaster < 0) ismaster = i;
    }
    pthread_mutex_unlock(&g_mu);
    assert_true(hello >= 0);
    /* isMaster only after hello failed (the test server answers 59 to hello) */
    if (ismaster >= 0) assert_true(ismaster > hello);
    print_message("[ deploy   ] open.clock: hello%s\n", ismaster >= 0 ? ", then isMaster (hello unknown here)" : "");
    close_handle(&h);
}

static bson_t *doc_from(const char *json) {
    bson_error_t error;
    bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
    if (doc == NULL) fail_msg("bad json %s: %s", json, error.message);
    return doc;
}

static void non_simple_collation_is_refused(void **state) {
    tq *t = *state;
    char buf[256];
    struct {
        const char *info;
        int refused;
    } cases[] = {
        {"{\"name\": \"mq_locks\", \"options\": {}}", 0},
        {"{\"name\": \"mq_locks\"}", 0},
        {"{\"name\": \"mq_locks\", \"options\": {\"collation\": {\"locale\": \"simple\"}}}", 0},
        {"{\"name\": \"mq_locks\", \"options\": {\"collation\": {\"locale\": \"en\", \"strength\": 2}}}", 1},
        {"{\"name\": \"mq_locks\", \"options\": {\"collation\": {\"locale\": \"fr\"}}}", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bson_t *info = doc_from(cases[i].info);
        assert_int_equal(mongomq_non_simple_collation(info, buf, sizeof buf), cases[i].refused);
        if (cases[i].refused) assert_non_null(strstr(buf, "locale"));
        bson_destroy(info);
    }

    /* The whole open, where the server keeps collations (MongoDB does; mongo-java-
     * server drops them, so there only the check above runs). */
    mongoc_database_t *db = mongoc_client_get_database(t->raw, t->db);
    bson_t *opts = doc_from("{\"collation\": {\"locale\": \"en\", \"strength\": 2}}");
    bson_error_t error;
    mongoc_collection_t *coll = mongoc_database_create_collection(db, "ci_messages", opts, &error);
    if (coll == NULL) fail_msg("create: %s", error.message);
    mongoc_collection_destroy(coll);
    bson_destroy(opts);
    bson_t *filter = doc_from("{\"filter\": {\"name\": \"ci_messages\"}}");
    mongoc_cursor_t *cursor = mongoc_database_find_collections_with_opts(db, filter);
    const bson_t *doc;
    int kept = 0;
    while (mongoc_cursor_next(cursor, &doc)) kept |= mongomq_non_simple_collation(doc, buf, sizeof buf);
    mongoc_cursor_destroy(cursor);
    bson_destroy(filter);
    mongoc_database_destroy(db);

    mq_queue *queue = NULL;
    mq_error err;
    mq_status st = mq_queue_new(t->client, t->db, "ci", &queue, &err);
    if (kept) {
        ASSERT_MQ(MQ_ERR_SERVER, st, err);
        assert_null(queue);
        assert_non_null(strstr(err.message, "collation"));
        assert_non_null(strstr(err.message, "ci_messages"));
        print_message("[ deploy   ] refused: %s\n", err.message);
    } else {
        ASSERT_MQ(MQ_OK, st, err);
        mq_queue_destroy(queue);
        print_message("[ deploy   ] this server drops collations: only the check itself ran\n");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_go_to_primary_whatever_the_uri, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(uri_write_concern_is_kept, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(unacknowledged_writes_are_refused, tq_setup, teardown),
        cmocka_unit_test(failed_write_replies_are_read_right),
        cmocka_unit_test_setup_teardown(sharded_locks_are_refused_on_a_mongos, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(write_concern_error_is_an_applied_write, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(server_write_concern_error_is_an_applied_write, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(watcher_retries_transient_errors, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(one_watcher_per_client_and_database, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(single_queue_uses_a_collection_stream, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(claim_index_leads_with_priority, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(claim_is_shaped_for_the_index, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(open_asks_hello_first, tq_setup, teardown),
        cmocka_unit_test_setup_teardown(non_simple_collation_is_refused, tq_setup, teardown),
    };
    return cmocka_run_group_tests_name("deploy", tests, NULL, NULL);
}
