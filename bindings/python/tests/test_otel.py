"""The six tracing scenarios of bindings/CONTRACT.md ("Tracing (issue 22)"), under their
names, with the OpenTelemetry SDK's in-memory span exporter (a simple, synchronous
processor) and metric reader and the W3C trace-context propagator, passed to
mongomq.otel.Telemetry explicitly (the fixture `otel`, in conftest.py): the global
providers are never set in this process (trace_off_without_sdk, which needs them
unset, runs in a child). The edges beyond the scenarios are in test_otel_edges.py."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from types import SimpleNamespace
from typing import Callable, List

from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import mongomq


def dest(q) -> str:
    return "%s.%s" % (q.db, q.prefix)


def spans(otel, name: str) -> list:
    """The finished spans of that name, in the order they started."""
    return sorted((s for s in otel.exporter.get_finished_spans() if s.name == name), key=lambda s: s.start_time)


def traceparent(span) -> str:
    c = span.context  # its flags: sampled (and "random" from SDKs that say so)
    return "00-%032x-%016x-%02x" % (c.trace_id, c.span_id, c.trace_flags)


def wait_for(cond: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def work_until(q, handler, calls: int, **options) -> List[mongomq.Lease]:
    """Runs a worker with handler until it was called `calls` times (each call's lease
    fields noted), then stops it (which waits for the running handler's ack or nack:
    every span is finished after this)."""
    seen: List[SimpleNamespace] = []
    lock = threading.Lock()

    def wrapped(lease):
        with lock:
            current = trace.get_current_span()
            seen.append(SimpleNamespace(seq=lease.seq, attempts=lease.attempts, count=lease.count,
                                        span=current, recording=current.is_recording()))
            n = len(seen)
        handler(lease, n)

    options.setdefault("on_error", lambda exc, lease: None)
    w = q.worker(wrapped, **options)
    try:
        assert wait_for(lambda: len(seen) >= calls), "the handler ran %d times, not %d" % (len(seen), calls)
    finally:
        assert w.stop(), "the worker did not stop"
    return seen


def ok(lease, n):
    pass


def assert_messaging(span, q, op_type: str, op_name: str) -> None:
    a = span.attributes
    assert a["messaging.system"] == "mongomq"
    assert a["messaging.destination.name"] == dest(q)
    assert a["messaging.operation.type"] == op_type
    assert a["messaging.operation.name"] == op_name


# ---- the scenarios -------------------------------------------------------------------

def test_trace_publish_process(queue, otel):
    queue.set_telemetry(otel.tel)
    with otel.tracer.start_as_current_span("P") as parent:
        seq = queue.publish("g", b"x", attrs={"tenant": "t-1"})
    p = parent.get_span_context()

    [send] = spans(otel, "send " + dest(queue))
    assert send.kind == SpanKind.PRODUCER
    assert send.context.trace_id == p.trace_id
    assert send.parent is not None and send.parent.span_id == p.span_id
    assert_messaging(send, queue, "send", "publish")
    assert send.attributes["messaging.message.id"] == str(seq)
    assert send.attributes["messaging.mongomq.message.group"] == "g"

    [stored] = queue.peek("g")
    assert list(stored.attrs.items()) == [("tenant", "t-1"), ("traceparent", traceparent(send))]

    [call] = work_until(queue, ok, 1, concurrency=1)
    [proc] = spans(otel, "process " + dest(queue))
    assert proc.kind == SpanKind.CONSUMER
    assert proc.context.trace_id != p.trace_id
    assert proc.parent is None
    assert len(proc.links) == 1
    assert (proc.links[0].context.trace_id, proc.links[0].context.span_id) == (send.context.trace_id,
                                                                               send.context.span_id)
    assert_messaging(proc, queue, "process", "process")
    assert proc.attributes["messaging.message.id"] == str(seq)
    assert proc.attributes["messaging.mongomq.message.group"] == "g"
    assert proc.attributes["messaging.mongomq.message.attempts"] == 1
    assert "messaging.batch.message_count" not in proc.attributes
    # The handler ran with the process span current.
    assert call.span.get_span_context().span_id == proc.context.span_id
    assert call.recording

    [ack] = spans(otel, "ack " + dest(queue))
    assert ack.kind == SpanKind.CLIENT
    assert ack.context.trace_id == proc.context.trace_id
    assert ack.parent.span_id == proc.context.span_id
    assert_messaging(ack, queue, "settle", "ack")
    assert spans(otel, "nack " + dest(queue)) == []
    assert queue.stats().messages == 0


def test_trace_handler_error(queue, otel):
    queue.set_telemetry(otel.tel)
    queue.publish("g", b"flaky")
    [send] = spans(otel, "send " + dest(queue))

    def fails_once(lease, n):
        if n == 1:
            raise RuntimeError("the first try fails")

    calls = work_until(queue, fails_once, 2, backoff_base=0.01, backoff_cap=0.05)
    assert [c.attempts for c in calls] == [1, 2]
    first, second = spans(otel, "process " + dest(queue))
    for proc in (first, second):
        assert [(link.context.trace_id, link.context.span_id) for link in proc.links] == [
            (send.context.trace_id, send.context.span_id)]
    assert first.status.status_code == StatusCode.ERROR
    assert first.attributes["error.type"] == "RuntimeError"
    assert first.attributes["messaging.mongomq.message.attempts"] == 1
    [exc_event] = [e for e in first.events if e.name == "exception"]
    assert exc_event.attributes["exception.type"] == "RuntimeError"
    assert exc_event.attributes["exception.message"] == "the first try fails"
    [nack] = spans(otel, "nack " + dest(queue))
    assert nack.parent.span_id == first.context.span_id
    assert_messaging(nack, queue, "settle", "nack")
    assert nack.status.status_code != StatusCode.ERROR  # the nack itself went through

    assert second.status.status_code != StatusCode.ERROR
    assert "error.type" not in second.attributes
    assert second.attributes["messaging.mongomq.message.attempts"] == 2
    [ack] = spans(otel, "ack " + dest(queue))
    assert ack.parent.span_id == second.context.span_id
    assert queue.stats().messages == 0


def test_trace_batch_publish(queue, otel):
    queue.set_telemetry(otel.tel)
    first = queue.publish_batch([("g1", b"a"), ("g2", b"b", 0, None, None, {"n": "1"}), ("g1", b"c")])
    [send] = spans(otel, "send " + dest(queue))
    assert send.kind == SpanKind.PRODUCER
    assert_messaging(send, queue, "send", "publish")
    assert send.attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in send.attributes
    assert send.parent is None  # no current span: a trace of its own
    stored = {e.seq: e for e in queue.peek(None, 10)}
    assert sorted(stored) == sorted(o.seq for o in first.outcomes) and first == first.outcomes[0].seq
    assert [stored[o.seq].attrs for o in first.outcomes] == [
        {"traceparent": traceparent(send)}, {"n": "1", "traceparent": traceparent(send)},
        {"traceparent": traceparent(send)}]

    calls = work_until(queue, ok, 2, max_events=3)
    assert sorted(c.count for c in calls) == [1, 2]
    procs = spans(otel, "process " + dest(queue))
    assert len(procs) == 2
    [batch] = [p for p in procs if len(p.links) == 2]
    assert batch.attributes["messaging.batch.message_count"] == 2
    assert "messaging.message.id" not in batch.attributes
    assert batch.attributes["messaging.mongomq.message.group"] == "g1"
    for link in batch.links:
        assert (link.context.trace_id, link.context.span_id) == (send.context.trace_id, send.context.span_id)
    [single] = [p for p in procs if p is not batch]
    assert single.attributes["messaging.message.id"] == str(first.outcomes[1].seq)
    assert len(single.links) == 1
    assert len(spans(otel, "ack " + dest(queue))) == 2


def test_trace_attrs_kept(queue, otel):
    queue.set_telemetry(otel.tel)
    own16 = {"k%02d" % i: "v%d" % i for i in range(16)}
    queue.publish("full", b"x", attrs=own16)
    [stored] = queue.peek("full")
    assert list(stored.attrs.items()) == list(own16.items())  # exactly those 16: nothing injected

    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with otel.tracer.start_as_current_span("P"):
        queue.publish("own", b"y", attrs={"traceparent": mine, "a": "b"})
    [stored] = queue.peek("own")
    assert list(stored.attrs.items()) == [("traceparent", mine), ("a", "b")]

    # The same in a batch: each event keeps its own.
    queue.publish_batch([("bfull", b"x", 0, None, None, own16), ("bown", b"y", 0, None, None, {"traceparent": mine})])
    assert list(queue.peek("bfull")[0].attrs.items()) == list(own16.items())
    assert queue.peek("bown")[0].attrs == {"traceparent": mine}
    # Every publish went through and was traced.
    assert len(spans(otel, "send " + dest(queue))) == 3
    assert all(s.status.status_code != StatusCode.ERROR for s in spans(otel, "send " + dest(queue)))


def metric(otel, name: str):
    data = otel.reader.get_metrics_data()
    found = [m for rm in data.resource_metrics for sm in rm.scope_metrics if sm.scope.name == "mongomq"
             for m in sm.metrics if m.name == name]
    assert len(found) == 1, "metric %s: %d found" % (name, len(found))
    return found[0]


def test_trace_metrics(queue, otel):
    queue.set_telemetry(otel.tel)
    for i in range(3):
        queue.publish("g%d" % i, b"%d" % i)

    def fails_once(lease, n):
        if n == 1:
            raise ValueError("once")

    work_until(queue, fails_once, 4, backoff_base=0.01, backoff_cap=0.05)
    assert queue.stats().messages == 0

    d = dest(queue)
    sent = metric(otel, "messaging.client.sent.messages")
    assert sent.unit == "{message}"
    assert sum(p.value for p in sent.data.data_points) == 3
    assert all(p.attributes["messaging.destination.name"] == d for p in sent.data.data_points)
    assert all(p.attributes["messaging.system"] == "mongomq" for p in sent.data.data_points)
    assert all(p.attributes["messaging.operation.name"] == "publish" for p in sent.data.data_points)

    consumed = metric(otel, "messaging.client.consumed.messages")
    assert sum(p.value for p in consumed.data.data_points) == 4
    assert all(p.attributes["messaging.destination.name"] == d for p in consumed.data.data_points)
    assert all(p.attributes["messaging.operation.name"] == "claim" for p in consumed.data.data_points)

    ops = metric(otel, "messaging.client.operation.duration")
    assert ops.unit == "s"
    by_op = {}
    for p in ops.data.data_points:
        assert p.attributes["messaging.destination.name"] == d
        by_op[p.attributes["messaging.operation.name"]] = by_op.get(p.attributes["messaging.operation.name"], 0) + p.count
    assert by_op == {"publish": 3, "ack": 3, "nack": 1}

    proc = metric(otel, "messaging.process.duration")
    assert proc.unit == "s"
    assert sum(p.count for p in proc.data.data_points) == 4
    failed = [p for p in proc.data.data_points if "error.type" in p.attributes]
    assert [(p.attributes["error.type"], p.count) for p in failed] == [("ValueError", 1)]
    assert all(p.attributes["messaging.destination.name"] == d for p in proc.data.data_points)
    assert all(p.attributes["messaging.operation.name"] == "process" for p in proc.data.data_points)


OFF_CHILD = r"""
import json, os, sys, threading
import mongomq
from opentelemetry import trace
from mongomq.otel import Telemetry

