/* Groups for tooling (lib/groups.cpp; docs/design.md, "Listing groups", "Pausing a
 * group"): every field of a listed group in each state, each filter, paging by id and
 * by due (ties included) visiting every group once, pause and resume (never claimed,
 * by us or by harel's filter; the holder keeps its lease; the pause outlives a drain,
 * a refill and a purge; pausing ahead), the stats' paused and published counts, dead
 * letters by page, the server commands of each call, and bad arguments that send
 * nothing. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t commands(tq *t) { return mq_client_command_count(t->client); }

/* mq_groups_json parsed; asserts MQ_OK and that it is JSON. */
static json_t *groups(tq *t, const mq_groups_opts *opts) {
    mq_error err;
    char *text = NULL;
    ASSERT_MQ(MQ_OK, mq_groups_json(t->queue, opts, &text, &err), err);
    json_error_t jerr;
    json_t *page = json_loads(text, 0, &jerr);
    if (page == NULL) fail_msg("mq_groups_json is not JSON (%s): %s", jerr.text, text);
    mq_free(text);
    return page;
}

/* The row of `group` in a page, or NULL. */
static json_t *row(json_t *page, const char *group) {
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(page, "groups"), i, r) {
        if (strcmp(json_string_value(json_object_get(r, "group")), group) == 0) return r;
    }
    return NULL;
}

static size_t rows(json_t *page) { return json_array_size(json_object_get(page, "groups")); }

/* The group ids of a page with these filters, joined by "," in page order. */
static void ids_of(tq *t, const mq_groups_opts *opts, char *out, size_t size) {
    json_t *page = groups(t, opts);
    out[0] = '\0';
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(page, "groups"), i, r) {
        if (i > 0) strncat(out, ",", size - strlen(out) - 1);
        strncat(out, json_string_value(json_object_get(r, "group")), size - strlen(out) - 1);
    }
    json_decref(page);
}

static const char *str(json_t *r, const char *key) { return json_string_value(json_object_get(r, key)); }
static double num(json_t *r, const char *key) { return json_number_value(json_object_get(r, key)); }
static int is_null(json_t *r, const char *key) { return json_is_null(json_object_get(r, key)); }

static void pause_group(tq *t, const char *group) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_pause_group(t->queue, group, &err), err);
}
static void resume_group(tq *t, const char *group) {
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_resume_group(t->queue, group, &err), err);
}

/* One group in each state, on the fake clock (1e9 s): a ready with 3 events, b
 * leased by "w1" (2 s ago), c parked (its first event scheduled 100 s ahead), d
 * paused (priority 3 kept), e nacked twice (attempts 2, ready again). */
static void fill(tq *t) {
    mq_error err;
    tq_publish(t, "a", "a1", 0);
    tq_advance(t, 1);
    tq_publish(t, "a", "a2", 0);
    tq_publish(t, "a", "a3", 0);
    tq_publish(t, "b", "b1", 1);
    tq_publish(t, "e", "e1", 0);
    mq_publish_opts later = MQ_PUBLISH_OPTS_INIT;
    later.not_before = mq_queue_now(t->queue) + 100;
    ASSERT_MQ(MQ_OK, mq_publish_with(t->queue, "c", "c1", 2, &later, NULL, &err), err);
    tq_publish(t, "d", "d1", 3);
    pause_group(t, "d");
    /* e delivered twice: the first round holds a, b and e (due in that line) and nacks
     * e to retry now (available_at 0, first in line), giving a and b back unchanged
     * (unclaim); the second round's claim is e again, nacked again. */
    mq_claim_opts co = MQ_CLAIM_OPTS_INIT;
    mq_lease *held[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &co, &held[i], &err), err);
    for (int i = 0; i < 3; i++) {
        if (strcmp(mq_lease_group(held[i]), "e") == 0)
            ASSERT_MQ(MQ_OK, mq_nack(t->queue, held[i], 0, &err), err);
        else
            ASSERT_MQ(MQ_OK, mq_unclaim(t->queue, held[i], &err), err);
        mq_lease_destroy(held[i]);
    }
    mq_lease *again = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &co, &again, &err), err);
    assert_string_equal(mq_lease_group(again), "e");
    ASSERT_MQ(MQ_OK, mq_nack(t->queue, again, 0, &err), err);
    mq_lease_destroy(again);
    /* b: leased by w1, then 2 s pass */
    mq_claim_opts w1 = MQ_CLAIM_OPTS_INIT;
    w1.worker_id = "host:7:w1";
    w1.min_priority = 1;
    w1.visibility_s = 60;
    mq_lease *b = NULL;
    ASSERT_MQ(MQ_OK, mq_claim_with(t->queue, &w1, &b, &err), err);
    assert_string_equal(mq_lease_group(b), "b");
    mq_lease_destroy(b);
    tq_advance(t, 2);
}

