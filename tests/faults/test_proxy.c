/* Faults from outside (issue 14): the library talks to the test server through
 * toxiproxy, whose HTTP API the test drives to reset connections, cut replies after
 * the server applied a command, add latency beyond socketTimeoutMS, black-hole the
 * traffic and cut the network, then bring it back. Checks: every call under a fault
 * fails with MQ_ERR_CONNECT and a message naming the command, the same client and
 * queue handles work again once the network is back, no event published with MQ_OK
 * is lost (each is delivered at least once and the queue ends empty: at-least-once),
 * and no group is ever held by two live leases. One test cuts the reply of a chosen
 * command of a call (the fault hook of the static test build adds the toxic just
 * before the library sends it): publish's insert, applied, its reply lost.
 *
 * Environment (tests/faults/run.sh sets it): MONGOMQ_TEST_URI (the server, reached
 * directly for the checks), MONGOMQ_TOXIPROXY (the API's host:port) and
 * MONGOMQ_PROXY_PORT (a free loopback port the test's proxy listens on). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fault.hpp"

/* ---- a tiny HTTP client for toxiproxy's API ---- */

static char g_api_host[64] = "127.0.0.1";
static int g_api_port;
static char g_proxy[64];
static int g_proxy_port;
static char g_upstream[128];

static int http(const char *method, const char *path, const char *body) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)g_api_port);
    inet_pton(AF_INET, g_api_host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    char req[2048];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                     method, path, g_api_host, blen, body ? body : "");
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    char resp[4096];
    size_t got = 0;
    ssize_t r;
    while (got < sizeof resp - 1 && (r = read(fd, resp + got, sizeof resp - 1 - got)) > 0) got += (size_t)r;
    resp[got] = '\0';
    close(fd);
    int code = -1;
    if (sscanf(resp, "HTTP/1.%*d %d", &code) != 1) return -1;
    if (code >= 300 && strcmp(method, "GET") != 0)
        fprintf(stderr, "toxiproxy %s %s -> %d: %s\n", method, path, code, resp);
    return code;
}

/* Adds toxic `name` of `type` on `stream` with JSON attributes. */
static void toxic_add(const char *name, const char *type, const char *stream, const char *attributes) {
    char path[128], body[512];
    snprintf(path, sizeof path, "/proxies/%s/toxics", g_proxy);
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"type\":\"%s\",\"stream\":\"%s\",\"toxicity\":1.0,\"attributes\":%s}", name, type,
             stream, attributes);
    int code = http("POST", path, body);
    if (code != 200) fail_msg("adding toxic %s (%s): HTTP %d", name, type, code);
}

static void toxic_remove(const char *name) {
    char path[128];
    snprintf(path, sizeof path, "/proxies/%s/toxics/%s", g_proxy, name);
    int code = http("DELETE", path, NULL);
    if (code != 204 && code != 200) fail_msg("removing toxic %s: HTTP %d", name, code);
}

static void proxy_enabled(int on) {
    char path[128];
    snprintf(path, sizeof path, "/proxies/%s", g_proxy);
    int code = http("POST", path, on ? "{\"enabled\":true}" : "{\"enabled\":false}");
    if (code != 200) fail_msg("proxy enabled=%d: HTTP %d", on, code);
}

/* ---- setup: the queue goes through the proxy, the checks go straight to the server ---- */

#define PROXY_OPTS "socketTimeoutMS=2000&connectTimeoutMS=1000&serverSelectionTimeoutMS=2000&heartbeatFrequencyMS=500"

