"""Every scenario of bindings/CONTRACT.md, under its name, against MONGOMQ_TEST_URI.
The waiting-claim scenarios that need a signal (Ctrl-C) run in child processes; the
worker's are in test_worker.py."""

from __future__ import annotations

import gc
import json
import math
import os
import signal
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

import mongomq
from conftest import PARTITIONS, fresh_db, nth_seq, run_python, same_partition


UTC = timezone.utc


def seconds(s: float) -> timedelta:
    return timedelta(seconds=s)


def claim_ok(q: mongomq.Queue, **kw) -> mongomq.Lease:
    lease = q.claim(**kw)
    assert lease is not None, "expected a lease"
    return lease


# ---- the harel cases -----------------------------------------------------------------

def test_fifo_in_group(queue):
    seqs = [queue.publish("g", b"e%d" % i) for i in range(5)]
    assert seqs == sorted(seqs)
    got = []
    for _ in range(5):
        lease = claim_ok(queue, visibility=30)
        got.append((lease.seq, lease.event))
        queue.ack(lease)
    assert got == [(s, b"e%d" % i) for i, s in enumerate(seqs)]
    assert queue.claim() is None


def test_one_lease_per_group(queue):
    B = same_partition("A", "B")  # B's place in line behind A: one partition's line
    queue.publish("A", b"a1")
    queue.publish("A", b"a2")
    queue.publish(B, b"b1")
    first = claim_ok(queue)
    assert first.group == "A"
    second = claim_ok(queue)
    assert second.group == B
    assert queue.claim() is None  # A is leased, B is leased
    queue.ack(first)
    third = claim_ok(queue)
    assert (third.group, third.event) == ("A", b"a2")


def test_every_ready_group_claimed(queue):
    for i in range(10):
        queue.publish("g%d" % i, b"x")
    groups = {claim_ok(queue).group for _ in range(10)}
    assert groups == {"g%d" % i for i in range(10)}
    assert queue.claim() is None


def test_round_robin(queue):
    B = same_partition("A", "B")  # round-robin is each partition's
    for i in range(3):
        queue.publish("A", b"a%d" % i)
    for i in range(3):
        queue.publish(B, b"b%d" % i)
    order = []
    for _ in range(6):
        lease = claim_ok(queue)
        order.append(lease.event)
        queue.ack(lease)
    assert order == [b"a0", b"b0", b"a1", b"b1", b"a2", b"b2"]


def test_priority_floor(queue):
    for p in range(3):
        queue.publish("low%d" % p, b"x", priority=p)
    queue.publish("high", b"h", priority=3)
    lease = claim_ok(queue, min_priority=3)
    assert (lease.group, lease.event) == ("high", b"h")
    assert queue.claim(min_priority=3) is None
    assert queue.claim(min_priority=2).group == "low2"


def test_priority_reset_on_drain(queue):
    queue.publish("g", b"first", priority=1)
    lease = claim_ok(queue)
    queue.ack(lease)  # the group drains and is gone
    queue.publish("g", b"second", priority=4)
    lease = claim_ok(queue, min_priority=4)
    assert lease.event == b"second"


def test_ack_removes(queue):
    queue.publish("g", b"x")
    queue.ack(claim_ok(queue))
    assert queue.stats().messages == 0
    assert queue.claim() is None


def test_nack_now(queue):
    seq = queue.publish("g", b"x")
    lease = claim_ok(queue)
    assert lease.attempts == 1
    queue.nack(lease)
    again = claim_ok(queue)
    assert (again.seq, again.event, again.attempts) == (seq, b"x", 2)


def test_nack_delay_parks(queue):
    seq = queue.publish("g", b"x")
    queue.nack(claim_ok(queue), delay=1.0)
    assert queue.claim() is None
    started = time.monotonic()
    again = claim_ok(queue, wait=10.0)
    assert (again.seq, again.attempts) == (seq, 2)
    assert time.monotonic() - started < 8


def test_stale_owner_lease_lost(queue):
    queue.publish("g", b"x")
    stale = claim_ok(queue, visibility=0.3)
    time.sleep(0.6)
    fresh = claim_ok(queue, visibility=30)
    assert fresh.seq == stale.seq and fresh.attempts == 2
    with pytest.raises(mongomq.LeaseLost):
        queue.ack(stale)
    with pytest.raises(mongomq.LeaseLost):
        queue.extend(stale, 10)
    queue.ack(fresh)


def test_extend_keeps_lease(queue):
    queue.publish("g", b"x")
    lease = claim_ok(queue, visibility=0.5)
    queue.extend(lease, 10)
    time.sleep(1.0)  # twice the first visibility
    assert queue.claim() is None
    queue.ack(lease)


def test_lease_expiry_redelivers(queue):
    seq = queue.publish("g", b"x")
    first = claim_ok(queue, visibility=0.3)
    assert first.attempts == 1
    time.sleep(0.6)
    again = claim_ok(queue)
    assert (again.seq, again.event, again.attempts) == (seq, b"x", 2)


def test_unclaim_keeps_attempts(queue, client, db):
    B = same_partition("A", "B")  # "ahead of B": in one partition's line
    a = queue.publish("A", b"a")
    queue.publish(B, b"b")
    unrun = claim_ok(queue)
    assert (unrun.group, unrun.attempts) == ("A", 1)
    queue.unclaim(unrun)  # no handler ran: no delivery
    again = claim_ok(queue)
    assert (again.group, again.seq, again.attempts) == ("A", a, 1)  # its place ahead of B, its attempts
    queue.ack(again)

    # A stale lease's unclaim is LeaseLost and leaves the new holder alone.
    stale = claim_ok(queue, visibility=0.3)
    assert stale.group == B
    time.sleep(0.6)
    with client.queue(db, "mq", partitions=PARTITIONS) as other:
        taken = claim_ok(other)
        assert (taken.group, taken.attempts) == (B, 2)
        with pytest.raises(mongomq.LeaseLost):
            queue.unclaim(stale)
        assert queue.claim() is None  # B is still the new holder's
        other.ack(taken)


# ---- bytes -----------------------------------------------------------------------------

def roundtrip(q: mongomq.Queue, event, group: str = "g") -> mongomq.Lease:
    q.publish(group, event)
    lease = claim_ok(q)
    q.ack(lease)
    return lease


def test_bytes_text(queue):
    text = "héllo wörld — 日本語 ✓"
    lease = roundtrip(queue, text)  # str is published as UTF-8
    assert type(lease.event) is bytes
    assert lease.event == text.encode("utf-8")
    assert roundtrip(queue, text.encode("utf-8")).event == text.encode("utf-8")


def test_bytes_binary_nul(queue):
    event = b"\x00a\x00\xff\xfe\x80bin\x00"
    assert roundtrip(queue, event).event == event
    assert roundtrip(queue, bytearray(event)).event == event
    assert roundtrip(queue, memoryview(event)).event == event


def test_bytes_empty(queue):
    lease = roundtrip(queue, b"")
    assert lease.event == b"" and type(lease.event) is bytes
    assert roundtrip(queue, "").event == b""


def test_bytes_1mib(queue):
    event = bytes(os.urandom(1 << 20))
    assert roundtrip(queue, event).event == event


def test_group_utf8(queue):
    group = "Kunde-Müller/東京/🚚"
    lease = roundtrip(queue, b"x", group=group)
    assert lease.group == group


# ---- features -------------------------------------------------------------------------

def test_batch_publish_claim(queue):
    B = same_partition("A", "B")  # A's lease first: one partition's line
    items = [("A" if i % 2 == 0 else B, b"e%d" % i) for i in range(10)]
    first = queue.publish_batch(items)
    second = queue.publish("A", b"after")
    seqs = [o.seq for o in first.outcomes]
    assert seqs[0] == first and len(set(seqs + [second])) == 11
    a_seqs, b_seqs = seqs[0::2], seqs[1::2]
    assert a_seqs == sorted(a_seqs) and b_seqs == sorted(b_seqs) and second > a_seqs[-1]  # increasing in a group
    if PARTITIONS == 1:
        assert seqs == list(range(first, first + 10)) and second == first + 10  # consecutive
    lease = claim_ok(queue, max_events=5)
    assert lease.group == "A"
    assert lease.count == 5 and len(lease) == 5
    assert list(lease.events) == [b"e0", b"e2", b"e4", b"e6", b"e8"]
    assert list(lease.seqs) == a_seqs
    assert lease.event == b"e0" and lease.seq == first
    queue.ack(lease)
    rest = claim_ok(queue, max_events=5)
    assert rest.group == B and list(rest.seqs) == b_seqs
    queue.ack(rest)
    last = claim_ok(queue, max_events=5)
    assert list(last.events) == [b"after"]
    # A Batch object may be built, reused and published again.
    with mongomq.Batch() as batch:
        batch.add("C", b"c1").add("C", "c2", priority=2)
        assert len(batch) == 2
        s1 = queue.publish_batch(batch)
        s2 = queue.publish_batch(batch)
        c_seqs = [o.seq for o in s1.outcomes] + [o.seq for o in s2.outcomes]
        assert c_seqs == sorted(set(c_seqs)), "new seqs, increasing in the group"
        if PARTITIONS == 1:
            assert s2 == s1 + 2


