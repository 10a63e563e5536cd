/* Argument checks of the C API (include/mongomq.h, "Conventions"): every bad input
 * gives the right MQ_ERR_* with err.message naming the function and the argument,
 * err.status equal to the returned status, *out set to NULL, the same status when
 * err is NULL, and nothing sent to the server: the queue's documents (tq_snapshot)
 * and the client's command count (mq_client_command_count) do not change. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------ */
/* The failure checker                                                             */
/* ------------------------------------------------------------------------------ */

/* What an out-parameter holds before a failing call: the call must replace it. */
static char sentinel_[1];
#define SENTINEL ((void *)sentinel_)

/* The calls below are written with ERR as their err argument: the checker runs each
 * once with ERR pointing to an mq_error and once with ERR NULL. */
#define ERR err_p_

static void check_error(int line, const char *call, mq_status expected, const char *fn, const char *needle,
                        mq_status got, const mq_error *e) {
    if (got != expected)
        fail_msg("line %d: %s returned %s, expected %s: %s", line, call, mq_status_name(got), mq_status_name(expected),
                 e->message);
    if (e->status != got)
        fail_msg("line %d: %s: err.status is %s (%d), the call returned %s", line, call, mq_status_name(e->status),
                 (int)e->status, mq_status_name(got));
    if (memchr(e->message, '\0', sizeof e->message) == NULL)
        fail_msg("line %d: %s: err.message is not NUL-terminated", line, call);
    if (fn != NULL && strstr(e->message, fn) == NULL)
        fail_msg("line %d: %s: err.message \"%s\" does not name the function %s", line, call, e->message, fn);
    if (needle != NULL && strstr(e->message, needle) == NULL)
        fail_msg("line %d: %s: err.message \"%s\" does not name \"%s\"", line, call, e->message, needle);
    if (expected == MQ_ERR_ARG && e->server_code != 0)
        fail_msg("line %d: %s: server_code %d on an argument error", line, call, e->server_code);
}

static void check_unchanged(int line, const char *call, tq *t, char *before, uint64_t commands_before) {
    if (t == NULL) return;
    uint64_t commands_after = mq_client_command_count(t->client);
    if (commands_after != commands_before)
        fail_msg("line %d: %s sent %llu command(s) to the server", line, call,
                 (unsigned long long)(commands_after - commands_before));
    char *after = tq_snapshot(t);
    if (strcmp(before, after) != 0)
        fail_msg("line %d: %s changed the queue.\nbefore:\n%s\nafter:\n%s", line, call, before, after);
    free(after);
    free(before);
}

/* EXPECT_FAIL_OUT(t, status, fn, needle, out, call): `out` is the variable the call
 * writes through its out-parameter; it must come back NULL. t may be NULL (no server
 * state to compare). fn/needle may be NULL (not checked). */
