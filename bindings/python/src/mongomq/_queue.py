"""Queue: one queue (mq_queue, of one partition or more) and every call on it: publish
(with dedup keys and attributes), claim (one entry, mq_claim_with, waiting or not,
from every partition or some),
ack/nack/unclaim/extend, dead letters, deduplication's window and scope, looking,
groups (listing, pausing), repair, admin, the queue clock, the telemetry it is given
(mongomq.otel, imported only by users who trace), and the doors to the worker
helper."""

from __future__ import annotations

import datetime as _dt
import json
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, List, Literal, Optional, Tuple, TypeVar, Union

from . import _args, _groups, _raw
from ._batch import Batch
from ._cancel import NO_TOKEN, CancelToken
from ._clock import ManualClock
from ._errors import Cancelled, ClosedError, Interrupted, _from_c
from ._groups import GroupsPage, GroupsSort, GroupState
from ._handle import _Handle
from ._lease import Lease
from ._published import Published, PublishedBatch
from ._stats import RepairCounts, Stats
from ._stored import DeadPage, StoredEvent
from ._stored import _parse as _parse_stored

if TYPE_CHECKING:
    from ._client import Client
    from ._worker import Worker
    from .otel import Telemetry

_T = TypeVar("_T")

DedupScope = Literal["queue", "group"]
"""Where a dedup_key must be unique (Queue.set_dedup_scope): in the queue, or in the
event's group only."""
_DEDUP_SCOPES = {"queue": _raw.MQ_DEDUP_SCOPE_QUEUE, "group": _raw.MQ_DEDUP_SCOPE_GROUP}

_main_ident = threading.main_thread().ident
_get_ident = threading.get_ident
_monotonic = time.monotonic
_seconds = _args.seconds


def group_partition(group: str, partitions: int) -> int:
    """The partition of `group` in a queue of `partitions` partitions (0.8.0;
    1..PARTITIONS_MAX): the C library's mq_group_partition (a hash of the group's
    UTF-8 bytes), the same in every language and on every machine; 0 when partitions
    is 1. A lease's partition is this of its group. Touches no server."""
    _args.text("group", group)
    _args.integer("partitions", partitions)
    if 1 <= partitions <= _raw.MQ_PARTITIONS_MAX:
        k = _raw.mq_group_partition(group, partitions)
        if k >= 0:
            return k
    raise _from_c(_raw.MQ_ERR_ARG, 0, "partitions is %d, outside 1..%d (PARTITIONS_MAX)"
                  % (partitions, _raw.MQ_PARTITIONS_MAX))


