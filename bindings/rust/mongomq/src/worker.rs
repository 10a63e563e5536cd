//! The worker helper: [`Queue::work`] runs a handler on leases with N threads until it
//! is told to stop, with the semantics of bindings/CONTRACT.md ("The worker helper").

use std::any::Any;
use std::collections::hash_map::RandomState;
use std::error::Error as StdError;
use std::hash::BuildHasher;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::cancel::CancelHandle;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::Lease;
use crate::queue::{ClaimOptions, Queue};

/// The longest a claim waits before the worker loops (and looks at its stop flag; a
/// stop also cancels the waiting claim at once).
const CLAIM_SLICE: Duration = Duration::from_secs(1);
const QUEUE_BACKOFF_FIRST: Duration = Duration::from_millis(100);
const QUEUE_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// A handler's error, boxed.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a worker reports to [`WorkerOptions::on_error`]; nothing here ends the worker.
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkerError<'a> {
    /// A claim, ack, nack, unclaim or extend failed: a lease lost (not fatal: the group moved
    /// on), or a queue error (connect, server: the worker backs off, 100 ms doubling to
    /// 5 s, and goes on).
    Queue(&'a Error),
    /// The handler returned an error or panicked; the lease was nacked with `retry_in`.
    Handler {
        /// The lease the handler failed on.
        lease: &'a Lease,
        /// What it returned (a panic becomes an error with the panic's message).
        error: &'a (dyn StdError + Send + Sync + 'static),
        /// The nack's delay (exponential back-off with jitter).
        retry_in: Duration,
    },
}

type ErrorCallback = Arc<dyn Fn(WorkerError<'_>) + Send + Sync>;
type Handler = Arc<dyn Fn(&Lease) -> Result<(), BoxError> + Send + Sync>;

/// The worker's settings, a builder with the contract's defaults.
///
/// | option | default |
/// |---|---|
/// | [`concurrency`](WorkerOptions::concurrency) | 1 thread |
/// | [`visibility`](WorkerOptions::visibility) | 30 s (extended every third of it while a handler runs) |
/// | [`min_priority`](WorkerOptions::min_priority) | 0 |
/// | [`batch`](WorkerOptions::batch) | 1 event per lease |
/// | [`backoff_base`](WorkerOptions::backoff_base), [`backoff_cap`](WorkerOptions::backoff_cap) | 1 s, 60 s |
/// | [`max_attempts`](WorkerOptions::max_attempts) | 0: unlimited |
/// | [`shutdown_timeout`](WorkerOptions::shutdown_timeout) | 30 s |
/// | [`worker_id`](WorkerOptions::worker_id) | the library's `host:pid` |
/// | [`on_error`](WorkerOptions::on_error) | none |
#[derive(Clone)]
pub struct WorkerOptions {
    concurrency: usize,
    visibility: Duration,
    min_priority: i32,
    batch: usize,
    backoff_base: Duration,
    backoff_cap: Duration,
    max_attempts: u32,
    shutdown_timeout: Duration,
    worker_id: Option<String>,
    on_error: Option<ErrorCallback>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 1,
            visibility: Duration::from_secs(30),
            min_priority: 0,
            batch: 1,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            max_attempts: 0,
            shutdown_timeout: Duration::from_secs(30),
            worker_id: None,
            on_error: None,
        }
    }
}

impl WorkerOptions {
    /// The defaults (see the table above).
    pub fn new() -> Self {
        Self::default()
    }
    /// Number of threads claiming and running the handler (>= 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }
    /// Lease length (> 0); a running handler's lease is extended by this every third.
    pub fn visibility(mut self, d: Duration) -> Self {
        self.visibility = d;
        self
    }
    /// Only groups with priority >= this floor (0..4).
    pub fn min_priority(mut self, p: i32) -> Self {
        self.min_priority = p;
        self
    }
    /// Events per lease (>= 1); the handler gets the whole lease.
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = n;
        self
    }
    /// A failed handler's first retry delay (before jitter).
    pub fn backoff_base(mut self, d: Duration) -> Self {
        self.backoff_base = d;
        self
    }
    /// The longest retry delay (before jitter).
    pub fn backoff_cap(mut self, d: Duration) -> Self {
        self.backoff_cap = d;
        self
    }
    /// When > 0, set on the queue: a head delivered this often goes to the dead letters
    /// on its next claim.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }
    /// How long [`Worker::shutdown`] waits for running handlers.
    pub fn shutdown_timeout(mut self, d: Duration) -> Self {
        self.shutdown_timeout = d;
        self
    }
    /// The worker id the claims store.
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }
    /// Called (from the worker threads) for everything that went wrong and did not stop
    /// the worker: failed handlers, lost leases, queue errors.
    pub fn on_error(mut self, f: impl Fn(WorkerError<'_>) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

impl std::fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("concurrency", &self.concurrency)
            .field("visibility", &self.visibility)
            .field("min_priority", &self.min_priority)
            .field("batch", &self.batch)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_cap", &self.backoff_cap)
            .field("max_attempts", &self.max_attempts)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

struct State {
    stopping: bool,
    running: usize,
    /// The cancel handle of each thread's waiting claim, so a stop ends it at once.
    waiting: Vec<Option<CancelHandle>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent (plain
        // assignments), so a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stop(&self) {
        let mut st = self.lock();
        st.stopping = true;
        for cancel in st.waiting.iter().flatten() {
            cancel.cancel();
        }
        self.changed.notify_all();
    }

    /// Sleeps up to `d`, less if a stop comes.
    fn sleep_unless_stopped(&self, d: Duration) {
        let st = self.lock();
        let _ = self.changed.wait_timeout_while(st, d, |st| !st.stopping);
    }
}

/// Stops a [`Worker`] from anywhere (another thread, a signal-handling thread): it
/// stops claiming at once; [`Worker::shutdown`] or [`Worker::wait`] finish the job.
/// Cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct StopHandle {
    shared: Arc<Shared>,
}

impl StopHandle {
    /// Phase 1 of the shutdown: no new claims, waiting claims are cancelled.
    pub fn stop(&self) {
        self.shared.stop();
    }
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle").field("stopping", &self.shared.lock().stopping).finish()
    }
}

