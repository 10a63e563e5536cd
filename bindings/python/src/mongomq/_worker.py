"""The worker helper (bindings/CONTRACT.md, "The worker helper"): a handler run on
leases by N threads, ack on success, nack with back-off on failure, a heartbeat that
extends running leases, a stop when idle, SIGINT/SIGTERM when asked, a two-phase
graceful shutdown, and, on a queue with telemetry, each handler run traced (a process
span, its ack or nack under it; mongomq.otel). Queue.worker() starts one and returns
it; Queue.work() runs one and blocks until it stops."""

from __future__ import annotations

import atexit
import logging
import math
import random
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import _args, _raw
from ._cancel import CancelToken
from ._errors import Cancelled, ClosedError, Error, Interrupted, LeaseLost
from ._lease import Lease
from ._queue import Queue
from ._signals import SignalGuard
from ._signals import name as _signal_name

log = logging.getLogger("mongomq")

Handler = Callable[[Lease], Any]
ErrorCallback = Callable[[BaseException, Optional[Lease]], Any]

# Claims wait in slices of at most this long (the contract's 1 s), never poll.
_CLAIM_SLICE = 1.0
_QUEUE_BACKOFF_FIRST = 0.1
_QUEUE_BACKOFF_CAP = 5.0

_live: "weakref.WeakSet[Worker]" = weakref.WeakSet()


@atexit.register
def _stop_all_at_exit() -> None:
    # Worker threads are daemons (a forgotten worker never holds the interpreter's
    # exit up: Python joins non-daemon threads before atexit runs); at exit they are
    # stopped gracefully here, before Python finalizes.
    for w in list(_live):
        try:
            w.stop()
        except Exception:
            pass


def backoff_delay(attempts: int, base: float, cap: float, rng: Callable[[float, float], float] = random.uniform) -> float:
    """The nack delay after a failure: min(cap, base * 2^(attempts - 1)) scaled by a
    jitter factor drawn uniformly from [0.5, 1.0] ("equal jitter")."""
    exp = max(0, attempts - 1)
    raw = cap if exp >= 64 else min(cap, base * (2.0 ** exp))
    return raw * rng(0.5, 1.0)


def _positive(name: str, value: Any, *, zero_ok: bool) -> float:
    v = _args.seconds(name, value)
    if math.isnan(v) or math.isinf(v) or v < 0 or (v == 0 and not zero_ok):
        raise ValueError("%s is %r; it must be finite and %s" % (name, v, ">= 0" if zero_ok else "> 0"))
    return v


def _check_options(concurrency: Any, visibility: Any, min_priority: Any, max_events: Any, backoff_base: Any,
                   backoff_cap: Any, max_attempts: Any, shutdown_timeout: Any, worker_id: Any, idle_timeout: Any,
                   handle_signals: Any, on_error: Any, partitions: Any) -> Dict[str, Any]:
    """The worker's options checked and made floats where they are durations (and
    partitions a tuple, whose numbers check_worker_partitions checks against the
    queue): the sync Worker's and mongomq.aio's AsyncWorker's (the same options, the
    same errors)."""
    _args.integer("concurrency", concurrency)
    if concurrency < 1:
        raise ValueError("concurrency is %d; it must be at least 1" % concurrency)
    visibility = _positive("visibility", visibility, zero_ok=False)
    _args.integer("min_priority", min_priority)
    _args.integer("max_events", max_events)
    if not 1 <= max_events <= _raw.MQ_BATCH_MAX:
        raise ValueError("max_events is %d; it must be 1..%d" % (max_events, _raw.MQ_BATCH_MAX))
    backoff_base = _positive("backoff_base", backoff_base, zero_ok=True)
    backoff_cap = _positive("backoff_cap", backoff_cap, zero_ok=True)
    _args.integer("max_attempts", max_attempts)
    if max_attempts < 0:
        raise ValueError("max_attempts is %d; it must be >= 0" % max_attempts)
    shutdown_timeout = _positive("shutdown_timeout", shutdown_timeout, zero_ok=True)
    if worker_id is not None:
        _args.worker_id(worker_id)
    if idle_timeout is not None:
        idle_timeout = _positive("idle_timeout", idle_timeout, zero_ok=False)
    if not isinstance(handle_signals, bool):
        raise TypeError("handle_signals must be a bool, not %s" % type(handle_signals).__name__)
    if on_error is not None and not callable(on_error):
        raise TypeError("on_error must be callable")
    parts, _ = _args.claim_partitions(partitions)
    return dict(concurrency=concurrency, visibility=visibility, min_priority=min_priority, max_events=max_events,
                backoff_base=backoff_base, backoff_cap=backoff_cap, max_attempts=max_attempts,
                shutdown_timeout=shutdown_timeout, worker_id=worker_id, idle_timeout=idle_timeout,
                handle_signals=handle_signals, on_error=on_error, partitions=parts)


