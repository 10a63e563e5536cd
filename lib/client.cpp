// The client: libmongoc's pool, the APM command counter, error mapping and the log
// handler trampoline.
#include "client.hpp"

#include <cstring>
#include <mutex>
#include <new>

#include "error.hpp"
#include "fault.hpp"

namespace mongomq {

bool is_outcome_unknown_code(int code) {
    switch (code) {
        case 6:      // HostUnreachable
        case 7:      // HostNotFound
        case 89:     // NetworkTimeout
        case 91:     // ShutdownInProgress
        case 189:    // PrimarySteppedDown
        case 262:    // ExceededTimeLimit
        case 9001:   // SocketException
        case 10107:  // NotWritablePrimary
        case 11600:  // InterruptedAtShutdown
        case 11602:  // InterruptedDueToReplStateChange
        case 13435:  // NotPrimaryNoSecondaryOk
        case 13436:  // NotPrimaryOrSecondary
            return true;
        default:
            return false;
    }
}

void fail_mongoc(const char *command, const bson_error_t &error, const bson_t *reply) {
    std::string msg = std::string(command) + ": " + error.message;
    // Could not reach (or keep) a server: selection timed out or the socket failed.
    if (error.domain == MONGOC_ERROR_SERVER_SELECTION || error.domain == MONGOC_ERROR_STREAM) fail(MQ_ERR_CONNECT, msg);
    const bool server = error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_WRITE_CONCERN ||
                        error.domain == MONGOC_ERROR_QUERY || error.domain == MONGOC_ERROR_COMMAND ||
                        error.domain == MONGOC_ERROR_COLLECTION;
    const int code = server ? static_cast<int>(error.code) : 0;
    const bool labelled = reply != nullptr && mongoc_error_has_label(reply, "RetryableWriteError");
    if ((server && is_outcome_unknown_code(code)) || labelled)
        fail(MQ_ERR_CONNECT,
             msg + " (server code " + std::to_string(code) + (labelled ? ", RetryableWriteError" : "") +
                 ": the primary stepped down, shut down or lost the connection under the command; a write may "
                 "have been applied)",
             code);
    fail(MQ_ERR_SERVER, msg, code);
}

namespace {

void count_command(const mongoc_apm_command_started_t *event) {
    auto *client = static_cast<mq_client *>(mongoc_apm_command_started_get_context(event));
    client->commands.fetch_add(1, std::memory_order_relaxed);
    observe_command(event);
}

// The write concern of every write to a queue's collections: the URI's when it sets
// w, else w:"majority". w=0 (and the deprecated -1) is refused: unacknowledged writes
// report no match counts, so every fenced update would look like a lost lease. A
// write concern that waits for other members (majority, or w > 1) always has a time
// limit: the URI's wtimeoutMS, else kDefaultWtimeoutMs; without one, a write to a set
// that cannot reach the write concern (its secondary down behind an arbiter) waits
// until socketTimeoutMS (300 s), and then the driver's retry waits again. A wtimeout
// is not a failure of the call (the write was applied: see note_write_concern_error).
// journal=false with majority is refused: a majority write is journaled on every
// member that acknowledges it (writeConcernMajorityJournalDefault), so {j: false}
// asks for something MongoDB does not do, and sending it would claim it did.
constexpr int64_t kDefaultWtimeoutMs = 10000;

mongoc_write_concern_t *queue_write_concern(const mongoc_uri_t *uri) {
    const mongoc_write_concern_t *given = mongoc_uri_get_write_concern(uri);
    int32_t w = mongoc_write_concern_get_w(given);
    if (w == MONGOC_WRITE_CONCERN_W_UNACKNOWLEDGED || w == MONGOC_WRITE_CONCERN_W_ERRORS_IGNORED)
        fail(MQ_ERR_ARG, "mq_client_new: uri option w=" + std::to_string(w) +
                             " is refused: mongomq needs acknowledged writes (its fenced updates read the match "
                             "count); leave w out (mongomq then uses w=majority) or set w=majority or w=1");
    mongoc_write_concern_t *wc = mongoc_write_concern_copy(given);
    if (wc == nullptr) throw std::bad_alloc();
    const int64_t wtimeout = mongoc_write_concern_get_wtimeout_int64(given);
    const int64_t bounded = wtimeout > 0 ? wtimeout : kDefaultWtimeoutMs;
    const bool majority = w == MONGOC_WRITE_CONCERN_W_DEFAULT || mongoc_write_concern_get_wmajority(given);
    if (majority && mongoc_write_concern_journal_is_set(given) && !mongoc_write_concern_get_journal(given)) {
        mongoc_write_concern_destroy(wc);
        fail(MQ_ERR_ARG,
             "mq_client_new: uri option journal=false is refused with w=majority (mongomq's default when the uri "
             "sets no w): majority writes are journaled on the members that acknowledge them; leave journal out, "
             "or set w=1 with journal=false");
    }
    if (majority)
        mongoc_write_concern_set_wmajority(wc, static_cast<int32_t>(bounded));
    else if (w > 1)
        mongoc_write_concern_set_wtimeout_int64(wc, bounded);
    return wc;
}

// The password of a URI that may not parse: between the first ':' after the scheme
// and the last '@' (libmongoc splits userinfo at the last '@' even when a '?' or '/'
// comes first, and quotes the password in its parse errors).
std::string raw_password(const std::string &uri) {
    size_t scheme = uri.find("://");
    size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    size_t at = uri.rfind('@');
    if (at == std::string::npos || at < start) return {};
    std::string userinfo = uri.substr(start, at - start);
    size_t colon = userinfo.find(':');
    return colon == std::string::npos ? std::string() : userinfo.substr(colon + 1);
}

}  // namespace

std::string scrub(std::string message, const std::string &password) {
    if (password.empty()) return message;
    for (size_t at = message.find(password); at != std::string::npos; at = message.find(password, at + 3))
        message.replace(at, password.size(), "***");
    return message;
}

mq_client *client_new(const char *uri_text) {
    static std::once_flag init;
    std::call_once(init, [] { mongoc_init(); });

    std::string raw = raw_password(uri_text);
    bson_error_t error;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_text, &error);
    if (uri == nullptr) fail(MQ_ERR_ARG, scrub(std::string("mq_client_new: uri is malformed: ") + error.message, raw));

