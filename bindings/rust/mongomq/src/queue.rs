use std::ffi::{c_char, CStr, CString};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mongomq_sys as sys;

use crate::batch::Batch;
use crate::cancel::CancelHandle;
use crate::client::ClientHandle;
use crate::clock::{manual_clock_now, ClockCell, ManualClock};
use crate::error::{c_string, check, Error, Result};
use crate::lease::Lease;
use crate::peek::PeekedEvent;
use crate::stats::Stats;

struct QueueHandle {
    ptr: NonNull<sys::mq_queue>,
    name: String,
    // Every clock given to set_clock, kept until the queue is dropped: fields are
    // dropped after Drop::drop, so after mq_queue_destroy, when no call of the queue
    // can read one any more (a call in flight may read a clock that was replaced).
    clocks: Mutex<Vec<Arc<ClockCell>>>,
    // Declared after ptr, dropped after the queue is destroyed: the header wants the
    // client to outlive its queues.
    _client: Arc<ClientHandle>,
}

// SAFETY: the header says mq_queue is thread-safe: any number of threads may publish,
// claim, ack, nack and extend through one handle at once. It is destroyed only in Drop,
// when no clone of the Arc is left, so no call on it can be running then.
unsafe impl Send for QueueHandle {}
// SAFETY: as above.
unsafe impl Sync for QueueHandle {}

impl Drop for QueueHandle {
    fn drop(&mut self) {
        // SAFETY: created by mq_queue_new and destroyed exactly once, here, when no
        // Queue clone (and so no call through one) is left; the client and every clock
        // the queue was given are still alive (self._client and self.clocks are dropped
        // after this).
        unsafe { sys::mq_queue_destroy(self.ptr.as_ptr()) }
    }
}

/// One queue: the collections `{db}.{prefix}_*`. Cheap to clone (the clones share the
/// C handle), `Send + Sync`: share it between threads by cloning or by reference. It
/// keeps its [`Client`](crate::Client)'s pool alive.
#[derive(Clone)]
pub struct Queue {
    handle: Arc<QueueHandle>,
}

/// How [`Queue::claim`] claims: a builder with the library's defaults.
///
/// | option | default |
/// |---|---|
/// | [`visibility`](ClaimOptions::visibility) | 30 s |
/// | [`min_priority`](ClaimOptions::min_priority) | 0 |
/// | [`max_events`](ClaimOptions::max_events) | 1 |
/// | [`wait`](ClaimOptions::wait) | none: return `None` at once when nothing is due |
/// | [`worker_id`](ClaimOptions::worker_id) | the library's `host:pid` |
/// | [`cancel_handle`](ClaimOptions::cancel_handle) | none |
#[derive(Clone, Debug)]
pub struct ClaimOptions {
    visibility: Duration,
    min_priority: i32,
    max_events: usize,
    wait: Option<Duration>,
    worker_id: Option<String>,
    cancel: Option<CancelHandle>,
}

impl Default for ClaimOptions {
    fn default() -> Self {
        ClaimOptions {
            visibility: Duration::from_secs(30),
            min_priority: 0,
            max_events: 1,
            wait: None,
            worker_id: None,
            cancel: None,
        }
    }
}

impl ClaimOptions {
    /// The defaults (see the table above).
    pub fn new() -> Self {
        Self::default()
    }

    /// How long the lease lasts (> 0) unless acked, nacked or extended.
    pub fn visibility(mut self, visibility: Duration) -> Self {
        self.visibility = visibility;
        self
    }

    /// Only groups with priority >= this floor (0..4).
    pub fn min_priority(mut self, min_priority: i32) -> Self {
        self.min_priority = min_priority;
        self
    }

    /// Up to this many consecutive events of one group in one lease (>= 1).
    pub fn max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    /// Wait up to this long for a group to become due (woken by publishes, acks and
    /// nacks, not by polling). Zero is no wait.
    pub fn wait(mut self, timeout: Duration) -> Self {
        self.wait = Some(timeout);
        self
    }

    /// The worker id stored in the lease (non-empty UTF-8, at most 200 bytes).
    pub fn worker_id(mut self, worker_id: impl Into<String>) -> Self {
        self.worker_id = Some(worker_id.into());
        self
    }

