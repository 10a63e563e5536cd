// The client: libmongoc's pool, the APM command counter, error mapping and the log
// handler trampoline.
#include "client.hpp"

#include <mutex>
#include <new>

#include "error.hpp"
#include "fault.hpp"

namespace mongomq {

void fail_mongoc(const char *command, const bson_error_t &error) {
    std::string msg = std::string(command) + ": " + error.message;
    // Could not reach (or keep) a server: selection timed out or the socket failed.
    if (error.domain == MONGOC_ERROR_SERVER_SELECTION || error.domain == MONGOC_ERROR_STREAM)
        fail(MQ_ERR_CONNECT, msg);
    if (error.domain == MONGOC_ERROR_SERVER || error.domain == MONGOC_ERROR_WRITE_CONCERN ||
        error.domain == MONGOC_ERROR_QUERY || error.domain == MONGOC_ERROR_COMMAND ||
        error.domain == MONGOC_ERROR_COLLECTION)
        fail(MQ_ERR_SERVER, msg, static_cast<int>(error.code));
    fail(MQ_ERR_SERVER, msg, 0);
}

namespace {

void count_command(const mongoc_apm_command_started_t *event) {
    auto *client = static_cast<mq_client *>(mongoc_apm_command_started_get_context(event));
    client->commands.fetch_add(1, std::memory_order_relaxed);
    observe_command(event);
}

// The write concern of every write to a queue's collections: the URI's when it sets
// w, else w:"majority" (with the URI's wtimeoutMS and journal, if any). w=0 (and the
// deprecated -1) is refused: unacknowledged writes report no match counts, so every
// fenced update would look like a lost lease.
mongoc_write_concern_t *queue_write_concern(const mongoc_uri_t *uri) {
    const mongoc_write_concern_t *given = mongoc_uri_get_write_concern(uri);
    int32_t w = mongoc_write_concern_get_w(given);
    if (w == MONGOC_WRITE_CONCERN_W_UNACKNOWLEDGED || w == MONGOC_WRITE_CONCERN_W_ERRORS_IGNORED)
        fail(MQ_ERR_ARG,
             "mq_client_new: uri option w=" + std::to_string(w) +
                 " is refused: mongomq needs acknowledged writes (its fenced updates read the match "
                 "count); leave w out (mongomq then uses w=majority) or set w=majority or w=1");
    mongoc_write_concern_t *wc = mongoc_write_concern_copy(given);
    if (wc == nullptr) throw std::bad_alloc();
    if (w == MONGOC_WRITE_CONCERN_W_DEFAULT && !mongoc_write_concern_get_wmajority(given))
        mongoc_write_concern_set_wmajority(wc, static_cast<int32_t>(mongoc_write_concern_get_wtimeout_int64(given)));
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
