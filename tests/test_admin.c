/* Stats, repair, purge and drop (lib/admin.cpp; docs/design.md, "Stats, repair and
 * purge"): the exact stats text, the ready/leased/parked split, repair of a publish
 * that died before its lock (and that repair never touches a lock that exists), purge
 * of one group (also while a publish lands in the middle), drop, the server commands
 * of each call, and bad arguments that send nothing.
 * Links the static copy of the library, for the fault hook (lib/fault.hpp). */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.hpp"

/* ---- helpers ---- */

static uint64_t commands(tq *t) { return mq_client_command_count(t->client); }

/* mq_stats_json's text; asserts MQ_OK, that it is JSON, and what it cost. */
static char *stats(tq *t) {
    mq_error err;
    char *text = (char *)&err; /* must be replaced */
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_OK, mq_stats_json(t->queue, &text, &err), err);
    assert_int_equal(commands(t) - before, 4); /* stats.messages, stats.locks, stats.dead, stats.seq */
    assert_non_null(text);
    json_error_t jerr;
    json_t *parsed = json_loads(text, 0, &jerr);
    if (parsed == NULL) fail_msg("mq_stats_json is not JSON (%s): %s", jerr.text, text);
    json_decref(parsed);
    return text;
}

/* A handle that never waited nor repaired by itself. */
#define HANDLE_IDLE "\"handle\":{\"change_streams\":\"none\",\"repair\":{\"failed\":0,\"fixed\":0,\"runs\":0}}"

/* The exact text for a queue in the documented shape (sorted keys, no spaces). */
static void expect_stats(tq *t, const char *expected_fmt_after_queue) {
    char expected[2048];
    snprintf(expected, sizeof expected, expected_fmt_after_queue, t->db);
    char *text = stats(t);
    if (strcmp(text, expected) != 0) fail_msg("stats:\n  got      %s\n  expected %s", text, expected);
    mq_free(text);
}

static int64_t repair(tq *t, uint64_t expected_commands) {
    mq_error err;
    int64_t fixed = -1;
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, &fixed, &err), err);
    assert_int_equal(commands(t) - before, expected_commands);
    return fixed;
}

static void purge(tq *t, const char *group) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_purge_group(t->queue, group, &err), err);
}

/* A lock as stored, for comparing before/after (caller bson_destroy()s it). */
static bson_t *lock_of(tq *t, const char *group) {
    char filter[256];
    snprintf(filter, sizeof filter, "{\"_id\": \"%s\"}", group);
    bson_t *lock = tq_find_one(t, "locks", filter);
    if (lock == NULL) fail_msg("group %s has no lock", group);
    return lock;
}

static void expect_same_lock(tq *t, const char *group, bson_t *before) {
    bson_t *after = lock_of(t, group);
    if (!bson_equal(before, after)) {
        char *a = bson_as_canonical_extended_json(before, NULL), *b = bson_as_canonical_extended_json(after, NULL);
        fail_msg("lock %s changed:\n  before %s\n  after  %s", group, a, b);
    }
    bson_destroy(after);
    bson_destroy(before);
}

static double lock_double(tq *t, const char *group, const char *field) {
    bson_t *lock = lock_of(t, group);
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, lock, field) && BSON_ITER_HOLDS_NUMBER(&it));
    double v = bson_iter_as_double(&it);
    bson_destroy(lock);
    return v;
}

/* Is {prefix}_<suffix> among the test database's collections? */
static int collection_exists(tq *t, const char *suffix) {
    char name[128];
    snprintf(name, sizeof name, "%s_%s", t->prefix, suffix);
    mongoc_database_t *db = mongoc_client_get_database(t->raw, t->db);
    bson_error_t error;
    char **names = mongoc_database_get_collection_names_with_opts(db, NULL, &error);
    if (names == NULL) fail_msg("listCollections: %s", error.message);
    int found = 0;
    for (char **n = names; *n != NULL; n++) found = found || strcmp(*n, name) == 0;
    bson_strfreev(names);
    mongoc_database_destroy(db);
    return found;
}