def check_worker_partitions(parts: Tuple[int, ...], queue: Queue) -> None:
    """A worker's partitions against its queue's, when the worker is made: its claims
    run on threads (or tasks) of their own, where a bad list would be reported claim
    after claim, never raised."""
    if parts:
        _args.check_partitions_of(parts, queue.partitions)


class _Untraced:
    """The workers' process object (this module's and mongomq.aio's) when the queue
    has no telemetry: no span, the settle call made as it is."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None

    def settle(self, op: str, call: Any, *args: Any) -> Any:
        return call(*args)

    async def settle_async(self, op: str, call: Any, *args: Any) -> Any:
        return await call(*args)

    def end(self) -> None:
        return None


_UNTRACED = _Untraced()


class Worker:
    """Runs ``handler(lease)`` on the queue's leases with ``concurrency`` threads.
    Made by Queue.worker() (started, returned at once) and Queue.work() (blocks).

    - handler returns: the lease is acked. It raises: nacked with delay
      backoff_delay(lease.attempts, backoff_base, backoff_cap).
    - while it runs, the lease is extended by ``visibility`` every visibility / 3; an
      extend that reports LeaseLost stops that heartbeat (the handler goes on).
    - max_attempts > 0 is set on the queue: a head delivered that often goes to the
      dead letters on its next claim.
    - idle_timeout (seconds; None: never): the worker stops by itself once no lease
      was claimed, and no handler ran, for that long.
    - handle_signals=True (main thread only): SIGINT and SIGTERM stop it gracefully
      (work() then returns); a second one while it stops goes to the handler that
      was there before (Ctrl-C: KeyboardInterrupt). The previous handlers are put back
      when it ends.
    - partitions (0.8.0; None or empty: every partition): claim only from these
      partitions of the queue (distinct numbers in 0..queue.partitions - 1; checked
      here, an ArgumentError naming partitions[i]).
    - errors of the queue (connect, server) are reported to on_error and retried
      after 100 ms doubling to 5 s; they never end the worker. An interrupted or
      closed queue ends it.
    - stop(): 1. no new claims (waiting claims are cancelled at once; a lease a claim
      took as the stop came, before its handler started, is given back with unclaim:
      no delivery is counted that no handler saw); 2. waits up to shutdown_timeout for
      running handlers to finish and ack/nack; handlers still running then are
      abandoned (their leases expire and are redelivered).

    on_error(exc, lease_or_None) receives every handler exception, lease-lost or
    failed acks/nacks/unclaims/extends and queue errors. Without one, each goes to
    the "mongomq" logger with its traceback (handler failures at ERROR, the others
    at WARNING): nothing is swallowed.
    """

    def __init__(self, queue: Queue, handler: Handler, *, concurrency: int = 1,
                 visibility: _args.Duration = 30.0, min_priority: int = 0, max_events: int = 1,
                 backoff_base: _args.Duration = 1.0, backoff_cap: _args.Duration = 60.0, max_attempts: int = 0,
                 shutdown_timeout: _args.Duration = 30.0, worker_id: Optional[str] = None,
                 idle_timeout: Optional[_args.Duration] = None, handle_signals: bool = False,
                 on_error: Optional[ErrorCallback] = None, partitions: Optional[_args.Partitions] = None) -> None:
        if not callable(handler):
            raise TypeError("handler must be callable")
        o = _check_options(concurrency, visibility, min_priority, max_events, backoff_base, backoff_cap,
                           max_attempts, shutdown_timeout, worker_id, idle_timeout, handle_signals, on_error,
                           partitions)

        self.queue = queue
        self.handler = handler
        self.concurrency: int = o["concurrency"]
        self.visibility: float = o["visibility"]
        self.min_priority: int = o["min_priority"]
        self.max_events: int = o["max_events"]
        self.backoff_base: float = o["backoff_base"]
        self.backoff_cap: float = o["backoff_cap"]
        self.max_attempts: int = o["max_attempts"]
        self.shutdown_timeout: float = o["shutdown_timeout"]
        self.worker_id: Optional[str] = o["worker_id"]
        self.idle_timeout: Optional[float] = o["idle_timeout"]
        self.handle_signals: bool = o["handle_signals"]
        self.on_error: Optional[ErrorCallback] = o["on_error"]
        self.partitions: Tuple[int, ...] = o["partitions"]

        self._stopping = threading.Event()
        self._done = threading.Event()
        self._cancel = CancelToken()
        self._threads: List[threading.Thread] = []
        self._alive = 0
        self._lock = threading.Lock()
        self._started = False
        self._handling = 0  # leases claimed and not yet acked/nacked
        self._last_active = time.monotonic()
        self._signals: Optional[SignalGuard] = None
        self._launch = "pending"  # the launcher's state: pending, running, abandoned
        # heartbeat: lease -> next extend (monotonic); leases being extended now
        self._hb_cond = threading.Condition()
        self._hb_due: Dict[Lease, float] = {}
        self._hb_busy: Set[Lease] = set()
        self._hb_thread: Optional[threading.Thread] = None
        self._hb_stop = False

        queue._check_open()
        check_worker_partitions(self.partitions, queue)
        if self.max_attempts > 0:
            queue.set_max_attempts(self.max_attempts)

    # ---- life cycle ----

    def _start(self) -> "Worker":
        # The threads are started by a thread of their own ("mongomq-worker-start"):
        # on the main thread a signal handler (Ctrl-C's KeyboardInterrupt) may raise in
        # the middle of Thread.start(), after the thread was launched, and the count of
        # running threads would then be wrong. The launcher holds one count until it
        # started them all, so that a thread that ends at once cannot look like the last.
        with self._lock:
            if self._started:
                raise RuntimeError("the worker was started already")
            self._started = True
            self._alive = 1
            self._launch = "pending"
            self._last_active = time.monotonic()
        try:
            if self.handle_signals:
                self._signals = SignalGuard(self._on_signal)  # before any thread: it may refuse
            _live.add(self)
            threading.Thread(target=self._launch_threads, name="mongomq-worker-start", daemon=True).start()
        except BaseException:
            with self._lock:
                abandoned = self._launch == "pending"
                if abandoned:
                    self._launch = "abandoned"  # a launcher that comes late does nothing
            if abandoned:
                self._thread_ended()
            raise
        return self

    def _launch_threads(self) -> None:
        with self._lock:
            if self._launch != "pending":
                return
            self._launch = "running"
        try:
            self._hb_thread = threading.Thread(target=self._heartbeat, name="mongomq-heartbeat", daemon=True)
            self._hb_thread.start()
            for i in range(self.concurrency):
                if self._stopping.is_set():
                    break
                t = threading.Thread(target=self._run, name="mongomq-worker-%d" % i, daemon=True)
                with self._lock:
                    self._alive += 1
                try:
                    t.start()  # not the main thread: only a failure to start raises here
                except BaseException as e:
                    with self._lock:
                        self._alive -= 1
                    self._report(e, None, "starting a worker thread")
                    break
                self._threads.append(t)
        finally:
            self._thread_ended()

    def stop(self, timeout: Optional[_args.Duration] = None) -> bool:
        """Graceful shutdown: stop claiming, wait up to timeout (default
        shutdown_timeout) for running handlers. True when every thread finished."""
        limit = self.shutdown_timeout if timeout is None else _positive("timeout", timeout, zero_ok=True)
        self._request_stop()
        finished = self.wait(limit)
        self._end_heartbeat()
        _live.discard(self)
        self._restore_signals()
        return finished

    def wait(self, timeout: Optional[_args.Duration] = None) -> bool:
        """Waits until every worker thread ended (after stop(), a signal with
        handle_signals, idle_timeout, or on its own when the queue was interrupted or
        closed). True if they did within timeout (None: no limit)."""
        if not self._started:
            return True
        limit = None if timeout is None else _args.seconds("timeout", timeout)
        # In slices, so that Ctrl-C reaches a main thread waiting here.
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if left <= 0:
                done = self._done.is_set()
                break
            if self._done.wait(left):
                done = True
                break
        if done:
            self._restore_signals()
        return done

    @property
    def running(self) -> bool:
        return self._started and not self._done.is_set()

    @property
    def _stop_requested(self) -> bool:
        return self._stopping.is_set()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else ("stopped" if self._started else "new")
        return "<mongomq.Worker %s on %r, concurrency %d>" % (state, self.queue, self.concurrency)

    def _request_stop(self) -> None:
        self._stopping.set()
        self._cancel.cancel()

    def _abandon(self) -> None:
        """Stops claiming and waits for nothing (a second Ctrl-C during a stop)."""
        self._request_stop()
        self._end_heartbeat()
        _live.discard(self)
        self._restore_signals()

    def _restore_signals(self) -> None:
        if self._signals is not None and self._signals.restore():
            self._signals = None

    def _on_signal(self, signum: int) -> bool:
        if self._done.is_set() or self._stopping.is_set():
            return False  # over, or a second signal: the previous handler's turn
        log.info("mongomq worker: %s: stopping (running handlers get up to %g s)",
                 _signal_name(signum), self.shutdown_timeout)
        self._request_stop()
        return True

    # ---- the worker threads ----

    def _report(self, exc: BaseException, lease: Optional[Lease], what: str) -> None:
        if self.on_error is not None:
            try:
                self.on_error(exc, lease)
                return
            except Exception:
                log.exception("mongomq worker: on_error raised (the error it was given follows)")
        if lease is None:
            log.warning("mongomq worker: %s failed: %s", what, exc, exc_info=exc)
        elif what == "handler":
            log.error("mongomq worker: the handler failed on group %r seq %d (attempt %d): %r",
                      lease._group, lease._seq, lease._attempts, exc, exc_info=exc)
        else:
            log.warning("mongomq worker: %s of group %r seq %d: %r", what, lease._group, lease._seq, exc,
                        exc_info=exc)

    def _claim_wait(self) -> float:
        if self.idle_timeout is None:
            return _CLAIM_SLICE
        left = self._last_active + self.idle_timeout - time.monotonic()
        return min(_CLAIM_SLICE, max(0.01, left))

    def _stop_if_idle(self) -> None:
        """After an empty claim: the stop of idle_timeout, by the first thread to see it."""
        with self._lock:
            if self._handling or self._stopping.is_set():
                return
            if time.monotonic() - self._last_active < self.idle_timeout:  # type: ignore[operator]
                return
            self._stopping.set()
        log.info("mongomq worker: no lease for %g s (idle_timeout): stopping", self.idle_timeout)
        self._request_stop()

    def _run(self) -> None:
        try:
            backoff = _QUEUE_BACKOFF_FIRST
            while not self._stopping.is_set():
                try:
                    lease = self.queue.claim(visibility=self.visibility, min_priority=self.min_priority,
                                             max_events=self.max_events, wait=self._claim_wait(),
                                             worker_id=self.worker_id, cancel=self._cancel,
                                             partitions=self.partitions)
                except Cancelled:
                    break
                except (Interrupted, ClosedError):
                    break  # the queue is shut for good
                except Error as e:
                    self._report(e, None, "a claim (tried again after a back-off)")
                    if self._stopping.wait(backoff):
                        break
                    backoff = min(backoff * 2, _QUEUE_BACKOFF_CAP)
                    continue
                backoff = _QUEUE_BACKOFF_FIRST
                if lease is None:
                    if self.idle_timeout is not None:
                        self._stop_if_idle()
                    continue
                with self._lock:
                    self._handling += 1
                    self._last_active = time.monotonic()
                try:
                    if self._stopping.is_set():
                        # The stop came while the claim was taking this lease: no handler
                        # ran, so it goes back without counting a delivery.
                        self._give_back(lease)
                        break
                    tel = self.queue._telemetry
                    if tel is not None:  # a delivery: the handler gets it
                        tel.consumed(len(lease._events))
                    self._handle(lease)
                finally:
                    with self._lock:
                        self._handling -= 1
                        self._last_active = time.monotonic()
        finally:
            self._thread_ended()

    def _thread_ended(self) -> None:
        with self._lock:
            self._alive -= 1
            last = self._alive == 0
        if last:
            self._end_heartbeat()
            self._done.set()

    def _give_back(self, lease: Lease) -> None:
        try:
            self.queue.unclaim(lease)
        except Error as e:
            self._report(e, lease, "unclaim")
        finally:
            lease.close()

    def _handle(self, lease: Lease) -> None:
        """Runs the handler on the lease, then acks or nacks it. With telemetry the
        handler runs with the process span current (``with proc``: it records a
        failure), the ack or nack is a settle span under it, and the process span ends
        after that; without, ``proc`` does nothing but call."""
        proc: Any = _UNTRACED
        tel = self.queue._telemetry
        if tel is not None:
            try:
                proc = tel.process(lease)
            except Exception as e:  # a propagator's or SDK's fault: handled all the same, untraced
                self._report(e, lease, "starting the process span")
        try:
            self._hb_add(lease)
            failure: Optional[BaseException] = None
            try:
                with proc:
                    self.handler(lease)
            except BaseException as e:  # noqa: B902 - a failure of any kind nacks
                failure = e
            finally:
                self._hb_remove(lease)
            what = "ack" if failure is None else "nack"
            try:
                if failure is None:
                    proc.settle("ack", self.queue.ack, lease)
                else:
                    self._report(failure, lease, "handler")
                    proc.settle("nack", self.queue.nack, lease,
                                backoff_delay(lease._attempts, self.backoff_base, self.backoff_cap))
            except Error as e:
                self._report(e, lease, what)
            finally:
                lease.close()
        finally:
            proc.end()
        if failure is not None and not isinstance(failure, Exception):
            raise failure  # SystemExit and the like end this thread, after the nack

    # ---- heartbeat ----

    def _end_heartbeat(self) -> None:
        with self._hb_cond:
            self._hb_stop = True
            self._hb_cond.notify_all()

    def _hb_add(self, lease: Lease) -> None:
        with self._hb_cond:
            self._hb_due[lease] = time.monotonic() + self.visibility / 3.0
            self._hb_cond.notify_all()

    def _hb_remove(self, lease: Lease) -> None:
        with self._hb_cond:
            self._hb_due.pop(lease, None)
            while lease in self._hb_busy:  # an extend in flight ends before the ack
                self._hb_cond.wait()

    def _heartbeat(self) -> None:
        every = self.visibility / 3.0
        while True:
            with self._hb_cond:
                while True:
                    if self._hb_stop:
                        return
                    now = time.monotonic()
                    due = [lease for lease, t in self._hb_due.items() if t <= now]
                    if due:
                        for lease in due:
                            self._hb_due[lease] = now + every
                            self._hb_busy.add(lease)
                        break
                    nxt = min(self._hb_due.values(), default=now + 1.0)
                    self._hb_cond.wait(max(0.001, nxt - now))
            for lease in due:
                try:
                    self.queue.extend(lease, self.visibility)
                except Error as e:
                    if isinstance(e, LeaseLost):
                        with self._hb_cond:
                            self._hb_due.pop(lease, None)
                    self._report(e, lease, "extend")
                finally:
                    with self._hb_cond:
                        self._hb_busy.discard(lease)
                        self._hb_cond.notify_all()
