#!/usr/bin/env python3
"""Interoperability test: libmongomq (through ctypes) and harel's MongoTransport
(the Python library whose documents we share) on one queue.

    harel_interop.py PATH/TO/libmongomq.so      (server URI in MONGOMQ_TEST_URI)

Needs harel and pymongo (scripts/interop-venv.sh makes a venv with both pinned;
scripts/interop-run.sh runs this script with it). Every run uses a fresh database,
dropped at the end when everything passed (kept for inspection otherwise).

Collection names: harel's MongoTransport(prefix=P) keeps its queue in
P_transport_messages, P_transport_locks and P_transport_counters, so the same queue
is mq_queue_new(client, db, "P_transport") on our side.

Events: harel publishes Event.model_dump_json() (a JSON text, a BSON string) and its
claim parses the stored event with Event.model_validate_json, so what we publish for
a harel consumer must be the JSON of a harel Event.

Why ctypes and not the Python package (bindings/python): this test is a CTest suite
of the C library. It runs in scripts/test.sh's first stage and again under ASan, on
the libmongomq.so just built, before any binding is built; the package would put a
SWIG wrapper and an install step between the library under test and harel. harel
beside the Python package is covered by the matrix (tests/matrix/, stage 2c), whose
Python agent uses the package.

Exit status 0 when every check passed. The last line is
"harel_interop: N passed, M failed".
"""

import ctypes
import os
import sys
import time
import traceback
import uuid

import pymongo
import pydantic
from harel.engine.transport.mongo import MongoTransport
from harel.spec.states import Event

# ---------------------------------------------------------------------------------------
# libmongomq through ctypes

MQ_OK, MQ_EMPTY, MQ_LEASE_LOST, MQ_DUPLICATE = 0, 1, 2, 5


class MqError(ctypes.Structure):
    _fields_ = [
        ("status", ctypes.c_int),
        ("server_code", ctypes.c_int),
        ("message", ctypes.c_char * 504),
    ]


assert ctypes.sizeof(MqError) == 512, "mq_error must be 512 bytes"


class MqPublishOpts(ctypes.Structure):
    """mq_publish_opts, version 2 (0.6.0)."""
    _fields_ = [
        ("version", ctypes.c_uint),
        ("priority", ctypes.c_int),
        ("not_before", ctypes.c_double),
        ("dedup_key", ctypes.c_char_p),
    ]


class MqFailure(Exception):
    pass


class Mq:
    """The C API, with argument and result types declared for every function used."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, err = ctypes.c_void_p, ctypes.POINTER(MqError)
        sigs = {
            "mq_version": (ctypes.c_char_p, []),
            "mq_status_name": (ctypes.c_char_p, [ctypes.c_int]),
            "mq_client_new": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(vp), err]),
            "mq_client_destroy": (None, [vp]),
            "mq_queue_new": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(vp), err]),
            "mq_queue_destroy": (None, [vp]),
            "mq_publish": (ctypes.c_int, [vp, ctypes.c_char_p, vp, ctypes.c_size_t, ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_int64), err]),
            "mq_claim": (ctypes.c_int, [vp, ctypes.c_char_p, ctypes.c_double, ctypes.c_int,
                                        ctypes.POINTER(vp), err]),
            "mq_ack": (ctypes.c_int, [vp, vp, err]),
            "mq_nack": (ctypes.c_int, [vp, vp, ctypes.c_double, err]),
            "mq_extend": (ctypes.c_int, [vp, vp, ctypes.c_double, err]),
            "mq_lease_seq": (ctypes.c_int64, [vp]),
            "mq_lease_group": (ctypes.c_char_p, [vp]),
            "mq_lease_event": (vp, [vp, ctypes.POINTER(ctypes.c_size_t)]),
            "mq_lease_token": (ctypes.c_char_p, [vp]),
            "mq_lease_attempts": (ctypes.c_int, [vp]),
            "mq_lease_destroy": (None, [vp]),
            "mq_publish_with": (ctypes.c_int, [vp, ctypes.c_char_p, vp, ctypes.c_size_t,
                                               ctypes.POINTER(MqPublishOpts), ctypes.POINTER(ctypes.c_int64), err]),
            "mq_pause_group": (ctypes.c_int, [vp, ctypes.c_char_p, err]),
            "mq_resume_group": (ctypes.c_int, [vp, ctypes.c_char_p, err]),
        }
        for name, (restype, argtypes) in sigs.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        self.lib = lib

    def status_name(self, status):
        return self.lib.mq_status_name(status).decode()

    def check(self, what, status, err):
        """Raises on an error status (< 0); returns MQ_OK, MQ_EMPTY, MQ_LEASE_LOST or MQ_DUPLICATE."""
        if status < 0:
            raise MqFailure(f"{what}: {self.status_name(status)} "
                            f"(server_code {err.server_code}): {err.message.decode(errors='replace')}")
        return status


class OurLease:
    """A claimed lease's fields, read once; the handle stays for ack/nack/extend."""

    def __init__(self, mq, handle):
        lib = mq.lib
        self.mq, self.handle = mq, handle
        self.seq = lib.mq_lease_seq(handle)
        self.group = lib.mq_lease_group(handle).decode()
        n = ctypes.c_size_t(0)
        ptr = lib.mq_lease_event(handle, ctypes.byref(n))
        self.event = ctypes.string_at(ptr, n.value) if n.value else b""
        self.token = lib.mq_lease_token(handle).decode()
        self.attempts = lib.mq_lease_attempts(handle)

    def destroy(self):
        if self.handle:
            self.mq.lib.mq_lease_destroy(self.handle)
            self.handle = None


