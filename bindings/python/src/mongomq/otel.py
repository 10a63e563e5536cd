"""mongomq.otel: OpenTelemetry tracing and metrics for mongomq queues
(bindings/CONTRACT.md, "Tracing"), for users who trace. It needs the OpenTelemetry
API (``pip install mongomq[otel]``); ``import mongomq`` alone never imports it.

    from mongomq.otel import Telemetry

    queue.set_telemetry(Telemetry())   # the global tracer and meter providers, propagator

With it, a publish is a ``send {db}.{prefix}`` span (producer) whose context goes into
each event's attributes (W3C ``traceparent``, ``tracestate`` by default: the
propagator's), a worker runs each handler in a ``process {db}.{prefix}`` span
(consumer) that links to the producer's context, its ack or nack is an ``ack``/``nack``
span (client) under it, and four metrics count and time it all. ``extract(lease)``
gives the producer's context to code that claims by hand.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

try:
    from opentelemetry import context as _context
    from opentelemetry import metrics as _metrics
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("mongomq.otel needs the OpenTelemetry API, which is not installed: "
                      "pip install mongomq[otel] (%s)" % e, name=e.name, path=e.path) from e

from . import __version__, _raw
from ._errors import Error
from ._lease import Lease

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.propagators.textmap import TextMapPropagator

    from ._batch import Batch
    from ._published import Published, PublishedBatch
    from ._queue import Queue

__all__ = ["Telemetry", "SCOPE"]

SCOPE = "mongomq"
"""The instrumentation scope (tracer and meter) name; its version is the package's."""

_SYSTEM = "mongomq"
# Seconds: the messaging semantic conventions' buckets for durations.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
_KEY_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_perf = time.perf_counter
log = logging.getLogger("mongomq")


def _error_type(exc: BaseException) -> str:
    """error.type: a library error's status name (MQ_LEASE_LOST), else the type's name."""
    if isinstance(exc, Error) and exc.status is not None:
        return exc.status_name or type(exc).__qualname__
    return type(exc).__qualname__


def _fail(span: Any, exc: BaseException) -> str:
    kind = _error_type(exc)
    if span.is_recording():
        span.set_status(Status(StatusCode.ERROR, "%s: %s" % (type(exc).__name__, exc)))
        span.record_exception(exc)
        span.set_attribute("error.type", kind)
    return kind


def _pack(key: Any, value: Any) -> Optional[bytes]:
    """A propagator's key and value packed as an attribute (key NUL value NUL), or None
    when the pair would break the attribute bounds: it is then left out."""
    if not isinstance(key, str) or not isinstance(value, str) or "\0" in value:
        return None
    try:
        k = key.encode("ascii")
        v = value.encode("utf-8")  # a lone surrogate is no UTF-8: the library would refuse it
    except UnicodeEncodeError:
        return None
    if not 1 <= len(k) <= _raw.MQ_ATTR_KEY_MAX or not _KEY_CHARS.issuperset(k) or len(v) > _raw.MQ_ATTR_VALUE_MAX:
        return None
    return k + b"\0" + v + b"\0"


class _Injection:
    """The send span's context as attribute pairs, and how they join an event's own:
    after them, without a key the event has, up to ATTR_MAX in all."""

    __slots__ = ("pairs", "all")

    def __init__(self, carrier: Dict[str, Any]) -> None:
        pairs: List[Tuple[bytes, bytes]] = []
        for key, value in carrier.items():
            packed = _pack(key, value)
            if packed is not None:
                pairs.append((packed[:packed.index(b"\0")], packed))
        self.pairs = pairs[:_raw.MQ_ATTR_MAX]
        self.all = b"".join(p for _, p in self.pairs)

    def __call__(self, packed: bytes) -> bytes:
        if not packed:
            return self.all
        parts = packed.split(b"\0")  # key, value, ..., and b"" after the last NUL
        room = _raw.MQ_ATTR_MAX - len(parts) // 2
        if room <= 0:
            return packed  # 16 of the event's own (or more: the library's error to give)
        keys = set(parts[0:-1:2])
        extra = [p for k, p in self.pairs if k not in keys][:room]
        return packed + b"".join(extra) if extra else packed


