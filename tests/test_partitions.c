/* Partitioned queues (lib/partition.cpp; docs/design.md, "Partitioned queues"): the
 * record of P and the refusals of another P, the hash every language shares, the seqs
 * of partitions, claims that rotate over partitions and claims given a subset, the
 * cost of an empty claim, waiting claims that go where a hint says, a mongos that may
 * shard a partitioned queue's locks and counters, and, through APM, that every command
 * a publish, claim, ack, nack, extend, unclaim, pause or resume sends to the locks and
 * counters names its partition. These tests open their own queues with P = 4 whatever
 * MONGOMQ_TEST_PARTITIONS says. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"
/* after support.h: its mq_queue */
#include "fault.hpp"

#define P 4

static mq_queue *open_p(tq *t, const char *prefix, int partitions) {
    mq_queue_opts opts = MQ_QUEUE_OPTS_INIT;
    opts.partitions = partitions;
    mq_queue *q = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_new_with(t->client, t->db, prefix, &opts, &q, &err), err);
    mq_queue_set_repair_interval(q, 0, &err); /* no automatic repair in the command counts */
    return q;
}

static int64_t publish(mq_queue *q, const char *group, const char *text) {
    int64_t seq = 0;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_publish(q, group, text, strlen(text), 0, &seq, &err), err);
    return seq;
}

static mq_lease *claim_in(mq_queue *q, const int *parts, size_t n, mq_status want) {
    mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
    o.partitions = parts;
    o.partition_count = n;
    mq_lease *lease = NULL;
    mq_error err;
    ASSERT_MQ(want, mq_claim_with(q, &o, &lease, &err), err);
    return lease;
}

static void ack(mq_queue *q, mq_lease *lease) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_ack(q, lease, &err), err);
    mq_lease_destroy(lease);
}

/* The hash is the same everywhere (bindings/CONTRACT.md, partitions_group_hash). */
static void group_partition_is_the_documented_hash(void **state) {
    (void)state;
    assert_int_equal(mq_group_partition("a", 4), 3);
    assert_int_equal(mq_group_partition("b", 4), 0);
    assert_int_equal(mq_group_partition("customer-17", 4), 1);
    assert_int_equal(mq_group_partition("g1", 4), 1);
    assert_int_equal(mq_group_partition("g2", 4), 3);
    assert_int_equal(mq_group_partition("g3", 4), 0);
    assert_int_equal(mq_group_partition("a", 16), 11);
    assert_int_equal(mq_group_partition("customer-17", 16), 9);
    assert_int_equal(mq_group_partition("g2", 16), 7);
    assert_int_equal(mq_group_partition("a", 1), 0);
    assert_int_equal(mq_group_partition("\xc3\xa9", 4), 3); /* bytes, not characters */
    assert_int_equal(mq_group_partition(NULL, 4), -1);
    assert_int_equal(mq_group_partition("a", 0), -1);
    assert_int_equal(mq_group_partition("a", MQ_PARTITIONS_MAX + 1), -1);
    /* 10,000 groups over 16 partitions: each gets its share within 15 % */
    int counts[16] = {0};
    char g[32];
    for (int i = 0; i < 10000; i++) {
        snprintf(g, sizeof g, "customer-%d", i);
        counts[mq_group_partition(g, 16)]++;
    }
    for (int k = 0; k < 16; k++) assert_true(counts[k] > 625 * 85 / 100 && counts[k] < 625 * 115 / 100);
}

/* P is recorded by the first opener; another P, or P > 1 on a queue that holds P = 1's
 * events, is refused naming both; one partition writes no record. */