/* ---- fault hook: fail one command, or run a callback just before it ---- */

typedef struct {
    const char *command;
    int code;              /* injected error (-1: connection dropped), or 0 */
    void (*before)(tq *t); /* run once, just before `command` is sent */
    tq *t;
    int calls;
} rule;

static rule g_rule;

static int hook(const char *command, void *ctx) {
    rule *r = ctx;
    if (r->command == NULL || strcmp(command, r->command) != 0) return 0;
    r->calls++;
    if (r->calls > 1) return 0;
    if (r->before != NULL) {
        r->before(r->t);
        return 0;
    }
    return r->code;
}

static void inject(const char *command, int code, void (*before)(tq *), tq *t) {
    g_rule = (rule){command, code, before, t, 0};
    mongomq_fault_set(hook, &g_rule);
}

static void no_faults(void) { mongomq_fault_set(NULL, NULL); }

static int teardown(void **state) {
    no_faults();
    return tq_teardown(state);
}

/* A publish that dies between its insert and its lock upsert: the event has no lock.
 * (A server error, not a connection failure: the publish retries those.) */
static int64_t publish_without_lock(tq *t, const char *group, int priority, double not_before) {
    inject("publish.lock", 96 /* OperationFailed (a step-down code would count as outcome unknown) */, NULL, t);
    mq_error err;
    int64_t seq = 0;
    mq_status st = not_before > 0 ? mq_publish_at(t->queue, group, "orphan", 6, priority, not_before, &seq, &err)
                                  : mq_publish(t->queue, group, "orphan", 6, priority, &seq, &err);
    if (st != MQ_ERR_SERVER) fail_msg("publish with a failing publish.lock: %s", mq_status_name(st));
    assert_int_equal(g_rule.calls, 1);
    no_faults();
    char filter[256];
    snprintf(filter, sizeof filter, "{\"group_id\": \"%s\"}", group);
    bson_t *msg = tq_find_one(t, "messages", filter);
    assert_non_null(msg); /* inserted ... */
    bson_iter_t it;
    assert_true(bson_iter_init_find(&it, msg, "_id"));
    seq = bson_iter_as_int64(&it);
    bson_destroy(msg);
    snprintf(filter, sizeof filter, "{\"_id\": \"%s\"}", group);
    assert_int_equal(tq_count(t, "locks", filter), 0); /* ... but no lock */
    return seq;
}

/* ---- stats ---- */

#define NO_PRIORITIES                                                                        \
  "\"priorities\":{\"0\":{\"groups\":0,\"messages\":0},\"1\":{\"groups\":0,\"messages\":0}," \
  "\"2\":{\"groups\":0,\"messages\":0},\"3\":{\"groups\":0,\"messages\":0},\"4\":{\"groups\":0,\"messages\":0}}"

static void stats_of_an_empty_queue(void **state) {
    tq *t = *state;
    expect_stats(t,
                 "{\"dead\":0,\"groups\":{\"leased\":0,\"parked\":0,\"paused\":0,\"ready\":0,\"total\":0}," HANDLE_IDLE
                 ",\"messages\":0,"
                 "\"now\":1000000000.0,\"oldest_message_age_s\":null,\"partitions\":1," NO_PRIORITIES
                 ",\"published\":0,\"queue\":\"%s.mq\"}");
}

/* Groups at priorities 0, 1 (scheduled), 2 and 4: one ready, one leased, one leased
 * then nacked with a delay (it keeps its token, so it counts as leased), one parked
 * (a scheduled head: no token). */
