"""How mongomq.aio keeps the blocking C calls off the event loop: an AsyncClient's two
bounded thread pools (short calls; waiting claims), the awaitable call on them, and
the claim whose awaiting task can be cancelled (through the call's own CancelToken,
that is its mq_cancel) without leaving a claim running in C or a lease held.

Every C call that touches the server releases the GIL (bindings/swig/lang/python.i),
so a pool thread blocked in one costs the loop nothing but the hand-off: a submit,
and a call_soon_threadsafe back (the bench measures it)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import time
from typing import Any, Callable, Optional, TypeVar

from ._cancel import CancelToken
from ._errors import ClosedError, Error
from ._lease import Lease
from ._queue import Queue

log = logging.getLogger("mongomq")

_T = TypeVar("_T")


class Pools:
    """An AsyncClient's threads: ``calls`` for everything that returns after one
    round trip or a few (publish, ack, stats, ...), ``waits`` for claims that wait.
    Two pools, so that a short call never queues behind waiting claims (each holds
    its thread for its whole wait)."""

    __slots__ = ("calls", "waits", "threads", "wait_threads", "_down")

    def __init__(self, threads: int, wait_threads: int) -> None:
        self.threads = threads
        self.wait_threads = wait_threads
        self.calls = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="mongomq-aio")
        self.waits = concurrent.futures.ThreadPoolExecutor(wait_threads, thread_name_prefix="mongomq-aio-wait")
        self._down = False

    def submit(self, pool: concurrent.futures.ThreadPoolExecutor, fn: Callable[..., _T],
               *args: Any) -> "concurrent.futures.Future[_T]":
        if self._down:
            raise ClosedError("mongomq: the client is closed")
        return pool.submit(fn, *args)

    def shutdown(self) -> None:
        # Not waiting: calls still running end on their own (a closed queue has
        # interrupted its waiting claims), and the threads with them.
        self._down = True
        self.calls.shutdown(wait=False)
        self.waits.shutdown(wait=False)


async def call(pools: Pools, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """fn(*args, **kwargs) on a thread of the calls pool, awaited. A cancelled await
    does not stop the C call (it cannot be stopped; it ends after its round trips):
    its outcome is then unknown to the caller, as after a lost reply."""
    if kwargs:
        fn = functools.partial(fn, *args, **kwargs)
        args = ()
    return await asyncio.wrap_future(pools.submit(pools.calls, fn, *args))


async def outlast(fut: "asyncio.Future[_T]") -> Optional[_T]:
    """Waits for fut to end, whatever cancellations of the awaiting task come in the
    meantime (they are the caller's to re-raise); its result, or None if it failed."""
    while not fut.done():
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            continue  # a second cancel while we clean up after the first
        except BaseException:
            break
    if fut.cancelled() or fut.exception() is not None:
        return None
    return fut.result()


def give_back(queue: Queue, lease: Lease) -> None:
    """A lease no one will handle goes back with unclaim: no delivery is counted."""
    try:
        queue.unclaim(lease)
    except Error as e:
        log.warning("mongomq.aio: giving back the lease of group %r seq %d after a cancel: %r",
                    lease._group, lease._seq, e, exc_info=e)
    finally:
        lease.close()


async def claim(pools: Pools, queue: Queue, *, visibility: float, min_priority: int, max_events: int,
                wait: float, worker_id: Optional[str], token: Optional[CancelToken] = None,
                partitions: Any = None) -> Optional[Lease]:
    """The claim of AsyncQueue.claim and the async worker. wait 0 with no token is a
    plain claim (one round trip, on the calls pool; it keeps working after
    interrupt(), as the sync one does); else it waits on a thread of the waits pool
    with a CancelToken (``token``, or one of its own) that a cancel of the awaiting
    task triggers, so that the C claim returns within milliseconds.

    A cancel of the awaiting task raises CancelledError only after the C call has
    ended: no claim is left running. A lease that the C claim took as the cancel
    came is given back with unclaim before that (not a delivery: attempts stay)."""
    if wait == 0.0 and token is None:
        fn: Callable[[], Optional[Lease]] = functools.partial(
            queue.claim, visibility=visibility, min_priority=min_priority, max_events=max_events,
            worker_id=worker_id, partitions=partitions)
        cfut = pools.submit(pools.calls, fn)
    else:
        if token is None:
            token = CancelToken()
        deadline = time.monotonic() + wait
        own = token

        def fn() -> Optional[Lease]:
            # A claim that queued for a free thread waits only for the rest of its time.
            left = max(0.0, deadline - time.monotonic())
            return queue.claim(visibility=visibility, min_priority=min_priority, max_events=max_events,
                               wait=left, worker_id=worker_id, cancel=own, partitions=partitions)

        cfut = pools.submit(pools.waits, fn)
    fut = asyncio.wrap_future(cfut)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if token is not None:
            token.cancel()
        if not cfut.cancel():  # False: it runs (or ran) in C; True: it never started
            lease = await outlast(fut)
            if lease is not None:
                try:
                    back = pools.calls.submit(give_back, queue, lease)
                except RuntimeError:  # the pools are shut down (the interpreter exits)
                    give_back(queue, lease)
                else:
                    await outlast(asyncio.wrap_future(back))
        raise