def test_scheduled_event(queue):
    # The claim before the due time must find nothing. On a loaded test server the
    # publish and that claim can take over a second: then the check proved nothing,
    # and it is made again with a later time (in a group of its own).
    for i, offset in enumerate((1.0, 5.0, 20.0)):
        due = queue.now() + seconds(offset)
        queue.publish("g%d" % i, b"later", not_before=due)
        early = queue.claim()
        if queue.now() < due:
            break
        if early is not None:
            queue.ack(early)
        else:
            queue.purge_group("g%d" % i)
    else:
        pytest.fail("a publish and a claim took over 20 s each time: no check was made")
    assert early is None
    started = time.monotonic()
    lease = claim_ok(queue, wait=offset + 10.0)
    assert lease.event == b"later"
    assert lease.group == "g%d" % i
    assert queue.now() >= due
    assert time.monotonic() - started < offset + 8


def test_attributes_round_trip(queue):
    attrs = {"content-type": "application/json", "tenant.id": "t-42", "empty": ""}
    seq = queue.publish("g", b"{}", attrs=attrs)
    lease = claim_ok(queue)
    assert lease.seq == seq
    assert list(lease.attrs.items()) == list(attrs.items())  # exactly those, in that order
    assert lease.attrs_at(0) == lease.attrs
    assert lease.attr("tenant.id") == "t-42" and lease.attr("empty") == ""
    assert lease.attr("absent") is None
    queue.nack(lease)
    again = claim_ok(queue)
    assert (again.seq, again.attempts) == (seq, 2)
    assert list(again.attrs.items()) == list(attrs.items())
    assert again.attr("tenant.id") == "t-42" and again.attr("absent") is None
    queue.ack(again)

    # A batch: each event its own, in one batch lease.
    with mongomq.Batch() as batch:
        batch.add("b", b"1", attrs={"n": "1"}).add("b", b"2").add("b", b"3", attrs={"n": "2", "extra": "yes"})
        first = queue.publish_batch(batch)
    peeked = queue.peek("b")
    assert [e.seq for e in peeked] == [o.seq for o in first.outcomes] and peeked[0].seq == first
    assert [list(e.attrs.items()) for e in peeked] == [[("n", "1")], [], [("n", "2"), ("extra", "yes")]]
    lease = claim_ok(queue, max_events=3)
    assert lease.count == 3
    assert [lease.attrs_at(i) for i in range(3)] == [{"n": "1"}, {}, {"n": "2", "extra": "yes"}]
    assert list(lease.attrs_at(2)) == ["n", "extra"]
    assert lease.attrs == {"n": "1"} and lease.attr("extra") is None  # attr() is the head's
    with pytest.raises(IndexError):
        lease.attrs_at(3)
    queue.ack(lease)
    # The tuple form of publish_batch takes them too.
    queue.publish_batch([("t", b"x", 0, None, None, {"k": "v"})])
    assert queue.peek("t")[0].attrs == {"k": "v"}
    queue.purge_group("t")

    # The dead letters show them, and a requeue keeps them.
    queue.set_max_attempts(1)
    dead_seq = queue.publish("d", b"poison", attrs={"tenant.id": "t-7", "why": "test"})
    queue.nack(claim_ok(queue))
    assert queue.claim() is None  # dead now
    dead = queue.dead_list()
    assert [d.seq for d in dead] == [dead_seq]
    assert list(dead[0].attrs.items()) == [("tenant.id", "t-7"), ("why", "test")]
    assert queue.dead_page().letters[0].attrs == {"tenant.id": "t-7", "why": "test"}
    new_seq = queue.dead_requeue(dead_seq)
    assert [list(e.attrs.items()) for e in queue.peek("d")] == [[("tenant.id", "t-7"), ("why", "test")]]
    requeued = claim_ok(queue)
    assert requeued.seq == new_seq and requeued.attrs == {"tenant.id": "t-7", "why": "test"}
    queue.ack(requeued)
    queue.set_max_attempts(0)

    # Bad attributes: the argument error naming them, and nothing is published (a key
    # given twice cannot be written as a dict).
    too_many = {"k%d" % i: "v" for i in range(mongomq.ATTR_MAX + 1)}
    for bad, says in ((too_many, "MQ_ATTR_MAX"), ({"a key": "v"}, "a key")):
        with pytest.raises(mongomq.ArgumentError, match=says) as info:
            queue.publish("bad", b"x", attrs=bad)
        assert info.value.argument == "attrs"
        with mongomq.Batch() as batch:
            with pytest.raises(mongomq.ArgumentError) as info:
                batch.add("bad", b"x", attrs=bad)
            assert info.value.argument == "attrs" and len(batch) == 0
    assert queue.peek() == []
    assert queue.stats().messages == 0


def test_dead_letters(queue):
    queue.set_max_attempts(2)
    seq_a = queue.publish("a", b"A")
    queue.publish("b", b"B")
    for _ in range(2):
        for _ in range(2):
            queue.nack(claim_ok(queue))
    assert queue.claim() is None  # both heads were delivered twice: dead now
    assert queue.dead_count() == 2
    new_seq = queue.dead_requeue(seq_a)
    assert new_seq > seq_a
    assert queue.dead_count() == 1
    lease = claim_ok(queue)
    assert (lease.seq, lease.event, lease.attempts) == (new_seq, b"A", 1)
    queue.ack(lease)
    assert queue.dead_purge() == 1
    assert queue.dead_count() == 0
    with pytest.raises(mongomq.ArgumentError):
        queue.dead_requeue(seq_a)  # no longer a dead letter


def test_stats_parsed(queue, db):
    queue.publish("low", b"1", priority=0)
    queue.publish("low", b"2", priority=0)
    queue.publish("high", b"3", priority=3)
    held = claim_ok(queue, min_priority=3)
    stats = queue.stats()
    assert isinstance(stats, mongomq.Stats)
    assert stats.queue == db + ".mq"
    assert stats.messages == 3 and stats.dead == 0 and stats.published == 3
    assert (stats.groups.ready, stats.groups.leased, stats.groups.parked, stats.groups.paused,
            stats.groups.total) == (1, 1, 0, 0, 2)
    assert sorted(stats.priorities) == [0, 1, 2, 3, 4]
    assert (stats.priorities[0].groups, stats.priorities[0].messages) == (1, 2)
    assert (stats.priorities[3].groups, stats.priorities[3].messages) == (1, 1)
    assert stats.priorities[4].messages == 0
    assert isinstance(stats.oldest_message_age_s, float) and stats.oldest_message_age_s >= 0
    assert isinstance(stats.now, datetime) and stats.now.tzinfo is not None
    assert abs(stats.now - queue.now()) < seconds(60)
    d = stats.to_dict()
    assert d["groups"]["total"] == 2 and d["priorities"][0]["messages"] == 2
    assert sorted(d) == ["dead", "groups", "messages", "now", "oldest_message_age_s", "partitions", "priorities",
                         "published", "queue"]
    assert stats.partitions == queue.partitions == PARTITIONS
    assert sorted(d["groups"]) == ["leased", "parked", "paused", "ready", "total"]
    queue.ack(held)
    queue.pause_group("low")
    stats = queue.stats()
    assert (stats.messages, stats.published, stats.groups.paused, stats.groups.ready, stats.groups.total) == (
        2, 3, 1, 0, 1), "the paused group is counted in paused only"


def test_repair(queue, db, uri):
    import pymongo  # a test dependency (pyproject's "test" extra)

    queue.publish("g", b"x")
    with pymongo.MongoClient(uri) as mc:
        assert mc[db]["mq_locks"].delete_one({"_id": "g"}).deleted_count == 1
    assert queue.claim() is None  # no lock: nobody can claim it
    assert queue.repair() == 1
    assert claim_ok(queue).event == b"x"
    assert queue.repair() == 0


def test_automatic_repair(queue, db, uri):
    import pymongo

    queue.set_repair_interval(0.2)
    assert queue.repair_counts() == mongomq.RepairCounts(runs=0, fixed=0)
    seq = queue.publish("g", b"orphan")
    with pymongo.MongoClient(uri) as mc:
        assert mc[db]["mq_locks"].delete_one({"_id": "g"}).deleted_count == 1
    assert queue.claim() is None  # the first empty claim only starts the period
    deadline = time.monotonic() + 10
    lease = None
    while lease is None:
        assert time.monotonic() < deadline, "the automatic repair did not run within 10 s"
        time.sleep(0.1)
        lease = queue.claim()
    assert lease.seq == seq
    queue.ack(lease)
    counts = queue.repair_counts()
    assert isinstance(counts, mongomq.RepairCounts)
    assert counts.runs >= 1 and counts.fixed == 1


def test_automatic_repair_off(queue, db, uri):
    import pymongo

    queue.set_repair_interval(0)
    queue.publish("g", b"orphan")
    with pymongo.MongoClient(uri) as mc:
        assert mc[db]["mq_locks"].delete_one({"_id": "g"}).deleted_count == 1
    for _ in range(5):
        assert queue.claim() is None
        time.sleep(0.05)
    assert queue.repair_counts() == mongomq.RepairCounts(runs=0, fixed=0)
    assert queue.repair() == 1  # the orphan was still there
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(mongomq.ArgumentError, match="seconds"):
            queue.set_repair_interval(bad)
    with pytest.raises(TypeError):
        queue.set_repair_interval("5")  # type: ignore[arg-type]