static void stats_count_groups_messages_and_dead_letters(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "g0", "a", 0); /* the oldest: 1e9 */
    tq_advance(t, 1);
    tq_publish(t, "g2", "b", 2);
    tq_advance(t, 1);
    tq_publish(t, "g4", "c", 4);
    tq_advance(t, 1);
    tq_publish(t, "g0", "d", 0);
    ASSERT_MQ(MQ_OK, mq_publish_at(t->queue, "g1", "later", 5, 1, t->now + 100, NULL, &err), err);
    tq_insert_json(t, "dead",
                   "{\"_id\": {\"$numberLong\": \"99\"}, \"group_id\": \"x\", \"event\": \"e\", "
                   "\"priority\": 0, \"attempts\": 5, \"dead_at\": 1.0}");
    mq_lease *leased = tq_claim(t, 60, 4);
    assert_string_equal(mq_lease_group(leased), "g4");
    mq_lease *nacked = tq_claim(t, 60, 2);
    assert_string_equal(mq_lease_group(nacked), "g2");
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, nacked, 30, &err), err);
    tq_advance(t, 4); /* the first publish was 7 s ago */

    expect_stats(t,
                 "{\"dead\":1,\"groups\":{\"leased\":2,\"parked\":1,\"paused\":0,\"ready\":1,\"total\":4}," HANDLE_IDLE
                 ",\"messages\":5,"
                 "\"now\":1000000007.0,\"oldest_message_age_s\":7.0,\"partitions\":1,"
                 "\"priorities\":{\"0\":{\"groups\":1,\"messages\":2},\"1\":{\"groups\":1,\"messages\":1},"
                 "\"2\":{\"groups\":1,\"messages\":1},\"3\":{\"groups\":0,\"messages\":0},"
                 "\"4\":{\"groups\":1,\"messages\":1}},\"published\":5,\"queue\":\"%s.mq\"}");

    /* The lease and the park run out: every group is ready; the scheduled head's
     * group is ready too, once its time has come. */
    tq_advance(t, 100);
    expect_stats(t,
                 "{\"dead\":1,\"groups\":{\"leased\":0,\"parked\":0,\"paused\":0,\"ready\":4,\"total\":4}," HANDLE_IDLE
                 ",\"messages\":5,"
                 "\"now\":1000000107.0,\"oldest_message_age_s\":107.0,\"partitions\":1,"
                 "\"priorities\":{\"0\":{\"groups\":1,\"messages\":2},\"1\":{\"groups\":1,\"messages\":1},"
                 "\"2\":{\"groups\":1,\"messages\":1},\"3\":{\"groups\":0,\"messages\":0},"
                 "\"4\":{\"groups\":1,\"messages\":1}},\"published\":5,\"queue\":\"%s.mq\"}");
    mq_lease_destroy(leased);
    mq_lease_destroy(nacked);
}

/* harel's messages have no published_at and no priority: the oldest one's age is
 * unknown (null), and they count in "messages" but under no priority. */
static void stats_of_a_harel_message(void **state) {
    tq *t = *state;
    tq_insert_json(t, "counters", "{\"_id\": \"seq\", \"n\": {\"$numberLong\": \"1\"}}");
    tq_insert_json(t, "messages", "{\"_id\": 1, \"group_id\": \"h\", \"event\": \"{}\"}"); /* int32 _id */
    tq_insert_json(t, "locks", "{\"_id\": \"h\", \"available_at\": 0.0, \"token\": null, \"priority\": 3}");
    tq_advance(t, 5);
    assert_int_equal(tq_publish(t, "ours", "e", 1), 2);
    expect_stats(t,
                 "{\"dead\":0,\"groups\":{\"leased\":0,\"parked\":0,\"paused\":0,\"ready\":2,\"total\":2}," HANDLE_IDLE
                 ",\"messages\":2,"
                 "\"now\":1000000005.0,\"oldest_message_age_s\":null,\"partitions\":1,"
                 "\"priorities\":{\"0\":{\"groups\":0,\"messages\":0},\"1\":{\"groups\":1,\"messages\":1},"
                 "\"2\":{\"groups\":0,\"messages\":0},\"3\":{\"groups\":1,\"messages\":0},"
                 "\"4\":{\"groups\":0,\"messages\":0}},\"published\":2,\"queue\":\"%s.mq\"}");

    /* Once the harel message is gone, ours is the oldest. */
    mq_lease *lease = tq_claim(t, 30, 3);
    assert_string_equal(mq_lease_group(lease), "h");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_advance(t, 2);
    char *text = stats(t);
    json_t *root = json_loads(text, 0, NULL);
    assert_true(json_is_real(json_object_get(root, "oldest_message_age_s")));
    assert_true(json_real_value(json_object_get(root, "oldest_message_age_s")) == 2.0);
    assert_int_equal(json_integer_value(json_object_get(root, "messages")), 1);
    json_decref(root);
    mq_free(text);
}