class Telemetry:
    """What a queue traces and measures with (Queue.set_telemetry): a tracer and a
    meter (scope ``mongomq``, the package's version) from the tracer and meter
    providers given, and the text-map propagator given, each by default the global
    one of opentelemetry-api (``trace.get_tracer_provider()``,
    ``metrics.get_meter_provider()``, ``propagate.get_global_textmap()``, the last
    read at each use, so a propagator set globally later counts). One Telemetry may
    serve any number of queues; it is thread-safe."""

    __slots__ = ("tracer_provider", "meter_provider", "propagator", "_tracer", "_sent", "_consumed",
                 "_op_duration", "_process_duration")

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None,
                 propagator: Optional["TextMapPropagator"] = None) -> None:
        self.tracer_provider = tracer_provider if tracer_provider is not None else _trace.get_tracer_provider()
        self.meter_provider = meter_provider if meter_provider is not None else _metrics.get_meter_provider()
        self.propagator = propagator
        self._tracer = self.tracer_provider.get_tracer(SCOPE, __version__)
        meter = self.meter_provider.get_meter(SCOPE, __version__)
        self._sent = meter.create_counter("messaging.client.sent.messages", unit="{message}",
                                          description="Messages a producer attempted to send")
        self._consumed = meter.create_counter("messaging.client.consumed.messages", unit="{message}",
                                              description="Messages the worker claimed")
        self._op_duration = _histogram(meter, "messaging.client.operation.duration",
                                       "Duration of publish, ack and nack")
        self._process_duration = _histogram(meter, "messaging.process.duration",
                                            "Duration of the worker's handler runs")

    def _textmap(self) -> "TextMapPropagator":
        return self.propagator if self.propagator is not None else _propagate.get_global_textmap()

    def extract(self, lease: Lease, index: int = 0) -> "Context":
        """The producer's context carried by event ``index`` of the lease (0: the head;
        negative from the end), for code that claims by hand: an OpenTelemetry Context
        (no current context underneath) holding the send span's context as a remote
        span, or none when the event carries no trace context. Link to it, as the
        worker does: ``trace.Link(trace.get_current_span(ctx).get_span_context())``,
        or make it a parent with ``tracer.start_span(..., context=ctx)``."""
        if not isinstance(lease, Lease):
            raise TypeError("lease must be a mongomq.Lease, not %s" % type(lease).__name__)
        return self._textmap().extract(lease.attrs_at(index), context=_context.Context())

    def _bind(self, queue: "Queue") -> "_Bound":
        return _Bound(self, queue.db, queue.prefix)

    def __repr__(self) -> str:
        return "<mongomq.otel.Telemetry %r, %r>" % (self.tracer_provider, self.meter_provider)


def _histogram(meter: Any, name: str, description: str) -> Any:
    try:
        return meter.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=list(_BUCKETS))
    except TypeError:  # opentelemetry-api before 1.30 takes no advisory
        return meter.create_histogram(name, unit="s", description=description)


class _Bound:
    """One Telemetry for one queue: the names and attributes made once
    (Queue._telemetry), and what the queue and its workers call."""

    __slots__ = ("telemetry", "destination", "base", "send_name", "process_name", "_names", "_op_attrs",
                 "_tracer", "_sent", "_consumed", "_op_duration", "_process_duration")

    def __init__(self, telemetry: Telemetry, db: str, prefix: str) -> None:
        self.telemetry = telemetry
        self.destination = "%s.%s" % (db, prefix)
        self.base = {"messaging.system": _SYSTEM, "messaging.destination.name": self.destination}
        self.send_name = "send " + self.destination
        self.process_name = "process " + self.destination
        self._names = {"ack": "ack " + self.destination, "nack": "nack " + self.destination}
        self._op_attrs = {op: dict(self.base, **{"messaging.operation.name": op})
                          for op in ("publish", "ack", "nack", "claim", "process")}
        self._tracer = telemetry._tracer
        self._sent = telemetry._sent
        self._consumed = telemetry._consumed
        self._op_duration = telemetry._op_duration
        self._process_duration = telemetry._process_duration

    def _with_error(self, attrs: Dict[str, Any], kind: Optional[str]) -> Dict[str, Any]:
        if kind is None:
            return attrs
        return dict(attrs, **{"error.type": kind})

    def _send_span(self, extra: Dict[str, Any]) -> Any:
        attrs = dict(self.base)
        attrs["messaging.operation.type"] = "send"
        attrs["messaging.operation.name"] = "publish"
        attrs.update(extra)
        return self._tracer.start_span(self.send_name, kind=SpanKind.PRODUCER, attributes=attrs)

    def _injection(self, span: Any) -> _Injection:
        carrier: Dict[str, Any] = {}
        try:
            # The send span in the caller's context (its baggage too).
            self.telemetry._textmap().inject(carrier, context=_trace.set_span_in_context(span))
        except Exception:  # tracing never fails a publish: the event goes without
            log.warning("mongomq.otel: the propagator's inject failed; publishing without trace context",
                        exc_info=True)
            carrier = {}
        return _Injection(carrier)

    def _sent_done(self, count: int, t0: float, kind: Optional[str]) -> None:
        self._sent.add(count, self._with_error(self._op_attrs["publish"], kind))
        self._op_duration.record(_perf() - t0, self._with_error(self._op_attrs["publish"], kind))

    # ---- publish ----

    def publish(self, queue: "Queue", group: Any, event: Any, priority: Any, not_before: Any, dedup_key: Any,
                attrs: Any) -> "Published":
        extra = {"messaging.mongomq.message.group": group} if isinstance(group, str) else {}
        span = self._send_span(extra)
        t0 = _perf()
        try:
            published = queue._publish(group, event, priority, not_before, dedup_key, attrs,
                                       self._injection(span))
        except BaseException as e:
            kind = _fail(span, e)
            span.end()
            self._sent_done(1, t0, kind)
            raise
        span.set_attribute("messaging.message.id", str(int(published)))
        span.end()
        self._sent_done(1, t0, None)
        return published

    def publish_batch(self, queue: "Queue", batch: "Batch") -> "PublishedBatch":
        count = len(batch._adds)
        span = self._send_span({"messaging.batch.message_count": count})
        t0 = _perf()
        try:
            inject = self._injection(span)
            if inject.pairs:
                with batch._with_attrs(inject) as traced:
                    result = queue._publish_batch(traced)
            else:
                result = queue._publish_batch(batch)
        except BaseException as e:
            kind = _fail(span, e)
            span.end()
            self._sent_done(count, t0, kind)
            raise
        span.end()
        self._sent_done(count, t0, None)
        return result

    # ---- ack and nack, the worker's or anyone's: the operation's duration ----

    def timed(self, op: str, fn: Callable[..., Any], *args: Any) -> None:
        t0 = _perf()
        try:
            fn(*args)
        except BaseException as e:
            self._op_duration.record(_perf() - t0, self._with_error(self._op_attrs[op], _error_type(e)))
            raise
        self._op_duration.record(_perf() - t0, self._op_attrs[op])

    # ---- the worker ----

    def consumed(self, count: int) -> None:
        self._consumed.add(count, self._op_attrs["claim"])

    def process(self, lease: Lease) -> "_Process":
        return _Process(self, lease)


