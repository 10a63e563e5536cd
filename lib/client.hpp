#pragma once

#include <string>

#include "handles.hpp"

namespace mongomq {

mq_client *client_new(const char *uri);  // throws Failure
void client_destroy(mq_client *client);

// Replaces every occurrence of `password` in `message` with "***".
std::string scrub(std::string message, const std::string &password);

void log_set_handler(mq_log_fn handler, void *ctx);

}  // namespace mongomq
