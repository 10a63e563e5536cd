// Fault injection for tests. Every server command the queue sends is named (the names
// of docs/design.md, e.g. "publish.insert"); just before sending it, the library asks
// the installed hook. The hook may sleep (to widen a race window), return 0 to go on,
// return a MongoDB error code (> 0) to make the command fail as if the server had
// answered with it (11000 exercises the duplicate-key retries), return -1 to make
// it fail as if the connection had dropped before it was sent, or return -2
// (MONGOMQ_FAULT_LOSE_REPLY) to send it, let the server apply it, and then fail as if
// the connection dropped before the reply arrived (a lost reply), or return
// MONGOMQ_FAULT_WRITE_CONCERN(code) to send it, let the server apply it, and then
// treat its reply as carrying a writeConcernError with that code (a wtimeout: 64), or
// return MONGOMQ_FAULT_APPLIED_ERROR(code) to send it, let the server apply it, and
// then fail as if the server had answered with that error code (a primary that steps
// down right after applying a write: 10107), or MONGOMQ_FAULT_APPLIED_LABELLED(code)
// for the same with the RetryableWriteError label on the reply. Injected server
// errors (code > 0 and these) go through the library's own classification
// (fail_mongoc), as the server's would.
//
// Two observers serve the tests that inspect what the library sends: every command
// any client of the library starts (libmongoc's APM, also the watcher's client), and
// the read preference each named read goes out with (a standalone server never sees
// one on the wire, so APM alone cannot show it there).
//
// Not part of the public API and not exported from the shared library: tests that
// inject faults link the static test build of the library (see tests/CMakeLists.txt).
#pragma once

#include <mongoc/mongoc.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*mongomq_fault_fn)(const char *command, void *ctx);

#define MONGOMQ_FAULT_CONNECT (-1)
#define MONGOMQ_FAULT_LOSE_REPLY (-2)
/* code > 0: the command is applied and then fails only by its write concern. */
#define MONGOMQ_FAULT_WRITE_CONCERN(code) (-100000 - (code))
/* code > 0: the command is applied and then fails with that server error. */
#define MONGOMQ_FAULT_APPLIED_ERROR(code) (-200000 - (code))
/* ... and its reply carries the RetryableWriteError label. */
#define MONGOMQ_FAULT_APPLIED_LABELLED(code) (-300000 - (code))

/* lib/store.cpp's reading of a failed write (applied_or_fail): the status and code the
 * library gives for libmongoc's error (domain, code) and the server's reply (may be
 * NULL); MQ_OK when it counts as an applied write with a write-concern error. */
int mongomq_classify_error(uint32_t domain, uint32_t code, const bson_t *reply, int *server_code);

/* Called for every command a client of the library starts, on the thread that starts
 * it: the command's name ("find", "getMore", ...), its database and its body as sent
 * (readConcern, writeConcern, $readPreference included). NULL removes it. */
typedef void (*mongomq_command_fn)(const char *command_name, const char *db, const bson_t *command, void *ctx);
void mongomq_command_observer_set(mongomq_command_fn fn, void *ctx);

/* Called for every read the library sends (find, aggregate, count, the hello), with
 * its name ("claim.head") and the read preference mode (mongoc_read_mode_t) of the
 * collection or command. NULL removes it. */
typedef void (*mongomq_read_prefs_fn)(const char *command, int read_mode, void *ctx);
void mongomq_read_prefs_observer_set(mongomq_read_prefs_fn fn, void *ctx);

/* Installs (or with NULL removes) the process-wide hook. */
void mongomq_fault_set(mongomq_fault_fn hook, void *ctx);

/* lib/store.cpp's collation check on one listCollections entry: 1 (and the collation
 * as JSON in buf) when mq_queue_new would refuse the collection, else 0. */
int mongomq_non_simple_collation(const bson_t *collection_info, char *buf, size_t size);

/* lib/queue.cpp's check on a mongos: 1 (and the refusal in buf) when mq_queue_new would
 * refuse this queue given these config.collections entries (a BSON array), else 0. */
int mongomq_sharded_refusal(const struct mq_queue *queue, const bson_t *entries, char *buf, size_t size);

/* lib/queue.cpp's clock-offset formula, for tests (see queue.hpp). */
double mongomq_clock_offset(double t0, double t1, int64_t server_ms);

#ifdef __cplusplus
}

namespace mongomq {

// Called before each server command; throws the injected Failure, if any.
void fault_point(const char *command);

// Called after each server command that succeeded: throws MQ_ERR_CONNECT when the
// hook asked for this command's reply to be lost (MONGOMQ_FAULT_LOSE_REPLY).
void fault_reply(const char *command);

// The observers above (no-ops unless a test installed one).
void observe_command(const mongoc_apm_command_started_t *event);
void observe_read_prefs(const char *command, int read_mode);

}  // namespace mongomq
#endif