class _Process:
    """One handler run of a worker: the process span (started here, in the worker's
    own context, linking to each event's producer), the handler run with the span
    current (``with process:``), its ack or nack (settle, settle_async) and end()."""

    __slots__ = ("bound", "span", "ctx", "_token", "_t0")

    def __init__(self, bound: _Bound, lease: Lease) -> None:
        self.bound = bound
        textmap = bound.telemetry._textmap()
        count = len(lease._events)
        links = []
        for i in range(count):
            carrier = lease.attrs_at(i)
            if carrier:
                sc = _trace.get_current_span(textmap.extract(carrier, context=_context.Context())).get_span_context()
                if sc.is_valid:
                    links.append(Link(sc))
        attrs: Dict[str, Any] = dict(bound.base)
        attrs["messaging.operation.type"] = "process"
        attrs["messaging.operation.name"] = "process"
        if count == 1:
            attrs["messaging.message.id"] = str(lease._seq)
        else:
            attrs["messaging.batch.message_count"] = count
        attrs["messaging.mongomq.message.group"] = lease._group
        attrs["messaging.mongomq.message.attempts"] = lease._attempts
        self.span = bound._tracer.start_span(bound.process_name, kind=SpanKind.CONSUMER, attributes=attrs,
                                             links=links)
        self.ctx = _trace.set_span_in_context(self.span)
        self._token: Any = None
        self._t0 = 0.0

    def __enter__(self) -> Any:
        self._token = _context.attach(self.ctx)
        self._t0 = _perf()
        return self.span

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        took = _perf() - self._t0
        try:
            if exc is None:
                self.bound._process_duration.record(took, self.bound._op_attrs["process"])
            else:
                kind = _fail(self.span, exc)
                self.bound._process_duration.record(took, self.bound._with_error(self.bound._op_attrs["process"], kind))
        finally:
            _context.detach(self._token)

    def _settle_span(self, op: str) -> Any:
        attrs = dict(self.bound.base)
        attrs["messaging.operation.type"] = "settle"
        attrs["messaging.operation.name"] = op
        return self.bound._tracer.start_span(self.bound._names[op], context=self.ctx, kind=SpanKind.CLIENT,
                                             attributes=attrs)

    def settle(self, op: str, fn: Callable[..., Any], *args: Any) -> None:
        span = self._settle_span(op)
        try:
            fn(*args)
        except BaseException as e:
            _fail(span, e)
            raise
        finally:
            span.end()

    async def settle_async(self, op: str, fn: Callable[..., Any], *args: Any) -> None:
        span = self._settle_span(op)
        try:
            await fn(*args)
        except BaseException as e:
            _fail(span, e)
            raise
        finally:
            span.end()

    def end(self) -> None:
        self.span.end()
