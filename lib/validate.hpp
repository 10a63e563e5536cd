// Argument checks. Each throws MQ_ERR_ARG naming the function and the argument, and
// runs before anything is sent to the server.
#pragma once

#include <cstddef>
#include <string>

#include "mongomq.h"

namespace mongomq {

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. NUL bytes
// are valid UTF-8; callers that cannot store them check separately.
bool utf8_valid(const char *s, size_t len, size_t *bad_offset = nullptr);

void check_group_id(const char *fn, const char *group_id);
void check_worker_id(const char *fn, const char *worker_id);
void check_dedup_key(const char *fn, const char *dedup_key);  // 1..MQ_DEDUP_KEY_MAX bytes of UTF-8
void check_priority(const char *fn, const char *name, int priority);
void check_seconds(const char *fn, const char *name, double seconds, bool zero_ok);
void check_event(const char *fn, const void *event, size_t len);
void check_epoch(const char *fn, const char *name, double epoch_s);  // finite, >= 0
void check_max_events(const char *fn, size_t max_events);            // 1..MQ_BATCH_MAX

// Whether an event is stored as a BSON string (valid UTF-8 without NUL bytes, what
// harel stores) or as binary.
bool event_is_text(const void *event, size_t len);

// MongoDB's rules for database names and collection names; the prefix is checked as
// the start of the longest collection name it will make.
void check_db_name(const char *fn, const std::string &db);
void check_prefix(const char *fn, const std::string &db, const std::string &prefix);

// The message for an options struct whose version this library does not know.
std::string unknown_version(unsigned int got, unsigned int known);

// The caller's publish options as this library's struct: the fields its version has,
// the defaults for the rest (NULL: all defaults); an unknown version is MQ_ERR_ARG.
// A dedup_key, when set, is checked (check_dedup_key); the attributes are not
// (lib/attrs.cpp's check_attrs copies them).
mq_publish_opts publish_opts_of(const char *fn, const mq_publish_opts *opts);

}  // namespace mongomq