    /// Claims made with these options end with [`ErrorKind::Cancelled`] once `cancel`
    /// is cancelled (see [`CancelHandle`]).
    ///
    /// [`ErrorKind::Cancelled`]: crate::ErrorKind::Cancelled
    pub fn cancel_handle(mut self, cancel: &CancelHandle) -> Self {
        self.cancel = Some(cancel.clone());
        self
    }
}

/// A C string for an optional argument: NULL when absent.
fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

/// The text a `*_json` call returned: copied, then released with mq_free.
fn take_text(function: &str, status: sys::mq_status, err: &sys::mq_error, json: *mut c_char) -> Result<String> {
    check(status, err)?;
    if json.is_null() {
        return Err(Error::internal(format!("{function} returned MQ_OK and no text")));
    }
    // SAFETY: on MQ_OK json is a NUL-terminated string the library allocated for us;
    // it is copied here, then released with mq_free, exactly once.
    let text = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
    // SAFETY: json came from the library's *_json call and is not used after this.
    unsafe { sys::mq_free(json.cast()) };
    Ok(text)
}

fn parse_json<T: serde::de::DeserializeOwned>(function: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("{function}: cannot parse {text:?}: {e}")))
}

impl Queue {
    pub(crate) fn open(client: Arc<ClientHandle>, db: &str, prefix: &str) -> Result<Queue> {
        let c_db = c_string("mq_queue_new", "db_name", db)?;
        let c_prefix = c_string("mq_queue_new", "prefix", prefix)?;
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the client is alive (we hold its Arc, and keep it in the handle);
        // db and prefix are C strings valid for the call; out and err point to locals.
        let status =
            unsafe { sys::mq_queue_new(client.as_ptr(), c_db.as_ptr(), c_prefix.as_ptr(), &mut out, &mut err) };
        check(status, &err)?;
        let ptr =
            NonNull::new(out).ok_or_else(|| Error::internal("mq_queue_new returned MQ_OK and no queue".into()))?;
        Ok(Queue {
            handle: Arc::new(QueueHandle {
                ptr,
                name: format!("{db}.{prefix}"),
                clocks: Mutex::new(Vec::new()),
                _client: client,
            }),
        })
    }

    fn ptr(&self) -> *mut sys::mq_queue {
        self.handle.ptr.as_ptr()
    }

    /// `"db.prefix"`.
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// Appends `event` (any bytes, empty included) to the tail of `group` and returns
    /// its sequence number. `priority` (0..4) counts only when this publish creates
    /// the group. 3 server commands.
    pub fn publish(&self, group: &str, event: impl AsRef<[u8]>, priority: i32) -> Result<i64> {
        let group = c_string("mq_publish", "group_id", group)?;
        let event = event.as_ref();
        let mut seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string and event a slice of
        // event.len() bytes, both valid for the call (nothing is kept); seq and err
        // point to locals.
        let status = unsafe {
            sys::mq_publish(
                self.ptr(),
                group.as_ptr(),
                event.as_ptr().cast(),
                event.len(),
                priority,
                &mut seq,
                &mut err,
            )
        };
        check(status, &err)?;
        Ok(seq)
    }

    /// As [`publish`](Queue::publish), but the event is not delivered before
    /// `not_before` (seconds since the epoch on the queue's clock, [`Queue::now`]).
    /// FIFO stays strict: while it is its group's head, the group waits for it.
    pub fn publish_at(&self, group: &str, event: impl AsRef<[u8]>, priority: i32, not_before: f64) -> Result<i64> {
        let group = c_string("mq_publish_at", "group_id", group)?;
        let event = event.as_ref();
        let mut seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: as in publish.
        let status = unsafe {
            sys::mq_publish_at(
                self.ptr(),
                group.as_ptr(),
                event.as_ptr().cast(),
                event.len(),
                priority,
                not_before,
                &mut seq,
                &mut err,
            )
        };
        check(status, &err)?;
        Ok(seq)
    }

