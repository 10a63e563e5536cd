"""Fixtures: the server named by MONGOMQ_TEST_URI, a fresh database per test (its
queue dropped at the end), and for the tracing tests an OpenTelemetry SDK of their
own (imported only by the tests that ask for it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from types import SimpleNamespace
from typing import Iterator

import pytest

import mongomq


def _uri() -> str:
    uri = os.environ.get("MONGOMQ_TEST_URI", "")
    if not uri:
        # Not a skip: a suite that runs nothing must not pass.
        raise pytest.UsageError("MONGOMQ_TEST_URI is not set (start a server: scripts/test-server.sh start)")
    return uri


@pytest.fixture(scope="session")
def uri() -> str:
    return _uri()


def fresh_db() -> str:
    return "mqt_py_" + uuid.uuid4().hex[:12]


@pytest.fixture
def client(uri: str) -> Iterator[mongomq.Client]:
    with mongomq.Client(uri) as c:
        yield c


@pytest.fixture
def db() -> str:
    return fresh_db()


@pytest.fixture
def queue(client: mongomq.Client, db: str) -> Iterator[mongomq.Queue]:
    q = client.queue(db, "mq")
    yield q
    if not q.closed:
        q.drop()
        q.close()
    else:
        with client.queue(db, "mq") as again:
            again.drop()


@pytest.fixture
def otel() -> Iterator[SimpleNamespace]:
    """A mongomq.otel.Telemetry of an SDK tracer provider with an in-memory span exporter
    (a simple, synchronous processor), an SDK meter provider with an in-memory reader,
    and the W3C propagator, all passed explicitly: the global ones stay unset."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from mongomq.otel import Telemetry

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    tel = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider,
                    propagator=TraceContextTextMapPropagator())
    yield SimpleNamespace(exporter=exporter, reader=reader, tel=tel, tracer=tracer_provider.get_tracer("test"))
    tracer_provider.shutdown()
    meter_provider.shutdown()


def run_python(code: str, *, timeout: float = 60, env_extra: dict | None = None,
               stdin: int | None = None) -> subprocess.Popen:
    """Starts `code` in a child interpreter (same package, same server URI)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def pytest_report_header(config) -> str:
    return "mongomq %s from %s, libmongomq %s, server %s" % (
        mongomq.__version__, os.path.dirname(mongomq.__file__), mongomq.library_version(),
        os.environ.get("MONGOMQ_TEST_URI", "(MONGOMQ_TEST_URI unset)"))
