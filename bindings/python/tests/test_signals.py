"""Signals and waiting claims on the main thread, and the worker's handle_signals
(child processes)."""

from __future__ import annotations

import json
import signal
import time

from conftest import run_python

_HANDLER_THAT_DOES_NOT_RAISE = r"""
import json, os, signal, threading, time
import mongomq
got = []
signal.signal(signal.SIGUSR1, lambda n, f: got.append(n))
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    threading.Timer(1.5, lambda: q.publish("g", b"late")).start()
    print("ready", flush=True)
    lease = q.claim(wait=20.0)
    out = {"signals": got, "event": None if lease is None else lease.event.decode()}
    q.drop()
print(json.dumps(out), flush=True)
"""


def test_signal_without_exception_keeps_waiting(db):
    """A signal whose Python handler returns runs that handler during the wait, and
    the claim waits on for its event (PEP 475's rule for system calls)."""
    p = run_python(_HANDLER_THAT_DOES_NOT_RAISE, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["signals"] == [signal.SIGUSR1]
    assert result["event"] == "late"


_CTRL_C_UNCAUGHT = r"""
import os
import mongomq
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    print("ready", flush=True)
    q.claim(wait=30.0)
"""


def test_ctrl_c_ends_program(db):
    """An uncaught KeyboardInterrupt in a waiting claim ends the program as Ctrl-C
    does anywhere else in Python, promptly and without a crash."""
    p = run_python(_CTRL_C_UNCAUGHT, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    assert time.monotonic() - t0 < 15  # of its 30 s wait (exiting closes the client: a loaded server is slow)
    assert "KeyboardInterrupt" in err
    assert p.returncode == -signal.SIGINT, err  # Python re-raises SIGINT to die of it (3.8+)


_CTRL_C_IN_WORK = r"""
import json, os, threading, time
import mongomq
out = {"handled": []}
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    q.publish("g", b"slow")
    q.publish("g", b"never")
    def handler(lease):
        print("ready", flush=True)
        time.sleep(1.0)
        out["handled"].append(lease.event.decode())
    try:
        q.work(handler, concurrency=2, shutdown_timeout=10)
        out["work"] = "returned"
    except KeyboardInterrupt:
        out["work"] = "KeyboardInterrupt"
    out["messages"] = q.stats().messages
    q.drop()
print(json.dumps(out), flush=True)
"""


def test_ctrl_c_in_work_shuts_down_gracefully(db):
    """Ctrl-C while queue.work() runs: no new claims, the running handler finishes
    and is acked, then KeyboardInterrupt propagates."""
    p = run_python(_CTRL_C_IN_WORK, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"  # the handler runs
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"handled": ["slow"], "work": "KeyboardInterrupt", "messages": 1}


_CLOSE_IN_SIGNAL_HANDLER = r"""
import os, signal
import mongomq
c = mongomq.Client(os.environ["MONGOMQ_TEST_URI"])
q = c.queue(os.environ["DB"], "mq")
signal.signal(signal.SIGUSR1, lambda n, f: q.close())
print("ready", flush=True)
try:
    q.claim(wait=30.0)
    print("returned", flush=True)
except mongomq.ClosedError:
    print("closed", flush=True)
print(q.closed, flush=True)
c.close()
"""


def test_close_in_signal_handler_during_claim(db):
    """A signal handler that closes the queue its main thread waits on: the claim
    ends with ClosedError (no deadlock: close never waits)."""
    p = run_python(_CLOSE_IN_SIGNAL_HANDLER, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=180)
    assert time.monotonic() - t0 < 10
    assert p.returncode == 0, err
    assert out.split() == ["closed", "True"]


_WORK_HANDLES_SIGTERM = r"""
import json, os, signal, threading, time
import mongomq
out = {"handled": []}
def before(signum, frame):
    pass
signal.signal(signal.SIGTERM, before)
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    q.publish("g", b"slow")
    q.publish("g", b"never")
    def handler(lease):
        out["during"] = signal.getsignal(signal.SIGTERM) is not before
        print("ready", flush=True)
        time.sleep(1.0)
        out["handled"].append(lease.text)
    t0 = time.monotonic()
    q.work(handler, concurrency=2, shutdown_timeout=10, handle_signals=True)
    out["work"] = "returned"
    out["restored"] = signal.getsignal(signal.SIGTERM) is before and \
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    out["messages"] = q.stats().messages
    q.drop()
print(json.dumps(out), flush=True)
"""


def test_work_handle_signals_sigterm(db):
    """handle_signals=True: SIGTERM while a handler runs stops work() gracefully (the
    handler finishes and is acked, nothing new is claimed) and work() returns; the
    SIGTERM and SIGINT handlers that were there before are back."""
    p = run_python(_WORK_HANDLES_SIGTERM, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"handled": ["slow"], "during": True, "work": "returned", "restored": True,
                      "messages": 1}, err


_WORKER_HANDLES_SIGINT = r"""
import json, os, signal, threading, time
import mongomq
out = {}
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    w = q.worker(lambda lease: None, handle_signals=True)
    print("ready", flush=True)
    try:
        out["wait"] = w.wait(60)
    except KeyboardInterrupt:
        out["wait"] = "KeyboardInterrupt"
    out["running"] = w.running
    out["restored"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    q.drop()
print(json.dumps(out), flush=True)
"""


def test_worker_handle_signals_sigint(db):
    """worker(handle_signals=True): Ctrl-C stops it (no KeyboardInterrupt); wait()
    returns True and Python's own SIGINT handler is back."""
    p = run_python(_WORKER_HANDLES_SIGINT, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    assert time.monotonic() - t0 < 10
    assert p.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"wait": True, "running": False, "restored": True}, err


_SECOND_CTRL_C = r"""
import json, os, time
import mongomq
out = {}
with mongomq.Client(os.environ["MONGOMQ_TEST_URI"]) as c, c.queue(os.environ["DB"], "mq") as q:
    q.publish("g", b"stuck")
    def handler(lease):
        print("ready", flush=True)
        time.sleep(8)
    t0 = time.monotonic()
    try:
        q.work(handler, shutdown_timeout=30, handle_signals=True)
        out["work"] = "returned"
    except KeyboardInterrupt:
        out["work"] = "KeyboardInterrupt"
    out["elapsed"] = time.monotonic() - t0
    q.drop()
print(json.dumps(out), flush=True)
"""


def test_work_handle_signals_second_ctrl_c(db):
    """A second Ctrl-C while the graceful stop waits for a handler goes to Python's
    handler: KeyboardInterrupt, at once, without waiting for shutdown_timeout."""
    p = run_python(_SECOND_CTRL_C, env_extra={"DB": db})
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGINT)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["work"] == "KeyboardInterrupt", err
    assert result["elapsed"] < 5, result


def test_handle_signals_needs_the_main_thread(queue):
    import threading

    import mongomq

    box = {}

    def start():
        try:
            box["w"] = queue.worker(lambda lease: None, handle_signals=True)
        except ValueError as e:
            box["error"] = e

    t = threading.Thread(target=start)
    t.start()
    t.join(10)
    assert "main thread" in str(box.get("error")), box
    assert isinstance(box["error"], ValueError) and not isinstance(box["error"], mongomq.Error)
