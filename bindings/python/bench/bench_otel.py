#!/usr/bin/env python3
"""What tracing (mongomq.otel) costs: events/s of publish, of claim + ack by hand, and
of a worker, with tracing off and on, with and without attributes.

    python bench/bench_otel.py [--uri URI] [--events N] [--rounds R] [--json]

Tracing, three ways: "off" (no telemetry set: the queue as before 0.7.0's tracing),
"api" (a Telemetry of the global providers with no SDK configured: the API's no-op,
which is what a library user who installed mongomq[otel] but traces nothing gets),
and "sdk" (the OpenTelemetry SDK: a tracer provider with a simple, synchronous span
processor and an exporter that discards, and a meter provider with an in-memory
reader, passed to Telemetry; the W3C propagator). Attributes: none, or 3 of the
event's own (content-type, tenant.id, a 36-byte id). Each round publishes N events
in 20 groups from one thread (each publish one round trip), drains them by hand with
claim + ack from one thread, publishes them again and drains them with a worker
(concurrency 1, a handler that does nothing), each on a fresh queue of a fresh
database, dropped at the end; modes alternate within a round, and each figure is the
best of --rounds (default 3). Beside events/s (the round trips dominate them, and a
shared machine makes them noisy), the process's CPU time per event of the publish and
of the claim + ack: what tracing adds on the client. Needs opentelemetry-sdk (the
package's test extra).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from typing import Any, Dict, Optional, Sequence, Tuple

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import mongomq
from mongomq.otel import Telemetry

ATTRS = {"content-type": "application/json", "tenant.id": "t-42", "order.id": str(uuid.UUID(int=17))}


class Discard(SpanExporter):
    """Takes every finished span and keeps none."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def telemetry(kind: str, exporter: Discard) -> Optional[Telemetry]:
    if kind == "off":
        return None
    if kind == "api":
        return Telemetry()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(tracer_provider=tp, meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]),
                     propagator=TraceContextTextMapPropagator())


def publish(q: mongomq.Queue, n: int, attrs: Optional[Dict[str, str]]) -> Tuple[float, float]:
    """events/s, and the process's CPU µs per event (every thread's: the C library's too)."""
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        q.publish("g%d" % (i % 20), b'{"i":%d}' % i, attrs=attrs)
    return n / (time.perf_counter() - t0), (time.process_time() - c0) * 1e6 / n


def claim_ack(q: mongomq.Queue, n: int) -> Tuple[float, float]:
    done = 0
    c0, t0 = time.process_time(), time.perf_counter()
    while done < n:
        lease = q.claim(visibility=30.0)
        if lease is None:
            raise SystemExit("bench_otel: the queue ran dry after %d of %d events" % (done, n))
        q.ack(lease)
        lease.close()
        done += 1
    return n / (time.perf_counter() - t0), (time.process_time() - c0) * 1e6 / n


def worker(q: mongomq.Queue, n: int) -> float:
    count = [0]
    finished = threading.Event()

    def handler(lease: mongomq.Lease) -> None:
        count[0] += 1
        if count[0] >= n:
            finished.set()

    t0 = time.perf_counter()
    w = q.worker(handler, concurrency=1, visibility=30.0)
    try:
        if not finished.wait(300):
            raise SystemExit("bench_otel: the worker handled %d of %d events" % (count[0], n))
        took = time.perf_counter() - t0  # the last handler ran; its ack follows
    finally:
        w.stop()
    if q.stats().messages:
        raise SystemExit("bench_otel: events left after the worker")
    return n / took


def one(client: mongomq.Client, db: str, kind: str, with_attrs: bool, n: int) -> Dict[str, Any]:
    exporter = Discard()
    tel = telemetry(kind, exporter)
    attrs = dict(ATTRS) if with_attrs else None
    out: Dict[str, Any] = {}
    with client.queue(db, "b_%s_%s" % (kind, uuid.uuid4().hex[:6])) as q:
        try:
            q.set_telemetry(tel)
            q.publish("warm", b"x")
            q.ack(q.claim())
            out["publish_eps"], out["publish_cpu_us"] = publish(q, n, attrs)
            out["claim_ack_eps"], out["claim_ack_cpu_us"] = claim_ack(q, n)
            publish(q, n, attrs)
            out["worker_eps"] = worker(q, n)
        finally:
            q.drop()
    out["spans"] = exporter.spans
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--uri", default=os.environ.get("MONGOMQ_URI") or os.environ.get("MONGOMQ_TEST_URI"))
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    if not a.uri:
        ap.error("--uri (or MONGOMQ_URI) is needed")
    db = "mongomq_bench_otel_%d_%s" % (os.getpid(), uuid.uuid4().hex[:6])
    modes = [(kind, with_attrs) for with_attrs in (False, True) for kind in ("off", "api", "sdk")]
    best: Dict[tuple, Dict[str, Any]] = {}
    with mongomq.Client(a.uri) as client:
        for _ in range(a.rounds):
            for mode in modes:
                r = one(client, db, mode[0], mode[1], a.events)
                b = best.setdefault(mode, r)
                for k in ("publish_eps", "claim_ack_eps", "worker_eps"):
                    b[k] = max(b[k], r[k])
                for k in ("publish_cpu_us", "claim_ack_cpu_us"):
                    b[k] = min(b[k], r[k])
    rows = [dict(tracing=k, attrs=3 if w else 0, **best[(k, w)]) for k, w in modes]
    if a.json:
        print(json.dumps({"binding": "python", "python": sys.version.split()[0], "events": a.events,
                          "rounds": a.rounds, "modes": rows}))
        return 0
    print("%d events, best of %d rounds: events/s, and CPU µs per event (the whole process's); spans: what "
          "the SDK exported in one round" % (a.events, a.rounds))
    print("%-8s %-6s %10s %9s %12s %9s %10s %8s" % ("tracing", "attrs", "publish/s", "cpu µs", "claim+ack/s",
                                                   "cpu µs", "worker/s", "spans"))
    for r in rows:
        print("%-8s %-6d %10.0f %9.0f %12.0f %9.0f %10.0f %8d" % (
            r["tracing"], r["attrs"], r["publish_eps"], r["publish_cpu_us"], r["claim_ack_eps"],
            r["claim_ack_cpu_us"], r["worker_eps"], r["spans"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
