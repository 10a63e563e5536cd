/* Hostile documents (issue 14): a queue whose collections hold documents mongomq did
 * not write (wrong types for every field, missing fields, huge values, harel
 * leftovers, a lock without messages, messages whose _id is no integer, nested junk).
 * Every call runs against each: none may crash; each either skips or repairs what it
 * meets, or answers MQ_ERR_SERVER with a message naming the command, collection or
 * field and what is wrong; and the well-formed group beside the junk is still delivered (a bad group
 * never blocks the others). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *docs[6]; /* "suffix|extended JSON", NULL-terminated */
} hostile_case;

#define BIG_STRING_LEN (1 << 20)

static const hostile_case cases[] = {
    {"event of another BSON type",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": 5, \"priority\": 0}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"event a nested document",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": {\"a\": {\"b\": [1, "
      "{\"c\": null}]}}}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"message without event",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\"}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"message _id a string",
     {"messages|{\"_id\": \"x\", \"group_id\": \"bad\", \"event\": \"junk\"}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"message _id an ObjectId",
     {"messages|{\"_id\": {\"$oid\": \"5f0000000000000000000001\"}, \"group_id\": \"bad\", \"event\": \"junk\"}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"message _id a double",
     {"messages|{\"_id\": 1000001.5, \"group_id\": \"bad\", \"event\": \"junk\"}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"group_id not a string",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": 7, \"event\": \"junk\"}",
      "messages|{\"_id\": {\"$numberLong\": \"1000002\"}, \"group_id\": {\"g\": 1}, \"event\": \"junk\"}",
      "messages|{\"_id\": {\"$numberLong\": \"1000003\"}, \"event\": \"no group\"}",
      "locks|{\"_id\": 7, \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}"}},
    {"lock without messages",
     {"locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}",
      "locks|{\"_id\": \"bad2\", \"available_at\": 0.0, \"token\": \"someone:1\", \"priority\": 4, \"attempts\": 3, "
      "\"head\": {\"$numberLong\": \"5\"}}"}},
    {"lock priority 99 and \"x\"",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": \"junk\", \"priority\": "
      "99}",
      "locks|{\"_id\": \"bad\", \"available_at\": 0.0, \"token\": null, \"priority\": 99, \"attempts\": 0}",
      "messages|{\"_id\": {\"$numberLong\": \"1000002\"}, \"group_id\": \"bad2\", \"event\": \"junk\", \"priority\": "
      "\"x\"}",
      "locks|{\"_id\": \"bad2\", \"available_at\": 0.0, \"token\": null, \"priority\": \"x\", \"attempts\": 0}"}},
    {"lock fields of the wrong types",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": \"junk\"}",
      "locks|{\"_id\": \"bad\", \"available_at\": \"soon\", \"token\": 5, \"priority\": 0, \"attempts\": \"many\", "
      "\"head\": \"h\"}",
      "messages|{\"_id\": {\"$numberLong\": \"1000002\"}, \"group_id\": \"bad2\", \"event\": \"junk\"}",
      "locks|{\"_id\": \"bad2\", \"available_at\": 0.0, \"token\": [1, 2], \"priority\": 0, \"attempts\": {\"n\": 1}, "
      "\"head\": 1.5}"}},
    {"huge values",
     {"messages|{\"_id\": {\"$numberLong\": \"9223372036854775807\"}, \"group_id\": \"bad\", \"event\": \"junk\", "
      "\"priority\": {\"$numberLong\": \"9223372036854775807\"}, \"published_at\": 1e308, \"not_before\": -1e308}",
      "locks|{\"_id\": \"bad\", \"available_at\": -1e308, \"token\": null, \"priority\": 0, \"attempts\": 2147483647, "
      "\"head\": {\"$numberLong\": \"-9223372036854775808\"}}",
      "dead|{\"_id\": {\"$numberLong\": \"1000009\"}, \"group_id\": \"bad\", \"event\": \"junk\", \"attempts\": "
      "2147483647, \"dead_at\": 1e308, \"priority\": -5}"}},
    {"times that are not numbers (NaN, infinity)",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": \"junk\", "
      "\"published_at\": {\"$numberDouble\": \"NaN\"}, \"not_before\": {\"$numberDouble\": \"-Infinity\"}}",
      "locks|{\"_id\": \"bad\", \"available_at\": {\"$numberDouble\": \"NaN\"}, \"token\": null, \"priority\": 0, "
      "\"attempts\": 0}",
      "dead|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"bad\", \"event\": \"junk\", \"dead_at\": "
      "{\"$numberDouble\": \"Infinity\"}, \"published_at\": {\"$numberDouble\": \"NaN\"}}"}},
    {"harel leftovers",
     {"messages|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": \"harel\", \"event\": \"{\\\"k\\\": 1}\"}",
      "locks|{\"_id\": \"harel\", \"available_at\": 0.0, \"token\": null}",
      "locks|{\"_id\": \"harel_gone\", \"available_at\": 1.0, \"token\": \"host:9:abc\"}"}},
    {"dead letters of the wrong shape",
     {"dead|{\"_id\": {\"$numberLong\": \"1000001\"}, \"group_id\": 3, \"event\": 4}",
      "dead|{\"_id\": \"d\", \"event\": \"x\"}",
      "dead|{\"_id\": {\"$numberLong\": \"1000002\"}, \"group_id\": \"bad\", \"event\": {\"$binary\": {\"base64\": "
      "\"AAEC\", \"subType\": \"00\"}}, \"attempts\": \"x\", \"dead_at\": \"y\"}"}},
    {"counter of the wrong type", {"counters|{\"_id\": \"seq\", \"n\": \"not a number\"}"}},
};

