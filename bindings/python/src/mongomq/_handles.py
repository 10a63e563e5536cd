"""Client, Queue, Lease, Batch, ManualClock and CancelToken: the C handles behind Python
objects.

Every object owns one C handle and frees it exactly once: in close(), or when the
garbage collector reclaims it (whatever the order). A call on a closed object raises
ClosedError. Closing never blocks: it stops new calls at once (a queue first
interrupts its waiting claims), and a handle that calls in other threads are still
using is freed when the last of them returns, because the C library forbids
destroying a handle that a call is using.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar, Union

from . import _raw
from ._errors import Cancelled, ClosedError, Interrupted, _from_c
from ._stats import RepairCounts, Stats
from ._stored import StoredEvent
from ._stored import _parse as _parse_stored

if TYPE_CHECKING:
    from ._worker import Worker

_raw.mqs_py_set_error_factory(_from_c)

Data = Union[bytes, bytearray, memoryview, str]
Seconds = Union[int, float]

PRIORITY_MIN = _raw.MQ_PRIORITY_MIN
PRIORITY_MAX = _raw.MQ_PRIORITY_MAX
BATCH_MAX = _raw.MQ_BATCH_MAX

_H = TypeVar("_H", bound="_Handle")
_T = TypeVar("_T")

_main_ident = threading.main_thread().ident
_get_ident = threading.get_ident
_monotonic = time.monotonic


# ---- argument checks: types here (with the Python argument's name), ranges in C ----

def _text(name: str, value: Any) -> str:
    if type(value) is not str:
        if not isinstance(value, str):
            raise TypeError("%s must be str, not %s" % (name, type(value).__name__))
    if "\0" in value:
        raise ValueError("%s contains a NUL character" % name)
    return value


def _data(value: Any) -> Any:
    t = type(value)
    if t is bytes:
        return value
    if t is str or isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    try:
        memoryview(value)
    except TypeError:
        raise TypeError("data must be bytes or str, not %s" % type(value).__name__) from None
    return value


def _worker_id(value: Any) -> str:
    _text("worker_id", value)
    if value == "":  # the C shim would take "" for "the default"
        raise _from_c(_raw.MQ_ERR_ARG, 0, "worker_id is empty (None is the default: host:pid)")
    return str(value)


def _int(name: str, value: Any) -> int:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("%s must be int, not %s" % (name, type(value).__name__))
    return value


def _seconds(name: str, value: Any) -> float:
    t = type(value)
    if t is float:
        return float(value)
    if t is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, _dt.timedelta):
            return value.total_seconds()
        raise TypeError("%s must be seconds as a float, not %s" % (name, type(value).__name__))
    return float(value)


def _limit(value: Any) -> int:
    _int("limit", value)
    if value < 1:  # size_t in C: a negative one would not reach the library's check
        raise _from_c(_raw.MQ_ERR_ARG, 0, "limit is %d; it must be at least 1" % value)
    if value > _raw.MQ_BATCH_MAX:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "limit is %d; it must be at most %d" % (value, _raw.MQ_BATCH_MAX))
    return int(value)


def _check_seconds(name: str, value: float, zero_ok: bool) -> None:
    """For the checks the C library cannot name (a value it never sees)."""
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not zero_ok):
        raise _from_c(_raw.MQ_ERR_ARG, 0, "%s is %r; it must be %s" % (
            name, value, "finite and >= 0" if zero_ok else "finite and > 0"))


# ---- the guard every handle shares ----------------------------------------------------

class _Handle:
    """One C handle: `_enter` returns it and counts the call, `_leave` ends the count,
    `close` stops new calls and frees the handle once: at once when no call is
    running on it, else when the last running call leaves. close() never blocks, so
    it is safe anywhere, even in a signal handler that runs during a call."""

    __slots__ = ("_ptr", "_busy", "_lock", "_closing", "__weakref__")
    _what = "object"

    def __init__(self, ptr: Any) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._closing: Any = None  # the handle close() left to the last running call
        self._ptr = ptr

    def _enter(self) -> Any:
        with self._lock:
            ptr = self._ptr
            if ptr is None:
                raise ClosedError("mongomq: the %s is closed" % self._what)
            self._busy += 1
            return ptr

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy or self._closing is None:
                return
            ptr, self._closing = self._closing, None
        self._free(ptr)

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def close(self) -> None:
        """Frees the C handle, now or, if calls are running on it in other threads,
        when the last of them returns (a queue's waiting claims are interrupted and
        raise ClosedError). Closing again does nothing."""
        try:
            lock = self._lock
        except AttributeError:  # __init__ failed before the handle existed
            return
        with lock:
            ptr = self._ptr
            if ptr is None:
                return
            self._ptr = None
            if self._busy:
                self._closing = ptr
                self._busy += 1  # ours: the handle stays valid for _wake
                busy = True
            else:
                busy = False
        if busy:
            try:
                self._wake(ptr)
            finally:
                self._leave()
        else:
            self._free(ptr)

    def _wake(self, ptr: Any) -> None:
        pass

    def _check_open(self) -> None:
        self._enter()
        self._leave()

    def _free(self, ptr: Any) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            if getattr(self, "_ptr", None) is not None:
                self.close()
        except Exception:
            pass

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- cancel ---------------------------------------------------------------------------

class CancelToken:
    """Cancels waiting claims from another thread: ``queue.claim(wait=..., cancel=t)``
    raises Cancelled once ``t.cancel()`` is called (within about 10 ms), and at once
    for a token already cancelled. Other claims and the queue are not touched. One
    token may serve many claims at once; it stays cancelled."""

    __slots__ = ("_lock", "_cancelled", "_c")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._c: Dict[int, Any] = {}  # id -> the mq_cancel of a claim waiting on this token

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            for c in self._c.values():
                _raw.mqs_cancel_trigger(c)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def _add(self, c: Any) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._c[id(c)] = c
            return True

    def _remove(self, c: Any) -> None:
        with self._lock:
            self._c.pop(id(c), None)

    def _rearm(self, c: Any) -> bool:
        """Resets c after a cancel that was not ours (a signal); False if the token
        was cancelled meanwhile."""
        with self._lock:
            if self._cancelled:
                return False
            _raw.mqs_cancel_reset(c)
            return True


class _NoToken:
    cancelled = False

    @staticmethod
    def _rearm(c: Any) -> bool:
        _raw.mqs_cancel_reset(c)
        return True


_NO_TOKEN = _NoToken()


# ---- client ---------------------------------------------------------------------------

class Client(_Handle):
    """A connection pool for one MongoDB URI. Thread-safe; a context manager.

    Does not contact the server: an unreachable server shows up as ConnectError from
    the first queue(). Closing the client while queues are open is allowed: the C
    client is freed when its last queue closes."""

    __slots__ = ("uri_redacted", "_queues", "_deferred")
    _what = "client"
    _destroy = staticmethod(_raw.mqs_client_destroy)

    def __init__(self, uri: str) -> None:
        _text("uri", uri)
        self._queues = 0
        self._deferred: Any = None
        super().__init__(_raw.mqs_client_new(uri))

    def queue(self, db: str = "mongomq", prefix: str = "mq") -> "Queue":
        """Opens the queue {db}.{prefix}_* (creates its indexes, measures the server
        clock). A context manager; close it before (or after) the client."""
        _text("db", db)
        _text("prefix", prefix)
        return Queue(self, db, prefix)

    @property
    def command_count(self) -> int:
        """Commands this client sent to the server so far."""
        ptr = self._enter()
        try:
            return _raw.mqs_client_command_count(ptr)
        finally:
            self._leave()

    @property
    def write_concern_errors(self) -> int:
        """Writes this client sent that the server applied but whose write concern it
        could not confirm (they may be rolled back if the primary fails). Monotonic."""
        ptr = self._enter()
        try:
            return _raw.mqs_client_write_concern_errors(ptr)
        finally:
            self._leave()

    def _queue_opened(self) -> Any:
        with self._lock:
            if self._ptr is None:
                raise ClosedError("mongomq: the client is closed")
            self._queues += 1
            self._busy += 1  # the queue's C call runs on the client
            return self._ptr

    def _queue_closed(self) -> None:
        ptr = None
        with self._lock:
            self._queues -= 1
            if self._queues == 0 and self._deferred is not None:
                ptr, self._deferred = self._deferred, None
        if ptr is not None:
            self._destroy(ptr)

    def _free(self, ptr: Any) -> None:
        with self._lock:
            if self._queues > 0:
                self._deferred = ptr
                return
        self._destroy(ptr)

    def __repr__(self) -> str:
        return "<mongomq.Client%s>" % (" closed" if self._ptr is None else "")


# ---- queue ----------------------------------------------------------------------------

class Queue(_Handle):
    """One queue: the collections {db}.{prefix}_messages, _locks, _counters (and _dead).
    Thread-safe: any number of threads may publish, claim, ack, nack, unclaim and extend
    at once. A context manager; keeps its client alive."""

    __slots__ = ("client", "db", "prefix")
    _what = "queue"
    _destroy = staticmethod(_raw.mqs_queue_destroy)

    def __init__(self, client: Client, db: str, prefix: str) -> None:
        cptr = client._queue_opened()
        try:
            ptr = _raw.mqs_queue_new(cptr, db, prefix)
        except BaseException:
            client._leave()
            client._queue_closed()
            raise
        client._leave()
        self.client = client
        self.db = db
        self.prefix = prefix
        super().__init__(ptr)

    # -- publish --

    def publish(self, group: str, data: Data, priority: int = 0,
                at: Union[None, float, _dt.datetime] = None) -> int:
        """Appends an event (bytes; str is encoded as UTF-8) to the tail of group and
        returns its seq. priority (0..4) counts when this publish creates the group.
        at: not before this time (epoch seconds on the queue clock, see now(), or an
        aware datetime)."""
        if type(group) is not str:
            _text("group", group)
        elif "\0" in group:
            _text("group", group)
        if type(data) is not bytes:
            data = _data(data)
        if type(priority) is not int:
            _int("priority", priority)
        when = 0.0
        if at is not None:
            when = _epoch(at)
            if not when > 0:  # 0 means "now" to the C shim; say it is bad instead
                _check_seconds("at", when, zero_ok=False)
        ptr = self._enter()
        try:
            return _raw.mqs_publish(ptr, group, data, priority, when)
        finally:
            self._leave()

    def publish_batch(self, events: Union["Batch", Iterable[Tuple[Any, ...]]]) -> int:
        """Publishes many events in 3 server commands. events: a Batch, or an iterable
        of (group, data) or (group, data, priority). Seqs follow the order given;
        returns the first (the others follow it by 1)."""
        if isinstance(events, Batch):
            return self._publish_batch(events)
        with Batch(events) as batch:
            return self._publish_batch(batch)

    def _publish_batch(self, batch: "Batch") -> int:
        bptr = batch._enter()
        try:
            ptr = self._enter()
            try:
                return _raw.mqs_publish_batch(ptr, bptr)
            finally:
                self._leave()
        finally:
            batch._leave()

    # -- claim --

    def claim(self, visibility: Seconds = 30.0, min_priority: int = 0, wait: Seconds = 0.0,
              max_events: int = 1, *, worker_id: Optional[str] = None,
              cancel: Optional[CancelToken] = None) -> Optional["Lease"]:
        """Leases the head event (or the first max_events events) of the due group
        that has waited longest, among groups of priority >= min_priority, for
        visibility seconds. None when nothing is due.

        wait > 0 waits up to that many seconds for a group to become due. Ctrl-C
        (any signal whose Python handler raises) ends a wait on the main thread with
        that exception (KeyboardInterrupt); a CancelToken ends it from another thread
        with Cancelled. Neither touches the queue or other waiters."""
        if type(visibility) is not float:
            visibility = _seconds("visibility", visibility)
        if type(min_priority) is not int:
            _int("min_priority", min_priority)
        if type(wait) is not float:
            wait = _seconds("wait", wait)
        if type(max_events) is not int:
            _int("max_events", max_events)
        if max_events < 1:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "max_events is %d; it must be at least 1" % max_events)
        if worker_id is not None:
            _worker_id(worker_id)
        ptr = self._enter()
        try:
            if wait == 0.0 and cancel is None:
                lease = _raw.mqs_py_claim(ptr, worker_id, visibility, min_priority, max_events, 0.0, None, 0)
            else:
                lease = self._claim_wait(ptr, worker_id, visibility, min_priority, max_events, wait, cancel)
        except Interrupted:
            if self._ptr is None:
                raise ClosedError("mongomq: the queue was closed during the claim") from None
            raise
        finally:
            self._leave()
        return None if lease is None else Lease(lease)

    def _claim_wait(self, ptr: Any, worker_id: Optional[str], visibility: float, min_priority: int,
                    max_events: int, wait: float, cancel: Optional[CancelToken]) -> Any:
        # One mq_cancel per call: the token (another thread) or a signal (the main
        # thread) triggers it; nothing else on the queue is touched.
        c = _raw.mqs_cancel_new()
        token: Any = _NO_TOKEN if cancel is None else cancel
        try:
            if cancel is not None and not cancel._add(c):
                raise Cancelled("mongomq: the claim's CancelToken was cancelled", _raw.MQ_CANCELLED)
            try:
                main = 1 if _get_ident() == _main_ident else 0
                remaining = wait
                deadline = _monotonic() + wait
                while True:
                    try:
                        return _raw.mqs_py_claim(ptr, worker_id, visibility, min_priority, max_events,
                                                 remaining, c, main)
                    except Cancelled:
                        # A signal whose handler did not raise: wait for the rest of
                        # the time, unless the token was cancelled as well.
                        if not main or not token._rearm(c):
                            raise
                        remaining = max(0.0, deadline - _monotonic())
            finally:
                if cancel is not None:
                    cancel._remove(c)
        finally:
            _raw.mqs_cancel_destroy(c)

    # -- ack, nack, unclaim, extend --

    def ack(self, lease: "Lease") -> None:
        """Removes the lease's event(s) and releases the group. LeaseLost when the
        lease expired and another worker took the group (the event is removed all the
        same)."""
        lptr = lease._enter()
        try:
            ptr = self._enter()
            try:
                _raw.mqs_ack(ptr, lptr)
            finally:
                self._leave()
        finally:
            lease._leave()

    def nack(self, lease: "Lease", delay: Seconds = 0.0) -> None:
        """Gives the event back: claimable again now (delay 0), or after delay seconds
        (the group stays held until then). The redelivery has attempts + 1."""
        if type(delay) is not float:
            delay = _seconds("delay", delay)
        lptr = lease._enter()
        try:
            ptr = self._enter()
            try:
                _raw.mqs_nack(ptr, lptr, delay)
            finally:
                self._leave()
        finally:
            lease._leave()

    def unclaim(self, lease: "Lease") -> None:
        """Gives back a lease no handler ran (say, a claim that returned as the program
        was told to stop). Unlike nack it is no delivery: the group gets back the
        attempts count and the place in line the claim found, so the same head is
        claimed next with the same attempts. LeaseLost (nothing changed) when the group
        is no longer this lease's. After ConnectError, retry with the same lease: a
        retry that finds its earlier give-back applied returns normally."""
        lptr = lease._enter()
        try:
            ptr = self._enter()
            try:
                _raw.mqs_unclaim(ptr, lptr)
            finally:
                self._leave()
        finally:
            lease._leave()

    def extend(self, lease: "Lease", visibility: Seconds) -> None:
        """Moves the lease's expiry to now + visibility seconds (lease.deadline follows)."""
        if type(visibility) is not float:
            visibility = _seconds("visibility", visibility)
        lptr = lease._enter()
        try:
            ptr = self._enter()
            try:
                _raw.mqs_extend(ptr, lptr, visibility)
            finally:
                self._leave()
        finally:
            lease._leave()

    # -- dead letters --

    def set_max_attempts(self, max_attempts: int) -> None:
        """n > 0: a head about to be delivered for the (n+1)th time goes to the dead
        letters instead. 0 (the default): unlimited. For this Queue object."""
        _int("max_attempts", max_attempts)
        self._call(_raw.mqs_queue_set_max_attempts, max_attempts)

    def dead_count(self) -> int:
        """The number of dead letters."""
        return self._call(_raw.mqs_dead_count)

    def dead_requeue(self, seq: int) -> int:
        """Publishes the dead letter `seq` again at the tail of its group; returns the
        new seq. ArgumentError when there is no such dead letter."""
        _int("seq", seq)
        return self._call(_raw.mqs_dead_requeue, seq)

    def dead_purge(self) -> int:
        """Removes every dead letter; returns how many."""
        return self._call(_raw.mqs_dead_purge)

    def dead_list(self, limit: int = 10) -> List[StoredEvent]:
        """The dead letters, oldest seq first, up to limit (1..BATCH_MAX), with
        attempts and dead_at. 1 server command."""
        _limit(limit)
        return _parse_stored(self._call(_raw.mqs_dead_list_json, limit))

    # -- looking without claiming --

    def peek(self, group: Optional[str] = None, limit: int = 10) -> List[StoredEvent]:
        """Up to limit (1..BATCH_MAX) events, oldest first, of one group (None: of the
        whole queue). Nothing is claimed or changed; 1 server command (for tooling,
        not for every event)."""
        if group is not None:
            _text("group", group)
            if group == "":  # the C shim would take "" for "the whole queue"
                raise _from_c(_raw.MQ_ERR_ARG, 0, "group is empty (None is the whole queue)")
        _limit(limit)
        return _parse_stored(self._call(_raw.mqs_peek_json, group, limit))

    # -- automatic repair --

    def set_repair_interval(self, seconds: Seconds) -> None:
        """A claim that finds nothing due runs repair() first when this many seconds
        passed since this Queue object's last automatic repair (default 60; 0 turns it
        off). The period starts at the first empty claim."""
        value = _seconds("seconds", seconds)
        _check_seconds("seconds", value, True)
        self._call(_raw.mqs_queue_set_repair_interval, value)

    def repair_counts(self) -> RepairCounts:
        """RepairCounts(runs, fixed): the automatic repairs this Queue object ran, and
        the locks they re-created."""
        ptr = self._enter()
        try:
            return RepairCounts(_raw.mqs_queue_repair_runs(ptr), _raw.mqs_queue_repair_fixed(ptr))
        finally:
            self._leave()

    # -- admin --

    def stats(self) -> Stats:
        """The queue's state (3 commands that read whole collections: monitoring, not
        every event)."""
        return Stats._from_json(json.loads(self._call(_raw.mqs_stats_json)))

    def repair(self) -> int:
        """Re-creates the lock of every group that has events but no lock; returns how
        many it created."""
        return self._call(_raw.mqs_repair)

    def purge_group(self, group: str) -> None:
        """Removes a group's events and its lock (its holder's ack is LeaseLost)."""
        _text("group", group)
        self._call(_raw.mqs_purge_group, group)

    def drop(self) -> None:
        """Drops the queue's collections (tests and tooling)."""
        self._call(_raw.mqs_queue_drop)

    def interrupt(self) -> None:
        """Ends every waiting claim on this queue with Interrupted, now and for good
        (shutdown). Other calls keep working, plain claims (wait=0, no cancel)
        included. Also safe from a signal handler."""
        self._call(_raw.mqs_queue_interrupt)

    def now(self) -> float:
        """The queue clock (server time, or the ManualClock given to set_clock; epoch
        seconds): what `at` is compared with."""
        return self._call(_raw.mqs_queue_now)

    def set_clock(self, clock: Optional["ManualClock"]) -> None:
        """Runs this Queue object on a ManualClock from now on (tests and simulations:
        scheduled events, nack delays, lease deadlines and expiry all follow it), or,
        with None, on server time again. The queue keeps every clock it was given
        until it is closed, so closing the clock first is safe."""
        if clock is None:
            self._call(_raw.mqs_queue_set_clock, None)
            return
        if not isinstance(clock, ManualClock):
            raise TypeError("clock must be a mongomq.ManualClock or None, not %s" % type(clock).__name__)
        cptr = clock._enter()
        try:
            self._call(_raw.mqs_queue_set_clock, cptr)
        finally:
            clock._leave()

    @property
    def clock_offset(self) -> float:
        """Server clock minus this machine's clock, in seconds."""
        return self._call(_raw.mqs_queue_clock_offset)

    # -- the worker --

    def worker(self, handler: Callable[["Lease"], Any], **options: Any) -> "Worker":
        """Starts a Worker running handler on this queue's leases (options as work())
        and returns it; stop it with stop() or a with block."""
        from ._worker import Worker

        w = Worker(self, handler, **options)
        w.start()
        return w

    def work(self, handler: Callable[["Lease"], Any], *, stop: Optional[threading.Event] = None,
             **options: Any) -> None:
        """Runs handler on leases with `concurrency` threads until `stop` is set (or
        the queue is interrupted or closed, or Ctrl-C: that KeyboardInterrupt is
        raised after the graceful shutdown). A handler that returns acks; one that
        raises nacks with back-off. Options: concurrency=1, visibility=30.0,
        min_priority=0, batch=1, backoff_base=1.0, backoff_cap=60.0, max_attempts=0,
        shutdown_timeout=30.0, worker_id=None, on_error=None (see Worker)."""
        w = self.worker(handler, **options)
        try:
            while not w.wait(0.25):
                if stop is not None and stop.is_set():
                    break
        finally:
            w.stop()

    # -- internals --

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        ptr = self._enter()
        try:
            return fn(ptr, *args)
        finally:
            self._leave()

    def _wake(self, ptr: Any) -> None:
        # Waiting claims would hold close() up for their whole wait.
        _raw.mqs_queue_interrupt(ptr)

    def _free(self, ptr: Any) -> None:
        try:
            self._destroy(ptr)
        finally:
            self.client._queue_closed()

    def __repr__(self) -> str:
        return "<mongomq.Queue %s.%s%s>" % (self.db, self.prefix, " closed" if self._ptr is None else "")