out = {"sdk_imported_before": any(m.startswith("opentelemetry.sdk") for m in sys.modules)}
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as client:
    for name, tel in (("none", None), ("global", Telemetry())):
        q = client.queue(sys.argv[1], name, partitions=int(os.environ.get("MONGOMQ_TEST_PARTITIONS") or 1))
        if tel is not None:
            q.set_telemetry(tel)
        try:
            q.publish("g", b"x", attrs={"a": "b"})
            q.publish_batch([("g", b"y")])
            stored = [e.attrs for e in q.peek("g")]
            seen = []
            done = threading.Event()

            def handler(lease):
                s = trace.get_current_span()
                seen.append({"recording": s.is_recording(), "valid": s.get_span_context().is_valid})
                if len(seen) == 2:
                    done.set()

            errors = []
            w = q.worker(handler, on_error=lambda e, l: errors.append(repr(e)))
            done.wait(30)
            stopped = w.stop()
            out[name] = {"stored": stored, "seen": seen, "errors": errors, "stopped": stopped,
                         "left": q.stats().messages}
        finally:
            q.drop()
            q.close()
out["provider"] = type(trace.get_tracer_provider()).__name__
out["sdk_imported"] = any(m.startswith("opentelemetry.sdk") for m in sys.modules)
print(json.dumps(out))
"""


def test_trace_off_without_sdk(db):
    # A child interpreter with no OTEL_* setting: nothing can have set an SDK there.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    import subprocess

    r = subprocess.run([sys.executable, "-c", OFF_CHILD, db], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["sdk_imported_before"] is False and out["sdk_imported"] is False
    assert out["provider"] == "ProxyTracerProvider"  # the API's own: no SDK behind it
    for name in ("none", "global"):
        got = out[name]
        assert got["stored"] == [{"a": "b"}, {}], name  # no traceparent stored
        assert got["seen"] == [{"recording": False, "valid": False}] * 2, name
        assert got["errors"] == [] and got["stopped"] is True and got["left"] == 0, name
