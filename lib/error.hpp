// Errors inside the library are C++ exceptions of one type, Failure; the C boundary
// (api.cpp) turns them into an mq_status and an mq_error. Nothing else is thrown on
// purpose; std::bad_alloc becomes MQ_ERR_NOMEM and anything else MQ_ERR_INTERNAL.
#pragma once

#include <mongoc/mongoc.h>

#include <string>

#include "mongomq.h"

namespace mongomq {

struct Failure {
    mq_status status;
    int server_code;
    std::string message;
};

[[noreturn]] inline void fail(mq_status status, std::string message, int server_code = 0) {
    throw Failure{status, server_code, std::move(message)};
}

// A bad argument: `what` names the argument and its problem.
[[noreturn]] inline void fail_arg(const char *function, const std::string &what) {
    fail(MQ_ERR_ARG, std::string(function) + ": " + what);
}

// libmongoc's error for the command `command` (the name used in docs/design.md), with
// the server's reply when there is one (its errorLabels and ok are read).
// "Outcome unknown" errors become MQ_ERR_CONNECT, keeping the server's code: a stream
// or server-selection error (the reply may have been lost after the server applied
// the write), and a server error that a primary stepping down or shutting down
// answers (NotWritablePrimary 10107, InterruptedDueToReplStateChange 11602, ...; see
// is_outcome_unknown_code) or any error labelled RetryableWriteError: the write may
// have been applied before the node gave up its primary role (docs/design.md, "Lost
// replies"). Other server errors are MQ_ERR_SERVER with their code.
[[noreturn]] void fail_mongoc(const char *command, const bson_error_t &error, const bson_t *reply = nullptr);

// The retryable-writes specification's retryable error codes: the node stepped down,
// is shutting down, or the network failed under the command.
bool is_outcome_unknown_code(int code);

// After a write, a failure whose outcome is unknown (see fail_mongoc): what follows a
// lost reply runs (the lock upsert after an insert, the re-check after a drop, the
// token lookup after a lease).
inline bool outcome_unknown(const Failure &f) { return f.status == MQ_ERR_CONNECT; }

// MongoDB's duplicate key error: an upsert that raced another upsert of the same _id.
constexpr int kDuplicateKey = 11000;

inline bool is_duplicate_key(const Failure &f) { return f.status == MQ_ERR_SERVER && f.server_code == kDuplicateKey; }

}  // namespace mongomq