static int group_setup(void **state) {
    (void)state;
    const char *api = getenv("MONGOMQ_TOXIPROXY");
    const char *port = getenv("MONGOMQ_PROXY_PORT");
    if (api == NULL || port == NULL) {
        fprintf(stderr, "MONGOMQ_TOXIPROXY and MONGOMQ_PROXY_PORT must be set (tests/faults/run.sh)\n");
        return -1;
    }
    const char *colon = strrchr(api, ':');
    if (colon == NULL || (size_t)(colon - api) >= sizeof g_api_host) return -1;
    memcpy(g_api_host, api, (size_t)(colon - api));
    g_api_host[colon - api] = '\0';
    g_api_port = atoi(colon + 1);
    g_proxy_port = atoi(port);
    const char *uri = getenv("MONGOMQ_TEST_URI");
    if (uri == NULL || strncmp(uri, "mongodb://", 10) != 0) return -1;
    size_t hl = strcspn(uri + 10, "/?,");
    if (hl >= sizeof g_upstream) return -1;
    memcpy(g_upstream, uri + 10, hl);
    g_upstream[hl] = '\0';
    snprintf(g_proxy, sizeof g_proxy, "mq_%d", (int)getpid());
    char body[512];
    snprintf(body, sizeof body, "{\"name\":\"%s\",\"listen\":\"127.0.0.1:%d\",\"upstream\":\"%s\",\"enabled\":true}",
             g_proxy, g_proxy_port, g_upstream);
    int code = http("POST", "/proxies", body);
    if (code != 201) {
        fprintf(stderr, "creating the proxy: HTTP %d\n", code);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "/proxies/%s", g_proxy);
    http("DELETE", path, NULL);
    return 0;
}

static char *proxy_uri(void) {
    char *u = malloc(512);
    assert_non_null(u);
    snprintf(u, 512, "mongodb://127.0.0.1:%d/?" PROXY_OPTS, g_proxy_port);
    return u;
}

static int setup(void **state) {
    /* tq_setup makes the database name and the raw client (straight to the server);
     * then the queue handles are replaced by ones that go through the proxy. */
    int rc = tq_setup(state);
    tq *t = *state;
    mq_queue_destroy(t->queue);
    mq_client_destroy(t->client);
    char *uri = proxy_uri();
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(uri, &t->client, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, t->prefix, &t->queue, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(t->queue, 0.3, &err), err);
    free(uri);
    return rc;
}

static int teardown(void **state) {
    char path[128];
    snprintf(path, sizeof path, "/proxies/%s", g_proxy);
    http("POST", path, "{\"enabled\":true}");
    /* remove whatever toxic a failed test left */
    const char *names[] = {"cut", "slow", "hole", "close", "chaos"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char p[192];
        snprintf(p, sizeof p, "/proxies/%s/toxics/%s", g_proxy, names[i]);
        int fd_code = http("GET", p, NULL);
        if (fd_code == 200) http("DELETE", p, NULL);
    }
    return tq_teardown(state);
}

/* ---- checks ---- */

/* The error of a call under a fault: MQ_ERR_CONNECT whose message names the command
 * ("publish.seq: ...") and says something. */
static void expect_connect_error(mq_status st, const mq_error *err, const char *what) {
    if (st != MQ_ERR_CONNECT)
        fail_msg("%s under a fault returned %s (%s), expected MQ_ERR_CONNECT", what, mq_status_name(st), err->message);
    const char *colon = strstr(err->message, ": ");
    if (colon == NULL || colon == err->message || strlen(colon) < 6 || strchr(err->message, '.') == NULL ||
        strchr(err->message, '.') > colon)
        fail_msg("%s: unclear MQ_ERR_CONNECT message \"%s\"", what, err->message);
    printf("    %s -> MQ_ERR_CONNECT: %s\n", what, err->message);
}

/* Drains the queue through t->queue (the proxy, network back) and checks that each of
 * the `n` payloads in `must` is delivered at least once, that nothing else but the
 * `maybe` payloads shows up, and that the queue ends empty. Bounded: 20 s. */