    /// As [`publish_at`](Queue::publish_at) with `not_before` = [`now`](Queue::now) +
    /// `delay`.
    pub fn publish_after(&self, group: &str, event: impl AsRef<[u8]>, priority: i32, delay: Duration) -> Result<i64> {
        self.publish_at(group, event, priority, self.now() + delay.as_secs_f64())
    }

    /// Publishes every event of `batch` in 3 server commands; returns the first seq
    /// (the others follow in add order). An empty batch is an argument error. The
    /// batch may be published again (new seqs).
    pub fn publish_batch(&self, batch: &Batch) -> Result<i64> {
        let mut seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue and the batch are alive for the call (borrowed); the batch
        // is only read; seq and err point to locals.
        let status = unsafe { sys::mq_publish_batch(self.ptr(), batch.as_ptr(), &mut seq, &mut err) };
        check(status, &err)?;
        Ok(seq)
    }

    /// Leases the head of the due group that waited longest (priority >= the floor),
    /// or up to `max_events` consecutive events of it. `Ok(None)` when nothing is due
    /// (after waiting up to [`wait`](ClaimOptions::wait), if set).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_claim", "q")?;
    /// use std::time::Duration;
    /// queue.publish("g", b"one", 0)?;
    /// let opts = mongomq::ClaimOptions::new().visibility(Duration::from_secs(10)).max_events(5);
    /// if let Some(lease) = queue.claim(&opts)? {
    ///     for (seq, event) in lease.events() {
    ///         println!("{seq}: {event:?}");
    ///     }
    ///     queue.ack(&lease)?;
    /// }
    /// assert!(queue.claim(&opts)?.is_none());
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn claim(&self, opts: &ClaimOptions) -> Result<Option<Lease>> {
        match (opts.wait, &opts.cancel) {
            (None, None) => self.claim_raw(opts, None),
            (wait, _) => self.claim_raw(opts, Some(wait.unwrap_or(Duration::ZERO))),
        }
    }

