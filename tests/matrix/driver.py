#!/usr/bin/env python3
"""The matrix: C, Go, Java, Ruby, Rust, Python and harel on one queue, one server.

    driver.py --uri URI --agent NAME=COMMAND ... [--agent harel=COMMAND]

Each agent (agents/) is a program of one language that speaks the line protocol of
README.md on stdin/stdout; COMMAND is how to start it (the URI is appended). The
agent named "harel" is harel's MongoTransport (no attempts, no scheduled events, no
lease-lost report, no attributes, no partitions, text events that parse as a harel Event
only). Five parts:

  1. fixed set: every agent publishes the same events (text, binary with NUL bytes,
     empty, 1 MiB, non-ASCII group ids, priorities 0..4, one scheduled a second
     ahead) into a queue of its own for each other agent, which claims and acks
     them: seqs, groups, bytes (length + FNV-1a 64), order and attempts must be
     those published, and the same for every pair; most events carry attributes
     (0.7.0: several keys in an order that is not sorted, the same keys in another
     order on another event, an empty value, non-ASCII values, 16 attributes, a
     128-byte key with a 4096-byte value, separators in a value), which every
     consumer but harel must report exactly, in publish order, and events without
     them with none; harel publishes none (its consumers see none) and ignores ours
     (it still gets those events, bytes intact);
  2. shared backlog: the agents publish 700 events over 35 groups (5 groups each;
     harel first and alone, the others at once), then all of them drain the one
     queue at once: every event acked exactly once,
     each group in publish order, no two leases of a group overlapping in time;
  3. lease expiry: in a ring of the agents with leases (all but harel), each holds
     a lease of 1 s and lets it run out; the next one claims the event (attempts
     + 1, same seq, bytes and attributes) and acks it; the first one's ack is
     lease-lost;
  4. traces: for every ordered pair of the agents that trace (Go, Java, Python, Ruby,
     Rust: C and harel have no OpenTelemetry), the first publishes inside a parent
     context the driver names (a trace id and span id of its own), the second's
     worker helper processes the event: the send span must be that parent's child,
     the process span must link to exactly that send span, and be in a trace of its
     own (a link, not a parent), with attempts 1;
  5. partitions (0.8.0): every agent but harel (whose schema is one partition's) opens
     one queue with 4 partitions, all at once; each one's second open of it with 1
     partition is refused with the library's message, which names "has 4 partitions";
     then they publish 408 events over 24 groups (4 groups each, at once) and drain
     them all at once, checked as part 2; the seqs are unique, and each one's residue
     (seq - 1) % 4 is its group's partition, which the driver computes itself from the
     documented hash (group_partition): every language's publish put every group in
     the same partition.

Runs in a venv with harel and pymongo (scripts/interop-venv.sh): it makes harel's
events and drops the test database at the end. Last line: "matrix: N passed, M failed".
"""
import argparse
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
import uuid

import pymongo
from harel.spec.states import Event

REPLY_TIMEOUT = 90.0
passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"  ok    {name}")
    else:
        failed += 1
        print(f"  FAIL  {name}" + (f": {detail}" if detail else ""))
    sys.stdout.flush()
    return ok