static void open_records_and_refuses_another_p(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    assert_int_equal(mq_queue_partitions(q), P);
    assert_int_equal(mq_queue_partitions(NULL), 0);
    assert_int_equal(mq_queue_partitions(t->queue), tq_partitions());
    mongoc_collection_t *counters = mongoc_client_get_collection(t->raw, t->db, "parts_counters");
    bson_t *filter = BCON_NEW("_id", BCON_UTF8("partitions"), "partition", BCON_INT32(0), "n", BCON_INT64(P));
    bson_error_t error;
    assert_int_equal(mongoc_collection_count_documents(counters, filter, NULL, NULL, NULL, &error), 1);
    bson_destroy(filter);
    mongoc_collection_destroy(counters);

    mq_queue *other = NULL;
    mq_error err;
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_new(t->client, t->db, "parts", &other, &err), err);
    assert_null(other);
    assert_non_null(strstr(err.message, "has 4 partitions"));
    assert_non_null(strstr(err.message, "not 1"));
    mq_queue_opts eight = MQ_QUEUE_OPTS_INIT;
    eight.partitions = 8;
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_new_with(t->client, t->db, "parts", &eight, &other, &err), err);
    assert_non_null(strstr(err.message, "has 4 partitions"));
    const int bad[] = {0, -3, MQ_PARTITIONS_MAX + 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mq_queue_opts o = MQ_QUEUE_OPTS_INIT;
        o.partitions = bad[i];
        ASSERT_MQ(MQ_ERR_ARG, mq_queue_new_with(t->client, t->db, "parts", &o, &other, &err), err);
        if (strstr(err.message, "partitions is") == NULL) fail_msg("%s", err.message);
    }
    mq_queue_opts v2 = MQ_QUEUE_OPTS_INIT;
    v2.version = 2;
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_new_with(t->client, t->db, "parts", &v2, &other, &err), err);
    assert_int_equal(mq_queue_opts_init(&v2, 2), MQ_ERR_ARG);
    assert_int_equal(mq_queue_opts_init(&v2, 1), MQ_OK);
    assert_int_equal(v2.partitions, 1);

    /* A queue of one partition that holds events is not reopened with 4. */
    mq_queue *one = open_p(t, "single", 1);
    publish(one, "g", "e");
    mongoc_collection_t *single = mongoc_client_get_collection(t->raw, t->db, "single_counters");
    bson_t *rec = BCON_NEW("_id", BCON_UTF8("partitions"));
    assert_int_equal(mongoc_collection_count_documents(single, rec, NULL, NULL, NULL, &error), 0);
    bson_destroy(rec);
    mongoc_collection_destroy(single);
    mq_queue_opts four = MQ_QUEUE_OPTS_INIT;
    four.partitions = P;
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_new_with(t->client, t->db, "single", &four, &other, &err), err);
    assert_non_null(strstr(err.message, "one partition"));
    mq_queue_destroy(one);
    mq_queue_destroy(q);
}

/* Partition k's n-th event gets (n - 1) * P + k + 1; a batch over partitions gets each
 * event its partition's seq; locks carry the partition; stats sum the counters. */
