"""Batch: events published together (mq_batch; mq_batch_add_with through the shim's
mqs_batch_add_at, so a batch event may be scheduled and carry a dedup_key and
attributes). A batch also keeps what each add gave C, so that a queue with
telemetry can publish a copy of it whose events carry the trace context."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterable, List, Optional, Tuple

from . import _args, _raw
from ._handle import _Handle


class Batch(_Handle):
    """Events to publish together with Queue.publish_batch (3 server commands for the
    whole batch). Not thread-safe while being filled; may be published again.

    ``Batch(events)`` adds each of an iterable of tuples (group, event[, priority[,
    not_before[, dedup_key[, attrs]]]])."""

    __slots__ = ("_keyed", "_adds")
    _what = "batch"
    _destroy = staticmethod(_raw.mq_batch_destroy)

    def __init__(self, events: Iterable[Tuple[Any, ...]] = ()) -> None:
        self._keyed = False  # some event has a dedup_key: publish_batch asks for each outcome
        # Each add's arguments to mqs_batch_add_at, the packed attributes last: what
        # _with_attrs copies (the event's bytes are referenced, or copied when they were
        # a mutable buffer, which C had copied at the add).
        self._adds: List[Tuple[Any, ...]] = []
        super().__init__(_raw.mq_batch_new())
        for item in events:
            if not isinstance(item, tuple) or not 2 <= len(item) <= 6:
                self.close()
                raise TypeError("each event must be a tuple (group, event[, priority[, not_before[, dedup_key[, "
                                "attrs]]]])")
            try:
                self.add(item[0], item[1], priority=item[2] if len(item) > 2 else 0,
                         not_before=item[3] if len(item) > 3 else None,
                         dedup_key=item[4] if len(item) > 4 else None,
                         attrs=item[5] if len(item) > 5 else None)
            except BaseException:
                self.close()
                raise

    def add(self, group: str, event: _args.Event, *, priority: int = 0,
            not_before: Optional[_dt.datetime] = None, dedup_key: Optional[str] = None,
            attrs: Optional[_args.Attrs] = None) -> "Batch":
        """Adds an event (checked as publish would; the bytes are copied). not_before
        schedules it, as publish's does: a group the batch creates starts parked
        until its first event's time. dedup_key: as publish's (the event is added
        only if no event holds the key; two events of one batch with one key: the
        later is the duplicate). attrs: as publish's (0.7.0), the event's own."""
        _args.text("group", group)
        event = _args.event(event)
        _args.integer("priority", priority)
        when = _args.not_before(not_before)
        has_key = _args.dedup_key(dedup_key)
        packed = _args.attrs(attrs)
        ptr = self._enter()
        try:
            _raw.mqs_batch_add_at(ptr, group, event, priority, when, has_key, dedup_key, packed)
            if has_key:
                self._keyed = True
            self._adds.append((group, event if type(event) is bytes else bytes(event), priority, when, has_key,
                               dedup_key, packed))
        finally:
            self._leave()
        return self

    def _with_attrs(self, inject: Callable[[bytes], bytes]) -> "Batch":
        """A new Batch of the same events, each event's packed attributes passed
        through inject (telemetry's: the trace context added)."""
        self._check_open()
        copy = Batch()
        try:
            ptr = copy._enter()
            try:
                for group, event, priority, when, has_key, dedup_key, packed in self._adds:
                    _raw.mqs_batch_add_at(ptr, group, event, priority, when, has_key, dedup_key, inject(packed))
            finally:
                copy._leave()
        except BaseException:
            copy.close()
            raise
        copy._keyed = self._keyed
        return copy

    def __len__(self) -> int:
        ptr = self._enter()
        try:
            return _raw.mq_batch_count(ptr)
        finally:
            self._leave()

    def _free(self, ptr: Any) -> None:
        self._adds = []  # the events' bytes go with the C batch
        self._destroy(ptr)

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<mongomq.Batch closed>"
        return "<mongomq.Batch of %d>" % len(self)
