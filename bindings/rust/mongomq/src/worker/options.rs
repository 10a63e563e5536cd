//! The worker's settings (`WorkerOptions`), what it reports (`WorkerError`), and the
//! default report: a line through the `log` crate.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::lease::Lease;
use crate::logging::LOG_TARGET;

/// A handler's error, boxed.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// What a worker reports to [`WorkerOptions::on_error`]; nothing here ends the worker.
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkerError<'a> {
    /// A claim, ack, nack, unclaim or extend failed: a lease lost (not fatal: the group
    /// moved on), or a queue error (connect, server: the worker backs off, 100 ms
    /// doubling to 5 s, and goes on; interrupted: that worker thread ends).
    Queue(&'a Error),
    /// The handler returned an error or panicked; the lease was nacked with `retry_in`.
    Handler {
        /// The lease the handler failed on.
        lease: &'a Lease,
        /// What it returned (a panic becomes an error with the panic's message; the
        /// panic itself was reported by Rust's panic hook, with its location).
        error: &'a (dyn StdError + Send + Sync + 'static),
        /// The nack's delay (exponential back-off with jitter).
        retry_in: Duration,
    },
}

/// The error and every `source()` under it, `": "`-joined.
struct Chain<'a>(&'a (dyn StdError + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

impl fmt::Display for WorkerError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerError::Queue(e) => write!(f, "queue error: {e}"),
            WorkerError::Handler { lease, error, retry_in } => write!(
                f,
                "the handler failed on {} #{} (attempt {}), retried in {:.3} s: {}",
                lease.group(),
                lease.seq(),
                lease.attempts(),
                retry_in.as_secs_f64(),
                Chain(*error)
            ),
        }
    }
}

/// The report of a worker without [`WorkerOptions::on_error`]: handler failures at
/// `Error`, queue errors at `Warn` (they are retried), target "mongomq".
pub(crate) fn log_report(e: &WorkerError<'_>) {
    match e {
        WorkerError::Handler { .. } => ::log::error!(target: LOG_TARGET, "{e}"),
        WorkerError::Queue(_) => ::log::warn!(target: LOG_TARGET, "{e}"),
    }
}

pub(crate) type ErrorCallback = Arc<dyn Fn(WorkerError<'_>) + Send + Sync>;

/// The worker's settings, a builder with the contract's defaults.
///
/// | option | default |
/// |---|---|
/// | [`concurrency`](WorkerOptions::concurrency) | 1 thread |
/// | [`visibility`](WorkerOptions::visibility) | 30 s (extended every third of it while a handler runs) |
/// | [`min_priority`](WorkerOptions::min_priority) | 0 |
/// | [`max_events`](WorkerOptions::max_events) | 1 event per lease |
/// | [`backoff_base`](WorkerOptions::backoff_base), [`backoff_cap`](WorkerOptions::backoff_cap) | 1 s, 60 s |
/// | [`max_attempts`](WorkerOptions::max_attempts) | 0: unlimited |
/// | [`shutdown_timeout`](WorkerOptions::shutdown_timeout) | 30 s |
/// | [`worker_id`](WorkerOptions::worker_id) | the library's `host:pid` |
/// | [`idle_timeout`](WorkerOptions::idle_timeout) | none: never stops by itself |
/// | [`handle_signals`](WorkerOptions::handle_signals) | false |
/// | [`partitions`](WorkerOptions::partitions) | none: every partition |
/// | [`on_error`](WorkerOptions::on_error) | a line through the `log` crate, target `"mongomq"` |
#[derive(Clone)]
pub struct WorkerOptions {
    pub(crate) concurrency: usize,
    pub(crate) visibility: Duration,
    pub(crate) min_priority: i32,
    pub(crate) max_events: usize,
    pub(crate) backoff_base: Duration,
    pub(crate) backoff_cap: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) worker_id: Option<String>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) handle_signals: bool,
    pub(crate) partitions: Vec<usize>,
    pub(crate) on_error: Option<ErrorCallback>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 1,
            visibility: Duration::from_secs(30),
            min_priority: 0,
            max_events: 1,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(60),
            max_attempts: 0,
            shutdown_timeout: Duration::from_secs(30),
            worker_id: None,
            idle_timeout: None,
            handle_signals: false,
            partitions: Vec::new(),
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
    /// Events per lease (1..10,000); the handler gets the whole lease.
    pub fn max_events(mut self, n: usize) -> Self {
        self.max_events = n;
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
    /// How long a stop waits for running handlers before it abandons them (their
    /// leases run out and are redelivered: nothing is lost).
    pub fn shutdown_timeout(mut self, d: Duration) -> Self {
        self.shutdown_timeout = d;
        self
    }
    /// The worker id the claims store.
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }
    /// Stop by itself (gracefully, as [`Worker::stop`](crate::Worker::stop)) once, with
    /// no handler running, no claim has returned a lease for this long: a worker that
    /// drains a queue and ends. `Duration::ZERO` stops at the first empty claim.
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.idle_timeout = Some(d);
        self
    }
    /// With `true`, SIGINT and SIGTERM stop the worker gracefully (Sidekiq-style: no
    /// new claims, running handlers finish within the shutdown timeout); the process's
    /// previous handlers of both signals are put back once the worker (the last such
    /// worker of the process) has ended. Unix only.
    pub fn handle_signals(mut self, on: bool) -> Self {
        self.handle_signals = on;
        self
    }
    /// On a partitioned queue (0.8.0), the only partitions the worker claims from
    /// ([`ClaimOptions::partitions`](crate::ClaimOptions::partitions)); empty (the
    /// default) is every partition. A bad list (a partition outside
    /// `0..queue.partitions()`, one given twice) is an
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error when the worker
    /// starts, naming `partitions[i]` as the library does.
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = usize>) -> Self {
        self.partitions = partitions.into_iter().collect();
        self
    }
    /// Called (from the worker threads) for everything that went wrong and did not stop
    /// the worker: failed handlers, lost leases, queue errors. Without it, each is
    /// logged through the `log` crate (target `"mongomq"`: handler failures at `Error`
    /// with the error's source chain, queue errors at `Warn`).
    pub fn on_error(mut self, f: impl Fn(WorkerError<'_>) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("concurrency", &self.concurrency)
            .field("visibility", &self.visibility)
            .field("min_priority", &self.min_priority)
            .field("max_events", &self.max_events)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_cap", &self.backoff_cap)
            .field("max_attempts", &self.max_attempts)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("worker_id", &self.worker_id)
            .field("idle_timeout", &self.idle_timeout)
            .field("handle_signals", &self.handle_signals)
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}