class OurQueue:
    def __init__(self, mq, client, db, prefix):
        self.mq = mq
        self.handle = ctypes.c_void_p()
        err = MqError()
        mq.check("mq_queue_new", mq.lib.mq_queue_new(client, db.encode(), prefix.encode(),
                                                     ctypes.byref(self.handle), ctypes.byref(err)), err)

    def publish(self, group, event: bytes, priority=0):
        seq, err = ctypes.c_int64(0), MqError()
        self.mq.check("mq_publish", self.mq.lib.mq_publish(self.handle, group.encode(), event, len(event),
                                                           priority, ctypes.byref(seq), ctypes.byref(err)), err)
        return seq.value

    def publish_key(self, group, event: bytes, key):
        """(status, seq) of a publish with a dedup key: MQ_OK or MQ_DUPLICATE."""
        seq, err = ctypes.c_int64(0), MqError()
        opts = MqPublishOpts(2, 0, 0.0, key.encode())
        st = self.mq.check("mq_publish_with", self.mq.lib.mq_publish_with(
            self.handle, group.encode(), event, len(event), ctypes.byref(opts), ctypes.byref(seq),
            ctypes.byref(err)), err)
        return st, seq.value

    def claim(self, visibility=30.0, min_priority=0, worker=b"c-worker"):
        """An OurLease, or None on MQ_EMPTY."""
        out, err = ctypes.c_void_p(), MqError()
        st = self.mq.check("mq_claim", self.mq.lib.mq_claim(self.handle, worker, visibility, min_priority,
                                                            ctypes.byref(out), ctypes.byref(err)), err)
        if st == MQ_EMPTY:
            if out.value is not None:
                raise MqFailure("mq_claim: MQ_EMPTY but *out is not NULL")
            return None
        return OurLease(self.mq, out)

    def ack(self, lease):
        if lease is None:
            raise MqFailure("mq_ack: no lease (the claim before it was MQ_EMPTY)")
        err = MqError()
        return self.mq.check("mq_ack", self.mq.lib.mq_ack(self.handle, lease.handle, ctypes.byref(err)), err)

    def nack(self, lease, delay=0.0):
        if lease is None:
            raise MqFailure("mq_nack: no lease (the claim before it was MQ_EMPTY)")
        err = MqError()
        return self.mq.check("mq_nack", self.mq.lib.mq_nack(self.handle, lease.handle, delay, ctypes.byref(err)),
                             err)

    def pause(self, group):
        err = MqError()
        return self.mq.check("mq_pause_group", self.mq.lib.mq_pause_group(self.handle, group.encode(),
                                                                         ctypes.byref(err)), err)

    def resume(self, group):
        err = MqError()
        return self.mq.check("mq_resume_group", self.mq.lib.mq_resume_group(self.handle, group.encode(),
                                                                           ctypes.byref(err)), err)

    def destroy(self):
        if self.handle:
            self.mq.lib.mq_queue_destroy(self.handle)
            self.handle = None