/* ---- repair ---- */

static void repair_gives_an_event_without_lock_its_lock(void **state) {
    tq *t = *state;
    int64_t seq = publish_without_lock(t, "g", 3, 0);
    tq_expect_empty(t, 0); /* nobody can claim it */

    assert_int_equal(repair(t, 4), 1); /* repair.groups, repair.locks, repair.heads, repair.lock */
    bson_t *lock = lock_of(t, "g");
    char *json = bson_as_relaxed_extended_json(lock, NULL);
    /* in line from the event's publish (the manual clock's 1e9) */
    assert_string_equal(json,
                        "{ \"_id\" : \"g\", \"available_at\" : 1000000000.0, \"token\" : null, \"priority\" : 3, "
                        "\"attempts\" : 0, \"head\" : 1 }");
    bson_free(json);
    bson_destroy(lock);

    mq_lease *lease = tq_claim(t, 30, 3); /* the priority of its event */
    assert_int_equal(mq_lease_seq(lease), seq);
    assert_int_equal(mq_lease_attempts(lease), 1);
    mq_lease_destroy(lease);

    assert_int_equal(repair(t, 2), 0); /* nothing missing: no write */
}

/* Repair only ever inserts: a leased lock, a lock parked by a nack (token kept), a
 * group parked by its scheduled head (token null) and a plain ready lock come out
 * byte for byte the same, while the one group without a lock gets one. */
static void repair_never_touches_an_existing_lock(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "leased", "a", 4);
    tq_publish(t, "nacked", "b", 3);
    tq_publish(t, "ready", "c", 0);
    ASSERT_MQ(MQ_OK, mq_publish_at(t->queue, "scheduled", "d", 1, 2, t->now + 50, NULL, &err), err);
    mq_lease *leased = tq_claim(t, 60, 4);
    assert_string_equal(mq_lease_group(leased), "leased");
    mq_lease *nacked = tq_claim(t, 60, 3);
    assert_string_equal(mq_lease_group(nacked), "nacked");
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, nacked, 30, &err), err);
    publish_without_lock(t, "orphan", 1, 0);

    bson_t *before[4] = {lock_of(t, "leased"), lock_of(t, "nacked"), lock_of(t, "ready"), lock_of(t, "scheduled")};
    assert_int_equal(repair(t, 4), 1);
    expect_same_lock(t, "leased", before[0]);
    expect_same_lock(t, "nacked", before[1]);
    expect_same_lock(t, "ready", before[2]);
    expect_same_lock(t, "scheduled", before[3]);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"orphan\", \"priority\": 1, \"token\": null}"), 1);

    /* The holders still own their groups. */
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, leased, 60, &err), err);
    tq_ack(t, leased);
    mq_lease_destroy(leased);
    mq_lease_destroy(nacked);
}

/* A scheduled orphan's lock waits for its time, as the publish's would have; a
 * harel message (no priority) gets priority 0; a group_id that is no string is not a
 * group of ours and is skipped. */
/* A lock that appears between repair's read of the locks and its upserts (a publish
 * and a claim of that very group, run just before repair.lock is sent) is left as it
 * is: the upsert only ever inserts. */
