"""Lease: one claimed group's event(s) (mq_lease), read once at claim time; their
attributes (0.7.0) read from the lease when asked for."""

from __future__ import annotations

import datetime as _dt
import json as _json
from typing import Any, Dict, Optional, Tuple

from . import _raw
from ._args import to_datetime
from ._errors import ClosedError
from ._handle import _Handle


class Lease(_Handle):
    """One claimed group: its head event (or the first `count` events). A plain value:
    it may outlive its queue; close() (or the GC) frees it. Its fields are read once,
    at claim time, except deadline, which ack/nack/extend move, and the attributes,
    read from the lease when asked for (no server command)."""

    __slots__ = ("_seq", "_group", "_attempts", "_partition", "_events", "_seqs")
    _what = "lease"
    _destroy = staticmethod(_raw.mq_lease_destroy)

    def __init__(self, ptr: Any) -> None:
        super().__init__(ptr)
        self._seq: int = _raw.mq_lease_seq(ptr)
        self._group: str = _raw.mq_lease_group(ptr)
        self._attempts: int = _raw.mq_lease_attempts(ptr)
        self._partition: int = _raw.mq_lease_partition(ptr)
        n = _raw.mq_lease_count(ptr)
        if n == 1:
            self._events: Tuple[bytes, ...] = (_raw.mqs_lease_event_at(ptr, 0),)
            self._seqs: Tuple[int, ...] = (self._seq,)
        else:
            self._events = tuple(_raw.mqs_lease_event_at(ptr, i) for i in range(n))
            self._seqs = tuple(_raw.mq_lease_seq_at(ptr, i) for i in range(n))

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
    def text(self) -> str:
        """The head event as text: its bytes decoded as UTF-8 (UnicodeDecodeError, a
        ValueError, when they are not UTF-8)."""
        self._open()
        return self._events[0].decode("utf-8")

    def json(self, **kwargs: Any) -> Any:
        """The head event parsed as JSON (json.loads of ``text``; keyword arguments go to
        json.loads). A ValueError when it is not UTF-8 JSON."""
        return _json.loads(self.text, **kwargs)

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
    def partition(self) -> int:
        """The partition of the lease's group (0.8.0): group_partition(group,
        queue.partitions); 0 in a queue of one partition."""
        self._open()
        return self._partition

    @property
    def attrs(self) -> Dict[str, str]:
        """The head event's attributes (0.7.0): a new dict, in publish order ({} when
        it has none)."""
        return self.attrs_at(0)

    def attrs_at(self, i: int) -> Dict[str, str]:
        """Event i's attributes (0 is the head; negative counts from the end, as in
        ``events``): a new dict, in publish order. IndexError out of range."""
        n = len(self._events)
        if type(i) is not int and (isinstance(i, bool) or not isinstance(i, int)):
            raise TypeError("i must be int, not %s" % type(i).__name__)
        if not -n <= i < n:
            raise IndexError("event %d of a lease of %d" % (i, n))
        i %= n
        ptr = self._enter()
        try:
            return {_raw.mqs_lease_attr_key(ptr, i, j): _raw.mqs_lease_attr_value(ptr, i, j)
                    for j in range(_raw.mq_lease_attr_count(ptr, i))}
        finally:
            self._leave()

    def attr(self, key: str) -> Optional[str]:
        """The value of the head event's attribute `key`; None when it has none."""
        if type(key) is not str and not isinstance(key, str):
            raise TypeError("key must be str, not %s" % type(key).__name__)
        if "\0" in key:
            return None  # no key holds a NUL (and C would read the key up to it)
        ptr = self._enter()
        try:
            return _raw.mq_lease_attr(ptr, 0, key)
        finally:
            self._leave()

    @property
    def token(self) -> str:
        ptr = self._enter()
        try:
            return _raw.mq_lease_token(ptr)
        finally:
            self._leave()

    @property
    def deadline(self) -> _dt.datetime:
        """When the lease runs out, on the queue clock (an aware UTC datetime; see
        Queue.now)."""
        ptr = self._enter()
        try:
            return to_datetime(_raw.mq_lease_deadline(ptr))
        finally:
            self._leave()

    def _free(self, ptr: Any) -> None:
        self._destroy(ptr)

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<mongomq.Lease closed>"
        return "<mongomq.Lease group=%r seq=%d attempts=%d count=%d>" % (
            self._group, self._seq, self._attempts, len(self._events))