# ---------------------------------------------------------------------------------------
# checks

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok   {name}")
    else:
        failed += 1
        print(f"  FAIL {name}" + (f": {detail}" if detail else ""))
    return ok


def check_eq(name, got, want):
    return check(name, got == want, f"got {got!r}, want {want!r}")


class Ctx:
    def __init__(self, mq, client, mongo, db):
        self.mq, self.client, self.mongo, self.db = mq, client, mongo, db
        self.queues = []

    def pair(self, harel_prefix):
        """harel's transport and our queue over the same three collections."""
        harel = MongoTransport(self.mongo, self.db, prefix=harel_prefix)
        ours = OurQueue(self.mq, self.client, self.db, harel_prefix + "_transport")
        self.queues.append(ours)
        coll = {k: self.mongo[self.db][f"{harel_prefix}_transport_{k}"] for k in ("messages", "locks", "counters")}
        return harel, ours, coll


def drain_ours(q, min_priority=0, limit=1000):
    """Claims and acks until MQ_EMPTY; the leases' (group, seq, event, attempts) in order."""
    got = []
    for _ in range(limit):
        lease = q.claim(min_priority=min_priority)
        if lease is None:
            return got
        try:
            got.append((lease.group, lease.seq, lease.event, lease.attempts))
            st = q.ack(lease)
            if st != MQ_OK:
                raise MqFailure(f"mq_ack of group {lease.group} seq {lease.seq}: {q.mq.status_name(st)}")
        finally:
            lease.destroy()
    raise MqFailure("drain did not reach MQ_EMPTY")


def drain_harel(t, min_priority=0, limit=1000):
    got = []
    for _ in range(limit):
        lease = t.claim("py-worker", 30.0, min_priority)
        if lease is None:
            return got
        got.append(lease)
        t.ack(lease)
    raise MqFailure("harel drain did not reach None")


def per_group(items, key):
    out = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def check_empty(name, coll):
    check_eq(f"{name}: messages collection empty", coll["messages"].count_documents({}), 0)
    check_eq(f"{name}: locks collection empty", coll["locks"].count_documents({}), 0)


# ---------------------------------------------------------------------------------------
# scenarios


def scenario_a(ctx):
    """harel publishes, we consume."""
    harel, ours, coll = ctx.pair("a")
    prio = {"ga-0": 0, "ga-1": 3, "ga-2": 1, "ga-3": 4, "ga-4": 2}
    published = {g: [] for g in prio}
    for i in range(6):  # interleaved: the groups' seqs mix
        for g, p in prio.items():
            data = {"i": i, "group": g, "text": "h\u00e9llo \u2713 \u65e5\u672c"}
            if g == "ga-2" and i == 3:
                data["big"] = "x" * 200_000
            ev = Event(kind=f"k{i}", data=data)
            harel.publish(g, ev, priority=p if i == 0 else (p + 2) % 5)  # only the first counts
            published[g].append(ev)

    stored = per_group(coll["messages"].find({}, sort=[("_id", 1)]), lambda d: d["group_id"])
    check("a: harel stores events as JSON text",
          all(isinstance(d["event"], str) for ds in stored.values() for d in ds))
    check("a: harel's stored text is Event.model_dump_json()",
          all([d["event"] for d in stored[g]] == [e.model_dump_json() for e in published[g]] for g in prio))
    locks = {d["_id"]: d for d in coll["locks"].find()}
    check_eq("a: harel's lock priorities (first publish wins)", {g: d["priority"] for g, d in locks.items()}, prio)
    check("a: harel's locks have no attempts field", all("attempts" not in d for d in locks.values()))

    # Floor 3: exactly the groups of priority >= 3, drained.
    high = drain_ours(ours, min_priority=3)
    high_groups = [g for g, _, _, _ in high]
    check_eq("a: floor 3 gets exactly the groups of priority >= 3",
             sorted(set(high_groups)), sorted(g for g, p in prio.items() if p >= 3))
    check("a: floor 3 serves its two groups round-robin",
          all(high_groups[i] != high_groups[i + 1] for i in range(len(high_groups) - 1)), str(high_groups))
    rest = drain_ours(ours, min_priority=0)
    got = per_group(high + rest, lambda it: it[0])
    check_eq("a: every group received", sorted(got), sorted(prio))
    for g in prio:
        want = [(d["_id"], d["event"].encode("utf-8")) for d in stored.get(g, [])]
        check(f"a: {g} in FIFO order with harel's exact event bytes",
              [(seq, ev) for _, seq, ev, _ in got.get(g, [])] == want,
              f"seqs got {[s for _, s, _, _ in got.get(g, [])]}, want {[s for s, _ in want]}")
    check("a: every event parses back into the Event harel published",
          all([Event.model_validate_json(ev) for _, _, ev, _ in got[g]] == published[g] for g in prio))
    check("a: every first delivery reports attempts == 1", all(a == 1 for _, _, _, a in high + rest))
    check_empty("a", coll)