#define EXPECT_FAIL_IMPL(t, expected, fn, needle, reset, check_out, call)                                     \
  do {                                                                                                        \
    tq *t_ = (t);                                                                                             \
    char *before_ = t_ != NULL ? tq_snapshot(t_) : NULL;                                                      \
    uint64_t commands_ = t_ != NULL ? mq_client_command_count(t_->client) : 0;                                \
    mq_error e_;                                                                                              \
    memset(&e_, 'Z', sizeof e_);                                                                              \
    e_.message[sizeof e_.message - 1] = '\0';                                                                 \
    mq_error *ERR = &e_;                                                                                      \
    reset;                                                                                                    \
    mq_status got_ = (call);                                                                                  \
    check_out;                                                                                                \
    check_error(__LINE__, #call, (expected), (fn), (needle), got_, &e_);                                      \
    ERR = NULL;                                                                                               \
    reset;                                                                                                    \
    mq_status again_ = (call);                                                                                \
    check_out;                                                                                                \
    if (again_ != got_)                                                                                       \
      fail_msg("line %d: %s with err NULL returned %s, with err %s", __LINE__, #call, mq_status_name(again_), \
               mq_status_name(got_));                                                                         \
    check_unchanged(__LINE__, #call, t_, before_, commands_);                                                 \
  } while (0)

#define EXPECT_FAIL(t, expected, fn, needle, call) EXPECT_FAIL_IMPL(t, expected, fn, needle, (void)0, (void)0, call)

#define EXPECT_FAIL_OUT(t, expected, fn, needle, out, call)   \
  EXPECT_FAIL_IMPL(t, expected, fn, needle, (out) = SENTINEL, \
                   if ((out) != NULL) fail_msg("line %d: %s left %s non-NULL", __LINE__, #call, #out), call)

#define EXPECT_ARG(t, fn, needle, call) EXPECT_FAIL(t, MQ_ERR_ARG, fn, needle, call)
#define EXPECT_ARG_OUT(t, fn, needle, out, call) EXPECT_FAIL_OUT(t, MQ_ERR_ARG, fn, needle, out, call)

/* ------------------------------------------------------------------------------ */
/* Helpers                                                                         */
/* ------------------------------------------------------------------------------ */

/* Makes the queue non-trivial: two groups, three events, g1 leased (its lock holds a
 * token), g2 due. Returns the lease on g1. */
static mq_lease *seed(tq *t) {
    tq_publish(t, "g1", "first", 2);
    tq_publish(t, "g1", "second", 2);
    tq_publish(t, "g2", "third", 0);
    mq_lease *lease = tq_claim(t, 60, 2);
    assert_string_equal(mq_lease_group(lease), "g1");
    return lease;
}

static int database_exists(tq *t, const char *name) {
    bson_error_t error;
    char **names = mongoc_client_get_database_names_with_opts(t->raw, NULL, &error);
    if (names == NULL) fail_msg("listDatabases: %s", error.message);
    int found = 0;
    for (char **n = names; *n != NULL; n++)
        if (strcmp(*n, name) == 0) found = 1;
    bson_strfreev(names);
    return found;
}

static void drop_database(tq *t, const char *name) {
    mongoc_database_t *db = mongoc_client_get_database(t->raw, name);
    bson_error_t error;
    if (!mongoc_database_drop(db, &error)) print_message("drop %s: %s\n", name, error.message);
    mongoc_database_destroy(db);
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The collection names of the test database, sorted, one per line (caller frees). */
static char *collection_names(tq *t) {
    mongoc_database_t *db = mongoc_client_get_database(t->raw, t->db);
    bson_error_t error;
    char **names = mongoc_database_get_collection_names_with_opts(db, NULL, &error);
    if (names == NULL) fail_msg("listCollections: %s", error.message);
    size_t n = 0, total = 1;
    while (names[n] != NULL) total += strlen(names[n++]) + 1;
    qsort(names, n, sizeof *names, compare_strings);
    char *out = malloc(total);
    assert_non_null(out);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, names[i]);
        strcat(out, "\n");
    }
    bson_strfreev(names);
    mongoc_database_destroy(db);
    return out;
}

static char *repeat(char c, size_t n) {
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void log_errors_only(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (level <= 1) fprintf(stderr, "libmongoc %s: %s\n", domain, message);
}

/* ------------------------------------------------------------------------------ */
/* No server needed                                                                */
/* ------------------------------------------------------------------------------ */

/* mq_log_set_handler routes libmongoc's log to the caller, and NULL silences it. */
typedef struct {
    int lines, warnings;
    char last[512];
} log_capture;

static void capture_log(int level, const char *domain, const char *message, void *ctx) {
    log_capture *c = ctx;
    c->lines++;
    if (level == 2) c->warnings++;
    snprintf(c->last, sizeof c->last, "%s: %s", domain, message);
}

static void test_log_handler(void **state) {
    (void)state;
    log_capture seen = {0, 0, ""};
    mq_log_set_handler(capture_log, &seen);
    mq_client *client = NULL;
    mq_error err;
    /* libmongoc warns about an option it does not know. */
    ASSERT_MQ(MQ_OK, mq_client_new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1", &client, &err), err);
    mq_client_destroy(client);
    log_capture routed = seen;

    mq_log_set_handler(NULL, NULL); /* silenced: the handler is not called any more */
    ASSERT_MQ(MQ_OK, mq_client_new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1", &client, &err), err);
    mq_client_destroy(client);
    /* `seen` lives on this stack: restore a handler that does not point at it before
     * any assertion can leave the function. */
    mq_log_set_handler(log_errors_only, NULL);

    print_message("routed: %d line(s), last \"%s\"\n", routed.lines, routed.last);
    if (routed.warnings == 0) fail_msg("the handler saw no warning (%d lines)", routed.lines);
    assert_non_null(strstr(routed.last, "mongomqnosuchoption"));
    assert_int_equal(seen.lines, routed.lines);
}

static void test_version(void **state) {
    (void)state;
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", MQ_VERSION_MAJOR, MQ_VERSION_MINOR, MQ_VERSION_PATCH);
    const char *v = mq_version();
    assert_non_null(v);
    assert_string_equal(v, expected);
    unsigned a, b, c;
    char tail;
    assert_int_equal(sscanf(v, "%u.%u.%u%c", &a, &b, &c, &tail), 3);
}

static void test_status_names(void **state) {
    (void)state;
    assert_string_equal(mq_status_name(MQ_OK), "MQ_OK");
    assert_string_equal(mq_status_name(MQ_EMPTY), "MQ_EMPTY");
    assert_string_equal(mq_status_name(MQ_LEASE_LOST), "MQ_LEASE_LOST");
    assert_string_equal(mq_status_name(MQ_INTERRUPTED), "MQ_INTERRUPTED");
    assert_string_equal(mq_status_name(MQ_ERR_ARG), "MQ_ERR_ARG");
    assert_string_equal(mq_status_name(MQ_ERR_CONNECT), "MQ_ERR_CONNECT");
    assert_string_equal(mq_status_name(MQ_ERR_SERVER), "MQ_ERR_SERVER");
    assert_string_equal(mq_status_name(MQ_ERR_NOMEM), "MQ_ERR_NOMEM");
    assert_string_equal(mq_status_name(MQ_ERR_INTERNAL), "MQ_ERR_INTERNAL");
    assert_string_equal(mq_status_name((mq_status)42), "MQ_UNKNOWN");
    assert_string_equal(mq_status_name(MQ_CANCELLED), "MQ_CANCELLED");
    assert_string_equal(mq_status_name(MQ_DUPLICATE), "MQ_DUPLICATE");
    assert_string_equal(mq_status_name((mq_status)6), "MQ_UNKNOWN");
    assert_string_equal(mq_status_name((mq_status)-6), "MQ_UNKNOWN");
    assert_string_equal(mq_status_name((mq_status)INT_MIN), "MQ_UNKNOWN");
}

static void test_null_lease_and_destroy_null(void **state) {
    (void)state;
    assert_int_equal(mq_lease_seq(NULL), 0);
    assert_null(mq_lease_group(NULL));
    assert_null(mq_lease_token(NULL));
    assert_int_equal(mq_lease_attempts(NULL), 0);
    size_t len = 77;
    assert_null(mq_lease_event(NULL, &len));
    assert_int_equal(len, 0);
    assert_null(mq_lease_event(NULL, NULL));
    assert_int_equal(mq_client_command_count(NULL), 0);
    mq_lease_destroy(NULL);
    mq_queue_destroy(NULL);
    mq_client_destroy(NULL);
    mq_queue_set_clock(NULL, NULL, NULL);
}

static void test_client_new_bad(void **state) {
    (void)state;
    mq_client *client = NULL;
    EXPECT_ARG_OUT(NULL, "mq_client_new", "uri", client, mq_client_new(NULL, &client, ERR));
    EXPECT_ARG(NULL, "mq_client_new", "out", mq_client_new("mongodb://127.0.0.1:27017", NULL, ERR));
    EXPECT_ARG(NULL, "mq_client_new", "out", mq_client_new(NULL, NULL, ERR));

    static const char *malformed[] = {
        "not-a-uri",
        "mongodb://",
        "mongodb://host:99999",
        "",
        "mongodb://host:0",
        "mongodb://:27017",
        "http://127.0.0.1:27017",
        "mongodb://127.0.0.1/?tls=maybe",
        "mongodb://[bad",
        "mongodb://h1,[bad:27017/",
    };
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        print_message("uri \"%s\"\n", malformed[i]);
        EXPECT_ARG_OUT(NULL, "mq_client_new", "uri", client, mq_client_new(malformed[i], &client, ERR));
    }

    /* Malformed URIs with a password: the message never shows it. */
    static const char *secret[] = {
        "mongodb://user:s3cretPW@/bad?x",          "mongodb://user:s3cretPW@host:99999",
        "mongodb://user:s3cretPW@[bad/",   /* an unclosed [: libmongoc takes it as a host */
        "mongodb://user:s3cretPW%zz@host", /* bad escape in the password */
        "mongodb://us:er:s3cretPW@host",   /* unescaped ':' in the password */
        "mongodb://user:s3cretPW@host/?tls=maybe", "mongodb://user:s3cretPW@host/db?authMechanism=MONGODB-X509",
    };
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++) {
        mq_error err;
        client = SENTINEL;
        mq_status st = mq_client_new(secret[i], &client, &err);
        print_message("uri \"%s\" -> %s: %s\n", secret[i], mq_status_name(st), err.message);
        assert_int_equal(st, MQ_ERR_ARG);
        assert_int_equal(err.status, MQ_ERR_ARG);
        assert_null(client);
        assert_non_null(strstr(err.message, "uri"));
        if (strstr(err.message, "s3cret") != NULL) fail_msg("password in the message: %s", err.message);
    }
}

/* libmongoc splits the userinfo at the last '@', so a password may hold a '?' or
 * '/'; the password must still not show. */
static void test_client_new_password_with_question_mark(void **state) {
    (void)state;
    static const char *secret[] = {
        "mongodb://u:s3cret?PW:@h",
        "mongodb://user:pa:s3cretPW?x@host",
    };
    for (size_t i = 0; i < sizeof secret / sizeof *secret; i++) {
        mq_error err;
        mq_client *client = SENTINEL;
        mq_status st = mq_client_new(secret[i], &client, &err);
        print_message("uri \"%s\" -> %s: %s\n", secret[i], mq_status_name(st), err.message);
        assert_int_equal(st, MQ_ERR_ARG);
        assert_null(client);
        if (strstr(err.message, "s3cret") != NULL) fail_msg("password in the message: %s", err.message);
    }
}

static void test_unreachable_server(void **state) {
    (void)state;
    mq_error err;
    mq_client *client = NULL;
    ASSERT_MQ(MQ_OK,
              mq_client_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&connectTimeoutMS=300", &client, &err),
              err);
    assert_non_null(client);

    mq_queue *queue = SENTINEL;
    double start = tq_monotonic();
    mq_status st = mq_queue_new(client, "mqt_unreachable", "mq", &queue, &err);
    double elapsed = tq_monotonic() - start;
    print_message("mq_queue_new on an unreachable server: %s after %.3f s: %s\n", mq_status_name(st), elapsed,
                  err.message);
    assert_int_equal(st, MQ_ERR_CONNECT);
    assert_int_equal(err.status, MQ_ERR_CONNECT);
    assert_null(queue);
    assert_true(strlen(err.message) > 0);

    queue = SENTINEL;
    assert_int_equal(mq_queue_new(client, "mqt_unreachable", "mq", &queue, NULL), MQ_ERR_CONNECT);
    assert_null(queue);
    mq_client_destroy(client);
}

/* ------------------------------------------------------------------------------ */
/* With a server                                                                   */
/* ------------------------------------------------------------------------------ */

static void test_null_handles(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_lease *out = NULL;
    mq_queue *queue = NULL;
    int64_t seq = 5;

    EXPECT_ARG(t, "mq_publish", "queue", mq_publish(NULL, "g", "x", 1, 0, &seq, ERR));
    assert_int_equal(seq, 0);
    EXPECT_ARG_OUT(t, "mq_claim", "queue", out, mq_claim(NULL, "w", 30, 0, &out, ERR));
    EXPECT_ARG(t, "mq_ack", "queue", mq_ack(NULL, lease, ERR));
    EXPECT_ARG(t, "mq_nack", "queue", mq_nack(NULL, lease, 0, ERR));
    EXPECT_ARG(t, "mq_extend", "queue", mq_extend(NULL, lease, 30, ERR));

    EXPECT_ARG_OUT(t, "mq_queue_new", "client", queue, mq_queue_new(NULL, t->db, "mq", &queue, ERR));
    EXPECT_ARG(t, "mq_queue_new", "out", mq_queue_new(t->client, t->db, "mq", NULL, ERR));
    EXPECT_ARG(t, "mq_queue_new", "out", mq_queue_new(t->client, NULL, NULL, NULL, ERR));
    EXPECT_ARG(t, "mq_claim", "out", mq_claim(t->queue, "w", 30, 0, NULL, ERR));
    EXPECT_ARG(t, "mq_claim", "out", mq_claim(t->queue, NULL, 30, 0, NULL, ERR));

    EXPECT_ARG(t, "mq_ack", "lease", mq_ack(t->queue, NULL, ERR));
    EXPECT_ARG(t, "mq_nack", "lease", mq_nack(t->queue, NULL, 0, ERR));
    EXPECT_ARG(t, "mq_extend", "lease", mq_extend(t->queue, NULL, 30, ERR));

    /* Several bad arguments at once still fail cleanly. */
    EXPECT_ARG(t, "mq_nack", NULL, mq_nack(t->queue, NULL, NAN, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", NULL, out, mq_claim(t->queue, "", -1, 9, &out, ERR));
    mq_lease_destroy(lease);
}

static void test_group_id(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    int64_t seq = 5;
    static const char *bad_utf8[] = {
        "\xff",                 /* never valid */
        "\xc0\xaf",             /* overlong '/' */
        "\xe0\x80\xaf",         /* overlong '/', 3 bytes */
        "\xed\xa0\x80",         /* lone surrogate U+D800 */
        "\xed\xbf\xbf",         /* lone surrogate U+DFFF */
        "\xe2\x82",             /* truncated euro sign */
        "ok\xe2\x82",           /* truncated at the end, after valid bytes */
        "\x80",                 /* lone continuation byte */
        "\xf4\x90\x80\x80",     /* above U+10FFFF */
        "\xf8\x88\x80\x80\x80", /* 5-byte form */
        "a\xc3(",               /* bad continuation */
    };

    EXPECT_ARG(t, "mq_publish", "group_id", mq_publish(t->queue, NULL, "x", 1, 0, &seq, ERR));
    assert_int_equal(seq, 0);
    EXPECT_ARG(t, "mq_publish", "group_id", mq_publish(t->queue, "", "x", 1, 0, &seq, ERR));
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++)
        EXPECT_ARG(t, "mq_publish", "group_id", mq_publish(t->queue, bad_utf8[i], "x", 1, 0, &seq, ERR));

    char *long_group = repeat('g', MQ_GROUP_ID_MAX + 1);
    EXPECT_ARG(t, "mq_publish", "group_id", mq_publish(t->queue, long_group, "x", 1, 0, &seq, ERR));
    /* 999 bytes of ASCII and a 2-byte character: 1001 bytes, valid UTF-8, too long. */
    memcpy(long_group + MQ_GROUP_ID_MAX - 1, "\xc3\xa9", 3);
    assert_int_equal(strlen(long_group), MQ_GROUP_ID_MAX + 1);
    EXPECT_ARG(t, "mq_publish", "group_id", mq_publish(t->queue, long_group, "x", 1, 0, &seq, ERR));
    free(long_group);
    mq_lease_destroy(lease);
}

static void test_group_id_accepted(void **state) {
    tq *t = *state;
    /* Exactly MQ_GROUP_ID_MAX bytes, ending in a 2-byte character. */
    char *group = repeat('g', MQ_GROUP_ID_MAX);
    memcpy(group + MQ_GROUP_ID_MAX - 2, "\xc3\xa9", 3);
    assert_int_equal(strlen(group), MQ_GROUP_ID_MAX);
    tq_publish(t, group, "max", 1);
    tq_publish(t,
               "gr\xc3\xbc\xc3\x9f"
               "e-\xf0\x9f\x98\x80",
               "emoji", 0);
    mq_lease *lease = tq_claim(t, 30, 1);
    assert_string_equal(mq_lease_group(lease), group);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    lease = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease),
                        "gr\xc3\xbc\xc3\x9f"
                        "e-\xf0\x9f\x98\x80");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    free(group);
}

static void test_worker_id(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_lease *out = NULL;

    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, "", 30, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, "\xff", 30, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, "w\xc0\xaf", 30, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, "\xed\xa0\x80", 30, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, "\xe2\x82", 30, 0, &out, ERR));
    char *long_worker = repeat('w', MQ_WORKER_ID_MAX + 1);
    EXPECT_ARG_OUT(t, "mq_claim", "worker_id", out, mq_claim(t->queue, long_worker, 30, 0, &out, ERR));

    /* MQ_WORKER_ID_MAX bytes are accepted, and the token starts with the worker id. */
    long_worker[MQ_WORKER_ID_MAX] = '\0';
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_claim(t->queue, long_worker, 30, 0, &out, &err), err);
    assert_non_null(out);
    assert_string_equal(mq_lease_group(out), "g2");
    assert_memory_equal(mq_lease_token(out), long_worker, MQ_WORKER_ID_MAX);
    assert_int_equal(mq_lease_token(out)[MQ_WORKER_ID_MAX], ':');
    mq_lease_destroy(out);
    free(long_worker);
    mq_lease_destroy(lease);
}