class Queue(_Handle):
    """One queue: the collections {db}.{prefix}_messages, _locks, _counters (and _dead),
    over ``partitions`` partitions (0.8.0; Client.queue's option, default 1).
    Thread-safe: any number of threads may publish, claim, ack, nack, unclaim and extend
    at once. A context manager; keeps its client alive."""

    __slots__ = ("client", "db", "prefix", "_telemetry")
    _what = "queue"
    _destroy = staticmethod(_raw.mqs_queue_destroy)

    def __init__(self, client: "Client", db: str, prefix: str, partitions: int = 1) -> None:
        cptr = client._queue_opened()
        try:
            ptr = _raw.mqs_queue_new_with(cptr, db, prefix, partitions)
        except BaseException:
            client._leave()
            client._queue_closed()
            raise
        client._leave()
        self.client = client
        self.db = db
        self.prefix = prefix
        # mongomq.otel's per-queue half of a Telemetry (set_telemetry); None: no
        # tracing, and every call does what it did before there was any.
        self._telemetry: Any = None
        super().__init__(ptr)

    @property
    def partitions(self) -> int:
        """The queue's number of partitions (0.8.0): 1 unless opened with more. A group's
        partition is group_partition(group, partitions)."""
        return self._call(_raw.mq_queue_partitions)

    # -- publish --

    def publish(self, group: str, event: _args.Event, *, priority: int = 0,
                not_before: Optional[_dt.datetime] = None, dedup_key: Optional[str] = None,
                attrs: Optional[_args.Attrs] = None) -> Published:
        """Appends an event (bytes; str is encoded as UTF-8) to the tail of group and
        returns its seq, a Published (an int, with ``duplicate``). priority (0..4)
        counts when this publish creates the group. not_before: an aware datetime on
        the queue clock (see now()) before which the event is not delivered; None: now.

        dedup_key (a str of 1..DEDUP_KEY_MAX bytes as UTF-8; None: none): the event is
        added only if no event of the queue holds that key (queued, or published
        within the dedup window, set_dedup_window); otherwise nothing is added and the
        result has duplicate True and that event's seq. So a publish retried with its
        key after a ConnectError leaves exactly one event.

        attrs (0.7.0; None: none): up to ATTR_MAX str keys and values carried beside
        the bytes, in the mapping's order (Lease.attrs, StoredEvent.attrs): a key is
        1..ATTR_KEY_MAX ASCII letters, digits, '_', '-' and '.', a value up to
        ATTR_VALUE_MAX bytes as UTF-8; anything else is an ArgumentError naming the
        attribute (a key or value not a str: TypeError), and nothing is published.

        With telemetry (set_telemetry), the publish is a span and the span's trace
        context goes into the event's attributes, after these (README, "Tracing")."""
        tel = self._telemetry
        if tel is not None:
            return tel.publish(self, group, event, priority, not_before, dedup_key, attrs)
        return self._publish(group, event, priority, not_before, dedup_key, attrs, None)

    def _publish(self, group: Any, event: Any, priority: Any, not_before: Any, dedup_key: Any, attrs: Any,
                 inject: Optional[Callable[[bytes], bytes]]) -> Published:
        # inject (telemetry's): the packed attributes with the trace context's added.
        if type(group) is not str or "\0" in group:
            _args.text("group", group)
        if type(event) is not bytes:
            event = _args.event(event)
        if type(priority) is not int:
            _args.integer("priority", priority)
        when = 0.0 if not_before is None else _args.not_before(not_before)
        has_key = 0 if dedup_key is None else _args.dedup_key(dedup_key)
        packed = b"" if attrs is None else _args.attrs(attrs)
        if inject is not None:
            packed = inject(packed)
        ptr = self._enter()
        try:
            raw = _raw.mqs_publish(ptr, group, event, priority, when, has_key, dedup_key, packed)
        finally:
            self._leave()
        return Published._of(raw)

    def publish_batch(self, events: Union[Batch, Iterable[Tuple[Any, ...]]]) -> PublishedBatch:
        """Publishes many events in 3 server commands (1 more when some key was taken).
        events: a Batch, or an iterable of tuples (group, event[, priority[,
        not_before[, dedup_key[, attrs]]]]). Seqs follow the order given. Returns a
        PublishedBatch: the first seq, an int (in a queue of one partition the others
        follow it by 1, as long as no event was a duplicate), with ``outcomes``, each
        event's Published in that order, and ``added``."""
        tel = self._telemetry
        if isinstance(events, Batch):
            return self._publish_batch(events) if tel is None else tel.publish_batch(self, events)
        with Batch(events) as batch:
            return self._publish_batch(batch) if tel is None else tel.publish_batch(self, batch)

    def _publish_batch(self, batch: Batch) -> PublishedBatch:
        bptr = batch._enter()
        try:
            ptr = self._enter()
            try:
                first = _raw.mqs_publish_batch(ptr, bptr)
            finally:
                self._leave()
            count = _raw.mq_batch_count(bptr)
            if not batch._keyed and _raw.mq_queue_partitions(ptr) == 1:
                return PublishedBatch(first, count)
            # Keyed, or over partitions (0.8.0: each partition has its own seqs, so the
            # batch's are not first + i): each event's outcome (a duplicate's seq
            # negated), read from the batch, which keeps its last publish's.
            raw = tuple(_raw.mqs_batch_outcome(bptr, i) for i in range(count))
            return PublishedBatch(abs(first), count, raw)
        finally:
            batch._leave()

    # -- claim --

    def claim(self, *, visibility: _args.Duration = 30.0, min_priority: int = 0, max_events: int = 1,
              wait: _args.Duration = 0.0, worker_id: Optional[str] = None,
              cancel: Optional[CancelToken] = None, partitions: Optional[_args.Partitions] = None) -> Optional[Lease]:
        """Leases the head event (or the first max_events events) of the due group
        that has waited longest, among groups of priority >= min_priority, for
        visibility seconds. None when nothing is due.

        wait > 0 waits up to that many seconds for a group to become due. Ctrl-C
        (any signal whose Python handler raises) ends a wait on the main thread with
        that exception (KeyboardInterrupt); a CancelToken ends it from another thread
        with Cancelled. Neither touches the queue or other waiters. worker_id: the
        name the lease is recorded under (None: host:pid).

        partitions (0.8.0): claim only from these partitions of the queue (a list of
        distinct numbers in 0..partitions - 1; None or empty: every partition), so
        that each claimer can keep to its own; anything else is an ArgumentError
        naming partitions[i]."""
        if type(visibility) is not float:
            visibility = _seconds("visibility", visibility)
        if type(min_priority) is not int:
            _args.integer("min_priority", min_priority)
        if type(wait) is not float:
            wait = _seconds("wait", wait)
        if type(max_events) is not int:
            _args.integer("max_events", max_events)
        if max_events < 1:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "max_events is %d; it must be at least 1" % max_events)
        if worker_id is not None:
            _args.worker_id(worker_id)
        if cancel is not None and not isinstance(cancel, CancelToken):
            raise TypeError("cancel must be a mongomq.CancelToken or None, not %s" % type(cancel).__name__)
        parts = b"" if partitions is None else _args.claim_partitions(partitions)[1]
        ptr = self._enter()
        try:
            if wait == 0.0 and cancel is None:
                lease = _raw.mqs_py_claim(ptr, worker_id, visibility, min_priority, max_events, 0.0, None, parts, 0)
            else:
                lease = self._claim_wait(ptr, worker_id, visibility, min_priority, max_events, wait, cancel, parts)
        except Interrupted:
            if self._ptr is None:
                raise ClosedError("mongomq: the queue was closed during the claim") from None
            raise
        finally:
            self._leave()
        return None if lease is None else Lease(lease)

    def _claim_wait(self, ptr: Any, worker_id: Optional[str], visibility: float, min_priority: int,
                    max_events: int, wait: float, cancel: Optional[CancelToken], parts: bytes) -> Any:
        # One mq_cancel per call: the token (another thread) or a signal (the main
        # thread) triggers it; nothing else on the queue is touched.
        c = _raw.mq_cancel_new()
        token: Any = NO_TOKEN if cancel is None else cancel
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
                                                 remaining, c, parts, main)
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
            _raw.mq_cancel_destroy(c)

    # -- ack, nack, unclaim, extend --

    def ack(self, lease: Lease) -> None:
        """Removes the lease's event(s) and releases the group. LeaseLost when the
        lease expired and another worker took the group (the event is removed all the
        same)."""
        tel = self._telemetry
        if tel is None:
            self._on_lease(_raw.mq_ack, lease)
        else:
            tel.timed("ack", self._on_lease, _raw.mq_ack, lease)

    def nack(self, lease: Lease, delay: _args.Duration = 0.0) -> None:
        """Gives the event back: claimable again now (delay 0), or after delay seconds
        (the group stays held until then). The redelivery has attempts + 1."""
        if type(delay) is not float:
            delay = _seconds("delay", delay)
        tel = self._telemetry
        if tel is None:
            self._on_lease(_raw.mq_nack, lease, delay)
        else:
            tel.timed("nack", self._on_lease, _raw.mq_nack, lease, delay)

    def unclaim(self, lease: Lease) -> None:
        """Gives back a lease no handler ran (say, a claim that returned as the program
        was told to stop). Unlike nack it is no delivery: the group gets back the
        attempts count and the place in line the claim found, so the same head is
        claimed next with the same attempts. LeaseLost (nothing changed) when the group
        is no longer this lease's. After ConnectError, retry with the same lease: a
        retry that finds its earlier give-back applied returns normally."""
        self._on_lease(_raw.mq_unclaim, lease)

    def extend(self, lease: Lease, visibility: _args.Duration) -> None:
        """Moves the lease's expiry to now + visibility seconds (lease.deadline follows)."""
        if type(visibility) is not float:
            visibility = _seconds("visibility", visibility)
        self._on_lease(_raw.mq_extend, lease, visibility)

    def _on_lease(self, fn: Callable[..., None], lease: Lease, *args: Any) -> None:
        lptr = lease._enter()
        try:
            ptr = self._enter()
            try:
                fn(ptr, lptr, *args)
            finally:
                self._leave()
        finally:
            lease._leave()

    # -- dead letters --

    def set_max_attempts(self, max_attempts: int) -> None:
        """n > 0: a head about to be delivered for the (n+1)th time goes to the dead
        letters instead. 0 (the default): unlimited. For this Queue object."""
        _args.integer("max_attempts", max_attempts)
        self._call(_raw.mq_queue_set_max_attempts, max_attempts)

    def dead_count(self) -> int:
        """The number of dead letters."""
        return self._call(_raw.mq_dead_count)

    def dead_requeue(self, seq: int) -> int:
        """Publishes the dead letter `seq` again at the tail of its group; returns the
        new seq. ArgumentError when there is no such dead letter."""
        _args.integer("seq", seq)
        return self._call(_raw.mq_dead_requeue, seq)

    def dead_purge(self) -> int:
        """Removes every dead letter; returns how many."""
        return self._call(_raw.mq_dead_purge)

    def dead_list(self, limit: int = 10) -> List[StoredEvent]:
        """The dead letters, oldest seq first, up to limit (1..BATCH_MAX), with
        attempts and dead_at. 1 server command."""
        _args.limit(limit)
        return _parse_stored(self._call(_raw.mq_dead_list_json, limit))

    def dead_page(self, offset: int = 0, limit: int = 50) -> DeadPage:
        """A page of the dead letters: up to limit (1..1000) of them, oldest seq first,
        after skipping offset, and how many there are in all (DeadPage: letters,
        offset, total). 2 server commands (the skip walks the index: a far offset
        costs what it skips)."""
        off = _args.offset(offset)
        return DeadPage._parse(self._call(_raw.mqs_dead_list_with, _args.page_limit(limit), off))

    # -- groups: listing, pausing --

    def groups(self, *, states: Union[None, GroupState, Iterable[GroupState]] = None,
               id_prefix: Optional[str] = None, min_attempts: int = 0,
               held_longer_than: Optional[_args.Duration] = None, parked_beyond: Optional[_args.Duration] = None,
               sort: GroupsSort = "id", after: Optional[str] = None, limit: int = 50) -> GroupsPage:
        """One page of the queue's groups, each with its state, holder, lease age and
        deadline, head's attempts, backlog and head age (GroupsPage: groups, next,
        now). Every filter narrows the page:

        - states: only groups in one of these states ("ready", "leased", "parked",
          "paused"; one name or an iterable of them); None: every state.
        - id_prefix: only group ids that start with it (literally, no pattern).
        - min_attempts: only groups whose head was delivered at least this often (2:
          "stuck"); 0: any.
        - held_longer_than: only leases taken more than this long ago (seconds or a
          timedelta); parked_beyond: only groups not due for more than this (leased,
          parked or paused); None or 0: no filter.
        - sort: "id" (by group id) or "due" (by when each is due: the claims' order,
          paused groups in their place too).
        - after: the previous page's ``next`` (of the same sort); None: the first page.
        - limit: groups per page, 1..1000.

        Pages by a cursor, not an offset: each page costs the same, and a walk visits
        every group once. 3 server commands (1 when the page is empty), each on an index
        with a limit: for tooling, not for every event."""
        args = _groups.options(states, id_prefix, min_attempts, held_longer_than, parked_beyond, sort, after, limit)
        return GroupsPage._parse(self._call(_raw.mqs_groups_json, *args))

    def pause_group(self, group: str) -> None:
        """Pauses a group: no claim takes it (harel's neither) until resume_group. A
        worker holding it keeps its lease until it acks, nacks or lets it run out; the
        pause outlasts the group's draining and refilling and purge_group. A group with
        no events can be paused ahead (its first publish finds it paused). Pausing a
        paused group changes nothing. 2 server commands."""
        _args.text("group", group)
        self._call(_raw.mq_pause_group, group)

    def resume_group(self, group: str) -> None:
        """Resumes a paused group: claimable again, at its priority, in its place in
        line. Resuming a group that is not paused changes nothing. 2 server commands."""
        _args.text("group", group)
        self._call(_raw.mq_resume_group, group)

    # -- deduplication --

    def set_dedup_window(self, seconds: _args.Duration) -> None:
        """How long a dedup_key stays taken after its event's publish, for this Queue
        object's keyed publishes: seconds (or a timedelta), 1 s to 7 days (default 5
        minutes); while the event is queued its key is taken whatever the window. Each
        event keeps the window it was published with."""
        self._call(_raw.mq_queue_set_dedup_window, _seconds("seconds", seconds))

    def set_dedup_scope(self, scope: DedupScope) -> None:
        """Where a dedup_key must be unique, for this Queue object's keyed publishes:
        "queue" (the default: a key reused in another group is a duplicate) or "group"
        (in the event's group only). Every publisher of a queue should use one scope:
        keys published with one never match keys published with the other."""
        if not isinstance(scope, str):
            raise TypeError("scope must be \"queue\" or \"group\", not %s" % type(scope).__name__)
        code = _DEDUP_SCOPES.get(scope)
        if code is None:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "scope is %r; it must be \"queue\" or \"group\"" % scope)
        self._call(_raw.mq_queue_set_dedup_scope, code)

    # -- looking without claiming --

    def peek(self, group: Optional[str] = None, limit: int = 10) -> List[StoredEvent]:
        """Up to limit (1..BATCH_MAX) events, oldest first, of one group (None: of the
        whole queue). Nothing is claimed or changed; 1 server command (for tooling,
        not for every event)."""
        if group is not None:
            _args.text("group", group)
            if group == "":  # not a group; the whole queue is None (the C API's NULL)
                raise _from_c(_raw.MQ_ERR_ARG, 0, "group is empty (None is the whole queue)")
        _args.limit(limit)
        return _parse_stored(self._call(_raw.mq_peek_json, group, limit))

    # -- automatic repair --

    def set_repair_interval(self, seconds: _args.Duration) -> None:
        """A claim that finds nothing due runs repair() first when this many seconds
        passed since this Queue object's last automatic repair (default 60; 0 turns it
        off). The period starts at the first empty claim."""
        value = _seconds("seconds", seconds)
        _args.check_seconds("seconds", value, True)
        self._call(_raw.mq_queue_set_repair_interval, value)

    def repair_counts(self) -> RepairCounts:
        """RepairCounts(runs, fixed): the automatic repairs this Queue object ran, and
        the locks they re-created."""
        ptr = self._enter()
        try:
            runs, fixed = _raw.mq_queue_repair_counts(ptr)
            return RepairCounts(runs=runs, fixed=fixed)
        finally:
            self._leave()

    # -- admin --

    def stats(self) -> Stats:
        """The queue's state (3 commands that read whole collections: monitoring, not
        every event)."""
        return Stats._from_json(json.loads(self._call(_raw.mq_stats_json)))

    def repair(self) -> int:
        """Re-creates the lock of every group that has events but no lock; returns how
        many it created."""
        return self._call(_raw.mq_repair)

    def purge_group(self, group: str) -> None:
        """Removes a group's events and its lock (its holder's ack is LeaseLost)."""
        _args.text("group", group)
        self._call(_raw.mq_purge_group, group)

    def drop(self) -> None:
        """Drops the queue's collections (tests and tooling)."""
        self._call(_raw.mq_queue_drop)

    def interrupt(self) -> None:
        """Ends every waiting claim on this queue with Interrupted, now and for good
        (shutdown). Other calls keep working, plain claims (wait=0, no cancel)
        included. Also safe from a signal handler."""
        self._call(_raw.mq_queue_interrupt)

    # -- the queue clock --

    def now(self) -> _dt.datetime:
        """The queue clock (server time, or the ManualClock given to set_clock), as an
        aware UTC datetime: what not_before and lease deadlines are on."""
        return _args.to_datetime(self._call(_raw.mq_queue_now))

    def set_clock(self, clock: Optional[ManualClock]) -> None:
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
        return self._call(_raw.mq_queue_clock_offset)

    # -- telemetry (mongomq.otel) --

    def set_telemetry(self, telemetry: Optional["Telemetry"]) -> None:
        """Traces this Queue object's publishes and its workers' handling, and
        records their metrics, through a mongomq.otel.Telemetry (OpenTelemetry;
        ``pip install mongomq[otel]``); None (the default) turns that off. What is
        recorded: bindings/CONTRACT.md, "Tracing", and the README's "Tracing"."""
        if telemetry is None:
            self._telemetry = None
            return
        otel = sys.modules.get("mongomq.otel")  # imported by whoever made a Telemetry
        if otel is None or not isinstance(telemetry, otel.Telemetry):
            raise TypeError("telemetry must be a mongomq.otel.Telemetry or None, not %s" % type(telemetry).__name__)
        self._check_open()
        self._telemetry = telemetry._bind(self)

    @property
    def telemetry(self) -> Optional["Telemetry"]:
        """The Telemetry given to set_telemetry, or None."""
        tel = self._telemetry
        return None if tel is None else tel.telemetry

    # -- the worker --

    def worker(self, handler: Callable[[Lease], Any], **options: Any) -> "Worker":
        """Starts a Worker running handler on this queue's leases (options as
        mongomq.Worker) and returns it at once: stop it with stop() (graceful), wait
        for it with wait(), or use it as a context manager (the with block's end
        stops it)."""
        from ._worker import Worker

        w = Worker(self, handler, **options)
        try:
            w._start()
        except BaseException:
            w._abandon()
            raise
        return w

    def work(self, handler: Callable[[Lease], Any], *, cancel: Optional[CancelToken] = None,
             **options: Any) -> None:
        """Runs handler on leases (a Worker, options as mongomq.Worker) and blocks
        until it stops: idle_timeout passed with no lease, SIGINT/SIGTERM with
        handle_signals=True (then work returns), the CancelToken `cancel` was
        cancelled, the queue was interrupted or closed, or Ctrl-C without
        handle_signals (KeyboardInterrupt is raised after the graceful shutdown). A
        handler that returns acks; one that raises nacks with back-off."""
        if cancel is not None and not isinstance(cancel, CancelToken):
            raise TypeError("cancel must be a mongomq.CancelToken or None, not %s" % type(cancel).__name__)
        from ._worker import Worker

        w = Worker(self, handler, **options)
        try:
            w._start()
            while not w.wait(0.1):
                if cancel is not None and cancel.cancelled:
                    break
        except BaseException:
            # Ctrl-C: a graceful stop, unless the stop had begun already (a second
            # signal): then nothing more is waited for.
            if w._stop_requested:
                w._abandon()
            else:
                w.stop()
            raise
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
        _raw.mq_queue_interrupt(ptr)

    def _free(self, ptr: Any) -> None:
        try:
            self._destroy(ptr)
        finally:
            self.client._queue_closed()

    def __repr__(self) -> str:
        return "<mongomq.Queue %s.%s%s>" % (self.db, self.prefix, " closed" if self._ptr is None else "")
