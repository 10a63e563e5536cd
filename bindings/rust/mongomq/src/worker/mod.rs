//! The worker helper: [`Queue::worker`] starts N threads that run a handler on leases
//! and returns a [`Worker`] to stop and await; [`Queue::work`] does the same and blocks
//! until it ends. The semantics are bindings/CONTRACT.md's ("The worker helper"); the
//! thread loop is in run.rs, the options in options.rs, the signal handling in
//! signals.rs. The option checks, the back-off and the signals are shared with the
//! async worker (src/asynchronous/worker.rs, feature `tokio`).

mod options;
pub(crate) mod run;
#[cfg(unix)]
pub(crate) mod signals;

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::queue::Queue;

#[cfg(feature = "tokio")]
pub(crate) use options::log_report;
pub use options::{BoxError, WorkerError, WorkerOptions};

struct State {
    stopping: bool,
    /// Worker threads not yet ended.
    running: usize,
    /// Leases the threads hold (claimed, not yet acked, nacked or given back).
    busy: usize,
    /// The last time a claim returned a lease or a handler ended: what idle_timeout
    /// counts from.
    last_active: Instant,
}

/// What the worker's threads and its handle share.
pub(crate) struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Every claim of the worker's threads waits with this token: a stop cancels them
    /// at once (a token stays cancelled, as the worker stays stopped).
    cancel: CancelToken,
    /// The worker's place among the ones SIGINT and SIGTERM stop, while it runs.
    #[cfg(unix)]
    signals: Mutex<Option<signals::Registration>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent (plain
        // assignments), so a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Phase 1 of the shutdown: no new claims, waiting claims are cancelled.
    pub(crate) fn stop(&self) {
        let mut st = self.lock();
        st.stopping = true;
        self.cancel.cancel();
        self.changed.notify_all();
    }

    /// Sleeps up to `d`, less if a stop comes.
    fn sleep_unless_stopped(&self, d: Duration) {
        let st = self.lock();
        let _ = self.changed.wait_timeout_while(st, d, |st| !st.stopping);
    }

    /// Takes the worker out of the signal handling (the previous handlers come back
    /// with the last such worker); nothing the second time.
    pub(crate) fn release_signals(&self) {
        #[cfg(unix)]
        drop(self.signals.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// Running worker threads ([`Queue::worker`]). [`stop`](Worker::stop) shuts it down
/// gracefully; [`wait`](Worker::wait) blocks until it ends (stopped by `stop` on
/// another thread, by its [`idle_timeout`](WorkerOptions::idle_timeout), by a signal
/// with [`handle_signals`](WorkerOptions::handle_signals), or because the queue was
/// interrupted). Dropping it stops it. `Send + Sync`: share it (an `Arc`, a scoped
/// thread) to stop it from one thread while another waits.
pub struct Worker {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    shutdown_timeout: Duration,
    /// The shutdown's result once one ran (stop and wait may both be called, from
    /// several threads: the first runs it, the others get its result).
    outcome: Mutex<Option<bool>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.shared.lock();
        f.debug_struct("Worker").field("running", &st.running).field("stopping", &st.stopping).finish_non_exhaustive()
    }
}

impl Worker {
    /// Graceful shutdown: 1. stop claiming (waiting claims are cancelled; a lease a
    /// claim took as the stop came, before its handler started, is given back with
    /// [`Queue::unclaim`], not counted as a delivery); 2. wait up to the shutdown
    /// timeout for running handlers to finish and ack or nack. Returns true if every
    /// thread finished in time; handlers still running are abandoned (their leases run
    /// out and are redelivered: nothing is lost). Calling it again, or after
    /// [`wait`](Worker::wait) returned, returns the same at once.
    pub fn stop(&self) -> bool {
        self.shared.stop();
        self.finish()
    }

    /// Blocks until the worker stops (by [`stop`](Worker::stop) on another thread, its
    /// idle timeout, a signal it handles, or an interrupt of the queue), then finishes
    /// the shutdown as `stop` does and returns its result.
    pub fn wait(&self) -> bool {
        {
            let st = self.shared.lock();
            let _st = self
                .shared
                .changed
                .wait_while(st, |st| !st.stopping && st.running > 0)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.finish()
    }

    fn finish(&self) -> bool {
        let mut outcome = self.outcome.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = *outcome {
            return done;
        }
        self.shared.stop();
        let all_done = {
            let st = self.shared.lock();
            let (st, _) = self
                .shared
                .changed
                .wait_timeout_while(st, self.shutdown_timeout, |st| st.running > 0)
                .unwrap_or_else(PoisonError::into_inner);
            st.running == 0
        };
        for t in self.threads.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
            if t.is_finished() {
                // A thread only ends by returning: handler panics are caught.
                let _ = t.join();
            }
            // else: abandoned; it ends by itself once its handler returns.
        }
        self.shared.release_signals();
        *outcome = Some(all_done);
        all_done
    }
}

#[cfg(unix)]
impl signals::Stop for Shared {
    fn stop(&self) {
        Shared::stop(self);
    }
}

impl Queue {
    /// The checks both workers (threads and, with `tokio`, tasks) make of their
    /// options before they start.
    pub(crate) fn check_worker_options(&self, opts: &WorkerOptions) -> Result<()> {
        if opts.concurrency == 0 {
            return Err(Error::argument("worker", "concurrency is 0"));
        }
        if opts.max_events == 0 || opts.max_events > mongomq_sys::MQ_BATCH_MAX {
            return Err(Error::argument(
                "worker",
                format_args!("max_events is {}, outside 1..{}", opts.max_events, mongomq_sys::MQ_BATCH_MAX),
            ));
        }
        if opts.visibility.is_zero() {
            return Err(Error::argument("worker", "visibility is 0"));
        }
        crate::partitions::check_partitions("worker", &opts.partitions, self.partitions())?;
        #[cfg(not(unix))]
        if opts.handle_signals {
            return Err(Error::argument("worker", "handle_signals: SIGINT and SIGTERM are Unix's"));
        }
        Ok(())
    }

    /// `max_attempts > 0` is set on the queue (a blocking call).
    pub(crate) fn set_max_attempts_if_any(&self, opts: &WorkerOptions) -> Result<()> {
        if opts.max_attempts > 0 {
            self.set_max_attempts(opts.max_attempts)?;
        }
        Ok(())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Queue {
    /// Starts `handler` on leases with `opts.concurrency` threads and returns at once
    /// with the [`Worker`] that stops and awaits them. `Ok(())` from the handler acks;
    /// an error (or a panic) nacks with delay `min(cap, base * 2^(attempts - 1))` times
    /// a jitter drawn from [0.5, 1.0]. While the handler runs its lease is extended
    /// every `visibility / 3`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_worker", "q")?;
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let worker = queue.worker(mongomq::WorkerOptions::new().concurrency(4), move |lease| {
    ///     tx.lock().unwrap().send(lease.event().to_vec())?;
    ///     Ok::<(), mongomq::BoxError>(())
    /// })?;
    /// queue.publish("customer-17", b"order", &mongomq::PublishOptions::default())?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(10))?, b"order");
    /// assert!(worker.stop());
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn worker<F, E>(&self, opts: WorkerOptions, handler: F) -> Result<Worker>
    where
        F: Fn(&Lease) -> Result<(), E> + Send + Sync + 'static,
        E: Into<BoxError>,
    {
        self.check_worker_options(&opts)?;
        self.set_max_attempts_if_any(&opts)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State { stopping: false, running: 0, busy: 0, last_active: Instant::now() }),
            changed: Condvar::new(),
            cancel: CancelToken::new()?,
            #[cfg(unix)]
            signals: Mutex::new(None),
        });
        #[cfg(unix)]
        if opts.handle_signals {
            let weak: std::sync::Weak<dyn signals::Stop> = Arc::downgrade(&shared) as _;
            let registration = signals::register(weak)
                .map_err(|e| Error::internal(format!("worker: cannot handle SIGINT and SIGTERM: {e}")))?;
            *shared.signals.lock().unwrap_or_else(PoisonError::into_inner) = Some(registration);
        }
        let handler: run::Handler = Arc::new(move |lease: &Lease| handler(lease).map_err(Into::into));
        let worker = Worker {
            shared: Arc::clone(&shared),
            threads: Mutex::new(Vec::with_capacity(opts.concurrency)),
            shutdown_timeout: opts.shutdown_timeout,
            outcome: Mutex::new(None),
        };
        for index in 0..opts.concurrency {
            let ctx = run::Ctx {
                queue: self.clone(),
                opts: opts.clone(),
                shared: Arc::clone(&shared),
                handler: Arc::clone(&handler),
                error_type: crate::traced::HandlerErrorType::of::<E>(),
            };
            shared.lock().running += 1;
            match thread::Builder::new().name(format!("mongomq-worker-{index}")).spawn(move || ctx.run()) {
                Ok(t) => worker.threads.lock().unwrap_or_else(PoisonError::into_inner).push(t),
                Err(e) => {
                    // Never started (its Ctx was dropped unrun): count it out, and stop
                    // the ones that did (dropping the worker).
                    shared.lock().running -= 1;
                    return Err(Error::internal(format!("worker: cannot start a thread: {e}")));
                }
            }
        }
        Ok(worker)
    }

    /// Runs `handler` on leases as [`worker`](Queue::worker) does and blocks until the
    /// worker ends: by its [`idle_timeout`](WorkerOptions::idle_timeout), by SIGINT or
    /// SIGTERM with [`handle_signals`](WorkerOptions::handle_signals), or by an
    /// [`interrupt`](Queue::interrupt) of the queue (from another thread; to stop it
    /// from your code otherwise, use [`worker`](Queue::worker) and
    /// [`Worker::stop`]). Returns what the shutdown returns: true if every running
    /// handler finished within the shutdown timeout.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_work", "q")?;
    /// use std::time::Duration;
    /// queue.publish("customer-17", b"order", &mongomq::PublishOptions::default())?;
    /// let opts = mongomq::WorkerOptions::new().concurrency(4).idle_timeout(Duration::from_millis(500));
    /// let finished = queue.work(opts, |lease| {
    ///     println!("{}", lease.text()?);
    ///     Ok::<(), mongomq::BoxError>(())
    /// })?; // returns once the queue was idle for 0.5 s
    /// assert!(finished);
    /// assert_eq!(queue.stats()?.messages, 0);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn work<F, E>(&self, opts: WorkerOptions, handler: F) -> Result<bool>
    where
        F: Fn(&Lease) -> Result<(), E> + Send + Sync + 'static,
        E: Into<BoxError>,
    {
        Ok(self.worker(opts, handler)?.wait())
    }
}