def test_peek(queue):
    t0 = queue.now()
    s1 = queue.publish("g1", "héllo", priority=2)
    s2 = queue.publish("g2", b"\xff\x00bin")
    later = queue.now() + timedelta(hours=1)
    s3 = queue.publish("g1", b"later", not_before=later)
    peeked = queue.peek()
    assert [e.seq for e in peeked] == [s1, s2, s3]
    assert all(isinstance(e, mongomq.StoredEvent) for e in peeked)
    first = peeked[0]
    assert (first.group, first.priority, first.event) == ("g1", 2, "héllo".encode())
    assert first.text == "héllo"
    assert isinstance(first.published_at, datetime) and abs(first.published_at - t0) < seconds(60)
    assert first.not_before is None and first.dead_at is None
    assert peeked[1].event == b"\xff\x00bin"
    assert peeked[2].not_before is not None and abs(peeked[2].not_before - later) < seconds(0.01)
    with pytest.raises(AttributeError):
        first.seq = 0  # type: ignore[misc]  # frozen
    assert [e.seq for e in queue.peek("g1")] == [s1, s3]
    assert [e.seq for e in queue.peek(limit=1)] == [s1]
    assert queue.peek(group="nobody") == []
    lease = claim_ok(queue)
    assert (lease.seq, lease.attempts) == (s1, 1)  # peek claimed nothing
    assert [e.seq for e in queue.peek("g1")] == [s1, s3]  # a leased event stays until acked
    queue.ack(lease)
    assert [e.seq for e in queue.peek()] == [s2, s3]
    for bad in (0, -1, 1_000_000):
        with pytest.raises(mongomq.ArgumentError, match="limit"):
            queue.peek(limit=bad)
    with pytest.raises(TypeError):
        queue.peek(limit="2")  # type: ignore[arg-type]
    with pytest.raises(mongomq.ArgumentError):
        queue.peek(group="")


def test_dead_list(queue):
    assert queue.dead_list() == []
    queue.set_max_attempts(1)
    seq = queue.publish("g", b"poison\0")
    queue.nack(claim_ok(queue), delay=0)
    assert queue.claim() is None  # the second delivery goes to the dead letters
    dead = queue.dead_list()
    assert len(dead) == 1
    d = dead[0]
    assert (d.seq, d.group, d.event) == (seq, "g", b"poison\0")
    assert d.attempts is not None and d.attempts >= 1
    assert d.dead_at is not None and d.published_at is not None and d.dead_at >= d.published_at
    assert queue.peek() == []  # the dead letter is not in the queue
    queue.publish("g", b"poison 2")
    queue.nack(claim_ok(queue), delay=0)
    assert queue.claim() is None
    assert [e.seq for e in queue.dead_list(limit=1)] == [seq]
    assert len(queue.dead_list(limit=10)) == 2
    with pytest.raises(mongomq.ArgumentError):
        queue.dead_list(limit=0)


def test_write_concern_errors(client, queue):
    queue.publish("g", b"x")
    queue.ack(claim_ok(queue))
    count = client.write_concern_errors
    assert isinstance(count, int)
    assert count == 0  # the test server confirms every write
    client.close()
    with pytest.raises(mongomq.ClosedError):
        client.write_concern_errors


def test_purge_group(queue):
    h = same_partition("g", "h")  # g's lease first: one partition's line
    queue.publish("g", b"1")
    queue.publish("g", b"2")
    queue.publish(h, b"3")
    held = claim_ok(queue)
    assert held.group == "g"
    queue.purge_group("g")
    with pytest.raises(mongomq.LeaseLost):
        queue.ack(held)
    assert queue.stats().messages == 1
    assert claim_ok(queue).group == h


def test_drop(queue):
    for i in range(3):
        queue.publish("g", b"x")
    queue.drop()
    assert queue.stats().messages == 0
    assert queue.publish("g", b"y") == nth_seq("g", 1)  # seq 1 (of its partition's: k + 1)


def test_lease_deadline(queue):
    queue.publish("g", b"x")
    before = queue.now()
    lease = claim_ok(queue, visibility=10)
    after = queue.now()
    slack = seconds(0.05)
    assert isinstance(lease.deadline, datetime)
    assert before + seconds(10) - slack <= lease.deadline <= after + seconds(10) + slack
    before = queue.now()
    queue.extend(lease, 60)
    after = queue.now()
    assert before + seconds(60) - slack <= lease.deadline <= after + seconds(60) + slack


# ---- groups (0.5.0) ------------------------------------------------------------------------

def test_pause_resume(queue):
    first = queue.publish("P", b"p1", priority=2)
    second = queue.publish("P", b"p2", priority=2)
    assert queue.pause_group("P") is None
    assert queue.claim() is None, "a paused group is not claimed"
    s = queue.stats()
    assert (s.groups.paused, s.groups.ready, s.groups.total) == (1, 0, 1), s
    queue.pause_group("P")  # again: nothing changes
    assert queue.claim() is None

    queue.resume_group("P")
    assert queue.stats().groups.paused == 0
    held = claim_ok(queue, min_priority=2)  # resumed, at its priority 2
    assert (held.group, held.seq, held.attempts) == ("P", first, 1)

    # Paused while held: the holder keeps its lease; the next event waits.
    queue.pause_group("P")
    queue.ack(held)
    assert queue.claim() is None, "P's second event is not claimable while paused"
    assert queue.stats().groups.paused == 1

    # Its second event's lease acked while paused too: P drains and stays paused.
    queue.resume_group("P")
    last = claim_ok(queue)
    assert last.seq == second
    queue.pause_group("P")
    queue.ack(last)
    s = queue.stats()
    assert (s.messages, s.groups.paused) == (0, 1), "drained, still paused: %r" % (s,)
    third = queue.publish("P", b"p3")
    assert queue.claim() is None, "a new publish to a paused group is not claimable"
    queue.resume_group("P")
    lease = claim_ok(queue)
    assert (lease.seq, lease.event) == (third, b"p3")
    queue.ack(lease)

    # Resuming a group that is not paused (or has no lock at all) is OK.
    queue.resume_group("P")
    queue.resume_group("never-seen")
    s = queue.stats()
    assert (s.groups.paused, s.groups.total, s.published) == (0, 0, 3), s
    with pytest.raises(mongomq.ArgumentError) as info:
        queue.pause_group("")
    assert info.value.argument == "group"
    with pytest.raises(ValueError, match="group"):
        queue.resume_group("a\0b")  # not "a": the NUL is refused before C sees it
    with pytest.raises(TypeError, match="group"):
        queue.pause_group(5)  # type: ignore[arg-type]