static void drain_and_check(tq *t, const char **must, int n, const char **maybe, int nmaybe) {
    int *seen = calloc((size_t)(n + 1), sizeof(int));
    double until = tq_monotonic() + 40;
    int empties = 0;
    while (tq_monotonic() < until) {
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim(t->queue, "drainer", 1.0, 0, &lease, &err);
        if (st == MQ_ERR_CONNECT) { /* a slow server (a loaded CI machine): try again */
            fprintf(stderr, "    (drain: %s; again)\n", err.message);
            tq_sleep(0.2);
            continue;
        }
        if (st == MQ_EMPTY) {
            if (tq_count(t, "messages", "{}") == 0 && ++empties >= 2) break;
            tq_sleep(0.1);
            continue;
        }
        ASSERT_MQ(MQ_OK, st, err);
        char text[256];
        tq_event_text(lease, text, sizeof text);
        int known = 0;
        for (int i = 0; i < n; i++)
            if (strcmp(text, must[i]) == 0) seen[i]++, known = 1;
        for (int i = 0; i < nmaybe; i++)
            if (strcmp(text, maybe[i]) == 0) known = 1;
        if (!known) fail_msg("delivered an event never published: %s", text);
        mq_status ack = MQ_ERR_CONNECT;
        for (int k = 0; k < 20 && ack == MQ_ERR_CONNECT; k++) ack = mq_ack(t->queue, lease, &err);
        if (ack != MQ_OK && ack != MQ_LEASE_LOST) ASSERT_MQ(MQ_OK, ack, err);
        mq_lease_destroy(lease);
    }
    for (int i = 0; i < n; i++)
        if (seen[i] < 1) fail_msg("event %s was published (MQ_OK) and never delivered: lost", must[i]);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    free(seen);
}

static mq_lease *claim_ok(tq *t, double visibility) {
    /* the network just came back: the pool may need a heartbeat to see the server */
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st = MQ_ERR_CONNECT;
    for (int i = 0; i < 100 && st != MQ_OK; i++) {
        st = mq_claim(t->queue, "w", visibility, 0, &lease, &err);
        if (st != MQ_OK) tq_sleep(0.1);
    }
    ASSERT_MQ(MQ_OK, st, err);
    return lease;
}

static int64_t publish_ok(tq *t, const char *group, const char *text) {
    mq_error err;
    int64_t seq = 0;
    mq_status st = MQ_ERR_CONNECT;
    for (int i = 0; i < 40 && st == MQ_ERR_CONNECT; i++) {
        st = mq_publish(t->queue, group, text, strlen(text), 0, &seq, &err);
        if (st == MQ_ERR_CONNECT) tq_sleep(0.1);
    }
    ASSERT_MQ(MQ_OK, st, err);
    return seq;
}

/* The toxic that lets the request through and kills the reply: the server applies the
 * command, the client sees a reset. Alternates between reset_peer and limit_data. */
static int g_kind;
static void cut_replies(void) {
    if (g_kind++ % 2 == 0)
        toxic_add("cut", "reset_peer", "downstream", "{\"timeout\":0}");
    else
        toxic_add("cut", "limit_data", "downstream", "{\"bytes\":1}");
}

/* ---- one call at a time: the reply of each operation is cut ---- */

static void publish_reply_cut(void **state) {
    tq *t = *state;
    for (int round = 0; round < 2; round++) {
        publish_ok(t, "G", round ? "a1" : "a0");
        cut_replies();
        mq_error err;
        mq_status st = mq_publish(t->queue, "G", "lost?", 5, 0, NULL, &err);
        expect_connect_error(st, &err, "publish");
        toxic_remove("cut");
        ASSERT_MQ(MQ_OK, MQ_OK, err);
    }
    publish_ok(t, "G", "after");
    const char *must[] = {"a0", "a1", "after"}, *maybe[] = {"lost?"};
    drain_and_check(t, must, 3, maybe, 1);
}

/* The fault hook: just before the library sends g_cut_command, the replies are cut
 * (limit_data: the request goes through, the reply dies after 1 byte), once. */
static const char *g_cut_command;
static int g_cut_done;
static int cut_before(const char *command, void *ctx) {
    (void)ctx;
    if (!g_cut_done && g_cut_command != NULL && strcmp(command, g_cut_command) == 0) {
        g_cut_done = 1;
        toxic_add("cut", "limit_data", "downstream", "{\"bytes\":1}");
    }
    return 0;
}

/* publish.seq answered, then the reply of publish.insert is lost: the event is in the
 * messages collection (the server applied the insert) and the call says
 * MQ_ERR_CONNECT. Its lock may be missing (publish.lock's tries meet the cut too):
 * the event must still be delivered once the network is back, by its lock or by the
 * automatic repair of an empty claim. */