static void each_state_and_its_fields(void **state) {
    tq *t = *state;
    fill(t);
    uint64_t before = commands(t);
    json_t *page = groups(t, NULL);
    assert_int_equal(commands(t) - before, 3); /* groups.page, groups.backlog, groups.heads */
    assert_int_equal(rows(page), 5);
    assert_true(is_null(page, "next"));
    const double now = num(page, "now");
    assert_true(now == 1e9 + 3);

    json_t *a = row(page, "a");
    assert_string_equal(str(a, "state"), "ready");
    assert_int_equal((int)num(a, "backlog"), 3);
    assert_int_equal((int)num(a, "priority"), 0);
    assert_true(is_null(a, "holder") && is_null(a, "held_for_s") && is_null(a, "lease_deadline"));
    assert_true(num(a, "head_age_s") == 3.0); /* a1 was published at 1e9 */
    assert_false(json_is_true(json_object_get(a, "paused")));

    json_t *b = row(page, "b");
    assert_string_equal(str(b, "state"), "leased");
    assert_string_equal(str(b, "holder"), "host:7:w1"); /* the token minus its random part */
    assert_true(num(b, "held_for_s") == 2.0);
    assert_true(num(b, "lease_deadline") == 1e9 + 1 + 60);
    assert_int_equal((int)num(b, "priority"), 1);
    assert_int_equal((int)num(b, "attempts"), 1);
    assert_int_equal((int)num(b, "backlog"), 1);

    json_t *c = row(page, "c");
    assert_string_equal(str(c, "state"), "parked");
    assert_true(num(c, "available_at") == 1e9 + 1 + 100);
    assert_true(is_null(c, "holder"));

    json_t *d = row(page, "d");
    assert_string_equal(str(d, "state"), "paused");
    assert_true(json_is_true(json_object_get(d, "paused")));
    assert_int_equal((int)num(d, "priority"), 3); /* the priority, not its paused encoding */

    json_t *e = row(page, "e");
    assert_string_equal(str(e, "state"), "ready");
    assert_int_equal((int)num(e, "attempts"), 2);
    assert_int_equal((int)num(e, "head"), 5);
    json_decref(page);
}

static void filters(void **state) {
    tq *t = *state;
    fill(t);
    char ids[256];
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a,b,c,d,e"); /* by id */
    o.states = MQ_GROUP_READY;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a,e");
    o.states = MQ_GROUP_LEASED | MQ_GROUP_PAUSED;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "b,d");
    o.states = MQ_GROUP_PARKED;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "c");
    o.states = 0;
    o.min_attempts = 2; /* "stuck" */
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "e");
    o.min_attempts = 0;
    o.held_longer_than_s = 1.5;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "b");
    o.held_longer_than_s = 2.5;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "");
    o.held_longer_than_s = 0;
    o.parked_beyond_s = 90; /* c is due in 98 s, b in 59 s */
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "c");
    o.parked_beyond_s = 0;
    o.sort = MQ_GROUPS_SORT_DUE; /* the line: e (nacked to 0), a (1e9), then b, c by available_at; d is paused */
    o.states = MQ_GROUP_READY | MQ_GROUP_LEASED | MQ_GROUP_PARKED;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "e,a,b,c");
}

