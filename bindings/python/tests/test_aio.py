"""mongomq.aio: the async scenarios of bindings/CONTRACT.md ("Async"), under their
names, and the async surface's own edges (the race of a cancel with a claim that got
a lease, the loop kept free, the worker's stop after claim, heartbeat, abandon,
on_error, signals through the loop, closed handles). Each test runs its coroutine
with plain asyncio.run, bounded so that a hang fails instead of stalling the suite."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sys
import time
from collections import defaultdict
from typing import AsyncIterator, Awaitable, Callable

import pytest

import mongomq
from mongomq import aio
from conftest import PARTITIONS, fresh_db, nth_seq, run_python, same_partition


def run(make: Callable[[], Awaitable[None]], timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(make(), timeout)

    asyncio.run(bounded())


@contextlib.asynccontextmanager
async def aqueue(uri: str, **client_kw) -> AsyncIterator[aio.AsyncQueue]:
    async with aio.AsyncClient(uri, **client_kw) as client:
        q = await client.queue(fresh_db(), "mq", partitions=PARTITIONS)
        try:
            yield q
        finally:
            if q.closed:
                async with client.queue(q.db, "mq", partitions=PARTITIONS) as again:
                    await again.drop()
            else:
                await q.drop()
                await q.close()


async def wait_until(cond: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        await asyncio.sleep(0.02)
    return cond()


# ---- the CONTRACT scenarios ----------------------------------------------------------

def test_async_round_trip(uri, queue):
    # The same calls through the sync Queue (the fixture's) and the async one, on
    # queues of their own: the results must be the same, value for value. B and C are
    # in A's partition: A's lease comes first, and the seqs are one partition's.
    B, C = same_partition("A", "B"), same_partition("A", "C")

    def sync_side(q: mongomq.Queue) -> list:
        out = [q.publish("A", b"a1"), q.publish("A", b"a2", dedup_key="k")]
        dup = q.publish(B, b"other", dedup_key="k")
        out += [dup, dup.duplicate]
        batch = q.publish_batch([(B, b"b1"), (C, b"c1", 0, None, "k"), (C, b"c2", 0, None, "k2")])
        out += [batch, batch.added, [(o.seq, o.duplicate) for o in batch.outcomes]]
        lease = q.claim(visibility=30)
        out += [(lease.group, lease.seq, lease.event, lease.attempts)]
        before = lease.deadline
        q.extend(lease, 120)
        out += [lease.deadline - before > __import__("datetime").timedelta(seconds=60)]
        q.nack(lease)
        again = q.claim(visibility=30)
        out += [(again.group, again.seq, again.attempts)]
        q.ack(again)
        out += [q.stats().messages]
        return out

    async def async_side(q: aio.AsyncQueue) -> list:
        out = [await q.publish("A", b"a1"), await q.publish("A", b"a2", dedup_key="k")]
        dup = await q.publish(B, b"other", dedup_key="k")
        assert isinstance(dup, mongomq.Published)
        out += [dup, dup.duplicate]
        batch = await q.publish_batch([(B, b"b1"), (C, b"c1", 0, None, "k"), (C, b"c2", 0, None, "k2")])
        assert isinstance(batch, mongomq.PublishedBatch)
        out += [batch, batch.added, [(o.seq, o.duplicate) for o in batch.outcomes]]
        lease = await q.claim(visibility=30)
        assert isinstance(lease, mongomq.Lease)
        out += [(lease.group, lease.seq, lease.event, lease.attempts)]
        before = lease.deadline
        await q.extend(lease, 120)
        out += [lease.deadline - before > __import__("datetime").timedelta(seconds=60)]
        await q.nack(lease)
        again = await q.claim(visibility=30)
        out += [(again.group, again.seq, again.attempts)]
        await q.ack(again)
        stats = await q.stats()
        assert isinstance(stats, mongomq.Stats)
        out += [stats.messages]
        return out

    expected = sync_side(queue)
    got = []

    async def main() -> None:
        async with aqueue(uri) as q:
            got.extend(await async_side(q))

    run(main)
    assert got == expected
    # and what they are: the duplicate of seq 2 (a duplicate takes a seq of its own
    # that no event gets), the batch's second a duplicate of it
    def seq(n: int) -> int:
        return nth_seq("A", n)

    assert expected[2] == seq(2) and expected[3] is True
    assert expected[6] == [(seq(4), False), (seq(2), True), (seq(6), False)] and expected[5] == 2
    assert expected[7] == ("A", seq(1), b"a1", 1) and expected[9] == ("A", seq(1), 2) and expected[10] == 3


def test_async_publish_attrs(uri):
    # AsyncQueue.publish passes attrs to Queue.publish (0.7.0), copied before the await.
    async def main() -> None:
        async with aqueue(uri) as q:
            attrs = {"content-type": "text/plain", "tenant.id": "t-1"}
            await q.publish("g", b"x", attrs=attrs)
            await q.publish("g", b"y", priority=1, attrs={})
            with pytest.raises(TypeError):
                await q.publish("g", b"x", attrs=[("k", "v")])  # type: ignore[arg-type]
            with pytest.raises(mongomq.ArgumentError):
                await q.publish("g", b"x", attrs={"a key": "v"})
            lease = await q.claim(max_events=2)
            assert list(lease.attrs.items()) == list(attrs.items()) and lease.attrs_at(1) == {}
            assert [e.attrs for e in await q.peek()] == [attrs, {}]
            await q.ack(lease)

    run(main)


def test_async_claim_cancelled(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            # 1. task.cancel()
            t0 = time.monotonic()
            task = asyncio.ensure_future(q.claim(wait=30.0, visibility=30))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - t0 < 2.0, "task.cancel() took %.2f s" % (time.monotonic() - t0)
            # 2. asyncio.wait_for timing out
            t0 = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(q.claim(wait=30.0, visibility=30), 0.3)
            assert time.monotonic() - t0 < 2.0, "wait_for took %.2f s" % (time.monotonic() - t0)
            # 3. asyncio.timeout (3.11+)
            if hasattr(asyncio, "timeout"):
                t0 = time.monotonic()
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.3):
                        await q.claim(wait=30.0, visibility=30)
                assert time.monotonic() - t0 < 2.0
            # No claim is left running in C: an event published now is not taken by
            # one (no leased group for a while), and the next claim gets it first.
            seq = await q.publish("g", b"after")
            await asyncio.sleep(0.5)
            stats = await q.stats()
            assert stats.groups.leased == 0 and stats.messages == 1
            lease = await q.claim(visibility=30)
            assert lease is not None and (lease.seq, lease.attempts, lease.event) == (seq, 1, b"after")
            await q.ack(lease)

    run(main)


def test_async_worker_handles_all(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            for i in range(5):
                for g in range(8):
                    await q.publish("g%d" % g, b"%d" % i)
            seen = defaultdict(list)
            running = defaultdict(int)
            problems = []
            most = [0]

            async def handler(lease: mongomq.Lease) -> None:
                running[lease.group] += 1
                if running[lease.group] > 1:
                    problems.append("group %s in two handlers at once" % lease.group)
                most[0] = max(most[0], sum(running.values()))
                await asyncio.sleep(random.uniform(0, 0.02))
                running[lease.group] -= 1
                seen[lease.group].append(int(lease.event))

            async with q.worker(handler, concurrency=4, visibility=30) as w:
                assert await wait_until(lambda: sum(len(v) for v in seen.values()) >= 40)
                assert await wait_until(lambda: True)
            assert not w.running
            assert not problems
            assert {g: seen["g%d" % g] for g in range(8)} == {g: list(range(5)) for g in range(8)}
            assert most[0] > 1, "the handlers never ran concurrently"
            assert (await q.stats()).messages == 0

    run(main)


def test_async_worker_retries_failure(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("g", b"flaky")
            seen = []  # (attempts, monotonic)
            errors = []

            async def handler(lease: mongomq.Lease) -> None:
                seen.append((lease.attempts, time.monotonic()))
                await asyncio.sleep(0)
                if lease.attempts < 3:
                    raise RuntimeError("failure %d" % lease.attempts)

            async with q.worker(handler, backoff_base=0.01, backoff_cap=1.0,
                                on_error=lambda e, lease: errors.append((type(e), lease.attempts))):
                assert await wait_until(lambda: len(seen) >= 3)
                assert await wait_until(lambda: q.sync.stats().messages == 0)
            assert [a for a, _ in seen] == [1, 2, 3]
            assert errors == [(RuntimeError, 1), (RuntimeError, 2)]
            assert (await q.stats()).messages == 0

    run(main)


def test_async_worker_idle_stop(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            for i in range(5):
                await q.publish("g%d" % (i % 2), b"%d" % i)
            handled = []

            async def handler(lease: mongomq.Lease) -> None:
                handled.append(lease.event)

            t0 = time.monotonic()
            await asyncio.wait_for(q.work(handler, concurrency=2, idle_timeout=1.0), 20)
            took = time.monotonic() - t0
            assert sorted(handled) == [b"%d" % i for i in range(5)]
            assert 1.0 <= took < 10.0, took
            assert (await q.stats()).messages == 0

    run(main)


def test_async_worker_graceful_stop(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("a", b"first")
            started = asyncio.Event()
            finished = []
            calls = []

            async def handler(lease: mongomq.Lease) -> None:
                calls.append(lease.event)
                started.set()
                await asyncio.sleep(1.0)
                finished.append(lease.event)

            w = q.worker(handler, concurrency=1, shutdown_timeout=10)
            await asyncio.wait_for(started.wait(), 10)
            await q.publish("b", b"second")  # there to be claimed, if the stop let it
            t0 = time.monotonic()
            assert await w.stop() is True
            assert time.monotonic() - t0 < 5
            assert not w.running
            assert finished == [b"first"] and calls == [b"first"]
            stats = await q.stats()
            assert stats.messages == 1 and stats.groups.leased == 0  # first acked; second untouched
            lease = await q.claim()
            assert (lease.event, lease.attempts) == (b"second", 1)
            await q.ack(lease)

    run(main)


# ---- the async surface's own edges -----------------------------------------------------

def test_async_partitions(uri):
    """Partitions (0.8.0) through mongomq.aio: the queue option, partitions, a claim's
    and a waiting claim's partitions, the async worker's, the same errors."""
    async def main() -> None:
        async with aio.AsyncClient(uri) as client, client.queue(fresh_db(), "mq", partitions=4) as q:
            try:
                assert q.partitions == 4
                for group in ("b", "customer-17", "a"):  # partitions 0, 1 and 3
                    await q.publish(group, group.encode())
                lease = await q.claim(partitions=[1])
                assert (lease.group, lease.partition) == ("customer-17", 1)
                await q.ack(lease)
                assert await q.claim(partitions=[1]) is None
                assert await q.claim(partitions=[1], wait=0.2) is None
                lease = await q.claim(partitions=(3,), wait=5.0)
                assert (lease.group, lease.partition) == ("a", 3)
                await q.ack(lease)
                handled = []

                async def handler(lease: mongomq.Lease) -> None:
                    handled.append((lease.group, lease.partition))

                with pytest.raises(mongomq.ArgumentError, match=r"partitions\[1\] is 0, given twice"):
                    q.worker(handler, partitions=[0, 0])
                with pytest.raises(mongomq.ArgumentError, match=r"partitions\[0\] is 4") as info:
                    await q.claim(partitions=[4], wait=1.0)
                assert info.value.argument == "partitions"
                with pytest.raises(TypeError, match="partitions"):
                    await q.claim(partitions=3)  # type: ignore[arg-type]
                await q.work(handler, partitions=[0], idle_timeout=1.0)
                assert handled == [("b", 0)]
                assert (await q.stats()).messages == 0
            finally:
                await q.drop()
        with pytest.raises(mongomq.ArgumentError, match="partitions") as info:
            async with aio.AsyncClient(uri) as client:
                await client.queue(fresh_db(), "mq", partitions=0)
        assert info.value.argument == "partitions"

    run(main)


def test_async_claim_cancel_race_gives_back(uri):
    # A cancel that comes as the claim takes a lease: the lease goes back with unclaim
    # (attempts stay 1), and no group is left leased.
    async def main() -> None:
        async with aqueue(uri) as q:
            seq = await q.publish("g", b"x")
            got = cancelled = 0
            for i in range(40):
                task = asyncio.ensure_future(q.claim(wait=5.0, visibility=60))
                await asyncio.sleep(random.uniform(0, 0.004))
                task.cancel()
                try:
                    lease = await task
                except asyncio.CancelledError:
                    cancelled += 1
                    stats = await q.stats()
                    assert stats.groups.leased == 0, "a cancelled claim left its lease held (round %d)" % i
                    continue
                got += 1
                assert lease.attempts == 1
                await q.unclaim(lease)
            lease = await q.claim()
            assert (lease.seq, lease.attempts) == (seq, 1)
            assert cancelled > 0
            await q.ack(lease)

    run(main)


def test_async_waiting_claim_leaves_the_loop_free(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            t = asyncio.ensure_future(ticker())
            t0 = time.monotonic()
            assert await q.claim(wait=1.0) is None
            assert time.monotonic() - t0 >= 0.9
            t.cancel()
            assert ticks >= 40, "the loop ran %d ticks of 10 ms during a 1 s claim" % ticks
            # many waiting claims at once, and a publish is not held up by them
            waiters = [asyncio.ensure_future(q.claim(wait=10.0)) for _ in range(8)]
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            await q.publish("g", b"x")
            assert time.monotonic() - t0 < 1.0
            done, pending = await asyncio.wait(waiters, timeout=5, return_when=asyncio.FIRST_COMPLETED)
            assert len(done) == 1 and done.pop().result().event == b"x"
            for p in pending:
                p.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    run(main)


def test_async_worker_stop_after_claim(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("g", b"x")
            calls = 0

            async def handler(lease: mongomq.Lease) -> None:
                nonlocal calls
                calls += 1
                raise RuntimeError("always")

            for _ in range(30):
                w = q.worker(handler, concurrency=2, backoff_base=0.001, backoff_cap=0.001,
                             on_error=lambda e, lease: None)
                await asyncio.sleep(random.uniform(0, 0.01))
                assert await w.stop() is True
            await asyncio.sleep(0.05)  # the last nack's delay (1 ms)
            lease = await q.claim()
            assert lease is not None
            assert lease.attempts == calls + 1, (lease.attempts, calls)
            await q.ack(lease)

    run(main)


def test_async_worker_extends_lease(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("g", b"long")
            others = []
            errors = []

            async def handler(lease: mongomq.Lease) -> None:
                for _ in range(6):
                    await asyncio.sleep(0.5)
                    other = await q.claim(visibility=1)
                    others.append(other)

            await asyncio.wait_for(q.work(handler, visibility=1.0, idle_timeout=1.0,
                                          on_error=lambda e, lease: errors.append(e)), 30)
            assert others == [None] * 6
            assert errors == []
            assert (await q.stats()).messages == 0

    run(main)


def test_async_worker_abandons_after_shutdown_timeout(uri):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("g", b"slow")
            started = asyncio.Event()
            cancelled = []

            async def handler(lease: mongomq.Lease) -> None:
                started.set()
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    cancelled.append(lease.seq)
                    raise

            w = q.worker(handler, visibility=2.0)
            await asyncio.wait_for(started.wait(), 10)
            t0 = time.monotonic()
            assert await w.stop(timeout=0.3) is False
            assert time.monotonic() - t0 < 3
            assert cancelled == [1]
            stats = await q.stats()
            assert stats.messages == 1 and stats.groups.leased == 1  # neither acked nor nacked
            await asyncio.sleep(2.5)  # the lease expires: redelivered, attempts 2
            lease = await q.claim()
            assert (lease.seq, lease.attempts) == (1, 2)
            await q.ack(lease)

    run(main)


def test_async_worker_on_error_and_default_log(uri, caplog):
    async def main() -> None:
        async with aqueue(uri) as q:
            await q.publish("g", b"a")
            await q.publish("h", b"b")
            reported = []

            async def on_error(exc: BaseException, lease) -> None:
                await asyncio.sleep(0)
                reported.append((type(exc).__name__, lease.event))

            async def failing(lease: mongomq.Lease) -> None:
                raise KeyError("boom")

            w = q.worker(failing, backoff_base=30, on_error=on_error, concurrency=2)
            assert await wait_until(lambda: len(reported) >= 2)
            await w.stop()
            assert sorted(reported) == [("KeyError", b"a"), ("KeyError", b"b")]

            # a handler that returns no awaitable (a plain function): each lease fails
            # with a TypeError, reported (here: to the log) and nacked
            class Handler:
                def __call__(self, lease):
                    return 42

            stats = await q.stats()
            assert stats.messages == 2
            await q.drop()
            await q.publish("g", b"c")
            with caplog.at_level("ERROR", logger="mongomq"):
                w = q.worker(Handler(), backoff_base=30)
                assert await wait_until(lambda: any("not an awaitable" in r.getMessage() or
                                                    (r.exc_info and "not an awaitable" in str(r.exc_info[1]))
                                                    for r in caplog.records))
                await w.stop()

    run(main)


def test_async_worker_options_checked(uri):
    async def main() -> None:
        async with aqueue(uri, wait_threads=4) as q:
            async def h(lease):
                pass

            for bad, exc in [(dict(concurrency=0), ValueError), (dict(visibility=-1), ValueError),
                             (dict(max_events=0), ValueError), (dict(handle_signals=1), TypeError),
                             (dict(idle_timeout=0), ValueError), (dict(concurrency=5), ValueError)]:
                with pytest.raises(exc):
                    q.worker(h, **bad)
            with pytest.raises(ValueError):
                mongomq.Worker(q.sync, lambda lease: None, concurrency=0)  # the same check, sync

    run(main)
    with pytest.raises(ValueError, match="threads"):
        aio.AsyncClient(uri, threads=0)


def test_async_use_after_close(uri):
    async def main() -> None:
        client = aio.AsyncClient(uri)
        q = await client.queue(fresh_db(), "mq")
        seq = await q.publish("g", b"x")
        lease = await q.claim()
        await q.drop()
        await q.close()
        await q.close()  # twice: nothing
        for call in (lambda: q.publish("g", b"x"), lambda: q.claim(), lambda: q.claim(wait=1),
                     lambda: q.ack(lease), lambda: q.stats(), lambda: q.peek(), lambda: q.groups()):
            with pytest.raises(mongomq.ClosedError, match="queue is closed"):
                await call()
        with pytest.raises(mongomq.ClosedError):
            q.worker(lambda lease: asyncio.sleep(0))
        await client.close()
        await client.close()
        with pytest.raises(mongomq.ClosedError, match="client is closed"):
            await client.queue(fresh_db(), "mq")
        assert seq == 1 and lease.seq == 1
        lease.close()

    run(main)


def test_async_close_ends_waiting_claims(uri):
    async def main() -> None:
        async with aio.AsyncClient(uri) as client:
            q = await client.queue(fresh_db(), "mq")
            waiter = asyncio.ensure_future(q.claim(wait=30))
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            await q.drop()
            await q.close()
            with pytest.raises(mongomq.ClosedError):
                await waiter
            assert time.monotonic() - t0 < 2

    run(main)


@pytest.mark.skipif(sys.platform == "win32", reason="signals")
def test_async_worker_signals():
    # SIGTERM during a handler: a graceful stop (the handler finishes, its event is
    # acked), work() returns, and the loop's earlier SIGTERM callback is back.
    proc = run_python(r"""
        import asyncio, os, signal, sys, mongomq
        from mongomq import aio
        from conftest import fresh_db

        async def main():
            loop = asyncio.get_running_loop()
            earlier = []
            loop.add_signal_handler(signal.SIGTERM, earlier.append, "earlier")
            async with aio.AsyncClient(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(fresh_db()) as q:
                await q.publish("g", b"x")
                await q.publish("h", b"y")
                done = []
                async def handler(lease):
                    loop.call_later(0.2, os.kill, os.getpid(), signal.SIGTERM)
                    await asyncio.sleep(1.0)
                    done.append(lease.event)
                await asyncio.wait_for(q.work(handler, handle_signals=True, shutdown_timeout=10), 20)
                left = (await q.stats()).messages
                print("done", len(done), "left", left, flush=True)
                os.kill(os.getpid(), signal.SIGTERM)  # the earlier callback again
                await asyncio.sleep(0.2)
                print("earlier", earlier, flush=True)
                await q.drop()

        asyncio.run(main())
    """, env_extra={"PYTHONPATH": __import__("os").path.dirname(__file__) + ":" +
                    __import__("os").environ.get("PYTHONPATH", "")})
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "done 1 left 1" in out, out + err
    assert "earlier ['earlier']" in out, out + err
