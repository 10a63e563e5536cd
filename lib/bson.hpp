// Small RAII owners for libmongoc/libbson objects, so the queue logic never calls a
// *_destroy itself.
#pragma once

#include <mongoc/mongoc.h>

#include <memory>
#include <new>
#include <string>
#include <utility>

#include "error.hpp"

namespace mongomq {

// An owned bson_t, empty on construction.
class Bson {
public:
    Bson() { bson_init(&doc_); }
    ~Bson() { bson_destroy(&doc_); }
    Bson(const Bson &) = delete;
    Bson &operator=(const Bson &) = delete;

    bson_t *get() { return &doc_; }
    const bson_t *get() const { return &doc_; }

private:
    bson_t doc_;
};

// An owned heap bson_t (a copy of a reply or cursor document, or BCON_NEW's result).
// Not a std::unique_ptr<bson_t>: bson_t carries an alignment attribute that template
// arguments drop.
class BsonPtr {
public:
    BsonPtr() = default;
    explicit BsonPtr(bson_t *doc) : doc_(doc) {}
    ~BsonPtr() {
        if (doc_ != nullptr) bson_destroy(doc_);
    }
    BsonPtr(BsonPtr &&other) noexcept : doc_(other.doc_) { other.doc_ = nullptr; }
    BsonPtr &operator=(BsonPtr &&other) noexcept {
        std::swap(doc_, other.doc_);
        return *this;
    }
    BsonPtr(const BsonPtr &) = delete;
    BsonPtr &operator=(const BsonPtr &) = delete;

    bson_t *get() const { return doc_; }
    explicit operator bool() const { return doc_ != nullptr; }

private:
    bson_t *doc_ = nullptr;
};

inline BsonPtr bson_copy_of(const bson_t *doc) {
    bson_t *copy = bson_copy(doc);
    if (copy == nullptr) throw std::bad_alloc();
    return BsonPtr(copy);
}

struct CollectionFree {
    void operator()(mongoc_collection_t *c) const { mongoc_collection_destroy(c); }
};
using Collection = std::unique_ptr<mongoc_collection_t, CollectionFree>;

struct CursorFree {
    void operator()(mongoc_cursor_t *c) const { mongoc_cursor_destroy(c); }
};
using Cursor = std::unique_ptr<mongoc_cursor_t, CursorFree>;

struct FamOptsFree {
    void operator()(mongoc_find_and_modify_opts_t *o) const { mongoc_find_and_modify_opts_destroy(o); }
};
using FindAndModifyOpts = std::unique_ptr<mongoc_find_and_modify_opts_t, FamOptsFree>;

// A client borrowed from the pool for one operation, pushed back by the destructor.
class PooledClient {
public:
    // Waits for a free client when all maxPoolSize are in use: a wait that ends, since
    // no call of the library holds one client while it takes another (a call that
    // needs a second command passes its Conn down). libmongoc returns none after the
    // URI's waitQueueTimeoutMS, if it sets one.
    explicit PooledClient(mongoc_client_pool_t *pool) : pool_(pool), client_(mongoc_client_pool_pop(pool)) {
        if (client_ == nullptr)
            fail(MQ_ERR_CONNECT,
                 "no pooled connection became free within the URI's waitQueueTimeoutMS "
                 "(every one of maxPoolSize was in use)");
    }
    ~PooledClient() { mongoc_client_pool_push(pool_, client_); }
    PooledClient(const PooledClient &) = delete;
    PooledClient &operator=(const PooledClient &) = delete;

    mongoc_client_t *get() const { return client_; }

    Collection collection(const std::string &db, const std::string &name) const {
        return Collection(mongoc_client_get_collection(client_, db.c_str(), name.c_str()));
    }

private:
    mongoc_client_pool_t *pool_;
    mongoc_client_t *client_;
};

}  // namespace mongomq