static void prefix_is_literal(void **state) {
    tq *t = *state;
    tq_publish(t, "a.b*1", "x", 0);
    tq_publish(t, "aXb*2", "x", 0);
    tq_publish(t, "a.b", "x", 0);
    tq_publish(t, "b", "x", 0);
    tq_publish(t, "\xc3\xa9t\xc3\xa9", "x", 0);
    char ids[256];
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    o.id_prefix = "a.b*";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a.b*1");
    o.id_prefix = "a.";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a.b,a.b*1");
    o.id_prefix = "\xc3\xa9";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "\xc3\xa9t\xc3\xa9");
    /* pages of one with a prefix: the cursor and the prefix both hold (the model test
     * found them sent so that the test server dropped the cursor: page 1 forever) */
    o.id_prefix = "a";
    o.limit = 1;
    o.after = NULL;
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a.b");
    o.after = "id:a.b";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "a.b*1");
    o.after = "id:a.b*1";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "aXb*2");
    o.after = "id:aXb*2";
    ids_of(t, &o, ids, sizeof ids);
    assert_string_equal(ids, "");
}

/* Walks every page with `limit`, checking each group comes exactly once. */
static void walk(tq *t, int sort, size_t limit, int groups_total) {
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    o.sort = sort;
    o.limit = limit;
    char *seen = calloc((size_t)groups_total, 1);
    char after[256] = "";
    int pages = 0, got = 0;
    for (;;) {
        o.after = after[0] ? after : NULL;
        json_t *page = groups(t, &o);
        assert_true(rows(page) <= limit);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(page, "groups"), i, r) {
            int n = atoi(str(r, "group") + 1);
            assert_true(n >= 0 && n < groups_total);
            if (seen[n]) fail_msg("group %s on two pages (sort %d)", str(r, "group"), sort);
            seen[n] = 1;
            got++;
        }
        pages++;
        json_t *next = json_object_get(page, "next");
        if (json_is_null(next)) {
            json_decref(page);
            break;
        }
        snprintf(after, sizeof after, "%s", json_string_value(next));
        json_decref(page);
        assert_true(pages < 100);
    }
    assert_int_equal(got, groups_total);
    free(seen);
}

static void pages_visit_every_group_once(void **state) {
    tq *t = *state;
    mq_error err;
    /* 25 groups from one batch (one available_at: 25 ties), 12 more one by one */
    mq_batch *batch = NULL;
    ASSERT_MQ(MQ_OK, mq_batch_new(&batch, &err), err);
    char g[16];
    for (int i = 0; i < 25; i++) {
        snprintf(g, sizeof g, "g%02d", i);
        ASSERT_MQ(MQ_OK, mq_batch_add(batch, g, "x", 1, 0, &err), err);
    }
    ASSERT_MQ(MQ_OK, mq_publish_batch(t->queue, batch, NULL, &err), err);
    mq_batch_destroy(batch);
    for (int i = 25; i < 37; i++) {
        tq_advance(t, 1);
        snprintf(g, sizeof g, "g%02d", i);
        tq_publish(t, g, "x", 0);
    }
    walk(t, MQ_GROUPS_SORT_ID, 10, 37);
    walk(t, MQ_GROUPS_SORT_DUE, 10, 37);
    walk(t, MQ_GROUPS_SORT_DUE, 7, 37);
    walk(t, MQ_GROUPS_SORT_ID, 1000, 37);
}

/* harel's claim filter: due and priority >= floor. */
static int64_t harel_claimable(tq *t) {
    char filter[128];
    snprintf(filter, sizeof filter, "{\"available_at\": {\"$lte\": %.3f}, \"priority\": {\"$gte\": 0}}",
             mq_queue_now(t->queue));
    return tq_count(t, "locks", filter);
}

static void paused_group_is_never_claimed(void **state) {
    tq *t = *state;
    tq_publish(t, "p", "p1", 2);
    pause_group(t, "p");
    pause_group(t, "p"); /* again: nothing changes */
    tq_expect_empty(t, 0);
    assert_int_equal(harel_claimable(t), 0);
    tq_advance(t, 3600);
    tq_expect_empty(t, 0);
    resume_group(t, "p");
    resume_group(t, "p");
    assert_int_equal(harel_claimable(t), 1);
    mq_lease *l = tq_claim(t, 30, 2); /* its priority came back */
    assert_string_equal(mq_lease_group(l), "p");
    tq_ack(t, l);
    mq_lease_destroy(l);
    assert_int_equal(tq_count(t, "locks", "{}"), 0);
}

