use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A clock for tests and simulations: seconds since the epoch that only move when told
/// to ([`set`](ManualClock::set), [`advance`](ManualClock::advance)). Give it to a queue
/// with [`Queue::set_clock`](crate::Queue::set_clock): the queue then reads its time
/// (due times of [`publish_at`](crate::Queue::publish_at), lease deadlines,
/// [`now`](crate::Queue::now)) from this clock instead of the server's.
///
/// `Clone + Send + Sync`: the clones share one time (an `Arc` around an atomic `f64`),
/// so a test keeps a clone and advances it while queues on other threads read it.
/// Dropping every clone while a queue still runs on it is safe: the queue keeps the
/// clock until it is dropped.
///
/// ```
/// use std::time::Duration;
/// let clock = mongomq::ManualClock::new(1_000_000_000.0);
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(clock.now(), 1_000_000_001.5);
/// clock.set(42.0);
/// assert_eq!(clock.clone().now(), 42.0);
/// ```
#[derive(Clone)]
pub struct ManualClock {
    pub(crate) cell: Arc<ClockCell>,
}

/// The time of a [`ManualClock`] and its clones: the bits of an `f64`. What the queue
/// keeps, and what its C clock's `ctx` points to.
pub(crate) struct ClockCell {
    bits: AtomicU64,
}

impl ClockCell {
    fn now(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::SeqCst))
    }
}

impl ManualClock {
    /// A clock that reads `start_epoch_s` (seconds since the epoch) until it is set or
    /// advanced.
    pub fn new(start_epoch_s: f64) -> ManualClock {
        ManualClock { cell: Arc::new(ClockCell { bits: AtomicU64::new(start_epoch_s.to_bits()) }) }
    }

    /// The clock's time, seconds since the epoch.
    pub fn now(&self) -> f64 {
        self.cell.now()
    }

    /// Sets the time (seconds since the epoch), for this clock and its clones.
    pub fn set(&self, epoch_s: f64) {
        self.cell.bits.store(epoch_s.to_bits(), Ordering::SeqCst);
    }

    /// Moves the time forward by `by`, for this clock and its clones (atomic: advances
    /// from several threads add up).
    pub fn advance(&self, by: Duration) {
        let by = by.as_secs_f64();
        // The closure always returns Some: fetch_update cannot fail.
        let _ = self
            .cell
            .bits
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |bits| Some((f64::from_bits(bits) + by).to_bits()));
    }
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock").field("now", &self.now()).finish()
    }
}

/// The C clock of a queue given a [`ManualClock`] (`mq_queue_set_clock`'s `clock`):
/// the library calls it from any thread, a claim's watcher thread included.
///
/// # Safety
///
/// `ctx` must be `Arc::as_ptr` of a [`ClockCell`] that is still alive. `Queue::set_clock`
/// guarantees it: the queue keeps a clone of the `Arc` of every clock it was given
/// until after `mq_queue_destroy`.
pub(crate) unsafe extern "C" fn manual_clock_now(ctx: *mut c_void) -> f64 {
    // SAFETY: by this function's contract, ctx points to a live ClockCell (the queue
    // holds an Arc to it until the C queue is destroyed). Only a shared reference is
    // made, and ClockCell is Sync (an atomic), so reads from any number of threads at
    // once are fine.
    let cell = unsafe { &*ctx.cast_const().cast::<ClockCell>() };
    cell.now()
}
