//! `ManualClock`: a clock for tests and simulations that a queue reads instead of the
//! server's, and the C clock function that reads it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::time::{from_epoch, to_epoch};

/// A clock for tests and simulations: a time that only moves when told to
/// ([`set`](ManualClock::set), [`advance`](ManualClock::advance)). Give it to a queue
/// with [`Queue::set_clock`](crate::Queue::set_clock): the queue then reads its time
/// (due times of [`not_before`](crate::PublishOptions::not_before), lease deadlines,
/// [`now`](crate::Queue::now)) from this clock instead of the server's.
///
/// `Clone + Send + Sync`: the clones share one time (an `Arc` around an atomic `f64` of
/// epoch seconds, what the library reads: so it keeps about a microsecond's precision),
/// so a test keeps a clone and advances it while queues on other threads read it.
/// Dropping every clone while a queue still runs on it is safe: the queue keeps the
/// clock until it is dropped.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let start = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
/// let clock = mongomq::ManualClock::new(start);
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(clock.now(), start + Duration::from_millis(1500));
/// clock.set(UNIX_EPOCH + Duration::from_secs(42));
/// assert_eq!(clock.clone().now(), UNIX_EPOCH + Duration::from_secs(42));
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
    /// A clock that reads `start` until it is set or advanced.
    pub fn new(start: SystemTime) -> ManualClock {
        ManualClock { cell: Arc::new(ClockCell { bits: AtomicU64::new(to_epoch(start).to_bits()) }) }
    }

    /// The clock's time.
    pub fn now(&self) -> SystemTime {
        from_epoch(self.cell.now())
    }

    /// Sets the time, for this clock and its clones.
    pub fn set(&self, time: SystemTime) {
        self.cell.bits.store(to_epoch(time).to_bits(), Ordering::SeqCst);
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
