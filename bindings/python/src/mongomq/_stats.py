"""Queue.stats(): mq_stats_json parsed into dataclasses (keys as docs/design.md), and
Queue.repair_counts()'s RepairCounts."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from dataclasses import dataclass
from typing import Any, Dict, Optional

from ._args import to_datetime


@dataclass(frozen=True)
class GroupStats:
    ready: int
    """claimable now"""
    leased: int
    """held by a worker (including groups nacked with a delay)"""
    parked: int
    """waiting for a scheduled head"""
    paused: int
    """paused (Queue.pause_group), whatever their lease or schedule; not counted in
    ready, leased or parked"""
    total: int


@dataclass(frozen=True)
class PriorityStats:
    groups: int
    messages: int


@dataclass(frozen=True)
class Stats:
    queue: str
    """"db.prefix" """
    now: _dt.datetime
    """the queue clock when the stats were taken (an aware UTC datetime)"""
    messages: int
    dead: int
    published: int
    """events ever published to the queue (its seq counter; a requeued dead letter
    counts again)"""
    groups: GroupStats
    oldest_message_age_s: Optional[float]
    """seconds"""
    priorities: Dict[int, PriorityStats]
    """all five priorities, 0..4"""
    partitions: int = 1
    """the queue's number of partitions (0.8.0; Queue.partitions)"""

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "Stats":
        g = d["groups"]
        age = d.get("oldest_message_age_s")
        return cls(
            queue=d["queue"],
            now=to_datetime(float(d["now"])),
            messages=int(d["messages"]),
            dead=int(d["dead"]),
            published=int(d["published"]),
            groups=GroupStats(ready=int(g["ready"]), leased=int(g["leased"]), parked=int(g["parked"]),
                              paused=int(g["paused"]), total=int(g["total"])),
            oldest_message_age_s=None if age is None else float(age),
            priorities={int(k): PriorityStats(groups=int(v["groups"]), messages=int(v["messages"]))
                        for k, v in sorted(d["priorities"].items(), key=lambda kv: int(kv[0]))},
            partitions=int(d.get("partitions", 1)),
        )

    def to_dict(self) -> Dict[str, Any]:
        """As the library's JSON object (priority keys as ints; now a datetime)."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RepairCounts:
    """Queue.repair_counts(): the automatic repairs of one Queue object."""

    runs: int
    """repairs run"""
    fixed: int
    """locks they re-created"""
