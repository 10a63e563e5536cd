// The server commands the queue is built from, one function per command kind
// (store.hpp): each names its command for errors and the fault hook, applies the
// client's read and write concerns, and reads the reply.
#include "store.hpp"

#include <cstring>
#include <memory>

#include "client.hpp"
#include "error.hpp"
#include "fault.hpp"

namespace mongomq {

Conn::Conn(const mq_queue *queue)
    : owner_(queue->client),
      client_(queue->client->pool),
      messages_(client_.collection(queue->db, queue->messages)),
      locks_(client_.collection(queue->db, queue->locks)),
      counters_(client_.collection(queue->db, queue->counters)),
      dead_(client_.collection(queue->db, queue->dead)) {
    // Whatever the URI says: reads from the primary with read concern "local", writes
    // with the client's write concern (docs/design.md, "Deployments").
    for (mongoc_collection_t *coll : {messages_.get(), locks_.get(), counters_.get(), dead_.get()}) {
        if (coll == nullptr) throw std::bad_alloc();
        mongoc_collection_set_read_prefs(coll, owner_->read_prefs);
        mongoc_collection_set_read_concern(coll, owner_->read_concern);
        mongoc_collection_set_write_concern(coll, owner_->write_concern);
    }
}

namespace {

// Read commands: the read preference they go out with, for the tests' inspection.
void observe_read(const char *name, mongoc_collection_t *coll) {
    observe_read_prefs(name, mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(coll)));
}

// A cursor's error, if any, with the server's reply (its labels).
void fail_cursor(const char *name, mongoc_cursor_t *cursor) {
    bson_error_t error;
    const bson_t *reply = nullptr;
    if (mongoc_cursor_error_document(cursor, &error, &reply)) fail_mongoc(name, error, reply);
}

int64_t reply_count(const bson_t *reply, const char *field) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, reply, field) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
    return 0;
}

}  // namespace

// A write that failed only by its write concern (a wtimeout, a replica set that lost
// its majority) was applied, and the reply carries its result: note it for the call's
// mq_error and go on. Any other error is the command's failure. libmongoc reports a
// findAndModify whose reply has a writeConcernError as a write-concern error even when
// the command itself failed (ok: 0, e.g. NotWritablePrimary): such a reply is the
// command's own failure, with its own code (and its labels).
void applied_or_fail(const char *name, const bson_error_t &error, const bson_t *reply) {
    if (error.domain != MONGOC_ERROR_WRITE_CONCERN) fail_mongoc(name, error, reply);
    bson_iter_t it;
    if (reply != nullptr && bson_iter_init_find(&it, reply, "ok") && BSON_ITER_HOLDS_NUMBER(&it) &&
        bson_iter_as_double(&it) == 0) {
        bson_error_t own_error = error;
        own_error.domain = MONGOC_ERROR_SERVER;
        own_error.code = static_cast<uint32_t>(get_int_or(reply, "code", 0));
        if (bson_iter_init_find(&it, reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it))
            bson_strncpy(own_error.message, bson_iter_utf8(&it, nullptr), sizeof own_error.message);
        fail_mongoc(name, own_error, reply);
    }
    note_write_concern_error(name, static_cast<int>(error.code), error.message);
}