static mq_lease *g_meanwhile_lease;
static bson_t *g_meanwhile_lock;

static void publish_and_claim_meanwhile(tq *t) {
    tq_publish(t, "orphan", "second", 0);
    g_meanwhile_lease = tq_claim(t, 60, 0);
    assert_string_equal(mq_lease_group(g_meanwhile_lease), "orphan");
    g_meanwhile_lock = lock_of(t, "orphan");
}

static void repair_never_overwrites_a_lock_made_meanwhile(void **state) {
    tq *t = *state;
    publish_without_lock(t, "orphan", 2, 0);
    inject("repair.lock", 0, publish_and_claim_meanwhile, t);
    /* repair's 4, the publish's 3, the claim's 3: its lock counts the publish's event,
     * but the orphan before it is the head (claim.rehead) */
    assert_int_equal(repair(t, 4 + 3 + 3), 0);
    assert_int_equal(g_rule.calls, 1);
    no_faults();
    expect_same_lock(t, "orphan", g_meanwhile_lock); /* still leased, token and all */
    tq_ack(t, g_meanwhile_lease);
    mq_lease_destroy(g_meanwhile_lease);
}

static void repair_of_scheduled_harel_and_foreign_messages(void **state) {
    tq *t = *state;
    publish_without_lock(t, "later", 2, t->now + 40);
    tq_insert_json(t, "messages", "{\"_id\": {\"$numberLong\": \"100\"}, \"group_id\": \"h\", \"event\": \"x\"}");
    tq_insert_json(t, "messages", "{\"_id\": {\"$numberLong\": \"101\"}, \"group_id\": 5, \"event\": \"x\"}");
    tq_insert_json(t, "messages", "{\"_id\": {\"$numberLong\": \"102\"}, \"event\": \"x\"}");

    assert_int_equal(repair(t, 4), 2);
    assert_true(lock_double(t, "later", "available_at") == t->now + 40);
    assert_true(lock_double(t, "later", "priority") == 2);
    assert_true(lock_double(t, "h", "available_at") == t->now); /* no published_at (harel): now */
    assert_true(lock_double(t, "h", "priority") == 0);
    assert_int_equal(tq_count(t, "locks", "{}"), 2);

    mq_lease *lease = tq_claim(t, 100, 0);
    assert_string_equal(mq_lease_group(lease), "h");
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0); /* "later" is not due yet */
    tq_advance(t, 41);
    lease = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(lease), "later");
    mq_lease_destroy(lease);
}

static void repair_of_an_empty_queue(void **state) {
    tq *t = *state;
    assert_int_equal(repair(t, 1), 0); /* repair.groups finds nothing: done */
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_repair(t->queue, NULL, &err), err); /* fixed may be NULL */
}

/* ---- purge ---- */

static void purge_removes_one_group(void **state) {
    tq *t = *state;
    tq_publish(t, "doomed", "a", 2);
    tq_publish(t, "doomed", "b", 2);
    tq_publish(t, "kept", "x", 0);
    tq_publish(t, "kept", "y", 0);
    tq_publish(t, "doomed", "c", 2);
    mq_lease *holder = tq_claim(t, 60, 2);
    assert_string_equal(mq_lease_group(holder), "doomed");
    bson_t *kept = lock_of(t, "kept");

    uint64_t before = commands(t);
    purge(t, "doomed");
    assert_int_equal(commands(t) - before, 3); /* purge.messages, purge.lock, purge.recheck */
    assert_int_equal(tq_count(t, "messages", "{\"group_id\": \"doomed\"}"), 0);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"doomed\"}"), 0);
    assert_int_equal(tq_count(t, "messages", "{\"group_id\": \"kept\"}"), 2);
    expect_same_lock(t, "kept", kept);

    /* The worker that held the group lost it. */
    mq_error err;
    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, holder, &err), err);
    mq_lease_destroy(holder);

    /* The other group goes on; the purged one is new again at its next publish. */
    char buf[16];
    mq_lease *lease = tq_claim(t, 30, 0);
    assert_string_equal(tq_event_text(lease, buf, sizeof buf), "x");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    int64_t seq = tq_publish(t, "doomed", "fresh", 4);
    lease = tq_claim(t, 30, 4);
    assert_int_equal(mq_lease_seq(lease), seq);
    mq_lease_destroy(lease);

    purge(t, "no-such-group"); /* nothing to do is fine */
}