static void seqs_follow_their_partition(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    assert_int_equal(publish(q, "b", "1"), 1);           /* partition 0, its 1st */
    assert_int_equal(publish(q, "a", "1"), 4);           /* partition 3, its 1st */
    assert_int_equal(publish(q, "customer-17", "1"), 2); /* partition 1, its 1st */
    assert_int_equal(publish(q, "b", "2"), 5);           /* partition 0, its 2nd */
    mq_batch *batch = NULL;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    const char *groups[] = {"a", "b", "a", "g1"};
    for (int i = 0; i < 4; i++) ASSERT_MQ(MQ_OK, mq_batch_add(batch, groups[i], "x", 1, 0, &err), err);
    int64_t first = 0;
    ASSERT_MQ(MQ_OK, mq_publish_batch(q, batch, &first, &err), err);
    const int64_t want[] = {8, 9, 12, 6}; /* a: 3rd.. of partition 3; b: 3rd of 0; g1: 2nd of 1 */
    assert_int_equal(first, want[0]);
    for (size_t i = 0; i < 4; i++) {
        int64_t seq = 0;
        ASSERT_MQ(MQ_OK, mq_batch_outcome(batch, i, &seq, &err), err);
        assert_int_equal(seq, want[i]);
    }
    mq_batch_destroy(batch);

    mongoc_collection_t *locks = mongoc_client_get_collection(t->raw, t->db, "parts_locks");
    bson_error_t error;
    const char *lock_groups[] = {"a", "b", "customer-17", "g1"};
    for (int i = 0; i < 4; i++) {
        bson_t *f =
            BCON_NEW("_id", BCON_UTF8(lock_groups[i]), "partition", BCON_INT32(mq_group_partition(lock_groups[i], P)));
        assert_int_equal(mongoc_collection_count_documents(locks, f, NULL, NULL, NULL, &error), 1);
        bson_destroy(f);
    }
    mongoc_collection_destroy(locks);

    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_stats_json(q, &json, &err), err);
    assert_non_null(strstr(json, "\"partitions\":4"));
    assert_non_null(strstr(json, "\"published\":8"));
    assert_non_null(strstr(json, "\"messages\":8"));
    mq_free(json);

    /* Dropped, the queue's next publish records P again. */
    ASSERT_MQ(MQ_OK, mq_queue_drop(q, &err), err);
    assert_int_equal(publish(q, "a", "again"), 4);
    mq_queue *again = open_p(t, "parts", P);
    mq_queue *other = NULL;
    ASSERT_MQ(MQ_ERR_ARG, mq_queue_new(t->client, t->db, "parts", &other, &err), err);
    mq_queue_destroy(again);
    mq_queue_destroy(q);
}

/* Per-group FIFO over partitions; each lease's partition is its group's; a claim starts
 * at the next partition in turn, so with a due group in every partition four claims
 * take one from each. */
static void fifo_and_rotation(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    char g[16], e[16];
    for (int n = 0; n < 5; n++)
        for (int i = 1; i <= 8; i++) {
            snprintf(g, sizeof g, "g%d", i);
            snprintf(e, sizeof e, "%d", n);
            publish(q, g, e);
        }
    int seen_in[P] = {0};
    for (int i = 0; i < P; i++) {
        mq_lease *lease = claim_in(q, NULL, 0, MQ_OK);
        seen_in[mq_lease_partition(lease)]++;
        mq_error err;
        ASSERT_MQ(MQ_OK, mq_unclaim(q, lease, &err), err);
        mq_lease_destroy(lease);
    }
    int parts_with_groups = 0;
    for (int k = 0; k < P; k++) {
        int has = 0;
        for (int i = 1; i <= 8; i++) {
            snprintf(g, sizeof g, "g%d", i);
            if (mq_group_partition(g, P) == k) has = 1;
        }
        parts_with_groups += has;
        if (has) assert_int_equal(seen_in[k], 1); /* one claim from each partition that has groups */
    }
    assert_true(parts_with_groups >= 2);

    int next[9] = {0};
    int64_t last_seq[9] = {0};
    for (int got = 0; got < 40; got++) {
        mq_lease *lease = claim_in(q, NULL, 0, MQ_OK);
        const char *group = mq_lease_group(lease);
        int i = atoi(group + 1);
        assert_int_equal(mq_lease_partition(lease), mq_group_partition(group, P));
        char text[16];
        assert_string_equal(tq_event_text(lease, text, sizeof text), (snprintf(e, sizeof e, "%d", next[i]), e));
        assert_true(mq_lease_seq(lease) > last_seq[i]);
        assert_int_equal((mq_lease_seq(lease) - 1) % P, mq_group_partition(group, P));
        last_seq[i] = mq_lease_seq(lease);
        next[i]++;
        ack(q, lease);
    }
    claim_in(q, NULL, 0, MQ_EMPTY);
    assert_int_equal(mq_lease_partition(NULL), -1);
    mq_queue_destroy(q);
}

/* Partitions are served in turn whatever lies between them: with due groups only in
 * partitions 0 ("b") and 3 ("a"), a handle's claims alternate between the two (each
 * claim starts after the partition the last one took from), not 3 of every 4 for the
 * partition after the empty ones. */
