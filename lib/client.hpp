// The client: the pool, the write-concern note of the call running on this thread,
// password scrubbing and the log handler (lib/client.cpp).
#pragma once

#include <string>

#include "handles.hpp"

namespace mongomq {

mq_client *client_new(const char *uri);  // throws Failure
void client_destroy(mq_client *client);

// Replaces every occurrence of `password` in `message` with "***".
std::string scrub(std::string message, const std::string &password);

void log_set_handler(mq_log_fn handler, void *ctx);

// Write-concern errors of the call running on this thread: a write the server applied
// but whose write concern it could not confirm (store.cpp notes them and goes on with
// the reply's result). guard() clears the note before a call's body, then counts it
// in the client's write_concern_errors and reports the last one in the mq_error of a
// call that otherwise succeeded.
struct WriteConcernNote {
    int count = 0;
    int code = 0;         // the server's code of the last one (64: wtimeout)
    std::string message;  // a sentence for mq_error
};
WriteConcernNote &write_concern_note();  // this thread's
void note_write_concern_error(const char *command, int code, const std::string &server_message);

// libmongoc's log under our domain (the library never prints itself).
void log_warning(const std::string &message);

}  // namespace mongomq