static void test_worker_id_default(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e", 0);
    mq_error err;
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(t->queue, NULL, 30, 0, &lease, &err), err);
    assert_non_null(lease);

    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s:%ld:", host, (long)getpid());
    const char *token = mq_lease_token(lease);
    print_message("default token: %s\n", token);
    if (strncmp(token, prefix, strlen(prefix)) != 0) fail_msg("token \"%s\" does not start with \"%s\"", token, prefix);
    assert_true(strlen(token) > strlen(prefix));
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

static void test_event(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    int64_t seq = 5;

    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", NULL, 1, 0, &seq, ERR));
    assert_int_equal(seq, 0);
    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", NULL, MQ_EVENT_MAX + 1, 0, &seq, ERR));
    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", NULL, SIZE_MAX, 0, &seq, ERR));

    /* Too large: checked before a byte is read (lib/validate.cpp's check_event runs
     * before mq_publish looks at the bytes), so a one-byte buffer is enough. It is on
     * the heap so that valgrind or ASan would see a read past it. */
    char *tiny = malloc(1);
    assert_non_null(tiny);
    tiny[0] = 'x';
    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", tiny, (size_t)MQ_EVENT_MAX + 1, 0, &seq, ERR));
    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", tiny, SIZE_MAX, 0, &seq, ERR));
    EXPECT_ARG(t, "mq_publish", "event", mq_publish(t->queue, "g", tiny, (size_t)1 << 40, 4, &seq, ERR));
    free(tiny);
    mq_lease_destroy(lease);
}

