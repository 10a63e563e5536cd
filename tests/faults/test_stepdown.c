/* Step-down errors from outside (issue 17): the library talks to the test server
 * through tests/faults/stepdown_proxy.py, which lets a chosen write through and, once
 * the server has applied it, answers it with the error a primary that steps down at
 * that moment gives (NotWritablePrimary, 10107). The cases of the issue, each with the
 * write applied and its reply replaced: publish.insert (the event must not be left
 * without its lock), ack.drop with a second event published into the group after the
 * claim (that event must stay claimable, the retried ack says MQ_OK), ack.release (the
 * retried ack says MQ_OK); and publish.insert answered with a code the library does
 * not know (96) but labelled RetryableWriteError. Each call must say MQ_ERR_CONNECT
 * with err.server_code the proxy's code, and the documents, read straight from the
 * server, must be what the write and what follows a lost reply left.
 *
 * The in-process fault hook (tests/test_lost_replies.c) fakes the error inside the
 * library; this test links the shared library and uses the C API only, so what is
 * tried is libmongoc's reading of a real server reply and the library's reading of
 * libmongoc's error.
 *
 * Every call goes through the proxy with retryWrites=false. The test server has no
 * sessions, so libmongoc would not retry a write anyway (retryable writes need them);
 * the option says so, and keeps it so should the server grow them. The checks go
 * straight to the server (MONGOMQ_TEST_URI): the raw libmongoc client of tests/support.c
 * and, for the racing publisher, a second mq_client.
 *
 * Environment (tests/faults/stepdown.sh sets it): MONGOMQ_TEST_URI, and
 * MONGOMQ_STEPDOWN_PROXY and MONGOMQ_STEPDOWN_CONTROL, the proxy's host:port and its
 * control port's. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the proxy's control port: one line out, one line back ---- */

static char g_proxy[64];
static char g_control_host[64];
static int g_control_port;

static void control(const char *line, char *answer, size_t size) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("control socket: cannot make one");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_control_port);
    inet_pton(AF_INET, g_control_host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        fail_msg("the proxy's control port %s:%d does not answer", g_control_host, g_control_port);
    }
    char out[256];
    int n = snprintf(out, sizeof out, "%s\n", line);
    if (write(fd, out, (size_t)n) != n) {
        close(fd);
        fail_msg("control: could not send \"%s\"", line);
    }
    size_t got = 0;
    ssize_t r;
    while (got < size - 1 && (r = read(fd, answer + got, 1)) == 1 && answer[got] != '\n') got++;
    answer[got] = '\0';
    close(fd);
}

/* The next write named `command` on a collection ending with `suffix` is applied by
 * the server and answered with `code` (and the label, when not NULL). */
static void arm(const char *command, const char *suffix, int code, const char *code_name, const char *label) {
    char line[256], answer[128];
    snprintf(line, sizeof line, "arm %s %s 1 %d %s%s%s", command, suffix, code, code_name, label ? " " : "",
             label ? label : "");
    control(line, answer, sizeof answer);
    if (strcmp(answer, "armed") != 0) fail_msg("proxy: \"%s\" answered \"%s\"", line, answer);
}

/* Replies the proxy replaced since it started. */
static int replaced(void) {
    char answer[128];
    int n = -1, left = -1;
    control("count", answer, sizeof answer);
    if (sscanf(answer, "replaced %d left %d", &n, &left) != 2) fail_msg("proxy: count answered \"%s\"", answer);
    return n;
}

/* ---- setup: the queue through the proxy, the checks straight to the server ---- */

#define PROXY_OPTS                                                                             \
  "retryWrites=false&serverSelectionTimeoutMS=5000&socketTimeoutMS=5000&connectTimeoutMS=2000" \
  "&heartbeatFrequencyMS=500"

/* The same queue straight to the server (tq_setup's handles, kept): the other
 * publisher of the racing case. */
static mq_client *g_direct;
static mq_queue *g_dq;

static int group_setup(void **state) {
    (void)state;
    const char *proxy = getenv("MONGOMQ_STEPDOWN_PROXY");
    const char *ctl = getenv("MONGOMQ_STEPDOWN_CONTROL");
    if (proxy == NULL || ctl == NULL || getenv("MONGOMQ_TEST_URI") == NULL) {
        fprintf(stderr,
                "MONGOMQ_TEST_URI, MONGOMQ_STEPDOWN_PROXY and MONGOMQ_STEPDOWN_CONTROL must be set "
                "(tests/faults/stepdown.sh)\n");
        return -1;
    }
    const char *colon = strrchr(ctl, ':');
    if (colon == NULL || (size_t)(colon - ctl) >= sizeof g_control_host || strlen(proxy) >= sizeof g_proxy) return -1;
    memcpy(g_control_host, ctl, (size_t)(colon - ctl));
    g_control_host[colon - ctl] = '\0';
    g_control_port = atoi(colon + 1);
    snprintf(g_proxy, sizeof g_proxy, "%s", proxy);
    return 0;
}

