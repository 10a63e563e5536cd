//! One worker thread: claim (waiting, cancelled by a stop), run the handler with a
//! heartbeat, ack or nack with back-off, give back a lease claimed as the stop came,
//! and stop the worker once it was idle for its idle_timeout.

use std::any::Any;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::options::{log_report, BoxError, WorkerError, WorkerOptions};
use super::Shared;
use crate::error::{ErrorKind, Result};
use crate::lease::Lease;
use crate::options::ClaimOptions;
use crate::queue::Queue;
use crate::traced::{HandlerErrorType, Processing};

/// The longest a claim waits before the worker loops (and looks at its stop flag and
/// its idle time; a stop also cancels the waiting claim at once).
pub(crate) const CLAIM_SLICE: Duration = Duration::from_secs(1);
pub(crate) const QUEUE_BACKOFF_FIRST: Duration = Duration::from_millis(100);
pub(crate) const QUEUE_BACKOFF_MAX: Duration = Duration::from_secs(5);

pub(super) type Handler = Arc<dyn Fn(&Lease) -> Result<(), BoxError> + Send + Sync>;

pub(super) struct Ctx {
    pub(super) queue: Queue,
    pub(super) opts: WorkerOptions,
    pub(super) shared: Arc<Shared>,
    pub(super) handler: Handler,
    /// The handler's error type, for the process span's `error.type`.
    pub(super) error_type: HandlerErrorType,
}

/// Counts a worker thread out however it ends; the last one out takes the worker out
/// of the signal handling.
struct Running<'a>(&'a Shared);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let last = {
            let mut st = self.0.lock();
            st.running -= 1;
            self.0.changed.notify_all();
            st.running == 0
        };
        if last {
            self.0.release_signals();
        }
    }
}

impl Ctx {
    fn report(&self, e: WorkerError<'_>) {
        match &self.opts.on_error {
            Some(cb) => {
                let _ = panic::catch_unwind(AssertUnwindSafe(|| cb(e)));
            }
            None => log_report(&e),
        }
    }

    pub(super) fn run(self) {
        let _running = Running(&self.shared);
        let slice = self.opts.idle_timeout.map_or(CLAIM_SLICE, |idle| idle.min(CLAIM_SLICE));
        let mut claim_opts = ClaimOptions::new()
            .visibility(self.opts.visibility)
            .min_priority(self.opts.min_priority)
            .max_events(self.opts.max_events)
            .wait(slice)
            .cancel(&self.shared.cancel)
            .partitions(self.opts.partitions.iter().copied());
        if let Some(id) = &self.opts.worker_id {
            claim_opts = claim_opts.worker_id(id.clone());
        }
        let mut backoff = QUEUE_BACKOFF_FIRST;
        loop {
            if self.shared.lock().stopping {
                break;
            }
            match self.queue.claim(&claim_opts) {
                Ok(Some(lease)) => {
                    backoff = QUEUE_BACKOFF_FIRST;
                    {
                        let mut st = self.shared.lock();
                        if st.stopping {
                            drop(st);
                            // The stop came while the claim was taking this lease: no
                            // handler ran, so it goes back without counting a delivery.
                            if let Err(e) = self.queue.unclaim(&lease) {
                                self.report(WorkerError::Queue(&e));
                            }
                            break;
                        }
                        st.busy += 1;
                    }
                    self.process(&lease);
                    let mut st = self.shared.lock();
                    st.busy -= 1;
                    st.last_active = Instant::now();
                    continue;
                }
                Ok(None) => {}
                Err(e) if e.kind() == ErrorKind::Cancelled => {} // a stop: the loop ends
                Err(e) if e.kind() == ErrorKind::Interrupted => {
                    // The queue was interrupted for good: no claim can wait again.
                    self.report(WorkerError::Queue(&e));
                    break;
                }
                Err(e) => {
                    self.report(WorkerError::Queue(&e));
                    self.shared.sleep_unless_stopped(backoff);
                    backoff = (backoff * 2).min(QUEUE_BACKOFF_MAX);
                }
            }
            self.stop_if_idle();
        }
    }

    /// With an idle timeout: stops the worker once no lease is held and none was
    /// claimed (nor a handler ended) for that long.
    fn stop_if_idle(&self) {
        let Some(idle) = self.opts.idle_timeout else { return };
        let idle_now = {
            let st = self.shared.lock();
            !st.stopping && st.busy == 0 && st.last_active.elapsed() >= idle
        };
        if idle_now {
            ::log::info!(
                target: crate::logging::LOG_TARGET,
                "worker on {}: idle for {:.3} s, stopping",
                self.queue.name(),
                idle.as_secs_f64()
            );
            self.shared.stop();
        }
    }

    /// Runs the handler (with its process span current, given telemetry) while a
    /// heartbeat extends the lease, then acks or nacks (in a settle span).
    fn process(&self, lease: &Lease) {
        let mut traced = Processing::start(&self.queue, lease);
        let done = (Mutex::new(false), Condvar::new());
        let outcome = thread::scope(|s| {
            s.spawn(|| self.heartbeat(lease, &done));
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                let _current = traced.attach();
                (self.handler)(lease)
            }));
            *done.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
            done.1.notify_all();
            outcome
        });
        let (failure, panicked): (BoxError, bool) = match outcome {
            Ok(Ok(())) => {
                traced.succeeded();
                if let Err(e) = traced.settle("ack", || self.queue.ack(lease)) {
                    self.report(WorkerError::Queue(&e));
                }
                return;
            }
            Ok(Err(e)) => (e, false),
            Err(panic) => (panic_message(&*panic).into(), true),
        };
        traced.failed(&*failure, self.error_type, panicked);
        let retry_in = backoff(&self.opts, lease.attempts());
        self.report(WorkerError::Handler { lease, error: &*failure, retry_in });
        if let Err(e) = traced.settle("nack", || self.queue.nack(lease, retry_in)) {
            self.report(WorkerError::Queue(&e));
        }
    }

    /// Extends the lease by `visibility` every `visibility / 3` until the handler is
    /// done; a lost lease ends it (the handler goes on; its ack reports the loss).
    fn heartbeat(&self, lease: &Lease, done: &(Mutex<bool>, Condvar)) {
        let every = self.opts.visibility / 3;
        let mut flag = done.0.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let (f, timeout) = done.1.wait_timeout_while(flag, every, |d| !*d).unwrap_or_else(PoisonError::into_inner);
            flag = f;
            if *flag || !timeout.timed_out() {
                return;
            }
            drop(flag);
            let extended = self.queue.extend(lease, self.opts.visibility);
            if let Err(e) = &extended {
                self.report(WorkerError::Queue(e));
                if e.is_lease_lost() {
                    return;
                }
            }
            flag = done.0.lock().unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// min(cap, base * 2^(attempts - 1)) scaled by a jitter from [0.5, 1.0].
pub(crate) fn backoff(opts: &WorkerOptions, attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(62) as i32;
    let delay = (opts.backoff_base.as_secs_f64() * 2f64.powi(exp)).min(opts.backoff_cap.as_secs_f64());
    Duration::from_secs_f64(delay * jitter())
}

/// Uniform in [0.5, 1.0]: std's randomly keyed hasher over the current instant.
fn jitter() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now()) >> 11; // 53 random bits
    0.5 + 0.5 * (bits as f64 / (1u64 << 53) as f64)
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".into());
    format!("handler panicked: {text}")
}