def test_group_listing(queue, client):
    # On a manual clock, so that ages and deadlines are exact: b leased by w-b at T,
    # a published at T + 1 s, c at T + 2 s and paused; listed at T + 4 s.
    T = datetime.fromtimestamp(1_000_000_000, UTC)
    clock = mongomq.ManualClock(T)
    queue.set_clock(clock)
    queue.publish("b", b"b1", priority=1)
    b_lease = claim_ok(queue, visibility=60, worker_id="w-b")
    assert b_lease.group == "b"
    clock.advance(1)
    a1 = queue.publish("a", b"a1")
    queue.publish("a", b"a2")
    clock.advance(1)
    queue.publish("c", b"c1", priority=3)
    queue.pause_group("c")
    clock.advance(2)

    def ids(**options):
        return [g.group for g in queue.groups(**options).groups]

    page = queue.groups()
    assert isinstance(page, mongomq.GroupsPage)
    assert [g.group for g in page.groups] == ["a", "b", "c"], "by id"
    assert page.next is None
    assert page.now == T + seconds(4) and page.now.utcoffset() == timedelta(0)
    a, b, c = page.groups
    assert all(isinstance(g, mongomq.GroupInfo) for g in page.groups)
    assert (a.state, a.paused, a.backlog, a.priority, a.attempts) == ("ready", False, 2, 0, 0)
    assert (a.head, a.head_age_s, a.holder, a.held_for_s, a.lease_deadline) == (a1, 3.0, None, None, None)
    assert isinstance(a.available_at, datetime) and a.available_at.utcoffset() == timedelta(0)
    assert (b.state, b.holder, b.attempts, b.backlog, b.priority) == ("leased", "w-b", 1, 1, 1)
    assert b.held_for_s == 4.0 and isinstance(b.held_for_s, float)
    assert b.lease_deadline == T + seconds(60) == b_lease.deadline, "the lease's own deadline"
    assert (c.state, c.paused, c.priority, c.backlog) == ("paused", True, 3, 1), "the priority kept"

    assert ids(states="leased") == ["b"]
    assert ids(states=["ready", "paused"]) == ["a", "c"]
    assert ids(states=()) == ["a", "b", "c"], "no states: every state"
    assert ids(id_prefix="c") == ["c"]
    assert ids(held_longer_than=3) == ["b"]
    assert ids(held_longer_than=timedelta(seconds=5)) == []
    assert ids(min_attempts=1) == ["b"]
    assert ids(parked_beyond=30.0) == ["b"], "b is due at T + 60 s"
    assert ids(parked_beyond=timedelta(minutes=1)) == []

    # Pages of 2: a and b with a cursor, then c and none.
    first = queue.groups(limit=2)
    assert [g.group for g in first.groups] == ["a", "b"]
    assert isinstance(first.next, str), "a next cursor after a full page"
    second = queue.groups(limit=2, after=first.next)
    assert [g.group for g in second.groups] == ["c"]
    assert second.next is None

    # By due: a (due since T + 1 s), the paused c (T + 2 s) in its place, b (held to T + 60 s).
    assert ids(sort="due") == ["a", "c", "b"]
    due_first = queue.groups(sort="due", limit=1)
    assert [g.group for g in due_first.groups] == ["a"]
    assert ids(sort="due", after=due_first.next) == ["c", "b"]

    # Bad options are the argument error, naming the option.
    bad = [
        ("limit", dict(limit=1001)),
        ("limit", dict(limit=0)),
        ("states", dict(states=["ready", "bogus"])),
        ("states", dict(states="Ready")),
        ("sort", dict(sort="name")),
        ("after", dict(after=due_first.next)),  # another sort's cursor
        ("min_attempts", dict(min_attempts=-1)),
        ("min_attempts", dict(min_attempts=2**31)),
        ("held_longer_than", dict(held_longer_than=-1)),
        ("parked_beyond", dict(parked_beyond=math.nan)),
    ]
    for name, options in bad:
        with pytest.raises(mongomq.ArgumentError) as info:
            queue.groups(**options)
        assert info.value.argument == name, (name, options, str(info.value))
        assert name in str(info.value)
    with pytest.raises(ValueError, match="id_prefix"):
        queue.groups(id_prefix="c\0")
    for name, options in [("states", dict(states=5)), ("states", dict(states=[1])), ("sort", dict(sort=1)),
                          ("limit", dict(limit="2")), ("held_longer_than", dict(held_longer_than="3")),
                          ("after", dict(after=7))]:
        with pytest.raises(TypeError, match=name):
            queue.groups(**options)
    with pytest.raises(TypeError):
        queue.groups(2)  # type: ignore[misc]  # keyword-only
    queue.ack(b_lease)

    # Dead letters by page: 3 letters, a page of 2 from offset 1 is the 2nd and 3rd.
    d = client.queue(fresh_db(), "mq", partitions=PARTITIONS)
    try:
        d.set_max_attempts(1)
        dead = []
        for i in range(3):
            dead.append(d.publish("d%d" % i, b"dead %d" % i))
            d.nack(claim_ok(d))
            assert d.claim() is None, "its second delivery went to the dead letters"
        by_seq = sorted(dead)  # the dead letters' order (over partitions not the publishes')
        page = d.dead_page(1, 2)
        assert isinstance(page, mongomq.DeadPage)
        assert [e.seq for e in page.letters] == by_seq[1:]
        assert (page.offset, page.total) == (1, 3)
        assert page.letters[0].event == b"dead %d" % dead.index(by_seq[1])
        assert isinstance(page.letters[0], mongomq.StoredEvent)
        assert page.letters[0].dead_at is not None
        assert [e.seq for e in d.dead_page().letters] == by_seq, "offset 0, limit 50 by default"
        past = d.dead_page(offset=3, limit=2)
        assert (past.letters, past.total) == ([], 3)
        for name, args in [("limit", (0, 1001)), ("limit", (0, 0)), ("offset", (-1, 2))]:
            with pytest.raises(mongomq.ArgumentError) as info:
                d.dead_page(*args)
            assert info.value.argument == name, (name, str(info.value))
        with pytest.raises(TypeError, match="offset"):
            d.dead_page("1")  # type: ignore[arg-type]
    finally:
        d.drop()
        d.close()


# ---- deduplication (0.6.0) ---------------------------------------------------------------

def test_dedup_same_key(queue):
    first = queue.publish("A", b"from A", dedup_key="k")
    assert isinstance(first, mongomq.Published) and first.duplicate is False
    s = first.seq
    again = queue.publish("B", b"from B", dedup_key="k")  # another group, the same key
    assert again.duplicate is True and again.seq == s, again
    assert queue.stats().messages == 1
    lease = claim_ok(queue)
    assert (lease.group, lease.seq, lease.event) == ("A", s, b"from A")
    queue.ack(lease)
    third = queue.publish("A", b"once more", dedup_key="k")  # acked, but within the 5-minute window
    assert (third.duplicate, third.seq) == (True, s), third
    assert queue.stats().messages == 0
    assert queue.claim() is None


def test_dedup_different_keys(queue):
    p1 = queue.publish("g", b"one", dedup_key="k1")
    p2 = queue.publish("g", b"two", dedup_key="k2")
    assert (p1.duplicate, p2.duplicate) == (False, False)
    assert p2.seq > p1.seq
    got = []
    for _ in range(2):
        lease = claim_ok(queue)
        got.append((lease.seq, lease.event))
        queue.ack(lease)
    assert got == [(p1.seq, b"one"), (p2.seq, b"two")]
    assert queue.claim() is None


def test_dedup_retry_after_lost_reply(queue):
    # The test server applies the insert of a key with this prefix and then answers,
    # once per key, with a step-down (10107): the outcome is unknown to the library,
    # which reports the connect error (tests/server/README.md). A unique key per run.
    key = "mongomq-test-stepdown-py-" + os.urandom(8).hex()
    try:
        first = queue.publish("g", b"exactly once", dedup_key=key)
    except mongomq.ConnectError:
        first = None  # the hook: applied, reply lost
    else:
        assert first.duplicate is False  # a server without the hook
    retry = queue.publish("g", b"exactly once", dedup_key=key)
    assert retry.duplicate is True, retry
    if first is not None:
        assert retry.seq == first.seq
    assert queue.stats().messages == 1, "exactly one event"
    assert [e.seq for e in queue.peek(limit=10)] == [retry.seq]
    lease = claim_ok(queue)
    assert (lease.seq, lease.event, lease.count) == (retry.seq, b"exactly once", 1)
    queue.ack(lease)
    assert queue.claim() is None


def test_dedup_batch(queue):
    with mongomq.Batch() as batch:
        batch.add("g1", b"a1", dedup_key="a").add("g1", b"b1", dedup_key="b")
        batch.add("g2", b"a2", dedup_key="a").add("g2", b"plain")
        result = queue.publish_batch(batch)
    assert isinstance(result, mongomq.PublishedBatch)
    out = result.outcomes
    assert len(out) == 4 and result.added == 3
    assert [o.duplicate for o in out] == [False, False, True, False]
    assert out[2].seq == out[0].seq, "the third is a duplicate of the first"
    assert len({out[0].seq, out[1].seq, out[3].seq}) == 3
    # The second batch, as tuples (group, event, priority, not_before, dedup_key).
    second = queue.publish_batch([("g1", b"b again", 0, None, "b"), ("g3", b"c3", 0, None, "c")])
    o1, o2 = second.outcomes
    assert (o1.duplicate, o1.seq) == (True, out[1].seq), "a duplicate of the first batch's second event"
    assert o2.duplicate is False and second.added == 1
    assert queue.stats().messages == 4
    by_seq = {e.seq: (e.group, e.event) for e in queue.peek(limit=10)}
    assert by_seq == {out[0].seq: ("g1", b"a1"), out[1].seq: ("g1", b"b1"), out[3].seq: ("g2", b"plain"),
                      o2.seq: ("g3", b"c3")}


def test_dedup_scope_group(queue):
    queue.set_dedup_scope("group")
    a = queue.publish("A", b"a", dedup_key="k")
    b = queue.publish("B", b"b", dedup_key="k")
    assert (a.duplicate, b.duplicate) == (False, False) and a.seq != b.seq
    again = queue.publish("A", b"a again", dedup_key="k")
    assert (again.duplicate, again.seq) == (True, a.seq), again
    assert queue.stats().messages == 2
    with pytest.raises(mongomq.ArgumentError) as info:
        queue.set_dedup_scope("shard")  # type: ignore[arg-type]
    assert info.value.argument == "scope"
    with pytest.raises(TypeError, match="scope"):
        queue.set_dedup_scope(1)  # type: ignore[arg-type]


def test_dedup_bad_key(queue):
    bad = [
        ("dedup_key", lambda: queue.publish("g", b"x", dedup_key="")),
        ("dedup_key", lambda: queue.publish("g", b"x", dedup_key="k" * (mongomq.DEDUP_KEY_MAX + 1))),
        ("dedup_key", lambda: mongomq.Batch().add("g", b"x", dedup_key="")),
        ("seconds", lambda: queue.set_dedup_window(0.5)),
        ("seconds", lambda: queue.set_dedup_window(timedelta(days=8))),
    ]
    for name, call in bad:
        with pytest.raises(mongomq.ArgumentError) as info:
            call()
        assert info.value.argument == name, (name, info.value.argument, str(info.value))
        assert info.value.status == mongomq._raw.MQ_ERR_ARG
        assert name in str(info.value)
    assert "dedup_window" in str(info.value)  # the window's error says which window
    with pytest.raises(ValueError, match="dedup_key"):
        queue.publish("g", b"x", dedup_key="a\0b")  # not "a": refused before C sees it
    with pytest.raises(TypeError, match="dedup_key"):
        queue.publish("g", b"x", dedup_key=b"bytes")  # type: ignore[arg-type]
    assert queue.stats().messages == 0, "nothing was published"
    # The bounds themselves are fine: a key of DEDUP_KEY_MAX bytes, windows of 1 s and 7 days.
    assert mongomq.DEDUP_KEY_MAX == 512
    queue.set_dedup_window(1)
    queue.set_dedup_window(timedelta(days=7))
    assert queue.publish("g", b"x", dedup_key="k" * mongomq.DEDUP_KEY_MAX).duplicate is False
    assert queue.stats().messages == 1