    // libmongoc 1.23 takes "mongodb://u:p@[bad/" as the host "[bad" (it fails only when
    // a command resolves it): an IPv6 literal is kept without its brackets, so a
    // bracket left in a host name is a malformed URI.
    for (const mongoc_host_list_t *h = mongoc_uri_get_hosts(uri); h != nullptr; h = h->next) {
        if (std::strpbrk(h->host, "[]") != nullptr) {
            std::string host = h->host;
            mongoc_uri_destroy(uri);
            fail(MQ_ERR_ARG, scrub("mq_client_new: uri is malformed: host \"" + host +
                                       "\" has an unmatched bracket (an IPv6 address is written [addr]:port)",
                                   raw));
        }
    }

    auto *client = new mq_client();
    client->uri = uri;
    const char *password = mongoc_uri_get_password(uri);
    client->password = password != nullptr ? password : raw;
    try {
        client->write_concern = queue_write_concern(uri);
    } catch (...) {
        client_destroy(client);
        throw;
    }
    client->read_prefs = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
    client->read_concern = mongoc_read_concern_new();
    if (client->read_prefs == nullptr || client->read_concern == nullptr ||
        !mongoc_read_concern_set_level(client->read_concern, MONGOC_READ_CONCERN_LEVEL_LOCAL)) {
        client_destroy(client);
        throw std::bad_alloc();
    }
    client->pool = mongoc_client_pool_new(uri);
    if (client->pool == nullptr) {
        client_destroy(client);
        fail(MQ_ERR_ARG, "mq_client_new: uri was refused by libmongoc (TLS options without TLS support?)");
    }
    mongoc_client_pool_set_error_api(client->pool, MONGOC_ERROR_API_VERSION_2);
    mongoc_client_pool_set_appname(client->pool, "mongomq");

    mongoc_apm_callbacks_t *callbacks = mongoc_apm_callbacks_new();
    mongoc_apm_set_command_started_cb(callbacks, count_command);
    mongoc_client_pool_set_apm_callbacks(client->pool, callbacks, client);
    mongoc_apm_callbacks_destroy(callbacks);
    return client;
}

void client_destroy(mq_client *client) {
    if (client == nullptr) return;
    if (client->pool != nullptr) mongoc_client_pool_destroy(client->pool);
    if (client->uri != nullptr) mongoc_uri_destroy(client->uri);
    mongoc_read_prefs_destroy(client->read_prefs);
    mongoc_read_concern_destroy(client->read_concern);
    mongoc_write_concern_destroy(client->write_concern);
    delete client;
}

WriteConcernNote &write_concern_note() {
    thread_local WriteConcernNote note;
    return note;
}

void note_write_concern_error(const char *command, int code, const std::string &server_message) {
    WriteConcernNote &note = write_concern_note();
    note.count++;
    note.code = code;
    note.message = std::string(command) +
                   ": the write was applied but not confirmed by the write concern (server code " +
                   std::to_string(code) + ": " + server_message +
                   "); it may be rolled back if the primary fails before it replicates";
}

void log_warning(const std::string &message) { mongoc_log(MONGOC_LOG_LEVEL_WARNING, "mongomq", "%s", message.c_str()); }

namespace {

struct LogTarget {
    mq_log_fn fn;
    void *ctx;
};
LogTarget g_log;  // written under g_log_mu; read by libmongoc's logger, itself under its own lock
std::mutex g_log_mu;

void log_trampoline(mongoc_log_level_t level, const char *domain, const char *message, void *) {
    LogTarget target;
    {
        std::lock_guard<std::mutex> lock(g_log_mu);
        target = g_log;
    }
    if (target.fn != nullptr) target.fn(static_cast<int>(level), domain, message, target.ctx);
}

}  // namespace

void log_set_handler(mq_log_fn handler, void *ctx) {
    {
        std::lock_guard<std::mutex> lock(g_log_mu);
        g_log = LogTarget{handler, ctx};
    }
    // With no handler, libmongoc gets none at all: it then drops every log line.
    mongoc_log_set_handler(handler != nullptr ? log_trampoline : nullptr, nullptr);
}

}  // namespace mongomq

extern "C" uint64_t mq_client_write_concern_errors(const mq_client *client) {
    return client != nullptr ? client->write_concern_errors.load(std::memory_order_relaxed) : 0;
}
