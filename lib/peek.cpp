// Read-only looks into a queue (mq_peek_json, mq_dead_list_json, mq_dead_list_with):
// what the next events are, and what is in the dead letters, without claiming or
// changing anything. One find each (and a count for a page of dead letters). For tooling (the mongomq command's `peek`
// and `dead list`), not for every event.
#include <jansson.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "attrs.hpp"
#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "json.hpp"
#include "mongomq.h"
#include "store.hpp"
#include "read.hpp"
#include "validate.hpp"

namespace mongomq {
namespace {

std::string base64(const uint8_t *data, size_t len) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((len + 2) / 3 * 4);
    for (size_t i = 0; i < len; i += 3) {
        uint32_t n = static_cast<uint32_t>(data[i]) << 16;
        if (i + 1 < len) n |= static_cast<uint32_t>(data[i + 1]) << 8;
        if (i + 2 < len) n |= data[i + 2];
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += i + 1 < len ? alphabet[(n >> 6) & 63] : '=';
        out += i + 2 < len ? alphabet[n & 63] : '=';
    }
    return out;
}

// One stored event as JSON: the fields we know, each only when it has the type we
// write (a document someone else wrote may have anything: it is shown, not trusted).
// "event" is the text for a BSON string, {"base64": "..."} for binary.
Json event_json(const bson_t *doc) {
    Json o = json_owned(json_object());
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_NUMBER(&it))
        json_put(o.get(), "seq", json_integer(bson_iter_as_int64(&it)));
    if (bson_iter_init_find(&it, doc, "group_id") && BSON_ITER_HOLDS_UTF8(&it)) {
        uint32_t len;
        const char *g = bson_iter_utf8(&it, &len);
        json_t *gs = json_stringn(g, len);  // NULL for invalid UTF-8: left out
        if (gs != nullptr) json_put(o.get(), "group", gs);
    }
    for (const char *field : {"priority", "attempts"}) {
        if (bson_iter_init_find(&it, doc, field) && BSON_ITER_HOLDS_NUMBER(&it))
            json_put(o.get(), field, json_integer(bson_iter_as_int64(&it)));
    }
    for (const char *field : {"published_at", "not_before", "dead_at"}) {
        // NaN and infinities (JSON has none; json_real refuses them) are left out
        if (bson_iter_init_find(&it, doc, field) && BSON_ITER_HOLDS_NUMBER(&it) &&
            std::isfinite(bson_iter_as_double(&it)))
            json_put(o.get(), field, json_real(bson_iter_as_double(&it)));
    }
    const Attrs attrs = attrs_of(doc);  // "attrs": {key: value} (0.7.0), when it has any
    if (!attrs.empty()) {
        Json a = json_owned(json_object());
        for (const auto &kv : attrs) {
            json_t *v = json_stringn(kv.second.data(), kv.second.size());  // NULL for invalid UTF-8: left out
            if (v != nullptr) json_put(a.get(), kv.first.c_str(), v);
        }
        json_put(o.get(), "attrs", a.release());
    }
    if (bson_iter_init_find(&it, doc, "event")) {
        if (BSON_ITER_HOLDS_UTF8(&it)) {
            uint32_t len;
            const char *text = bson_iter_utf8(&it, &len);
            json_t *s = json_stringn(text, len);  // NULL for invalid UTF-8: shown as base64
            if (s != nullptr) {
                json_put(o.get(), "event", s);
            } else {
                Json b = json_owned(json_object());
                json_put(b.get(), "base64", json_string(base64(reinterpret_cast<const uint8_t *>(text), len).c_str()));
                json_put(o.get(), "event", b.release());
            }
        } else if (BSON_ITER_HOLDS_BINARY(&it)) {
            bson_subtype_t subtype;
            uint32_t len;
            const uint8_t *data;
            bson_iter_binary(&it, &subtype, &len, &data);
            Json b = json_owned(json_object());
            json_put(b.get(), "base64", json_string(base64(data, len).c_str()));
            json_put(o.get(), "event", b.release());
        }
    }
    return o;
}

char *array_text(const std::vector<BsonPtr> &docs, const char *fn) {
    Json arr = json_owned(json_array());
    for (const BsonPtr &d : docs) {
        Json e = event_json(d.get());
        if (json_array_append_new(arr.get(), e.release()) != 0) throw std::bad_alloc();
    }
    return json_text(arr.get(), JSON_COMPACT | JSON_ENSURE_ASCII, fn);
}

void check_max(const char *fn, size_t max_events) {
    if (max_events == 0) fail_arg(fn, "max_events is 0; it must be 1.." + std::to_string(MQ_BATCH_MAX));
    if (max_events > static_cast<size_t>(MQ_BATCH_MAX))
        fail_arg(fn, "max_events is " + std::to_string(max_events) + ", more than MQ_BATCH_MAX (" +
                         std::to_string(MQ_BATCH_MAX) + ")");
}

}  // namespace

