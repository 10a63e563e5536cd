//! `Queue`: the C queue handle and the calls of one event's life (publish, claim, ack,
//! nack, unclaim, extend), waiting and interrupting, and the queue's clock. The admin
//! and inspection calls are in admin.rs, the group listing and pausing in groups.rs,
//! the telemetry's setter (feature `opentelemetry`) in otel/mod.rs.

use std::ffi::{c_char, CString};
use std::ptr::{self, NonNull};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use mongomq_sys as sys;

use crate::batch::Batch;
use crate::client::ClientHandle;
use crate::clock::{manual_clock_now, ClockCell, ManualClock};
use crate::dedup::Published;
use crate::error::{c_string, check, Error, Result};
use crate::lease::Lease;
use crate::options::{ClaimOptions, PublishOptions};
use crate::partitions::{c_partitions, QueueOptions};
use crate::time::from_epoch;
use crate::traced;

struct QueueHandle {
    ptr: NonNull<sys::mq_queue>,
    name: String,
    /// The queue's number of partitions, fixed when it was opened (0.8.0).
    partitions: usize,
    // Every clock given to set_clock, kept until the queue is dropped: fields are
    // dropped after Drop::drop, so after mq_queue_destroy, when no call of the queue
    // can read one any more (a call in flight may read a clock that was replaced).
    clocks: Mutex<Vec<Arc<ClockCell>>>,
    /// What the queue records its spans and metrics with (`set_telemetry`), if any.
    #[cfg(feature = "opentelemetry")]
    telemetry: std::sync::RwLock<Option<crate::otel::Telemetry>>,
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

/// A C string for an optional argument: NULL when absent.
pub(crate) fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |s| s.as_ptr())
}

impl Queue {
    pub(crate) fn open(client: Arc<ClientHandle>, db: &str, prefix: &str, opts: &QueueOptions) -> Result<Queue> {
        const FUNCTION: &str = "mq_queue_new_with";
        let c_db = c_string(FUNCTION, "db_name", db)?;
        let c_prefix = c_string(FUNCTION, "prefix", prefix)?;
        let c_opts = opts.to_c(FUNCTION)?;
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the client is alive (we hold its Arc, and keep it in the handle);
        // db and prefix are C strings and c_opts a filled mq_queue_opts, valid for the
        // call; out and err point to locals.
        let status = unsafe {
            sys::mq_queue_new_with(client.as_ptr(), c_db.as_ptr(), c_prefix.as_ptr(), &c_opts, &mut out, &mut err)
        };
        check(status, &err)?;
        let ptr =
            NonNull::new(out).ok_or_else(|| Error::internal("mq_queue_new_with returned MQ_OK and no queue".into()))?;
        // SAFETY: the queue was just opened and is alive; the call only reads it.
        let partitions = usize::try_from(unsafe { sys::mq_queue_partitions(ptr.as_ptr()) }).unwrap_or(1);
        Ok(Queue {
            handle: Arc::new(QueueHandle {
                ptr,
                name: format!("{db}.{prefix}"),
                partitions,
                clocks: Mutex::new(Vec::new()),
                #[cfg(feature = "opentelemetry")]
                telemetry: std::sync::RwLock::new(None),
                _client: client,
            }),
        })
    }

    pub(crate) fn ptr(&self) -> *mut sys::mq_queue {
        self.handle.ptr.as_ptr()
    }

    #[cfg(feature = "opentelemetry")]
    pub(crate) fn telemetry_cell(&self) -> &std::sync::RwLock<Option<crate::otel::Telemetry>> {
        &self.handle.telemetry
    }

    /// `"db.prefix"`.
    pub fn name(&self) -> &str {
        &self.handle.name
    }

    /// The queue's number of partitions (0.8.0): 1 unless it was opened with more
    /// ([`QueueOptions::partitions`]); fixed when it was opened.
    pub fn partitions(&self) -> usize {
        self.handle.partitions
    }

    /// Appends `event` (any bytes, empty included) to the tail of `group` and returns
    /// its sequence number; `opts` gives its priority, schedule, dedup key and
    /// attributes ([`PublishOptions`]: `&PublishOptions::default()` for none). 3 server
    /// commands. With a [`dedup_key`](PublishOptions::dedup_key) that an event of the
    /// queue holds, nothing is added and the seq returned is that event's;
    /// [`publish_with`](Queue::publish_with) also says whether it was a duplicate.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_publish", "q")?;
    /// use mongomq::PublishOptions;
    /// use std::time::Duration;
    /// queue.publish("customer-17", b"now", &PublishOptions::default())?;
    /// queue.publish("customer-42", b"urgent", &PublishOptions::new().priority(4))?;
    /// let in_a_minute = queue.now() + Duration::from_secs(60); // on the queue's clock
    /// queue.publish("customer-99", b"later", &PublishOptions::new().not_before(in_a_minute))?;
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn publish(&self, group: &str, event: impl AsRef<[u8]>, opts: &PublishOptions) -> Result<i64> {
        self.publish_with(group, event, opts).map(|p| p.seq)
    }

