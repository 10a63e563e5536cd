"""Fixtures: the server named by MONGOMQ_TEST_URI, a fresh database per test (its
queue dropped at the end), and for the tracing tests an OpenTelemetry SDK of their
own (imported only by the tests that ask for it).

Every contract scenario's queue is opened with PARTITIONS partitions: the integer in
MONGOMQ_TEST_PARTITIONS, default 1 (bindings/CONTRACT.md, "Twice: one partition and
four": scripts/test-python.sh runs the scenarios again with 4). The fixture `queue`
is opened so, and a scenario that opens a queue of its own passes
partitions=PARTITIONS (a child process reads the same variable)."""

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


def _partitions() -> int:
    raw = os.environ.get("MONGOMQ_TEST_PARTITIONS", "") or "1"
    try:
        n = int(raw)
    except ValueError:
        raise pytest.UsageError("MONGOMQ_TEST_PARTITIONS is %r, not an integer" % raw) from None
    if not 1 <= n <= mongomq.PARTITIONS_MAX:
        raise pytest.UsageError("MONGOMQ_TEST_PARTITIONS is %d, outside 1..%d" % (n, mongomq.PARTITIONS_MAX))
    return n


PARTITIONS = _partitions()
"""The partitions of every contract scenario's queue (MONGOMQ_TEST_PARTITIONS, default 1)."""


def same_partition(group: str, name: str) -> str:
    """A group like `name` in `group`'s partition of a queue of PARTITIONS partitions:
    `name` itself with one partition, else the first of name, name + "1", name + "2"...
    that hashes there. For the scenarios whose promise is an order between groups
    (round-robin, a place in line): a partitioned queue keeps it within each partition,
    and a claim starts at the next partition in turn (include/mongomq.h, "Partitioned
    queues")."""
    want = mongomq.group_partition(group, PARTITIONS)
    for i in range(10000):
        candidate = name if i == 0 else "%s%d" % (name, i)
        if candidate != group and mongomq.group_partition(candidate, PARTITIONS) == want:
            return candidate
    raise AssertionError("no group like %r in the partition of %r" % (name, group))


def nth_seq(group: str, n: int) -> int:
    """The seq of the n-th event (n from 1) given out in `group`'s partition of a fresh
    queue of PARTITIONS partitions: (n - 1) * PARTITIONS + partition + 1
    (include/mongomq.h); n with one partition."""
    return (n - 1) * PARTITIONS + mongomq.group_partition(group, PARTITIONS) + 1


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
    q = client.queue(db, "mq", partitions=PARTITIONS)
    yield q
    if not q.closed:
        q.drop()
        q.close()
    else:
        with client.queue(db, "mq", partitions=PARTITIONS) as again:
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


def pytest_addoption(parser) -> None:
    parser.addoption("--scenarios", metavar="FILE", default=None,
                     help="run only the tests named test_<name> for each name in FILE, one a line "
                          "(scripts/contract-scenarios.py names --lang python: the contract's)")


def pytest_collection_modifyitems(config, items) -> None:
    path = config.getoption("--scenarios")
    if path is None:
        return
    with open(path, encoding="utf-8") as f:
        wanted = {"test_" + line.strip() for line in f if line.strip()}
    keep = [item for item in items if getattr(item, "originalname", item.name) in wanted]
    missing = wanted - {getattr(item, "originalname", item.name) for item in keep}
    if missing:  # not a silent pass: contract-scenarios.py check would name them too
        raise pytest.UsageError("--scenarios: no test for %s" % ", ".join(sorted(missing)))
    kept = set(map(id, keep))
    config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
    items[:] = keep


def pytest_report_header(config) -> str:
    return "mongomq %s from %s, libmongomq %s, server %s, %d partition(s) per scenario queue" % (
        mongomq.__version__, os.path.dirname(mongomq.__file__), mongomq.library_version(),
        os.environ.get("MONGOMQ_TEST_URI", "(MONGOMQ_TEST_URI unset)"), PARTITIONS)
