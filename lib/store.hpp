// The server commands the queue is built from. Each takes the name under which
// docs/design.md lists it (e.g. "claim.lease"); the name goes into error messages and
// to the fault-injection hook. One function call here is exactly one server command.
// Every command reads from the primary with read concern "local" and writes with the
// client's write concern, whatever the URI says; a write whose only error is its
// write concern's was applied: it returns its result and the error is noted for the
// call's mq_error (client.hpp, note_write_concern_error).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bson.hpp"
#include "error.hpp"
#include "handles.hpp"

namespace mongomq {

// A pooled client and the queue's three collections, for one operation.
class Conn {
public:
    explicit Conn(const mq_queue *queue);

    const mq_client *owner() const { return owner_; }
    mongoc_client_t *client() const { return client_.get(); }
    mongoc_collection_t *messages() const { return messages_.get(); }
    mongoc_collection_t *locks() const { return locks_.get(); }
    mongoc_collection_t *counters() const { return counters_.get(); }
    mongoc_collection_t *dead() const { return dead_.get(); }

private:
    const mq_client *owner_;
    PooledClient client_;
    Collection messages_, locks_, counters_, dead_;
};

// BCON_NEW's result, owned.
inline BsonPtr own(bson_t *doc) {
    if (doc == nullptr) throw std::bad_alloc();
    return BsonPtr(doc);
}

// A write command's failure: a write-concern error alone means the write was applied
// (noted for the call's mq_error; returns), anything else throws (fail_mongoc). A reply
// with ok: 0 is the command's own failure even when it also carries a writeConcernError.
void applied_or_fail(const char *name, const bson_error_t &error, const bson_t *reply);

struct FamSpec {
    const bson_t *query = nullptr;
    const bson_t *sort = nullptr;  // may be nullptr
    const bson_t *update = nullptr;
    bool upsert = false;
    bool return_new = true;
};

// findAndModify; the document (before or after, as asked), or nullptr if none matched.
BsonPtr find_and_modify(const char *name, mongoc_collection_t *coll, const FamSpec &spec);

void insert_one(const char *name, mongoc_collection_t *coll, const bson_t *doc);

// updateOne; returns the number of documents matched (an upsert that inserted counts 1).
int64_t update_one(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *update,
                   bool upsert);

// deleteOne; returns the number of documents deleted.
// updateMany: the number matched.
int64_t update_many(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *update);

int64_t delete_one(const char *name, mongoc_collection_t *coll, const bson_t *filter);

// deleteMany; returns the number of documents deleted.
int64_t delete_many(const char *name, mongoc_collection_t *coll, const bson_t *filter);

// insertMany (ordered); one command for any batch that fits a wire message.
void insert_many(const char *name, mongoc_collection_t *coll, const std::vector<BsonPtr> &docs);

// An unordered insertMany that takes duplicate-key write errors as an answer: the
// indexes (into docs) of the documents refused with 11000, the others inserted. Any
// other write error is the command's failure.
std::vector<size_t> insert_many_keyed(const char *name, mongoc_collection_t *coll, const std::vector<BsonPtr> &docs);

// One unordered bulk of updateOne upserts ({filter, update} pairs): one command.
// Returns the number of documents the upserts inserted.
int64_t bulk_upsert(const char *name, mongoc_collection_t *coll, const std::vector<std::pair<BsonPtr, BsonPtr>> &ops);

// countDocuments (an aggregate on the server).
int64_t count_documents(const char *name, mongoc_collection_t *coll, const bson_t *filter);

// aggregate with opts (may be nullptr; e.g. allowDiskUse); every document of the result.
std::vector<BsonPtr> aggregate(const char *name, mongoc_collection_t *coll, const bson_t *pipeline,
                               const bson_t *opts = nullptr);

// drop; a collection that does not exist is not an error.
void drop_collection(const char *name, mongoc_collection_t *coll);

// find with opts (sort, limit, projection); every document of the (small) result.
std::vector<BsonPtr> find(const char *name, mongoc_collection_t *coll, const bson_t *filter, const bson_t *opts);

// A command on the queue's database, e.g. createIndexes.
void write_command(const char *name, mongoc_client_t *client, const std::string &db, const bson_t *cmd);
// The same with the client's write concern (a write-concern error is noted, not thrown).
void write_command(const char *name, const Conn &c, const std::string &db, const bson_t *cmd);
// A command that reads (hello) on the primary, without a read concern; the reply.
BsonPtr read_command(const char *name, const Conn &c, const std::string &db, const bson_t *cmd);

// listCollections on the primary, with a filter (e.g. {name: {$in: [...]}}).
std::vector<BsonPtr> list_collections(const char *name, const Conn &c, const std::string &db, const bson_t *filter);

// The collation of a listCollections entry as JSON when it is not the simple
// (binary) one, else "" (no collation, or locale "simple").
std::string non_simple_collation(const bson_t *collection_info);

// Runs `op` again when it fails with a duplicate key error: concurrent upserts of one
// new _id can both miss and both insert, and MongoDB then refuses the second; its retry
// finds the document and updates it. Bounded: a lasting 11000 is a real error.
template <typename Op>
auto retry_duplicate_key(Op op) -> decltype(op()) {
    for (int attempt = 1;; attempt++) {
        try {
            return op();
        } catch (const Failure &f) {
            if (!is_duplicate_key(f) || attempt >= 5) throw;
        }
    }
}

// Field readers for documents the server returned; a missing or mistyped field is
// MQ_ERR_SERVER naming the collection and field.
int64_t get_int64(const bson_t *doc, const char *field, const char *where);
int get_int_or(const bson_t *doc, const char *field, int fallback);
int64_t get_int64_or(const bson_t *doc, const char *field, int64_t fallback);
double get_double_or(const bson_t *doc, const char *field, double fallback);
std::string get_string(const bson_t *doc, const char *field, const char *where);
std::string get_event_bytes(const bson_t *doc, int64_t seq);

}  // namespace mongomq
