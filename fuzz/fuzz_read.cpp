// What the library reads from documents it did not necessarily write: the input is
// taken as a BSON document (as a server would return one) and every reader runs on
// it: lib/store.hpp's getters, the stats readers (int_or, priority_of) and peek's
// JSON of one event. None may crash; the getters that can refuse do so with
// MQ_ERR_SERVER and a message; priority_of stays in -1..4; peek's JSON is an object
// that serializes to valid UTF-8.
#include <bson/bson.h>
#include <jansson.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common.hpp"
#include "error.hpp"
#include "read.hpp"
#include "store.hpp"

namespace {

template <typename F>
void expect_ok_or_server(const char *what, F f) {
    try {
        f();
    } catch (const mongomq::Failure &e) {
        if (e.status != MQ_ERR_SERVER) fuzz::die(what, "status " + std::to_string(e.status) + ": " + e.message);
        if (e.message.empty()) fuzz::die(what, "empty message");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bson_t doc;
    if (!bson_init_static(&doc, data, size)) return 0;
    // the server never returns a document that is not well-formed BSON
    if (!bson_validate(&doc, BSON_VALIDATE_NONE, nullptr)) return 0;

    static const char *fields[] = {"_id",   "group_id",     "event",        "priority",   "attempts",
                                   "head",  "available_at", "token",        "n",          "total",
                                   "ready", "leased",       "published_at", "not_before", "dead_at"};
    for (const char *f : fields) {
        expect_ok_or_server("get_int64", [&] { (void)mongomq::get_int64(&doc, f, "fuzz.read"); });
        expect_ok_or_server("get_string", [&] { (void)mongomq::get_string(&doc, f, "fuzz.read"); });
        (void)mongomq::get_int_or(&doc, f, 0);
        (void)mongomq::get_int64_or(&doc, f, 0);
        (void)mongomq::get_double_or(&doc, f, 0);
        (void)mongomq::read_int_or(&doc, f, 0);
        int p = mongomq::read_priority_of(&doc, f);
        if (p < -1 || p > 4) fuzz::die("priority_of", std::to_string(p));
    }
    expect_ok_or_server("get_event_bytes", [&] { (void)mongomq::get_event_bytes(&doc, 1); });

    json_t *j = nullptr;
    try {
        j = mongomq::read_event_json(&doc);
    } catch (const std::bad_alloc &) {
        fuzz::die("event_json", "threw bad_alloc (a value jansson refused, reported as out of memory)");
    }
    if (j == nullptr || !json_is_object(j)) fuzz::die("event_json", "not an object");
    char *text = json_dumps(j, JSON_COMPACT);
    if (text == nullptr) fuzz::die("event_json", "does not serialize");
    if (!fuzz::ref_utf8(std::string(text))) fuzz::die("event_json", "not valid UTF-8");
    std::free(text);
    json_decref(j);
    return 0;
}
