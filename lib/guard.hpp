// What every exported function shares: guard() runs the body, turns whatever it
// throws into a status and fills the caller's mq_error. Each lib/*.cpp that exports
// functions uses it, so no exception crosses the C boundary.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "client.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "mongomq.h"

namespace mongomq {

inline void fill(mq_error *err, mq_status status, int server_code, const std::string &message) {
    if (err == nullptr) return;
    err->status = status;
    err->server_code = server_code;
    size_t n = std::min(message.size(), sizeof err->message - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
}

// Runs body (which returns the call's status, or throws) and fills err. The client's
// password (if any) is scrubbed from every message.
template <typename Body>
mq_status guard(mq_error *err, const mq_client *client, Body body) noexcept {
    std::string password;
    WriteConcernNote &wce = write_concern_note();
    wce.count = 0;
    // Write-concern errors of applied writes (client.hpp): counted per client; a call
    // that otherwise succeeded reports the last one in err (status unchanged).
    auto count_wce = [&] {
        if (wce.count > 0 && client != nullptr)
            client->write_concern_errors.fetch_add(static_cast<uint64_t>(wce.count));
    };
    try {
        if (client != nullptr) password = client->password;
        mq_status status = body();
        count_wce();
        if (wce.count > 0)
            fill(err, status, wce.code, scrub(wce.message, password));
        else
            fill(err, status, 0, "");
        return status;
    } catch (const Failure &f) {
        count_wce();
        try {
            fill(err, f.status, f.server_code, scrub(f.message, password));
        } catch (...) {
            fill(err, f.status, f.server_code, "");
        }
        return f.status;
    } catch (const std::bad_alloc &) {
        fill(err, MQ_ERR_NOMEM, 0, "out of memory");
        return MQ_ERR_NOMEM;
    } catch (...) {
        fill(err, MQ_ERR_INTERNAL, 0, "internal error (unexpected exception)");
        return MQ_ERR_INTERNAL;
    }
}

// guard() for a call on a queue (which may be NULL: the body checks it).
template <typename Body>
mq_status guard_queue(mq_error *err, const mq_queue *queue, Body body) noexcept {
    return guard(err, queue != nullptr ? queue->client : nullptr, body);
}

template <typename T>
void null_out(T **out) {
    if (out != nullptr) *out = nullptr;
}

// "host:pid": the worker id of a claim that names none.
inline const std::string &default_worker_id() {
    static const std::string id = [] {
        char host[256] = "host";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        return std::string(host) + ":" + std::to_string(getpid());
    }();
    return id;
}

inline void check_queue(const char *fn, const mq_queue *queue) {
    if (queue == nullptr) fail_arg(fn, "queue is NULL");
}

}  // namespace mongomq