/// Running worker threads ([`Queue::work`]). Shut it down with
/// [`shutdown`](Worker::shutdown) (or let a [`StopHandle`] stop it while you
/// [`wait`](Worker::wait)); dropping it shuts it down too.
pub struct Worker {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("threads", &self.threads.len()).finish_non_exhaustive()
    }
}

impl Worker {
    /// A handle that stops this worker from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle { shared: Arc::clone(&self.shared) }
    }

    /// Graceful shutdown: 1. stop claiming (waiting claims are cancelled; a lease a
    /// claim took as the stop came, before its handler started, is given back with
    /// [`Queue::unclaim`], not counted as a delivery); 2. wait up to the shutdown
    /// timeout for running handlers to finish and ack or nack. Returns
    /// true if every thread finished in time; handlers still running are abandoned
    /// (their leases run out and are redelivered: nothing is lost).
    pub fn shutdown(mut self) -> bool {
        self.finish()
    }

    /// Blocks until a [`StopHandle`] stops the worker (or every thread ended because
    /// the queue was interrupted), then shuts it down as [`shutdown`](Worker::shutdown).
    pub fn wait(mut self) -> bool {
        {
            let st = self.shared.lock();
            let _st = self.shared.changed.wait_while(st, |st| !st.stopping && st.running > 0);
        }
        self.finish()
    }

    fn finish(&mut self) -> bool {
        if self.threads.is_empty() {
            return true;
        }
        self.shared.stop();
        let all_done = {
            let st = self.shared.lock();
            let (st, _) = self
                .shared
                .changed
                .wait_timeout_while(st, self.shutdown_timeout, |st| st.running > 0)
                .unwrap_or_else(|p| p.into_inner());
            st.running == 0
        };
        for t in self.threads.drain(..) {
            if t.is_finished() {
                // A thread only ends by returning: handler panics are caught.
                let _ = t.join();
            }
            // else: abandoned; it ends by itself once its handler returns.
        }
        all_done
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Queue {
    /// Runs `handler` on leases with `opts.concurrency` threads until stopped. `Ok(())`
    /// from the handler acks; an error (or a panic) nacks with delay
    /// `min(cap, base * 2^(attempts - 1))` times a jitter drawn from [0.5, 1.0]. While
    /// the handler runs its lease is extended every `visibility / 3`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_work", "q")?;
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = std::sync::Mutex::new(tx);
    /// let worker = queue.work(mongomq::WorkerOptions::new().concurrency(4), move |lease| {
    ///     tx.lock().unwrap().send(lease.event().to_vec())?;
    ///     Ok::<(), mongomq::BoxError>(())
    /// })?;
    /// queue.publish("customer-17", b"order", 0)?;
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(10))?, b"order");
    /// assert!(worker.shutdown());
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn work<F, E>(&self, opts: WorkerOptions, handler: F) -> Result<Worker>
    where
        F: Fn(&Lease) -> Result<(), E> + Send + Sync + 'static,
        E: Into<BoxError>,
    {
        if opts.concurrency == 0 {
            return Err(Error::argument("work", "concurrency is 0"));
        }
        if opts.batch == 0 {
            return Err(Error::argument("work", "batch is 0"));
        }
        if opts.visibility.is_zero() {
            return Err(Error::argument("work", "visibility is 0"));
        }
        if opts.max_attempts > 0 {
            self.set_max_attempts(opts.max_attempts)?;
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                stopping: false,
                running: opts.concurrency,
                waiting: vec![None; opts.concurrency],
            }),
            changed: Condvar::new(),
        });
        let handler: Handler = Arc::new(move |lease: &Lease| handler(lease).map_err(Into::into));
        let mut threads = Vec::with_capacity(opts.concurrency);
        for index in 0..opts.concurrency {
            let ctx = Ctx {
                queue: self.clone(),
                opts: opts.clone(),
                shared: Arc::clone(&shared),
                handler: Arc::clone(&handler),
                index,
            };
            let spawned = thread::Builder::new().name(format!("mongomq-worker-{index}")).spawn(move || ctx.run());
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Never started: count it out, and stop the ones that did.
                    shared.lock().running -= opts.concurrency - index;
                    let worker = Worker { shared, threads, shutdown_timeout: opts.shutdown_timeout };
                    drop(worker);
                    return Err(Error::internal(format!("work: cannot start a thread: {e}")));
                }
            }
        }
        Ok(Worker { shared, threads, shutdown_timeout: opts.shutdown_timeout })
    }
}

