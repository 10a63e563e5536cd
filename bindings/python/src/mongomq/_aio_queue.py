"""AsyncClient and AsyncQueue (mongomq.aio): the sync Client and Queue with every call
that touches the server awaitable, run on the client's bounded thread pools
(_aio_calls), and async context managers. Results and errors are the sync calls'.
With telemetry, a publish runs in a copy of the awaiting task's context (contextvars:
OpenTelemetry's current span), so that its send span is the caller's child."""

from __future__ import annotations

import asyncio
import contextvars
import datetime as _dt
import os
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generator, Iterable, List, Mapping, Optional, Tuple, Union

from . import _aio_calls, _args
from ._batch import Batch
from ._client import Client
from ._clock import ManualClock
from ._errors import ClosedError
from ._groups import GroupsPage, GroupsSort, GroupState
from ._lease import Lease
from ._published import Published, PublishedBatch
from ._queue import DedupScope, Queue
from ._stats import RepairCounts, Stats
from ._stored import DeadPage, StoredEvent

if TYPE_CHECKING:
    from ._aio_worker import AsyncWorker, AsyncHandler
    from .otel import Telemetry

_seconds = _args.seconds


def _default_threads() -> int:
    # CPython's own default for I/O-bound pools (ThreadPoolExecutor, the loop's executor).
    return min(32, (os.cpu_count() or 1) + 4)


