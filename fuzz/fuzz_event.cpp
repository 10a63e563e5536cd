// The text/binary decision and the round trip of an event: event_is_text must be
// "valid UTF-8 without NUL" (by the reference decoder); the event is stored as
// lib/queue.cpp's publish stores it (a BSON string when text, binary subtype 0
// otherwise), the document goes through its bytes (as it would over the wire), and
// get_event_bytes (lib/store.hpp) must give back exactly the published bytes.
#include <bson/bson.h>

#include <cstring>
#include <string>

#include "common.hpp"
#include "error.hpp"
#include "store.hpp"
#include "validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bool text = mongomq::event_is_text(data, size);
    size_t bad = 0;
    bool expect = size == 0 || (std::memchr(data, 0, size) == nullptr && fuzz::ref_utf8(data, size, &bad));
    if (text != expect) fuzz::die("event_is_text", text ? "text" : "binary");

    bson_t *msg = bson_new();
    BSON_APPEND_INT64(msg, "_id", 7);
    BSON_APPEND_UTF8(msg, "group_id", "g");
    if (text)
        bson_append_utf8(msg, "event", -1, size > 0 ? reinterpret_cast<const char *>(data) : "",
                         static_cast<int>(size));
    else
        bson_append_binary(msg, "event", -1, BSON_SUBTYPE_BINARY, data, static_cast<uint32_t>(size));
    BSON_APPEND_INT32(msg, "priority", 0);
    // through the bytes, as the server would hand it back
    bson_t *back = bson_new_from_data(bson_get_data(msg), msg->len);
    if (back == nullptr) fuzz::die("bson round trip", "unreadable document");
    std::string got;
    try {
        got = mongomq::get_event_bytes(back, 7);
    } catch (const mongomq::Failure &e) {
        fuzz::die("get_event_bytes", e.message);
    }
    if (got.size() != size || (size > 0 && std::memcmp(got.data(), data, size) != 0))
        fuzz::die("round trip", "bytes differ");
    bson_destroy(back);
    bson_destroy(msg);
    return 0;
}