    /// [`publish`](Queue::publish), returning whether the publish was a duplicate as
    /// well as the seq ([`Published`]). With a [`dedup_key`](PublishOptions::dedup_key)
    /// that an event of the queue holds (see there: while it is queued, and for the
    /// [window](Queue::set_dedup_window) after its publish), nothing is added and the
    /// result is `Published { seq: <that event's seq>, duplicate: true }`; a duplicate
    /// is never an error. Without a key it is `publish`, and `duplicate` is false. 3
    /// server commands (1 more for a duplicate). A new entry beside `publish`, which
    /// keeps its `Result<i64>`.
    ///
    /// After an error of kind [`Connect`](crate::ErrorKind::Connect) the event may or
    /// may not have been added; retrying with the same key leaves exactly one event
    /// (the retry is then a duplicate, or adds it).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let db = format!("mqt_rust_doc_publish_with_{}", std::process::id()); // keys of no earlier run
    /// # let queue = mongomq::Client::connect(&uri)?.queue(&db, "q")?;
    /// use mongomq::{PublishOptions, Published};
    /// let once = PublishOptions::new().dedup_key("order-17-charge");
    /// let first = queue.publish_with("customer-17", b"charge", &once)?;
    /// assert!(!first.duplicate);
    /// // The same publish again (a retry after a lost reply, another process): nothing
    /// // is added, and the seq is the first one's.
    /// let again = queue.publish_with("customer-17", b"charge", &once)?;
    /// assert_eq!(again, Published { seq: first.seq, duplicate: true });
    /// assert_eq!(queue.stats()?.messages, 1);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn publish_with(&self, group: &str, event: impl AsRef<[u8]>, opts: &PublishOptions) -> Result<Published> {
        let event = event.as_ref();
        traced::publish(self, group, opts, |opts| self.publish_c(group, event, opts))
    }

    /// `mq_publish_with`.
    fn publish_c(&self, group: &str, event: &[u8], opts: &PublishOptions) -> Result<Published> {
        let group = c_string("mq_publish_with", "group_id", group)?;
        let c_opts = opts.to_c("mq_publish_with")?;
        let mut seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string, event a slice of
        // event.len() bytes and c_opts a filled mq_publish_opts whose dedup_key and
        // attrs are NULL or point into what c_opts owns, all valid for the call (the
        // library copies what it keeps); seq and err point to locals.
        let status = unsafe {
            sys::mq_publish_with(
                self.ptr(),
                group.as_ptr(),
                event.as_ptr().cast(),
                event.len(),
                c_opts.as_ptr(),
                &mut seq,
                &mut err,
            )
        };
        Published::from_c(status, seq, &err)
    }

    /// Publishes every event of `batch` in 3 server commands; returns the first seq
    /// (the others follow in add order). An empty batch is an argument error. The
    /// batch may be published again (new seqs). With
    /// [dedup keys](PublishOptions::dedup_key), an event whose key was taken is not
    /// added (1 command more) and its seq is not first + i:
    /// [`publish_batch_with`](Queue::publish_batch_with) says what became of each.
    pub fn publish_batch(&self, batch: &Batch) -> Result<i64> {
        traced::publish_batch(self, batch, false).map(|(first, _)| first)
    }

    /// [`publish_batch`](Queue::publish_batch), returning what became of each event, in
    /// add order: added (`duplicate` false, its seq), or a duplicate (its key was
    /// taken by an earlier publish, or by an earlier event of this batch: nothing was
    /// added, `seq` is that event's). 3 server commands, 1 more when some key was
    /// taken. A new entry beside `publish_batch`, which keeps its `Result<i64>`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let db = format!("mqt_rust_doc_batch_with_{}", std::process::id()); // keys of no earlier run
    /// # let queue = mongomq::Client::connect(&uri)?.queue(&db, "q")?;
    /// use mongomq::{Batch, PublishOptions};
    /// let mut batch = Batch::new()?;
    /// batch.add("g", "a", &PublishOptions::new().dedup_key("a"))?;
    /// batch.add("g", "again", &PublishOptions::new().dedup_key("a"))?;
    /// let outcome = queue.publish_batch_with(&batch)?;
    /// assert_eq!((outcome[0].duplicate, outcome[1].duplicate), (false, true));
    /// assert_eq!(outcome[1].seq, outcome[0].seq); // the first event holds the key
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn publish_batch_with(&self, batch: &Batch) -> Result<Vec<Published>> {
        traced::publish_batch(self, batch, true).map(|(_, outcomes)| outcomes)
    }

    /// Leases the head of the due group that waited longest (priority >= the floor),
    /// or up to [`max_events`](ClaimOptions::max_events) consecutive events of it; on
    /// a partitioned queue, of the partition whose turn it is (each claim starts at
    /// the next), among the options' [`partitions`](ClaimOptions::partitions) if
    /// given.
    /// `Ok(None)` when nothing is due (after waiting up to
    /// [`wait`](ClaimOptions::wait), if set). A waiting claim ends with
    /// [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted) after
    /// [`interrupt`](Queue::interrupt), or
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) by the options'
    /// [`CancelToken`](crate::CancelToken).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_claim", "q")?;
    /// use std::time::Duration;
    /// queue.publish("g", b"one", &mongomq::PublishOptions::default())?;
    /// let opts = mongomq::ClaimOptions::new().visibility(Duration::from_secs(10)).max_events(5);
    /// if let Some(lease) = queue.claim(&opts)? {
    ///     for (seq, event) in lease.events() {
    ///         println!("{seq}: {event:?}");
    ///     }
    ///     queue.ack(&lease)?;
    /// }
    /// assert!(queue.claim(&opts)?.is_none());
    /// assert!(queue.claim(&opts.wait(Duration::from_millis(200)))?.is_none()); // waited 200 ms
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn claim(&self, opts: &ClaimOptions) -> Result<Option<Lease>> {
        let worker = opts.worker_id.as_deref().map(|w| c_string("mq_claim_with", "worker_id", w)).transpose()?;
        let partitions = c_partitions("mq_claim_with", &opts.partitions)?;
        let mut c_opts = sys::MQ_CLAIM_OPTS_INIT;
        c_opts.worker_id = opt_ptr(&worker);
        c_opts.visibility_s = opts.visibility.as_secs_f64();
        c_opts.min_priority = opts.min_priority;
        c_opts.max_events = opts.max_events;
        c_opts.timeout_s = opts.wait.as_secs_f64();
        c_opts.cancel = opts.cancel.as_ref().map_or(ptr::null_mut(), |c| c.as_ptr());
        c_opts.partitions = if partitions.is_empty() { ptr::null() } else { partitions.as_ptr() };
        c_opts.partition_count = partitions.len();
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; c_opts is a filled mq_claim_opts whose
        // worker_id is NULL or the C string `worker` (alive until the end of this
        // function), whose cancel is NULL or the mq_cancel of the options'
        // CancelToken, kept alive by `opts`, borrowed for the whole call, and whose
        // partitions are NULL or the `partitions` array of partition_count ints (alive
        // until the end of this function; the library copies them); out and err point
        // to locals.
        let status = unsafe { sys::mq_claim_with(self.ptr(), &c_opts, &mut out, &mut err) };
        match status {
            sys::MQ_EMPTY => Ok(None),
            sys::MQ_OK => Lease::from_raw(out, "mq_claim_with").map(Some),
            _ => Err(Error::from_c(status, &err)),
        }
    }

    /// Removes the leased event(s) and releases the group. An error of kind
    /// [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost) when the lease expired and
    /// another worker took the group (the events are removed all the same).
    pub fn ack(&self, lease: &Lease) -> Result<()> {
        traced::measured(self, "ack", || {
            let mut err = sys::mq_error::new();
            // SAFETY: the queue and the lease are alive for the call (borrowed); the
            // lease is only read; err points to a local.
            let status = unsafe { sys::mq_ack(self.ptr(), lease.as_ptr(), &mut err) };
            check(status, &err)
        })
    }

    /// Gives the event(s) back: claimable again now (`Duration::ZERO`, attempts + 1),
    /// or after `delay` (the group stays held until then).
    pub fn nack(&self, lease: &Lease, delay: Duration) -> Result<()> {
        traced::measured(self, "nack", || {
            let mut err = sys::mq_error::new();
            // SAFETY: as in ack.
            let status = unsafe { sys::mq_nack(self.ptr(), lease.as_ptr(), delay.as_secs_f64(), &mut err) };
            check(status, &err)
        })
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

    /// The offset of the server's clock to this machine's, in seconds (measured when
    /// the queue was opened). An `f64`, not a `Duration`: it is signed.
    pub fn clock_offset(&self) -> f64 {
        // SAFETY: the queue is alive for &self; the call only reads it.
        unsafe { sys::mq_queue_clock_offset(self.ptr()) }
    }

    /// The queue's clock now: server time (or the [`ManualClock`] given to
    /// [`set_clock`](Queue::set_clock)). What
    /// [`PublishOptions::not_before`] and [`Lease::deadline`] are on.
    pub fn now(&self) -> SystemTime {
        // SAFETY: the queue is alive for &self; the call reads the clock.
        from_epoch(unsafe { sys::mq_queue_now(self.ptr()) })
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
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// let start = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    /// let clock = mongomq::ManualClock::new(start);
    /// queue.set_clock(Some(&clock));
    /// assert_eq!(queue.now(), start);
    /// let later = mongomq::PublishOptions::new().not_before(start + Duration::from_secs(60));
    /// queue.publish("g", b"later", &later)?;
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
    /// queue.publish("g", b"x", &mongomq::PublishOptions::default()); // error[E0382]: use of moved value: `queue`
    /// ```
    pub fn close(self) {}
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("name", &self.handle.name).finish_non_exhaustive()
    }
}
