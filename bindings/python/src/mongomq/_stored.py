"""Queue.peek(), Queue.dead_list() and Queue.dead_page(): mq_peek_json /
mq_dead_list_json parsed into StoredEvent values (fields as include/mongomq.h, "Looking
without claiming"), and mq_dead_list_with's page into a DeadPage."""

from __future__ import annotations

import base64
import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._args import to_datetime


@dataclass(frozen=True)
class StoredEvent:
    """One event as stored: nothing was claimed to read it. Times are aware UTC
    datetimes on the queue clock."""

    seq: int
    group: str
    priority: int
    """the group's priority when the event was published"""
    attempts: Optional[int]
    """deliveries recorded with the event (dead letters); None when none was"""
    published_at: Optional[_dt.datetime]
    not_before: Optional[_dt.datetime]
    """None unless the event was scheduled"""
    dead_at: Optional[_dt.datetime]
    """dead letters only; None otherwise"""
    event: bytes
    """the published bytes (text events as their UTF-8 bytes)"""
    attrs: Dict[str, str] = field(default_factory=dict, hash=False)
    """the event's attributes (0.7.0), in publish order; {} when it has none (left
    out of the hash, so that a StoredEvent stays hashable)"""

    @property
    def text(self) -> str:
        """The event decoded as UTF-8 (UnicodeDecodeError, a ValueError, when it is not)."""
        return self.event.decode("utf-8")

    def json(self, **kwargs: Any) -> Any:
        """The event parsed as JSON (json.loads of ``text``)."""
        return json.loads(self.text, **kwargs)

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "StoredEvent":
        ev = d.get("event")
        if isinstance(ev, dict):
            data = base64.b64decode(ev["base64"], validate=True)
        elif isinstance(ev, str):
            # surrogatepass: a text event is UTF-8 the library checked; keep it exact.
            data = ev.encode("utf-8", "surrogatepass")
        else:
            data = b""

        def when(key: str) -> Optional[_dt.datetime]:
            v = d.get(key)
            return None if v is None else to_datetime(float(v))

        def count(key: str) -> Optional[int]:
            v = d.get(key)
            return None if v is None else int(v)

        return cls(
            seq=int(d["seq"]),
            group=str(d.get("group", "")),
            priority=int(d.get("priority", 0)),
            attempts=count("attempts"),
            published_at=when("published_at"),
            not_before=when("not_before"),
            dead_at=when("dead_at"),
            event=data,
            attrs={str(k): str(v) for k, v in (d.get("attrs") or {}).items()},
        )


def _parse(text: str) -> List[StoredEvent]:
    return [StoredEvent._from_json(d) for d in json.loads(text)]


@dataclass(frozen=True)
class DeadPage:
    """A page of the dead letters (Queue.dead_page()): the letters, oldest seq first,
    the offset they start at, and how many dead letters there are in all."""

    letters: List[StoredEvent]
    offset: int
    total: int

    @classmethod
    def _parse(cls, text: str) -> "DeadPage":
        d = json.loads(text)
        return cls(letters=[StoredEvent._from_json(e) for e in d["letters"]], offset=int(d["offset"]),
                   total=int(d["total"]))