static void partitions_with_groups_take_turns(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    for (int i = 0; i < 4; i++) {
        publish(q, "b", "e");
        publish(q, "a", "e");
    }
    char order[16] = "";
    for (int i = 0; i < 8; i++) {
        mq_lease *lease = claim_in(q, NULL, 0, MQ_OK);
        strcat(order, mq_lease_group(lease));
        ack(q, lease);
    }
    printf("[ parts    ] groups in partitions 0 and 3, 8 claims: %s\n", order);
    assert_string_equal(order, "babababa");
    mq_queue_destroy(q);
}

/* A claim given a subset takes only from it; bad lists are refused naming them; a
 * version 1 options struct claims from every partition. */
static void claim_from_a_subset(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    publish(q, "b", "b1"); /* partition 0 */
    publish(q, "b", "b2");
    publish(q, "customer-17", "c1"); /* partition 1 */
    publish(q, "customer-17", "c2");
    const int one[] = {1};
    for (int i = 0; i < 2; i++) {
        mq_lease *lease = claim_in(q, one, 1, MQ_OK);
        assert_string_equal(mq_lease_group(lease), "customer-17");
        ack(q, lease);
    }
    claim_in(q, one, 1, MQ_EMPTY);
    const int two_three[] = {2, 3};
    claim_in(q, two_three, 2, MQ_EMPTY);

    mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
    mq_lease *lease = NULL;
    mq_error err;
    const int out_of_range[] = {4}, twice[] = {0, 0}, negative[] = {-1};
    o.partitions = out_of_range;
    o.partition_count = 1;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    assert_non_null(strstr(err.message, "partitions[0] is 4"));
    o.partitions = twice;
    o.partition_count = 2;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    assert_non_null(strstr(err.message, "given twice"));
    o.partitions = negative;
    o.partition_count = 1;
    o.timeout_s = 1; /* the waiting claim checks them too, before it waits */
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    assert_non_null(strstr(err.message, "partitions[0] is -1"));
    o.timeout_s = 0;
    o.partitions = NULL;
    o.partition_count = 1;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    assert_non_null(strstr(err.message, "partition_count"));
    o.partitions = one;
    o.partition_count = 0;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    const int five[] = {0, 1, 2, 3, 0};
    o.partitions = five;
    o.partition_count = 5;
    ASSERT_MQ(MQ_ERR_ARG, mq_claim_with(q, &o, &lease, &err), err);
    assert_non_null(strstr(err.message, "more than the queue's 4"));
    assert_int_equal(tq_count(t, "messages", "{}"), 0); /* the test's own queue: untouched */

    /* A version 1 struct (without the partition fields) claims everywhere. */
    mq_claim_opts v1;
    assert_int_equal(mq_claim_opts_init(&v1, 1), MQ_OK);
    assert_int_equal(v1.version, 1u);
    ASSERT_MQ(MQ_OK, mq_claim_with(q, &v1, &lease, &err), err);
    assert_string_equal(mq_lease_group(lease), "b");
    ack(q, lease);
    mq_queue_destroy(q);
}

/* An empty claim sends one claim.lease per partition it tries: P with every partition,
 * the subset's size with a subset, 1 with one partition. */
static void an_empty_claim_costs_one_command_per_partition(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    mq_queue *single = open_p(t, "single", 1);
    uint64_t before = mq_client_command_count(t->client);
    claim_in(q, NULL, 0, MQ_EMPTY);
    uint64_t all = mq_client_command_count(t->client) - before;
    const int two[] = {0, 2};
    before = mq_client_command_count(t->client);
    claim_in(q, two, 2, MQ_EMPTY);
    uint64_t subset = mq_client_command_count(t->client) - before;
    before = mq_client_command_count(t->client);
    claim_in(single, NULL, 0, MQ_EMPTY);
    uint64_t one = mq_client_command_count(t->client) - before;
    printf("[ parts    ] an empty claim: %llu commands with 4 partitions, %llu with 2 of them, %llu with one\n",
           (unsigned long long)all, (unsigned long long)subset, (unsigned long long)one);
    assert_int_equal(all, 4);
    assert_int_equal(subset, 2);
    assert_int_equal(one, 1);
    mq_queue_destroy(single);
    mq_queue_destroy(q);
}