BsonPtr find_and_modify(const char *name, mongoc_collection_t *coll, const FamSpec &spec) {
    fault_point(name);
    FindAndModifyOpts opts(mongoc_find_and_modify_opts_new());
    if (spec.sort != nullptr) mongoc_find_and_modify_opts_set_sort(opts.get(), spec.sort);
    mongoc_find_and_modify_opts_set_update(opts.get(), spec.update);
    int flags = MONGOC_FIND_AND_MODIFY_NONE;
    if (spec.upsert) flags |= MONGOC_FIND_AND_MODIFY_UPSERT;
    if (spec.return_new) flags |= MONGOC_FIND_AND_MODIFY_RETURN_NEW;
    mongoc_find_and_modify_opts_set_flags(opts.get(), static_cast<mongoc_find_and_modify_flags_t>(flags));

    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_find_and_modify_with_opts(coll, spec.query, opts.get(), reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
    bson_iter_t it;
    if (!bson_iter_init_find(&it, reply.get(), "value") || !BSON_ITER_HOLDS_DOCUMENT(&it)) return BsonPtr();
    const uint8_t *data;
    uint32_t len;
    bson_iter_document(&it, &len, &data);
    bson_t value;
    if (!bson_init_static(&value, data, len)) fail(MQ_ERR_SERVER, std::string(name) + ": malformed reply");
    return bson_copy_of(&value);
}

void insert_one(const char *name, mongoc_collection_t *coll, const bson_t *doc) {
    fault_point(name);
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_insert_one(coll, doc, nullptr, reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
}

int64_t update_one(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *update,
                   bool upsert) {
    fault_point(name);
    Bson opts;
    if (upsert) BSON_APPEND_BOOL(opts.get(), "upsert", true);
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_update_one(coll, filter, update, opts.get(), reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
    return reply_count(reply.get(), "matchedCount") + reply_count(reply.get(), "upsertedCount");
}

int64_t update_many(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *update) {
    fault_point(name);
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_update_many(coll, filter, update, nullptr, reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
    return reply_count(reply.get(), "matchedCount");
}

int64_t delete_one(const char *name, mongoc_collection_t *coll, const bson_t *filter) {
    fault_point(name);
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_delete_one(coll, filter, nullptr, reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
    return reply_count(reply.get(), "deletedCount");
}

int64_t delete_many(const char *name, mongoc_collection_t *coll, const bson_t *filter) {
    fault_point(name);
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_delete_many(coll, filter, nullptr, reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
    return reply_count(reply.get(), "deletedCount");
}

void insert_many(const char *name, mongoc_collection_t *coll, const std::vector<BsonPtr> &docs) {
    fault_point(name);
    // Pointers kept as void *: a template argument of bson_t would drop its alignment
    // attribute (-Wignored-attributes).
    std::vector<const void *> ptrs;
    ptrs.reserve(docs.size());
    for (const BsonPtr &d : docs) ptrs.push_back(d.get());
    Bson reply;
    bson_error_t error;
    if (!mongoc_collection_insert_many(coll, reinterpret_cast<const bson_t **>(ptrs.data()), ptrs.size(), nullptr,
                                       reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
}

std::vector<size_t> insert_many_keyed(const char *name, mongoc_collection_t *coll, const std::vector<BsonPtr> &docs) {
    fault_point(name);
    std::vector<const void *> ptrs;
    ptrs.reserve(docs.size());
    for (const BsonPtr &d : docs) ptrs.push_back(d.get());
    BsonPtr opts = own(BCON_NEW("ordered", BCON_BOOL(false)));
    Bson reply;
    bson_error_t error;
    std::vector<size_t> refused;
    if (!mongoc_collection_insert_many(coll, reinterpret_cast<const bson_t **>(ptrs.data()), ptrs.size(), opts.get(),
                                       reply.get(), &error)) {
        bson_iter_t it, list;
        bool only_duplicates = bson_iter_init_find(&it, reply.get(), "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
                               bson_iter_recurse(&it, &list);
        while (only_duplicates && bson_iter_next(&list)) {
            bson_iter_t entry;
            int64_t index = -1, code = 0;
            if (BSON_ITER_HOLDS_DOCUMENT(&list) && bson_iter_recurse(&list, &entry)) {
                while (bson_iter_next(&entry)) {
                    if (!BSON_ITER_HOLDS_NUMBER(&entry)) continue;
                    if (strcmp(bson_iter_key(&entry), "index") == 0) index = bson_iter_as_int64(&entry);
                    if (strcmp(bson_iter_key(&entry), "code") == 0) code = bson_iter_as_int64(&entry);
                }
            }
            if (code != kDuplicateKey || index < 0 || static_cast<size_t>(index) >= docs.size())
                only_duplicates = false;
            else
                refused.push_back(static_cast<size_t>(index));
        }
        if (!only_duplicates || refused.empty()) applied_or_fail(name, error, reply.get());
        // Refused documents, and maybe a write-concern error for the others.
        if (bson_iter_init_find(&it, reply.get(), "writeConcernErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
            bson_iter_recurse(&it, &list) && bson_iter_next(&list))
            note_write_concern_error(name, 64, "the inserted events' write concern was not confirmed");
    }
    fault_reply(name);
    return refused;
}

namespace {
struct BulkFree {
    void operator()(mongoc_bulk_operation_t *b) const { mongoc_bulk_operation_destroy(b); }
};
}  // namespace

int64_t bulk_upsert(const char *name, mongoc_collection_t *coll, const std::vector<std::pair<BsonPtr, BsonPtr>> &ops) {
    fault_point(name);
    BsonPtr opts = own(BCON_NEW("ordered", BCON_BOOL(false)));
    std::unique_ptr<mongoc_bulk_operation_t, BulkFree> bulk(
        mongoc_collection_create_bulk_operation_with_opts(coll, opts.get()));
    BsonPtr upsert = own(BCON_NEW("upsert", BCON_BOOL(true)));
    bson_error_t error;
    for (const auto &op : ops) {
        if (!mongoc_bulk_operation_update_one_with_opts(bulk.get(), op.first.get(), op.second.get(), upsert.get(),
                                                        &error))
            fail_mongoc(name, error);
    }
    Bson reply;
    if (mongoc_bulk_operation_execute(bulk.get(), reply.get(), &error) == 0) applied_or_fail(name, error, reply.get());
    fault_reply(name);
    return reply_count(reply.get(), "nUpserted");
}

int64_t count_documents(const char *name, mongoc_collection_t *coll, const bson_t *filter) {
    fault_point(name);
    observe_read(name, coll);
    Bson reply;
    bson_error_t error;
    int64_t n = mongoc_collection_count_documents(coll, filter, nullptr, nullptr, reply.get(), &error);
    if (n < 0) fail_mongoc(name, error, reply.get());
    fault_reply(name);
    return n;
}

std::vector<BsonPtr> aggregate(const char *name, mongoc_collection_t *coll, const bson_t *pipeline,
                               const bson_t *opts) {
    fault_point(name);
    observe_read(name, coll);
    Cursor cursor(mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, pipeline, opts, nullptr));
    std::vector<BsonPtr> docs;
    const bson_t *doc;
    while (mongoc_cursor_next(cursor.get(), &doc)) docs.push_back(bson_copy_of(doc));
    fail_cursor(name, cursor.get());
    fault_reply(name);
    return docs;
}

void drop_collection(const char *name, mongoc_collection_t *coll) {
    fault_point(name);
    bson_error_t error;
    // Nothing to drop is no error: MongoDB says 26 NamespaceNotFound, mongo-java-server
    // says "ns not found" with no code.
    if (!mongoc_collection_drop(coll, &error) && error.code != 26 && !std::strstr(error.message, "ns not found"))
        applied_or_fail(name, error, nullptr);
    fault_reply(name);
}

std::vector<BsonPtr> find(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *opts) {
    fault_point(name);
    observe_read(name, coll);
    Cursor cursor(mongoc_collection_find_with_opts(coll, filter, opts, nullptr));
    std::vector<BsonPtr> docs;
    const bson_t *doc;
    while (mongoc_cursor_next(cursor.get(), &doc)) docs.push_back(bson_copy_of(doc));
    fail_cursor(name, cursor.get());
    fault_reply(name);
    return docs;
}

void write_command(const char *name, mongoc_client_t *client, const std::string &db, const bson_t *cmd) {
    fault_point(name);
    Bson reply;
    bson_error_t error;
    if (!mongoc_client_write_command_with_opts(client, db.c_str(), cmd, nullptr, reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
}

void write_command(const char *name, const Conn &c, const std::string &db, const bson_t *cmd) {
    fault_point(name);
    Bson opts;
    if (!mongoc_write_concern_append(c.owner()->write_concern, opts.get())) throw std::bad_alloc();
    Bson reply;
    bson_error_t error;
    if (!mongoc_client_write_command_with_opts(c.client(), db.c_str(), cmd, opts.get(), reply.get(), &error))
        applied_or_fail(name, error, reply.get());
    fault_reply(name);
}

BsonPtr read_command(const char *name, const Conn &c, const std::string &db, const bson_t *cmd) {
    fault_point(name);
    observe_read_prefs(name, mongoc_read_prefs_get_mode(c.owner()->read_prefs));
    // command_simple initializes the reply itself (a bson_new() given to it would
    // leak its struct): a stack reply, copied out.
    bson_t reply;
    bson_error_t error;
    // command_simple: no read concern of the URI's is added (hello takes none).
    bool ok = mongoc_client_command_simple(c.client(), db.c_str(), cmd, c.owner()->read_prefs, &reply, &error);
    BsonPtr copy = ok ? BsonPtr(bson_copy(&reply)) : BsonPtr();
    if (!ok) {
        BsonPtr failed(bson_copy(&reply));
        bson_destroy(&reply);
        fail_mongoc(name, error, failed.get());
    }
    bson_destroy(&reply);
    if (!copy) throw std::bad_alloc();
    fault_reply(name);
    return copy;
}

std::vector<BsonPtr> list_collections(const char *name, const Conn &c, const std::string &db, const bson_t *filter) {
    fault_point(name);
    observe_read_prefs(name, mongoc_read_prefs_get_mode(c.owner()->read_prefs));
    std::unique_ptr<mongoc_database_t, void (*)(mongoc_database_t *)> database(
        mongoc_client_get_database(c.client(), db.c_str()), mongoc_database_destroy);
    if (!database) throw std::bad_alloc();
    mongoc_database_set_read_prefs(database.get(), c.owner()->read_prefs);
    Bson opts;
    BSON_APPEND_DOCUMENT(opts.get(), "filter", filter);
    Cursor cursor(mongoc_database_find_collections_with_opts(database.get(), opts.get()));
    std::vector<BsonPtr> docs;
    const bson_t *doc;
    while (mongoc_cursor_next(cursor.get(), &doc)) docs.push_back(bson_copy_of(doc));
    fail_cursor(name, cursor.get());
    fault_reply(name);
    return docs;
}

std::string non_simple_collation(const bson_t *info) {
    bson_iter_t it, coll;
    if (!bson_iter_init(&it, info) || !bson_iter_find_descendant(&it, "options.collation", &coll) ||
        !BSON_ITER_HOLDS_DOCUMENT(&coll))
        return {};
    const uint8_t *data;
    uint32_t len;
    bson_iter_document(&coll, &len, &data);
    bson_t collation;
    if (!bson_init_static(&collation, data, len)) return "{?}";
    bson_iter_t locale;
    if (bson_iter_init_find(&locale, &collation, "locale") && BSON_ITER_HOLDS_UTF8(&locale) &&
        std::strcmp(bson_iter_utf8(&locale, nullptr), "simple") == 0)
        return {};
    char *json = bson_as_relaxed_extended_json(&collation, nullptr);
    std::string text = json != nullptr ? json : "{?}";
    bson_free(json);
    return text;
}

int64_t get_int64(const bson_t *doc, const char *field, const char *where) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it))
        fail(MQ_ERR_SERVER, std::string(where) + ": document has no numeric '" + field + "'");
    // A double must be a whole number in range: 1000001.5 read as 1000001 would be
    // acked by a delete that matches nothing, and the group redelivered forever at
    // the front (issue 14, tests/test_hostile.c).
    if (BSON_ITER_HOLDS_DOUBLE(&it)) {
        double d = bson_iter_double(&it);
        if (!(d >= -9.2e18 && d <= 9.2e18) || d != static_cast<double>(static_cast<int64_t>(d)))
            fail(MQ_ERR_SERVER, std::string(where) + ": document's '" + field + "' is not a whole number");
    }
    return bson_iter_as_int64(&it);
}

int get_int_or(const bson_t *doc, const char *field, int fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return static_cast<int>(bson_iter_as_int64(&it));
}

int64_t get_int64_or(const bson_t *doc, const char *field, int64_t fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return bson_iter_as_int64(&it);
}

double get_double_or(const bson_t *doc, const char *field, double fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return bson_iter_as_double(&it);
}

std::string get_string(const bson_t *doc, const char *field, const char *where) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_UTF8(&it))
        fail(MQ_ERR_SERVER, std::string(where) + ": document has no string '" + field + "'");
    uint32_t len;
    const char *s = bson_iter_utf8(&it, &len);
    return std::string(s, len);
}

std::string get_event_bytes(const bson_t *doc, int64_t seq) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "event")) {
        if (BSON_ITER_HOLDS_UTF8(&it)) {
            uint32_t len;
            const char *s = bson_iter_utf8(&it, &len);
            return std::string(s, len);
        }
        if (BSON_ITER_HOLDS_BINARY(&it)) {
            bson_subtype_t subtype;
            uint32_t len;
            const uint8_t *data;
            bson_iter_binary(&it, &subtype, &len, &data);
            return std::string(reinterpret_cast<const char *>(data), len);
        }
    }
    fail(MQ_ERR_SERVER, "message " + std::to_string(seq) + " has no string or binary 'event'");
}

}  // namespace mongomq
