"""Queue.groups(): a page of the queue's groups (mq_groups_json, include/mongomq.h
"Groups: listing, pausing; dead letters by page") parsed into GroupsPage and GroupInfo,
and its keyword options turned into the shim's scalars (mq_groups_opts)."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Literal, Optional, Tuple, Union

from . import _args, _raw
from ._errors import _from_c

GroupState = Literal["ready", "leased", "parked", "paused"]
"""A group's state as the library names it (GroupInfo.state, groups(states=...))."""
GroupsSort = Literal["id", "due"]
"""The order of a page: by group id, or by when each group is due (the claims' order)."""

_STATE_FLAGS = {
    "ready": _raw.MQ_GROUP_READY,
    "leased": _raw.MQ_GROUP_LEASED,
    "parked": _raw.MQ_GROUP_PARKED,
    "paused": _raw.MQ_GROUP_PAUSED,
}
_SORTS = {"id": _raw.MQ_GROUPS_SORT_ID, "due": _raw.MQ_GROUPS_SORT_DUE}
_INT_MAX = 2**31 - 1  # mq_groups_opts.min_attempts is a C int


@dataclass(frozen=True)
class GroupInfo:
    """One group as Queue.groups() shows it: its lock, and its events counted. Instants
    are aware UTC datetimes on the queue clock; durations are seconds (a float), with
    the library's names."""

    group: str
    state: GroupState
    """"ready", "leased", "parked" or "paused", at the page's ``now``"""
    paused: bool
    """whether it is paused (then ``state`` is "paused", whatever its lease or schedule)"""
    priority: int
    """its priority, 0..4, paused or not"""
    attempts: int
    """deliveries of its head so far"""
    available_at: Optional[_dt.datetime]
    """when it is due (the lease's deadline while held)"""
    holder: Optional[str]
    """the worker id of its lease (its last holder's once the lease ran out), or None"""
    held_for_s: Optional[float]
    """seconds since the current lease was taken; None unless held"""
    lease_deadline: Optional[_dt.datetime]
    """when the current lease runs out; None unless held"""
    backlog: int
    """events in the group"""
    head: Optional[int]
    """the seq of its oldest event, or None (no events)"""
    head_age_s: Optional[float]
    """seconds since the head was published (as the library reports it: two machines'
    clocks may make it a little negative); None without a head or its publish time"""

    @classmethod
    def _from_json(cls, d: Dict[str, Any]) -> "GroupInfo":
        def when(key: str) -> Optional[_dt.datetime]:
            v = d.get(key)
            return None if v is None else _args.to_datetime(float(v))

        def secs(key: str) -> Optional[float]:
            v = d.get(key)
            return None if v is None else float(v)

        head = d.get("head")
        holder = d.get("holder")
        return cls(
            group=str(d["group"]),
            state=d["state"],
            paused=bool(d["paused"]),
            priority=int(d["priority"]),
            attempts=int(d["attempts"]),
            available_at=when("available_at"),
            holder=None if holder is None else str(holder),
            held_for_s=secs("held_for_s"),
            lease_deadline=when("lease_deadline"),
            backlog=int(d["backlog"]),
            head=None if head is None else int(head),
            head_age_s=secs("head_age_s"),
        )


@dataclass(frozen=True)
class GroupsPage:
    """One page of Queue.groups(): the groups in the options' order, the cursor of the
    next page (give it as ``after=``; None on the last page), and the queue clock the
    states were judged at."""

    groups: List[GroupInfo]
    next: Optional[str]
    now: _dt.datetime

    @classmethod
    def _parse(cls, text: str) -> "GroupsPage":
        d = json.loads(text)
        nxt = d.get("next")
        return cls(groups=[GroupInfo._from_json(g) for g in d["groups"]],
                   next=None if nxt is None else str(nxt), now=_args.to_datetime(float(d["now"])))


def _bad(message: str) -> Exception:
    return _from_c(_raw.MQ_ERR_ARG, 0, message)


def states(value: Union[None, str, Iterable[str]]) -> int:
    """groups(states=...) as MQ_GROUP_* bits: None or empty is every state (0)."""
    if value is None:
        return 0
    names: Iterable[Any] = (value,) if isinstance(value, str) else value
    try:
        names = list(names)
    except TypeError:
        raise TypeError("states must be a state name or an iterable of them, not %s"
                        % type(value).__name__) from None
    bits = 0
    for name in names:
        if not isinstance(name, str):
            raise TypeError("states must hold state names (str), not %s" % type(name).__name__)
        flag = _STATE_FLAGS.get(name)
        if flag is None:
            raise _bad("states has %r, which is none of ready, leased, parked, paused" % name)
        bits |= flag
    return bits


def sort(value: Any) -> int:
    if not isinstance(value, str):
        raise TypeError("sort must be \"id\" or \"due\", not %s" % type(value).__name__)
    code = _SORTS.get(value)
    if code is None:
        raise _bad("sort is %r; it must be \"id\" or \"due\"" % value)
    return code


def min_attempts(value: Any) -> int:
    _args.integer("min_attempts", value)
    if not 0 <= value <= _INT_MAX:
        raise _bad("min_attempts is %d; it must be 0..%d" % (value, _INT_MAX))
    return int(value)


def filter_seconds(name: str, value: Any) -> float:
    """held_longer_than / parked_beyond: None (no filter) or a duration (0: no filter)."""
    return 0.0 if value is None else _args.seconds(name, value)


def optional_text(name: str, value: Any) -> Optional[str]:
    return None if value is None else _args.text(name, value)


def options(states_: Any, id_prefix: Any, min_attempts_: Any, held_longer_than: Any, parked_beyond: Any,
            sort_: Any, after: Any, limit: Any) -> Tuple[int, Optional[str], int, float, float, int, Optional[str], int]:
    """Queue.groups()'s keywords, checked, as mqs_groups_json's arguments after the queue."""
    return (states(states_), optional_text("id_prefix", id_prefix), min_attempts(min_attempts_),
            filter_seconds("held_longer_than", held_longer_than), filter_seconds("parked_beyond", parked_beyond),
            sort(sort_), optional_text("after", after), _args.page_limit(limit))
