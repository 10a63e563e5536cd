// The change-stream watcher (lib/watcher.cpp): one change stream per client and
// database, on a thread and a connection of its own, shared by every waiting queue
// handle of that client there, turning the changes of their locks collections into
// hints for their Waiters (lib/waiters.hpp). The waiting loop (lib/wait.cpp) only
// subscribes and unsubscribes; the watchers themselves live in mq_client::watchers.
#pragma once

#include "handles.hpp"

namespace mongomq {

class Waiters;

// Subscribes a queue handle's Waiters (made by its first waiting claim) to its
// client's watcher for its database, which the first such handle makes (and with it
// the watcher's thread). Throws (std::bad_alloc, a mutex that cannot lock).
void watcher_subscribe(Waiters *w);

// Unsubscribes w: the watcher calls it no more. The last handle of the database stops
// and joins the watcher: at most one getMore's maxAwaitTimeMS, or while the server is
// unreachable the watcher client's timeouts (kWatchConnectMs, kWatchSocketMs). False
// when the client's registry could not be locked: then the caller must leak w rather
// than free what a thread may use.
bool watcher_unsubscribe(Waiters *w) noexcept;

}  // namespace mongomq
