//! The async worker (feature `tokio`): [`Queue::worker_async`] starts N tokio tasks
//! that run an `async` handler on leases and returns an [`AsyncWorker`] to stop and
//! await; [`Queue::work_async`] does the same and is awaited until the worker ends.
//! The options and the semantics are the thread worker's (src/worker/,
//! bindings/CONTRACT.md "The worker helper"); one task's loop is in task.rs.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{watch, OnceCell};
use tokio::task::JoinHandle;

use super::task::Task;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::queue::Queue;
#[cfg(unix)]
use crate::worker::signals;
use crate::worker::{BoxError, WorkerOptions};

#[derive(Debug)]
pub(super) struct State {
    pub(super) stopping: bool,
    /// Tasks not yet ended.
    pub(super) running: usize,
    /// Leases the tasks hold (claimed, not yet acked, nacked or given back).
    pub(super) busy: usize,
    /// The last time a claim returned a lease or a handler ended: what idle_timeout
    /// counts from.
    pub(super) last_active: Instant,
}

/// What the worker's tasks and its handle share. The state is a watch channel: the
/// tasks and the handle await its changes, and the signal thread can stop the worker
/// without a runtime.
pub(super) struct Shared {
    pub(super) state: watch::Sender<State>,
    /// Every claim of the tasks waits with this token: a stop cancels them at once.
    pub(super) cancel: CancelToken,
    #[cfg(unix)]
    signals: Mutex<Option<signals::Registration>>,
}

impl Shared {
    /// Phase 1 of the shutdown: no new claims, waiting claims are cancelled.
    pub(super) fn stop(&self) {
        self.state.send_modify(|st| st.stopping = true);
        self.cancel.cancel();
    }

    pub(super) fn stopping(&self) -> bool {
        self.state.borrow().stopping
    }

    /// Sleeps up to `d`, less if a stop comes.
    pub(super) async fn sleep_unless_stopped(&self, d: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(d, rx.wait_for(|st| st.stopping)).await;
    }

    /// Takes the worker out of the signal handling; nothing the second time.
    pub(super) fn release_signals(&self) {
        #[cfg(unix)]
        drop(self.signals.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

#[cfg(unix)]
impl signals::Stop for Shared {
    fn stop(&self) {
        Shared::stop(self);
    }
}

pub(super) type HandlerFuture = Pin<Box<dyn Future<Output = std::result::Result<(), BoxError>> + Send>>;
pub(super) type Handler = Arc<dyn Fn(Lease) -> HandlerFuture + Send + Sync>;

/// Running worker tasks ([`Queue::worker_async`]): the async form of
/// [`Worker`](crate::Worker). [`stop`](AsyncWorker::stop) shuts it down gracefully and
/// [`wait`](AsyncWorker::wait) awaits its end (by `stop` from another task, its
/// [`idle_timeout`](WorkerOptions::idle_timeout), a signal with
/// [`handle_signals`](WorkerOptions::handle_signals), or an interrupt of the queue);
/// both may be awaited more than once and from several tasks (`Send + Sync`: share it
/// in an `Arc`). Dropping it does phase 1 of the stop (no new claims, waiting claims
/// cancelled, a lease claimed as it came given back) without waiting: running handlers
/// finish on the runtime and ack or nack.
pub struct AsyncWorker {
    shared: Arc<Shared>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    shutdown_timeout: Duration,
    /// The shutdown's result once one ran: the first stop or wait runs it, the others
    /// get its result.
    outcome: OnceCell<bool>,
}

impl fmt::Debug for AsyncWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.shared.state.borrow();
        f.debug_struct("AsyncWorker")
            .field("running", &st.running)
            .field("stopping", &st.stopping)
            .finish_non_exhaustive()
    }
}

impl AsyncWorker {
    /// Graceful shutdown, awaited: 1. stop claiming (waiting claims are cancelled; a
    /// lease a claim took as the stop came, before its handler started, is given back
    /// with [`Queue::unclaim`], not counted as a delivery); 2. wait up to the shutdown
    /// timeout for running handlers to finish and ack or nack. Returns true if every
    /// task finished in time; handlers still running are abandoned (they go on as
    /// tasks of the runtime; their leases run out and are redelivered if they never
    /// ack: nothing is lost). Again, or after [`wait`](AsyncWorker::wait) returned, it
    /// returns the same at once.
    pub async fn stop(&self) -> bool {
        self.shared.stop();
        self.finish().await
    }

    /// Awaits the worker's end (by [`stop`](AsyncWorker::stop) from another task, its
    /// idle timeout, a signal it handles, or an interrupt of the queue), then finishes
    /// the shutdown as `stop` does and returns its result.
    pub async fn wait(&self) -> bool {
        let mut rx = self.shared.state.subscribe();
        let _ = rx.wait_for(|st| st.stopping || st.running == 0).await;
        self.finish().await
    }