/* A publish whose insert and lock upsert land between the purge's two deletes: the
 * purge deletes the lock the publish just made, so its re-check must see the new
 * event and re-create the lock, or the event would never be claimed. */
static void publish_during_purge(tq *t) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "g", "late", 4, 3, NULL, &err), err);
}

static void purge_keeps_an_event_published_meanwhile(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "old", 1);
    inject("purge.lock", 0, publish_during_purge, t);
    uint64_t before = commands(t);
    purge(t, "g");
    assert_int_equal(g_rule.calls, 1);
    no_faults();
    assert_int_equal(commands(t) - before, 3 + 4); /* the publish's 3, and purge.relock */

    char buf[16];
    mq_lease *lease = tq_claim(t, 30, 3); /* the new life's priority */
    assert_string_equal(tq_event_text(lease, buf, sizeof buf), "late");
    tq_ack(t, lease);
    mq_lease_destroy(lease);
    tq_expect_empty(t, 0);
}

/* ---- drop ---- */

static void drop_removes_the_queue(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "a", 0);
    tq_publish(t, "h", "b", 0);
    tq_insert_json(t, "dead", "{\"_id\": {\"$numberLong\": \"7\"}, \"group_id\": \"x\", \"event\": \"e\"}");
    mq_lease *lease = tq_claim(t, 30, 0);
    const char *suffixes[] = {"messages", "locks", "counters", "dead"};
    for (int i = 0; i < 4; i++) assert_true(collection_exists(t, suffixes[i]));

    mq_error err;
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_OK, mq_queue_drop(t->queue, &err), err);
    assert_int_equal(commands(t) - before, 4);
    for (int i = 0; i < 4; i++)
        if (collection_exists(t, suffixes[i])) fail_msg("%s_%s still exists", t->prefix, suffixes[i]);
    ASSERT_MQ(MQ_OK, mq_queue_drop(t->queue, &err), err); /* nothing left to drop is fine */

    ASSERT_MQ(MQ_LEASE_LOST, mq_ack(t->queue, lease, &err), err);
    mq_lease_destroy(lease);

    /* The handle stays valid and the queue starts afresh. */
    expect_stats(t,
                 "{\"dead\":0,\"groups\":{\"leased\":0,\"parked\":0,\"paused\":0,\"ready\":0,\"total\":0}," HANDLE_IDLE
                 ",\"messages\":0,"
                 "\"now\":1000000000.0,\"oldest_message_age_s\":null,\"partitions\":1," NO_PRIORITIES
                 ",\"published\":0,\"queue\":\"%s.mq\"}");
    assert_int_equal(tq_publish(t, "g", "again", 0), 1);
    lease = tq_claim(t, 30, 0);
    assert_int_equal(mq_lease_seq(lease), 1);
    tq_ack(t, lease);
    mq_lease_destroy(lease);
}

/* ---- bad arguments: MQ_ERR_ARG naming the argument, nothing sent, nothing changed ---- */