class AsyncClient:
    """A connection pool for one MongoDB URI (a mongomq.Client, ``sync``), for asyncio.
    An async context manager; ``await client.close()``.

    Its calls run on two thread pools of its own, shared by its queues: ``threads``
    (default min(32, CPUs + 4)) for the calls that return after their round trips,
    ``wait_threads`` (default 64) for claims that wait, each of which holds a thread
    for its wait. Neither is the loop's default executor: waiting claims there would
    starve everything else that uses it (loop.getaddrinfo, asyncio.to_thread).
    Constructing one contacts no server (as Client)."""

    __slots__ = ("sync", "_pools", "_queues", "_closed")

    def __init__(self, uri: str, *, threads: Optional[int] = None, wait_threads: int = 64) -> None:
        if threads is None:
            threads = _default_threads()
        for name, n in (("threads", threads), ("wait_threads", wait_threads)):
            _args.integer(name, n)
            if n < 1:
                raise ValueError("%s is %d; it must be at least 1" % (name, n))
        self.sync = Client(uri)
        self._pools = _aio_calls.Pools(threads, wait_threads)
        self._queues = 0  # AsyncQueues open on the pools (the loop's thread counts them)
        self._closed = False

    @property
    def threads(self) -> int:
        return self._pools.threads

    @property
    def wait_threads(self) -> int:
        return self._pools.wait_threads

    def queue(self, db: str = "mongomq", prefix: str = "mq", *, partitions: int = 1) -> "_Opening":
        """Opens the queue {db}.{prefix}_* (indexes, the server clock: round trips):
        ``q = await client.queue(db, prefix)``, or ``async with client.queue(db,
        prefix) as q:`` (closed at the block's end). partitions: as Client.queue's
        (0.8.0; default 1)."""
        return _Opening(self, db, prefix, partitions)

    async def _open(self, db: str, prefix: str, partitions: int) -> "AsyncQueue":
        if self._closed:
            raise ClosedError("mongomq: the client is closed")
        self._queues += 1
        try:
            q = await _aio_calls.call(self._pools, self.sync.queue, db, prefix, partitions=partitions)
        except BaseException:
            self._queue_closed()
            raise
        return AsyncQueue(q, self)

    def _queue_closed(self) -> None:
        self._queues -= 1
        if self._closed and self._queues == 0:
            self._pools.shutdown()

    @property
    def command_count(self) -> int:
        return self.sync.command_count

    @property
    def write_concern_errors(self) -> int:
        return self.sync.write_concern_errors

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        """Closes the client (its C pool is freed once its last queue closes) and,
        once no queue of it is open, its threads. Closing again does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            await _aio_calls.call(self._pools, self.sync.close)
        finally:
            if self._queues == 0:
                self._pools.shutdown()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return "<mongomq.aio.AsyncClient%s>" % (" closed" if self._closed else "")


class _Opening:
    """What AsyncClient.queue returns: awaitable (the AsyncQueue) and an async context
    manager (the AsyncQueue, closed at the block's end), as aiohttp's requests are."""

    __slots__ = ("_client", "_db", "_prefix", "_partitions", "_queue")

    def __init__(self, client: AsyncClient, db: str, prefix: str, partitions: int) -> None:
        self._client, self._db, self._prefix, self._partitions = client, db, prefix, partitions
        self._queue: Optional[AsyncQueue] = None

    def __await__(self) -> Generator[Any, None, "AsyncQueue"]:
        return self._client._open(self._db, self._prefix, self._partitions).__await__()

    async def __aenter__(self) -> "AsyncQueue":
        self._queue = await self._client._open(self._db, self._prefix, self._partitions)
        return self._queue

    async def __aexit__(self, *exc: Any) -> None:
        if self._queue is not None:
            await self._queue.close()


class AsyncQueue:
    """One queue (a mongomq.Queue, ``sync``) for asyncio: every call that touches the
    server is a coroutine with the sync call's arguments, result and errors; the
    setters, which touch no server (set_max_attempts, set_dedup_window,
    set_dedup_scope, set_repair_interval, set_clock), interrupt(), now() and the
    counters stay plain calls. Any number of tasks may use it at once. An async
    context manager; ``await queue.close()``.

    A cancelled await of a claim ends the C claim through its mq_cancel and gives
    back a lease it took meanwhile (see claim). A cancelled await of any other call
    cannot stop it: the call completes in its thread, and its outcome is unknown to
    the caller, as after a lost reply (publish with a dedup_key to retry safely)."""

    __slots__ = ("sync", "client", "_pools", "_closed")

    def __init__(self, queue: Queue, client: AsyncClient) -> None:
        self.sync = queue
        self.client = client
        self._pools = client._pools
        self._closed = False

    @property
    def db(self) -> str:
        return self.sync.db

    @property
    def prefix(self) -> str:
        return self.sync.prefix

    @property
    def partitions(self) -> int:
        """Queue.partitions (0.8.0; no server: not awaited)."""
        return self.sync.partitions

    @property
    def closed(self) -> bool:
        return self._closed

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]:
        if self._closed:
            raise ClosedError("mongomq: the queue is closed")
        return _aio_calls.call(self._pools, fn, *args, **kwargs)

    def _call_traced(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]:
        # A pool thread has a context of its own: a traced publish gets the caller's.
        if self.sync._telemetry is None:
            return self._call(fn, *args, **kwargs)
        return self._call(contextvars.copy_context().run, fn, *args, **kwargs)

    # -- publish --

    async def publish(self, group: str, event: _args.Event, *, priority: int = 0,
                      not_before: Optional[_dt.datetime] = None, dedup_key: Optional[str] = None,
                      attrs: Optional[_args.Attrs] = None) -> Published:
        """Queue.publish, awaited (attrs are copied before the await starts)."""
        if not_before is None and dedup_key is None and attrs is None:
            return await self._call_traced(self.sync.publish, group, event, priority=priority)
        if isinstance(attrs, Mapping):
            attrs = dict(attrs)  # the caller's: not read on another thread (publish checks the copy)
        return await self._call_traced(self.sync.publish, group, event, priority=priority, not_before=not_before,
                                       dedup_key=dedup_key, attrs=attrs)

    async def publish_batch(self, events: Union[Batch, Iterable[Tuple[Any, ...]]]) -> PublishedBatch:
        """Queue.publish_batch, awaited (an iterable is read before the await starts)."""
        if not isinstance(events, Batch):
            events = list(events)  # a generator is the caller's: not read on another thread
        return await self._call_traced(self.sync.publish_batch, events)

    # -- claim --

    async def claim(self, *, visibility: _args.Duration = 30.0, min_priority: int = 0, max_events: int = 1,
                    wait: _args.Duration = 0.0, worker_id: Optional[str] = None,
                    partitions: Optional[_args.Partitions] = None) -> Optional[Lease]:
        """Queue.claim, awaited: a Lease, or None when nothing came due within wait
        seconds. Cancellation is asyncio's: task.cancel(), asyncio.wait_for or
        asyncio.timeout end a waiting claim within milliseconds (through the claim's
        own mq_cancel; nothing else on the queue is touched), and the CancelledError
        comes once the C claim has returned. A lease it took just as the cancel came
        is given back with unclaim first (no delivery: its attempts stay). partitions:
        as Queue.claim's (0.8.0; read before the await starts)."""
        if self._closed:
            raise ClosedError("mongomq: the queue is closed")
        v = _seconds("visibility", visibility)
        w = _seconds("wait", wait)
        parts = None if partitions is None else _args.claim_partitions(partitions)[0]
        return await _aio_calls.claim(self._pools, self.sync, visibility=v, min_priority=min_priority,
                                      max_events=max_events, wait=w, worker_id=worker_id, partitions=parts)

    # -- ack, nack, unclaim, extend --

    async def ack(self, lease: Lease) -> None:
        """Queue.ack, awaited."""
        await self._call(self.sync.ack, lease)

    async def nack(self, lease: Lease, delay: _args.Duration = 0.0) -> None:
        """Queue.nack, awaited."""
        await self._call(self.sync.nack, lease, delay)

    async def unclaim(self, lease: Lease) -> None:
        """Queue.unclaim, awaited."""
        await self._call(self.sync.unclaim, lease)

    async def extend(self, lease: Lease, visibility: _args.Duration) -> None:
        """Queue.extend, awaited."""
        await self._call(self.sync.extend, lease, visibility)

    # -- dead letters --

    def set_max_attempts(self, max_attempts: int) -> None:
        """Queue.set_max_attempts (no server: not awaited)."""
        self.sync.set_max_attempts(max_attempts)

    async def dead_count(self) -> int:
        return await self._call(self.sync.dead_count)

    async def dead_requeue(self, seq: int) -> int:
        return await self._call(self.sync.dead_requeue, seq)

    async def dead_purge(self) -> int:
        return await self._call(self.sync.dead_purge)

    async def dead_list(self, limit: int = 10) -> List[StoredEvent]:
        return await self._call(self.sync.dead_list, limit)

    async def dead_page(self, offset: int = 0, limit: int = 50) -> DeadPage:
        return await self._call(self.sync.dead_page, offset, limit)

    # -- groups --

    async def groups(self, *, states: Union[None, GroupState, Iterable[GroupState]] = None,
                     id_prefix: Optional[str] = None, min_attempts: int = 0,
                     held_longer_than: Optional[_args.Duration] = None,
                     parked_beyond: Optional[_args.Duration] = None, sort: GroupsSort = "id",
                     after: Optional[str] = None, limit: int = 50) -> GroupsPage:
        """Queue.groups, awaited."""
        if states is not None and not isinstance(states, str):
            states = list(states)
        return await self._call(self.sync.groups, states=states, id_prefix=id_prefix, min_attempts=min_attempts,
                                held_longer_than=held_longer_than, parked_beyond=parked_beyond, sort=sort,
                                after=after, limit=limit)

    async def pause_group(self, group: str) -> None:
        await self._call(self.sync.pause_group, group)

    async def resume_group(self, group: str) -> None:
        await self._call(self.sync.resume_group, group)

    # -- deduplication (no server: not awaited) --

    def set_dedup_window(self, seconds: _args.Duration) -> None:
        self.sync.set_dedup_window(seconds)

    def set_dedup_scope(self, scope: DedupScope) -> None:
        self.sync.set_dedup_scope(scope)

    # -- looking, repair, admin --

    async def peek(self, group: Optional[str] = None, limit: int = 10) -> List[StoredEvent]:
        return await self._call(self.sync.peek, group, limit)

    def set_repair_interval(self, seconds: _args.Duration) -> None:
        self.sync.set_repair_interval(seconds)

    def repair_counts(self) -> RepairCounts:
        return self.sync.repair_counts()

    async def stats(self) -> Stats:
        return await self._call(self.sync.stats)

    async def repair(self) -> int:
        return await self._call(self.sync.repair)

    async def purge_group(self, group: str) -> None:
        await self._call(self.sync.purge_group, group)

    async def drop(self) -> None:
        await self._call(self.sync.drop)

    def interrupt(self) -> None:
        """Queue.interrupt: every waiting claim ends with Interrupted, for good."""
        self.sync.interrupt()

    # -- the queue clock (no server: not awaited) --

    def now(self) -> _dt.datetime:
        return self.sync.now()

    def set_clock(self, clock: Optional[ManualClock]) -> None:
        self.sync.set_clock(clock)

    @property
    def clock_offset(self) -> float:
        return self.sync.clock_offset

    # -- telemetry (mongomq.otel; no server: not awaited) --

    def set_telemetry(self, telemetry: Optional["Telemetry"]) -> None:
        """Queue.set_telemetry: publishes (awaited in the caller's trace context) and
        the AsyncWorker's handler runs traced and measured; None turns it off."""
        self.sync.set_telemetry(telemetry)

    @property
    def telemetry(self) -> Optional["Telemetry"]:
        return self.sync.telemetry

    # -- the worker --

    def worker(self, handler: "AsyncHandler", **options: Any) -> "AsyncWorker":
        """Starts an AsyncWorker (options as mongomq.Worker's) on the running loop and
        returns it: ``await w.stop()``, ``await w.wait()``, or ``async with``."""
        from ._aio_worker import AsyncWorker

        w = AsyncWorker(self, handler, **options)
        w._start()
        return w

    async def work(self, handler: "AsyncHandler", **options: Any) -> None:
        """Runs an AsyncWorker until it stops (idle_timeout, a signal with
        handle_signals, the queue interrupted or closed). A cancel of the task
        awaiting work() stops it gracefully first (up to shutdown_timeout), then the
        CancelledError goes on."""
        from ._aio_worker import AsyncWorker

        w = AsyncWorker(self, handler, **options)
        w._start()
        try:
            await w.wait()
        except BaseException:
            await _aio_calls.outlast(asyncio.ensure_future(w.stop()))
            raise
        await w.stop()

    # -- closing --

    async def close(self) -> None:
        """Closes the queue (its waiting claims end with ClosedError). Closing again
        does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            await _aio_calls.call(self._pools, self.sync.close)
        finally:
            self.client._queue_closed()

    async def __aenter__(self) -> "AsyncQueue":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return "<mongomq.aio.AsyncQueue %s.%s%s>" % (self.db, self.prefix, " closed" if self._closed else "")
