"""The worker scenarios of bindings/CONTRACT.md ("The worker"), and the worker's own
edges."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import pytest

import mongomq


def wait_for(cond, timeout: float = 20.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every)
    return cond()


def test_worker_acks_success(queue):
    for i in range(10):
        for g in range(5):
            queue.publish("g%d" % g, b"%d" % i)
    lock = threading.Lock()
    seen = defaultdict(list)
    running = defaultdict(int)
    problems = []

    def handler(lease):
        with lock:
            running[lease.group] += 1
            if running[lease.group] > 1:
                problems.append("group %s handled twice at once" % lease.group)
        time.sleep(random.uniform(0, 0.01))
        with lock:
            running[lease.group] -= 1
            seen[lease.group].append(int(lease.event))

    with queue.worker(handler, concurrency=4, visibility=30) as w:
        assert wait_for(lambda: sum(len(v) for v in seen.values()) >= 50)
        assert wait_for(lambda: queue.stats().messages == 0)
    assert not w.running
    assert not problems
    assert {g: seen["g%d" % g] for g in range(5)} == {g: list(range(10)) for g in range(5)}


def test_worker_nacks_failure_backoff(queue, monkeypatch):
    queue.publish("g", b"flaky")
    seen = []  # (attempts, monotonic)
    delays = []
    real_nack = mongomq.Queue.nack

    def recording_nack(self, lease, delay=0.0):
        delays.append(delay)
        return real_nack(self, lease, delay)

    monkeypatch.setattr(mongomq.Queue, "nack", recording_nack)

    def handler(lease):
        seen.append((lease.attempts, time.monotonic()))
        if len(seen) < 3:
            raise RuntimeError("fails twice")

    errors = []
    with queue.worker(handler, backoff_base=0.3, backoff_cap=10.0, on_error=lambda e, l: errors.append(e)):
        assert wait_for(lambda: len(seen) >= 3 and queue.stats().messages == 0)
    assert [a for a, _ in seen] == [1, 2, 3]
    # delays min(cap, base * 2^(attempts-1)) * U[0.5, 1]: growing
    assert len(delays) == 2
    assert 0.15 <= delays[0] <= 0.3
    assert 0.3 <= delays[1] <= 0.6
    assert delays[1] >= delays[0]
    # and the group was parked for them (the server's clock: a little slack)
    assert seen[1][1] - seen[0][1] >= delays[0] - 0.05
    assert seen[2][1] - seen[1][1] >= delays[1] - 0.05
    assert [type(e) for e in errors] == [RuntimeError, RuntimeError]


def test_backoff_delay_formula():
    assert mongomq.backoff_delay(1, 1.0, 60.0, rng=lambda a, b: 1.0) == 1.0
    assert mongomq.backoff_delay(4, 1.0, 60.0, rng=lambda a, b: 1.0) == 8.0
    assert mongomq.backoff_delay(10, 1.0, 60.0, rng=lambda a, b: 1.0) == 60.0
    assert mongomq.backoff_delay(10, 1.0, 60.0, rng=lambda a, b: a) == 30.0
    assert mongomq.backoff_delay(1000, 1.0, 60.0, rng=lambda a, b: 1.0) == 60.0
    for _ in range(100):
        assert 1.0 <= mongomq.backoff_delay(2, 1.0, 60.0) <= 2.0


def test_worker_extends_lease(queue):
    queue.publish("g", b"slow")
    queue.publish("g", b"next")
    started = threading.Event()
    finished = threading.Event()
    errors = []

    def handler(lease):
        if lease.event == b"slow":
            started.set()
            time.sleep(3.0)  # 3x the visibility
            finished.set()

    with queue.worker(handler, visibility=1.0, on_error=lambda e, l: errors.append(e)):
        assert started.wait(10)
        # nobody else gets the group while the handler runs
        while not finished.is_set():
            stolen = queue.claim(visibility=30)
            assert stolen is None, "the group was claimable during the handler"
            time.sleep(0.1)
        assert wait_for(lambda: queue.stats().messages == 0)
    assert errors == []  # the ack was OK (no lease lost)


def test_worker_dead_letters(queue):
    queue.publish("g", b"poison")
    calls = []

    def handler(lease):
        calls.append(lease.attempts)
        raise ValueError("always fails")

    with queue.worker(handler, max_attempts=2, backoff_base=0.0, on_error=lambda e, l: None):
        assert wait_for(lambda: queue.dead_count() == 1)
    assert calls == [1, 2]
    assert queue.stats().messages == 0


def test_worker_graceful_shutdown(queue):
    queue.publish("g", b"first")
    queue.publish("g", b"second")
    started = threading.Event()
    handled = []

    def handler(lease):
        started.set()
        time.sleep(1.0)
        handled.append(lease.event)

    w = queue.worker(handler, shutdown_timeout=10)
    assert started.wait(10)
    t0 = time.monotonic()
    assert w.stop() is True  # the running handler finished within the timeout
    assert time.monotonic() - t0 < 8
    assert not w.running
    assert handled == [b"first"]  # it finished; nothing new was claimed
    stats = queue.stats()
    assert stats.messages == 1  # "first" was acked
    claim = queue.claim()
    assert claim is not None and claim.event == b"second"


def test_worker_stop_after_claim(queue):
    for cycle in range(30):
        seq = queue.publish("g", b"cycle %d" % cycle)
        calls = []

        def handler(lease):
            calls.append(lease.attempts)
            raise RuntimeError("always fails")

        w = queue.worker(handler, concurrency=2, backoff_base=0.001, on_error=lambda e, l: None)
        # The stop lands anywhere from before the first claim to after a few handler
        # calls: the claims and the handler take about a millisecond each here.
        time.sleep((cycle % 10) * 0.0003)
        assert w.stop() is True
        lease = queue.claim(wait=30.0)
        assert lease is not None and lease.seq == seq
        assert lease.attempts == len(calls) + 1, (
            "cycle %d: %d handler calls; a lease no handler ran was counted as a delivery" % (cycle, len(calls)))
        queue.ack(lease)


def test_worker_shutdown_timeout_abandons(queue):
    queue.publish("g", b"stuck")
    started = threading.Event()
    release = threading.Event()

    def handler(lease):
        started.set()
        release.wait(20)

    w = queue.worker(handler, visibility=0.6, shutdown_timeout=0.3)
    assert started.wait(10)
    assert w.stop() is False  # the handler is still running: abandoned
    release.set()
    # its lease is extended no more; the event is not lost: redelivered after expiry
    # (or acked by the abandoned handler, if it got there first)
    assert wait_for(lambda: queue.stats().messages == 0 or queue.claim(visibility=30) is not None, 10)


def test_work_blocks_until_stop(queue):
    for i in range(5):
        queue.publish("g", b"%d" % i)
    got = []
    stop = threading.Event()

    def handler(lease):
        got.append(int(lease.event))
        if len(got) == 5:
            stop.set()

    t0 = time.monotonic()
    queue.work(handler, stop=stop, concurrency=2)
    assert time.monotonic() - t0 < 20
    assert got == [0, 1, 2, 3, 4]


def test_worker_ends_when_queue_interrupted(queue):
    w = queue.worker(lambda lease: None, concurrency=3)
    time.sleep(0.2)
    queue.interrupt()
    assert w.wait(5)
    assert not w.running
    w.stop()


def test_worker_bad_options(queue):
    with pytest.raises(TypeError):
        queue.worker(None)
    with pytest.raises(ValueError, match="concurrency"):
        queue.worker(lambda l: None, concurrency=0)
    with pytest.raises(ValueError, match="visibility"):
        queue.worker(lambda l: None, visibility=0)
    with pytest.raises(ValueError, match="max_attempts"):
        queue.worker(lambda l: None, max_attempts=-1)
    with pytest.raises(TypeError, match="batch"):
        queue.worker(lambda l: None, batch="3")