/* ---- what goes on the wire ---- */

#define MAX_SEEN 2048
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bson_t *g_seen[MAX_SEEN];
static char g_seen_name[MAX_SEEN][32];
static int g_nseen;

static void on_command(const char *name, const char *db, const bson_t *body, void *ctx) {
    (void)db;
    (void)ctx;
    pthread_mutex_lock(&g_mu);
    if (g_nseen < MAX_SEEN) {
        snprintf(g_seen_name[g_nseen], sizeof g_seen_name[g_nseen], "%s", name);
        g_seen[g_nseen++] = bson_copy(body);
    }
    pthread_mutex_unlock(&g_mu);
}

static void forget_seen(void) {
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++) bson_destroy(g_seen[i]);
    g_nseen = 0;
    pthread_mutex_unlock(&g_mu);
}

/* The int32 at path, or -1 when it is not one (an equality on the partition). */
static int int_at(const bson_t *doc, const char *path) {
    bson_iter_t it, found;
    if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &found) || !BSON_ITER_HOLDS_INT32(&found))
        return -1;
    return bson_iter_int32(&found);
}

/* Checks every filter of a command on the locks or counters: find (filter),
 * findAndModify (query), update and delete (each statement's q). Returns how many it
 * checked; fails naming the command when one has no equality on a partition. */
static int check_partition_filters(const char *coll_locks, const char *coll_counters) {
    int checked = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++) {
        const char *name = g_seen_name[i];
        bson_iter_t it;
        if (!bson_iter_init_find(&it, g_seen[i], name) || !BSON_ITER_HOLDS_UTF8(&it)) continue;
        const char *coll = bson_iter_utf8(&it, NULL);
        if (strcmp(coll, coll_locks) != 0 && strcmp(coll, coll_counters) != 0) continue;
        const char *paths[2] = {NULL, NULL};
        char p0[64];
        if (strcmp(name, "find") == 0) paths[0] = "filter.partition";
        if (strcmp(name, "findAndModify") == 0) paths[0] = "query.partition";
        if (strcmp(name, "update") == 0 || strcmp(name, "delete") == 0) {
            const char *array = strcmp(name, "update") == 0 ? "updates" : "deletes";
            bson_iter_t stmts, child;
            if (bson_iter_init_find(&stmts, g_seen[i], array) && bson_iter_recurse(&stmts, &child)) {
                while (bson_iter_next(&child)) {
                    snprintf(p0, sizeof p0, "%s.%s.q.partition", array, bson_iter_key(&child));
                    if (int_at(g_seen[i], p0) < 0) {
                        char *json = bson_as_relaxed_extended_json(g_seen[i], NULL);
                        pthread_mutex_unlock(&g_mu);
                        fail_msg("%s on %s without a partition: %s", name, coll, json);
                    }
                    checked++;
                }
            }
            continue;
        }
        if (paths[0] == NULL) continue; /* createIndexes and the like */
        if (int_at(g_seen[i], paths[0]) < 0) {
            char *json = bson_as_relaxed_extended_json(g_seen[i], NULL);
            pthread_mutex_unlock(&g_mu);
            fail_msg("%s on %s without an equality on the partition: %s", name, coll, json);
        }
        checked++;
    }
    pthread_mutex_unlock(&g_mu);
    return checked;
}

/* Every command a publish, batch, claim, batch claim, ack, nack (now and later),
 * extend, unclaim, pause, resume and purge sends to the locks and counters names the
 * partition, as an equality. */
