"""The async worker (mongomq.aio, bindings/CONTRACT.md "The worker helper"): an
``async def handler(lease)`` run on leases by N tasks on the running loop, with the
sync Worker's options and behaviour: ack on success, nack with back-off and jitter
on failure, a heartbeat that extends running leases, a stop when idle, SIGINT and
SIGTERM through loop.add_signal_handler when asked, the two-phase graceful stop
(a lease claimed as the stop came goes back with unclaim), and, on a queue with
telemetry, each handler run traced as the sync worker's are (mongomq.otel; the span
is current in the handler's task through contextvars, across its awaits)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple

from . import _aio_calls, _args
from ._cancel import CancelToken
from ._errors import Cancelled, ClosedError, Error, Interrupted, LeaseLost
from ._lease import Lease
from ._signals import SIGNALS
from ._signals import name as _signal_name
from ._worker import (_CLAIM_SLICE, _QUEUE_BACKOFF_CAP, _QUEUE_BACKOFF_FIRST, _UNTRACED, _check_options, _positive,
                      backoff_delay, check_worker_partitions)

if TYPE_CHECKING:
    from ._aio_queue import AsyncQueue

log = logging.getLogger("mongomq")

AsyncHandler = Callable[[Lease], Awaitable[Any]]
AsyncErrorCallback = Callable[[BaseException, Optional[Lease]], Any]  # may return an awaitable


class AsyncWorker:
    """Runs ``await handler(lease)`` on the queue's leases with ``concurrency`` tasks on
    the loop that started it (AsyncQueue.worker() starts one and returns it;
    AsyncQueue.work() runs one until it stops). The options are mongomq.Worker's,
    with the same defaults and meaning:

    - the handler returns: ack. It raises: nack with delay backoff_delay(attempts,
      backoff_base, backoff_cap) (equal jitter).
    - while it runs, the lease is extended by visibility every visibility / 3 (a task
      per lease); an extend that reports LeaseLost ends that heartbeat.
    - max_attempts > 0 is set on the queue; idle_timeout: the worker stops by itself
      once no lease was claimed and no handler ran for that long.
    - partitions (0.8.0; None or empty: every partition): claim only from these
      partitions of the queue, checked when the worker is made.
    - handle_signals=True (the main thread's loop): SIGINT and SIGTERM stop it
      gracefully, through loop.add_signal_handler; a second one while it stops goes
      to the handling that was there before, which is put back when it ends.
    - queue errors (connect, server) go to on_error and are retried after 100 ms
      doubling to 5 s; an interrupted or closed queue ends the worker.
    - ``await stop()``: 1. no new claims (waiting claims are cancelled through their
      mq_cancel; a lease claimed as the stop came, before its handler started, is
      given back with unclaim); 2. waits up to shutdown_timeout for running
      handlers to finish and ack/nack; the tasks of handlers still running then are
      cancelled without an ack or nack (their leases expire and are redelivered).

    on_error(exc, lease_or_None), a function or an async one, receives every handler
    failure and every failed ack/nack/unclaim/extend and queue error; without one,
    each goes to the "mongomq" logger with its traceback."""

    def __init__(self, queue: "AsyncQueue", handler: AsyncHandler, *, concurrency: int = 1,
                 visibility: _args.Duration = 30.0, min_priority: int = 0, max_events: int = 1,
                 backoff_base: _args.Duration = 1.0, backoff_cap: _args.Duration = 60.0, max_attempts: int = 0,
                 shutdown_timeout: _args.Duration = 30.0, worker_id: Optional[str] = None,
                 idle_timeout: Optional[_args.Duration] = None, handle_signals: bool = False,
                 on_error: Optional[AsyncErrorCallback] = None, partitions: Optional[_args.Partitions] = None) -> None:
        self._started = False
        self._tasks: List["asyncio.Task[None]"] = []
        # Any callable that returns an awaitable (an async def, a lambda or partial of
        # one); one that returns something else fails each lease with a TypeError.
        if not callable(handler):
            raise TypeError("handler must be an async function (async def handler(lease))")
        o = _check_options(concurrency, visibility, min_priority, max_events, backoff_base, backoff_cap,
                           max_attempts, shutdown_timeout, worker_id, idle_timeout, handle_signals, on_error,
                           partitions)
        if o["concurrency"] > queue.client.wait_threads:
            raise ValueError("concurrency is %d; the client has %d wait_threads (each waiting claim needs one)"
                             % (o["concurrency"], queue.client.wait_threads))
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
        self.on_error: Optional[AsyncErrorCallback] = o["on_error"]
        self.partitions: Tuple[int, ...] = o["partitions"]

        # Everything below is the loop thread's: no locks.
        self._tokens: Set[CancelToken] = set()  # the waiting claims' own cancels
        self._stopping = False
        self._stop_event: Optional[asyncio.Event] = None
        self._abandoning = False
        self._handling = 0  # leases claimed and not yet acked/nacked/given back
        self._last_active = time.monotonic()
        self._signals: Optional[_LoopSignals] = None

        if queue.closed:
            raise ClosedError("mongomq: the queue is closed")
        queue.sync._check_open()
        check_worker_partitions(self.partitions, queue.sync)
        if self.max_attempts > 0:
            queue.set_max_attempts(self.max_attempts)

    # ---- life cycle ----

    def _start(self) -> "AsyncWorker":
        if self._started:
            raise RuntimeError("the worker was started already")
        loop = asyncio.get_running_loop()  # RuntimeError outside a running loop
        self._started = True
        self._stop_event = asyncio.Event()
        self._last_active = time.monotonic()
        if self.handle_signals:
            self._signals = _LoopSignals(loop, self._on_signal)  # before any task: it may refuse
        self._tasks = [loop.create_task(self._run()) for _ in range(self.concurrency)]
        return self

    async def stop(self, timeout: Optional[_args.Duration] = None) -> bool:
        """Graceful shutdown: stop claiming, wait up to timeout (default
        shutdown_timeout) for running handlers, then cancel those still running
        (their leases expire: nothing is lost). True when every handler finished."""
        limit = self.shutdown_timeout if timeout is None else _positive("timeout", timeout, zero_ok=True)
        self._request_stop()
        finished = True
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=limit)
            if pending:
                finished = False
                self._abandoning = True
                for t in pending:
                    t.cancel()
                # The cancelled tasks leave at once (a handler that ignores its cancel is
                # its own): a short wait, not another shutdown_timeout.
                await asyncio.wait(pending, timeout=1.0)
        self._restore_signals()
        return finished

    async def wait(self, timeout: Optional[_args.Duration] = None) -> bool:
        """Waits until every task of the worker ended (after stop(), a signal with
        handle_signals, idle_timeout, or the queue interrupted or closed). True if
        they did within timeout (None: no limit). Cancelling the wait leaves the
        worker running."""
        if not self._tasks:
            return True
        limit = None if timeout is None else _args.seconds("timeout", timeout)
        _, pending = await asyncio.wait(self._tasks, timeout=limit)
        if pending:
            return False
        self._restore_signals()
        return True

    @property
    def running(self) -> bool:
        return self._started and not all(t.done() for t in self._tasks)

    async def __aenter__(self) -> "AsyncWorker":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else ("stopped" if self._started else "new")
        return "<mongomq.aio.AsyncWorker %s on %r, concurrency %d>" % (state, self.queue, self.concurrency)

    def _request_stop(self) -> None:
        self._stopping = True
        if self._stop_event is not None:
            self._stop_event.set()
        for token in list(self._tokens):
            token.cancel()

    def _restore_signals(self) -> None:
        if self._signals is not None:
            self._signals.restore()
            self._signals = None

    def _on_signal(self, signum: int) -> bool:
        if self._stopping or not self.running:
            return False  # a second signal, or over: the earlier handling's turn
        log.info("mongomq.aio worker: %s: stopping (running handlers get up to %g s)",
                 _signal_name(signum), self.shutdown_timeout)
        self._request_stop()
        return True

    # ---- the tasks ----

    async def _report(self, exc: BaseException, lease: Optional[Lease], what: str) -> None:
        if self.on_error is not None:
            try:
                result = self.on_error(exc, lease)
                if inspect.isawaitable(result):
                    await result
                return
            except Exception:
                log.exception("mongomq.aio worker: on_error raised (the error it was given follows)")
        if lease is None:
            log.warning("mongomq.aio worker: %s failed: %s", what, exc, exc_info=exc)
        elif what == "handler":
            log.error("mongomq.aio worker: the handler failed on group %r seq %d (attempt %d): %r",
                      lease._group, lease._seq, lease._attempts, exc, exc_info=exc)
        else:
            log.warning("mongomq.aio worker: %s of group %r seq %d: %r", what, lease._group, lease._seq, exc,
                        exc_info=exc)

    def _claim_wait(self) -> float:
        if self.idle_timeout is None:
            return _CLAIM_SLICE
        left = self._last_active + self.idle_timeout - time.monotonic()
        return min(_CLAIM_SLICE, max(0.01, left))

    def _stop_if_idle(self) -> None:
        if self._handling or self._stopping:
            return
        if time.monotonic() - self._last_active < self.idle_timeout:  # type: ignore[operator]
            return
        log.info("mongomq.aio worker: no lease for %g s (idle_timeout): stopping", self.idle_timeout)
        self._request_stop()

    async def _sleep_unless_stopped(self, seconds: float) -> bool:
        """True when the stop came during the sleep."""
        assert self._stop_event is not None
        try:
            await asyncio.wait_for(self._stop_event.wait(), seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def _run(self) -> None:
        q = self.queue
        backoff = _QUEUE_BACKOFF_FIRST
        while not self._stopping:
            token = CancelToken()
            self._tokens.add(token)
            try:
                lease = await _aio_calls.claim(q._pools, q.sync, visibility=self.visibility,
                                               min_priority=self.min_priority, max_events=self.max_events,
                                               wait=self._claim_wait(), worker_id=self.worker_id, token=token,
                                               partitions=self.partitions)
            except Cancelled:
                break
            except (Interrupted, ClosedError):
                break  # the queue is shut for good
            except Error as e:
                await self._report(e, None, "a claim (tried again after a back-off)")
                if await self._sleep_unless_stopped(backoff):
                    break
                backoff = min(backoff * 2, _QUEUE_BACKOFF_CAP)
                continue
            finally:
                self._tokens.discard(token)
            backoff = _QUEUE_BACKOFF_FIRST
            if lease is None:
                if self.idle_timeout is not None:
                    self._stop_if_idle()
                continue
            self._handling += 1
            self._last_active = time.monotonic()
            try:
                if self._stopping:
                    # The stop came while the claim was taking this lease: no handler
                    # ran, so it goes back without counting a delivery.
                    await self._give_back(lease)
                    break
                tel = q.sync._telemetry
                if tel is not None:  # a delivery: the handler gets it
                    tel.consumed(len(lease._events))
                await self._handle(lease)
            finally:
                self._handling -= 1
                self._last_active = time.monotonic()

    async def _give_back(self, lease: Lease) -> None:
        try:
            await self.queue.unclaim(lease)
        except Error as e:
            await self._report(e, lease, "unclaim")
        finally:
            lease.close()

    async def _handle(self, lease: Lease) -> None:
        """Runs the handler on the lease, then acks or nacks it. With telemetry the
        handler runs with the process span current in this task (``with proc``, which
        records a failure; the handler's coroutine runs in the task's context, so the
        span stays current across its awaits), the ack or nack is a settle span under
        it, and the process span ends after that; without, ``proc`` does nothing but
        call."""
        proc: Any = _UNTRACED
        tel = self.queue.sync._telemetry
        if tel is not None:
            try:
                proc = tel.process(lease)
            except Exception as e:  # a propagator's or SDK's fault: handled all the same, untraced
                await self._report(e, lease, "starting the process span")
        try:
            hb_stop = asyncio.Event()
            hb = asyncio.ensure_future(self._heartbeat(lease, hb_stop))
            failure: Optional[BaseException] = None
            try:
                with proc:
                    await self._call_handler(lease)
            except asyncio.CancelledError as e:
                if self._abandoning:
                    # stop()'s second phase ran out: no ack, no nack; the lease expires.
                    hb.cancel()
                    lease.close()
                    raise
                failure = e  # the handler's own cancellation: a failure like any other
            except BaseException as e:  # noqa: B902 - a failure of any kind nacks
                failure = e
            hb_stop.set()
            await _aio_calls.outlast(hb)  # an extend in flight ends before the ack
            what = "ack" if failure is None else "nack"
            try:
                if failure is None:
                    await proc.settle_async("ack", self.queue.ack, lease)
                else:
                    await self._report(failure, lease, "handler")
                    await proc.settle_async("nack", self.queue.nack, lease,
                                            backoff_delay(lease._attempts, self.backoff_base, self.backoff_cap))
            except Error as e:
                await self._report(e, lease, what)
            finally:
                lease.close()
        finally:
            proc.end()
        if failure is not None and not isinstance(failure, (Exception, asyncio.CancelledError)):
            raise failure  # SystemExit and the like go on, after the nack

    async def _call_handler(self, lease: Lease) -> None:
        result = self.handler(lease)
        if not inspect.isawaitable(result):
            raise TypeError("the handler returned %s, not an awaitable: it must be an async function "
                            "(a plain one would block the event loop: mongomq.Worker runs those)"
                            % type(result).__name__)
        await result

    async def _heartbeat(self, lease: Lease, stop: asyncio.Event) -> None:
        every = self.visibility / 3.0
        while True:
            try:
                await asyncio.wait_for(stop.wait(), every)
                return
            except asyncio.TimeoutError:
                pass
            try:
                await self.queue.extend(lease, self.visibility)
            except Error as e:
                await self._report(e, lease, "extend")
                if isinstance(e, (LeaseLost, ClosedError)):
                    return


class _LoopSignals:
    """SIGINT and SIGTERM through loop.add_signal_handler while an AsyncWorker runs;
    ``on_signal(signum)`` returns False when the signal is not the worker's (a second
    one, or it ended), and it then goes to what handled it before. restore() puts
    that back: a callback of the loop's own (loop.add_signal_handler) or a Python
    handler (asyncio.run's Ctrl-C handling, signal.signal)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_signal: Callable[[int], bool]) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("handle_signals=True needs the main thread's event loop (Python runs signal "
                             "handlers there); run the worker there or stop it yourself")
        self._loop = loop
        self._on_signal = on_signal
        self._restored = False
        # Per signal: the Python handler, and the loop's own callback (a Handle) if the
        # loop had one. _signal_handlers is asyncio's Unix loop's table; a loop without
        # it (uvloop) gets its Python handler back only.
        table: Dict[int, Any] = getattr(loop, "_signal_handlers", None) or {}
        self._prev: Dict[int, Tuple[Any, Any]] = {s: (signal.getsignal(s), table.get(s)) for s in SIGNALS}
        self._installed: List[int] = []
        try:
            for s in SIGNALS:
                loop.add_signal_handler(s, self._handle, s)
                self._installed.append(s)
        except NotImplementedError:
            self.restore()
            raise ValueError("handle_signals=True needs loop.add_signal_handler, which this event loop lacks")
        except BaseException:
            self.restore()
            raise

    def _handle(self, signum: int) -> None:
        if self._on_signal(signum):
            return
        py, handle = self._prev[signum]
        self.restore()
        if handle is not None and not handle.cancelled():
            handle._callback(*handle._args)
        elif callable(py):
            py(signum, None)
        elif py != signal.SIG_IGN:  # SIG_DFL (restored): die of it, as the process would have
            os.kill(os.getpid(), signum)

    def restore(self) -> None:
        if self._restored:
            return
        self._restored = True
        table: Dict[int, Any] = getattr(self._loop, "_signal_handlers", None) or {}
        for s in self._installed:
            current = table.get(s)
            if current is not None and current._callback != self._handle:
                continue  # someone else's, installed after ours: left in place
            try:
                self._loop.remove_signal_handler(s)
                py, handle = self._prev[s]
                if handle is not None and not handle.cancelled():
                    self._loop.add_signal_handler(s, handle._callback, *handle._args)
                elif py is not None:
                    signal.signal(s, py)
            except (ValueError, OSError, RuntimeError):  # the loop or the interpreter is closing
                pass
