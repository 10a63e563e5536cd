//! Partitioned queues (0.8.0): the options of [`Client::queue_with`](crate::Client::queue_with)
//! (`mq_queue_opts`), [`group_partition`] (`mq_group_partition`), and a claim's
//! partitions as the C API takes them. ([`Queue::partitions`](crate::Queue::partitions)
//! is in queue.rs, [`Lease::partition`](crate::Lease::partition) in lease.rs.)

use std::ffi::c_int;

use mongomq_sys as sys;

use crate::error::{c_string, Error, Result};

/// How [`Client::queue_with`](crate::Client::queue_with) opens a queue: a builder with
/// the library's defaults ([`Client::queue`](crate::Client::queue) is these).
///
/// | option | default |
/// |---|---|
/// | [`partitions`](QueueOptions::partitions) | 1 |
///
/// A queue of 4 partitions, a claim and a worker that take from some of them only, and
/// the queue refused with another number (README.md, "Partitioned queues"):
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let client = mongomq::Client::connect(&std::env::var("MONGOMQ_TEST_URI")?)?;
/// # let db = &format!("mqt_rust_doc_partitions_{}", std::process::id());
/// use std::time::Duration;
///
/// use mongomq::{group_partition, ClaimOptions, PublishOptions, QueueOptions, WorkerOptions};
///
/// let queue = client.queue_with(db, "orders", &QueueOptions::new().partitions(4))?;
/// assert_eq!(queue.partitions(), 4);
///
/// let k = group_partition("customer-17", queue.partitions())?; // 1: the same in every language
/// for group in ["customer-17", "b"] {                          // b is in partition 0
///     queue.publish(group, r#"{"order": 1}"#, &PublishOptions::default())?;
/// }
/// // A claim (or a worker) may take from some partitions only: here customer-17's.
/// let opts = ClaimOptions::new().partitions([k]).wait(Duration::from_secs(5));
/// let lease = queue.claim(&opts)?.expect("customer-17's event");
/// assert_eq!((lease.group(), lease.partition()), ("customer-17", 1));
/// queue.ack(&lease)?;
///
/// let opts = WorkerOptions::new().partitions([0]).idle_timeout(Duration::from_millis(500));
/// queue.work(opts, |lease| {
///     println!("handled {} in partition {}", lease.group(), lease.partition()); // b, 0
///     Ok::<(), mongomq::BoxError>(())
/// })?; // returns once idle
///
/// let refused = client.queue(db, "orders").unwrap_err(); // one partition, the default
/// assert_eq!(refused.kind(), mongomq::ErrorKind::InvalidArgument);
/// # assert_eq!(queue.stats()?.messages, 0);
/// # queue.drop_queue()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueueOptions {
    pub(crate) partitions: usize,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions { partitions: 1 }
    }
}

impl QueueOptions {
    /// The defaults (see the table above); the same as `QueueOptions::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Spreads the queue over `partitions` partitions (1..=1024,
    /// [`limits::PARTITIONS_MAX`](crate::limits::PARTITIONS_MAX)): a group belongs to
    /// partition [`group_partition`]`(group, partitions)`, and every command of its
    /// publishes, claims and settlements goes to that partition's locks and counters
    /// only, which a sharded cluster can place on a shard of their own (`mongomq
    /// shard-plan` prints the commands). FIFO within a group, one lease per group,
    /// priorities, schedules, batches and dead letters hold as with one partition;
    /// round-robin holds within a partition, and each claim starts at the next
    /// partition in turn. Seqs stay unique and increase within a group, but are no
    /// longer consecutive across groups (partition k's n-th event gets
    /// `(n - 1) * partitions + k + 1`).
    ///
    /// The number is fixed by the first open with it (recorded in the queue): opening
    /// the queue again with another number ([`Client::queue`](crate::Client::queue) is
    /// 1), or a queue of one partition that already holds events with more, is an
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error naming both
    /// (`queue db.prefix has 4 partitions ...`); 0 or more than 1024 is one naming
    /// `partitions`, when the queue is opened.
    pub fn partitions(mut self, partitions: usize) -> Self {
        self.partitions = partitions;
        self
    }

    /// The C options (version MQ_QUEUE_OPTS_VERSION); a count beyond C's `int` is
    /// refused here, anything else by the library.
    pub(crate) fn to_c(self, function: &str) -> Result<sys::mq_queue_opts> {
        let partitions = c_int::try_from(self.partitions).map_err(|_| {
            Error::argument(
                function,
                format_args!("partitions is {}, outside 1..{}", self.partitions, sys::MQ_PARTITIONS_MAX),
            )
        })?;
        Ok(sys::mq_queue_opts { partitions, ..sys::MQ_QUEUE_OPTS_INIT })
    }
}

/// The partition of `group` in a queue of `partitions` partitions: the library's
/// `mq_group_partition` (the 64-bit FNV-1a hash of the group's bytes, mixed by
/// MurmurHash3's fmix64, modulo `partitions`), so the same in every language and on
/// every machine; 0 when `partitions` is 1. `partitions` outside 1..=1024, or a group
/// with a NUL byte, is an [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error.
///
/// ```
/// assert_eq!(mongomq::group_partition("customer-17", 4)?, 1);
/// assert_eq!(mongomq::group_partition("customer-17", 1)?, 0);
/// # Ok::<(), mongomq::Error>(())
/// ```
pub fn group_partition(group: &str, partitions: usize) -> Result<usize> {
    const FUNCTION: &str = "mq_group_partition";
    let c_group = c_string(FUNCTION, "group_id", group)?;
    let out_of_range =
        || Error::argument(FUNCTION, format_args!("partitions is {partitions}, outside 1..{}", sys::MQ_PARTITIONS_MAX));
    let p = c_int::try_from(partitions).map_err(|_| out_of_range())?;
    // SAFETY: c_group is a C string valid for the call; the function only reads it.
    let k = unsafe { sys::mq_group_partition(c_group.as_ptr(), p) };
    usize::try_from(k).map_err(|_| out_of_range())
}

/// A claim's partitions as `mq_claim_opts.partitions` takes them; an index beyond C's
/// `int` is refused here (naming it as the library would), the rest by the library.
pub(crate) fn c_partitions(function: &str, partitions: &[usize]) -> Result<Vec<c_int>> {
    partitions
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            c_int::try_from(k).map_err(|_| {
                Error::argument(
                    function,
                    format_args!("partitions[{i}] is {k}, outside 0..{}", sys::MQ_PARTITIONS_MAX - 1),
                )
            })
        })
        .collect()
}

/// The library's check of a claim's partitions, with its messages, for a worker, which
/// refuses a bad option when it starts (as it does a zero concurrency) rather than at
/// its first claim; a claim leaves it to the library.
pub(crate) fn check_partitions(function: &str, partitions: &[usize], queue_partitions: usize) -> Result<()> {
    if partitions.len() > queue_partitions {
        return Err(Error::argument(
            function,
            format_args!(
                "partition_count is {}, more than the queue's {queue_partitions} partitions",
                partitions.len()
            ),
        ));
    }
    let mut seen = vec![false; queue_partitions];
    for (i, &k) in partitions.iter().enumerate() {
        if k >= queue_partitions {
            return Err(Error::argument(
                function,
                format_args!(
                    "partitions[{i}] is {k}, outside 0..{} (the queue has {queue_partitions} partitions)",
                    queue_partitions - 1
                ),
            ));
        }
        if std::mem::replace(&mut seen[k], true) {
            return Err(Error::argument(function, format_args!("partitions[{i}] is {k}, given twice")));
        }
    }
    Ok(())
}
