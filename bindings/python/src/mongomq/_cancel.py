"""CancelToken: ends waiting claims (and Queue.work) from another thread, through one
mq_cancel per waiting call, without touching the queue or other waiters."""

from __future__ import annotations

import threading
from typing import Any, Dict

from . import _raw


class CancelToken:
    """Cancels waiting claims from another thread: ``queue.claim(wait=..., cancel=t)``
    raises Cancelled once ``t.cancel()`` is called (within about 10 ms), and at once
    for a token already cancelled; ``queue.work(handler, cancel=t)`` stops gracefully
    and returns. Other claims and the queue are not touched. One token may serve many
    calls at once; it stays cancelled."""

    __slots__ = ("_lock", "_cancelled", "_c")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._c: Dict[int, Any] = {}  # id -> the mq_cancel of a claim waiting on this token

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            for c in self._c.values():
                _raw.mq_cancel_trigger(c)

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
            _raw.mq_cancel_reset(c)
            return True

    def __repr__(self) -> str:
        return "<mongomq.CancelToken%s>" % (" cancelled" if self._cancelled else "")


class _NoToken:
    """A claim's own cancel when the caller gave no token (signals only)."""

    cancelled = False

    @staticmethod
    def _rearm(c: Any) -> bool:
        _raw.mq_cancel_reset(c)
        return True


NO_TOKEN = _NoToken()