def scenario_b(ctx):
    """We publish, harel consumes."""
    harel, ours, coll = ctx.pair("b")
    prio = {"gb-0": 0, "gb-1": 2, "gb-2": 4, "gb-3": 1}
    published = {g: [] for g in prio}
    for i in range(5):
        for g, p in prio.items():
            ev = Event(kind=f"k{i}", data={"i": i, "group": g, "u": "\u00fc\u00df\u20ac"})
            seq = ours.publish(g, ev.model_dump_json().encode("utf-8"), p if i == 0 else (p + 3) % 5)
            published[g].append((seq, ev))

    msgs = list(coll["messages"].find({}, sort=[("_id", 1)]))
    check("b: our events are stored as BSON strings", all(isinstance(d["event"], str) for d in msgs))
    check_eq("b: our _ids are the seqs mq_publish returned",
             sorted(d["_id"] for d in msgs), sorted(s for evs in published.values() for s, _ in evs))
    locks = {d["_id"]: d for d in coll["locks"].find()}
    check_eq("b: our lock priorities (first publish wins)", {g: d["priority"] for g, d in locks.items()}, prio)
    # harel's shape; available_at is our publish's time (harel writes 0.0: docs/design.md,
    # "Round-robin and fairness"), already due for harel's claim, which compares it with
    # its wall clock.
    now = time.time()
    check("b: our locks are harel's shape (a float available_at already due, token None)",
          all(isinstance(d["available_at"], float) and 0 < d["available_at"] <= now and d["token"] is None
              for d in locks.values()), str(locks))

    high = drain_harel(harel, min_priority=2)
    check_eq("b: harel's floor 2 gets exactly our groups of priority >= 2",
             sorted({l.group_id for l in high}), sorted(g for g, p in prio.items() if p >= 2))
    rest = drain_harel(harel, min_priority=0)
    got = per_group(high + rest, lambda l: l.group_id)
    for g in prio:
        check(f"b: harel gets {g} in FIFO order with our seqs and events",
              [(l.seq, l.event) for l in got.get(g, [])] == published[g],
              f"seqs got {[l.seq for l in got.get(g, [])]}, want {[s for s, _ in published[g]]}")
    check("b: harel's claim finds nothing more", harel.claim("py-worker", 30.0) is None)
    check_empty("b", coll)