static void every_lock_and_counter_command_names_its_partition(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    mq_error err;
    forget_seen();
    mongomq_command_observer_set(on_command, NULL);
    const char *groups[] = {"a", "b", "customer-17", "g2"};
    for (int n = 0; n < 3; n++)
        for (int i = 0; i < 4; i++) publish(q, groups[i], "e");
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    for (int i = 0; i < 4; i++) ASSERT_MQ(MQ_OK, mq_batch_add(batch, groups[i], "x", 1, 0, &err), err);
    ASSERT_MQ(MQ_OK, mq_publish_batch(q, batch, NULL, &err), err);
    mq_batch_destroy(batch);
    mq_lease *lease = claim_in(q, NULL, 0, MQ_OK);
    ASSERT_MQ(MQ_OK, mq_extend(q, lease, 30, &err), err);
    ASSERT_MQ(MQ_OK, mq_nack(q, lease, 0, &err), err);
    mq_lease_destroy(lease);
    lease = claim_in(q, NULL, 0, MQ_OK);
    ASSERT_MQ(MQ_OK, mq_nack(q, lease, 0.01, &err), err);
    mq_lease_destroy(lease);
    lease = claim_in(q, NULL, 0, MQ_OK);
    ASSERT_MQ(MQ_OK, mq_unclaim(q, lease, &err), err);
    mq_lease_destroy(lease);
    ASSERT_MQ(MQ_OK, mq_pause_group(q, "g2", &err), err);
    ASSERT_MQ(MQ_OK, mq_resume_group(q, "g2", &err), err);
    ASSERT_MQ(MQ_OK, mq_purge_group(q, "customer-17", &err), err);
    tq_sleep(0.02);
    for (;;) { /* drain: single and batch leases, every ack kind (release, drop + recheck) */
        mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
        o.max_events = 2;
        mq_status st = mq_claim_with(q, &o, &lease, &err);
        if (st == MQ_EMPTY) break;
        ASSERT_MQ(MQ_OK, st, err);
        ack(q, lease);
    }
    mongomq_command_observer_set(NULL, NULL);
    int checked = check_partition_filters("parts_locks", "parts_counters");
    printf("[ parts    ] %d filters on locks and counters, each with its partition\n", checked);
    assert_true(checked > 40);
    forget_seen();
    mq_queue_destroy(q);
}

/* ---- waiting claims ---- */

typedef struct {
    mq_queue *queue;
    const char *group;
    double delay;
} publisher;

static void *publish_later(void *arg) {
    publisher *p = arg;
    tq_sleep(p->delay);
    publish(p->queue, p->group, "late");
    return NULL;
}

/* A waiter for partition 3 gets the event published to "a" (partition 3), not the one
 * already waiting in "b" (partition 0). */
static void a_waiting_claim_takes_its_partitions_only(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    publish(q, "b", "early");
    publisher p = {q, "a", 0.2};
    pthread_t th;
    pthread_create(&th, NULL, publish_later, &p);
    const int three[] = {3};
    mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
    o.partitions = three;
    o.partition_count = 1;
    o.timeout_s = 10;
    mq_lease *lease = NULL;
    mq_error err;
    double t0 = tq_monotonic();
    ASSERT_MQ(MQ_OK, mq_claim_with(q, &o, &lease, &err), err);
    double took = tq_monotonic() - t0;
    pthread_join(th, NULL);
    assert_string_equal(mq_lease_group(lease), "a");
    printf("[ parts    ] waiting on partition 3: the publish to it was claimed after %.0f ms\n", took * 1e3);
    assert_true(took < 9);
    ack(q, lease);
    lease = claim_in(q, NULL, 0, MQ_OK);
    assert_string_equal(mq_lease_group(lease), "b");
    ack(q, lease);
    mq_queue_destroy(q);
}

/* An idle waiting claim on 4 partitions sends about what it sends on one: the first
 * round's claims (one per partition), then next.due and at most one claim.lease per
 * round (design.md, "Waiting claims"). Counted: the commands on the queue's locks (the
 * watcher's change stream is one per client, whatever P). */
