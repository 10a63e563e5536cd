#!/usr/bin/env python3
"""The workload of bench/bench.c through the Python package, printing events/s.

    python bench/bench.py [--uri URI] [--events N] [--groups G] [--workers W]
                          [--visibility S] [--batch B] [--wait] [--json]

As the C bench: in each mode (single: publish one event per call, claim one per
lease; batch(10): publish_batch of 10, claim max_events=10) one thread publishes N
events ({"i":<index>}) round-robin over G groups (group g has priority g % 5), then W
threads, each with its own Client, claim and ack until every event is acked (a claim
that finds nothing sleeps 2 ms, or with --wait waits up to 1 s). Each mode runs on a
fresh queue of a fresh database, dropped at the end. Run it beside the C bench on
the same server: the ratio of the figures is the binding's overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid

import mongomq


def run_mode(uri: str, db: str, batch: int, n: int, groups: int, workers: int, visibility: float,
             wait: bool) -> dict:
    prefix = "bench_single" if batch == 1 else "bench_batch%d" % batch
    expected = {}
    with mongomq.Client(uri) as client, client.queue(db, prefix) as queue:
        clients = [mongomq.Client(uri) for _ in range(workers)]
        queues = [c.queue(db, prefix) for c in clients]
        try:
            # 1. publish
            t0 = time.perf_counter()
            if batch == 1:
                for i in range(n):
                    g = i % groups
                    seq = queue.publish("g%d" % g, b'{"i":%d}' % i, priority=g % 5)
                    expected[seq] = i
            else:
                for start in range(0, n, batch):
                    items = []
                    for i in range(start, min(n, start + batch)):
                        g = i % groups
                        items.append(("g%d" % g, b'{"i":%d}' % i, g % 5))
                    first = queue.publish_batch(items)
                    for k in range(len(items)):
                        expected[first + k] = start + k
            publish_s = time.perf_counter() - t0

            # 2. drain
            lock = threading.Lock()
            acked: dict = {}
            counts = {"empty_claims": 0, "duplicated": 0, "seq_mismatch": 0}
            done = threading.Event()

            def drain(q: mongomq.Queue) -> None:
                while not done.is_set():
                    try:
                        lease = q.claim(visibility=visibility, max_events=batch, wait=1.0 if wait else 0.0)
                    except mongomq.Interrupted:
                        return
                    if lease is None:
                        if not wait:
                            with lock:
                                counts["empty_claims"] += 1
                            time.sleep(0.002)
                        continue
                    seqs, events = lease.seqs, lease.events
                    q.ack(lease)
                    with lock:
                        for seq, ev in zip(seqs, events):
                            i = json.loads(ev)["i"]
                            if expected.get(seq) != i:
                                counts["seq_mismatch"] += 1
                            if seq in acked:
                                counts["duplicated"] += 1
                            acked[seq] = i
                        if len(acked) >= n:
                            done.set()
                            for other in queues:
                                other.interrupt()

            threads = [threading.Thread(target=drain, args=(q,)) for q in queues]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            drain_s = time.perf_counter() - t0
            queue.drop()
        finally:
            for q in queues:
                q.close()
            for c in clients:
                c.close()
    return {
        "mode": "single" if batch == 1 else "batch(%d)" % batch,
        "events": n,
        "publish_eps": n / publish_s,
        "drain_eps": len(acked) / drain_s,
        "lost": n - len(acked),
        **counts,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_URI") or os.environ.get("MONGOMQ_TEST_URI"))
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--visibility", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=None, help="run only the mode with batches of B")
    ap.add_argument("--wait", action="store_true", help="claim waiting up to 1 s instead of sleeping 2 ms")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    if not a.uri:
        ap.error("--uri (or MONGOMQ_URI) is needed")
    db = "mongomq_bench_py_%d_%s" % (os.getpid(), uuid.uuid4().hex[:6])
    batches = [a.batch] if a.batch else [1, 10]
    results = [run_mode(a.uri, db, b, a.events, a.groups, a.workers, a.visibility, a.wait) for b in batches]
    if a.json:
        print(json.dumps({"binding": "python", "python": sys.version.split()[0],
                          "library": mongomq.library_version(), "modes": results}))
    else:
        for r in results:
            print("%-10s publish %8.0f events/s   drain %8.0f events/s   (%d events, %d workers; "
                  "lost %d, duplicated %d, seq mismatch %d, empty claims %d)" % (
                      r["mode"], r["publish_eps"], r["drain_eps"], r["events"], a.workers, r["lost"],
                      r["duplicated"], r["seq_mismatch"], r["empty_claims"]))
    bad = any(r["lost"] or r["duplicated"] or r["seq_mismatch"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
