"""Argument checks shared by the handles and the worker, and the package's two time
types: durations in (seconds as a float, an int or a timedelta) and instants in and
out (timezone-aware datetimes; the C library speaks epoch seconds on the queue clock).

Types are checked here, with the Python argument's name; ranges are the C library's
to check (its message names the C argument, which _errors translates), except where
C never sees the value or would read it otherwise (a 0 that means "now" or
"the default"): those are refused here, as the library would word it.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from typing import Any, Iterable, Mapping, Tuple, Union

from . import _raw
from ._errors import _from_c

Event = Union[bytes, bytearray, memoryview, str]
"""What publish takes: bytes (any buffer) or str, sent as UTF-8."""
Duration = Union[int, float, _dt.timedelta]
"""Seconds as a float (an int or a datetime.timedelta is taken too)."""
Attrs = Mapping[str, str]
"""What publish and Batch.add take as attrs (0.7.0): str keys and values, in the
mapping's order (a dict keeps the order it was filled in)."""

Partitions = Iterable[int]
"""What claim and the workers take as partitions (0.8.0): the partition numbers to
claim from (a list; None or empty: every partition of the queue)."""

_UTC = _dt.timezone.utc


def text(name: str, value: Any) -> str:
    if type(value) is not str:
        if not isinstance(value, str):
            raise TypeError("%s must be str, not %s" % (name, type(value).__name__))
    if "\0" in value:
        raise ValueError("%s contains a NUL character" % name)
    return value


def event(value: Any) -> Any:
    t = type(value)
    if t is bytes:
        return value
    if t is str or isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    try:
        memoryview(value)
    except TypeError:
        raise TypeError("event must be bytes or str, not %s" % type(value).__name__) from None
    return value


def worker_id(value: Any) -> str:
    text("worker_id", value)
    if value == "":  # the C shim would take "" for "the default"
        raise _from_c(_raw.MQ_ERR_ARG, 0, "worker_id is empty (None is the default: host:pid)")
    return str(value)


def dedup_key(value: Any) -> int:
    """publish's and Batch.add's dedup_key as the shim's has_key (0: None, no key). Any
    str is passed on: "" or one longer than DEDUP_KEY_MAX bytes is the library's
    ArgumentError naming dedup_key."""
    if value is None:
        return 0
    text("dedup_key", value)
    return 1


def attrs(value: Any) -> bytes:
    """publish's and Batch.add's attrs as the shim takes them: packed, "key NUL value
    NUL ..." in the mapping's order (b"" for None or no attributes). Types are checked
    here, and NUL, which would split the packing; everything else (the key's
    characters and length, the value's length and UTF-8, a count over ATTR_MAX) is the
    library's ArgumentError naming attrs[i]. Strings go as UTF-8, lone surrogates
    too (surrogatepass), so that the library, not an encoder, says what is wrong."""
    if value is None:
        return b""
    if not isinstance(value, Mapping):
        raise TypeError("attrs must be a mapping of str to str (a dict), not %s" % type(value).__name__)
    parts = []
    for i, (k, v) in enumerate(value.items()):
        if not isinstance(k, str):
            raise TypeError("attrs keys must be str, not %s (attrs[%d]: %r)" % (type(k).__name__, i, k))
        if not isinstance(v, str):
            raise TypeError("attrs values must be str, not %s (attrs[%d], key %r)" % (type(v).__name__, i, k))
        if "\0" in k:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "attrs[%d].key %r contains a NUL character" % (i, k))
        if "\0" in v:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "attrs[%d].value (key %r) contains a NUL character" % (i, k))
        parts.append(k.encode("utf-8", "surrogatepass"))
        parts.append(v.encode("utf-8", "surrogatepass"))
    parts.append(b"")
    return b"\0".join(parts)


def integer(name: str, value: Any) -> int:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError("%s must be int, not %s" % (name, type(value).__name__))
    return value


def seconds(name: str, value: Any) -> float:
    """A duration: seconds as a float, an int or a timedelta."""
    t = type(value)
    if t is float or t is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, _dt.timedelta):
            return value.total_seconds()
        raise TypeError("%s must be seconds as a float (or a timedelta), not %s" % (name, type(value).__name__))
    return float(value)


def limit(value: Any) -> int:
    integer("limit", value)
    if value < 1:  # size_t in C: a negative one would not reach the library's check
        raise _from_c(_raw.MQ_ERR_ARG, 0, "limit is %d; it must be at least 1" % value)
    if value > _raw.MQ_BATCH_MAX:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "limit is %d; it must be at most %d" % (value, _raw.MQ_BATCH_MAX))
    return int(value)


PAGE_MAX = 1000
"""Rows per page of the group listing and the dead-letter pages (the library's
mq_groups_opts.limit and mq_dead_list_opts.limit)."""