def _epoch(at: Any) -> float:
    if isinstance(at, _dt.datetime):
        return at.timestamp()
    return _seconds("at", at)


# ---- lease ----------------------------------------------------------------------------

class Lease(_Handle):
    """One claimed group: its head event (or the first `count` events). A plain value:
    it may outlive its queue; close() (or the GC) frees it. Its fields are read once,
    at claim time, except deadline, which ack/nack/extend move."""

    __slots__ = ("_seq", "_group", "_attempts", "_events", "_seqs")
    _what = "lease"
    _destroy = staticmethod(_raw.mqs_lease_destroy)

    def __init__(self, ptr: Any) -> None:
        super().__init__(ptr)
        self._seq: int = _raw.mqs_lease_seq(ptr)
        self._group: str = _raw.mqs_lease_group(ptr)
        self._attempts: int = _raw.mqs_lease_attempts(ptr)
        n = _raw.mqs_lease_count(ptr)
        if n == 1:
            self._events: Tuple[bytes, ...] = (_raw.mqs_lease_event_at(ptr, 0),)
            self._seqs: Tuple[int, ...] = (self._seq,)
        else:
            self._events = tuple(_raw.mqs_lease_event_at(ptr, i) for i in range(n))
            self._seqs = tuple(_raw.mqs_lease_seq_at(ptr, i) for i in range(n))

    def _open(self) -> None:
        if self._ptr is None:
            raise ClosedError("mongomq: the lease is closed")

    @property
    def seq(self) -> int:
        """The head event's sequence number."""
        self._open()
        return self._seq

    @property
    def group(self) -> str:
        self._open()
        return self._group

    @property
    def event(self) -> bytes:
        """The head event's bytes, exactly as published."""
        self._open()
        return self._events[0]

    @property
    def data(self) -> bytes:
        """Same as event."""
        self._open()
        return self._events[0]

    @property
    def events(self) -> Tuple[bytes, ...]:
        """Every event of the lease, in FIFO order (one unless claimed with max_events)."""
        self._open()
        return self._events

    @property
    def seqs(self) -> Tuple[int, ...]:
        self._open()
        return self._seqs

    @property
    def count(self) -> int:
        self._open()
        return len(self._events)

    def __len__(self) -> int:
        return self.count

    @property
    def attempts(self) -> int:
        """1 on the head's first delivery, + 1 on each redelivery."""
        self._open()
        return self._attempts

    @property
    def token(self) -> str:
        ptr = self._enter()
        try:
            return _raw.mqs_lease_token(ptr)
        finally:
            self._leave()

    @property
    def deadline(self) -> float:
        """When the lease runs out, on the queue clock (epoch seconds; see Queue.now)."""
        ptr = self._enter()
        try:
            return _raw.mqs_lease_deadline(ptr)
        finally:
            self._leave()

    def _free(self, ptr: Any) -> None:
        self._destroy(ptr)

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<mongomq.Lease closed>"
        return "<mongomq.Lease group=%r seq=%d attempts=%d count=%d>" % (
            self._group, self._seq, self._attempts, len(self._events))


