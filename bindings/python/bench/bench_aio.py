#!/usr/bin/env python3
"""mongomq.aio against the sync package on one server: per-call overhead and events/s.

    python bench/bench_aio.py [--uri URI] [--events N] [--groups G] [--concurrency C] [--json]

1. hand-off: an awaited no-op on an AsyncClient's pool (submit, a thread, the
   loop woken back): the cost the async surface adds to every call, without a server.
2. publish, one at a time: N sync publishes vs N awaited publishes in a row; the
   difference per call is what the async surface costs there.
3. publish, C at once: N awaited publishes, C in flight (asyncio.gather), vs C
   threads publishing N/C each with the sync Queue.
4. drain: N events in G groups, drained by a sync Worker and by an AsyncWorker, both
   with concurrency C and a handler that does nothing (ack each), timed from the
   start until the last ack.
Each part runs on a fresh queue of a fresh database, dropped at the end; the whole
runs --rounds times (default 3), sync and async alternating, and each figure is its
best round.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import uuid

import mongomq
from mongomq import _aio_calls, aio


def fresh(db: str, name: str) -> tuple:
    return db, "%s_%s" % (name, uuid.uuid4().hex[:6])


def sync_publish(uri: str, db: str, n: int) -> float:
    with mongomq.Client(uri) as c, c.queue(*fresh(db, "pub")) as q:
        q.publish("warm", b"x")
        t0 = time.perf_counter()
        for i in range(n):
            q.publish("g%d" % (i % 50), b'{"i":%d}' % i)
        took = time.perf_counter() - t0
        q.drop()
    return took


def sync_publish_threads(uri: str, db: str, n: int, c: int) -> float:
    with mongomq.Client(uri) as client, client.queue(*fresh(db, "pubt")) as q:
        q.publish("warm", b"x")

        def part(k: int) -> None:
            for i in range(k, n, c):
                q.publish("g%d" % (i % 50), b'{"i":%d}' % i)

        threads = [threading.Thread(target=part, args=(k,)) for k in range(c)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - t0
        q.drop()
    return took


def sync_drain(uri: str, db: str, n: int, groups: int, c: int) -> float:
    with mongomq.Client(uri) as client, client.queue(*fresh(db, "drain")) as q:
        for start in range(0, n, mongomq.BATCH_MAX):
            q.publish_batch([("g%d" % (i % groups), b"%d" % i) for i in range(start, min(n, start + mongomq.BATCH_MAX))])
        count = [0]
        lock = threading.Lock()
        done = threading.Event()

        def handler(lease: mongomq.Lease) -> None:
            with lock:
                count[0] += 1
                if count[0] >= n:
                    done.set()

        t0 = time.perf_counter()
        w = q.worker(handler, concurrency=c)
        done.wait()
        while q.stats().messages:  # the last ack
            time.sleep(0.001)
        took = time.perf_counter() - t0
        w.stop()
        q.drop()
    return took


async def async_part(uri: str, db: str, n: int, groups: int, c: int) -> dict:
    out = {}
    async with aio.AsyncClient(uri) as client:
        # 1. the hand-off alone
        pools = client._pools
        noop = int  # a C-free call
        for _ in range(200):
            await _aio_calls.call(pools, noop)
        t0 = time.perf_counter()
        for _ in range(n):
            await _aio_calls.call(pools, noop)
        out["handoff_us"] = (time.perf_counter() - t0) / n * 1e6

        # 2. publishes in a row
        async with client.queue(*fresh(db, "apub")) as q:
            await q.publish("warm", b"x")
            t0 = time.perf_counter()
            for i in range(n):
                await q.publish("g%d" % (i % 50), b'{"i":%d}' % i)
            out["publish_serial_s"] = time.perf_counter() - t0
            await q.drop()

        # 3. C in flight
        async with client.queue(*fresh(db, "apubc")) as q:
            await q.publish("warm", b"x")
            sem = asyncio.Semaphore(c)

            async def one(i: int) -> None:
                async with sem:
                    await q.publish("g%d" % (i % 50), b'{"i":%d}' % i)

            t0 = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n)))
            out["publish_concurrent_s"] = time.perf_counter() - t0
            await q.drop()

        # 4. the async worker's drain
        async with client.queue(*fresh(db, "adrain")) as q:
            for start in range(0, n, mongomq.BATCH_MAX):
                await q.publish_batch([("g%d" % (i % groups), b"%d" % i)
                                       for i in range(start, min(n, start + mongomq.BATCH_MAX))])
            count = [0]
            done = asyncio.Event()

            async def handler(lease: mongomq.Lease) -> None:
                count[0] += 1
                if count[0] >= n:
                    done.set()

            t0 = time.perf_counter()
            w = q.worker(handler, concurrency=c)
            await done.wait()
            while (await q.stats()).messages:
                await asyncio.sleep(0.001)
            out["drain_s"] = time.perf_counter() - t0
            await w.stop()
            await q.drop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_URI") or os.environ.get("MONGOMQ_TEST_URI"))
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="run everything R times; report each figure's best")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    if not a.uri:
        ap.error("--uri (or MONGOMQ_URI) is needed")
    if a.events < 1 or a.concurrency < 1:
        ap.error("--events and --concurrency must be at least 1")
    db = "mongomq_bench_aio_%d_%s" % (os.getpid(), uuid.uuid4().hex[:6])
    n, g, c = a.events, a.groups, a.concurrency
    # Sync and async alternate, round by round; the best of each figure stands (on a
    # shared machine the worst rounds measure the neighbours).
    s_pub = s_pubt = s_drain = float("inf")
    r: dict = {}
    for _ in range(max(1, a.rounds)):
        s_pub = min(s_pub, sync_publish(a.uri, db, n))
        s_pubt = min(s_pubt, sync_publish_threads(a.uri, db, n, c))
        s_drain = min(s_drain, sync_drain(a.uri, db, n, g, c))
        got = asyncio.run(async_part(a.uri, db, n, g, c))
        r = {k: min(v, r.get(k, float("inf"))) for k, v in got.items()}
    res = {
        "events": n, "groups": g, "concurrency": c,
        "handoff_us": r["handoff_us"],
        "publish_serial": {"sync_eps": n / s_pub, "async_eps": n / r["publish_serial_s"],
                           "sync_us": s_pub / n * 1e6, "async_us": r["publish_serial_s"] / n * 1e6},
        "publish_concurrent": {"sync_threads_eps": n / s_pubt, "async_eps": n / r["publish_concurrent_s"]},
        "drain": {"sync_worker_eps": n / s_drain, "async_worker_eps": n / r["drain_s"]},
    }
    if a.json:
        print(json.dumps({"binding": "python-aio", "python": sys.version.split()[0],
                          "library": mongomq.library_version(), **res}))
        return 0
    p, pc, d = res["publish_serial"], res["publish_concurrent"], res["drain"]
    print("hand-off (awaited no-op on the pool)      %8.1f us/call" % res["handoff_us"])
    print("publish, one at a time   sync %8.0f events/s (%6.1f us)   async %8.0f events/s (%6.1f us): "
          "+%.1f us/call" % (p["sync_eps"], p["sync_us"], p["async_eps"], p["async_us"],
                             p["async_us"] - p["sync_us"]))
    print("publish, %d at once       sync threads %8.0f events/s   async gather %8.0f events/s"
          % (c, pc["sync_threads_eps"], pc["async_eps"]))
    print("drain, concurrency %d     sync Worker %8.0f events/s   AsyncWorker %8.0f events/s   (%d events, %d groups)"
          % (c, d["sync_worker_eps"], d["async_worker_eps"], n, g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
