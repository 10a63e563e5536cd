/* Shared by the cmocka tests: each test gets a queue in a database of its own on the
 * server named by MONGOMQ_TEST_URI (fails, never skips, when it is unset), and a raw
 * libmongoc client to look at the documents the way harel would.
 *
 * cmocka's assertions longjmp: call them from the test's own thread only. Worker
 * threads count what they see and the test thread asserts on the counts. */
#ifndef MONGOMQ_TEST_SUPPORT_H
#define MONGOMQ_TEST_SUPPORT_H

#include <mongoc/mongoc.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mongomq.h"

typedef struct tq {
    mq_client *client;
    mq_queue *queue;
    char db[64];
    const char *prefix;
    double now; /* the queue's clock when fake_clock is set */
    int fake_clock;
    mongoc_client_t *raw; /* for reading and writing documents directly */
} tq;

/* The test server's URI; fails the current test when MONGOMQ_TEST_URI is unset. */
const char *test_uri(void);

/* The test server's URI with more options ("w=1&wtimeoutMS=500"), in a buffer the
 * caller frees. */
char *tq_uri_with(const char *options);

/* The partitions every test's queue is opened with: MONGOMQ_TEST_PARTITIONS (1..1024),
 * default 1. CTest runs the suites that matter a second time with 4 (their _p4 names). */
int tq_partitions(void);
/* mq_queue_new_with those partitions: how every test opens its queues. */
mq_status tq_queue_new(mq_client *client, const char *db, const char *prefix, mq_queue **out, mq_error *err);

/* cmocka_run_group_tests_name, but with more than one partition the tests named in
 * p1_only (name, reason, name, reason, ..., NULL) are left out, each said on stdout
 * with its reason: they check what only one partition does (harel's documents, the
 * order across groups of one line, P = 1's command counts), and test_partitions.c
 * checks what partitions do instead. They are not run, so nothing counts them. */
int tq_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, const char *const *p1_only);
#define TQ_RUN_TESTS(group, tests, p1_only) tq_run_tests(group, tests, sizeof(tests) / sizeof((tests)[0]), p1_only)

/* A fresh database per test, dropped by the teardown. */
int tq_setup(void **state);            /* wall clock */
int tq_setup_fake_clock(void **state); /* clock starts at 1e9 s and moves by tq_advance */
int tq_teardown(void **state);

void tq_advance(tq *t, double seconds);

/* Assert-on-failure helpers: they print the mq_error when a call does not succeed. */
int64_t tq_publish(tq *t, const char *group, const char *text, int priority);
mq_lease *tq_claim(tq *t, double visibility, int min_priority); /* asserts MQ_OK */
void tq_expect_empty(tq *t, int min_priority);                  /* asserts MQ_EMPTY */
void tq_ack(tq *t, const mq_lease *lease);
/* The event as a NUL-terminated copy in buf. */
const char *tq_event_text(const mq_lease *lease, char *buf, size_t size);

/* Documents in {prefix}_<suffix> matching a JSON filter ("{}" for all). */
int64_t tq_count(tq *t, const char *suffix, const char *json_filter);
/* One document by filter, or NULL; caller bson_destroy()s it. */
bson_t *tq_find_one(tq *t, const char *suffix, const char *json_filter);
/* Inserts a document given as extended JSON. */
void tq_insert_json(tq *t, const char *suffix, const char *json);
mongoc_collection_t *tq_collection(tq *t, const char *suffix);

/* Every document of the three collections, as canonical extended JSON (caller frees). */
char *tq_snapshot(tq *t);

/* Runs `threads` copies of fn(arg, index) and joins them. */
void tq_run_threads(int threads, void (*fn)(void *arg, int index), void *arg);

double tq_monotonic(void);
void tq_sleep(double seconds);

#define ASSERT_MQ(expected, call, err)                                                                  \
  do {                                                                                                  \
    mq_status st_ = (call);                                                                             \
    if (st_ != (expected))                                                                              \
      fail_msg("%s returned %s, expected %s: %s", #call, mq_status_name(st_), mq_status_name(expected), \
               (err).message);                                                                          \
  } while (0)

#endif