#define EXPECT_ARG(t, needle, call)                                                                 \
  do {                                                                                              \
    char *before_ = tq_snapshot(t);                                                                 \
    int64_t dead_ = tq_count(t, "dead", "{}");                                                      \
    uint64_t commands_ = commands(t);                                                               \
    mq_error err;                                                                                   \
    memset(&err, 'Z', sizeof err);                                                                  \
    mq_status st_ = (call);                                                                         \
    if (st_ != MQ_ERR_ARG) fail_msg("%s returned %s: %s", #call, mq_status_name(st_), err.message); \
    assert_int_equal(err.status, MQ_ERR_ARG);                                                       \
    if (strstr(err.message, (needle)) == NULL)                                                      \
      fail_msg("%s: \"%s\" does not name \"%s\"", #call, err.message, (needle));                    \
    assert_int_equal(commands(t), commands_);                                                       \
    char *after_ = tq_snapshot(t);                                                                  \
    assert_string_equal(before_, after_);                                                           \
    assert_int_equal(tq_count(t, "dead", "{}"), dead_);                                             \
    free(before_);                                                                                  \
    free(after_);                                                                                   \
  } while (0)

static void bad_arguments_send_nothing(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "a", 2);
    tq_insert_json(t, "dead", "{\"_id\": {\"$numberLong\": \"7\"}, \"group_id\": \"x\", \"event\": \"e\"}");
    char *text = (char *)t;
    int64_t fixed = 42;
    char long_id[MQ_GROUP_ID_MAX + 2];
    memset(long_id, 'g', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = '\0';

    EXPECT_ARG(t, "mq_stats_json: queue is NULL", mq_stats_json(NULL, &text, &err));
    assert_null(text);
    EXPECT_ARG(t, "mq_stats_json: json_out is NULL", mq_stats_json(t->queue, NULL, &err));

    EXPECT_ARG(t, "mq_repair: queue is NULL", mq_repair(NULL, &fixed, &err));
    assert_int_equal(fixed, 0);

    EXPECT_ARG(t, "mq_purge_group: queue is NULL", mq_purge_group(NULL, "g", &err));
    EXPECT_ARG(t, "mq_purge_group: group_id", mq_purge_group(t->queue, NULL, &err));
    EXPECT_ARG(t, "mq_purge_group: group_id", mq_purge_group(t->queue, "", &err));
    EXPECT_ARG(t, "mq_purge_group: group_id", mq_purge_group(t->queue, "bad\xff", &err));
    EXPECT_ARG(t, "mq_purge_group: group_id", mq_purge_group(t->queue, long_id, &err));

    EXPECT_ARG(t, "mq_queue_drop: queue is NULL", mq_queue_drop(NULL, &err));

    /* err may be NULL. */
    assert_int_equal(mq_stats_json(NULL, &text, NULL), MQ_ERR_ARG);
    assert_int_equal(mq_repair(NULL, NULL, NULL), MQ_ERR_ARG);
    assert_int_equal(mq_purge_group(t->queue, NULL, NULL), MQ_ERR_ARG);
    assert_int_equal(mq_queue_drop(NULL, NULL), MQ_ERR_ARG);
    mq_free(NULL);
}

/* ---- peek and dead list: read-only looks ---- */

static void peek_shows_events_without_claiming(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "a", "first", 2);
    int64_t bin = 0;
    const unsigned char raw[] = {0x00, 0xff, 0x10};
    ASSERT_MQ(MQ_OK, mq_publish(t->queue, "b", raw, sizeof raw, 0, &bin, &err), err);
    tq_publish(t, "a", "second", 2);
    uint64_t before = commands(t);
    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_peek_json(t->queue, NULL, 10, &json, &err), err);
    assert_int_equal(commands(t) - before, 1);
    json_error_t jerr;
    json_t *arr = json_loads(json, 0, &jerr);
    assert_non_null(arr);
    assert_int_equal(json_array_size(arr), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "event")), "first");
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "group")), "a");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 0), "priority")), 2);
    json_t *b = json_object_get(json_array_get(arr, 1), "event");
    assert_string_equal(json_string_value(json_object_get(b, "base64")), "AP8Q");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(arr, 1), "seq")), bin);
    json_decref(arr);
    mq_free(json);

    ASSERT_MQ(MQ_OK, mq_peek_json(t->queue, "a", 1, &json, &err), err);
    arr = json_loads(json, 0, &jerr);
    assert_int_equal(json_array_size(arr), 1);
    json_decref(arr);
    mq_free(json);
    /* Nothing was claimed: a claim still gets a's first. */
    mq_lease *l = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(l), "a");
    mq_lease_destroy(l);

    ASSERT_MQ(MQ_ERR_ARG, mq_peek_json(t->queue, NULL, 0, &json, &err), err);
    assert_non_null(strstr(err.message, "max_events"));
    assert_null(json);
    ASSERT_MQ(MQ_ERR_ARG, mq_peek_json(t->queue, "", 1, &json, &err), err);
    assert_non_null(strstr(err.message, "group_id"));
}