static void publish_insert_reply_cut(void **state) {
    tq *t = *state;
    mq_error err;
    publish_ok(t, "G", "a0");
    ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(t->queue, 0.5, &err), err);
    g_cut_command = "publish.insert";
    g_cut_done = 0;
    mongomq_fault_set(cut_before, NULL);
    mq_status st = mq_publish(t->queue, "H", "inserted", 8, 0, NULL, &err);
    mongomq_fault_set(NULL, NULL);
    assert_int_equal(g_cut_done, 1);
    toxic_remove("cut");
    expect_connect_error(st, &err, "publish");
    if (strstr(err.message, "publish.insert") == NULL && strstr(err.message, "publish.lock") == NULL)
        fail_msg("the error names neither the insert nor the lock: %s", err.message);
    /* straight from the server: the insert was applied */
    assert_int_equal(tq_count(t, "messages", "{\"event\": \"inserted\"}"), 1);
    int locked = (int)tq_count(t, "locks", "{\"_id\": \"H\"}");
    printf("    publish: %s; the event is in, its lock %s\n", err.message,
           locked ? "too (publish.lock got through)" : "missing (the repair must make it)");
    const char *must[] = {"a0", "inserted"};
    drain_and_check(t, must, 2, NULL, 0);
    uint64_t runs = 0, fixed = 0;
    mq_queue_repair_counts(t->queue, &runs, &fixed);
    printf("    drained: both delivered; automatic repairs %llu, locks they made %llu\n", (unsigned long long)runs,
           (unsigned long long)fixed);
    if (!locked) assert_true(fixed >= 1);
}

static void claim_reply_cut(void **state) {
    tq *t = *state;
    for (int round = 0; round < 2; round++) {
        const char *text = round ? "c1" : "c0";
        publish_ok(t, "G", text);
        cut_replies();
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim(t->queue, "w", 1.0, 0, &lease, &err);
        expect_connect_error(st, &err, "claim");
        assert_null(lease);
        toxic_remove("cut");
        /* The lease may have been applied and its reply lost: the group is then held
         * until the 1 s runs out, and the head is redelivered after it. */
        lease = claim_ok(t, 5.0);
        char buf[64];
        assert_string_equal(tq_event_text(lease, buf, sizeof buf), text);
        printf("    claim after the network came back: attempts %d\n", mq_lease_attempts(lease));
        tq_ack(t, lease);
        mq_lease_destroy(lease);
    }
    drain_and_check(t, NULL, 0, NULL, 0);
}

static void ack_reply_cut(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "k1");
    publish_ok(t, "G", "k2");
    publish_ok(t, "H", "k3");
    char acked[2][8];
    for (int round = 0; round < 2; round++) {
        mq_lease *lease = claim_ok(t, 10.0);
        tq_event_text(lease, acked[round], sizeof acked[round]);
        cut_replies();
        mq_error err;
        expect_connect_error(mq_ack(t->queue, lease, &err), &err, "ack");
        toxic_remove("cut");
        mq_status st = MQ_ERR_CONNECT;
        for (int i = 0; i < 40 && st == MQ_ERR_CONNECT; i++) {
            st = mq_ack(t->queue, lease, &err);
            if (st == MQ_ERR_CONNECT) tq_sleep(0.1);
        }
        if (st != MQ_OK && st != MQ_LEASE_LOST) fail_msg("ack retry: %s: %s", mq_status_name(st), err.message);
        mq_lease_destroy(lease);
    }
    /* the event neither lease carried must still be delivered; the acked ones may come
     * again only if their delete did not apply */
    const char *all[] = {"k1", "k2", "k3"}, *must[1] = {NULL};
    for (int i = 0; i < 3; i++)
        if (strcmp(all[i], acked[0]) != 0 && strcmp(all[i], acked[1]) != 0) must[0] = all[i];
    assert_non_null(must[0]);
    drain_and_check(t, must, 1, all, 3);
}

static void nack_reply_cut(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "n1");
    mq_lease *lease = claim_ok(t, 10.0);
    cut_replies();
    mq_error err;
    expect_connect_error(mq_nack(t->queue, lease, 0, &err), &err, "nack");
    toxic_remove("cut");
    mq_status st = MQ_ERR_CONNECT;
    for (int i = 0; i < 40 && st == MQ_ERR_CONNECT; i++) {
        st = mq_nack(t->queue, lease, 0, &err);
        if (st == MQ_ERR_CONNECT) tq_sleep(0.1);
    }
    if (st != MQ_OK && st != MQ_LEASE_LOST) fail_msg("nack retry: %s: %s", mq_status_name(st), err.message);
    mq_lease_destroy(lease);
    const char *must[] = {"n1"};
    drain_and_check(t, must, 1, NULL, 0);
}