static int errors_seen;

/* An allowed outcome: OK, EMPTY, LEASE_LOST, or MQ_ERR_SERVER with a message that
 * names the command ("claim.head: ...") and says what is wrong. */
static mq_status check(const char *where, const char *call, mq_status st, const mq_error *err) {
    if (st == MQ_OK || st == MQ_EMPTY || st == MQ_LEASE_LOST) return st;
    if (st != MQ_ERR_SERVER && !(st == MQ_ERR_ARG && strcmp(call, "dead requeue") == 0))
        fail_msg("%s: %s returned %s: %s", where, call, mq_status_name(st), err->message);
    const char *colon = strstr(err->message, ": ");
    int names_command =
        colon != NULL && strlen(colon) >= 8 && memchr(err->message, '.', (size_t)(colon - err->message)) != NULL;
    int names_field = strchr(err->message, '\'') != NULL || strstr(err->message, "_messages") != NULL ||
                      strstr(err->message, "_locks") != NULL || strstr(err->message, "_dead") != NULL ||
                      strstr(err->message, "_counters") != NULL;
    if (!names_command && !names_field)
        fail_msg("%s: %s: unclear %s message \"%s\"", where, call, mq_status_name(st), err->message);
    printf("    %-32s %-14s %s: %s\n", where, call, mq_status_name(st), err->message);
    errors_seen++;
    return st;
}

static void insert_case(tq *t, const hostile_case *c) {
    for (size_t i = 0; i < 6 && c->docs[i] != NULL; i++) {
        const char *bar = strchr(c->docs[i], '|');
        char suffix[32];
        snprintf(suffix, sizeof suffix, "%.*s", (int)(bar - c->docs[i]), c->docs[i]);
        if (strcmp(suffix, "counters") == 0) { /* replaces the library's own counter */
            mongoc_collection_t *coll = tq_collection(t, suffix);
            bson_t all = BSON_INITIALIZER;
            assert_true(mongoc_collection_delete_many(coll, &all, NULL, NULL, NULL));
            mongoc_collection_destroy(coll);
        }
        tq_insert_json(t, suffix, bar + 1);
    }
}