static void test_event_empty_accepted(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "empty", NULL, 0, 0, &seq, &err), err);
    assert_true(seq > 0);
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "empty", "", 0, 0, NULL, &err), err);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), seq);
    size_t len = 77;
    (void)mq_lease_event(lease, &len);
    assert_int_equal(len, 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* One event of exactly MQ_EVENT_MAX bytes goes through publish and claim intact. */
static void test_event_max_accepted(void **state) {
    tq *t = *state;
    char *event = repeat('x', MQ_EVENT_MAX);
    event[0] = '<';
    event[MQ_EVENT_MAX - 1] = '>';
    mq_error err;
    int64_t seq = 0;
    mq_status st = mq_publish(t->queue, "big", event, MQ_EVENT_MAX, 0, &seq, &err);
    if (st != MQ_OK) fail_msg("publishing MQ_EVENT_MAX bytes: %s: %s", mq_status_name(st), err.message);
    mq_lease *lease = NULL;
    st = mq_claim(t->queue, "tester", 60, 0, &lease, &err);
    if (st != MQ_OK) fail_msg("claiming MQ_EVENT_MAX bytes: %s: %s", mq_status_name(st), err.message);
    assert_int_equal(mq_lease_seq(lease), seq);
    size_t len = 0;
    const void *got = mq_lease_event(lease, &len);
    assert_int_equal(len, MQ_EVENT_MAX);
    assert_true(memcmp(got, event, MQ_EVENT_MAX) == 0);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    free(event);
}

static void test_priority(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_lease *out = NULL;
    int64_t seq = 5;
    static const int bad[] = {-1, 5, INT_MIN, INT_MAX, 100};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        EXPECT_ARG(t, "mq_publish", "priority", mq_publish(t->queue, "g", "x", 1, bad[i], &seq, ERR));
        assert_int_equal(seq, 0);
        EXPECT_ARG_OUT(t, "mq_claim", "min_priority", out, mq_claim(t->queue, "w", 30, bad[i], &out, ERR));
    }
    /* The bounds are accepted. */
    tq_publish(t, "p0", "x", MQ_PRIORITY_MIN);
    tq_publish(t, "p4", "x", MQ_PRIORITY_MAX);
    out = tq_claim(t, 30, MQ_PRIORITY_MAX);
    assert_string_equal(mq_lease_group(out), "p4");
    mq_lease_destroy(out);
    mq_lease_destroy(lease);
}