static void extend_reply_cut(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "x1");
    mq_lease *lease = claim_ok(t, 10.0);
    cut_replies();
    mq_error err;
    expect_connect_error(mq_extend(t->queue, lease, 20, &err), &err, "extend");
    toxic_remove("cut");
    mq_status st = MQ_ERR_CONNECT;
    for (int i = 0; i < 40 && st == MQ_ERR_CONNECT; i++) {
        st = mq_extend(t->queue, lease, 20, &err);
        if (st == MQ_ERR_CONNECT) tq_sleep(0.1);
    }
    ASSERT_MQ(MQ_OK, st, err);
    /* the group is held: nobody else gets it */
    mq_lease *other = NULL;
    ASSERT_MQ(MQ_EMPTY, mq_claim(t->queue, "other", 5, 0, &other, &err), err);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    drain_and_check(t, NULL, 0, NULL, 0);
}

typedef struct {
    tq *t;
    mq_status st;
    mq_error err;
    mq_lease *lease;
    double took;
} waiter;

static void *wait_main(void *p) {
    waiter *w = p;
    double t0 = tq_monotonic();
    w->st = mq_claim_wait(w->t->queue, "waiter", 1.0, 0, 3.0, &w->lease, &w->err);
    w->took = tq_monotonic() - t0;
    return NULL;
}

static void waiting_claim_cut(void **state) {
    tq *t = *state;
    /* a second client straight to the server publishes while the waiter's network is cut */
    mq_client *direct = NULL;
    mq_queue *dq = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_client_new(test_uri(), &direct, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(direct, t->db, t->prefix, &dq, &err), err);
    for (int round = 0; round < 2; round++) {
        waiter w = {.t = t};
        pthread_t th;
        pthread_create(&th, NULL, wait_main, &w);
        tq_sleep(0.3);
        if (round == 0)
            cut_replies();
        else
            toxic_add("cut", "timeout", "upstream", "{\"timeout\":0}");
        const char *text = round ? "w1" : "w0";
        ASSERT_MQ(MQ_OK, mq_publish(dq, "G", text, 2, 0, NULL, &w.err), w.err);
        pthread_join(th, NULL);
        toxic_remove("cut");
        if (w.took > 20) fail_msg("the waiting claim took %.1f s under a fault (timeout 3 s)", w.took);
        printf("    waiting claim under a fault: %s after %.2f s (%s)\n", mq_status_name(w.st), w.took,
               w.st == MQ_OK ? "-" : w.err.message);
        if (w.st == MQ_OK) {
            tq_ack(t, w.lease);
            mq_lease_destroy(w.lease);
        } else if (w.st != MQ_EMPTY) {
            expect_connect_error(w.st, &w.err, "claim_wait");
            /* the same handle waits again and gets the event (after the lost lease's 1 s) */
            mq_lease *lease = NULL;
            mq_status st = MQ_ERR_CONNECT;
            for (int i = 0; i < 20 && st == MQ_ERR_CONNECT; i++)
                st = mq_claim_wait(t->queue, "waiter", 5, 0, 5, &lease, &err);
            ASSERT_MQ(MQ_OK, st, err);
            char buf[16];
            assert_string_equal(tq_event_text(lease, buf, sizeof buf), text);
            tq_ack(t, lease);
            mq_lease_destroy(lease);
        }
    }
    mq_queue_destroy(dq);
    mq_client_destroy(direct);
    drain_and_check(t, NULL, 0, NULL, 0);
}

/* ---- the network: latency, black hole, slow close, cut ---- */

static void timed_publish_fails(tq *t, const char *what) {
    mq_error err;
    double t0 = tq_monotonic();
    mq_status st = mq_publish(t->queue, "G", "maybe", 5, 0, NULL, &err);
    double took = tq_monotonic() - t0;
    expect_connect_error(st, &err, what);
    if (took > 15) fail_msg("%s: the call took %.1f s (socketTimeoutMS 2000)", what, took);
}