    /// [`claim`](Queue::claim) that waits up to `timeout` (overriding the options'
    /// [`wait`](ClaimOptions::wait)) for a group to become due. Ends early with
    /// [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted) after
    /// [`interrupt`](Queue::interrupt), or
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) by the options'
    /// [`CancelHandle`].
    pub fn claim_wait(&self, opts: &ClaimOptions, timeout: Duration) -> Result<Option<Lease>> {
        self.claim_raw(opts, Some(timeout))
    }

    fn claim_raw(&self, opts: &ClaimOptions, wait: Option<Duration>) -> Result<Option<Lease>> {
        let worker = opts.worker_id.as_deref().map(|w| c_string("mq_claim", "worker_id", w)).transpose()?;
        let visibility = opts.visibility.as_secs_f64();
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        let (function, status) = match wait {
            None if opts.max_events == 1 => {
                // SAFETY: the queue is alive for &self; worker is NULL or a C string
                // valid for the call; out and err point to locals.
                ("mq_claim", unsafe {
                    sys::mq_claim(self.ptr(), opt_ptr(&worker), visibility, opts.min_priority, &mut out, &mut err)
                })
            }
            None => {
                // SAFETY: as for mq_claim.
                ("mq_claim_batch", unsafe {
                    sys::mq_claim_batch(
                        self.ptr(),
                        opt_ptr(&worker),
                        visibility,
                        opts.min_priority,
                        opts.max_events,
                        &mut out,
                        &mut err,
                    )
                })
            }
            Some(timeout) => {
                let cancel = opts.cancel.as_ref().map_or(ptr::null_mut(), CancelHandle::as_ptr);
                // SAFETY: as for mq_claim; cancel is NULL or an mq_cancel kept alive by
                // the options' CancelHandle, borrowed for the whole call.
                ("mq_claim_wait_cancel", unsafe {
                    sys::mq_claim_wait_cancel(
                        self.ptr(),
                        opt_ptr(&worker),
                        visibility,
                        opts.min_priority,
                        opts.max_events,
                        timeout.as_secs_f64(),
                        cancel,
                        &mut out,
                        &mut err,
                    )
                })
            }
        };
        match status {
            sys::MQ_EMPTY => Ok(None),
            sys::MQ_OK => Lease::from_raw(out, function).map(Some),
            _ => Err(Error::from_c(status, &err)),
        }
    }

    /// Removes the leased event(s) and releases the group. An error of kind
    /// [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost) when the lease expired and
    /// another worker took the group (the events are removed all the same).
    pub fn ack(&self, lease: &Lease) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue and the lease are alive for the call (borrowed); the lease
        // is only read; err points to a local.
        let status = unsafe { sys::mq_ack(self.ptr(), lease.as_ptr(), &mut err) };
        check(status, &err)
    }

    /// Gives the event(s) back: claimable again now (`Duration::ZERO`, attempts + 1),
    /// or after `delay` (the group stays held until then).
    pub fn nack(&self, lease: &Lease, delay: Duration) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: as in ack.
        let status = unsafe { sys::mq_nack(self.ptr(), lease.as_ptr(), delay.as_secs_f64(), &mut err) };
        check(status, &err)
    }

    /// Gives back a lease no handler ran (a worker that claimed and was then told to
    /// stop): unlike [`nack`](Queue::nack) it is not a delivery. The group gets back
    /// the attempts count and the place in line the claim found, so the same head is
    /// claimed next with the same [`attempts`](Lease::attempts), and nothing is pushed
    /// towards the dead letters. An error of kind
    /// [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost) (nothing changed) when the
    /// group is no longer this lease's. After an error of kind
    /// [`ErrorKind::Connect`](crate::ErrorKind::Connect), retry with the same lease: a
    /// retry that finds its own earlier give-back applied is `Ok`.
    pub fn unclaim(&self, lease: &Lease) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: as in ack.
        let status = unsafe { sys::mq_unclaim(self.ptr(), lease.as_ptr(), &mut err) };
        check(status, &err)
    }

    /// Moves the lease's expiry to now + `visibility`.
    pub fn extend(&self, lease: &Lease, visibility: Duration) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: as in ack.
        let status = unsafe { sys::mq_extend(self.ptr(), lease.as_ptr(), visibility.as_secs_f64(), &mut err) };
        check(status, &err)
    }

    /// Ends every waiting claim on this queue (and its clones) with
    /// [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted), and makes every later
    /// waiting claim end so at once: for shutdown. Other calls keep working; open a new
    /// queue to wait again.
    pub fn interrupt(&self) {
        // SAFETY: the queue is alive for &self; interrupt is thread-safe.
        unsafe { sys::mq_queue_interrupt(self.ptr()) }
    }

    /// With `max_attempts` > 0, a claim that would deliver a head for the
    /// (max_attempts + 1)th time moves it to the dead letters instead. 0: unlimited
    /// (the default). Applies to this queue handle and its clones.
    pub fn set_max_attempts(&self, max_attempts: u32) -> Result<()> {
        let n = i32::try_from(max_attempts).map_err(|_| {
            Error::argument(
                "mq_queue_set_max_attempts",
                format_args!("max_attempts is {max_attempts}, more than {}", i32::MAX),
            )
        })?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_max_attempts(self.ptr(), n, &mut err) };
        check(status, &err)
    }

    fn count_call(
        &self,
        call: unsafe extern "C" fn(*mut sys::mq_queue, *mut i64, *mut sys::mq_error) -> sys::mq_status,
    ) -> Result<i64> {
        let mut n = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: call is one of mq_dead_count, mq_dead_purge, mq_repair (all take the
        // queue, an i64 out-parameter and the error); the queue is alive for &self, n
        // and err point to locals.
        let status = unsafe { call(self.ptr(), &mut n, &mut err) };
        check(status, &err)?;
        Ok(n)
    }

    /// Number of dead letters.
    pub fn dead_count(&self) -> Result<i64> {
        self.count_call(sys::mq_dead_count)
    }

    /// Publishes the dead letter `seq` again at the tail of its group; returns its new
    /// seq. A seq that is no dead letter is an argument error.
    pub fn dead_requeue(&self, seq: i64) -> Result<i64> {
        let mut new_seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; new_seq and err point to locals.
        let status = unsafe { sys::mq_dead_requeue(self.ptr(), seq, &mut new_seq, &mut err) };
        check(status, &err)?;
        Ok(new_seq)
    }

    /// Removes every dead letter; returns how many.
    pub fn dead_purge(&self) -> Result<i64> {
        self.count_call(sys::mq_dead_purge)
    }

    /// The queue's state as the library's JSON text (docs/design.md, "Stats").
    pub fn stats_json(&self) -> Result<String> {
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; json and err point to locals.
        let status = unsafe { sys::mq_stats_json(self.ptr(), &mut json, &mut err) };
        take_text("mq_stats_json", status, &err, json)
    }

    /// Up to `max_events` (1..10,000) events, oldest first, of one group (or of the
    /// whole queue with `None`), as the library's JSON array; nothing is claimed or
    /// changed. 1 server command: for tooling.
    pub fn peek_json(&self, group: Option<&str>, max_events: usize) -> Result<String> {
        let group = group.map(|g| c_string("mq_peek_json", "group_id", g)).transpose()?;
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is NULL or a C string valid for
        // the call; json and err point to locals.
        let status = unsafe { sys::mq_peek_json(self.ptr(), opt_ptr(&group), max_events, &mut json, &mut err) };
        take_text("mq_peek_json", status, &err, json)
    }

    /// [`peek_json`](Queue::peek_json), parsed: the events with their bytes.
    pub fn peek(&self, group: Option<&str>, max_events: usize) -> Result<Vec<PeekedEvent>> {
        parse_json("mq_peek_json", &self.peek_json(group, max_events)?)
    }

    /// The dead letters, oldest first, up to `max_events`, as the library's JSON array
    /// (with `attempts` and `dead_at`). 1 server command.
    pub fn dead_list_json(&self, max_events: usize) -> Result<String> {
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; json and err point to locals.
        let status = unsafe { sys::mq_dead_list_json(self.ptr(), max_events, &mut json, &mut err) };
        take_text("mq_dead_list_json", status, &err, json)
    }

    /// [`dead_list_json`](Queue::dead_list_json), parsed.
    pub fn dead_list(&self, max_events: usize) -> Result<Vec<PeekedEvent>> {
        parse_json("mq_dead_list_json", &self.dead_list_json(max_events)?)
    }

    /// The queue's state, parsed. 3 server commands that read whole collections: for
    /// monitoring, not for every event.
    pub fn stats(&self) -> Result<Stats> {
        parse_json("mq_stats_json", &self.stats_json()?)
    }

    /// Re-creates the lock of every group that has events but no lock (a publisher
    /// that died between its two writes); returns how many. For start-up and a
    /// periodic sweep.
    pub fn repair(&self) -> Result<i64> {
        self.count_call(sys::mq_repair)
    }

    /// Sets the period of the automatic repair: when a claim finds nothing due and this
    /// long has passed since this handle's last automatic repair, it runs
    /// [`repair`](Queue::repair) first. Default 60 s; `Duration::ZERO` turns it off.
    /// Per handle (shared by its clones).
    pub fn set_repair_interval(&self, interval: Duration) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_repair_interval(self.ptr(), interval.as_secs_f64(), &mut err) };
        check(status, &err)
    }

    /// The automatic repairs this handle ran, and the locks they re-created.
    pub fn repair_counts(&self) -> (u64, u64) {
        let (mut runs, mut fixed) = (0u64, 0u64);
        // SAFETY: the queue is alive for &self; runs and fixed point to locals.
        unsafe { sys::mq_queue_repair_counts(self.ptr(), &mut runs, &mut fixed) };
        (runs, fixed)
    }

    /// Removes a group's events and its lock; its lease holder's ack, nack and extend
    /// get [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost).
    pub fn purge_group(&self, group: &str) -> Result<()> {
        let group = c_string("mq_purge_group", "group_id", group)?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string valid for the call.
        let status = unsafe { sys::mq_purge_group(self.ptr(), group.as_ptr(), &mut err) };
        check(status, &err)
    }

    /// Drops the queue's collections (events, locks, dead letters, counters): for
    /// tests and tooling. The handle stays usable (seqs start at 1 again), but without
    /// the indexes: open the queue again before real use.
    pub fn drop_queue(&self) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_drop(self.ptr(), &mut err) };
        check(status, &err)
    }

    /// The offset of the server's clock to this machine's, in seconds (measured when
    /// the queue was opened).
    pub fn clock_offset(&self) -> f64 {
        // SAFETY: the queue is alive for &self; the call only reads it.
        unsafe { sys::mq_queue_clock_offset(self.ptr()) }
    }

    /// The queue's clock now: server time in seconds since the epoch (or the
    /// [`ManualClock`] given to [`set_clock`](Queue::set_clock)). What
    /// [`publish_at`](Queue::publish_at) and [`Lease::deadline`] are on.
    pub fn now(&self) -> f64 {
        // SAFETY: the queue is alive for &self; the call reads the clock.
        unsafe { sys::mq_queue_now(self.ptr()) }
    }

    /// Runs the queue on `clock` (tests and simulations): [`now`](Queue::now), due
    /// times and lease deadlines then come from it, without the server's offset.
    /// `None` puts the queue back on server time. Applies to this queue and its clones
    /// (they share one C handle).
    ///
    /// The library reads the clock from any thread (a waiting claim's watcher thread
    /// too), and a call in flight may still read a clock just replaced, so the queue
    /// keeps (a clone of the `Arc` of) every clock it was ever given until it is
    /// dropped: dropping the caller's `ManualClock` while the queue runs on it is safe.
    /// A queue given many distinct clocks keeps them all (a few bytes each); giving the
    /// same clock again keeps nothing more.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_clock", "q")?;
    /// use std::time::Duration;
    /// let clock = mongomq::ManualClock::new(1_000_000_000.0);
    /// queue.set_clock(Some(&clock));
    /// assert_eq!(queue.now(), 1_000_000_000.0);
    /// queue.publish_after("g", b"later", 0, Duration::from_secs(60))?;
    /// assert!(queue.claim(&mongomq::ClaimOptions::new())?.is_none()); // not due yet
    /// clock.advance(Duration::from_secs(61));
    /// assert!(queue.claim(&mongomq::ClaimOptions::new())?.is_some());
    /// queue.set_clock(None); // server time again
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_clock(&self, clock: Option<&ManualClock>) {
        match clock {
            Some(clock) => {
                let ctx = Arc::as_ptr(&clock.cell).cast_mut().cast::<std::ffi::c_void>();
                {
                    // Kept before the library can see it (a poisoned lock only means a
                    // panic elsewhere while pushing: the Vec is still sound).
                    let mut clocks = self.handle.clocks.lock().unwrap_or_else(PoisonError::into_inner);
                    if !clocks.iter().any(|c| Arc::ptr_eq(c, &clock.cell)) {
                        clocks.push(Arc::clone(&clock.cell));
                    }
                }
                // SAFETY: the queue is alive for &self. ctx points to the ClockCell whose
                // Arc the queue now holds in self.handle.clocks, which is only dropped
                // after mq_queue_destroy (QueueHandle's fields outlive its Drop::drop),
                // so manual_clock_now's contract holds for every call the library makes,
                // from any thread, even after this clock is replaced. ClockCell is Sync.
                unsafe { sys::mq_queue_set_clock(self.ptr(), Some(manual_clock_now), ctx) }
            }
            // SAFETY: the queue is alive for &self; a NULL clock restores server time.
            None => unsafe { sys::mq_queue_set_clock(self.ptr(), None, ptr::null_mut()) },
        }
    }

    /// Drops this handle; the C queue is destroyed when no clone is left (and the
    /// client's pool when no queue and no client is left). The same as `drop(queue)`;
    /// using the queue after it does not compile:
    ///
    /// ```compile_fail,E0382
    /// # let uri = std::env::var("MONGOMQ_TEST_URI").unwrap();
    /// let queue = mongomq::Client::connect(&uri).unwrap().queue("db", "q").unwrap();
    /// queue.close();
    /// queue.publish("g", b"x", 0); // error[E0382]: use of moved value: `queue`
    /// ```
    pub fn close(self) {}
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("name", &self.handle.name).finish_non_exhaustive()
    }
}
