"""libmongoc's log by default: into the "mongomq" logger, installed by the first
Client (not at import), quiet (warnings and above unless the program asks for more),
and the ways a program keeps its own (MONGOMQ_LIBMONGOC_LOG=keep, or a
set_log_handler call before the first Client). Child processes: the log is
process-wide and this process decided its own long ago."""

from __future__ import annotations

import json

from conftest import run_python

_CHILD = r"""
import json, logging, os, sys, threading, time
import mongomq

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record)
logging.getLogger("mongomq").addHandler(Keep(level=logging.DEBUG))
if os.environ.get("ASK_DEBUG"):
    logging.getLogger("mongomq").setLevel(logging.DEBUG)
explicit = []
if os.environ.get("EXPLICIT") == "none":
    mongomq.set_log_handler(None)
elif os.environ.get("EXPLICIT") == "mine":
    mongomq.set_log_handler(lambda level, domain, message: explicit.append((level, domain, message)))

out = {"log_thread_before": any(t.name == "mongomq-log" for t in threading.enumerate())}
with mongomq.Client("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&mongomqNoSuchOption=1") as c:
    try:
        c.queue("mqt_py_log", "mq")  # the monitor's debug lines: the server is down
    except mongomq.ConnectError:
        pass
deadline = time.monotonic() + 10
wanted = os.environ.get("EXPECT_RECORD") == "1"
while wanted and time.monotonic() < deadline and not any(
        "mongomqnosuchoption" in r.getMessage().lower() for r in records):
    time.sleep(0.01)
time.sleep(0.5)
hits = [r for r in records if "mongomqnosuchoption" in r.getMessage().lower()]
out["records"] = [(r.name, r.levelname, r.threadName, r.mongoc_domain, r.getMessage()) for r in hits]
out["below_warning"] = sorted({r.levelname for r in records if r.levelno < logging.WARNING})
out["explicit"] = [e for e in explicit if "mongomqnosuchoption" in e[2].lower()][:1]
print(json.dumps(out), flush=True)
"""


def _run(env=None):
    p = run_python(_CHILD, env_extra=env or {})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1]), err


def test_default_log_into_logging():
    """With nothing set, a libmongoc warning reaches logging.getLogger("mongomq") at
    WARNING, from the package's log thread, started by the first Client (not by the
    import); debug lines do not (logging's default level)."""
    result, err = _run({"EXPECT_RECORD": "1"})
    assert result["log_thread_before"] is False
    assert len(result["records"]) == 1, result
    name, level, thread, domain, message = result["records"][0]
    assert (name, level, thread, domain) == ("mongomq", "WARNING", "mongomq-log", "mongoc")
    assert message.startswith("mongoc: ") and "mongomqnosuchoption" in message.lower()
    assert result["below_warning"] == []


def test_default_log_debug_when_asked():
    """A program that sets the "mongomq" logger to DEBUG gets libmongoc's debug lines
    (the monitor's, with the server down) at DEBUG."""
    result, _ = _run({"EXPECT_RECORD": "1", "ASK_DEBUG": "1"})
    assert len(result["records"]) == 1
    assert "DEBUG" in result["below_warning"], result


def test_keep_libmongoc_log_env():
    """MONGOMQ_LIBMONGOC_LOG=keep: the package installs nothing; libmongoc's own
    handler prints its warning to stderr, and the logger gets nothing."""
    result, err = _run({"MONGOMQ_LIBMONGOC_LOG": "keep"})
    assert result["records"] == [] and result["below_warning"] == []
    assert "mongomqnosuchoption" in err.lower()


def test_explicit_handler_before_first_client():
    """A set_log_handler call before the first Client is what the program keeps: None
    silences libmongoc; a function of its own gets the lines (and the logger does not)."""
    silent, err = _run({"EXPLICIT": "none"})
    assert silent["records"] == [] and silent["explicit"] == []
    assert "mongomqnosuchoption" not in err.lower()
    mine, _ = _run({"EXPLICIT": "mine"})
    assert mine["records"] == []
    assert len(mine["explicit"]) == 1 and mine["explicit"][0][:2] == [2, "mongoc"]


_EXIT_AT_ONCE = r"""
import mongomq
with mongomq.Client("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300&mongomqNoSuchOption=1") as c:
    try:
        c.queue("mqt_py_log", "mq")
    except mongomq.ConnectError:
        pass
"""


def test_default_log_unconfigured_and_flushed_at_exit():
    """A program that configured no logging sees libmongoc's warning on stderr
    (logging's last resort, as for any library's warning) and not its debug lines;
    and it sees it even when it ends right after libmongoc logged (the log thread is a
    daemon: what it had not delivered is delivered at exit)."""
    for _ in range(3):
        p = run_python(_EXIT_AT_ONCE)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "mongomqnosuchoption" in err.lower(), err
        assert "command or network error" not in err, err
