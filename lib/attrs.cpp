// Event attributes (docs/design.md, "Event attributes"): checking the caller's, the
// "attrs" field of a message ([{k, v}, ...] in publish order: an array, because a key
// may hold '.', which a BSON field name must not), reading it back from a stored
// document, and the exported mq_lease_attr_count, mq_lease_attr, mq_lease_attr_at.
#include "attrs.hpp"

#include <cstring>
#include <string>
#include <unordered_set>

#include "error.hpp"
#include "guard.hpp"
#include "validate.hpp"

namespace mongomq {

namespace {

bool key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
}

}  // namespace

Attrs check_attrs(const char *fn, const mq_event_attr *attrs, size_t count) {
    Attrs out;
    if (count == 0) return out;
    if (attrs == nullptr) fail_arg(fn, "attrs is NULL but attr_count is " + std::to_string(count));
    if (count > MQ_ATTR_MAX)
        fail_arg(fn, "attr_count is " + std::to_string(count) + ", more than MQ_ATTR_MAX (" +
                         std::to_string(MQ_ATTR_MAX) + ")");
    std::unordered_set<std::string> seen;
    for (size_t i = 0; i < count; i++) {
        const std::string at = "attrs[" + std::to_string(i) + "]";
        const char *k = attrs[i].key, *v = attrs[i].value;
        if (k == nullptr) fail_arg(fn, at + ".key is NULL");
        if (v == nullptr) fail_arg(fn, at + ".value is NULL (an empty value is \"\")");
        const size_t klen = std::strlen(k), vlen = std::strlen(v);
        if (klen == 0) fail_arg(fn, at + ".key is empty");
        if (klen > MQ_ATTR_KEY_MAX)
            fail_arg(fn, at + ".key is " + std::to_string(klen) + " bytes, more than MQ_ATTR_KEY_MAX (" +
                             std::to_string(MQ_ATTR_KEY_MAX) + ")");
        for (size_t c = 0; c < klen; c++)
            if (!key_char(k[c]))
                fail_arg(fn, at + ".key \"" + (utf8_valid(k, klen) ? std::string(k) : std::string("(not UTF-8)")) +
                                 "\" has a byte other than ASCII letters, digits, '_', '-' and '.' at offset " +
                                 std::to_string(c));
        if (vlen > MQ_ATTR_VALUE_MAX)
            fail_arg(fn, at + ".value (key \"" + k + "\") is " + std::to_string(vlen) +
                             " bytes, more than MQ_ATTR_VALUE_MAX (" + std::to_string(MQ_ATTR_VALUE_MAX) + ")");
        size_t bad = 0;
        if (!utf8_valid(v, vlen, &bad))
            fail_arg(fn,
                     at + ".value (key \"" + k + "\") is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
        if (!seen.insert(k).second) fail_arg(fn, at + ".key \"" + k + "\" appears twice");
        out.emplace_back(std::string(k, klen), std::string(v, vlen));
    }
    return out;
}

void append_attrs(bson_t *msg, const Attrs &attrs) {
    if (attrs.empty()) return;
    bson_t list;
    BSON_APPEND_ARRAY_BEGIN(msg, "attrs", &list);
    for (size_t i = 0; i < attrs.size(); i++) {
        char idx[16];
        const char *k;
        bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
        bson_t pair;
        BSON_APPEND_DOCUMENT_BEGIN(&list, k, &pair);
        bson_append_utf8(&pair, "k", 1, attrs[i].first.data(), static_cast<int>(attrs[i].first.size()));
        bson_append_utf8(&pair, "v", 1, attrs[i].second.data(), static_cast<int>(attrs[i].second.size()));
        bson_append_document_end(&list, &pair);
    }
    bson_append_array_end(msg, &list);
}

Attrs attrs_of(const bson_t *doc) {
    Attrs out;
    bson_iter_t it, list;
    if (!bson_iter_init_find(&it, doc, "attrs") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &list))
        return out;
    // What another writer may have stored: entries that are no {k: string, v: string}
    // of UTF-8 without NUL bytes are skipped, never a failure of the claim.
    while (bson_iter_next(&list) && out.size() < MQ_ATTR_MAX) {
        bson_iter_t pair;
        if (!BSON_ITER_HOLDS_DOCUMENT(&list) || !bson_iter_recurse(&list, &pair)) continue;
        std::string k, v;
        bool has_k = false, has_v = false;
        while (bson_iter_next(&pair)) {
            if (!BSON_ITER_HOLDS_UTF8(&pair)) continue;
            uint32_t len;
            const char *s = bson_iter_utf8(&pair, &len);
            if (std::memchr(s, '\0', len) != nullptr || !utf8_valid(s, len)) continue;
            if (std::strcmp(bson_iter_key(&pair), "k") == 0) k.assign(s, len), has_k = true;
            if (std::strcmp(bson_iter_key(&pair), "v") == 0) v.assign(s, len), has_v = true;
        }
        if (has_k && has_v && !k.empty()) out.emplace_back(std::move(k), std::move(v));
    }
    return out;
}

}  // namespace mongomq

extern "C" {

size_t mq_lease_attr_count(const mq_lease *lease, size_t i) {
    if (lease == nullptr || i >= lease->items.size()) return 0;
    return lease->items[i].attrs.size();
}

const char *mq_lease_attr(const mq_lease *lease, size_t i, const char *key) {
    if (lease == nullptr || key == nullptr || i >= lease->items.size()) return nullptr;
    for (const auto &a : lease->items[i].attrs)
        if (a.first == key) return a.second.c_str();
    return nullptr;
}

mq_status mq_lease_attr_at(const mq_lease *lease, size_t i, size_t j, const char **key, const char **value,
                           mq_error *err) {
    if (key != nullptr) *key = nullptr;
    if (value != nullptr) *value = nullptr;
    return mongomq::guard(err, nullptr, [&] {
        const char *fn = "mq_lease_attr_at";
        if (lease == nullptr) mongomq::fail_arg(fn, "lease is NULL");
        if (key == nullptr || value == nullptr) mongomq::fail_arg(fn, key == nullptr ? "key is NULL" : "value is NULL");
        if (i >= lease->items.size())
            mongomq::fail_arg(
                fn, "i is " + std::to_string(i) + ", the lease has " + std::to_string(lease->items.size()) + " events");
        const auto &attrs = lease->items[i].attrs;
        if (j >= attrs.size())
            mongomq::fail_arg(fn, "j is " + std::to_string(j) + ", event " + std::to_string(i) + " has " +
                                      std::to_string(attrs.size()) + " attributes");
        *key = attrs[j].first.c_str();
        *value = attrs[j].second.c_str();
        return MQ_OK;
    });
}

}  // extern "C"