    async fn finish(&self) -> bool {
        *self
            .outcome
            .get_or_init(|| async {
                self.shared.stop();
                let mut rx = self.shared.state.subscribe();
                let all_done =
                    tokio::time::timeout(self.shutdown_timeout, rx.wait_for(|st| st.running == 0)).await.is_ok();
                // Finished tasks are done with; the handles of abandoned ones are
                // dropped, which detaches them (they end once their handler returns).
                self.tasks.lock().unwrap_or_else(PoisonError::into_inner).clear();
                self.shared.release_signals();
                all_done
            })
            .await
    }
}

impl Drop for AsyncWorker {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

/// Counts a task out however it ends (returned, or dropped with its runtime); the
/// last one out takes the worker out of the signal handling.
pub(super) struct Running(pub(super) Arc<Shared>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut last = false;
        self.0.state.send_modify(|st| {
            st.running -= 1;
            last = st.running == 0;
        });
        if last {
            self.0.release_signals();
        }
    }
}

impl Queue {
    /// Starts an `async` handler on leases with `opts.concurrency` tokio tasks (on the
    /// current runtime) and returns the [`AsyncWorker`] that stops and awaits them.
    /// The handler gets each [`Lease`] by value and returns a future: `Ok(())` acks;
    /// an error (or a panic) nacks with delay `min(cap, base * 2^(attempts - 1))` times
    /// a jitter drawn from [0.5, 1.0]. While the handler runs its lease is extended
    /// every `visibility / 3`. The options are the thread worker's
    /// ([`WorkerOptions`]), with the same defaults; `on_error` is called on a thread of
    /// the runtime (keep it short).
    ///
    /// Each task claims with [`claim_async`](Queue::claim_async)'s machinery: its
    /// waiting claim (at most 1 s at a time, never a polling loop) holds a thread of
    /// tokio's blocking pool, and the handler runs as a task of its own (so a panic in
    /// it is caught). Errors if called outside a tokio runtime.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_worker_async", "q")?;
    /// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    /// let worker = queue
    ///     .worker_async(mongomq::WorkerOptions::new().concurrency(4), move |lease: mongomq::Lease| {
    ///         let tx = tx.clone();
    ///         async move {
    ///             tx.send(lease.event().to_vec())?; // an await of your own here
    ///             Ok::<(), mongomq::BoxError>(())
    ///         }
    ///     })
    ///     .await?;
    /// queue.publish_async("customer-17", b"order".to_vec(), &mongomq::PublishOptions::default()).await?;
    /// assert_eq!(rx.recv().await.as_deref(), Some(&b"order"[..]));
    /// assert!(worker.stop().await);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn worker_async<F, Fut, E>(&self, opts: WorkerOptions, handler: F) -> Result<AsyncWorker>
    where
        F: Fn(Lease) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::argument("worker_async", "called outside a tokio runtime"))?;
        self.check_worker_options(&opts)?;
        if opts.max_attempts > 0 {
            let (queue, opts) = (self.clone(), opts.clone());
            super::blocking(move || queue.set_max_attempts_if_any(&opts)).await?;
        }
        let shared = Arc::new(Shared {
            state: watch::Sender::new(State { stopping: false, running: 0, busy: 0, last_active: Instant::now() }),
            cancel: CancelToken::new()?,
            #[cfg(unix)]
            signals: Mutex::new(None),
        });
        #[cfg(unix)]
        if opts.handle_signals {
            let weak: std::sync::Weak<dyn signals::Stop> = Arc::downgrade(&shared) as _;
            let registration = signals::register(weak)
                .map_err(|e| Error::internal(format!("worker_async: cannot handle SIGINT and SIGTERM: {e}")))?;
            *shared.signals.lock().unwrap_or_else(PoisonError::into_inner) = Some(registration);
        }
        let handler: Handler = Arc::new(move |lease: Lease| {
            let fut = handler(lease);
            Box::pin(async move { fut.await.map_err(Into::into) }) as HandlerFuture
        });
        let worker = AsyncWorker {
            shared: Arc::clone(&shared),
            tasks: Mutex::new(Vec::with_capacity(opts.concurrency)),
            shutdown_timeout: opts.shutdown_timeout,
            outcome: OnceCell::new(),
        };
        for _ in 0..opts.concurrency {
            let task = Task {
                queue: self.clone(),
                opts: opts.clone(),
                shared: Arc::clone(&shared),
                handler: Arc::clone(&handler),
                error_type: crate::traced::HandlerErrorType::of::<E>(),
            };
            shared.state.send_modify(|st| st.running += 1);
            let running = Running(Arc::clone(&shared));
            let join = runtime.spawn(async move {
                let _running = running;
                task.run().await;
            });
            worker.tasks.lock().unwrap_or_else(PoisonError::into_inner).push(join);
        }
        Ok(worker)
    }

    /// Runs an `async` handler on leases as [`worker_async`](Queue::worker_async)
    /// does, until the worker ends: by its [`idle_timeout`](WorkerOptions::idle_timeout),
    /// by SIGINT or SIGTERM with [`handle_signals`](WorkerOptions::handle_signals), or
    /// by an [`interrupt`](Queue::interrupt) of the queue. Returns what the shutdown
    /// returns: true if every running handler finished within the shutdown timeout.
    /// Dropping the future stops the worker (phase 1, as dropping an [`AsyncWorker`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_work_async", "q")?;
    /// use std::time::Duration;
    /// queue.publish_async("customer-17", b"order".to_vec(), &mongomq::PublishOptions::default()).await?;
    /// let opts = mongomq::WorkerOptions::new().concurrency(4).idle_timeout(Duration::from_millis(500));
    /// let finished = queue
    ///     .work_async(opts, |lease: mongomq::Lease| async move {
    ///         tokio::time::sleep(Duration::from_millis(10)).await; // an await of your own
    ///         println!("{}", lease.text()?);
    ///         Ok::<(), mongomq::BoxError>(())
    ///     })
    ///     .await?; // returns once the queue was idle for 0.5 s
    /// assert!(finished);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn work_async<F, Fut, E>(&self, opts: WorkerOptions, handler: F) -> Result<bool>
    where
        F: Fn(Lease) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Ok(self.worker_async(opts, handler).await?.wait().await)
    }
}
