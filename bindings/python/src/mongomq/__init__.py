"""mongomq: a multi-machine queue with per-group FIFO exclusivity on MongoDB.

The Python package of libmongomq (the C library does the work; the extension
mongomq._raw is private). Start with::

    import mongomq

    with mongomq.Client("mongodb://localhost:27017") as client, client.queue("shop", "orders") as queue:
        queue.publish("customer-17", b"paid")
        lease = queue.claim(visibility=30.0, wait=5.0)
        if lease is not None:
            queue.ack(lease)
"""

from __future__ import annotations

from . import _raw
from ._batch import Batch
from ._cancel import CancelToken
from ._client import Client
from ._clock import ManualClock
from ._errors import (
    ArgumentError,
    Cancelled,
    ClosedError,
    ConnectError,
    Error,
    Interrupted,
    LeaseLost,
)
from ._groups import GroupInfo, GroupsPage, GroupsSort, GroupState
from ._lease import Lease
from ._log import LogHandler, log_to_logging, set_log_handler
from ._published import Published, PublishedBatch
from ._queue import DedupScope, Queue, group_partition
from ._stats import GroupStats, PriorityStats, RepairCounts, Stats
from ._stored import DeadPage, StoredEvent
from ._worker import Worker, backoff_delay

__version__ = "0.8.0"

PRIORITY_MIN = _raw.MQ_PRIORITY_MIN
PRIORITY_MAX = _raw.MQ_PRIORITY_MAX
BATCH_MAX = _raw.MQ_BATCH_MAX
DEDUP_KEY_MAX = _raw.MQ_DEDUP_KEY_MAX
ATTR_MAX = _raw.MQ_ATTR_MAX
ATTR_KEY_MAX = _raw.MQ_ATTR_KEY_MAX
ATTR_VALUE_MAX = _raw.MQ_ATTR_VALUE_MAX
PARTITIONS_MAX = _raw.MQ_PARTITIONS_MAX


def library_version() -> str:
    """The version of the libmongomq this package runs on ("0.8.0")."""
    return _raw.mq_version()


__all__ = [
    "ATTR_KEY_MAX",
    "ATTR_MAX",
    "ATTR_VALUE_MAX",
    "ArgumentError",
    "BATCH_MAX",
    "Batch",
    "CancelToken",
    "Cancelled",
    "Client",
    "ClosedError",
    "ConnectError",
    "DEDUP_KEY_MAX",
    "DeadPage",
    "DedupScope",
    "Error",
    "GroupInfo",
    "GroupState",
    "GroupStats",
    "GroupsPage",
    "GroupsSort",
    "Interrupted",
    "Lease",
    "LeaseLost",
    "LogHandler",
    "ManualClock",
    "PARTITIONS_MAX",
    "PRIORITY_MAX",
    "PRIORITY_MIN",
    "PriorityStats",
    "Published",
    "PublishedBatch",
    "Queue",
    "RepairCounts",
    "Stats",
    "StoredEvent",
    "Worker",
    "backoff_delay",
    "group_partition",
    "library_version",
    "log_to_logging",
    "set_log_handler",
]