static void holder_keeps_its_lease_and_the_pause_outlives_the_drain(void **state) {
    tq *t = *state;
    mq_error err;
    tq_publish(t, "p", "p1", 0);
    tq_publish(t, "p", "p2", 0);
    mq_lease *l = tq_claim(t, 30, 0);
    pause_group(t, "p");
    ASSERT_MQ(MQ_OK, mq_extend(t->queue, l, 30, &err), err);
    tq_ack(t, l); /* p1; p2 waits, paused */
    mq_lease_destroy(l);
    tq_expect_empty(t, 0);

    resume_group(t, "p");
    l = tq_claim(t, 30, 0);
    pause_group(t, "p");
    uint64_t before = commands(t);
    tq_ack(t, l);                              /* the last event: the lock stays, paused */
    assert_int_equal(commands(t) - before, 3); /* ack.delete, ack.drop (nothing), ack.keep_paused */
    mq_lease_destroy(l);
    assert_int_equal(tq_count(t, "messages", "{}"), 0);
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"p\", \"priority\": -1, \"token\": null}"), 1);

    tq_publish(t, "p", "p3", 4); /* refilled: still paused, its priority stays the group's */
    tq_expect_empty(t, 0);
    json_t *page = groups(t, NULL);
    assert_string_equal(str(row(page, "p"), "state"), "paused");
    assert_int_equal((int)num(row(page, "p"), "backlog"), 1);
    json_decref(page);

    ASSERT_MQ(MQ_OK, mq_purge_group(t->queue, "p", &err), err); /* purged: still paused */
    tq_publish(t, "p", "p4", 0);
    tq_expect_empty(t, 0);
    resume_group(t, "p");
    l = tq_claim(t, 30, 0);
    char buf[16];
    assert_string_equal(tq_event_text(l, buf, sizeof buf), "p4");
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void pause_ahead_of_the_first_event(void **state) {
    tq *t = *state;
    uint64_t before = commands(t);
    pause_group(t, "later");
    assert_int_equal(commands(t) - before, 3); /* pause.read, pause.lock, pause.read */
    resume_group(t, "nothing-here");           /* no lock: nothing to resume */
    assert_int_equal(tq_count(t, "locks", "{\"_id\": \"nothing-here\"}"), 0);
    tq_publish(t, "later", "x", 1);
    tq_expect_empty(t, 0);
    before = commands(t);
    resume_group(t, "later");
    assert_int_equal(commands(t) - before, 2); /* resume.read, resume.set */
    mq_lease *l = tq_claim(t, 30, 0);
    assert_string_equal(mq_lease_group(l), "later");
    tq_ack(t, l);
    mq_lease_destroy(l);
}

static void stats_count_paused_and_published(void **state) {
    tq *t = *state;
    tq_publish(t, "a", "1", 0);
    tq_publish(t, "b", "1", 4);
    tq_publish(t, "b", "2", 4);
    pause_group(t, "b");
    mq_error err;
    char *text = NULL;
    ASSERT_MQ(MQ_OK, mq_stats_json(t->queue, &text, &err), err);
    json_t *s = json_loads(text, 0, NULL);
    assert_non_null(s);
    json_t *g = json_object_get(s, "groups");
    assert_int_equal(json_integer_value(json_object_get(g, "paused")), 1);
    assert_int_equal(json_integer_value(json_object_get(g, "ready")), 1);
    assert_int_equal(json_integer_value(json_object_get(g, "parked")), 0);
    assert_int_equal(json_integer_value(json_object_get(g, "total")), 2);
    assert_int_equal(json_integer_value(json_object_get(s, "published")), 3);
    json_t *p4 = json_object_get(json_object_get(s, "priorities"), "4");
    assert_int_equal(json_integer_value(json_object_get(p4, "groups")), 1);
    json_decref(s);
    mq_free(text);
}