static int setup(void **state) {
    /* tq_setup makes the database name, the raw client and a queue straight to the
     * server; that queue stays as the other publisher, and the test's own handles are
     * replaced by ones through the proxy. */
    int rc = tq_setup(state);
    if (rc != 0) return rc;
    tq *t = *state;
    g_direct = t->client;
    g_dq = t->queue;
    char uri[256];
    snprintf(uri, sizeof uri, "mongodb://%s/?" PROXY_OPTS, g_proxy);
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(uri, &t->client, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, t->prefix, &t->queue, &err), err);
    /* No automatic repair: it would hide an event left without its lock. */
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(t->queue, 0, &err), err);
    return 0;
}

static int teardown(void **state) {
    char answer[64];
    control("disarm", answer, sizeof answer); /* what a failed test left armed */
    mq_queue_destroy(g_dq);
    mq_client_destroy(g_direct);
    g_dq = NULL;
    g_direct = NULL;
    return tq_teardown(state);
}

/* ---- checks ---- */

static const char *text_of(const mq_lease *lease, char *buf, size_t size) {
    return lease ? tq_event_text(lease, buf, size) : "-";
}

/* The call under the step-down: "outcome unknown" with the proxy's code, the message
 * naming the command, and exactly one reply replaced since `before`. */
static void expect_unknown(const char *what, mq_status st, const mq_error *err, int code, const char *command,
                           int before) {
    if (st != MQ_ERR_CONNECT)
        fail_msg(
            "%s: %s (server_code %d: %s), expected MQ_ERR_CONNECT: the write was applied, its outcome "
            "is unknown to the caller",
            what, mq_status_name(st), err->server_code, err->message);
    assert_int_equal(err->server_code, code);
    if (strstr(err->message, command) == NULL)
        fail_msg("%s: the message does not name %s: %s", what, command, err->message);
    assert_int_equal(replaced() - before, 1);
}

/* publish.insert applied and answered with `code`: the publish must still lock the
 * group before it reports the error, so a claim right after gets the event. */
static void publish_insert_answered(tq *t, int code, const char *code_name, const char *label) {
    mq_error err, cerr;
    int before = replaced();
    arm("insert", "_messages", code, code_name, label);
    mq_status st = mq_publish(t->queue, "G", "e", 1, 0, NULL, &err);
    int64_t in = tq_count(t, "messages", "{\"group_id\": \"G\", \"event\": \"e\"}");
    int64_t locked = tq_count(t, "locks", "{\"_id\": \"G\", \"token\": null}");
    mq_lease *lease = NULL;
    mq_status cst = mq_claim(t->queue, "w", 30, 0, &lease, &cerr);
    char buf[16];
    printf(
        "    publish.insert answered %d%s%s: %s (server_code %d: %s); on the server: events %lld, lock %lld; "
        "a claim right after: %s %s\n",
        code, label ? " + " : "", label ? label : "", mq_status_name(st), err.server_code, err.message, (long long)in,
        (long long)locked, mq_status_name(cst), text_of(lease, buf, sizeof buf));
    expect_unknown("publish", st, &err, code, "publish.insert", before);
    assert_int_equal(in, 1);     /* the server applied the insert */
    assert_int_equal(locked, 1); /* and the publish made the lock after the unknown outcome */
    if (cst != MQ_OK)
        fail_msg("a claim right after the publish: %s (%s): the event is stranded", mq_status_name(cst), cerr.message);
    assert_string_equal(buf, "e");
    assert_int_equal(mq_lease_attempts(lease), 1);
    bson_t *doc = tq_find_one(t, "messages", "{\"event\": \"e\"}");
    assert_non_null(doc);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, doc, "_id"));
    assert_int_equal(mq_lease_seq(lease), bson_iter_as_int64(&it));
    bson_destroy(doc);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    uint64_t runs = 1;
    mq_queue_repair_counts(t->queue, &runs, NULL);
    assert_int_equal(runs, 0); /* no automatic repair healed it */
}

static void publish_insert_not_writable_primary(void **state) {
    publish_insert_answered(*state, 10107, "NotWritablePrimary", NULL);
}

/* A code the library does not know as a step-down's: the label alone makes the
 * outcome unknown. */
static void publish_insert_retryable_write_error_label(void **state) {
    publish_insert_answered(*state, 96, "OperationFailed", "RetryableWriteError");
}

/* A worker holds G with its only event e1; another publisher adds e2 (its insert
 * lands, its lock upsert finds the lock: nothing to make); the ack's drop of the lock
 * is applied and answered NotWritablePrimary. The ack must re-check and re-lock for
 * e2 before it reports the error, and the retried ack must say MQ_OK (its own drop). */