static void latency_above_socket_timeout(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "l0");
    toxic_add("slow", "latency", "downstream", "{\"latency\":5000,\"jitter\":0}");
    timed_publish_fails(t, "publish with 5 s latency");
    mq_lease *lease = NULL;
    mq_error err;
    expect_connect_error(mq_claim(t->queue, "w", 1, 0, &lease, &err), &err, "claim with 5 s latency");
    toxic_remove("slow");
    publish_ok(t, "G", "l1");
    const char *must[] = {"l0", "l1"}, *maybe[] = {"maybe"};
    drain_and_check(t, must, 2, maybe, 1);
}

static void black_hole_then_back(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "b0");
    toxic_add("hole", "timeout", "upstream", "{\"timeout\":0}");
    timed_publish_fails(t, "publish into a black hole");
    mq_lease *lease = NULL;
    mq_error err;
    expect_connect_error(mq_claim(t->queue, "w", 1, 0, &lease, &err), &err, "claim into a black hole");
    toxic_remove("hole");
    publish_ok(t, "G", "b1");
    const char *must[] = {"b0", "b1"}, *maybe[] = {"maybe"};
    drain_and_check(t, must, 2, maybe, 1);
}

static void slow_close_and_reset(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "s0");
    toxic_add("close", "slow_close", "downstream", "{\"delay\":1500}");
    toxic_add("cut", "reset_peer", "downstream", "{\"timeout\":0}");
    timed_publish_fails(t, "publish with a slow close");
    toxic_remove("cut");
    publish_ok(t, "G", "s1");
    toxic_remove("close");
    const char *must[] = {"s0", "s1"}, *maybe[] = {"maybe"};
    drain_and_check(t, must, 2, maybe, 1);
}

static void network_cut_then_back(void **state) {
    tq *t = *state;
    publish_ok(t, "G", "n0");
    proxy_enabled(0);
    timed_publish_fails(t, "publish with the network cut");
    mq_lease *lease = NULL;
    mq_error err;
    expect_connect_error(mq_claim(t->queue, "w", 1, 0, &lease, &err), &err, "claim with the network cut");
    int64_t dead = 0;
    expect_connect_error(mq_dead_count(t->queue, &dead, &err), &err, "dead count with the network cut");
    proxy_enabled(1);
    publish_ok(t, "G", "n1");
    const char *must[] = {"n0", "n1"}, *maybe[] = {"maybe"};
    drain_and_check(t, must, 2, maybe, 1);
}

/* ---- several workers draining while faults fire ---- */

#define GROUPS 12
#define PER_GROUP 12
#define WORKERS 4
#define LATE 40

typedef struct {
    tq *t;
    mq_queue *queues[WORKERS];
    pthread_mutex_t mu;
    /* per group: the live lease we know of */
    char token[GROUPS][64];
    double deadline[GROUPS];
    int releasing[GROUPS];
    int double_leases;
    /* per event (by payload index) */
    int delivered[GROUPS * PER_GROUP + LATE];
    int published_ok[GROUPS * PER_GROUP + LATE];
    int published_maybe[GROUPS * PER_GROUP + LATE];
    int64_t last_seq[GROUPS]; /* FIFO inside a group, per delivery */
    int errors_connect, errors_other, lease_lost, bad_messages;
    char other_error[600];
    volatile int faults_on, stop;
} chaos;

static int group_index(const char *g) { return atoi(g + 1); }

static void note_error(chaos *c, mq_status st, const mq_error *err) {
    pthread_mutex_lock(&c->mu);
    if (st == MQ_ERR_CONNECT) {
        c->errors_connect++;
        if (strchr(err->message, ':') == NULL || strlen(err->message) < 8) c->bad_messages++;
    } else if (st == MQ_LEASE_LOST) {
        c->lease_lost++;
    } else {
        c->errors_other++;
        snprintf(c->other_error, sizeof c->other_error, "%s: %s", mq_status_name(st), err->message);
    }
    pthread_mutex_unlock(&c->mu);
}

