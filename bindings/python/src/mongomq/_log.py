"""libmongoc's log in Python: by default into the "mongomq" logger of the logging
module (installed by the first Client), or handed to a function of the program's
(set_log_handler).

The C library never calls into Python: the SWIG shim's handler (installed with
mq_log_set_handler, process-wide) buffers libmongoc's lines in C, up to 1024 (beyond,
the oldest are dropped), and one daemon thread of this package ("mongomq-log") waits
for them without the GIL and calls the current Python handler with each.
"""

from __future__ import annotations

import atexit
import logging
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
# Whether the log was decided (the default installed, kept by the environment, or a
# handler set): the first Client then leaves it alone.
_decided = False

KEEP_ENV = "MONGOMQ_LIBMONGOC_LOG"
"""MONGOMQ_LIBMONGOC_LOG=keep: the first Client does not install the default, so a
program that configured libmongoc's log itself keeps its handler."""

logger = logging.getLogger("mongomq")

# libmongoc's levels (0 error, 1 critical, 2 warning, 3 message, 4 info, 5 debug,
# 6 trace) as logging's: the same map in every binding.
_LEVELS = (logging.ERROR, logging.ERROR, logging.WARNING, logging.INFO, logging.INFO,
           logging.DEBUG, logging.DEBUG)


def log_to_logging(level: int, domain: str, message: str) -> None:
    """The default handler: each line to the "mongomq" logger, at logging's level for
    libmongoc's (0, 1 error; 2 warning; 3, 4 info; 5, 6 debug), as "DOMAIN: MESSAGE"
    with the domain also in the record's ``mongoc_domain``. Quiet by default: with
    logging unconfigured, only warnings and above show (on stderr); debug lines show
    only when the program asks for them."""
    py_level = _LEVELS[level] if 0 <= level < len(_LEVELS) else logging.ERROR
    if logger.isEnabledFor(py_level):
        logger.log(py_level, "%s: %s", domain, message, extra={"mongoc_domain": domain})


def _install_default() -> None:
    """Called by every Client before it is made: the first one routes libmongoc's log
    into logging, unless a handler was set already or MONGOMQ_LIBMONGOC_LOG=keep."""
    global _decided
    if _decided:
        return
    with _lock:
        if _decided:
            return
        _decided = True
        if os.environ.get(KEEP_ENV, "").strip().lower() == "keep":
            return
        _set(log_to_logging)


def set_log_handler(handler: Optional[LogHandler]) -> None:
    """Routes libmongoc's log (the MongoDB C driver under libmongomq: connection,
    server selection and URI warnings...) to ``handler(level, domain, message)``, or,
    with None, silences it. Without a call, the first Client routes it into the
    "mongomq" logger (``log_to_logging``); a call before the first Client is what the
    program keeps (``set_log_handler(None)``: silence).

    Process-wide: this replaces libmongoc's own handler (which prints to stderr) for
    every user of libmongoc in the process, and a later call replaces this one. The
    handler runs on one daemon thread of the package ("mongomq-log"), one line at a
    time, in order; an exception it raises goes to ``sys.unraisablehook`` (or is
    printed with its traceback) and delivery goes on. After ``set_log_handler(None)``
    (or another handler) returns, the handler it replaced is not called again."""
    global _decided
    if handler is not None and not callable(handler):
        raise TypeError("handler must be callable or None, not %s" % type(handler).__name__)
    with _lock:
        _decided = True
        _set(handler)


def _set(handler: Optional[LogHandler]) -> None:
    global _handler, _thread
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
        if line is not None:
            _deliver(line)


def _deliver(line: str) -> None:
    level, domain, message = _parse(line)
    failed: Optional[BaseException] = None
    with _lock:
        handler = _handler
        if handler is None:  # silenced after the line was taken
            return
        try:
            handler(level, domain, message)
        except BaseException as exc:  # noqa: B036 - a handler's SystemExit must not end delivery
            failed = exc
    if failed is not None:
        _report(failed, handler)


@atexit.register
def _flush_at_exit() -> None:
    # The log thread is a daemon: lines libmongoc wrote just before the program ended
    # (a URI warning, the last connection error) are delivered here, not lost.
    if _handler is None:
        return
    try:
        for _ in range(_raw_buffer_max):
            line = _raw.mqs_log_next(0.0)
            if line is None:
                break
            _deliver(line)
    except Exception:  # the interpreter is going: nothing left to tell
        pass


_raw_buffer_max = 1024  # the shim's buffer (MQS_LOG_MAX)


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