// lib/read.hpp: peek's JSON of one event, for the fuzzers.
json_t *read_event_json(const bson_t *doc) { return event_json(doc).release(); }
}  // namespace mongomq

using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::null_out;

extern "C" {

// peek: one find on messages, {group_id: G} or every event ({group_id: {$exists: true}}),
// sort {_id: 1}, limit n.
mq_status mq_peek_json(mq_queue *queue, const char *group_id, size_t max_events, char **json_out, mq_error *err) {
    null_out(json_out);
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_peek_json";
        mongomq::check_queue(fn, queue);
        if (group_id != nullptr) mongomq::check_group_id(fn, group_id);
        mongomq::check_max(fn, max_events);
        if (json_out == nullptr) fail_arg(fn, "json_out is NULL");
        mongomq::Conn c(queue);
        // Everything: events only, not the records keyed events leave (no group_id).
        mongomq::BsonPtr filter =
            mongomq::own(group_id != nullptr ? BCON_NEW("group_id", BCON_UTF8(group_id))
                                             : BCON_NEW("group_id", "{", "$exists", BCON_BOOL(true), "}"));
        mongomq::BsonPtr opts = mongomq::own(
            BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(static_cast<int64_t>(max_events))));
        *json_out = mongomq::array_text(mongomq::find("peek.messages", c.messages(), filter.get(), opts.get()), fn);
        return MQ_OK;
    });
}

// dead list: one find on the dead letters, sort {_id: 1}, limit n.
mq_status mq_dead_list_json(mq_queue *queue, size_t max_events, char **json_out, mq_error *err) {
    null_out(json_out);
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_dead_list_json";
        mongomq::check_queue(fn, queue);
        mongomq::check_max(fn, max_events);
        if (json_out == nullptr) fail_arg(fn, "json_out is NULL");
        mongomq::Conn c(queue);
        mongomq::BsonPtr all = mongomq::own(bson_new());
        mongomq::BsonPtr opts = mongomq::own(
            BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(static_cast<int64_t>(max_events))));
        *json_out = mongomq::array_text(mongomq::find("dead.list", c.dead(), all.get(), opts.get()), fn);
        return MQ_OK;
    });
}

mq_status mq_dead_list_opts_init(mq_dead_list_opts *opts, unsigned int version) {
    if (opts == nullptr || version != MQ_DEAD_LIST_OPTS_VERSION) return MQ_ERR_ARG;
    const mq_dead_list_opts defaults = MQ_DEAD_LIST_OPTS_INIT;
    *opts = defaults;
    return MQ_OK;
}

// dead page: dead.page (find sort {_id: 1} skip k limit n: the _id index) and
// dead.total (countDocuments).
mq_status mq_dead_list_with(mq_queue *queue, const mq_dead_list_opts *opts, char **json_out, mq_error *err) {
    null_out(json_out);
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_dead_list_with";
        mongomq::check_queue(fn, queue);
        mq_dead_list_opts o = MQ_DEAD_LIST_OPTS_INIT;
        if (opts != nullptr) {
            if (opts->version != MQ_DEAD_LIST_OPTS_VERSION)
                fail_arg(fn, mongomq::unknown_version(opts->version, MQ_DEAD_LIST_OPTS_VERSION));
            o = *opts;
        }
        if (o.limit > 1000) fail_arg(fn, "limit is " + std::to_string(o.limit) + ", more than 1000");
        if (o.offset > static_cast<size_t>(INT64_MAX)) fail_arg(fn, "offset is too large");
        if (json_out == nullptr) fail_arg(fn, "json_out is NULL");
        const size_t limit = o.limit == 0 ? 50 : o.limit;
        mongomq::Conn c(queue);
        mongomq::BsonPtr all = mongomq::own(bson_new());
        mongomq::BsonPtr page = mongomq::own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}",  //
                                                      "skip", BCON_INT64(static_cast<int64_t>(o.offset)), "limit",
                                                      BCON_INT64(static_cast<int64_t>(limit))));
        std::vector<mongomq::BsonPtr> docs = mongomq::find("dead.page", c.dead(), all.get(), page.get());
        const int64_t total = mongomq::count_documents("dead.total", c.dead(), all.get());
        mongomq::Json root = mongomq::json_owned(json_object());
        json_t *letters = json_array();
        mongomq::json_put(root.get(), "letters", letters);
        for (const mongomq::BsonPtr &d : docs) {
            mongomq::Json e = mongomq::event_json(d.get());
            if (json_array_append_new(letters, e.release()) != 0) throw std::bad_alloc();
        }
        mongomq::json_put(root.get(), "offset", json_integer(static_cast<json_int_t>(o.offset)));
        mongomq::json_put(root.get(), "total", json_integer(static_cast<json_int_t>(total)));
        *json_out = mongomq::json_text(root.get(), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII, fn);
        return MQ_OK;
    });
}

}  // extern "C"
