"""The exceptions of mongomq, and the factory the C extension raises them with."""

from __future__ import annotations

import re
from typing import Any, Optional, Tuple

# mq_status values (include/mongomq.h); also in mongomq._raw as MQ_*.
OK = 0
EMPTY = 1
LEASE_LOST = 2
INTERRUPTED = 3
CANCELLED = 4
ERR_ARG = -1
ERR_CONNECT = -2
ERR_SERVER = -3
ERR_NOMEM = -4
ERR_INTERNAL = -5

_STATUS_NAMES = {
    OK: "MQ_OK",
    EMPTY: "MQ_EMPTY",
    LEASE_LOST: "MQ_LEASE_LOST",
    INTERRUPTED: "MQ_INTERRUPTED",
    CANCELLED: "MQ_CANCELLED",
    ERR_ARG: "MQ_ERR_ARG",
    ERR_CONNECT: "MQ_ERR_CONNECT",
    ERR_SERVER: "MQ_ERR_SERVER",
    ERR_NOMEM: "MQ_ERR_NOMEM",
    ERR_INTERNAL: "MQ_ERR_INTERNAL",
}


class Error(Exception):
    """Every error of mongomq. ``status`` is the C library's mq_status (an int; its
    name in ``status_name``), ``server_code`` MongoDB's error code or 0."""

    def __init__(self, message: str, status: int = ERR_INTERNAL, server_code: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.server_code = server_code

    @property
    def status_name(self) -> str:
        return _STATUS_NAMES.get(self.status, "MQ_UNKNOWN")

    def __reduce__(self) -> Tuple[Any, ...]:  # picklable with its fields (multiprocessing, logging)
        return (type(self), (self.message, self.status, self.server_code))


class LeaseLost(Error):
    """ack, nack, unclaim or extend of a lease that expired and was taken over (or whose
    group was purged). An ack still removed the event: it was processed (at-least-once);
    an unclaim changed nothing."""


class ArgumentError(Error, ValueError):
    """A bad argument (out of range, empty, not UTF-8...). Also a ValueError.
    ``argument`` names it as the Python call does."""

    def __init__(self, message: str, status: int = ERR_ARG, server_code: int = 0,
                 argument: Optional[str] = None) -> None:
        super().__init__(message, status, server_code)
        self.argument = argument

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.message, self.status, self.server_code, self.argument))


class ConnectError(Error):
    """The server could not be reached (within serverSelectionTimeoutMS)."""


class Interrupted(Error):
    """The queue was interrupted (Queue.interrupt()): its waiting claims end for good."""


class Cancelled(Error):
    """A waiting claim was cancelled through its CancelToken."""


class ClosedError(Error, ValueError):
    """A call on a closed Client, Queue, Lease, Batch or ManualClock (as a closed file is a
    ValueError in Python, this is one too)."""

    def __init__(self, message: str, status: int = ERR_ARG, server_code: int = 0) -> None:
        super().__init__(message, status, server_code)


# The C library names its arguments as the C API does; say the Python name.
_C_TO_PY = {
    "group_id": "group",
    "event": "data",
    "event_len": "data",
    "priority": "priority",
    "visibility_s": "visibility",
    "min_priority": "min_priority",
    "timeout_s": "wait",
    "delay_s": "delay",
    "max_events": "max_events",
    "not_before_epoch_s": "at",
    "worker_id": "worker_id",
    "db_name": "db",
    "prefix": "prefix",
    "uri": "uri",
    "max_attempts": "max_attempts",
    "seq": "seq",
    "batch": "batch",
}
# Messages the package itself writes already use the Python names.
_C_TO_PY.update({name: name for name in list(_C_TO_PY.values()) + ["at", "wait", "delay", "visibility", "start", "t", "seconds"]})
_ARG_RE = re.compile(r"^(?:(mq_\w+): )?(\w+)\b")


def _from_c(status: int, server_code: int, message: str) -> Error:
    """The factory mongomq._raw raises every failed call's exception with."""
    if status == ERR_ARG:
        m = _ARG_RE.match(message)
        argument = None
        if m:
            c_name = m.group(2)
            argument = _C_TO_PY.get(c_name)
            if argument is not None and argument != c_name:
                message = "%s (%s)" % (argument + message[m.end(2):], message)
        return ArgumentError(message, status, server_code, argument)
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status, server_code)


_BY_STATUS = {
    LEASE_LOST: LeaseLost,
    ERR_CONNECT: ConnectError,
    INTERRUPTED: Interrupted,
    CANCELLED: Cancelled,
}