static void dead_letters_by_page(void **state) {
    tq *t = *state;
    mq_error err;
    ASSERT_MQ(MQ_OK, mq_queue_set_max_attempts(t->queue, 1, &err), err);
    char g[8];
    for (int i = 0; i < 5; i++) {
        snprintf(g, sizeof g, "d%d", i);
        tq_publish(t, g, "x", 0);
        mq_lease *l = tq_claim(t, 30, 0);
        ASSERT_MQ(MQ_OK, mq_nack(t->queue, l, 0, &err), err);
        mq_lease_destroy(l);
        tq_expect_empty(t, 0); /* the second delivery would be the 2nd: dead */
    }
    assert_int_equal(tq_count(t, "dead", "{}"), 5);
    mq_dead_list_opts o = MQ_DEAD_LIST_OPTS_INIT;
    o.limit = 2;
    o.offset = 2;
    char *text = NULL;
    uint64_t before = commands(t);
    ASSERT_MQ(MQ_OK, mq_dead_list_with(t->queue, &o, &text, &err), err);
    assert_int_equal(commands(t) - before, 2); /* dead.page, dead.total */
    json_t *page = json_loads(text, 0, NULL);
    assert_non_null(page);
    assert_int_equal(json_integer_value(json_object_get(page, "total")), 5);
    assert_int_equal(json_integer_value(json_object_get(page, "offset")), 2);
    json_t *letters = json_object_get(page, "letters");
    assert_int_equal(json_array_size(letters), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(letters, 0), "seq")), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(letters, 1), "seq")), 4);
    json_decref(page);
    mq_free(text);
    o.offset = 5;
    ASSERT_MQ(MQ_OK, mq_dead_list_with(t->queue, &o, &text, &err), err);
    assert_non_null(strstr(text, "\"letters\":[]"));
    mq_free(text);
}

static void bad_arguments_send_nothing(void **state) {
    tq *t = *state;
    tq_publish(t, "a", "x", 0);
    mq_error err;
    char *text = (char *)&err;
    uint64_t before = commands(t);
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    o.version = 2;
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    assert_null(text);
    assert_non_null(strstr(err.message, "version"));
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.states = 16;
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    assert_non_null(strstr(err.message, "states"));
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.limit = 1001;
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    assert_non_null(strstr(err.message, "limit"));
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.after = "due:5:0"; /* a cursor of the other sort */
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    assert_non_null(strstr(err.message, "after"));
    o.sort = MQ_GROUPS_SORT_DUE;
    o.after = "due:x";
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.sort = 7;
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.held_longer_than_s = -1;
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    o = (mq_groups_opts)MQ_GROUPS_OPTS_INIT;
    o.id_prefix = "\xff";
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, &o, &text, &err), err);
    assert_non_null(strstr(err.message, "UTF-8"));
    ASSERT_MQ(MQ_ERR_ARG, mq_groups_json(t->queue, NULL, NULL, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_pause_group(t->queue, "", &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_pause_group(t->queue, NULL, &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_resume_group(t->queue, "\xc3", &err), err);
    ASSERT_MQ(MQ_ERR_ARG, mq_pause_group(NULL, "a", &err), err);
    mq_dead_list_opts d = MQ_DEAD_LIST_OPTS_INIT;
    d.limit = 5000;
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_list_with(t->queue, &d, &text, &err), err);
    d = (mq_dead_list_opts)MQ_DEAD_LIST_OPTS_INIT;
    d.version = 0;
    ASSERT_MQ(MQ_ERR_ARG, mq_dead_list_with(t->queue, &d, &text, &err), err);
    assert_int_equal(commands(t) - before, 0);

    mq_groups_opts init;
    assert_int_equal(mq_groups_opts_init(&init, MQ_GROUPS_OPTS_VERSION), MQ_OK);
    assert_int_equal(init.limit, 0);
    assert_int_equal(mq_groups_opts_init(&init, 9), MQ_ERR_ARG);
    mq_dead_list_opts dinit;
    assert_int_equal(mq_dead_list_opts_init(&dinit, MQ_DEAD_LIST_OPTS_VERSION), MQ_OK);
    assert_int_equal(mq_dead_list_opts_init(NULL, MQ_DEAD_LIST_OPTS_VERSION), MQ_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(each_state_and_its_fields, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(filters, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(prefix_is_literal, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(pages_visit_every_group_once, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(paused_group_is_never_claimed, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(holder_keeps_its_lease_and_the_pause_outlives_the_drain, tq_setup_fake_clock,
                                        tq_teardown),
        cmocka_unit_test_setup_teardown(pause_ahead_of_the_first_event, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(stats_count_paused_and_published, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(dead_letters_by_page, tq_setup_fake_clock, tq_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments_send_nothing, tq_setup_fake_clock, tq_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
