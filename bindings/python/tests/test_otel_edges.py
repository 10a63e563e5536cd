"""mongomq.otel beyond the CONTRACT scenarios (test_otel.py): the async surface (a
publish awaited in a span, the AsyncWorker's process span current across the
handler's awaits), extract() for hand claims, the attribute bounds an injection
must keep, a propagator that fails, failed operations (publish, a lease-lost ack),
turning telemetry off, a keyed publish and its duplicate, and that mongomq imports
no OpenTelemetry until asked."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import SpanKind, StatusCode

import mongomq
from mongomq import aio
from mongomq.otel import Telemetry
from conftest import fresh_db
from test_otel import dest, spans, traceparent, work_until


def run(coro, timeout: float = 60.0) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(coro, timeout)

    asyncio.run(bounded())


def test_otel_async_publish_and_worker(uri, otel):
    async def main() -> None:
        async with aio.AsyncClient(uri) as client, client.queue(fresh_db(), "mq") as q:
            try:
                q.set_telemetry(otel.tel)
                assert q.telemetry is otel.tel
                with otel.tracer.start_as_current_span("P") as parent:
                    seq = await q.publish("g", b"x", attrs={"k": "v"})
                    await q.publish_batch([("g", b"y")])
                sends = spans(otel, "send " + dest(q))
                assert len(sends) == 2
                for send in sends:  # the awaiting task's span is the parent, though a pool thread sent it
                    assert send.parent.span_id == parent.get_span_context().span_id
                assert sends[0].attributes["messaging.message.id"] == str(seq)
                stored = await q.peek("g")
                assert [e.attrs for e in stored] == [{"k": "v", "traceparent": traceparent(sends[0])},
                                                     {"traceparent": traceparent(sends[1])}]

                seen = []
                done = asyncio.Event()

                async def handler(lease: mongomq.Lease) -> None:
                    before = trace.get_current_span()
                    await asyncio.sleep(0.01)  # the span stays current across the await
                    after = trace.get_current_span()
                    seen.append((before, after, after.is_recording()))
                    if len(seen) == 2:
                        done.set()

                w = q.worker(handler)
                await asyncio.wait_for(done.wait(), 30)
                assert await w.stop()
                procs = spans(otel, "process " + dest(q))
                assert len(procs) == 2
                for (before, after, recording), proc, send in zip(seen, procs, sends):
                    assert before.get_span_context().span_id == proc.context.span_id
                    assert after.get_span_context().span_id == proc.context.span_id and recording
                    assert proc.kind == SpanKind.CONSUMER
                    assert [link.context.span_id for link in proc.links] == [send.context.span_id]
                    # The worker's own context: the task that started it had no span.
                    assert proc.parent is None
                acks = spans(otel, "ack " + dest(q))
                assert sorted(a.parent.span_id for a in acks) == sorted(p.context.span_id for p in procs)
            finally:
                await q.drop()

    run(main())


def test_otel_async_handler_error(uri, otel):
    async def main() -> None:
        async with aio.AsyncClient(uri) as client, client.queue(fresh_db(), "mq") as q:
            try:
                q.set_telemetry(otel.tel)
                await q.publish("g", b"x")
                calls = []

                async def handler(lease: mongomq.Lease) -> None:
                    calls.append(lease.attempts)
                    if len(calls) == 1:
                        raise KeyError("first")

                w = q.worker(handler, backoff_base=0.01, backoff_cap=0.05, on_error=lambda e, l: None)
                for _ in range(3000):
                    if len(calls) >= 2:
                        break
                    await asyncio.sleep(0.01)
                assert await w.stop()
                assert calls == [1, 2]
                first, second = spans(otel, "process " + dest(q))
                assert first.status.status_code == StatusCode.ERROR
                assert first.attributes["error.type"] == "KeyError"
                assert [e.name for e in first.events] == ["exception"]
                [nack] = spans(otel, "nack " + dest(q))
                assert nack.parent.span_id == first.context.span_id
                assert second.status.status_code != StatusCode.ERROR
            finally:
                await q.drop()

    run(main())


def test_otel_extract_for_hand_claims(queue, otel):
    queue.set_telemetry(otel.tel)
    with otel.tracer.start_as_current_span("P"):
        queue.publish("g", b"x")
    queue.set_telemetry(None)
    queue.publish("g", b"plain")
    queue.set_telemetry(otel.tel)
    [send] = spans(otel, "send " + dest(queue))

    lease = queue.claim(max_events=2)
    assert lease is not None and lease.count == 2
    ctx = otel.tel.extract(lease)
    sc = trace.get_current_span(ctx).get_span_context()
    assert (sc.trace_id, sc.span_id, sc.is_remote) == (send.context.trace_id, send.context.span_id, True)
    assert not trace.get_current_span(otel.tel.extract(lease, 1)).get_span_context().is_valid  # none carried
    assert trace.get_current_span(otel.tel.extract(lease, -2)).get_span_context().span_id == send.context.span_id
    with pytest.raises(IndexError):
        otel.tel.extract(lease, 2)
    with pytest.raises(TypeError):
        otel.tel.extract("not a lease")
    queue.ack(lease)
    # A hand ack records its duration, and no span.
    assert spans(otel, "ack " + dest(queue)) == []
    data = otel.reader.get_metrics_data()
    ops = [p.attributes["messaging.operation.name"] for rm in data.resource_metrics for sm in rm.scope_metrics
           for m in sm.metrics if m.name == "messaging.client.operation.duration" for p in m.data.data_points]
    assert sorted(ops) == ["ack", "publish"]
    lease.close()
    with pytest.raises(mongomq.ClosedError):
        otel.tel.extract(lease)


class _Fixed(TextMapPropagator):
    """Injects the pairs it is given, whatever the context; extracts nothing."""

    def __init__(self, pairs):
        self.pairs = pairs

    def inject(self, carrier, context=None, setter=None):
        for k, v in self.pairs:
            carrier[k] = v

    def extract(self, carrier, context=None, getter=None):
        return context if context is not None else Context()

    @property
    def fields(self):
        return {k for k, _ in self.pairs}


def test_otel_injection_keeps_the_bounds(queue, otel):
    pairs = [("bad key", "1"), ("big", "x" * 4097), ("nul", "a\0b"), ("k" * 129, "1"), ("ok.key", "1"),
             ("exact", "y" * 4096), ("é", "1"), ("surrogate", "\udc80"), ("mine", "theirs"), ("tail", "2")]
    queue.set_telemetry(Telemetry(otel.tel.tracer_provider, otel.tel.meter_provider, _Fixed(pairs)))
    queue.publish("a", b"x", attrs={"mine": "kept"})
    assert list(queue.peek("a")[0].attrs.items()) == [("mine", "kept"), ("ok.key", "1"), ("exact", "y" * 4096),
                                                      ("tail", "2")]
    # 14 of its own: room for 2 injected, in the propagator's order.
    own = {"o%d" % i: "v" for i in range(14)}
    queue.publish("b", b"x", attrs=own)
    assert list(queue.peek("b")[0].attrs.items()) == list(own.items()) + [("ok.key", "1"), ("exact", "y" * 4096)]
    queue.publish_batch([("c", b"x", 0, None, None, own), ("c", b"y")])
    assert [list(e.attrs) for e in queue.peek("c")] == [list(own) + ["ok.key", "exact"],
                                                        ["ok.key", "exact", "mine", "tail"]]
    # 17 of its own is still the caller's error, with nothing published.
    with pytest.raises(mongomq.ArgumentError):
        queue.publish("d", b"x", attrs={"o%d" % i: "v" for i in range(17)})
    assert queue.peek("d") == []


class _Broken(_Fixed):
    def inject(self, carrier, context=None, setter=None):
        raise RuntimeError("broken propagator")

    def extract(self, carrier, context=None, getter=None):
        raise RuntimeError("broken propagator")


def test_otel_broken_propagator_fails_nothing(queue, otel, caplog):
    queue.set_telemetry(Telemetry(otel.tel.tracer_provider, otel.tel.meter_provider, _Broken([])))
    queue.publish("g", b"x", attrs={"a": "b"})
    queue.publish_batch([("g", b"y", 0, None, None, {"c": "d"})])
    assert [e.attrs for e in queue.peek("g")] == [{"a": "b"}, {"c": "d"}]
    assert "the propagator's inject failed" in caplog.text
    errors = []
    work_until(queue, lambda lease, n: None, 2, on_error=lambda e, lease: errors.append(e))
    assert queue.stats().messages == 0  # handled and acked, untraced
    assert [str(e) for e in errors] == ["broken propagator"] * 2
    assert spans(otel, "process " + dest(queue)) == []


def test_otel_failed_publish_and_lease_lost_ack(queue, otel):
    queue.set_telemetry(otel.tel)
    with pytest.raises(mongomq.ArgumentError):
        queue.publish("g", b"x", priority=9)
    [send] = spans(otel, "send " + dest(queue))
    assert send.status.status_code == StatusCode.ERROR
    assert send.attributes["error.type"] == "MQ_ERR_ARG"
    assert "messaging.message.id" not in send.attributes
    with pytest.raises(TypeError):
        queue.publish("g", 17)
    assert spans(otel, "send " + dest(queue))[-1].attributes["error.type"] == "TypeError"

    queue.publish("g", b"x")
    other = queue.client.queue(queue.db, queue.prefix)
    try:
        # The handler's group is purged under it: its ack is lease-lost.
        work_until(queue, lambda lease, n: other.purge_group(lease.group), 1)
    finally:
        other.close()
    [ack] = spans(otel, "ack " + dest(queue))
    assert ack.status.status_code == StatusCode.ERROR
    assert ack.attributes["error.type"] == "MQ_LEASE_LOST"
    [proc] = spans(otel, "process " + dest(queue))
    assert proc.status.status_code != StatusCode.ERROR  # the handler did not fail
    data = otel.reader.get_metrics_data()
    points = [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
              for p in m.data.data_points if m.name == "messaging.client.operation.duration"]
    kinds = sorted((p.attributes["messaging.operation.name"], p.attributes.get("error.type", "")) for p in points)
    assert kinds == [("ack", "MQ_LEASE_LOST"), ("publish", ""), ("publish", "MQ_ERR_ARG"), ("publish", "TypeError")]
    sent = [p for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            for p in m.data.data_points if m.name == "messaging.client.sent.messages"]
    assert sorted((p.attributes.get("error.type", ""), p.value) for p in sent) == [
        ("", 1), ("MQ_ERR_ARG", 1), ("TypeError", 1)]


def test_otel_set_telemetry_off_and_types(queue, otel):
    assert queue.telemetry is None
    with pytest.raises(TypeError):
        queue.set_telemetry(object())
    queue.set_telemetry(otel.tel)
    assert queue.telemetry is otel.tel
    queue.set_telemetry(None)
    assert queue.telemetry is None
    queue.publish("g", b"x")
    work_until(queue, lambda lease, n: None, 1)
    assert otel.exporter.get_finished_spans() == ()
    assert queue.peek("g") == []
    queue.close()
    with pytest.raises(mongomq.ClosedError):
        queue.set_telemetry(otel.tel)


def test_otel_import_is_optional():
    code = r"""
import sys
import mongomq, mongomq.aio
assert not [m for m in sys.modules if m.startswith("opentelemetry")], "import mongomq imported OpenTelemetry"
sys.modules["opentelemetry"] = None  # as if it were not installed
try:
    import mongomq.otel
except ImportError as e:
    print(e)
else:
    raise SystemExit("mongomq.otel imported without OpenTelemetry")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "pip install mongomq[otel]" in r.stdout


def test_otel_dedup_publish(queue, otel):
    queue.set_telemetry(otel.tel)
    first = queue.publish("g", b"x", dedup_key="k")
    again = queue.publish("h", b"y", dedup_key="k")
    assert again.duplicate and int(again) == int(first)
    sends = spans(otel, "send " + dest(queue))
    assert [s.attributes["messaging.message.id"] for s in sends] == [str(first)] * 2
    assert [s.attributes["messaging.mongomq.message.group"] for s in sends] == ["g", "h"]
    data = otel.reader.get_metrics_data()
    sent = [p.value for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            if m.name == "messaging.client.sent.messages" for p in m.data.data_points]
    assert sent == [2]  # the duplicate counts: one per event published
    assert [e.attrs for e in queue.peek()] == [{"traceparent": traceparent(sends[0])}]