struct Ctx {
    queue: Queue,
    opts: WorkerOptions,
    shared: Arc<Shared>,
    handler: Handler,
    index: usize,
}

/// Counts a worker thread out however it ends.
struct Running<'a>(&'a Shared);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.running -= 1;
        self.0.changed.notify_all();
    }
}

impl Ctx {
    fn report(&self, e: WorkerError<'_>) {
        if let Some(cb) = &self.opts.on_error {
            let _ = panic::catch_unwind(AssertUnwindSafe(|| cb(e)));
        }
    }

    fn run(self) {
        let _running = Running(&self.shared);
        let mut claim_opts = ClaimOptions::new()
            .visibility(self.opts.visibility)
            .min_priority(self.opts.min_priority)
            .max_events(self.opts.batch);
        if let Some(id) = &self.opts.worker_id {
            claim_opts = claim_opts.worker_id(id.clone());
        }
        let mut backoff = QUEUE_BACKOFF_FIRST;
        loop {
            let claimed = match CancelHandle::new() {
                Ok(cancel) => {
                    {
                        let mut st = self.shared.lock();
                        if st.stopping {
                            break;
                        }
                        st.waiting[self.index] = Some(cancel.clone());
                    }
                    let r = self.queue.claim_wait(&claim_opts.clone().cancel_handle(&cancel), CLAIM_SLICE);
                    self.shared.lock().waiting[self.index] = None;
                    r
                }
                Err(e) => Err(e),
            };
            match claimed {
                Ok(None) => {}
                Ok(Some(lease)) => {
                    backoff = QUEUE_BACKOFF_FIRST;
                    if self.shared.lock().stopping {
                        // The stop came while the claim was taking this lease: no
                        // handler ran, so it goes back without counting a delivery.
                        if let Err(e) = self.queue.unclaim(&lease) {
                            self.report(WorkerError::Queue(&e));
                        }
                        break;
                    }
                    self.process(&lease);
                }
                Err(e) if e.kind() == ErrorKind::Cancelled => {}
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
        }
    }

    fn process(&self, lease: &Lease) {
        let done = (Mutex::new(false), Condvar::new());
        let outcome = thread::scope(|s| {
            s.spawn(|| self.heartbeat(lease, &done));
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| (self.handler)(lease)));
            *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
            done.1.notify_all();
            outcome
        });
        let failure: BoxError = match outcome {
            Ok(Ok(())) => {
                if let Err(e) = self.queue.ack(lease) {
                    self.report(WorkerError::Queue(&e));
                }
                return;
            }
            Ok(Err(e)) => e,
            Err(panic) => panic_message(&*panic).into(),
        };
        let retry_in = self.backoff(lease.attempts());
        self.report(WorkerError::Handler { lease, error: &*failure, retry_in });
        if let Err(e) = self.queue.nack(lease, retry_in) {
            self.report(WorkerError::Queue(&e));
        }
    }

    /// Extends the lease by `visibility` every `visibility / 3` until the handler is
    /// done; a lost lease ends it (the handler goes on; its ack reports the loss).
    fn heartbeat(&self, lease: &Lease, done: &(Mutex<bool>, Condvar)) {
        let every = self.opts.visibility / 3;
        let mut flag = done.0.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let (f, timeout) = done.1.wait_timeout_while(flag, every, |d| !*d).unwrap_or_else(|p| p.into_inner());
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
            flag = done.0.lock().unwrap_or_else(|p| p.into_inner());
        }
    }

    /// min(cap, base * 2^(attempts - 1)) scaled by a jitter from [0.5, 1.0].
    fn backoff(&self, attempts: u32) -> Duration {
        let exp = attempts.saturating_sub(1).min(62) as i32;
        let delay = (self.opts.backoff_base.as_secs_f64() * 2f64.powi(exp)).min(self.opts.backoff_cap.as_secs_f64());
        Duration::from_secs_f64(delay * jitter())
    }
}

/// Uniform in [0.5, 1.0]: std's randomly keyed hasher over the current instant.
fn jitter() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now()) >> 11; // 53 random bits
    0.5 + 0.5 * (bits as f64 / (1u64 << 53) as f64)
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string payload".into());
    format!("handler panicked: {text}")
}
