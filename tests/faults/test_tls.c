/* TLS (issue 14): the test server serves TLS only, with a certificate signed by a CA
 * the test made (tests/faults/tls.sh). With tls=true and that CA file the library
 * publishes, claims and acks; without the CA (the system's trust store) and with
 * another CA, the connection is refused: MQ_ERR_CONNECT naming the command.
 * Environment: MONGOMQ_TLS_URI (mongodb://127.0.0.1:P), MONGOMQ_TLS_CA (the CA's
 * PEM), MONGOMQ_TLS_OTHER_CA (a CA that signed nothing of the server's). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *uri_with(const char *options) {
    const char *base = getenv("MONGOMQ_TLS_URI");
    if (base == NULL) fail_msg("MONGOMQ_TLS_URI is not set (tests/faults/tls.sh sets it)");
    char *u = malloc(2048);
    assert_non_null(u);
    snprintf(u, 2048, "%s/?serverSelectionTimeoutMS=2000&connectTimeoutMS=1000&%s", base, options);
    return u;
}

static void round_trip_over_tls(void **state) {
    (void)state;
    char opts[1024];
    snprintf(opts, sizeof opts, "tls=true&tlsCAFile=%s", getenv("MONGOMQ_TLS_CA"));
    char *uri = uri_with(opts);
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    mq_error err;
    char db[64];
    snprintf(db, sizeof db, "mqt_tls_%d", (int)getpid());
    ASSERT_MQ(MQ_OK, mq_client_new(uri, &client, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_new(client, db, "mq", &queue, &err), err);
    int64_t seq = 0;
    ASSERT_MQ(MQ_OK, mq_publish(queue, "G", "over tls", 8, 0, &seq, &err), err);
    mq_lease *lease = NULL;
    ASSERT_MQ(MQ_OK, mq_claim(queue, "w", 30, 0, &lease, &err), err);
    assert_int_equal(mq_lease_seq(lease), seq);
    size_t len = 0;
    const void *ev = mq_lease_event(lease, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(ev, "over tls", 8);
    ASSERT_MQ(MQ_OK, mq_ack(queue, lease, &err), err);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_EMPTY, mq_claim(queue, "w", 30, 0, &lease, &err), err);
    ASSERT_MQ(MQ_OK, mq_queue_drop(queue, &err), err);
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    free(uri);
    printf("    publish, claim, ack over TLS with the test's CA: ok\n");
}

static void refused(const char *options, const char *what) {
    char *uri = uri_with(options);
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    mq_error err;
    mq_status st = mq_client_new(uri, &client, &err);
    if (st == MQ_OK) {
        st = mq_queue_new(client, "mqt_tls_refused", "mq", &queue, &err);
        if (st == MQ_OK) mq_queue_destroy(queue);
        mq_client_destroy(client);
    }
    free(uri);
    if (st != MQ_ERR_CONNECT) fail_msg("%s: %s (%s), expected MQ_ERR_CONNECT", what, mq_status_name(st), err.message);
    assert_non_null(strchr(err.message, ':'));
    printf("    %s -> MQ_ERR_CONNECT: %s\n", what, err.message);
}

static void untrusted_certificates_are_refused(void **state) {
    (void)state;
    char opts[1024];
    snprintf(opts, sizeof opts, "tls=true&tlsCAFile=%s", getenv("MONGOMQ_TLS_OTHER_CA"));
    refused(opts, "another CA");
    refused("tls=true", "the system's trust store");
    refused("tls=false", "no TLS against a TLS-only server");
}

static void quiet(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (level <= 1) fprintf(stderr, "libmongoc %s: %s\n", domain, message);
}

int main(void) {
    mq_log_set_handler(quiet, NULL);
    if (getenv("MONGOMQ_TLS_CA") == NULL || getenv("MONGOMQ_TLS_OTHER_CA") == NULL) {
        fprintf(stderr, "MONGOMQ_TLS_CA and MONGOMQ_TLS_OTHER_CA must be set (tests/faults/tls.sh)\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_over_tls),
        cmocka_unit_test(untrusted_certificates_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