# ---- partitions (0.8.0) -----------------------------------------------------------------
# Each opens its own queue of 4 partitions (or more), whatever PARTITIONS is.

def test_partitions_open(client, db):
    with client.queue(db, "mq", partitions=4) as q:
        try:
            assert q.partitions == 4
            assert q.stats().partitions == 4
            for again in (lambda: client.queue(db, "mq"), lambda: client.queue(db, "mq", partitions=1),
                          lambda: client.queue(db, "mq", partitions=8)):
                with pytest.raises(mongomq.ArgumentError, match="4 partitions") as info:
                    again()
                assert info.value.argument == "partitions", info.value
            with client.queue(db, "mq", partitions=4) as same:  # the same number opens it
                assert same.partitions == 4
        finally:
            q.drop()
    for bad in (0, 1025):
        with pytest.raises(mongomq.ArgumentError, match="partitions") as info:
            client.queue(db, "other", partitions=bad)
        assert info.value.argument == "partitions", info.value
    with client.queue(db, "plain") as plain:
        try:
            assert plain.partitions == 1 and plain.stats().partitions == 1
        finally:
            plain.drop()


def test_partitions_group_hash():
    four = {"a": 3, "b": 0, "customer-17": 1, "g1": 1, "g2": 3, "g3": 0}
    assert {g: mongomq.group_partition(g, 4) for g in four} == four
    sixteen = {"a": 11, "customer-17": 9, "g2": 7}
    assert {g: mongomq.group_partition(g, 16) for g in sixteen} == sixteen
    for g in list(four) + ["Kunde-Müller/東京/🚚"]:
        assert mongomq.group_partition(g, 1) == 0
    for bad in (0, 1025, -1):
        with pytest.raises(mongomq.ArgumentError, match="partitions") as info:
            mongomq.group_partition("a", bad)
        assert info.value.argument == "partitions"


def test_partitions_fifo(client, db):
    groups = ["g%d" % i for i in range(1, 9)]
    assert len({mongomq.group_partition(g, 4) for g in groups}) > 1  # spread over partitions
    with client.queue(db, "mq", partitions=4) as q:
        try:
            published = defaultdict(list)  # group -> [(seq, event)] in publish order
            for n in range(5):
                for g in groups:  # interleaved: g1 g2 ... g8, five times
                    event = ("%s-%d" % (g, n)).encode()
                    published[g].append((q.publish(g, event).seq, event))
            seen = defaultdict(list)
            seqs = []
            for _ in range(41):
                lease = q.claim()
                if lease is None:
                    break
                assert lease.partition == mongomq.group_partition(lease.group, 4), lease
                seen[lease.group].append((lease.seq, lease.event))
                seqs.append(lease.seq)
                q.ack(lease)
            assert len(seqs) == 40 and len(set(seqs)) == 40, seqs
            for g in groups:
                assert seen[g] == published[g], g  # each group in publish order
                in_group = [seq for seq, _ in seen[g]]
                assert all(a < b for a, b in zip(in_group, in_group[1:])), (g, in_group)
            stats = q.stats()
            assert (stats.messages, stats.published) == (0, 40)
        finally:
            q.drop()


def test_partitions_claim_subset(client, db):
    assert (mongomq.group_partition("b", 4), mongomq.group_partition("customer-17", 4)) == (0, 1)
    with client.queue(db, "mq", partitions=4) as q:
        try:
            b = [q.publish("b", b"b%d" % i).seq for i in range(2)]
            c = [q.publish("customer-17", b"c%d" % i).seq for i in range(2)]
            for i in range(2):
                lease = claim_ok(q, partitions=[1])
                assert (lease.group, lease.seq, lease.partition) == ("customer-17", c[i], 1)
                q.ack(lease)
            assert q.claim(partitions=[1]) is None
            assert q.stats().messages == 2  # b's, which partition 1's claims never see
            assert [e.seq for e in q.peek("b")] == b

            # A worker of partition 0 handles b's two, and nothing of partition 3's a.
            q.publish("a", b"a0")
            handled = []
            q.work(lambda lease: handled.append((lease.group, lease.seq, lease.partition)), partitions=[0],
                   idle_timeout=1.0)
            assert handled == [("b", b[0], 0), ("b", b[1], 0)]
            assert [(e.group, e.event) for e in q.peek()] == [("a", b"a0")]

            for bad, says in (([4], r"partitions\[0\] is 4"), ([0, 0], r"partitions\[1\] is 0, given twice")):
                with pytest.raises(mongomq.ArgumentError, match=says) as info:
                    q.claim(partitions=bad)
                assert info.value.argument == "partitions"
                with pytest.raises(mongomq.ArgumentError, match=says) as info:
                    q.claim(partitions=bad, wait=1.0)
                assert info.value.argument == "partitions"
                with pytest.raises(mongomq.ArgumentError, match=says) as info:
                    q.worker(lambda lease: None, partitions=bad)
                assert info.value.argument == "partitions"
            assert q.stats().messages == 1
        finally:
            q.drop()


def test_partitions_wait_hint(client, db):
    assert (mongomq.group_partition("a", 4), mongomq.group_partition("b", 4)) == (3, 0)
    with client.queue(db, "mq", partitions=4) as q:
        try:
            other = threading.Timer(0.1, lambda: q.publish("b", b"not this one"))
            mine = threading.Timer(0.2, lambda: q.publish("a", b"this one"))
            started = time.monotonic()
            other.start()
            mine.start()
            lease = q.claim(wait=10.0, partitions=[3])
            elapsed = time.monotonic() - started
            other.join()
            mine.join()
            assert lease is not None and (lease.group, lease.event, lease.partition) == ("a", b"this one", 3)
            assert elapsed < 5, elapsed
            q.ack(lease)
            left = claim_ok(q, partitions=[0])  # b's event is still there, in its partition
            assert (left.group, left.event) == ("b", b"not this one")
            q.ack(left)
        finally:
            q.drop()


# ---- waiting claims ---------------------------------------------------------------------

def test_wait_woken_by_publish(queue):
    def later():
        time.sleep(0.2)
        queue.publish("g", b"woken")

    t = threading.Thread(target=later)
    started = time.monotonic()
    t.start()
    lease = queue.claim(wait=10.0)
    elapsed = time.monotonic() - started
    t.join()
    assert lease is not None and lease.event == b"woken"
    assert elapsed < 5


# Python's own mechanism is Ctrl-C: SIGINT to a process whose main thread waits in a
# claim while another thread waits on the same queue.
_CANCEL_ONE_CHILD = r"""
import json, os, sys, threading, time
import mongomq
P = int(os.environ.get("MONGOMQ_TEST_PARTITIONS") or 1)  # conftest.PARTITIONS
out = {}
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq", partitions=P) as q:
    other = {}
    def waiter():
        other["lease"] = q.claim(wait=30.0)
    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    print("ready", flush=True)
    started = time.monotonic()
    try:
        q.claim(wait=30.0)
        out["main"] = "returned"
    except KeyboardInterrupt:
        out["main"] = "KeyboardInterrupt"
    out["main_elapsed"] = time.monotonic() - started
    q.publish("g", b"next")
    t.join(20)
    lease = other.get("lease")
    out["other"] = None if lease is None else lease.event.decode()
    # the queue goes on: the main thread waits again and is woken by a publish
    threading.Timer(0.2, lambda: q.publish("g2", b"again")).start()
    again = q.claim(wait=10.0)
    out["again"] = None if again is None else again.event.decode()
    q.drop()
print(json.dumps(out), flush=True)
"""


def _sigint_child(code: str, db: str):
    p = run_python(code, env_extra={"DB": db})
    line = p.stdout.readline()
    assert line.strip() == "ready", (line, p.stderr.read() if p.poll() is not None else "")
    time.sleep(0.5)  # the main thread is in the claim by now
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), time.monotonic() - sent


def test_wait_cancel_one(db):
    result, _ = _sigint_child(_CANCEL_ONE_CHILD, db)
    assert result["main"] == "KeyboardInterrupt"
    assert result["main_elapsed"] < 5  # of a 30 s wait
    assert result["other"] == "next"  # the other waiter was not touched
    assert result["again"] == "again"


def test_wait_cancel_one_token(queue):
    """The same with a CancelToken, from another thread."""
    token = mongomq.CancelToken()
    results = {}

    def waiter(name, cancel):
        started = time.monotonic()
        try:
            results[name] = queue.claim(wait=30.0, cancel=cancel)
        except mongomq.Cancelled as e:
            results[name] = e
        results[name + "_elapsed"] = time.monotonic() - started

    a = threading.Thread(target=waiter, args=("a", token))
    b = threading.Thread(target=waiter, args=("b", None))
    a.start()
    b.start()
    time.sleep(0.3)
    token.cancel()
    a.join(10)
    assert not a.is_alive()
    assert isinstance(results["a"], mongomq.Cancelled)
    assert results["a"].status == mongomq._raw.MQ_CANCELLED
    assert results["a_elapsed"] < 5
    queue.publish("g", b"next")
    b.join(10)
    assert results["b"] is not None and results["b"].event == b"next"
    with pytest.raises(mongomq.Cancelled):  # a cancelled token cancels at once
        queue.claim(wait=30.0, cancel=token)