static void dead_list_shows_dead_letters(void **state) {
    tq *t = *state;
    mq_error err;
    int64_t seq = tq_publish(t, "g", "doomed", 1);
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    mq_lease *l = tq_claim(t, 30, 0);
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
    mq_lease_destroy(l);
    tq_expect_empty(t, 0); /* moves it to the dead letters */
    char *json = NULL;
    ASSERT_MQ(MQ_OK, mq_dead_list_json(t->queue, 5, &json, &err), err);
    json_error_t jerr;
    json_t *arr = json_loads(json, 0, &jerr);
    assert_int_equal(json_array_size(arr), 1);
    json_t *d = json_array_get(arr, 0);
    assert_int_equal(json_integer_value(json_object_get(d, "seq")), seq);
    assert_int_equal(json_integer_value(json_object_get(d, "attempts")), 1);
    assert_string_equal(json_string_value(json_object_get(d, "event")), "doomed");
    assert_non_null(json_object_get(d, "dead_at"));
    json_decref(arr);
    mq_free(json);
}

/* The texts mq_peek_json, mq_dead_list_json and mq_stats_json return are freed with
 * mq_free, whatever allocators the application gave jansson (json_set_alloc_funcs is
 * process-wide): here jansson's allocations sit 16 bytes into their block, so a text
 * from json_dumps freed with free() would crash. */
static void *offset_malloc(size_t n) {
    char *p = malloc(n + 16);
    return p != NULL ? p + 16 : NULL;
}
static void offset_free(void *p) {
    if (p != NULL) free((char *)p - 16);
}

static void texts_are_ours_whatever_jansson_allocates_with(void **state) {
    tq *t = *state;
    tq_publish(t, "g", "e", 0);
    json_set_alloc_funcs(offset_malloc, offset_free);
    mq_error err;
    char *text = NULL;
    mq_status peek = mq_peek_json(t->queue, NULL, 10, &text, &err);
    mq_free(text);
    mq_status dead = mq_dead_list_json(t->queue, 10, &text, &err);
    mq_free(text);
    mq_status stats = mq_stats_json(t->queue, &text, &err);
    mq_free(text);
    json_set_alloc_funcs(malloc, free);
    assert_int_equal(peek, MQ_OK);
    assert_int_equal(dead, MQ_OK);
    assert_int_equal(stats, MQ_OK);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, tq_setup_fake_clock, teardown)
    const struct CMUnitTest tests[] = {
        T(stats_of_an_empty_queue),
        T(texts_are_ours_whatever_jansson_allocates_with),
        T(stats_count_groups_messages_and_dead_letters),
        T(stats_of_a_harel_message),
        T(repair_gives_an_event_without_lock_its_lock),
        T(repair_never_touches_an_existing_lock),
        T(repair_never_overwrites_a_lock_made_meanwhile),
        T(repair_of_scheduled_harel_and_foreign_messages),
        T(repair_of_an_empty_queue),
        T(purge_removes_one_group),
        T(purge_keeps_an_event_published_meanwhile),
        T(drop_removes_the_queue),
        T(bad_arguments_send_nothing),
        T(peek_shows_events_without_claiming),
        T(dead_list_shows_dead_letters),
    };
#undef T
    return cmocka_run_group_tests_name("admin", tests, NULL, NULL);
}