def fnv(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


class Agent:
    def __init__(self, name, command, uri):
        self.name = name
        self.proc = subprocess.Popen(shlex.split(command) + [uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, encoding="ascii", bufsize=1)
        self.replies = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.replies.put(line.rstrip("\n"))
        self.replies.put(None)

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def recv(self):
        try:
            reply = self.replies.get(timeout=REPLY_TIMEOUT)
        except queue.Empty:
            reply = None
        if reply is None:
            raise RuntimeError(f"agent {self.name}: no reply (exit status {self.proc.poll()})")
        return reply

    def close(self):
        try:
            self.send("quit")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()


def fields(reply, agent, what):
    """'ok a b c' -> ['a', 'b', 'c']; an 'err' reply is a failed check (and [])."""
    if not reply.startswith("ok"):
        check(f"{what}: {agent} answers", False, reply[:300])
        return None
    return reply.split()[1:]


def claim_records(words):
    """REC words -> (seq, group, attempts, len, fnv, queue_now, attrs); attrs is a list of
    (key, value) in the order the agent read them, None when it cannot see them (harel)."""
    out = []
    for w in words:
        seq, group, attempts, length, h, t, attrs = w.split(",")
        out.append((int(seq), bytes.fromhex(group).decode("utf-8"), int(attempts), int(length), h, float(t),
                    unattrs(attrs)))
    return out


def hx(s):
    return s.encode("utf-8").hex()


def attrs_word(attrs):
    """[(key, value)] -> the protocol's ATTRS: KEYHEX=VALUEHEX joined by ';', '-' for none."""
    return ";".join(f"{hx(k)}={hx(v)}" for k, v in attrs) or "-"


def unattrs(word):
    if word == "?":
        return None
    if word == "-":
        return []
    try:
        return [tuple(bytes.fromhex(x).decode("utf-8") for x in pair.split("=", 1)) for pair in word.split(";")]
    except ValueError:  # not ATTRS: kept as it came, so that the check fails and shows it
        return [("unreadable ATTRS", word)]


def harel_text(kind, **data):
    return Event(kind=kind, data=data).model_dump_json().encode("utf-8")


# ---- part 1 ---------------------------------------------------------------------------


def fixed_attrs(publisher):
    """The attributes of the fixed set's rows (by index), as `publisher` sends them: the
    first two have the same five in two orders (neither sorted), so a binding that sorts
    or keys them by a hash map shows; 4 has the most an event may carry, 6 the longest
    key and value; 5 and 7 have none, between rows that have some."""
    uni = "héllo ✓ 日本語 🎉"
    five = [("tenant.id", "t-42"), ("content-type", "application/json"), ("empty", ""), ("from", publisher),
            ("uni", uni)]
    return {
        0: five,
        1: five[::-1],
        2: [("z", "a=b; c,d e"), ("a", "")],
        3: [("only", "ü")],
        4: [(f"k{15 - i:02d}", f"v{i}-ж") for i in range(16)],
        6: [("K_" + "x.-" * 42, "ж" * 2048)],  # 128 bytes of key, 4096 of UTF-8 value
        8: [("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")],
        9: [("x.y-z_1", "日本"), ("X.Y-Z_1", "🎉")],
    }


def fixed_set():
    """(group, priority, delay_s, spec, harel_can_read, bytes)."""
    text = "héllo ✓ 日本語 🎉"
    t = [harel_text(f"matrix-{i}", i=i, text=text) for i in range(6)]
    binary = b"\x00\x01\xfe\xff\x00nul\x00"
    tail = b"tail \xc3 not utf-8"
    big = bytes(i % 251 for i in range(1 << 20))
    rows = [
        ("text-a", 0, 0, t[0].hex(), True, t[0]),
        ("grüppe-日本-🎉", 3, 0, t[1].hex(), True, t[1]),
        ("bin-ü", 1, 0, binary.hex(), False, binary),
        ("text-a", 0, 0, "-", False, b""),
        ("big", 2, 0, "big:%d" % len(big), False, big),
        ("text-a", 0, 0, t[2].hex(), True, t[2]),
        ("grüppe-日本-🎉", 0, 0, t[3].hex(), True, t[3]),
        ("prio-4-жж", 4, 0, t[4].hex(), True, t[4]),
        ("sched-⏰", 1, 1.0, t[5].hex(), False, t[5]),
        ("bin-ü", 1, 0, tail.hex(), False, tail),
    ]
    return rows


def part1(agents, db):
    print("== 1. every agent publishes the fixed set, every other one claims it ==")
    rows = fixed_set()
    names = list(agents)
    pub = {}  # (P, C) -> (rows published, [(seq, at)])
    pub_attrs = {}  # (P, C) -> [the attributes of each row published]
    for p in names:
        for c in names:
            if p == c:
                continue
            idx = [i for i, r in enumerate(rows) if r[4] or "harel" not in (p, c)]
            sub = [rows[i] for i in idx]
            attrs = [[] if p == "harel" else fixed_attrs(p).get(i, []) for i in idx]
            for (g, prio, delay, spec, _, _), a in zip(sub, attrs):
                # harel's publish has no attributes: it gets no ATTRS word (the old line)
                agents[p].send(f"publish {db} m1_{p}_{c}_transport {hx(g)} {prio} {delay} {spec}"
                               + ("" if p == "harel" else " " + attrs_word(a)))
            pub[p, c] = (sub, None)
            pub_attrs[p, c] = attrs
    for (p, c), (sub, _) in pub.items():
        res = []
        for _ in sub:
            w = fields(agents[p].recv(), p, f"publish {p}->{c}")
            res.append((int(w[0]), float(w[1])) if w else (0, 0.0))
        pub[p, c] = (sub, res)
        if p != "harel":
            check(f"{p} publishes for {c}: seqs 1..{len(sub)}", [s for s, _ in res] == list(range(1, len(sub) + 1)),
                  str([s for s, _ in res]))

    for c in names:
        for p in names:
            if p != c:
                agents[c].send(f"claim {db} m1_{p}_{c}_transport {len(pub[p, c][0])} 5 30")
    got = {}
    for c in names:
        for p in names:
            if p != c:
                w = fields(agents[c].recv(), c, f"claim {p}->{c}")
                got[p, c] = claim_records(w) if w is not None else []

    reference = {}  # the order of the first pair with each set, to compare the others with
    for (p, c), (sub, res) in pub.items():
        recs = got[p, c]
        pair = f"{p} -> {c}"
        want_by_group = {}
        for i, (g, _, _, _, _, data) in enumerate(sub):
            want_by_group.setdefault(g, []).append((i + 1, len(data), fnv(data)))
        got_by_group = {}
        for seq, g, att, length, h, _, _ in recs:
            got_by_group.setdefault(g, []).append((seq, length, h))
        check(f"{pair}: {len(sub)} events claimed", len(recs) == len(sub), f"got {len(recs)}")
        check(f"{pair}: groups, seqs, bytes and FIFO order as published", got_by_group == want_by_group,
              f"got {got_by_group if len(str(got_by_group)) < 400 else '...'}")
        if c != "harel":
            check(f"{pair}: attempts 1 on every first delivery", all(r[2] == 1 for r in recs),
                  str([r[2] for r in recs]))
            # by seq: the seqs were checked above, and each row's attributes are its own
            want_attrs = {i + 1: a for i, a in enumerate(pub_attrs[p, c])}
            got_attrs = {r[0]: r[6] for r in recs}
            bad = {s: (got_attrs.get(s), a) for s, a in want_attrs.items() if got_attrs.get(s) != a}
            what = "no attributes (harel publishes none)" if p == "harel" else "attributes as published, in order"
            check(f"{pair}: {what}", not bad and len(got_attrs) == len(want_attrs),
                  "; ".join(f"seq {s}: got {str(g)[:150]}, want {str(w)[:150]}"
                            for s, (g, w) in list(bad.items())[:3]))
        elif p != "harel":
            # harel cannot see them; what matters is that they do not keep an event from it
            with_attrs = [i + 1 for i, a in enumerate(pub_attrs[p, c]) if a]
            got_seqs = {r[0] for r in recs}
            check(f"{pair}: harel gets the {len(with_attrs)} events that carry attributes",
                  with_attrs and all(s in got_seqs for s in with_attrs),
                  f"{with_attrs} published, got {sorted(got_seqs)}")
        for i, (g, _, delay, _, _, _) in enumerate(sub):
            if delay > 0:
                at = res[i][1]
                t = [r[5] for r in recs if r[1] == g]
                check(f"{pair}: the scheduled event comes no earlier than its time",
                      len(t) == 1 and t[0] >= at - 0.005, f"claimed at {t}, not before {at:.6f}")
        order = [(r[0], r[1]) for r in recs if not r[1].startswith("sched-")]
        key = len(sub)
        if key not in reference:
            reference[key] = (pair, order)
        else:
            check(f"{pair}: the claim order across groups is {reference[key][0]}'s",
                  order == reference[key][1], f"{order} vs {reference[key][1]}")


# ---- part 2 ---------------------------------------------------------------------------


def part2(agents, db, groups=35, per_group=20):
    print(f"== 2. every agent drains one shared backlog ({groups * per_group} events, {groups} groups) at once ==")
    # harel publishes alone, before the others: its seq allocator returns the updated
    # counter document, which the test server (mongo-java-server) serialises after
    # releasing its lock, so a concurrent $inc can show through and two publishers get
    # one seq (docs/design.md, "publish"; on MongoDB it cannot happen). Ours returns the
    # document before the update, which is safe on both.
    names = list(agents)
    waves = [[n for n in names if n == "harel"], [n for n in names if n != "harel"]]
    shared_backlog(agents, db, "m2_transport", waves, [f"d{gi:02d}-ü" for gi in range(groups)], per_group)


def shared_backlog(agents, db, prefix, waves, groups, per_group):
    """Part 2's run, which part 5 repeats on a partitioned queue: the agents of `waves`
    publish per_group events to each of `groups` (group i is the i-th agent's, round
    them in the agents' order; each wave's agents at once, a wave after the one
    before), then all of them drain the queue at once. Checks that every event is
    acked exactly once, each group in publish order with the seqs its publish
    returned, no two leases of a group at once. Returns ({group: [(fnv, seq)] in
    publish order}, {group: its publisher})."""
    names = [n for n in agents if any(n in wave for wave in waves)]
    published = {}  # group -> [(fnv, seq or 0)]
    owner = {}
    plan = {n: [] for n in names}
    for gi, g in enumerate(groups):
        owner[g] = names[gi % len(names)]
        published[g] = []
    for k in range(per_group):  # interleaved: the groups' seqs mix
        for g in published:
            data = harel_text("drain", group=g, n=k)
            plan[owner[g]].append((g, data))
    for wave in waves:
        for n in wave:
            for g, data in plan[n]:
                agents[n].send(f"publish {db} {prefix} {hx(g)} {int(g[1:3]) % 5} 0 {data.hex()}")
        for n in wave:
            for g, data in plan[n]:
                w = fields(agents[n].recv(), n, "drain backlog publish")
                published[g].append((fnv(data), int(w[0]) if w else -1))
    t0 = time.monotonic()
    for n in names:
        agents[n].send(f"drain {db} {prefix} 2 30 2")
    recs = []
    per_agent = {}
    for n in names:
        w = fields(agents[n].recv(), n, "drain")
        per_agent[n] = 0
        for item in w or []:
            seq, g, t1, t2, h = item.split(",")
            recs.append((n, int(seq), bytes.fromhex(g).decode("utf-8"), float(t1), float(t2), h))
            per_agent[n] += 1
    print(f"  drained in {time.monotonic() - t0:.1f} s: " + ", ".join(f"{n} {c}" for n, c in per_agent.items()))
    total = len(groups) * per_group
    check(f"{total} events acked in all", len(recs) == total, f"got {len(recs)}")
    acked = {}
    for r in recs:
        acked[r[2], r[5]] = acked.get((r[2], r[5]), 0) + 1
    want = {(g, h): 1 for g, evs in published.items() for h, _ in evs}
    check("every event acked exactly once", acked == want,
          f"{sum(1 for k in want if k not in acked)} missing, {sum(1 for v in acked.values() if v > 1)} twice")
    check("every agent drained some of the backlog", all(c > 0 for c in per_agent.values()), str(per_agent))
    fifo_bad, overlap_bad = [], []
    for g, evs in published.items():
        mine = sorted((r for r in recs if r[2] == g), key=lambda r: r[3])
        if [r[5] for r in mine] != [h for h, _ in evs]:
            fifo_bad.append(g)
        elif any(s and s != r[1] for (_, s), r in zip(evs, mine)):
            fifo_bad.append(g + " (seqs)")
        for a, b in zip(mine, mine[1:]):
            # [claim returned, ack sent] lies inside the real hold: these must not meet.
            if b[3] < a[4]:
                overlap_bad.append(f"{g}: {a[0]} seq {a[1]} [{a[3]:.6f}, {a[4]:.6f}] and {b[0]} seq {b[1]} at {b[3]:.6f}")
    check("each group in publish order (seqs and bytes)", not fifo_bad, ", ".join(fifo_bad[:5]))
    check("no group held by two agents at once (lease intervals per group)", not overlap_bad,
          "; ".join(overlap_bad[:3]))
    handoffs = sum(1 for g in published for a, b in zip(*(lambda m: (m, m[1:]))(
        sorted((r for r in recs if r[2] == g), key=lambda r: r[3]))) if a[0] != b[0])
    print(f"  {handoffs} hand-offs of a group from one language to another")
    return published, owner


# ---- part 3 ---------------------------------------------------------------------------


def part3(agents, db):
    names = [n for n in agents if n != "harel"]
    print("== 3. a lease left to expire in one language is redelivered to the next one ==")
    ring = list(zip(names, names[1:] + names[:1]))
    data = "expire-me-ü ✓".encode("utf-8")
    attrs = {a: [("ring", a), ("empty", ""), ("uni", "ü ✓ 🎉")] for a, _ in ring}
    for a, _ in ring:
        agents[a].send(f"publish {db} m3_{a} {hx('exp-ü')} 2 0 {data.hex()} {attrs_word(attrs[a])}")
    seqs = {a: fields(agents[a].recv(), a, "expiry publish") for a, _ in ring}
    for a, _ in ring:
        agents[a].send(f"hold {db} m3_{a} 5 1")
    first = {}
    for a, _ in ring:
        w = fields(agents[a].recv(), a, "hold")
        first[a] = claim_records(w)[0] if w and w[0] != "none" else None
    for a, b in ring:
        agents[b].send(f"claim {db} m3_{a} 1 6 30")
    second = {}
    for a, b in ring:
        w = fields(agents[b].recv(), b, "claim after expiry")
        second[a] = claim_records(w) if w else []
    for a, _ in ring:
        agents[a].send("ack_held")
    late = {a: agents[a].recv() for a, _ in ring}
    for a, b in ring:
        f, s = first[a], second[a]
        ok = f is not None and len(s) == 1
        check(f"{a} holds, {b} gets the event after expiry", ok, f"first {f}, second {s}")
        if not ok:
            continue
        s = s[0]
        check(f"{a} -> {b}: same seq, group, bytes and attributes; attempts {f[2]} -> {s[2]}",
              f[2] == 1 and s[2] == 2 and s[:2] == f[:2] and s[3:5] == f[3:5] == (len(data), fnv(data))
              and s[6] == f[6] == attrs[a] and seqs[a] and int(seqs[a][0]) == f[0], f"{f} vs {s}")
        check(f"{a}'s late ack is lease-lost", late[a] == "ok lease_lost", late[a])


# ---- part 4 ---------------------------------------------------------------------------

TRACERS = ("go", "java", "python", "ruby", "rust")


def part4(agents, db):
    names = [n for n in TRACERS if n in agents]
    print("== 4. a trace started in one language continues in another ==")
    pairs = [(p, c) for p in names for c in names if p != c]
    for p, c in pairs:
        prefix = f"t_{p}_{c}"
        trace_id, span_id = uuid.uuid4().hex, uuid.uuid4().hex[:16]
        agents[p].send(f"tpublish {db} {prefix} {hx(f'traced-{p}')} {hx(f'from {p} to {c}')} {trace_id} {span_id}")
        pub = fields(agents[p].recv(), p, f"{p} -> {c}: traced publish")
        if not pub:
            continue
        seq, send_trace, send_span, send_parent = pub
        check(f"{p} -> {c}: {p}'s send span is the child of the context it was given",
              send_trace == trace_id and send_parent == span_id and send_span not in (span_id, "0" * 16),
              f"send span {send_trace}/{send_span} parent {send_parent}; given {trace_id}/{span_id}")
        agents[c].send(f"twork {db} {prefix} 30")
        got = fields(agents[c].recv(), c, f"{p} -> {c}: traced work")
        if not got:
            continue
        if got == ["none"]:
            check(f"{p} -> {c}: {c}'s worker got the event", False, "no event within 30 s")
            continue
        wseq, proc_trace, proc_span, link_trace, link_span, attempts = got
        check(f"{p} -> {c}: {c}'s process span links to {p}'s send span, in a trace of its own",
              wseq == seq and link_trace == send_trace and link_span == send_span and proc_trace != trace_id
              and proc_span != send_span and attempts == "1",
              f"seq {wseq} (published {seq}), process {proc_trace}/{proc_span}, link {link_trace}/{link_span}, "
              f"attempts {attempts}")


# ---- part 5 ---------------------------------------------------------------------------


def group_partition(group, partitions):
    """The partition of a group (include/mongomq.h, mq_group_partition), written here
    from its definition rather than asked of a binding: FNV-1a 64 over the group id's
    UTF-8 bytes, mixed by MurmurHash3's 64-bit finalizer (fmix64), modulo partitions."""
    m = 0xFFFFFFFFFFFFFFFF
    h = 0xCBF29CE484222325
    for b in group.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & m
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    h ^= h >> 33
    return h % partitions


def part5(agents, db, partitions=4, groups=24, per_group=17):
    names = [n for n in agents if n != "harel"]  # harel's schema is one partition's
    print(f"== 5. one queue of {partitions} partitions: every agent opens it, publishes into it and drains it ==")
    # bindings/CONTRACT.md, partitions_group_hash: the driver's hash is the library's
    vectors = {("a", 4): 3, ("b", 4): 0, ("customer-17", 4): 1, ("g1", 4): 1, ("g2", 4): 3, ("g3", 4): 0,
               ("a", 16): 11, ("customer-17", 16): 9, ("g2", 16): 7, ("a", 1): 0}
    got = {k: group_partition(*k) for k in vectors}
    check("the driver's group_partition gives CONTRACT's partitions_group_hash values", got == vectors,
          str({k: v for k, v in got.items() if v != vectors[k]}))
    prefix = "m5_parts"
    for n in names:  # at once: the first openers race to record P
        agents[n].send(f"popen {db} {prefix} {partitions}")
    for n in names:
        reply = agents[n].recv()
        check(f"{n} opens the queue with {partitions} partitions", reply == f"ok {partitions}", reply[:300])
    # Each one's handle stays the one of 4 partitions after the refusal (README, popen).
    for n in names:
        agents[n].send(f"popen {db} {prefix} 1")
    for n in names:
        reply = agents[n].recv()
        check(f"{n}: opening it again with 1 partition is refused, naming the {partitions} it has",
              reply.startswith("err ") and f"has {partitions} partitions" in reply, reply[:300])
    gnames = [f"p{gi:02d}-ж" for gi in range(groups)]
    where = {g: group_partition(g, partitions) for g in gnames}
    check(f"the {groups} groups fall in all {partitions} partitions (the test means something)",
          set(where.values()) == set(range(partitions)), str(where))
    published, owner = shared_backlog(agents, db, prefix, [names], gnames, per_group)
    seqs = [s for evs in published.values() for _, s in evs]
    check(f"the {len(seqs)} seqs are unique", len(set(seqs)) == len(seqs),
          f"{len(seqs) - len(set(seqs))} repeated")
    bad = [f"{owner[g]}'s {g} (partition {where[g]}): seq {s}" for g, evs in published.items() for _, s in evs
           if (s - 1) % partitions != where[g]]
    check(f"each seq is in its group's partition ((seq - 1) % {partitions} = group_partition(group, {partitions})),"
          " whichever language published it", not bad, "; ".join(bad[:5]) + (f" ({len(bad)} in all)" if bad else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_TEST_URI"))
    ap.add_argument("--agent", action="append", default=[], help="NAME=COMMAND")
    args = ap.parse_args()
    db = "mqt_matrix_" + uuid.uuid4().hex[:8]
    agents = {}
    t0 = time.monotonic()
    try:
        for spec in args.agent:
            name, cmd = spec.split("=", 1)
            agents[name] = Agent(name, cmd, args.uri)
        print(f"matrix: agents {', '.join(agents)} on {args.uri}, database {db}")
        for part in (part1, part2, part3, part4, part5):
            t = time.monotonic()
            try:
                part(agents, db)
            except Exception as e:  # an agent died or hung: the part fails, the rest goes on
                check(f"{part.__name__} ran to its end", False, f"{type(e).__name__}: {e}")
            print(f"  ({time.monotonic() - t:.1f} s)")
        mongo = pymongo.MongoClient(args.uri)
        left = {c: mongo[db][c].count_documents({}) for c in mongo[db].list_collection_names()
                if c.endswith("_messages") or c.endswith("_locks")}
        check("every queue is empty at the end (messages and locks)", not any(left.values()),
              str({c: n for c, n in left.items() if n}))
        if failed == 0:
            mongo.drop_database(db)
    finally:
        for a in agents.values():
            a.close()
    print(f"matrix: {time.monotonic() - t0:.1f} s")
    print(f"matrix: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