def page_limit(value: Any) -> int:
    integer("limit", value)
    if not 1 <= value <= PAGE_MAX:  # the library would read 0 as its default, 50
        raise _from_c(_raw.MQ_ERR_ARG, 0, "limit is %d; it must be 1..%d" % (value, PAGE_MAX))
    return int(value)


def offset(value: Any) -> int:
    """An offset into a list: 0 or more (a size_t in C)."""
    integer("offset", value)
    if not 0 <= value < 2**63:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "offset is %d; it must be 0 or more" % value)
    return int(value)


def queue_partitions(value: Any) -> int:
    """The queue option partitions (0.8.0): an int, whose range (1..PARTITIONS_MAX) the
    library checks; one that no C int holds is refused here, as the library words it."""
    integer("partitions", value)
    if not -2**31 <= value < 2**31:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "partitions is %d, outside 1..%d (PARTITIONS_MAX)"
                      % (value, _raw.MQ_PARTITIONS_MAX))
    return int(value)


def claim_partitions(value: Any) -> Tuple[Tuple[int, ...], bytes]:
    """A claim's partitions (0.8.0) as a tuple and packed for the shim (little-endian
    int32s; b"" for None or none: every partition). Types are checked here; the
    numbers (0..the queue's partitions - 1, each once) are the library's to check, its
    ArgumentError naming partitions[i]. A number no C int holds, or more numbers than
    any queue has partitions, is refused here in the library's words (the shim could
    not pass it on)."""
    if value is None:
        return (), b""
    if isinstance(value, (str, bytes, bytearray, memoryview, Mapping)) or not isinstance(value, Iterable):
        raise TypeError("partitions must be an iterable of int (a list), not %s" % type(value).__name__)
    parts = tuple(value)
    for i, k in enumerate(parts):
        if type(k) is not int and (isinstance(k, bool) or not isinstance(k, int)):
            raise TypeError("partitions[%d] must be int, not %s" % (i, type(k).__name__))
        if not -2**31 <= k < 2**31:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "partitions[%d] is %d, outside 0..%d (PARTITIONS_MAX - 1)" % (
                i, k, _raw.MQ_PARTITIONS_MAX - 1))
    if len(parts) > _raw.MQ_PARTITIONS_MAX:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "partition_count is %d, more than PARTITIONS_MAX (%d)" % (
            len(parts), _raw.MQ_PARTITIONS_MAX))
    return parts, struct.pack("<%di" % len(parts), *parts)


def check_partitions_of(parts: Tuple[int, ...], partitions: int) -> None:
    """The library's check of a claim's partitions against a queue of `partitions`
    partitions, in its words, for the workers: their claims run on threads of their
    own, where a bad list could only be reported, claim after claim; a worker refuses
    it when it is made instead."""
    if len(parts) > partitions:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "partition_count is %d, more than the queue's %d partitions" % (
            len(parts), partitions))
    seen = set()
    for i, k in enumerate(parts):
        if not 0 <= k < partitions:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "partitions[%d] is %d, outside 0..%d (the queue has %d partitions)" % (
                i, k, partitions - 1, partitions))
        if k in seen:
            raise _from_c(_raw.MQ_ERR_ARG, 0, "partitions[%d] is %d, given twice" % (i, k))
        seen.add(k)


def check_seconds(name: str, value: float, zero_ok: bool) -> None:
    """For the checks the C library cannot name (a value it never sees)."""
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not zero_ok):
        raise _from_c(_raw.MQ_ERR_ARG, 0, "%s is %r; it must be %s" % (
            name, value, "finite and >= 0" if zero_ok else "finite and > 0"))


def instant(name: str, value: Any) -> float:
    """An aware datetime as epoch seconds. A naive one is refused: whether it meant
    local time or UTC, the queue cannot know (and the queue clock is UTC)."""
    if not isinstance(value, _dt.datetime):
        raise TypeError("%s must be a timezone-aware datetime.datetime, not %s" % (name, type(value).__name__))
    if value.tzinfo is None or value.utcoffset() is None:
        raise _from_c(_raw.MQ_ERR_ARG, 0, "%s is a naive datetime (%s); give an aware one, such as "
                      "datetime.now(timezone.utc) or queue.now() + timedelta(...)" % (name, value.isoformat()))
    return value.timestamp()


def not_before(value: Any) -> float:
    """publish's and Batch.add's not_before as the shim's epoch seconds (0: now)."""
    if value is None:
        return 0.0
    when = instant("not_before", value)
    if not when > 0:  # 0 means "now" to the C shim; say it is bad instead
        check_seconds("not_before", when, zero_ok=False)
    return when


def to_datetime(epoch_s: float) -> _dt.datetime:
    """Epoch seconds from the library as an aware UTC datetime (to the microsecond)."""
    return _dt.datetime.fromtimestamp(epoch_s, _UTC)
