"""Fixtures: the server named by MONGOMQ_TEST_URI, a fresh database per test (its
queue dropped at the end)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
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