static int lock_commands(const char *locks) {
    int n = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nseen; i++) {
        bson_iter_t it;
        if (bson_iter_init_find(&it, g_seen[i], g_seen_name[i]) && BSON_ITER_HOLDS_UTF8(&it) &&
            strcmp(bson_iter_utf8(&it, NULL), locks) == 0 && strcmp(g_seen_name[i], "aggregate") != 0)
            n++;
    }
    pthread_mutex_unlock(&g_mu);
    return n;
}

static void an_idle_wait_costs_what_one_partition_costs(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    mq_queue *single = open_p(t, "single", 1);
    int sent[2];
    mq_queue *queues[2] = {single, q};
    const char *locks[2] = {"single_locks", "parts_locks"};
    for (int i = 0; i < 2; i++) {
        mq_claim_opts o = MQ_CLAIM_OPTS_INIT;
        o.timeout_s = 3.5;
        mq_lease *lease = NULL;
        mq_error err;
        forget_seen();
        mongomq_command_observer_set(on_command, NULL);
        ASSERT_MQ(MQ_EMPTY, mq_claim_with(queues[i], &o, &lease, &err), err);
        mongomq_command_observer_set(NULL, NULL);
        sent[i] = lock_commands(locks[i]);
    }
    forget_seen();
    printf("[ parts    ] an idle 3.5 s wait: %d commands on the locks with one partition, %d with 4\n", sent[0],
           sent[1]);
    assert_true(sent[1] <= sent[0] + P);
    mq_queue_destroy(single);
    mq_queue_destroy(q);
}

/* A mongos may shard a partitioned queue's locks and counters on a key that starts
 * with the partition; any other key, or any key on a queue of one partition, is still
 * refused. */
static void a_mongos_may_shard_a_partitioned_queue(void **state) {
    tq *t = *state;
    mq_queue *q = open_p(t, "parts", P);
    mq_queue *single = open_p(t, "single", 1);
    char locks[160], counters[160], single_locks[160], buf[1024];
    snprintf(locks, sizeof locks, "%s.parts_locks", t->db);
    snprintf(counters, sizeof counters, "%s.parts_counters", t->db);
    snprintf(single_locks, sizeof single_locks, "%s.single_locks", t->db);
    bson_t *ok = BCON_NEW("0", "{", "_id", BCON_UTF8(locks), "key", "{", "partition", BCON_INT32(1), "_id",
                          BCON_INT32(1), "}", "}", "1", "{", "_id", BCON_UTF8(counters), "key", "{", "partition",
                          BCON_INT32(1), "_id", BCON_INT32(1), "}", "}");
    assert_int_equal(mongomq_sharded_refusal(q, ok, buf, sizeof buf), 0);
    bson_destroy(ok);
    bson_t *bad = BCON_NEW("0", "{", "_id", BCON_UTF8(locks), "key", "{", "_id", BCON_UTF8("hashed"), "}", "}");
    assert_int_equal(mongomq_sharded_refusal(q, bad, buf, sizeof buf), 1);
    assert_non_null(strstr(buf, "partitioned queue"));
    bson_destroy(bad);
    bad = BCON_NEW("0", "{", "_id", BCON_UTF8(single_locks), "key", "{", "partition", BCON_INT32(1), "_id",
                   BCON_INT32(1), "}", "}");
    assert_int_equal(mongomq_sharded_refusal(single, bad, buf, sizeof buf), 1);
    bson_destroy(bad);
    mq_queue_destroy(single);
    mq_queue_destroy(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_partition_is_the_documented_hash),
        cmocka_unit_test_setup_teardown(open_records_and_refuses_another_p, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(seqs_follow_their_partition, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(fifo_and_rotation, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(partitions_with_groups_take_turns, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(claim_from_a_subset, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(an_empty_claim_costs_one_command_per_partition, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(every_lock_and_counter_command_names_its_partition, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(a_waiting_claim_takes_its_partitions_only, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(an_idle_wait_costs_what_one_partition_costs, tq_setup, tq_teardown),
        cmocka_unit_test_setup_teardown(a_mongos_may_shard_a_partitioned_queue, tq_setup, tq_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
