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

// libmongoc's error for the command `command` (the name used in docs/design.md).
// Stream and server-selection errors mean the server was not reached in time.
[[noreturn]] void fail_mongoc(const char *command, const bson_error_t &error);

// MongoDB's duplicate key error: an upsert that raced another upsert of the same _id.
constexpr int kDuplicateKey = 11000;

inline bool is_duplicate_key(const Failure &f) {
    return f.status == MQ_ERR_SERVER && f.server_code == kDuplicateKey;
}

}  // namespace mongomq