def test_interrupt_stops_all(queue):
    results = []

    def waiter():
        try:
            queue.claim(wait=10.0)
            results.append("returned")
        except mongomq.Interrupted as e:
            results.append(e)

    threads = [threading.Thread(target=waiter) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    interrupted = time.monotonic()
    queue.interrupt()
    for t in threads:
        t.join(10)
    assert time.monotonic() - interrupted < 5  # of their 10 s waits
    assert len(results) == 2 and all(isinstance(r, mongomq.Interrupted) for r in results)
    t0 = time.monotonic()
    with pytest.raises(mongomq.Interrupted):
        queue.claim(wait=5.0)
    assert time.monotonic() - t0 < 2
    seq = queue.publish("g", b"still works")
    assert seq >= 1
    lease = claim_ok(queue)  # a plain claim (no wait) still works after interrupt
    assert (lease.seq, lease.event) == (seq, b"still works")
    queue.ack(lease)
    assert queue.claim() is None


# ---- errors ----------------------------------------------------------------------------

def test_error_bad_argument(queue, client):
    queue.publish("g", b"x")
    lease = claim_ok(queue)
    value_errors = [
        ("group", lambda: queue.publish("", b"x")),
        ("group", lambda: queue.publish("g\0h", b"x")),
        ("group", lambda: queue.publish("x" * 1001, b"x")),
        ("priority", lambda: queue.publish("g", b"x", priority=5)),
        ("priority", lambda: queue.publish("g", b"x", priority=-1)),
        ("not_before", lambda: queue.publish("g", b"x", not_before=datetime(1969, 12, 31, tzinfo=UTC))),
        ("not_before", lambda: queue.publish("g", b"x", not_before=datetime(1970, 1, 1, tzinfo=UTC))),
        ("not_before", lambda: queue.publish("g", b"x", not_before=datetime(2030, 1, 1))),  # naive
        ("visibility", lambda: queue.claim(visibility=-1)),
        ("visibility", lambda: queue.claim(visibility=0)),
        ("visibility", lambda: queue.claim(visibility=math.inf)),
        ("min_priority", lambda: queue.claim(min_priority=-1)),
        ("min_priority", lambda: queue.claim(min_priority=5)),
        ("wait", lambda: queue.claim(wait=-1.0)),
        ("max_events", lambda: queue.claim(max_events=0)),
        ("max_events", lambda: queue.claim(max_events=mongomq.BATCH_MAX + 1)),
        ("worker_id", lambda: queue.claim(worker_id="")),
        ("delay", lambda: queue.nack(lease, delay=-1)),
        ("visibility", lambda: queue.extend(lease, -5)),
        ("max_attempts", lambda: queue.set_max_attempts(-1)),
        ("db", lambda: client.queue("bad.db", "mq")),
        ("prefix", lambda: client.queue("okdb", "")),
        ("prefix", lambda: client.queue("okdb", "a$b")),
        ("group", lambda: mongomq.Batch([("", b"x")])),
        ("priority", lambda: mongomq.Batch([("g", b"x", 9)])),
        ("not_before", lambda: mongomq.Batch().add("g", b"x", not_before=datetime(2030, 1, 1))),
    ]
    for name, call in value_errors:
        with pytest.raises(ValueError) as info:
            call()
        assert name in str(info.value), (name, str(info.value))
        if isinstance(info.value, mongomq.ArgumentError):
            assert info.value.argument == name, (name, info.value.argument, str(info.value))
            assert info.value.status == mongomq._raw.MQ_ERR_ARG
    type_errors = [
        ("group", lambda: queue.publish(5, b"x")),
        ("event", lambda: queue.publish("g", 5)),
        ("not_before", lambda: queue.publish("g", b"x", not_before=1_900_000_000.0)),
        ("cancel", lambda: queue.claim(wait=1.0, cancel=True)),
        ("priority", lambda: queue.publish("g", b"x", priority="1")),
        ("priority", lambda: queue.publish("g", b"x", priority=1.5)),
        ("visibility", lambda: queue.claim(visibility="30")),
        ("wait", lambda: queue.claim(wait=None)),
        ("min_priority", lambda: queue.claim(min_priority=True)),
        ("uri", lambda: mongomq.Client(None)),
        ("db", lambda: client.queue(b"db")),
    ]
    for name, call in type_errors:
        with pytest.raises(TypeError) as info:
            call()
        assert name in str(info.value), (name, str(info.value))
    with pytest.raises(mongomq.ArgumentError) as info:
        mongomq.Client("not a uri")
    assert "uri" in str(info.value)
    queue.ack(lease)  # nothing above changed the lease


def test_error_connect():
    with mongomq.Client("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200") as c:
        with pytest.raises(mongomq.ConnectError) as info:
            c.queue(fresh_db(), "mq", partitions=PARTITIONS)
    assert isinstance(info.value, mongomq.Error)
    assert info.value.status == mongomq._raw.MQ_ERR_CONNECT
    assert info.value.status_name == "MQ_ERR_CONNECT"


def test_error_lease_lost_type(queue):
    assert issubclass(mongomq.LeaseLost, mongomq.Error)
    assert not issubclass(mongomq.LeaseLost, mongomq.ArgumentError)
    queue.publish("g", b"x")
    stale = claim_ok(queue, visibility=0.2)
    time.sleep(0.4)
    queue.ack(claim_ok(queue))
    with pytest.raises(mongomq.Error) as info:
        queue.nack(stale)
    assert type(info.value) is mongomq.LeaseLost
    assert info.value.status == mongomq._raw.MQ_LEASE_LOST
    assert info.value.status_name == "MQ_LEASE_LOST"


# ---- concurrency ------------------------------------------------------------------------

def bounded(what: str, fn, limit: float = 60.0):
    """fn() on a thread of its own; the test fails if it has not returned within limit
    seconds (a call that waits for a second pooled client with maxPoolSize=1 would
    hang). The thread is a daemon: a hung one does not hold the interpreter's exit."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: B902 - handed to the test's thread
            box["error"] = e

    t = threading.Thread(target=run, name="bounded: " + what, daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        pytest.fail("%s has not returned within %g s" % (what, limit))
    if "error" in box:
        raise box["error"]
    return box.get("value")


def with_option(uri: str, option: str) -> str:
    """uri with option added to its options (? or &, as the URI needs)."""
    if "?" in uri:
        return uri + ("" if uri.endswith(("?", "&")) else "&") + option
    return uri + ("?" if "/" in uri.split("://", 1)[-1] else "/?") + option


def test_small_pool(uri, db):
    assert with_option("mongodb://h:1", "maxPoolSize=1") == "mongodb://h:1/?maxPoolSize=1"
    assert with_option("mongodb://h:1/", "maxPoolSize=1") == "mongodb://h:1/?maxPoolSize=1"
    assert with_option("mongodb://h:1/?w=1", "maxPoolSize=1") == "mongodb://h:1/?w=1&maxPoolSize=1"
    with mongomq.Client(with_option(uri, "maxPoolSize=1")) as c, c.queue(db, "mq", partitions=PARTITIONS) as q:
        a = same_partition("b", "a")  # b's lease first, and seqs 1..5 of one partition
        try:
            first = bounded("publish_batch", lambda: q.publish_batch([("b", b"b1"), ("b", b"b2"), ("b", b"b3")]))
            assert first == nth_seq("b", 1)
            assert bounded("publish", lambda: q.publish(a, b"a1")) == nth_seq(a, 4)

            lease = bounded("claim", lambda: q.claim())
            assert (lease.group, lease.seq) == ("b", nth_seq("b", 1))
            bounded("extend", lambda: q.extend(lease, 60))
            bounded("unclaim", lambda: q.unclaim(lease))

            lease = bounded("batch claim", lambda: q.claim(max_events=3))
            assert (lease.group, lease.count, lease.attempts) == ("b", 3, 1)
            bounded("ack", lambda: q.ack(lease))

            lease = bounded("waiting claim", lambda: q.claim(wait=5.0))
            assert (lease.group, lease.seq) == (a, nth_seq(a, 4))
            bounded("nack", lambda: q.nack(lease))

            bounded("set_max_attempts", lambda: q.set_max_attempts(1))
            assert bounded("claim into the dead letters", lambda: q.claim()) is None  # a's 2nd delivery
            assert bounded("dead_count", q.dead_count) == 1
            assert bounded("dead_requeue", lambda: q.dead_requeue(nth_seq(a, 4))) == nth_seq(a, 5)
            bounded("set_max_attempts", lambda: q.set_max_attempts(0))

            assert bounded("repair", q.repair) == 0
            assert bounded("stats", q.stats).messages == 1
            assert len(bounded("peek", q.peek)) == 1
            bounded("purge_group", lambda: q.purge_group(a))
            assert bounded("stats", q.stats).messages == 0

            q.publish_batch([("w%d" % (i % 4), b"%d" % i) for i in range(20)])
            handled = []
            w = q.worker(handled.append, concurrency=4)
            try:
                def drained() -> bool:
                    deadline = time.monotonic() + 55
                    while q.stats().messages > 0 and time.monotonic() < deadline:
                        time.sleep(0.05)
                    return q.stats().messages == 0

                assert bounded("the worker's drain", drained), "the worker drained the 20 events"
            finally:
                assert bounded("the worker's stop", w.stop)
            assert len(handled) == 20
        finally:
            q.drop()


def test_concurrency_16x2000(queue):
    groups, per_group = 100, 20
    expected = {}
    for start in range(0, per_group, 5):
        items = []
        for g in range(groups):
            for i in range(start, start + 5):
                items.append(("g%03d" % g, b"%d" % i))
        outcomes = queue.publish_batch(items).outcomes
        for k, (grp, event) in enumerate(items):
            expected[outcomes[k].seq] = (grp, int(event))
    total = groups * per_group
    lock = threading.Lock()
    acked = defaultdict(list)  # group -> indexes in ack order
    seen_seqs = []
    held = set()
    problems = []
    done = threading.Event()

    def drain():
        while not done.is_set():
            lease = queue.claim(visibility=60, wait=0.5)
            if lease is None:
                continue
            with lock:
                if lease.group in held:
                    problems.append("group %s held twice" % lease.group)
                held.add(lease.group)
            idx = int(lease.event)
            with lock:
                held.discard(lease.group)  # before the ack: the lease still holds the group
                acked[lease.group].append(idx)
                seen_seqs.append(lease.seq)
            queue.ack(lease)
            with lock:
                if len(seen_seqs) == total:
                    done.set()

    threads = [threading.Thread(target=drain) for _ in range(16)]
    for t in threads:
        t.start()
    finished = done.wait(180)
    done.set()
    for t in threads:
        t.join(30)
    assert finished, "drained %d of %d" % (len(seen_seqs), total)
    assert not problems
    assert sorted(seen_seqs) == sorted(expected)  # each exactly once
    for g in range(groups):
        assert acked["g%03d" % g] == list(range(per_group))
    assert queue.stats().messages == 0


def test_gil_released_while_waiting(queue):
    """A waiting claim does not hold the GIL: Python code in other threads runs."""
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    n0 = len(ticks)
    assert queue.claim(wait=0.5) is None
    n1 = len(ticks)
    stop.set()
    t.join()
    assert n1 - n0 >= 5


# ---- clock and log ----------------------------------------------------------------------

def test_manual_clock(queue):
    T = datetime.fromtimestamp(1_900_000_000, UTC)
    clock = mongomq.ManualClock(T)
    assert clock.now == T
    queue.set_clock(clock)
    assert queue.now() == T
    queue.publish("g", b"at T+60", not_before=T + seconds(60))
    assert queue.claim() is None
    clock.advance(61)
    assert clock.now == T + seconds(61)
    assert queue.now() == T + seconds(61)
    lease = claim_ok(queue, visibility=30)
    assert lease.event == b"at T+60"
    assert abs(lease.deadline - (T + seconds(61 + 30))) < seconds(1e-3)
    # closing the clock's handle while the queue runs on it: the queue keeps the clock
    clock.close()
    clock.close()
    assert clock.closed
    assert queue.now() == T + seconds(61)
    queue.extend(lease, 10)
    assert abs(lease.deadline - (T + seconds(61 + 10))) < seconds(1e-3)
    queue.ack(lease)
    for call in [lambda: clock.now, lambda: clock.set(T), lambda: clock.advance(1.0),
                 lambda: queue.set_clock(clock)]:
        with pytest.raises(mongomq.ClosedError, match="clock is closed"):
            call()
    # dropping the handle (the garbage collector closes it): the same
    other = mongomq.ManualClock(T + seconds(1000))
    queue.set_clock(other)
    del other
    gc.collect()
    assert queue.now() == T + seconds(1000)
    queue.publish("h", b"now")
    assert abs(claim_ok(queue, visibility=5).deadline - (T + seconds(1005))) < seconds(1e-3)
    # no clock: server time again
    queue.set_clock(None)
    assert abs(queue.now().timestamp() - time.time()) < 60


def test_manual_clock_handle(queue, client):
    T = datetime.fromtimestamp(1_800_000_000, UTC)
    with mongomq.ManualClock(T) as clock:
        clock.set(T + seconds(5))
        assert clock.now == T + seconds(5)
        clock.advance(-2.5)
        assert clock.now == T + seconds(2.5)
        clock.advance(timedelta(seconds=1))
        assert clock.now == T + seconds(3.5)
        clock.set(T.astimezone(timezone(timedelta(hours=2))))  # the same instant, another zone
        assert clock.now == T and clock.now.utcoffset() == timedelta(0)
        assert "ManualClock" in repr(clock)
        # one clock, two queues; closing one queue leaves the other on it
        with client.queue(queue.db, queue.prefix, partitions=PARTITIONS) as second:
            second.set_clock(clock)
            queue.set_clock(clock)
        clock.advance(1)
        assert queue.now() == T + seconds(1)
    assert clock.closed and "closed" in repr(clock)
    assert queue.now() == T + seconds(1)
    for name, call in [("start", lambda: mongomq.ManualClock(datetime(1969, 12, 31, tzinfo=UTC))),
                       ("start", lambda: mongomq.ManualClock(datetime(2030, 1, 1))),  # naive
                       ("t", lambda: mongomq.ManualClock(T).set(datetime(2030, 1, 1))),
                       ("seconds", lambda: mongomq.ManualClock(T).advance(math.nan))]:
        with pytest.raises(mongomq.ArgumentError) as info:
            call()
        assert info.value.argument == name, (name, str(info.value))
    for name, call in [("start", lambda: mongomq.ManualClock("1")),
                       ("start", lambda: mongomq.ManualClock(1_800_000_000.0)),  # an instant is a datetime
                       ("t", lambda: mongomq.ManualClock(T).set(1_800_000_000.0)),
                       ("seconds", lambda: mongomq.ManualClock(T).advance(None)),
                       ("clock", lambda: queue.set_clock(T))]:
        with pytest.raises(TypeError, match=name):
            call()
    closed = client.queue(queue.db, queue.prefix, partitions=PARTITIONS)
    closed.close()
    with mongomq.ManualClock(T) as clock:
        with pytest.raises(mongomq.ClosedError, match="queue is closed"):
            closed.set_clock(clock)
    with pytest.raises(mongomq.ClosedError, match="queue is closed"):
        closed.set_clock(None)


_CLOCK_GC_CHILD = r"""
import gc, os, random, sys
from datetime import datetime, timedelta, timezone
import mongomq
P = int(os.environ.get("MONGOMQ_TEST_PARTITIONS") or 1)  # conftest.PARTITIONS
uri = os.environ["MONGOMQ_TEST_URI"]
db = os.environ["DB"]
random.seed(11)
T = datetime.fromtimestamp(1_900_000_000, timezone.utc)
for round_ in range(4):
    c = mongomq.Client(uri)
    clocks = [mongomq.ManualClock(T + timedelta(seconds=i)) for i in range(3)]
    qs = [c.queue(db, "mq", partitions=P) for _ in range(3)]
    for q in qs:
        for k in clocks:
            q.set_clock(k)
        assert q.now() == T + timedelta(seconds=2)
    clocks[round_ % 3].close()
    qs[round_ % 3].close()
    objs = [c] + clocks + qs
    holder = {"objs": objs}
    holder["self"] = holder  # a cycle: the collector frees them in its own order
    random.shuffle(objs)
    del c, clocks, qs, objs, holder, q, k
    gc.collect()
# a queue outlives its clock's handle and runs on it
c = mongomq.Client(uri)
q = c.queue(db, "mq", partitions=P)
k = mongomq.ManualClock(T)
q.set_clock(k)
del k
gc.collect()
q.publish("g", b"x")
assert q.now() == T
lease = q.claim(visibility=5)
assert lease is not None and lease.deadline == T + timedelta(seconds=5)
q.drop()
q.close()
c.close()
# and whatever is left at interpreter exit
k2 = mongomq.ManualClock(T)
q2 = mongomq.Client(uri).queue(db, "mq2", partitions=P)
q2.set_clock(k2)
q2.drop()
print("ok", flush=True)
"""


def test_safety_clock_gc_any_order(db):
    p = run_python(_CLOCK_GC_CHILD, env_extra={"DB": db, "MALLOC_PERTURB_": "165"})
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, (p.returncode, err[-2000:])
    assert out.strip().splitlines()[-1] == "ok"


_UNKNOWN_OPTION_URI = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"


def _unknown_option_lines(got, start=0):
    return [g for g in got[start:] if "mongomqnosuchoption" in g[2].lower()]


def _wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_log_handler():
    got = []

    def handler(level, domain, message):
        got.append((level, domain, message, threading.current_thread()))

    mongomq.set_log_handler(handler)
    try:
        mongomq.Client(_UNKNOWN_OPTION_URI).close()  # libmongoc warns while parsing the URI
        assert _wait_for(lambda: _unknown_option_lines(got), 10), got
        level, domain, message, thread = _unknown_option_lines(got)[0]
        assert (level, domain) == (2, "mongoc"), (level, domain, message)
        assert isinstance(message, str)
        assert thread is not threading.main_thread()
        assert thread.name == "mongomq-log" and thread.daemon
        # silence: nothing more reaches the handler
        mongomq.set_log_handler(None)
        seen = len(got)
        mongomq.Client(_UNKNOWN_OPTION_URI).close()
        time.sleep(1.0)
        assert _unknown_option_lines(got, seen) == []
        # silenced, the log thread ends (within its 0.25 s wait) ...
        assert _wait_for(lambda: not thread.is_alive(), 5), "the log thread ended"
        # ... and a handler set again gets the lines again, on a new log thread
        mongomq.set_log_handler(handler)
        mongomq.Client(_UNKNOWN_OPTION_URI).close()
        assert _wait_for(lambda: _unknown_option_lines(got, seen), 10)
        again = _unknown_option_lines(got, seen)[0][3]
        assert again is not thread and again.name == "mongomq-log" and again.daemon
    finally:
        mongomq.set_log_handler(None)
    with pytest.raises(TypeError, match="handler"):
        mongomq.set_log_handler("not callable")


def test_log_handler_exception_goes_on(monkeypatch):
    """An exception in the handler goes to sys.unraisablehook; delivery goes on."""
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    got = []

    def handler(level, domain, message):
        got.append((level, domain, message))
        if len(_unknown_option_lines(got)) == 1 and "mongomqnosuchoption" in message.lower():
            raise RuntimeError("the handler failed on purpose")

    mongomq.set_log_handler(handler)
    try:
        mongomq.Client(_UNKNOWN_OPTION_URI).close()
        assert _wait_for(lambda: reported, 10), got
        seen = len(got)
        mongomq.Client(_UNKNOWN_OPTION_URI).close()
        assert _wait_for(lambda: _unknown_option_lines(got, seen), 10), got
    finally:
        mongomq.set_log_handler(None)
    assert len(reported) == 1
    assert isinstance(reported[0].exc_value, RuntimeError)
    assert reported[0].exc_type is RuntimeError
    assert reported[0].exc_traceback is not None
    assert "mongomq log handler" in reported[0].err_msg
    assert reported[0].object is handler


_LOG_DEFAULT_HOOK_CHILD = r"""
import time
import mongomq
got = []
def handler(level, domain, message):
    if "mongomqnosuchoption" in message.lower():
        got.append(message)
        if len(got) == 1:
            raise RuntimeError("the handler failed on purpose")
mongomq.set_log_handler(handler)
for i in range(2):
    mongomq.Client("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1").close()
    deadline = time.monotonic() + 10
    while len(got) < i + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
print(len(got), flush=True)
"""


def test_log_handler_exception_printed():
    """With Python's own unraisablehook, the exception is printed with its traceback."""
    p = run_python(_LOG_DEFAULT_HOOK_CHILD)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err[-2000:]
    assert out.strip() == "2", (out, err[-2000:])
    assert "Exception ignored in mongomq log handler" in err
    assert "Traceback" in err and "RuntimeError: the handler failed on purpose" in err


def test_log_thread_releases_gil():
    """The log thread waits for lines without the GIL: the main thread runs freely."""
    mongomq.set_log_handler(lambda level, domain, message: None)
    try:
        time.sleep(0.3)  # the thread is in its wait
        started = time.monotonic()
        for _ in range(50):
            time.sleep(0.005)
        assert time.monotonic() - started < 1.5
    finally:
        mongomq.set_log_handler(None)


# ---- safety -------------------------------------------------------------------------

def test_safety_use_after_close(uri):
    db = fresh_db()
    client = mongomq.Client(uri)
    queue = client.queue(db, "mq", partitions=PARTITIONS)
    queue.publish("g", b"x")
    lease = claim_ok(queue)
    queue.ack(lease)
    lease.close()
    for call in [lambda: lease.seq, lambda: lease.group, lambda: lease.event, lambda: lease.events,
                 lambda: lease.attempts, lambda: lease.deadline, lambda: lease.count, lambda: lease.partition,
                 lambda: queue.ack(lease), lambda: queue.nack(lease), lambda: queue.extend(lease, 5)]:
        with pytest.raises(mongomq.ClosedError, match="lease is closed"):
            call()
    queue.publish("g", b"y")
    open_lease = claim_ok(queue)
    queue.drop()
    queue.close()
    for call in [lambda: queue.publish("g", b"x"), lambda: queue.claim(), lambda: queue.claim(wait=1.0),
                 lambda: queue.ack(open_lease), lambda: queue.nack(open_lease),
                 lambda: queue.extend(open_lease, 5), lambda: queue.stats(), lambda: queue.repair(),
                 lambda: queue.purge_group("g"), lambda: queue.drop(), lambda: queue.interrupt(),
                 lambda: queue.dead_count(), lambda: queue.dead_purge(), lambda: queue.dead_requeue(1),
                 lambda: queue.set_max_attempts(1), lambda: queue.publish_batch([("g", b"x")]),
                 lambda: queue.now(), lambda: queue.worker(lambda lease: None),
                 lambda: queue.groups(), lambda: queue.pause_group("g"), lambda: queue.resume_group("g"),
                 lambda: queue.dead_page(), lambda: queue.publish("g", b"x", dedup_key="k"),
                 lambda: queue.publish_batch([("g", b"x", 0, None, "k")]), lambda: queue.set_dedup_window(60),
                 lambda: queue.set_dedup_scope("group"), lambda: queue.partitions,
                 lambda: queue.claim(partitions=[0]), lambda: queue.claim(partitions=[0], wait=1.0)]:
        with pytest.raises(mongomq.ClosedError, match="queue is closed"):
            call()
    assert open_lease.event == b"y"  # a lease outlives its queue
    client.close()
    with pytest.raises(mongomq.ClosedError, match="client is closed"):
        client.queue(db, "mq", partitions=PARTITIONS)
    with pytest.raises(mongomq.ClosedError, match="client is closed"):
        client.command_count
    batch = mongomq.Batch([("g", b"x")])
    batch.close()
    with pytest.raises(mongomq.ClosedError, match="batch is closed"):
        batch.add("g", b"x")
    assert isinstance(mongomq.ClosedError("x"), mongomq.Error)


def test_safety_close_twice(uri):
    client = mongomq.Client(uri)
    queue = client.queue(fresh_db(), "mq", partitions=PARTITIONS)
    queue.publish("g", b"x")
    lease = claim_ok(queue)
    batch = mongomq.Batch([("g", b"x")])
    queue.drop()
    for obj in (lease, batch, queue, client):
        obj.close()
        obj.close()
        assert obj.closed
    with mongomq.Client(uri) as c:
        c.close()  # and the with block closes it again


def test_safety_queue_keeps_client(uri):
    db = fresh_db()
    client = mongomq.Client(uri)
    queue = client.queue(db, "mq", partitions=PARTITIONS)
    client.close()  # the C client lives on until its last queue closes
    assert queue.publish("g", b"x") == nth_seq("g", 1)
    lease = claim_ok(queue, wait=1.0)
    queue.ack(lease)
    queue.drop()
    queue.close()
    # and in the other order, and dropped without close in both orders
    client = mongomq.Client(uri)
    queue = client.queue(db, "mq", partitions=PARTITIONS)
    queue.close()
    client.close()
    client = mongomq.Client(uri)
    queue = client.queue(db, "mq", partitions=PARTITIONS)
    del client
    gc.collect()
    assert queue.publish("g", b"y") >= 1
    queue.drop()
    del queue
    gc.collect()


_GC_CHILD = r"""
import gc, os, random, sys
import mongomq
P = int(os.environ.get("MONGOMQ_TEST_PARTITIONS") or 1)  # conftest.PARTITIONS
uri = os.environ["MONGOMQ_TEST_URI"]
db = os.environ["DB"]
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
for round_ in range(3):
    objs = []
    c = mongomq.Client(uri)
    qs = [c.queue(db, "mq", partitions=P) for _ in range(3)]
    for q in qs:
        q.publish("g%d" % round_, b"x")
    leases = [q.claim(visibility=0.2) for q in qs]
    b = mongomq.Batch([("g", b"x")])
    objs = [c, b] + qs + [l for l in leases if l is not None]
    # a cycle through every object, so the collector frees them in its own order
    holder = {"objs": objs}
    holder["self"] = holder
    random.shuffle(objs)
    del c, qs, leases, b, objs, holder, q
    gc.collect()
with mongomq.Client(uri) as c, c.queue(db, "mq", partitions=P) as q:
    q.drop()
# and whatever is left at interpreter exit
c2 = mongomq.Client(uri)
q2 = c2.queue(db, "mq2", partitions=P)
l2 = None
q2.publish("g", b"x")
l2 = q2.claim()
q2.drop()
print("ok", flush=True)
"""


def test_safety_gc_any_order(db):
    env = {"DB": db}
    # glibc aborts on a double free; MALLOC_PERTURB_ makes a use after free visible.
    env["MALLOC_PERTURB_"] = "165"
    p = run_python(_GC_CHILD, env_extra=env)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, (p.returncode, err[-2000:])
    assert out.strip().splitlines()[-1] == "ok"


def test_close_during_a_waiting_claim(queue):
    """close() while another thread waits in a claim: close returns, the wait ends
    with ClosedError, the handle is freed after it, nothing crashes."""
    result = []

    def waiter():
        try:
            result.append(queue.claim(wait=20.0))
        except mongomq.ClosedError as e:
            result.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.3)
    with queue.client.queue(queue.db, queue.prefix, partitions=PARTITIONS) as other:
        other.drop()
    started = time.monotonic()  # (opening a queue on a loaded test server can take seconds)
    queue.close()
    t.join(10)
    assert time.monotonic() - started < 5
    assert len(result) == 1 and isinstance(result[0], mongomq.ClosedError)