static const double bad_seconds[] = {-1.0, -1e-300, NAN, -NAN, INFINITY, -INFINITY, 3.2000001e9, 1e300, DBL_MAX};

static void test_visibility_claim(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_lease *out = NULL;
    for (size_t i = 0; i < sizeof bad_seconds / sizeof *bad_seconds; i++)
        EXPECT_ARG_OUT(t, "mq_claim", "visibility_s", out, mq_claim(t->queue, "w", bad_seconds[i], 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "visibility_s", out, mq_claim(t->queue, "w", 0.0, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "visibility_s", out, mq_claim(t->queue, "w", -0.0, 0, &out, ERR));
    EXPECT_ARG_OUT(t, "mq_claim", "visibility_s", out, mq_claim(t->queue, NULL, NAN, 0, &out, ERR));
    /* The upper bound itself is accepted. */
    out = tq_claim(t, 3.2e9, 0);
    assert_string_equal(mq_lease_group(out), "g2");
    mq_lease_destroy(out);
    mq_lease_destroy(lease);
}

static void test_visibility_extend(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    for (size_t i = 0; i < sizeof bad_seconds / sizeof *bad_seconds; i++)
        EXPECT_ARG(t, "mq_extend", "visibility_s", mq_extend(t->queue, lease, bad_seconds[i], ERR));
    EXPECT_ARG(t, "mq_extend", "visibility_s", mq_extend(t->queue, lease, 0.0, ERR));
    EXPECT_ARG(t, "mq_extend", "visibility_s", mq_extend(t->queue, lease, -0.0, ERR));
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, lease, 3.2e9, &err), err);
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, lease, 0.5, &err), err);
    mq_lease_destroy(lease);
}

