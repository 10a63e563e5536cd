// jansson, owned: the JSON texts the library hands out (mq_stats_json, mq_peek_json,
// mq_dead_list_json) are built here and written into memory of our own malloc(), so
// mq_free (free) releases them even when the application gave jansson other
// allocators (json_set_alloc_funcs is process-wide): json_dumps's buffer would come
// from those.
#pragma once

#include <jansson.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "error.hpp"

namespace mongomq {

struct JsonFree {
    void operator()(json_t *j) const { json_decref(j); }
};
using Json = std::unique_ptr<json_t, JsonFree>;

inline Json json_owned(json_t *j) {
    if (j == nullptr) throw std::bad_alloc();
    return Json(j);
}

// obj[key] = value, taking value's reference (json_object_set_new releases it on
// failure too).
inline void json_put(json_t *obj, const char *key, json_t *value) {
    if (value == nullptr || json_object_set_new(obj, key, value) != 0) throw std::bad_alloc();
}

// The text of j with jansson's `flags`, in a buffer of our own malloc() (release with
// mq_free). `fn` names the call for the error jansson's failure becomes.
inline char *json_text(const json_t *j, size_t flags, const char *fn) {
    size_t n = json_dumpb(j, nullptr, 0, flags);
    if (n == 0) fail(MQ_ERR_INTERNAL, std::string(fn) + ": jansson could not write the text");
    char *text = static_cast<char *>(std::malloc(n + 1));
    if (text == nullptr) throw std::bad_alloc();
    if (json_dumpb(j, text, n, flags) != n) {
        std::free(text);
        fail(MQ_ERR_INTERNAL, std::string(fn) + ": jansson wrote the text inconsistently");
    }
    text[n] = '\0';
    return text;
}

}  // namespace mongomq
