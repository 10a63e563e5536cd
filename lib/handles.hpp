// What the opaque handles of mongomq.h are. Only lib/ sees these.
#pragma once

#include <mongoc/mongoc.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "mongomq.h"

struct mq_client {
    mongoc_client_pool_t *pool = nullptr;
    mongoc_uri_t *uri = nullptr;
    std::string password;                   // scrubbed from every message we produce
    std::atomic<uint64_t> commands{0};      // APM: commands started through this pool
};

struct mq_queue {
    mq_client *client = nullptr;
    std::string db;
    std::string prefix;
    std::string ns;                         // "db.prefix": whose leases these are
    std::string messages, locks, counters;  // collection names

    std::mutex clock_mu;
    double (*clock)(void *) = nullptr;      // nullptr: the wall clock
    void *clock_ctx = nullptr;

    double now();
};

// One claimed group and the head event(s) it holds. A lease is a plain value: it
// keeps no pointer to its queue, only the queue's namespace, so it may outlive it.
struct mq_lease {
    struct Item {
        int64_t seq;
        std::string event;
    };

    std::string ns;
    std::string group;
    std::string token;
    std::vector<Item> items;  // the head first; one item today (see docs/design.md)
    int attempts = 0;
    int priority = 0;
    bool more_after = false;  // the claim saw another event behind the last item
};