static void test_delay_nack(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    static const double bad[] = {-1.0, -1e-300, NAN, INFINITY, -INFINITY, 3.2000001e9, DBL_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        EXPECT_ARG(t, "mq_nack", "delay_s", mq_nack(t->queue, lease, bad[i], ERR));
    /* 0 is accepted: the same head comes back, attempts + 1. */
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, lease, 0.0, &err), err);
    mq_lease *again = tq_claim(t, 30, 2);
    assert_int_equal(mq_lease_seq(again), mq_lease_seq(lease));
    assert_int_equal(mq_lease_attempts(again), 2);
    mq_lease_destroy(again);
    mq_lease_destroy(lease);
}

static void test_db_name(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_queue *queue = NULL;
    char name[128];

    EXPECT_ARG_OUT(t, "mq_queue_new", "db_name", queue, mq_queue_new(t->client, "", "mq", &queue, ERR));

    /* 64 bytes: one more than MongoDB allows. */
    char *long_db = repeat('d', 64);
    memcpy(long_db, t->db, strlen(t->db));
    EXPECT_ARG_OUT(t, "mq_queue_new", "db_name", queue, mq_queue_new(t->client, long_db, "mq", &queue, ERR));
    assert_false(database_exists(t, long_db));

    static const char forbidden[] = "/\\. \"$*<>:|?";
    for (const char *c = forbidden; *c != '\0'; c++) {
        snprintf(name, sizeof name, "%sX%cY", t->db, *c);
        EXPECT_ARG_OUT(t, "mq_queue_new", "db_name", queue, mq_queue_new(t->client, name, "mq", &queue, ERR));
        assert_false(database_exists(t, name));
        /* and at the start */
        snprintf(name, sizeof name, "%c%s", *c, t->db);
        EXPECT_ARG_OUT(t, "mq_queue_new", "db_name", queue, mq_queue_new(t->client, name, NULL, &queue, ERR));
        assert_false(database_exists(t, name));
    }

    static const char *bad_utf8[] = {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"};
    for (size_t i = 0; i < sizeof bad_utf8 / sizeof *bad_utf8; i++) {
        snprintf(name, sizeof name, "%s%s", t->db, bad_utf8[i]);
        EXPECT_ARG_OUT(t, "mq_queue_new", "db_name", queue, mq_queue_new(t->client, name, "mq", &queue, ERR));
    }

    /* 63 bytes are accepted. */
    long_db[63] = '\0';
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, long_db, "mq", &queue, &err), err);
    assert_non_null(queue);
    mq_queue_destroy(queue);
    drop_database(t, long_db);
    free(long_db);
    mq_lease_destroy(lease);
}

