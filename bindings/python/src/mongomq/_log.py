"""libmongoc's log, handed to a Python function: set_log_handler.

The C library never calls into Python: the SWIG shim's handler (installed with
mq_log_set_handler, process-wide) buffers libmongoc's lines in C, up to 1024 (beyond,
the oldest are dropped), and one daemon thread of this package ("mongomq-log") waits
for them without the GIL and calls the current Python handler with each.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any, Callable, Optional, Tuple

from . import _raw

LogHandler = Callable[[int, str, str], Any]
"""handler(level, domain, message); levels as libmongoc's: 0 error, 1 critical,
2 warning, 3 message, 4 info, 5 debug, 6 trace."""

# Held by set_log_handler and around each call of the handler, so that once
# set_log_handler returns, the handler it replaced is not called again.
_lock = threading.RLock()
_handler: Optional[LogHandler] = None
_thread: Optional[threading.Thread] = None
_POLL_S = 0.25


def set_log_handler(handler: Optional[LogHandler]) -> None:
    """Routes libmongoc's log (the MongoDB C driver under libmongomq: connection,
    server selection and URI warnings...) to ``handler(level, domain, message)``, or,
    with None, silences it.

    Process-wide: this replaces libmongoc's own handler (which prints to stderr) for
    every user of libmongoc in the process, and a later call replaces this one. The
    handler runs on one daemon thread of the package ("mongomq-log"), one line at a
    time, in order; an exception it raises goes to ``sys.unraisablehook`` (or is
    printed with its traceback) and delivery goes on. After ``set_log_handler(None)``
    (or another handler) returns, the handler it replaced is not called again."""
    global _handler, _thread
    if handler is not None and not callable(handler):
        raise TypeError("handler must be callable or None, not %s" % type(handler).__name__)
    with _lock:
        _handler = handler
        if handler is None:
            _raw.mqs_log_silence()
            return
        _raw.mqs_log_capture()
        if _thread is None or not _thread.is_alive():
            thread = threading.Thread(target=_drain, name="mongomq-log", daemon=True)
            thread.start()
            _thread = thread


def _parse(line: str) -> Tuple[int, str, str]:
    parts = line.split("\t", 2)  # the message may hold tabs of its own
    while len(parts) < 3:
        parts.append("")
    try:
        level = int(parts[0])
    except ValueError:
        level = 0
    return level, parts[1], parts[2]


def _drain() -> None:
    global _thread
    while True:
        line = _raw.mqs_log_next(_POLL_S)  # waits without the GIL
        with _lock:
            if _handler is None:  # silenced: this thread ends; the next handler starts one
                if _thread is threading.current_thread():
                    _thread = None
                return
        if line is None:
            continue
        level, domain, message = _parse(line)
        failed: Optional[BaseException] = None
        with _lock:
            handler = _handler
            if handler is None:  # silenced after the line was taken
                continue
            try:
                handler(level, domain, message)
            except BaseException as exc:  # noqa: B036 - a handler's SystemExit must not end delivery
                failed = exc
        if failed is not None:
            _report(failed, handler)
            failed = None


class _Unraisable:
    """What sys.unraisablehook gets (the attributes of sys.UnraisableHookArgs)."""

    __slots__ = ("exc_type", "exc_value", "exc_traceback", "err_msg", "object")

    def __init__(self, exc: BaseException, obj: Any) -> None:
        self.exc_type = type(exc)
        self.exc_value = exc
        self.exc_traceback = exc.__traceback__
        self.err_msg = "Exception ignored in mongomq log handler"
        self.object = obj


def _report(exc: BaseException, handler: Any) -> None:
    try:
        hook = sys.unraisablehook
        # The default hook takes only its own C type; a hook the application (or
        # pytest) installed gets an object with the same attributes.
        if hook is not sys.__unraisablehook__:
            try:
                hook(_Unraisable(exc, handler))
                return
            except Exception:
                pass
        sys.stderr.write("Exception ignored in mongomq log handler: %r\n" % (handler,))
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    except Exception:  # stderr closed at exit...: nothing left to tell
        pass


def _after_fork_in_child() -> None:
    # The parent's log thread does not exist here, and it may have held the lock.
    global _lock, _thread
    _lock = threading.RLock()
    _thread = None
    if _handler is not None:
        thread = threading.Thread(target=_drain, name="mongomq-log", daemon=True)
        thread.start()
        _thread = thread


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
