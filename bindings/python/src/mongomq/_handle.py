"""The guard every C handle of the package shares (Client, Queue, Lease, Batch,
ManualClock): one owner, freed exactly once, never while a call is using it.

Every object owns one C handle and frees it exactly once: in close(), or when the
garbage collector reclaims it (whatever the order). A call on a closed object raises
ClosedError. Closing never blocks: it stops new calls at once (a queue first
interrupts its waiting claims), and a handle that calls in other threads are still
using is freed when the last of them returns, because the C library forbids
destroying a handle that a call is using.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from ._errors import ClosedError

_H = TypeVar("_H", bound="_Handle")


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