static void test_prefix(void **state) {
    tq *t = *state;
    mq_lease *lease = seed(t);
    mq_queue *queue = NULL;
    char *collections = collection_names(t);

    static const char *bad[] = {"",          "a$b",     "$",    "mq$",        ".mq",         ".",
                                "system.mq", "system.", "\xff", "mq\xc0\xaf", "\xed\xa0\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        EXPECT_ARG_OUT(t, "mq_queue_new", "prefix", queue, mq_queue_new(t->client, t->db, bad[i], &queue, ERR));
        EXPECT_ARG_OUT(t, "mq_queue_new", "prefix", queue, mq_queue_new(t->client, NULL, bad[i], &queue, ERR));
    }

    /* "db.prefix_messages" one byte over MongoDB's 255. */
    size_t fits = 255 - strlen(t->db) - 1 - strlen("_messages");
    char *long_prefix = repeat('p', fits + 1);
    EXPECT_ARG_OUT(t, "mq_queue_new", "prefix", queue, mq_queue_new(t->client, t->db, long_prefix, &queue, ERR));
    char *huge_prefix = repeat('p', 100000);
    EXPECT_ARG_OUT(t, "mq_queue_new", "prefix", queue, mq_queue_new(t->client, t->db, huge_prefix, &queue, ERR));
    free(huge_prefix);

    char *after = collection_names(t);
    assert_string_equal(collections, after);
    free(after);

    /* Exactly 255 bytes pass the argument check (MongoDB 4.4+ allows them). The test
     * server (mongo-java-server) has a lower limit and may answer with an error: only
     * MQ_ERR_ARG would be wrong here. */
    long_prefix[fits] = '\0';
    mq_error err;
    queue = SENTINEL;
    mq_status st = mq_queue_new(t->client, t->db, long_prefix, &queue, &err);
    print_message("a prefix making a 255-byte namespace: %s %s\n", mq_status_name(st), err.message);
    if (st == MQ_ERR_ARG) fail_msg("a 255-byte namespace was refused as an argument: %s", err.message);
    if (st == MQ_OK) {
        assert_non_null(queue);
    } else {
        assert_int_equal(st, MQ_ERR_SERVER);
        assert_null(queue);
    }
    mq_queue_destroy(queue);
    free(long_prefix);
    free(collections);
    mq_lease_destroy(lease);
}

