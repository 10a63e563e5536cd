// Fault injection for tests. Every server command the queue sends is named (the names
// of docs/design.md, e.g. "publish.insert"); just before sending it, the library asks
// the installed hook. The hook may sleep (to widen a race window), return 0 to go on,
// return a MongoDB error code (> 0) to make the command fail as if the server had
// answered with it (11000 exercises the duplicate-key retries), return -1 to make
// it fail as if the connection had dropped before it was sent, or return -2
// (MONGOMQ_FAULT_LOSE_REPLY) to send it, let the server apply it, and then fail as if
// the connection dropped before the reply arrived (a lost reply).
//
// Not part of the public API and not exported from the shared library: tests that
// inject faults link the static test build of the library (see tests/CMakeLists.txt).
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*mongomq_fault_fn)(const char *command, void *ctx);

#define MONGOMQ_FAULT_CONNECT (-1)
#define MONGOMQ_FAULT_LOSE_REPLY (-2)

/* Installs (or with NULL removes) the process-wide hook. */
void mongomq_fault_set(mongomq_fault_fn hook, void *ctx);

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

}  // namespace mongomq
#endif
