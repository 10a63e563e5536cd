// Argument checks made before anything is sent: UTF-8, group and worker ids, names
// MongoDB accepts, numbers and durations (validate.hpp).
#include "validate.hpp"

#include <cmath>
#include <cstring>

#include "error.hpp"

namespace mongomq {

bool utf8_valid(const char *s, size_t len, size_t *bad_offset) {
    const auto *p = reinterpret_cast<const unsigned char *>(s);
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        size_t need;
        uint32_t cp;
        uint32_t min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            need = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            need = 2, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            need = 3, cp = c & 0x07, min = 0x10000;
        } else {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        if (len - i <= need) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        for (size_t k = 1; k <= need; k++) {
            if ((p[i + k] & 0xC0) != 0x80) {
                if (bad_offset) *bad_offset = i;
                return false;
            }
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += need + 1;
    }
    return true;
}

namespace {

void check_utf8_id(const char *fn, const char *name, const char *value, size_t max) {
    if (value == nullptr) fail_arg(fn, std::string(name) + " is NULL");
    size_t len = std::strlen(value);
    if (len == 0) fail_arg(fn, std::string(name) + " is empty");
    if (len > max)
        fail_arg(fn, std::string(name) + " is " + std::to_string(len) + " bytes, more than the " + std::to_string(max) +
                         " allowed");
    size_t bad = 0;
    if (!utf8_valid(value, len, &bad))
        fail_arg(fn, std::string(name) + " is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
}

}  // namespace

void check_group_id(const char *fn, const char *group_id) { check_utf8_id(fn, "group_id", group_id, MQ_GROUP_ID_MAX); }

void check_dedup_key(const char *fn, const char *dedup_key) {
    check_utf8_id(fn, "dedup_key", dedup_key, MQ_DEDUP_KEY_MAX);
}

void check_worker_id(const char *fn, const char *worker_id) {
    check_utf8_id(fn, "worker_id", worker_id, MQ_WORKER_ID_MAX);
}

void check_priority(const char *fn, const char *name, int priority) {
    if (priority < MQ_PRIORITY_MIN || priority > MQ_PRIORITY_MAX)
        fail_arg(fn, std::string(name) + " is " + std::to_string(priority) + ", outside 0..4");
}

void check_seconds(const char *fn, const char *name, double seconds, bool zero_ok) {
    if (std::isnan(seconds)) fail_arg(fn, std::string(name) + " is NaN");
    if (std::isinf(seconds)) fail_arg(fn, std::string(name) + " is infinite");
    if (seconds < 0) fail_arg(fn, std::string(name) + " is negative");
    if (seconds == 0 && !zero_ok) fail_arg(fn, std::string(name) + " is 0; it must be more than 0");
    // A century: beyond it the double epoch loses the millisecond precision leases need.
    if (seconds > 3.2e9) fail_arg(fn, std::string(name) + " is more than 3.2e9 seconds");
}

void check_event(const char *fn, const void *event, size_t len) {
    if (event == nullptr && len > 0) fail_arg(fn, "event is NULL but event_len is " + std::to_string(len));
    if (len > static_cast<size_t>(MQ_EVENT_MAX))
        fail_arg(fn, "event is " + std::to_string(len) + " bytes, more than the " + std::to_string(MQ_EVENT_MAX) +
                         " allowed (MQ_EVENT_MAX)");
}

void check_epoch(const char *fn, const char *name, double epoch_s) {
    if (std::isnan(epoch_s)) fail_arg(fn, std::string(name) + " is NaN");
    if (std::isinf(epoch_s)) fail_arg(fn, std::string(name) + " is infinite");
    if (epoch_s < 0) fail_arg(fn, std::string(name) + " is negative");
    if (epoch_s > 1e11) fail_arg(fn, std::string(name) + " is after the year 5000: seconds, not milliseconds?");
}

void check_max_events(const char *fn, size_t max_events) {
    if (max_events == 0) fail_arg(fn, "max_events is 0; it must be at least 1");
    if (max_events > MQ_BATCH_MAX)
        fail_arg(fn, "max_events is " + std::to_string(max_events) + ", more than the " + std::to_string(MQ_BATCH_MAX) +
                         " allowed (MQ_BATCH_MAX)");
}

bool event_is_text(const void *event, size_t len) {
    if (len == 0) return true;
    const char *bytes = static_cast<const char *>(event);
    return std::memchr(bytes, '\0', len) == nullptr && utf8_valid(bytes, len);
}

void check_db_name(const char *fn, const std::string &db) {
    if (db.empty()) fail_arg(fn, "db_name is empty");
    if (db.size() >= 64) fail_arg(fn, "db_name is " + std::to_string(db.size()) + " bytes; MongoDB allows at most 63");
    if (!utf8_valid(db.data(), db.size())) fail_arg(fn, "db_name is not valid UTF-8");
    for (char c : db) {
        if (c == '\0' || std::strchr("/\\. \"$*<>:|?", c) != nullptr) {
            std::string shown = c == '\0' ? std::string("NUL") : std::string("'") + c + "'";
            fail_arg(fn, "db_name contains " + shown + ", which MongoDB does not allow in a database name");
        }
    }
}

void check_prefix(const char *fn, const std::string &db, const std::string &prefix) {
    if (prefix.empty()) fail_arg(fn, "prefix is empty");
    if (!utf8_valid(prefix.data(), prefix.size())) fail_arg(fn, "prefix is not valid UTF-8");
    if (prefix.find('$') != std::string::npos)
        fail_arg(fn, "prefix contains '$', which MongoDB does not allow in a collection name");
    if (prefix.find('\0') != std::string::npos) fail_arg(fn, "prefix contains NUL");
    if (prefix[0] == '.') fail_arg(fn, "prefix starts with '.', which MongoDB does not allow in a collection name");
    if (prefix.rfind("system.", 0) == 0) fail_arg(fn, "prefix starts with \"system.\", which MongoDB reserves");
    // "db.prefix_messages" (the longest name) must fit MongoDB's 255-byte namespace.
    size_t ns = db.size() + 1 + prefix.size() + std::strlen("_messages");
    if (ns > 255) fail_arg(fn, "prefix makes the namespace " + std::to_string(ns) + " bytes long; MongoDB allows 255");
}

std::string unknown_version(unsigned int got, unsigned int known) {
    return "opts->version is " + std::to_string(got) + "; this library knows version " + std::to_string(known) +
           " (set it with the header's _INIT macro or _opts_init)";
}

mq_publish_opts publish_opts_of(const char *fn, const mq_publish_opts *opts) {
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    if (opts == nullptr) return o;
    // Version 1 ended before dedup_key, version 2 before attrs: an older caller's
    // struct has no such fields, and they are not read.
    if (opts->version == 1 || opts->version == 2) {
        o.priority = opts->priority;
        o.not_before = opts->not_before;
        if (opts->version == 2) o.dedup_key = opts->dedup_key;
    } else if (opts->version == MQ_PUBLISH_OPTS_VERSION) {
        o = *opts;
    } else {
        fail_arg(fn, unknown_version(opts->version, MQ_PUBLISH_OPTS_VERSION));
    }
    if (o.dedup_key != nullptr) check_dedup_key(fn, o.dedup_key);
    return o;
}

}  // namespace mongomq