def scenario_c(ctx):
    """Leases across the two implementations."""
    harel, ours, coll = ctx.pair("c")
    evs = [Event(kind=f"m{i}", data={"i": i}) for i in range(4)]
    for ev in evs:
        harel.publish("gc-held", ev)

    # harel holds gc-held: we get other groups, never gc-held.
    hl = harel.claim("py-worker", 30.0)
    check("c: harel leases gc-held's head", hl is not None and hl.group_id == "gc-held" and hl.event == evs[0])
    free_ev = Event(kind="free")
    harel.publish("gc-free", free_ev)
    mine = ours.claim()
    try:
        check("c: our claim skips harel's leased group",
              mine is not None and mine.group == "gc-free" and mine.event == free_ev.model_dump_json().encode())
        check_eq("c: mq_ack of the free group", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    check("c: our claim is MQ_EMPTY while harel holds the only group", ours.claim() is None)

    # harel acks: we get the next event; while we hold it, harel's claim does not get the group.
    harel.ack(hl)
    mine = ours.claim()
    try:
        check("c: after harel's ack we get the next event",
              mine is not None and mine.group == "gc-held" and mine.event == evs[1].model_dump_json().encode()
              and mine.seq == hl.seq + 1)
        check("c: harel's claim gets nothing while we hold the group", harel.claim("py-worker", 30.0) is None)
        other = Event(kind="other")
        harel.publish("gc-other", other)
        hl2 = harel.claim("py-worker", 30.0)
        check("c: harel's claim gets another group, not ours",
              hl2 is not None and hl2.group_id == "gc-other" and hl2.event == other)
        if hl2:
            harel.ack(hl2)
        check_eq("c: our mq_ack after harel's activity", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()

    # Fencing, our lease lost to harel: we claim briefly, the lease expires, harel takes
    # the group; our ack reports MQ_LEASE_LOST and leaves harel's lock alone.
    mine = ours.claim(visibility=0.3)
    try:
        check("c: we lease the third event", mine is not None and mine.event == evs[2].model_dump_json().encode())
        time.sleep(0.6)
        hl3 = harel.claim("py-worker", 30.0)
        check("c: harel takes the group over after our lease expired",
              hl3 is not None and hl3.group_id == "gc-held" and hl3.event == evs[2])
        check_eq("c: our late mq_ack is MQ_LEASE_LOST", ours.ack(mine), MQ_LEASE_LOST)
        lock = coll["locks"].find_one({"_id": "gc-held"})
        check("c: harel's lock survives our late ack", lock is not None and hl3 and lock["token"] == hl3.token,
              str(lock))
        if hl3:
            harel.ack(hl3)
    finally:
        if mine:
            mine.destroy()

    # Fencing, harel's lease lost to us: harel's late ack changes nothing of ours.
    hl4 = harel.claim("py-worker", 0.3)
    check("c: harel leases the last event", hl4 is not None and hl4.event == evs[3])
    time.sleep(0.6)
    mine = ours.claim()
    try:
        check("c: we take the group over after harel's lease expired",
              mine is not None and mine.group == "gc-held" and mine.event == evs[3].model_dump_json().encode())
        harel.ack(hl4)  # not the owner any more: harel's own fencing makes this a no-op
        lock = coll["locks"].find_one({"_id": "gc-held"})
        check("c: our lock survives harel's late ack", lock is not None and mine and lock["token"] == mine.token,
              str(lock))
        check_eq("c: the event is still there for us", coll["messages"].count_documents({"group_id": "gc-held"}), 1)
        check_eq("c: our mq_ack of the last event", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()

    # harel parks a group (nack with delay): we don't get it before the delay passes.
    park_ev = Event(kind="parked")
    harel.publish("gc-park", park_ev)
    hl5 = harel.claim("py-worker", 30.0)
    harel.nack(hl5, 0.5)
    check("c: harel's parked group is not ours to claim", ours.claim() is None)
    time.sleep(0.7)
    mine = ours.claim()
    try:
        check("c: after the park we get the same head",
              mine is not None and mine.group == "gc-park" and mine.seq == hl5.seq
              and mine.event == park_ev.model_dump_json().encode())
        check_eq("c: mq_ack of the parked event", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    check_empty("c", coll)


def scenario_d(ctx):
    """A harel-created lock (no attempts field) claimed by us."""
    harel, ours, coll = ctx.pair("d")
    ev = Event(kind="d")
    harel.publish("gd", ev, priority=1)
    lock = coll["locks"].find_one({"_id": "gd"})
    check("d: harel's lock has no attempts field", lock is not None and "attempts" not in lock, str(lock))
    mine = ours.claim()
    try:
        check_eq("d: first delivery of a harel lock: mq_lease_attempts == 1", mine and mine.attempts, 1)
        check_eq("d: mq_nack(0)", ours.nack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    mine = ours.claim()
    try:
        check_eq("d: redelivery after nack: mq_lease_attempts == 2", mine and mine.attempts, 2)
        check("d: the same head again", mine is not None and mine.event == ev.model_dump_json().encode())
        check_eq("d: mq_ack", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    check_empty("d", coll)


def scenario_e(ctx):
    """Both publish into one group and both consume it: one seq counter, one FIFO."""
    harel, ours, coll = ctx.pair("e")
    order = []
    for i in range(6):
        ev = Event(kind=f"e{i}", data={"i": i})
        if i % 2 == 0:
            harel.publish("ge", ev)
            seq = coll["messages"].find_one({"group_id": "ge"}, sort=[("_id", -1)])["_id"]
        else:
            seq = ours.publish("ge", ev.model_dump_json().encode())
        order.append((seq, ev))
    seqs = [s for s, _ in order]
    check("e: one strictly increasing seq across both publishers", seqs == sorted(set(seqs)), str(seqs))
    got = []
    for i in range(6):  # alternate consumers: harel, us, harel, ...
        if i % 2 == 0:
            l = harel.claim("py-worker", 30.0)
            if l is None:
                break
            got.append((l.seq, l.event))
            harel.ack(l)
        else:
            mine = ours.claim()
            if mine is None:
                break
            try:
                got.append((mine.seq, Event.model_validate_json(mine.event)))
                ours.ack(mine)
            finally:
                mine.destroy()
    check("e: alternating consumers see the group in publish order", got == order,
          f"got {[s for s, _ in got]}, want {seqs}")
    check_empty("e", coll)


def scenario_f(ctx):
    """A harel publish into a group we hold, after our claim saw only its head: our ack
    drains, re-checks, and re-creates the lock with the group's priority."""
    harel, ours, coll = ctx.pair("f")
    harel.publish("gf", Event(kind="first"), priority=3)
    mine = ours.claim()
    try:
        harel.publish("gf", Event(kind="second"), priority=3)
        check_eq("f: mq_ack", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    lock = coll["locks"].find_one({"_id": "gf"})
    check("f: the group keeps priority 3 after our ack re-creates its lock (as harel's _drop_group)",
          lock is not None and lock.get("priority") == 3, f"lock after our ack: {lock}")
    lease = harel.claim("py-worker", 30.0, 3)
    check("f: harel's floor 3 still gets the group", lease is not None and lease.group_id == "gf")
    if lease is not None:
        harel.ack(lease)
    drain_harel(harel)
    check_empty("f", coll)


def scenario_g(ctx):
    """A non-JSON (BSON binary) event: harel cannot parse it; we still deliver it."""
    harel, ours, coll = ctx.pair("g")
    payload = b"\x00\xffnot json\x01"
    seq = ours.publish("gg", payload)
    doc = coll["messages"].find_one({"_id": seq})
    check("g: a non-UTF-8 event is stored as BSON binary", doc is not None and isinstance(doc["event"], bytes))
    raised = None
    try:
        harel.claim("py-worker", 0.3)
    except pydantic.ValidationError as exc:
        raised = exc
    check("g: harel's claim raises ValidationError on it (its consumers need Event JSON)", raised is not None)
    time.sleep(0.6)  # harel's failed claim left the group leased for 0.3 s
    mine = ours.claim()
    try:
        check("g: we deliver the exact bytes once harel's lease ran out",
              mine is not None and mine.seq == seq and mine.event == payload)
        check_eq("g: mq_ack", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    check_empty("g", coll)


def scenario_h(ctx):
    """A group we pause (0.5.0): harel's claim, at every floor, does not take it; resumed, it does."""
    harel, ours, coll = ctx.pair("h")
    ours.publish("hp", Event(kind="h1").model_dump_json().encode(), priority=3)
    ours.publish("hq", Event(kind="h2").model_dump_json().encode())
    check_eq("h: mq_pause_group", ours.pause("hp"), MQ_OK)
    taken = []
    for floor in (0, 3):
        got = harel.claim("py-worker", 30.0, floor)
        if got is not None:
            taken.append((floor, got))
    check("h: harel's claims (floors 0 and 3) take only the group that is not paused",
          [c.group_id for _, c in taken] == ["hq"])
    for _, c in taken:
        harel.ack(c)
    check_eq("h: mq_resume_group", ours.resume("hp"), MQ_OK)
    got = harel.claim("py-worker", 30.0, 3)
    check("h: resumed, harel's claim at floor 3 takes it (its priority came back)",
          got is not None and got.group_id == "hp")
    if got is not None:
        harel.ack(got)
    check_empty("h", coll)


def scenario_i(ctx):
    """Dedup keys (0.6.0): harel ignores them; the record our ack leaves is no event to harel."""
    harel, ours, coll = ctx.pair("i")
    ev = Event(kind="i1").model_dump_json().encode()
    st, first = ours.publish_key("gi", ev, "order-1")
    check_eq("i: a keyed publish", st, MQ_OK)
    check_eq("i: the same key again is a duplicate of it", ours.publish_key("gj", ev, "order-1"), (MQ_DUPLICATE, first))
    got = harel.claim("py-worker", 30.0, 0)
    check("i: harel's claim takes the keyed event as any other",
          got is not None and got.group_id == "gi" and got.event.kind == "i1")
    if got is not None:
        harel.ack(got)
    check_eq("i: harel's ack deletes it, key and all (harel keeps no record)",
             coll["messages"].count_documents({}), 0)
    st, again = ours.publish_key("gi", ev, "order-1")
    check("i: so after harel's ack the key is free again (the documented limit)", st == MQ_OK and again > first)
    mine = ours.claim()
    try:
        check("i: we claim it", mine is not None and mine.seq == again)
        check_eq("i: our ack", ours.ack(mine), MQ_OK)
    finally:
        if mine:
            mine.destroy()
    check_eq("i: our ack leaves the record of the key (no group_id)",
             coll["messages"].count_documents({"group_id": {"$exists": False}, "dedup_key": "order-1"}), 1)
    check("i: harel's claim finds nothing: the record is no event to it",
          all(harel.claim("py-worker", 30.0, floor) is None for floor in (0, 4)))
    harel.publish("gi", Event(kind="i2"), priority=0)
    got = harel.claim("py-worker", 30.0, 0)
    check("i: harel publishes and claims in that group as before", got is not None and got.event.kind == "i2")
    if got is not None:
        harel.ack(got)
    check_eq("i: and the key still holds for us", ours.publish_key("gk", ev, "order-1"), (MQ_DUPLICATE, again))
    coll["messages"].delete_many({"group_id": {"$exists": False}})  # the record, for check_empty
    check_empty("i", coll)


SCENARIOS = [scenario_a, scenario_b, scenario_c, scenario_d, scenario_e, scenario_f, scenario_g, scenario_h,
             scenario_i]


def main():
    global failed
    if len(sys.argv) != 2:
        print("usage: harel_interop.py PATH/TO/libmongomq.so", file=sys.stderr)
        return 2
    uri = os.environ.get("MONGOMQ_TEST_URI")
    if not uri:
        print("harel_interop: MONGOMQ_TEST_URI is not set (scripts/test-server.sh start prints one)",
              file=sys.stderr)
        print("harel_interop: 0 passed, 1 failed")
        return 1

    mq = Mq(sys.argv[1])
    db = "harel_interop_" + uuid.uuid4().hex[:12]
    print(f"harel_interop: libmongomq {mq.lib.mq_version().decode()}, pymongo {pymongo.version}, "
          f"database {db}")
    mongo = pymongo.MongoClient(uri, serverSelectionTimeoutMS=30000)
    client = ctypes.c_void_p()
    err = MqError()
    ctx = None
    try:
        mq.check("mq_client_new", mq.lib.mq_client_new(uri.encode(), ctypes.byref(client), ctypes.byref(err)), err)
        ctx = Ctx(mq, client, mongo, db)
        for scenario in SCENARIOS:
            print(f"{scenario.__name__}: {scenario.__doc__.strip()}")
            try:
                scenario(ctx)
            except Exception:  # a broken scenario fails, the others still run
                failed += 1
                print(f"  FAIL {scenario.__name__} raised:")
                traceback.print_exc(file=sys.stdout)
    finally:
        if ctx:
            for q in ctx.queues:
                q.destroy()
        mq.lib.mq_client_destroy(client)
        if failed == 0:
            mongo.drop_database(db)
        else:
            print(f"harel_interop: kept database {db} for inspection")
        mongo.close()

    print(f"harel_interop: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
