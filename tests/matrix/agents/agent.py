#!/usr/bin/env python3
"""The matrix's Python agent: the line protocol of tests/matrix/README.md over the
Python package (bindings/python), or over harel's MongoTransport with --harel. The
tracing commands (tpublish, twork) set up, at their first use, the OpenTelemetry SDK
with an in-memory span exporter and the W3C propagator (mongomq.otel)."""
import sys
import threading
import time

HAREL = "--harel" in sys.argv
URI = sys.argv[-1]
queues = {}
held = None


def fnv(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def spec_bytes(spec: str) -> bytes:
    if spec == "-":
        return b""
    if spec.startswith("big:"):
        return bytes(i % 251 for i in range(int(spec[4:])))
    return bytes.fromhex(spec)


def spec_attrs(word: str) -> dict:
    """The protocol's ATTRS (KEYHEX=VALUEHEX joined by ';', '-' for none) as an ordered dict."""
    if word == "-":
        return {}
    pairs = (p.split("=", 1) for p in word.split(";"))
    return {bytes.fromhex(k).decode("utf-8"): bytes.fromhex(v).decode("utf-8") for k, v in pairs}


def attrs_word(attrs) -> str:
    if attrs is None:
        return "?"
    return ";".join("%s=%s" % (k.encode("utf-8").hex(), v.encode("utf-8").hex()) for k, v in attrs.items()) or "-"


if HAREL:
    import pymongo
    from harel.engine.transport.mongo import MongoTransport
    from harel.spec.states import Event
    mongo = pymongo.MongoClient(URI)

    def queue(db, prefix):
        if (db, prefix) not in queues:
            # harel's prefix P keeps its queue in P_transport_*: ours is "P_transport".
            assert prefix.endswith("_transport"), prefix
            queues[db, prefix] = MongoTransport(mongo, db, prefix=prefix[: -len("_transport")])
        return queues[db, prefix]

    def now(q):
        return time.time()

    def publish(q, group, data, prio, delay, attrs):
        if delay > 0:
            raise RuntimeError("harel has no scheduled publish")
        if attrs:
            raise RuntimeError("harel has no attributes")
        q.publish(group, Event.model_validate_json(data), priority=prio)
        return 0, 0.0  # harel's publish does not return the seq

    def claim(q, wait, vis):
        end = time.monotonic() + wait
        while True:
            lease = q.claim("harel-agent", vis)
            if lease is not None or time.monotonic() >= end:
                return lease
            time.sleep(0.02)

    def fields(lease):
        return lease.seq, lease.group_id, 0, lease.event.model_dump_json().encode("utf-8")

    def attrs_of(lease):
        return None  # harel does not read them

    def ack(q, lease):
        q.ack(lease)  # harel's ack is silent when fenced off
        return "acked"

    def drop(q):
        pass  # the driver drops the whole database at the end

    def popen(db, prefix, partitions):
        raise RuntimeError("harel has no partitions")  # its schema is one partition's
else:
    from datetime import timedelta

    import mongomq
    client = mongomq.Client(URI)

    def queue(db, prefix):
        if (db, prefix) not in queues:
            queues[db, prefix] = client.queue(db, prefix)
        return queues[db, prefix]

    def now(q):
        return q.now().timestamp()  # the protocol's times are epoch seconds

    def publish(q, group, data, prio, delay, attrs):
        if delay > 0:
            at = q.now() + timedelta(seconds=delay)
            return q.publish(group, data, priority=prio, not_before=at, attrs=attrs), at.timestamp()
        return q.publish(group, data, priority=prio, attrs=attrs), 0.0

    def claim(q, wait, vis):
        return q.claim(visibility=vis, wait=wait)

    def fields(lease):
        return lease.seq, lease.group, lease.attempts, lease.event

    def attrs_of(lease):
        return lease.attrs

    def ack(q, lease):
        try:
            q.ack(lease)
            return "acked"
        except mongomq.LeaseLost:
            return "lease_lost"

    def drop(q):
        q.drop()

    def popen(db, prefix, partitions):
        """A handle of `partitions` partitions in place of the one we had (kept when the
        open fails): what every later command on db prefix uses."""
        q = client.queue(db, prefix, partitions=partitions)
        old = queues.get((db, prefix))
        queues[db, prefix] = q
        if old is not None and (held is None or held[0] is not old):
            old.close()
        return q.partitions

    traced = {}  # (db, prefix) -> a queue of its own whose telemetry is set
    tracing = None

    def tqueue(db, prefix):
        """The traced queue, and the exporter its spans go to (the SDK made at first use)."""
        global tracing
        if tracing is None:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

            from mongomq.otel import Telemetry
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            tracing = (exporter, Telemetry(tracer_provider=provider, propagator=TraceContextTextMapPropagator()))
        exporter, telemetry = tracing
        if (db, prefix) not in traced:
            traced[db, prefix] = client.queue(db, prefix)
            traced[db, prefix].set_telemetry(telemetry)
        return traced[db, prefix], exporter

    def finished(exporter, name):
        found = [s for s in exporter.get_finished_spans() if s.name == name]
        exporter.clear()
        return found

    def tpublish(db, prefix, group, data, trace_id, span_id):
        from opentelemetry import context, trace
        q, exporter = tqueue(db, prefix)
        exporter.clear()
        parent = trace.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                                   trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
        token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
        try:
            seq = q.publish(group, data, priority=0)
        finally:
            context.detach(token)
        sends = finished(exporter, "send %s.%s" % (db, prefix))
        if len(sends) != 1:
            return "err %d send spans" % len(sends)
        c = sends[0].context
        up = "%016x" % sends[0].parent.span_id if sends[0].parent is not None else "-"
        return "ok %d %032x %016x %s" % (seq, c.trace_id, c.span_id, up)

    def twork(db, prefix, wait_s):
        q, exporter = tqueue(db, prefix)
        exporter.clear()
        started = threading.Event()
        handled = threading.Event()
        holder = []

        def handler(lease):
            started.wait()
            holder[0].stop(timeout=0)  # no more claims: this event is the only one handled
            handled.set()

        w = q.worker(handler, concurrency=1, visibility=30.0)
        holder.append(w)
        started.set()
        handled.wait(wait_s)
        w.stop()  # waits for the handler's ack, and so for its process span's end
        procs = finished(exporter, "process %s.%s" % (db, prefix))
        if not procs:
            return "ok none"
        if len(procs) != 1:
            return "err %d process spans" % len(procs)
        p = procs[0]
        link = ("%032x %016x" % (p.links[0].context.trace_id, p.links[0].context.span_id)) if p.links else "- -"
        return "ok %s %032x %016x %s %d" % (p.attributes["messaging.message.id"], p.context.trace_id,
                                           p.context.span_id, link, p.attributes["messaging.mongomq.message.attempts"])


def record(lease, t):
    seq, group, attempts, data = fields(lease)
    return "%d,%s,%d,%d,%s,%.6f,%s" % (seq, group.encode("utf-8").hex(), attempts, len(data), fnv(data), t,
                                       attrs_word(attrs_of(lease)))


def handle(words):
    global held
    op = words[0]
    if op == "quit":
        return None
    if op == "ack_held":
        q, lease = held
        held = None
        return "ok " + ack(q, lease)
    if op == "popen":
        return "ok %d" % popen(words[1], words[2], int(words[3]))
    q = queue(words[1], words[2])
    args = words[3:]
    if op == "publish":
        attrs = spec_attrs(args[4]) if len(args) > 4 else {}
        seq, at = publish(q, bytes.fromhex(args[0]).decode("utf-8"), spec_bytes(args[3]), int(args[1]), float(args[2]),
                          attrs)
        return "ok %d %.6f" % (seq, at)
    if op == "claim":
        n, wait, vis = int(args[0]), float(args[1]), float(args[2])
        out = []
        for _ in range(n):
            lease = claim(q, wait, vis)
            if lease is None:
                break
            out.append(record(lease, now(q)))
            st = ack(q, lease)
            if st != "acked":
                return "err ack: " + st
        return " ".join(["ok"] + out)
    if op == "drain":
        idle, vis, hold = float(args[0]), float(args[1]), float(args[2]) / 1000.0
        out = []
        while True:
            lease = claim(q, idle, vis)
            if lease is None:
                break
            t1 = time.time()
            seq, group, _, data = fields(lease)
            time.sleep(hold)
            t2 = time.time()
            st = ack(q, lease)
            if st != "acked":
                return "err ack: " + st
            out.append("%d,%s,%.6f,%.6f,%s" % (seq, group.encode("utf-8").hex(), t1, t2, fnv(data)))
        return " ".join(["ok"] + out)
    if op == "hold":
        lease = claim(q, float(args[0]), float(args[1]))
        if lease is None:
            return "ok none"
        held = (q, lease)
        return "ok " + record(lease, now(q))
    if op == "drop":
        drop(q)
        return "ok"
    if op == "tpublish" and not HAREL:
        return tpublish(words[1], words[2], bytes.fromhex(args[0]).decode("utf-8"), spec_bytes(args[1]), args[2],
                        args[3])
    if op == "twork" and not HAREL:
        return twork(words[1], words[2], float(args[0]))
    return "err unknown op " + op


def main():
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            reply = handle(words)
        except Exception as e:  # reported to the driver, which fails the check
            reply = "err %s: %s" % (type(e).__name__, str(e).replace("\n", " "))
        if reply is None:
            break
        sys.stdout.write(reply + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
