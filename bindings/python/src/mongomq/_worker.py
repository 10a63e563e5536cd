"""The worker helper (bindings/CONTRACT.md, "The worker helper"): a handler run on
leases by N threads, ack on success, nack with back-off on failure, a heartbeat that
extends running leases, and a two-phase graceful shutdown."""

from __future__ import annotations

import atexit
import logging
import random
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Set

from ._errors import Cancelled, ClosedError, Error, Interrupted, LeaseLost
from ._handles import CancelToken, Lease, Queue, _int, _seconds, _worker_id

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
    # exit up); at exit they are stopped gracefully before Python finalizes.
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


class Worker:
    """Runs ``handler(lease)`` on the queue's leases with ``concurrency`` threads.

    - handler returns: the lease is acked. It raises: nacked with delay
      backoff_delay(lease.attempts, backoff_base, backoff_cap).
    - while it runs, the lease is extended by ``visibility`` every visibility / 3; an
      extend that reports LeaseLost stops that heartbeat (the handler goes on).
    - max_attempts > 0 is set on the queue: a head delivered that often goes to the
      dead letters on its next claim.
    - errors of the queue (connect, server) are reported to on_error and retried
      after 100 ms doubling to 5 s; they never end the worker. An interrupted or
      closed queue ends it.
    - stop(): 1. no new claims (waiting claims are cancelled at once; a lease a claim
      took as the stop came, before its handler started, is given back with unclaim:
      no delivery is counted that no handler saw); 2. waits up to shutdown_timeout for
      running handlers to finish and ack/nack; handlers still running then are
      abandoned (their leases expire and are redelivered).

    on_error(exc, lease_or_None) receives handler exceptions, lease-lost acks/nacks/
    unclaims/extends and queue errors; by default they go to the "mongomq" logger.
    """

    def __init__(self, queue: Queue, handler: Handler, *, concurrency: int = 1, visibility: float = 30.0,
                 min_priority: int = 0, batch: int = 1, backoff_base: float = 1.0, backoff_cap: float = 60.0,
                 max_attempts: int = 0, shutdown_timeout: float = 30.0, worker_id: Optional[str] = None,
                 on_error: Optional[ErrorCallback] = None) -> None:
        if not callable(handler):
            raise TypeError("handler must be callable")
        _int("concurrency", concurrency)
        if concurrency < 1:
            raise ValueError("concurrency is %d; it must be at least 1" % concurrency)
        visibility = _seconds("visibility", visibility)
        if not visibility > 0 or visibility == float("inf"):
            raise ValueError("visibility is %r; it must be finite and > 0" % visibility)
        _int("min_priority", min_priority)
        _int("batch", batch)
        if batch < 1:
            raise ValueError("batch is %d; it must be at least 1" % batch)
        backoff_base = _seconds("backoff_base", backoff_base)
        backoff_cap = _seconds("backoff_cap", backoff_cap)
        if not (backoff_base >= 0 and backoff_cap >= 0):
            raise ValueError("backoff_base and backoff_cap must be >= 0")
        _int("max_attempts", max_attempts)
        if max_attempts < 0:
            raise ValueError("max_attempts is %d; it must be >= 0" % max_attempts)
        shutdown_timeout = _seconds("shutdown_timeout", shutdown_timeout)
        if not shutdown_timeout >= 0:
            raise ValueError("shutdown_timeout must be >= 0")
        if worker_id is not None:
            _worker_id(worker_id)
        if on_error is not None and not callable(on_error):
            raise TypeError("on_error must be callable")

        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.visibility = visibility
        self.min_priority = min_priority
        self.batch = batch
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_attempts = max_attempts
        self.shutdown_timeout = shutdown_timeout
        self.worker_id = worker_id
        self.on_error = on_error

        self._stopping = threading.Event()
        self._done = threading.Event()
        self._cancel = CancelToken()
        self._threads: List[threading.Thread] = []
        self._alive = 0
        self._lock = threading.Lock()
        self._started = False
        # heartbeat: lease -> next extend (monotonic); leases being extended now
        self._hb_cond = threading.Condition()
        self._hb_due: Dict[Lease, float] = {}
        self._hb_busy: Set[Lease] = set()
        self._hb_thread: Optional[threading.Thread] = None
        self._hb_stop = False

        queue._check_open()
        if max_attempts > 0:
            queue.set_max_attempts(max_attempts)

    # ---- life cycle ----

    def start(self) -> "Worker":
        with self._lock:
            if self._started:
                raise RuntimeError("the worker was started already")
            self._started = True
            self._alive = self.concurrency
        _live.add(self)
        self._hb_thread = threading.Thread(target=self._heartbeat, name="mongomq-heartbeat", daemon=True)
        self._hb_thread.start()
        for i in range(self.concurrency):
            t = threading.Thread(target=self._run, name="mongomq-worker-%d" % i, daemon=True)
            self._threads.append(t)
            t.start()
        return self

    def stop(self, timeout: Optional[float] = None) -> bool:
        """Graceful shutdown: stop claiming, wait up to timeout (default
        shutdown_timeout) for running handlers. True when every thread finished."""
        if timeout is None:
            timeout = self.shutdown_timeout
        self._stopping.set()
        self._cancel.cancel()
        finished = self.wait(timeout)
        with self._hb_cond:
            self._hb_stop = True
            self._hb_cond.notify_all()
        _live.discard(self)
        return finished

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until every worker thread ended (after stop(), or on its own when the
        queue was interrupted or closed). True if they did within timeout."""
        if not self._started:
            return True
        # In slices, so that Ctrl-C reaches a main thread waiting here.
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if left <= 0:
                return self._done.is_set()
            if self._done.wait(left):
                return True

    @property
    def running(self) -> bool:
        return self._started and not self._done.is_set()

    def __enter__(self) -> "Worker":
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- the worker threads ----

    def _report(self, exc: BaseException, lease: Optional[Lease]) -> None:
        if self.on_error is not None:
            try:
                self.on_error(exc, lease)
                return
            except Exception:
                log.exception("mongomq: on_error raised")
        if lease is not None:
            log.warning("mongomq worker: group %r seq %s: %r", lease._group, lease._seq, exc)
        else:
            log.warning("mongomq worker: %r", exc)

    def _run(self) -> None:
        try:
            backoff = _QUEUE_BACKOFF_FIRST
            while not self._stopping.is_set():
                try:
                    lease = self.queue.claim(self.visibility, self.min_priority, _CLAIM_SLICE, self.batch,
                                             worker_id=self.worker_id, cancel=self._cancel)
                except Cancelled:
                    break
                except (Interrupted, ClosedError):
                    break  # the queue is shut for good
                except Error as e:
                    self._report(e, None)
                    if self._stopping.wait(backoff):
                        break
                    backoff = min(backoff * 2, _QUEUE_BACKOFF_CAP)
                    continue
                backoff = _QUEUE_BACKOFF_FIRST
                if lease is None:
                    continue
                if self._stopping.is_set():
                    # The stop came while the claim was taking this lease: no handler
                    # ran, so it goes back without counting a delivery.
                    self._give_back(lease)
                    break
                self._handle(lease)
        finally:
            with self._lock:
                self._alive -= 1
                last = self._alive == 0
            if last:
                self._done.set()

    def _give_back(self, lease: Lease) -> None:
        try:
            self.queue.unclaim(lease)
        except Error as e:
            self._report(e, lease)
        finally:
            lease.close()

    def _handle(self, lease: Lease) -> None:
        self._hb_add(lease)
        failure: Optional[BaseException] = None
        try:
            self.handler(lease)
        except BaseException as e:  # noqa: B902 - a failure of any kind nacks
            failure = e
        finally:
            self._hb_remove(lease)
        try:
            if failure is None:
                self.queue.ack(lease)
            else:
                self._report(failure, lease)
                self.queue.nack(lease, backoff_delay(lease._attempts, self.backoff_base, self.backoff_cap))
        except LeaseLost as e:
            self._report(e, lease)
        except Error as e:
            self._report(e, lease)
        finally:
            lease.close()
        if failure is not None and not isinstance(failure, Exception):
            raise failure  # SystemExit and the like end this thread, after the nack

    # ---- heartbeat ----

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
                except LeaseLost as e:
                    with self._hb_cond:
                        self._hb_due.pop(lease, None)
                    self._report(e, lease)
                except Error as e:
                    self._report(e, lease)
                finally:
                    with self._hb_cond:
                        self._hb_busy.discard(lease)
                        self._hb_cond.notify_all()
