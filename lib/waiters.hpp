// One queue handle's sleeping claimers (Waiters): what the waiting loop (lib/wait.cpp,
// which defines the sleep and the wake-ups) sleeps in and the change-stream watcher
// (lib/watcher.cpp) wakes. Only those two files see it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "handles.hpp"

namespace mongomq {

// One queue handle's waiting claimers: a generation counter that every hint and every
// change of mode moves, and the sleepers. A hint (one change event on the queue's
// locks collection) wakes ONE sleeper, the one with the lowest priority floor (it can
// claim whatever a higher floor could); a change of mode wakes them all. Waiters that
// are not asleep when a hint comes see the generation moved and claim again instead of
// sleeping, so no hint is missed (docs/design.md, "Waiting claims").
class Waiters {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr int kSleptOut = -2;

    enum class Mode {
        starting,     // the watcher has not opened a stream for us yet: back off
        live,         // a stream is open: hints come, the 1 s slice is a safety net
        down,         // the stream failed and will be reopened: back off meanwhile
        refused,      // the server refused to open one (a privilege, a setting): back
                      // off; the watcher tries again every kRefusedRetry (watcher.cpp)
        unsupported,  // no change streams here (or no watcher): back off, for good
    };

    explicit Waiters(mq_queue *q) : q_(q) {}

    Waiters(const Waiters &) = delete;
    Waiters &operator=(const Waiters &) = delete;

    mq_queue *queue() const { return q_; }

    uint64_t generation() {
        std::lock_guard<std::mutex> lock(mu_);
        return gen_;
    }

    Mode mode() {
        std::lock_guard<std::mutex> lock(mu_);
        return mode_;
    }

    // Sleeps until `until`, or until a hint or change of mode picks this sleeper, or
    // the generation moved past `seen` before it fell asleep, or the queue is
    // interrupted, or `cancel` (may be null) is triggered. `floor` is the claim's
    // priority floor: hints go to the lowest floors first. `only` (may be null or
    // empty: every partition) are the claim's partitions: a hint about another
    // partition does not pick it. Returns the partition of the hint that picked it; -1
    // when a hint that did not say, a change of mode or a generation already moved
    // ended it; kSleptOut when nothing did (the time is up, an interrupt, a cancel).
    int sleep(uint64_t seen, Clock::time_point until, const mq_cancel *cancel, int floor,
              const std::vector<int> *only = nullptr);

    // The watcher's calls (under its own lock, so none comes after unsubscribe): a
    // hint wakes one sleeper (one that claims from `partition`, when >= 0: the
    // partition of the lock that changed), a change of mode all of them.
    void hint(int partition = -1);
    void set_mode(Mode mode);

private:
    struct Sleeper {
        int floor = 0;
        const std::vector<int> *only = nullptr;
        bool woken = false;  // under mu_
        int hinted = -1;     // under mu_: the partition of the hint that picked it
        std::condition_variable cv;
    };

    void wake_one_locked(int partition);

    mq_queue *q_;
    std::mutex mu_;
    uint64_t gen_ = 0;                 // under mu_
    Mode mode_ = Mode::starting;       // under mu_
    std::vector<Sleeper *> sleepers_;  // under mu_: asleep and not picked yet, oldest first
};

}  // namespace mongomq