# ---- batch ----------------------------------------------------------------------------

class Batch(_Handle):
    """Events to publish together with Queue.publish_batch (3 server commands for the
    whole batch). Not thread-safe while being filled; may be published again."""

    __slots__ = ()
    _what = "batch"
    _destroy = staticmethod(_raw.mqs_batch_destroy)

    def __init__(self, events: Iterable[Tuple[Any, ...]] = ()) -> None:
        super().__init__(_raw.mqs_batch_new())
        for item in events:
            if not isinstance(item, tuple) or not 2 <= len(item) <= 3:
                self.close()
                raise TypeError("each event must be a tuple (group, data) or (group, data, priority)")
            try:
                self.add(*item)
            except BaseException:
                self.close()
                raise

    def add(self, group: str, data: Data, priority: int = 0) -> "Batch":
        """Adds an event (checked as publish would; the bytes are copied)."""
        _text("group", group)
        data = _data(data)
        _int("priority", priority)
        ptr = self._enter()
        try:
            _raw.mqs_batch_add(ptr, group, data, priority)
        finally:
            self._leave()
        return self

    def __len__(self) -> int:
        ptr = self._enter()
        try:
            return _raw.mqs_batch_count(ptr)
        finally:
            self._leave()

    def _free(self, ptr: Any) -> None:
        self._destroy(ptr)


