// Event attributes inside the library (lib/attrs.cpp; docs/design.md, "Event
// attributes"): the checked form publish and batches carry, the message's "attrs"
// field, and its reading back by the claim, the dead letters and peek.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bson.hpp"
#include "mongomq.h"

namespace mongomq {

// Key and value, in publish order.
using Attrs = std::vector<std::pair<std::string, std::string>>;

// The caller's attributes, checked (MQ_ERR_ARG naming the one at fault).
Attrs check_attrs(const char *fn, const mq_event_attr *attrs, size_t count);

// "attrs": [{k, v}, ...] on a message, when there are any.
void append_attrs(bson_t *msg, const Attrs &attrs);

// A stored document's attributes; malformed entries are skipped.
Attrs attrs_of(const bson_t *doc);

}  // namespace mongomq