static void run_case(const hostile_case *c) {
    void *state = NULL;
    tq_setup(&state);
    tq *t = state;
    mq_error err;
    const char *w = c->name;
    /* the well-formed group, published by the library */
    int64_t s1 = tq_publish(t, "good", "g1", 0);
    tq_publish(t, "good", "g2", 0);
    insert_case(t, c);

    char *json = NULL;
    if (check(w, "stats", mq_stats_json(t->queue, &json, &err), &err) == MQ_OK) mq_free(json);
    json = NULL;
    if (check(w, "peek", mq_peek_json(t->queue, NULL, 50, &json, &err), &err) == MQ_OK) mq_free(json);
    json = NULL;
    if (check(w, "peek bad", mq_peek_json(t->queue, "bad", 50, &json, &err), &err) == MQ_OK) mq_free(json);
    json = NULL;
    if (check(w, "dead list", mq_dead_list_json(t->queue, 50, &json, &err), &err) == MQ_OK) mq_free(json);
    int64_t n = 0;
    check(w, "dead count", mq_dead_count(t->queue, &n, &err), &err);
    check(w, "repair", mq_repair(t->queue, &n, &err), &err);

    /* a batch claim, given back */
    mq_lease *lease = NULL;
    if (check(w, "claim batch", mq_claim_batch(t->queue, "h", 30, 0, 4, &lease, &err), &err) == MQ_OK) {
        check(w, "nack", mq_nack(t->queue, lease, 0, &err), &err);
        mq_lease_destroy(lease);
    }

    /* claims until the good group's two events are through: bounded, and the junk
     * must not stand in the way */
    int good = 0;
    for (int i = 0; i < 30 && good < 2; i++) {
        lease = NULL;
        mq_status st = check(w, "claim", mq_claim(t->queue, "h", 30, 0, &lease, &err), &err);
        if (getenv("HOSTILE_TRACE"))
            printf("      claim %d: %s %s %lld\n", i, mq_status_name(st), st == MQ_OK ? mq_lease_group(lease) : "-",
                   st == MQ_OK ? (long long)mq_lease_seq(lease) : 0LL);
        if (st != MQ_OK) continue;
        check(w, "extend", mq_extend(t->queue, lease, 30, &err), &err);
        if (strcmp(mq_lease_group(lease), "good") == 0) {
            good++;
            ASSERT_MQ(MQ_OK, mq_ack(t->queue, lease, &err), err);
        } else {
            check(w, "ack", mq_ack(t->queue, lease, &err), &err);
        }
        mq_lease_destroy(lease);
    }
    if (good < 2) fail_msg("%s: the good group got %d of its 2 events in 30 claims", w, good);

    /* a waiting claim, bounded */
    lease = NULL;
    if (check(w, "claim wait", mq_claim_wait(t->queue, "h", 30, 0, 0.3, &lease, &err), &err) == MQ_OK) {
        check(w, "ack", mq_ack(t->queue, lease, &err), &err);
        mq_lease_destroy(lease);
    }
    check(w, "purge", mq_purge_group(t->queue, "bad", &err), &err);
    int64_t new_seq = 0;
    check(w, "dead requeue", mq_dead_requeue(t->queue, 1000001, &new_seq, &err), &err);
    check(w, "dead requeue", mq_dead_requeue(t->queue, 1000002, &new_seq, &err), &err);
    int64_t purged = 0;
    check(w, "dead purge", mq_dead_purge(t->queue, &purged, &err), &err);
    json = NULL;
    if (check(w, "stats", mq_stats_json(t->queue, &json, &err), &err) == MQ_OK) mq_free(json);
    /* publishing still works (or, with a broken counter, says so) */
    int64_t seq = 0;
    check(w, "publish", mq_publish(t->queue, "good", "g3", 2, 0, &seq, &err), &err);
    (void)s1;
    tq_teardown(&state);
}

static void every_call_on_hostile_documents(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        printf("  case: %s\n", cases[i].name);
        run_case(&cases[i]);
    }
    printf("  %d MQ_ERR_SERVER answers, each naming its command\n", errors_seen);
}

/* A huge event string (1 MiB) written by someone else: delivered byte for byte. */
static void huge_foreign_event(void **state) {
    tq *t = *state;
    char *big = malloc(BIG_STRING_LEN + 1);
    assert_non_null(big);
    memset(big, 'a', BIG_STRING_LEN);
    big[BIG_STRING_LEN] = '\0';
    bson_t doc = BSON_INITIALIZER;
    BSON_APPEND_INT64(&doc, "_id", 1000001);
    BSON_APPEND_UTF8(&doc, "group_id", "big");
    BSON_APPEND_UTF8(&doc, "event", big);
    mongoc_collection_t *coll = tq_collection(t, "messages");
    bson_error_t error;
    assert_true(mongoc_collection_insert_one(coll, &doc, NULL, NULL, &error));
    mongoc_collection_destroy(coll);
    bson_destroy(&doc);
    tq_insert_json(t, "locks",
                   "{\"_id\": \"big\", \"available_at\": 0.0, \"token\": null, \"priority\": 0, \"attempts\": 0}");
    mq_lease *lease = tq_claim(t, 30, 0);
    size_t len = 0;
    const void *event = mq_lease_event(lease, &len);
    assert_int_equal(len, BIG_STRING_LEN);
    assert_memory_equal(event, big, BIG_STRING_LEN);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_call_on_hostile_documents),
        cmocka_unit_test_setup_teardown(huge_foreign_event, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