# ---- manual clock ---------------------------------------------------------------------

def _clock_time(name: str, value: Any) -> float:
    if isinstance(value, _dt.datetime):
        t = value.timestamp()
    else:
        t = _seconds(name, value)
    _check_seconds(name, t, zero_ok=True)
    return t


class ManualClock(_Handle):
    """A clock that moves only when told to (tests and simulations): give it to
    queues with ``queue.set_clock(clock)``; they read it from any thread.

    ``now`` is its time (epoch seconds), ``set(t)`` puts it at t, ``advance(seconds)``
    moves it on. The value lives in C: a queue keeps every clock it was given until
    the queue is closed, so closing this handle (or losing it to the garbage
    collector) while queues still run on it is safe; only this object's own calls
    then raise ClosedError. A context manager; closing twice does nothing."""

    __slots__ = ()
    _what = "clock"
    _destroy = staticmethod(_raw.mqs_clock_release)

    def __init__(self, start: Union[float, _dt.datetime]) -> None:
        """start: epoch seconds (finite, >= 0) or an aware datetime."""
        t = _clock_time("start", start)
        ptr = _raw.mqs_clock_new(t)
        if ptr is None:
            raise MemoryError("mongomq: no memory for a clock")
        super().__init__(ptr)

    @property
    def now(self) -> float:
        """The clock's time, epoch seconds."""
        ptr = self._enter()
        try:
            return _raw.mqs_clock_now(ptr)
        finally:
            self._leave()

    def set(self, t: Union[float, _dt.datetime]) -> None:
        """Puts the clock at t (epoch seconds, finite and >= 0, or an aware datetime);
        back in time is allowed."""
        value = _clock_time("t", t)
        ptr = self._enter()
        try:
            _raw.mqs_clock_set(ptr, value)
        finally:
            self._leave()

    def advance(self, seconds: Seconds) -> None:
        """Moves the clock on by seconds (a float, int or timedelta; finite; a
        negative one moves it back)."""
        value = _seconds("seconds", seconds)
        if math.isnan(value) or math.isinf(value):
            raise _from_c(_raw.MQ_ERR_ARG, 0, "seconds is %r; it must be finite" % value)
        ptr = self._enter()
        try:
            _raw.mqs_clock_advance(ptr, value)
        finally:
            self._leave()

    def _free(self, ptr: Any) -> None:
        self._destroy(ptr)

    def __repr__(self) -> str:
        try:
            return "<mongomq.ManualClock now=%r>" % self.now
        except ClosedError:
            return "<mongomq.ManualClock closed>"
