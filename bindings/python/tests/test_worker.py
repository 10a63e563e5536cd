"""The worker scenarios of bindings/CONTRACT.md ("The worker"), and the worker's own
options and edges: work() blocks until idle_timeout, a CancelToken or the queue ends
it; worker() returns a handle (stop, wait); on_error and its default, the logger.
(handle_signals and Ctrl-C are in test_signals.py: they need a child process.)"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import defaultdict
from datetime import timedelta

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
    stop = mongomq.CancelToken()

    def handler(lease):
        got.append(int(lease.event))
        if len(got) == 5:
            stop.cancel()

    t0 = time.monotonic()
    queue.work(handler, cancel=stop, concurrency=2)
    assert time.monotonic() - t0 < 20
    assert got == [0, 1, 2, 3, 4]
    assert queue.stats().messages == 0  # the last one was acked before work returned


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
    with pytest.raises(TypeError, match="max_events"):
        queue.worker(lambda l: None, max_events="3")
    with pytest.raises(ValueError, match="max_events"):
        queue.worker(lambda l: None, max_events=0)
    with pytest.raises(ValueError, match="idle_timeout"):
        queue.worker(lambda l: None, idle_timeout=0)
    with pytest.raises(TypeError, match="handle_signals"):
        queue.worker(lambda l: None, handle_signals="yes")
    with pytest.raises(TypeError, match="batch"):  # the 0.3 name is gone
        queue.worker(lambda l: None, batch=3)
    with pytest.raises(TypeError, match="cancel"):
        queue.work(lambda l: None, cancel=threading.Event())


def test_worker_max_events(queue):
    for i in range(6):
        queue.publish("g", b"%d" % i)
    counts = []
    with queue.worker(lambda lease: counts.append(lease.count), max_events=3):
        assert wait_for(lambda: queue.stats().messages == 0)
    assert counts == [3, 3]


def test_work_idle_timeout_returns(queue):
    """work() ends by itself once no lease came for idle_timeout, even when a handler
    ran for longer than that (the clock starts when the last handler ends)."""
    queue.publish("g", b"slow")
    queue.publish("g", b"fast")
    got = []

    def handler(lease):
        if lease.event == b"slow":
            time.sleep(1.0)  # longer than idle_timeout
        got.append(lease.event)

    t0 = time.monotonic()
    queue.work(handler, idle_timeout=0.4, visibility=timedelta(seconds=30))
    elapsed = time.monotonic() - t0
    assert got == [b"slow", b"fast"]
    assert queue.stats().messages == 0
    assert 1.4 <= elapsed < 10, elapsed


def test_work_idle_timeout_on_empty_queue(queue):
    t0 = time.monotonic()
    queue.work(lambda lease: None, idle_timeout=timedelta(milliseconds=300), concurrency=3)
    assert 0.3 <= time.monotonic() - t0 < 5


def test_worker_stop_and_wait(queue):
    queue.publish("g", b"x")
    handled = threading.Event()
    t0 = time.monotonic()
    w = queue.worker(lambda lease: handled.set(), concurrency=2)
    assert time.monotonic() - t0 < 1  # worker() returns at once; the threads run
    assert handled.wait(10)
    assert w.running
    assert w.wait(0.3) is False  # nothing stops it by itself
    assert w.stop() is True
    assert w.wait() is True and w.wait(0) is True
    assert not w.running
    assert w.stop() is True  # again: nothing to do
    assert "stopped" in repr(w)


def test_worker_ends_with_idle_timeout_and_wait(queue):
    w = queue.worker(lambda lease: None, idle_timeout=0.3)
    assert w.wait(10) is True
    assert not w.running
    w.stop()


def test_worker_on_error_default_logs(queue, caplog):
    """With no on_error, a handler failure goes to the "mongomq" logger at ERROR with
    its traceback: never swallowed."""
    queue.publish("g", b"bad")
    calls = []

    def failing_handler(lease):
        calls.append(lease.attempts)
        raise ValueError("the handler failed on purpose")

    with caplog.at_level(logging.WARNING, logger="mongomq"):
        with queue.worker(failing_handler, backoff_base=0.01, backoff_cap=0.01):
            assert wait_for(lambda: len(calls) >= 2)
    failures = [r for r in caplog.records if r.name == "mongomq" and r.levelno == logging.ERROR
                and "handler failed" in r.getMessage()]
    assert failures, [r.getMessage() for r in caplog.records]
    record = failures[0]
    assert "'g'" in record.getMessage() and "the handler failed on purpose" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ValueError
    assert "failing_handler" in caplog.text  # the traceback names the handler's frame


def test_worker_on_error_gets_queue_errors(queue, monkeypatch):
    """A queue error (a claim's ConnectError) goes to on_error with no lease, and the
    worker goes on (backing off) until stopped."""
    with pytest.raises(TypeError, match="on_error"):
        queue.worker(lambda l: None, on_error="log")
    boom = mongomq.ConnectError("mongomq: injected", mongomq._raw.MQ_ERR_CONNECT)
    real_claim = mongomq.Queue.claim
    calls = {"n": 0}

    def flaky_claim(self, **kw):
        calls["n"] += 1
        if calls["n"] <= 2:
            raise boom
        return real_claim(self, **kw)

    monkeypatch.setattr(mongomq.Queue, "claim", flaky_claim)
    errors = []
    w = queue.worker(lambda l: None, on_error=lambda e, lease: errors.append((e, lease)))
    assert wait_for(lambda: calls["n"] >= 3)
    assert w.running
    assert w.stop()
    assert errors == [(boom, None), (boom, None)]


def test_worker_on_error_that_raises_is_logged(queue, caplog):
    queue.publish("g", b"x")
    seen = []

    def on_error(exc, lease):
        seen.append(exc)
        raise RuntimeError("on_error failed on purpose")

    def handler(lease):
        raise KeyError("handler")

    with caplog.at_level(logging.WARNING, logger="mongomq"):
        with queue.worker(handler, on_error=on_error, backoff_base=0.01):
            assert wait_for(lambda: seen)
    text = caplog.text
    assert "on_error raised" in text and "on_error failed on purpose" in text
    assert "handler failed" in text  # and the error it was given is logged too
