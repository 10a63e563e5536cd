"""Client: one MongoDB connection pool (mq_client), the parent of its queues."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _args, _log, _raw
from ._errors import ClosedError
from ._handle import _Handle

if TYPE_CHECKING:
    from ._queue import Queue


class Client(_Handle):
    """A connection pool for one MongoDB URI. Thread-safe; a context manager.

    Does not contact the server: an unreachable server shows up as ConnectError from
    the first queue(). Closing the client while queues are open is allowed: the C
    client is freed when its last queue closes.

    The first Client of the process routes libmongoc's log into the "mongomq" logger
    (see mongomq.set_log_handler), unless a handler was set before or the
    environment has MONGOMQ_LIBMONGOC_LOG=keep."""

    __slots__ = ("_queues", "_deferred")
    _what = "client"
    _destroy = staticmethod(_raw.mq_client_destroy)

    def __init__(self, uri: str) -> None:
        _args.text("uri", uri)
        self._queues = 0
        self._deferred: Any = None
        _log._install_default()  # before libmongoc parses the URI: its warnings come then
        super().__init__(_raw.mq_client_new(uri))

    def queue(self, db: str = "mongomq", prefix: str = "mq", *, partitions: int = 1) -> "Queue":
        """Opens the queue {db}.{prefix}_* (creates its indexes, measures the server
        clock). A context manager; close it before (or after) the client.

        partitions (0.8.0; 1..PARTITIONS_MAX, default 1): the queue is spread over that
        many partitions (README, "Partitioned queues"). The number is fixed when the
        queue is first opened with it: opening it with another is an ArgumentError
        naming partitions (its message says how many the queue has)."""
        from ._queue import Queue

        _args.text("db", db)
        _args.text("prefix", prefix)
        return Queue(self, db, prefix, _args.queue_partitions(partitions))

    @property
    def command_count(self) -> int:
        """Commands this client sent to the server so far."""
        ptr = self._enter()
        try:
            return _raw.mq_client_command_count(ptr)
        finally:
            self._leave()

    @property
    def write_concern_errors(self) -> int:
        """Writes this client sent that the server applied but whose write concern it
        could not confirm (they may be rolled back if the primary fails). Monotonic."""
        ptr = self._enter()
        try:
            return _raw.mq_client_write_concern_errors(ptr)
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
