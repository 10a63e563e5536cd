"""The worker's handle_signals=True: SIGINT and SIGTERM stop it gracefully
(Sidekiq-style), and the handlers that were there before come back when it ends.

Python runs signal handlers on the main thread only, so the handlers are installed
and put back there: by the call that starts the worker, and by whichever of
Worker.stop()/wait()/work() sees it end on the main thread (or by the next signal,
if the worker ended by itself in the meantime).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any, Callable, Dict, Optional

log = logging.getLogger("mongomq")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class SignalGuard:
    """Our handler for SIGINT and SIGTERM while a worker runs. ``on_signal(signum)``
    asks the worker to stop and returns True; it returns False when the worker is
    not running any more (or its stop had begun: a second signal), and the signal
    then goes to the handler that was there before, as if we had never been."""

    def __init__(self, on_signal: Callable[[int], bool]) -> None:
        if not _on_main_thread():
            raise ValueError("handle_signals=True needs the main thread (Python runs signal handlers there); "
                             "start the worker there or stop it yourself")
        self._on_signal = on_signal
        self._prev: Dict[int, Any] = {}
        self._restored = False
        for s in SIGNALS:
            self._prev[s] = signal.getsignal(s)
        try:
            for s in SIGNALS:
                signal.signal(s, self._handle)
        except BaseException:
            self.restore()
            raise

    def _handle(self, signum: int, frame: Any) -> None:
        if self._on_signal(signum):
            return
        prev = self._prev.get(signum)
        self.restore()
        _deliver(prev, signum, frame)

    def restore(self) -> bool:
        """Puts the previous handlers back (main thread only; True once done). A
        handler someone else installed after ours is left in place."""
        if self._restored:
            return True
        if not _on_main_thread():
            return False
        self._restored = True
        for s, prev in self._prev.items():
            try:
                if signal.getsignal(s) == self._handle:
                    # None: a handler not set from Python; the default is the nearest we can put back.
                    signal.signal(s, signal.SIG_DFL if prev is None else prev)
            except (ValueError, OSError):  # the interpreter is finalizing
                pass
        return True


def _deliver(prev: Optional[Any], signum: int, frame: Any) -> None:
    """What the previous handler would have done with the signal."""
    if callable(prev):
        prev(signum, frame)
    elif prev != signal.SIG_IGN:  # SIG_DFL: die of it, as the process would have (restore() put it back)
        os.kill(os.getpid(), signum)


def name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)