static void ack_drop_with_a_publish_racing(void **state) {
    tq *t = *state;
    mq_error err, rerr, cerr;
    int64_t e1 = tq_publish(t, "G", "e1", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e1);
    int64_t e2 = 0;
    ASSERT_MQ(MQ_OK, mq_publish(g_dq, "G", "e2", 2, 0, &e2, &err), err);
    char held[160];
    snprintf(held, sizeof held, "{\"_id\": \"G\", \"token\": \"%s\"}", mq_lease_token(lease));
    assert_int_equal(tq_count(t, "locks", held), 1); /* still ours: the ack takes the drop path */

    int before = replaced();
    arm("delete", "_locks", 10107, "NotWritablePrimary", NULL);
    mq_status st = mq_ack(t->queue, lease, &err);
    char filter[64];
    snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)e1);
    int64_t e1_left = tq_count(t, "messages", filter);
    snprintf(filter, sizeof filter, "{\"_id\": %lld}", (long long)e2);
    int64_t e2_left = tq_count(t, "messages", filter);
    int64_t locked = tq_count(t, "locks", "{\"_id\": \"G\", \"token\": null}");
    mq_status rst = mq_ack(t->queue, lease, &rerr);
    mq_lease *next = NULL;
    mq_status cst = mq_claim(t->queue, "w", 30, 0, &next, &cerr);
    char buf[16];
    printf(
        "    ack.drop answered 10107: %s (server_code %d: %s); on the server: e1 %lld, e2 %lld, G's free lock "
        "%lld; the retried ack: %s; a claim: %s %s\n",
        mq_status_name(st), err.server_code, err.message, (long long)e1_left, (long long)e2_left, (long long)locked,
        mq_status_name(rst), mq_status_name(cst), text_of(next, buf, sizeof buf));
    expect_unknown("ack", st, &err, 10107, "ack.drop", before);
    assert_int_equal(e1_left, 0); /* ack.delete went first */
    assert_int_equal(e2_left, 1);
    assert_int_equal(locked, 1); /* the drop was applied; the re-check made e2's lock */
    if (rst != MQ_OK) fail_msg("the retried ack: %s (%s), expected MQ_OK", mq_status_name(rst), rerr.message);
    mq_lease_destroy(lease);
    if (cst != MQ_OK) fail_msg("a claim after the ack: %s (%s): e2 is stranded", mq_status_name(cst), cerr.message);
    assert_int_equal(mq_lease_seq(next), e2);
    assert_int_equal(mq_lease_attempts(next), 1);
    tq_ack(t, next);
    mq_lease_destroy(next);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

/* G has e1 and e2; the ack of e1 releases the lock (ack.release, an update) and the
 * server's reply is replaced: the release was applied, so the retried ack finds the
 * token cleared and must say MQ_OK, not MQ_LEASE_LOST. */
static void ack_release(void **state) {
    tq *t = *state;
    mq_error err, rerr;
    int64_t e1 = tq_publish(t, "G", "e1", 0);
    int64_t e2 = tq_publish(t, "G", "e2", 0);
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), e1);

    int before = replaced();
    arm("update", "_locks", 10107, "NotWritablePrimary", NULL);
    mq_status st = mq_ack(t->queue, lease, &err);
    char filter[96];
    snprintf(filter, sizeof filter, "{\"_id\": \"G\", \"token\": null, \"head\": %lld}", (long long)e2);
    int64_t released = tq_count(t, "locks", filter);
    int64_t total = tq_count(t, "messages", "{}");
    mq_status rst = mq_ack(t->queue, lease, &rerr);
    printf(
        "    ack.release answered 10107: %s (server_code %d: %s); on the server: events %lld, G released to "
        "e2 %lld; the retried ack: %s\n",
        mq_status_name(st), err.server_code, err.message, (long long)total, (long long)released, mq_status_name(rst));
    expect_unknown("ack", st, &err, 10107, "ack.release", before);
    assert_int_equal(total, 1);    /* e1 deleted, e2 waits */
    assert_int_equal(released, 1); /* the release was applied */
    if (rst != MQ_OK) fail_msg("the retried ack: %s (%s), expected MQ_OK", mq_status_name(rst), rerr.message);
    mq_lease_destroy(lease);
    mq_lease *next = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(next), e2);
    assert_int_equal(mq_lease_attempts(next), 1);
    tq_ack(t, next);
    mq_lease_destroy(next);
    tq_expect_empty(t, 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(publish_insert_not_writable_primary, setup, teardown),
        cmocka_unit_test_setup_teardown(ack_drop_with_a_publish_racing, setup, teardown),
        cmocka_unit_test_setup_teardown(ack_release, setup, teardown),
        cmocka_unit_test_setup_teardown(publish_insert_retryable_write_error_label, setup, teardown),
    };
    return cmocka_run_group_tests_name("stepdown", tests, group_setup, NULL);
}
