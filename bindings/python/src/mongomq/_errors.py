"""The exceptions of mongomq, and the factory the C extension raises them with
(registered here with mqs_py_set_error_factory). Status numbers are the C library's
(mongomq._raw.MQ_*) and their names come from it (mq_status_name): the package keeps
no table of its own."""

from __future__ import annotations

import re
from typing import Any, Optional, Tuple

from . import _raw


class Error(Exception):
    """Every error of mongomq. ``status`` is the C library's mq_status (an int; its
    name, from the library, in ``status_name``), or None for an error of this package
    that no C call returned (ClosedError); ``server_code`` is MongoDB's error code or 0."""

    def __init__(self, message: str, status: Optional[int] = None, server_code: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.server_code = server_code

    @property
    def status_name(self) -> Optional[str]:
        """"MQ_LEASE_LOST", "MQ_ERR_CONNECT"...: mq_status_name(status); None without a status."""
        return None if self.status is None else _raw.mq_status_name(self.status)

    def __reduce__(self) -> Tuple[Any, ...]:  # picklable with its fields (multiprocessing, logging)
        return (type(self), (self.message, self.status, self.server_code))


class LeaseLost(Error):
    """ack, nack, unclaim or extend of a lease that expired and was taken over (or whose
    group was purged). An ack still removed the event: it was processed (at-least-once);
    an unclaim changed nothing."""


class ArgumentError(Error, ValueError):
    """A bad argument (out of range, empty, not UTF-8, a naive datetime...). Also a
    ValueError. ``argument`` names it as the Python call does."""

    def __init__(self, message: str, status: Optional[int] = _raw.MQ_ERR_ARG, server_code: int = 0,
                 argument: Optional[str] = None) -> None:
        super().__init__(message, status, server_code)
        self.argument = argument

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.message, self.status, self.server_code, self.argument))


class ConnectError(Error):
    """The server could not be reached (within serverSelectionTimeoutMS), or a write's
    outcome is unknown (include/mongomq.h says, call by call, what a retry does)."""


class Interrupted(Error):
    """The queue was interrupted (Queue.interrupt()): its waiting claims end for good."""


class Cancelled(Error):
    """A waiting claim was cancelled through its CancelToken."""


class ClosedError(Error, ValueError):
    """A call on a closed Client, Queue, Lease, Batch or ManualClock (as a closed file is a
    ValueError in Python, this is one too). No C call returned it: ``status`` is None."""

    def __init__(self, message: str, status: Optional[int] = None, server_code: int = 0) -> None:
        super().__init__(message, status, server_code)


# The C library names its arguments as the C API does; say the Python name.
_C_TO_PY = {
    "group_id": "group",
    "event": "event",
    "event_len": "event",
    "priority": "priority",
    "visibility_s": "visibility",
    "min_priority": "min_priority",
    "timeout_s": "wait",
    "delay_s": "delay",
    "max_events": "max_events",
    "not_before": "not_before",
    "not_before_epoch_s": "not_before",
    "worker_id": "worker_id",
    "db_name": "db",
    "prefix": "prefix",
    "uri": "uri",
    "max_attempts": "max_attempts",
    "seq": "seq",
    "batch": "batch",
    "held_longer_than_s": "held_longer_than",
    "parked_beyond_s": "parked_beyond",
    "dedup_key": "dedup_key",
    "attrs": "attrs",
    "partitions": "partitions",
    "partition_count": "partitions",
}
# Where the Python name alone would misread the C message: a claim's partition_count
# is the length of the list given as partitions.
_C_PHRASE = {"partition_count": "len(partitions)"}
# Messages the package itself writes already use the Python names.
_C_TO_PY.update({name: name for name in list(_C_TO_PY.values()) + [
    "wait", "delay", "visibility", "start", "t", "seconds", "limit",
    "states", "id_prefix", "min_attempts", "sort", "after", "offset", "scope"]})
_ARG_RE = re.compile(r"^(?:(mq_\w+): )?(\w+)\b")
# A queue opened with another number of partitions than it has (0.8.0): the message
# names the queue first, then the partitions.
_PARTITIONS_RE = re.compile(r"^mq_queue_new\w*: queue \S+ (?:has \d+ partitions|already holds events of one partition)")


def _from_c(status: int, server_code: int, message: str) -> Error:
    """The factory mongomq._raw raises every failed call's exception with."""
    if status == _raw.MQ_ERR_ARG:
        m = _ARG_RE.match(message)
        argument = None
        if _PARTITIONS_RE.match(message):
            argument = "partitions"
        elif m:
            c_name = m.group(2)
            argument = _C_TO_PY.get(c_name)
            if argument is not None and argument != c_name:
                message = "%s (%s)" % (_C_PHRASE.get(c_name, argument) + message[m.end(2):], message)
        return ArgumentError(message, status, server_code, argument)
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status, server_code)


_BY_STATUS = {
    _raw.MQ_LEASE_LOST: LeaseLost,
    _raw.MQ_ERR_CONNECT: ConnectError,
    _raw.MQ_INTERRUPTED: Interrupted,
    _raw.MQ_CANCELLED: Cancelled,
}

_raw.mqs_py_set_error_factory(_from_c)
