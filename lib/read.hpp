// What the library reads from stored documents, reachable by the fuzzers (fuzz/):
// the stats code's readers (lib/admin.cpp) and peek's JSON of one stored event
// (lib/peek.cpp). The getters of lib/store.hpp are the others.
#pragma once

#include <bson/bson.h>
#include <jansson.h>

#include <cstdint>

namespace mongomq {

// A numeric field as int64, or `fallback` when it is missing or not a number.
int64_t read_int_or(const bson_t *doc, const char *field, int64_t fallback);
// The priority bucket 0..4 of a field, or -1 when it is no whole number in 0..4.
int read_priority_of(const bson_t *doc, const char *field);
// One stored event as mq_peek_json shows it (a new reference; json_decref it).
json_t *read_event_json(const bson_t *doc);

}  // namespace mongomq