static void worker_main(void *arg, int index) {
    chaos *c = arg;
    mq_queue *q = c->queues[index];
    unsigned seed = (unsigned)index * 7919u + 1;
    while (!c->stop) {
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim(q, "chaos", 1.5, 0, &lease, &err);
        if (st == MQ_EMPTY) {
            tq_sleep(0.05);
            continue;
        }
        if (st != MQ_OK) {
            note_error(c, st, &err);
            tq_sleep(0.05);
            continue;
        }
        int g = group_index(mq_lease_group(lease));
        char text[64];
        tq_event_text(lease, text, sizeof text);
        int ev = atoi(text);
        double now = mq_queue_now(q);
        pthread_mutex_lock(&c->mu);
        if (c->token[g][0] && !c->releasing[g] && now < c->deadline[g] - 0.05 &&
            strcmp(c->token[g], mq_lease_token(lease)) != 0) {
            c->double_leases++;
            fprintf(stderr, "group G%d held by two live leases (%s until %.3f, %s now %.3f)\n", g, c->token[g],
                    c->deadline[g], mq_lease_token(lease), now);
        }
        snprintf(c->token[g], sizeof c->token[g], "%s", mq_lease_token(lease));
        c->deadline[g] = mq_lease_deadline(lease);
        c->releasing[g] = 0;
        c->delivered[ev]++;
        pthread_mutex_unlock(&c->mu);

        int r = (int)(rand_r(&seed) % 10);
        if (r == 0) {
            st = mq_extend(q, lease, 1.5, &err);
            if (st != MQ_OK)
                note_error(c, st, &err);
            else {
                pthread_mutex_lock(&c->mu);
                if (strcmp(c->token[g], mq_lease_token(lease)) == 0) c->deadline[g] = mq_lease_deadline(lease) + 1.5;
                pthread_mutex_unlock(&c->mu);
            }
        }
        pthread_mutex_lock(&c->mu);
        if (strcmp(c->token[g], mq_lease_token(lease)) == 0) c->releasing[g] = 1;
        pthread_mutex_unlock(&c->mu);
        st = r == 1 ? mq_nack(q, lease, 0, &err) : mq_ack(q, lease, &err);
        pthread_mutex_lock(&c->mu);
        if (st != MQ_OK && strcmp(c->token[g], mq_lease_token(lease)) == 0) c->releasing[g] = 0;
        pthread_mutex_unlock(&c->mu);
        if (st != MQ_OK) note_error(c, st, &err);
        mq_lease_destroy(lease);
    }
}

static void publisher_main(chaos *c) {
    for (int i = 0; i < LATE && !c->stop; i++) {
        int ev = GROUPS * PER_GROUP + i;
        char g[16], text[16];
        snprintf(g, sizeof g, "G%d", i % GROUPS);
        snprintf(text, sizeof text, "%d", ev);
        mq_error err;
        mq_status st = mq_publish(c->t->queue, g, text, strlen(text), 0, NULL, &err);
        pthread_mutex_lock(&c->mu);
        if (st == MQ_OK)
            c->published_ok[ev] = 1;
        else
            c->published_maybe[ev] = 1;
        pthread_mutex_unlock(&c->mu);
        if (st != MQ_OK) note_error(c, st, &err);
        tq_sleep(0.1);
    }
}

static void fault_main(chaos *c) {
    (void)c;
    /* ~6 s of faults, each for 300-600 ms, with short healthy gaps */
    static const char *types[][3] = {
        {"reset_peer", "downstream", "{\"timeout\":0}"}, {"limit_data", "downstream", "{\"bytes\":1}"},
        {"latency", "downstream", "{\"latency\":2500}"}, {"timeout", "upstream", "{\"timeout\":0}"},
        {"reset_peer", "upstream", "{\"timeout\":20}"},  {"slow_close", "downstream", "{\"delay\":800}"},
    };
    double until = tq_monotonic() + 6;
    unsigned seed = 42;
    int i = 0;
    while (tq_monotonic() < until) {
        int k = (int)(rand_r(&seed) % 6);
        if (i++ % 5 == 4) {
            proxy_enabled(0);
            tq_sleep(0.4);
            proxy_enabled(1);
        } else {
            toxic_add("chaos", types[k][0], types[k][1], types[k][2]);
            tq_sleep(0.3 + (rand_r(&seed) % 300) / 1000.0);
            toxic_remove("chaos");
        }
        tq_sleep(0.2);
    }
}

