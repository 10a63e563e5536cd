"""The package's types, beyond the CONTRACT scenarios: instants are aware UTC
datetimes in and out, durations are seconds or timedeltas, a lease's event as text
and JSON, scheduled batch events, keyword-only options, status names from the C
library, the names 0.4.0 dropped, the group listing's rows in Python types, and
publish's results (0.6.0): Published and PublishedBatch are still ints."""

from __future__ import annotations

import dataclasses
import pickle
import time
from datetime import datetime, timedelta, timezone

import pytest

import mongomq
from mongomq import _raw

UTC = timezone.utc


def test_instants_are_aware_utc_datetimes(queue):
    now = queue.now()
    assert isinstance(now, datetime) and now.utcoffset() == timedelta(0)
    assert abs(now.timestamp() - time.time()) < 60
    queue.publish("g", b"x")
    queue.publish("g", b"later", not_before=now + timedelta(hours=1))
    lease = queue.claim(visibility=timedelta(seconds=20))
    assert isinstance(lease.deadline, datetime) and lease.deadline.utcoffset() == timedelta(0)
    assert timedelta(seconds=19) < lease.deadline - now < timedelta(seconds=40)
    peeked = queue.peek()
    assert all(isinstance(e.published_at, datetime) and e.published_at.tzinfo is not None for e in peeked)
    assert peeked[1].not_before is not None and peeked[1].not_before.utcoffset() == timedelta(0)
    assert isinstance(queue.stats().now, datetime)
    with mongomq.ManualClock(datetime(2031, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)) as clock:
        assert clock.now == datetime(2031, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    queue.ack(lease)


def test_not_before_any_timezone(queue):
    """An aware datetime in any zone is its instant; a naive one is refused, naming
    not_before (was it local time or UTC? the queue cannot know)."""
    plus2 = timezone(timedelta(hours=2))
    when = (queue.now() + timedelta(hours=1)).astimezone(plus2)
    queue.publish("g", b"x", not_before=when)
    stored = queue.peek()[0].not_before
    assert abs(stored - when) < timedelta(milliseconds=1)
    assert stored.utcoffset() == timedelta(0)
    with pytest.raises(mongomq.ArgumentError, match="naive") as info:
        queue.publish("g", b"x", not_before=datetime.now())
    assert info.value.argument == "not_before"
    with pytest.raises(TypeError, match="not_before"):
        queue.publish("g", b"x", not_before=time.time())


def test_durations_take_timedelta(queue):
    queue.publish("g", b"x")
    lease = queue.claim(visibility=timedelta(minutes=2), wait=timedelta(seconds=1))
    assert timedelta(seconds=110) < lease.deadline - queue.now() <= timedelta(seconds=120)
    queue.extend(lease, timedelta(seconds=5))
    assert lease.deadline - queue.now() <= timedelta(seconds=5)
    queue.nack(lease, delay=timedelta(milliseconds=300))
    assert queue.claim() is None
    assert queue.claim(wait=5.0).attempts == 2
    with pytest.raises(TypeError, match="visibility"):
        queue.claim(visibility="30")


def test_scheduled_batch_event(queue):
    """Batch.add takes not_before as publish does (mq_batch_add_with)."""
    soon = queue.now() + timedelta(seconds=1)
    with mongomq.Batch() as batch:
        batch.add("later", b"scheduled", not_before=soon)
        batch.add("now", b"at once", priority=1)
        first = queue.publish_batch(batch)
    first_lease = queue.claim()
    assert (first_lease.group, first_lease.seq) == ("now", first + 1)
    queue.ack(first_lease)
    assert queue.claim() is None  # "later" is parked until its time
    started = time.monotonic()
    lease = queue.claim(wait=10.0)
    assert (lease.group, lease.event, lease.seq) == ("later", b"scheduled", first)
    assert time.monotonic() - started < 8
    queue.ack(lease)
    # and as a tuple's fourth item
    queue.publish_batch([("t", b"t1", 0, queue.now() + timedelta(hours=1))])
    assert queue.peek("t")[0].not_before is not None


def test_lease_text_and_json(queue):
    queue.publish("g", '{"order": 17, "name": "Müller"}')
    queue.publish("g", b"\xff\xfe not utf-8")
    queue.publish("g", "not json")
    lease = queue.claim()
    assert lease.text == '{"order": 17, "name": "Müller"}'
    assert lease.json() == {"order": 17, "name": "Müller"}
    queue.ack(lease)
    lease = queue.claim()
    with pytest.raises(UnicodeDecodeError):
        lease.text
    with pytest.raises(ValueError):
        lease.json()
    queue.ack(lease)
    lease = queue.claim()
    assert lease.text == "not json"
    with pytest.raises(ValueError):
        lease.json()
    stored = queue.peek()[0]
    assert stored.text == "not json"
    queue.ack(lease)
    lease.close()
    with pytest.raises(mongomq.ClosedError):
        lease.text


def test_options_are_keywords(queue):
    """Options are keyword-only: claim(30.0) or publish(group, event, 2) would read as
    something else to the next reader (and did, in 0.3)."""
    with pytest.raises(TypeError):
        queue.claim(30.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        queue.publish("g", b"x", 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        mongomq.Batch().add("g", b"x", 2)  # type: ignore[misc]


def test_status_names_from_the_library():
    for name in ("MQ_OK", "MQ_EMPTY", "MQ_LEASE_LOST", "MQ_INTERRUPTED", "MQ_CANCELLED", "MQ_DUPLICATE", "MQ_ERR_ARG",
                 "MQ_ERR_CONNECT", "MQ_ERR_SERVER", "MQ_ERR_NOMEM", "MQ_ERR_INTERNAL"):
        assert mongomq.Error("x", getattr(_raw, name)).status_name == name
    assert mongomq.Error("x", 42).status_name == "MQ_UNKNOWN"
    closed = mongomq.ClosedError("mongomq: the queue is closed")
    assert closed.status is None and closed.status_name is None  # not a C status


def test_names_of_0_4_0(queue):
    assert mongomq.library_version() == "0.8.0" == mongomq.__version__
    counts = queue.repair_counts()
    assert dataclasses.is_dataclass(counts) and not isinstance(counts, tuple)
    assert (counts.runs, counts.fixed) == (0, 0)
    queue.publish("g", b"x")
    lease = queue.claim()
    for gone in ("data",):
        assert not hasattr(lease, gone)
    with pytest.raises(TypeError):
        queue.publish("g", data=b"x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        queue.publish("g", b"x", at=1.0)  # type: ignore[call-arg]
    for gone in ("publish_at", "claim_batch", "claim_wait"):
        assert not hasattr(queue, gone)
    queue.ack(lease)


def test_group_rows_in_python_types(queue):
    """GroupInfo's nulls are None, instants aware UTC datetimes, durations float
    seconds: a lease that ran out keeps its holder but has no deadline, a parked group
    is due at its head's time, a group paused ahead has no events."""
    T = datetime(2031, 1, 1, tzinfo=UTC)
    with mongomq.ManualClock(T) as clock:
        queue.set_clock(clock)
        queue.publish("lapsed", b"x")
        assert queue.claim(worker_id="w1", visibility=5).group == "lapsed"
        clock.advance(10)
        seq = queue.publish("parked", b"x", not_before=T + timedelta(hours=1))
        queue.pause_group("ahead")
        ahead, lapsed, parked = queue.groups().groups
    assert (ahead.group, ahead.state, ahead.paused, ahead.backlog) == ("ahead", "paused", True, 0)
    assert (ahead.head, ahead.head_age_s, ahead.holder, ahead.held_for_s) == (None, None, None, None)
    assert (lapsed.state, lapsed.holder, lapsed.attempts) == ("ready", "w1", 1), "its last holder"
    assert (lapsed.held_for_s, lapsed.lease_deadline) == (None, None), "not held any more"
    assert lapsed.available_at == T + timedelta(seconds=5) and lapsed.head_age_s == 10.0
    assert isinstance(lapsed.head_age_s, float) and isinstance(lapsed.available_at, datetime)
    assert (parked.state, parked.head, parked.backlog, parked.holder) == ("parked", seq, 1, None)
    assert parked.available_at == T + timedelta(hours=1) and parked.available_at.utcoffset() == timedelta(0)
    assert [g.group for g in queue.groups(states="parked").groups] == ["parked"]
    assert [g.group for g in queue.groups(states=frozenset({"parked", "paused"})).groups] == ["ahead", "parked"]
    assert [g.group for g in queue.groups(parked_beyond=timedelta(minutes=59)).groups] == ["parked"]
    assert [g.group for g in queue.groups(id_prefix="").groups] == ["ahead", "lapsed", "parked"], "'': every id"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ahead.state = "ready"  # type: ignore[misc]
    queue.set_clock(None)


def test_published_is_an_int():
    """publish returned an int before 0.6.0: its Published still is one (compared,
    hashed, printed and added as the seq), with the duplicate flag beside it."""
    added, dup = mongomq.Published(7), mongomq.Published(7, duplicate=True)
    assert isinstance(dup, int) and isinstance(dup, mongomq.Published)
    assert (added.seq, added.duplicate, dup.seq, dup.duplicate) == (7, False, 7, True)
    assert added == dup == 7 and hash(dup) == hash(7) and {7: "x"}[dup] == "x"
    assert (str(dup), "%d" % dup, f"{dup}", dup + 1, type(dup + 1)) == ("7", "7", "7", 8, int)
    assert repr(dup) == "Published(seq=7, duplicate=True)"
    assert repr(pickle.loads(pickle.dumps(dup))) == repr(dup)
    assert type(dup.seq) is int
    with pytest.raises(AttributeError):
        dup.duplicate = False  # type: ignore[misc]
    assert mongomq.Published._of(-7).duplicate and mongomq.Published._of(-7) == 7
    assert mongomq.Published._of(7).duplicate is False


def test_publish_results(queue):
    seq = queue.publish("g", b"x")
    assert type(seq) is mongomq.Published and seq.duplicate is False
    lease = queue.claim()
    assert lease.seq == seq  # Lease.seq is a plain int, equal to it
    queue.ack(lease)
    # A batch without keys: the first seq, as before, and its outcomes follow it by 1.
    first = queue.publish_batch([("g", b"a"), ("h", b"b"), ("g", b"c")])
    assert isinstance(first, int) and first == first.first_seq == seq + 1
    assert [(o.seq, o.duplicate) for o in first.outcomes] == [(first + i, False) for i in range(3)]
    assert first.added == 3 and str(first) == str(seq + 1)
    assert repr(first) == "PublishedBatch(first_seq=%d, events=3, added=3)" % first
    assert repr(pickle.loads(pickle.dumps(first))) == repr(first)
    with pytest.raises(AttributeError):
        first.added = 0  # type: ignore[misc]
    # A keyed batch published again: every event a duplicate of its first publish.
    with mongomq.Batch() as batch:
        batch.add("k", b"1", dedup_key="one").add("k", b"2", dedup_key="two").add("k", b"3")
        once = queue.publish_batch(batch)
        twice = queue.publish_batch(batch)
    assert [o.duplicate for o in once.outcomes] == [False, False, False] and once.added == 3
    assert [(o.seq, o.duplicate) for o in twice.outcomes] == [
        (once.outcomes[0].seq, True), (once.outcomes[1].seq, True), (twice.outcomes[2].seq, False)]
    assert twice.added == 1 and twice.outcomes[2].seq > once.outcomes[2].seq
    assert queue.stats().messages == 3 + 3 + 1


def test_attrs_types(queue):
    """Attributes (0.7.0): str keys and values of any Mapping, in its order; other types
    are a TypeError and a NUL an ArgumentError before C (it would split the packing);
    the rest is the library's ArgumentError naming attrs[i]. Nothing is published."""
    import collections
    import types

    ordered = collections.OrderedDict([("z", "1"), ("a", "é")])
    queue.publish("g", b"x", attrs=types.MappingProxyType(ordered))
    queue.publish("g", b"y", attrs={})
    for bad in (["k", "v"], [("k", "v")], "k=v"):
        with pytest.raises(TypeError, match="attrs must be a mapping"):
            queue.publish("g", b"x", attrs=bad)  # type: ignore[arg-type]
    for bad in ({1: "v"}, {b"k": "v"}, {"k": 1}, {"k": None}, {"k": b"v"}):
        with pytest.raises(TypeError, match="attrs"):
            queue.publish("g", b"x", attrs=bad)  # type: ignore[dict-item]
        with mongomq.Batch() as batch, pytest.raises(TypeError):
            batch.add("g", b"x", attrs=bad)  # type: ignore[dict-item]
    for bad, says in (({"a\0b": "v"}, r"attrs\[0\]\.key"), ({"k": "v", "j": "a\0"}, r"attrs\[1\]\.value")):
        with pytest.raises(mongomq.ArgumentError, match=says) as info:
            queue.publish("g", b"x", attrs=bad)
        assert info.value.argument == "attrs"
    for bad, says in (({"": "v"}, "empty"), ({"k" * (mongomq.ATTR_KEY_MAX + 1): "v"}, "MQ_ATTR_KEY_MAX"),
                      ({"k": "v" * (mongomq.ATTR_VALUE_MAX + 1)}, "MQ_ATTR_VALUE_MAX"),
                      ({"k": "\udcff"}, "UTF-8"), ({"ké": "v"}, "ASCII")):
        with pytest.raises(mongomq.ArgumentError, match=says) as info:
            queue.publish("g", b"x", attrs=bad)
        assert info.value.argument == "attrs", info.value
    # The bounds themselves are fine.
    queue.publish("g", b"z", attrs={"k" * mongomq.ATTR_KEY_MAX: "v" * mongomq.ATTR_VALUE_MAX,
                                    **{"k%d" % i: "" for i in range(mongomq.ATTR_MAX - 1)}})
    assert (mongomq.ATTR_MAX, mongomq.ATTR_KEY_MAX, mongomq.ATTR_VALUE_MAX) == (16, 128, 4096)
    assert [e.event for e in queue.peek()] == [b"x", b"y", b"z"]

    lease = queue.claim(max_events=3)
    assert lease.attrs == {"z": "1", "a": "é"} and list(lease.attrs) == ["z", "a"]
    lease.attrs["extra"] = "mine"  # a new dict each time
    assert lease.attrs == {"z": "1", "a": "é"}
    assert lease.attrs_at(1) == {} and lease.attrs_at(-1) == lease.attrs_at(2) and len(lease.attrs_at(2)) == 16
    assert lease.attr("a\0b") is None
    with pytest.raises(IndexError):
        lease.attrs_at(-4)
    with pytest.raises(TypeError):
        lease.attrs_at("0")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lease.attr(1)  # type: ignore[arg-type]
    queue.ack(lease)
    lease.close()
    for read in (lambda: lease.attrs, lambda: lease.attrs_at(0), lambda: lease.attr("z")):
        with pytest.raises(mongomq.ClosedError):
            read()

    # StoredEvent: attrs a dict; still hashable and picklable.
    queue.publish("s", b"x", attrs={"k": "v"})
    stored = queue.peek("s")[0]
    assert stored.attrs == {"k": "v"} and hash(stored) == hash(stored)
    assert pickle.loads(pickle.dumps(stored)) == stored
    assert stored != dataclasses.replace(stored, attrs={})


def test_partitions_types(client, db):
    """Partitions (0.8.0): the queue option is a keyword-only int, a claim's and a
    worker's any iterable of ints (None or empty: every partition); other types are a
    TypeError, numbers no C int holds the ArgumentError before C, the rest the
    library's ArgumentError naming partitions."""
    assert mongomq.PARTITIONS_MAX == 1024
    for bad in ("4", 4.0, True, None):
        with pytest.raises(TypeError, match="partitions"):
            client.queue(db, "mq", partitions=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        client.queue(db, "mq", 4)  # type: ignore[misc]  # keyword-only
    with pytest.raises(TypeError, match="group"):
        mongomq.group_partition(b"a", 4)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partitions"):
        mongomq.group_partition("a", "4")  # type: ignore[arg-type]
    assert type(mongomq.group_partition("a", 4)) is int
    with client.queue(db, "mq", partitions=2) as q:
        try:
            assert type(q.partitions) is int and q.stats().to_dict()["partitions"] == 2
            q.publish("g", b"x")
            for bad in ("0", b"\x00", 0, {0: 1}, [0.0], [None], [True]):
                with pytest.raises(TypeError, match="partitions"):
                    q.claim(partitions=bad)  # type: ignore[arg-type]
                with pytest.raises(TypeError, match="partitions"):
                    q.worker(lambda lease: None, partitions=bad)
            for bad, says in (([2**31], r"partitions\[0\]"), ([0, -1], r"partitions\[1\] is -1"),
                              ([0] * 1025, r"len\(partitions\) is 1025"), ([0, 1, 0], r"len\(partitions\) is 3")):
                with pytest.raises(mongomq.ArgumentError, match=says) as info:
                    q.claim(partitions=bad)
                assert info.value.argument == "partitions", info.value
                with pytest.raises(mongomq.ArgumentError, match=says) as info:
                    q.worker(lambda lease: None, partitions=bad)
                assert info.value.argument == "partitions", info.value
            assert q.stats().groups.leased == 0, "no bad claim took anything"
            lease = q.claim(partitions=range(2))  # any iterable of ints
            assert type(lease.partition) is int and lease.partition == mongomq.group_partition("g", 2)
            q.nack(lease)
            lease = q.claim(partitions=[])  # empty: every partition
            assert lease is not None and lease.attempts == 2
            q.ack(lease)
            w = mongomq.Worker(q, lambda lease: None, partitions=iter([1]))
            assert w.partitions == (1,)
            assert mongomq.Worker(q, lambda lease: None).partitions == ()
        finally:
            q.drop()
