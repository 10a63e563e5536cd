"""Queue.stats(): mq_stats_json parsed into dataclasses (keys as docs/design.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional


@dataclass(frozen=True)
class GroupStats:
    ready: int
    """claimable now"""
    leased: int
    """held by a worker (including groups nacked with a delay)"""
    parked: int
    """waiting for a scheduled head"""
    total: int


@dataclass(frozen=True)
class PriorityStats:
    groups: int
    messages: int


@dataclass(frozen=True)
class Stats:
    queue: str
    """"db.prefix" """
    now: float
    """the queue clock when the stats were taken (epoch seconds)"""
    messages: int
    dead: int
    groups: GroupStats
    oldest_message_age_s: Optional[float]
    priorities: Dict[int, PriorityStats]
    """all five priorities, 0..4"""

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "Stats":
        g = d["groups"]
        age = d.get("oldest_message_age_s")
        return cls(
            queue=d["queue"],
            now=float(d["now"]),
            messages=int(d["messages"]),
            dead=int(d["dead"]),
            groups=GroupStats(ready=int(g["ready"]), leased=int(g["leased"]), parked=int(g["parked"]),
                              total=int(g["total"])),
            oldest_message_age_s=None if age is None else float(age),
            priorities={int(k): PriorityStats(groups=int(v["groups"]), messages=int(v["messages"]))
                        for k, v in sorted(d["priorities"].items(), key=lambda kv: int(kv[0]))},
        )

    def to_dict(self) -> Dict[str, Any]:
        """As the library's JSON object (priority keys as ints)."""
        return dataclasses.asdict(self)


class RepairCounts(NamedTuple):
    """Queue.repair_counts(): the automatic repairs of one Queue object."""

    runs: int
    """repairs run"""
    fixed: int
    """locks they re-created"""