static void side_main(void *arg, int index) {
    chaos *c = arg;
    if (index == 0)
        fault_main(c);
    else
        publisher_main(c);
}

static void *side_thread(void *arg) {
    tq_run_threads(2, side_main, arg);
    return NULL;
}

static void *workers_thread(void *arg) {
    tq_run_threads(WORKERS, worker_main, arg);
    return NULL;
}

static void workers_drain_while_faults_fire(void **state) {
    tq *t = *state;
    chaos *c = calloc(1, sizeof *c);
    c->t = t;
    pthread_mutex_init(&c->mu, NULL);
    mq_error err;
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    for (int g = 0; g < GROUPS; g++)
        for (int i = 0; i < PER_GROUP; i++) {
            char gid[16], text[16];
            snprintf(gid, sizeof gid, "G%d", g);
            snprintf(text, sizeof text, "%d", g * PER_GROUP + i);
            ASSERT_MQ(MQ_OK, mq_batch_add(batch, gid, text, strlen(text), 0, &err), err);
            c->published_ok[g * PER_GROUP + i] = 1;
        }
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, NULL, &err), err);
    mq_batch_destroy(batch);
    for (int w = 0; w < WORKERS; w++) {
        ASSERT_MQ(MQ_OK, mq_queue_new(t->client, t->db, t->prefix, &c->queues[w], &err), err);
        ASSERT_MQ(MQ_OK, mq_queue_set_repair_interval(c->queues[w], 0.5, &err), err);
    }
    pthread_t sides, workers;
    pthread_create(&workers, NULL, workers_thread, c);
    pthread_create(&sides, NULL, side_thread, c);
    pthread_join(sides, NULL);
    printf("    faults over; draining\n");
    /* the network is back: the workers drain what is left (bounded) */
    double until = tq_monotonic() + 30;
    int quiet = 0;
    while (tq_monotonic() < until && quiet < 3) {
        tq_sleep(0.5);
        quiet = tq_count(t, "messages", "{}") == 0 && tq_count(t, "locks", "{}") == 0 ? quiet + 1 : 0;
    }
    c->stop = 1;
    pthread_join(workers, NULL);
    for (int w = 0; w < WORKERS; w++) mq_queue_destroy(c->queues[w]);

    int total = GROUPS * PER_GROUP + LATE, ok = 0, maybe = 0, redelivered = 0, maybe_seen = 0;
    for (int i = 0; i < total; i++) {
        if (c->published_ok[i]) {
            ok++;
            if (c->delivered[i] < 1) fail_msg("event %d was published (MQ_OK) and never delivered: lost", i);
            if (c->delivered[i] > 1) redelivered++;
        } else if (c->published_maybe[i]) {
            maybe++;
            if (c->delivered[i] > 0) maybe_seen++;
        } else if (c->delivered[i] > 0) {
            fail_msg("event %d delivered but never published", i);
        }
    }
    printf(
        "    %d events published OK (all delivered, %d more than once), %d publishes MQ_ERR_CONNECT "
        "(%d of them in the queue after all); errors: %d MQ_ERR_CONNECT, %d MQ_LEASE_LOST, %d other\n",
        ok, redelivered, maybe, maybe_seen, c->errors_connect, c->lease_lost, c->errors_other);
    if (c->errors_other) fail_msg("an error other than MQ_ERR_CONNECT/MQ_LEASE_LOST: %s", c->other_error);
    assert_int_equal(c->bad_messages, 0);
    assert_int_equal(c->double_leases, 0);
    /* The faults did fire: toxic_add and proxy_enabled fail the test unless toxiproxy
     * answered 200. How many of them reach the workers as MQ_ERR_CONNECT depends on
     * timing (server selection waits, idempotent commands are retried in the call),
     * so that count is printed, not asserted. */
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(publish_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(publish_insert_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(claim_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(ack_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(nack_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(extend_reply_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(waiting_claim_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(latency_above_socket_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(black_hole_then_back, setup, teardown),
        cmocka_unit_test_setup_teardown(slow_close_and_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(network_cut_then_back, setup, teardown),
        cmocka_unit_test_setup_teardown(workers_drain_while_faults_fire, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
