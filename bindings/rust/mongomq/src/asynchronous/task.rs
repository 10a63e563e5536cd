//! One task of the async worker: claim (waiting on the blocking pool, cancelled by a
//! stop), run the handler as a task of its own with a heartbeat, ack or nack with
//! back-off, give back a lease claimed as the stop came, and stop the worker once it
//! was idle for its idle_timeout. The async twin of src/worker/run.rs, which it
//! follows step by step, telemetry included (src/traced.rs).

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::claim_cancelled_on_drop;
use super::worker::{Handler, Shared};
use crate::error::ErrorKind;
use crate::lease::Lease;
use crate::options::ClaimOptions;
use crate::queue::Queue;
use crate::traced::{HandlerErrorType, Processing};
use crate::worker::run::{backoff, panic_message, CLAIM_SLICE, QUEUE_BACKOFF_FIRST, QUEUE_BACKOFF_MAX};
use crate::worker::{log_report, BoxError, WorkerError, WorkerOptions};

/// The shortest heartbeat period (a visibility of a few nanoseconds must not spin).
const HEARTBEAT_MIN: Duration = Duration::from_millis(1);

pub(super) struct Task {
    pub(super) queue: Queue,
    pub(super) opts: WorkerOptions,
    pub(super) shared: Arc<Shared>,
    pub(super) handler: Handler,
    /// The handler's error type, for the process span's `error.type`.
    pub(super) error_type: HandlerErrorType,
}

impl Task {
    fn report(&self, e: WorkerError<'_>) {
        match &self.opts.on_error {
            Some(cb) => {
                let _ = panic::catch_unwind(AssertUnwindSafe(|| cb(e)));
            }
            None => log_report(&e),
        }
    }

    pub(super) async fn run(self) {
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
        let mut backoff_queue = QUEUE_BACKOFF_FIRST;
        loop {
            if self.shared.stopping() {
                break;
            }
            // Dropped (the runtime shutting down), this claim cancels the worker's
            // token and gives back a lease it took: the worker is gone then anyway.
            let claimed =
                claim_cancelled_on_drop(self.queue.clone(), claim_opts.clone(), self.shared.cancel.clone()).await;
            match claimed {
                Ok(Some(lease)) => {
                    backoff_queue = QUEUE_BACKOFF_FIRST;
                    let mut started = false;
                    self.shared.state.send_if_modified(|st| {
                        if !st.stopping {
                            st.busy += 1;
                            started = true;
                        }
                        started
                    });
                    if !started {
                        // The stop came while the claim was taking this lease: no
                        // handler ran, so it goes back without counting a delivery.
                        if let Err(e) = self.queue.unclaim_async(&lease).await {
                            self.report(WorkerError::Queue(&e));
                        }
                        break;
                    }
                    self.process(&lease).await;
                    self.shared.state.send_modify(|st| {
                        st.busy -= 1;
                        st.last_active = Instant::now();
                    });
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
                    self.shared.sleep_unless_stopped(backoff_queue).await;
                    backoff_queue = (backoff_queue * 2).min(QUEUE_BACKOFF_MAX);
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
            let st = self.shared.state.borrow();
            !st.stopping && st.busy == 0 && st.last_active.elapsed() >= idle
        };
        if idle_now {
            ::log::info!(
                target: crate::logging::LOG_TARGET,
                "async worker on {}: idle for {:.3} s, stopping",
                self.queue.name(),
                idle.as_secs_f64()
            );
            self.shared.stop();
        }
    }

    /// Runs the handler as a task of its own (a panic in it, or in the call that makes
    /// its future, ends that task only) and, while it runs, extends the lease by
    /// `visibility` every `visibility / 3`; a lost lease ends the heartbeat (the
    /// handler goes on; its ack reports the loss). Then acks or nacks.
    async fn process(&self, lease: &Lease) {
        let mut traced = Processing::start(&self.queue, lease);
        let (handler, theirs) = (Arc::clone(&self.handler), lease.share());
        // Polled with the process span current (given telemetry), the call that makes
        // the handler's future included.
        let mut handling = tokio::spawn(traced.instrument(async move { handler(theirs).await }));
        let every = (self.opts.visibility / 3).max(HEARTBEAT_MIN);
        let mut heartbeat = true;
        let joined = loop {
            if !heartbeat {
                break (&mut handling).await;
            }
            match tokio::time::timeout(every, &mut handling).await {
                Ok(joined) => break joined,
                Err(_) => {
                    if let Err(e) = self.queue.extend_async(lease, self.opts.visibility).await {
                        self.report(WorkerError::Queue(&e));
                        heartbeat = !e.is_lease_lost();
                    }
                }
            }
        };
        let (failure, panicked): (BoxError, bool) = match joined {
            Ok(Ok(())) => {
                traced.succeeded();
                if let Err(e) = traced.settle_async("ack", self.queue.ack_async(lease)).await {
                    self.report(WorkerError::Queue(&e));
                }
                return;
            }
            Ok(Err(e)) => (e, false),
            Err(e) if e.is_panic() => (panic_message(&*e.into_panic()).into(), true),
            // Cancelled: the runtime is shutting down under the handler.
            Err(e) => (format!("the handler's task ended: {e}").into(), false),
        };
        traced.failed(&*failure, self.error_type, panicked);
        let retry_in = backoff(&self.opts, lease.attempts());
        self.report(WorkerError::Handler { lease, error: &*failure, retry_in });
        if let Err(e) = traced.settle_async("nack", self.queue.nack_async(lease, retry_in)).await {
            self.report(WorkerError::Queue(&e));
        }
    }
}
