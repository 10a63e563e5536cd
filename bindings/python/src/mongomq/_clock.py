"""ManualClock: a queue clock kept in C (the shim's mqs_clock) that moves only when
told to, for tests and simulations (mq_queue_set_clock never calls into Python)."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from . import _args, _raw
from ._errors import ClosedError, _from_c
from ._handle import _Handle


def _clock_time(name: str, value: Any) -> float:
    t = _args.instant(name, value)
    _args.check_seconds(name, t, zero_ok=True)
    return t


class ManualClock(_Handle):
    """A clock that moves only when told to (tests and simulations): give it to
    queues with ``queue.set_clock(clock)``; they read it from any thread.

    ``now`` is its time (an aware UTC datetime), ``set(t)`` puts it at t (an aware
    datetime), ``advance(seconds)`` moves it on. The value lives in C: a queue keeps
    every clock it was given until the queue is closed, so closing this handle (or
    losing it to the garbage collector) while queues still run on it is safe; only
    this object's own calls then raise ClosedError. A context manager; closing twice
    does nothing."""

    __slots__ = ()
    _what = "clock"
    _destroy = staticmethod(_raw.mqs_clock_release)

    def __init__(self, start: _dt.datetime) -> None:
        """start: an aware datetime, not before 1970."""
        t = _clock_time("start", start)
        ptr = _raw.mqs_clock_new(t)
        if ptr is None:
            raise MemoryError("mongomq: no memory for a clock")
        super().__init__(ptr)

    @property
    def now(self) -> _dt.datetime:
        """The clock's time (an aware UTC datetime)."""
        ptr = self._enter()
        try:
            return _args.to_datetime(_raw.mqs_clock_now(ptr))
        finally:
            self._leave()

    def set(self, t: _dt.datetime) -> None:
        """Puts the clock at t (an aware datetime, not before 1970); back in time is
        allowed."""
        value = _clock_time("t", t)
        ptr = self._enter()
        try:
            _raw.mqs_clock_set(ptr, value)
        finally:
            self._leave()

    def advance(self, seconds: _args.Duration) -> None:
        """Moves the clock on by seconds (a float, int or timedelta; finite; a
        negative one moves it back)."""
        value = _args.seconds("seconds", seconds)
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
            return "<mongomq.ManualClock now=%s>" % self.now.isoformat()
        except ClosedError:
            return "<mongomq.ManualClock closed>"