/* mq_queue_new(client, NULL, NULL): "mongomq"."mq_*". */
static void test_defaults_accepted(void **state) {
    tq *t = *state;
    int existed = database_exists(t, "mongomq");
    mq_error err;
    mq_queue *queue = NULL;
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, NULL, NULL, &queue, &err), err);
    assert_non_null(queue);
    mq_queue_destroy(queue);
    assert_true(database_exists(t, "mongomq"));
    if (!existed) drop_database(t, "mongomq");
}

/* A lease is only good for the queue (database + prefix) that made it. */
static void test_foreign_lease(void **state) {
    tq *t = *state;
    mq_error err;
    char other_db[80];
    snprintf(other_db, sizeof other_db, "%sb", t->db);
    assert_true(strlen(other_db) < sizeof t->db);

    mq_queue *q2 = NULL; /* same database, other prefix */
    mq_queue *q3 = NULL; /* other database, same prefix */
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, "other", &q2, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, other_db, t->prefix, &q3, &err), err);
    tq t2 = *t;
    t2.queue = q2;
    t2.prefix = "other";
    tq t3 = *t;
    t3.queue = q3;
    memcpy(t3.db, other_db, strlen(other_db) + 1);

    /* The same group with the same seq in all three queues. */
    tq *all[] = {t, &t2, &t3};
    mq_lease *leases[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tq_publish(all[i], "g", "one", 0), 1);
        assert_int_equal(tq_publish(all[i], "g", "two", 0), 2);
        leases[i] = tq_claim(all[i], 60, 0);
        assert_int_equal(mq_lease_seq(leases[i]), 1);
    }

    for (int q = 0; q < 3; q++) {
        for (int l = 0; l < 3; l++) {
            if (q == l) continue;
            char *others[3];
            for (int i = 0; i < 3; i++) others[i] = tq_snapshot(all[i]);
            EXPECT_ARG(all[q], "mq_ack", "lease", mq_ack(all[q]->queue, leases[l], ERR));
            EXPECT_ARG(all[q], "mq_nack", "lease", mq_nack(all[q]->queue, leases[l], 0, ERR));
            EXPECT_ARG(all[q], "mq_nack", "lease", mq_nack(all[q]->queue, leases[l], 5, ERR));
            EXPECT_ARG(all[q], "mq_extend", "lease", mq_extend(all[q]->queue, leases[l], 30, ERR));
            for (int i = 0; i < 3; i++) {
                char *now = tq_snapshot(all[i]);
                assert_string_equal(others[i], now);
                free(now);
                free(others[i]);
            }
        }
    }

    /* Each lease still works on its own queue. */
    for (int i = 0; i < 3; i++) {
        ASSERT_MQ(MQ_OK, mq_extend(all[i]->queue, leases[i], 30, &err), err);
        tq_ack(all[i], leases[i]);
        mq_lease_destroy(leases[i]);
    }
    mq_queue_destroy(q2);
    mq_queue_destroy(q3);
    drop_database(t, other_db);
}

int main(void) {
    mq_log_set_handler(log_errors_only, NULL);
#define SERVER_TEST(fn) cmocka_unit_test_setup_teardown(fn, tq_setup, tq_teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_log_handler),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_null_lease_and_destroy_null),
        cmocka_unit_test(test_client_new_bad),
        cmocka_unit_test(test_client_new_password_with_question_mark),
        cmocka_unit_test(test_unreachable_server),
        SERVER_TEST(test_null_handles),
        SERVER_TEST(test_group_id),
        SERVER_TEST(test_group_id_accepted),
        SERVER_TEST(test_worker_id),
        SERVER_TEST(test_worker_id_default),
        SERVER_TEST(test_event),
        SERVER_TEST(test_event_empty_accepted),
        SERVER_TEST(test_event_max_accepted),
        SERVER_TEST(test_priority),
        SERVER_TEST(test_visibility_claim),
        SERVER_TEST(test_visibility_extend),
        SERVER_TEST(test_delay_nack),
        SERVER_TEST(test_db_name),
        SERVER_TEST(test_prefix),
        SERVER_TEST(test_defaults_accepted),
        SERVER_TEST(test_foreign_lease),
    };
    return cmocka_run_group_tests_name("args", tests, NULL, NULL);
}
