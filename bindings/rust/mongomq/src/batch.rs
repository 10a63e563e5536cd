//! `Batch`: events published together (`mq_batch`), each with its own options, and
//! what its last publish made of each (`mq_batch_outcome`).

use std::ptr::{self, NonNull};
use std::sync::{Mutex, PoisonError};

use mongomq_sys as sys;

use crate::dedup::Published;
use crate::error::{c_string, check, Error, Result};
use crate::options::PublishOptions;
use crate::queue::Queue;

/// Events to publish together with [`Queue::publish_batch`](crate::Queue::publish_batch):
/// 3 server commands for the whole batch. Each [`add`](Batch::add) checks its
/// arguments as a publish would (nothing is sent) and copies the bytes.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
/// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_batch", "q")?;
/// use mongomq::PublishOptions;
/// use std::time::Duration;
/// let mut batch = mongomq::Batch::new()?;
/// for i in 0..10 {
///     batch.add(if i % 2 == 0 { "even" } else { "odd" }, format!("{i}"), &PublishOptions::default())?;
/// }
/// // A batch event may be scheduled too: a group it creates waits for it.
/// batch.add("later", "x", &PublishOptions::new().not_before(queue.now() + Duration::from_secs(60)))?;
/// let first_seq = queue.publish_batch(&batch)?; // seqs first_seq ..= first_seq + 10, in add order
/// # assert_eq!(first_seq, 1);
/// # queue.drop_queue()?;
/// # Ok(())
/// # }
/// ```
///
/// With [dedup keys](PublishOptions::dedup_key), some events may be duplicates (not
/// added): [`Queue::publish_batch_with`](crate::Queue::publish_batch_with) says, per
/// event, what became of it.
pub struct Batch {
    ptr: NonNull<sys::mq_batch>,
    /// Held across each publish of the batch and the reading of its outcome: the C
    /// batch keeps the outcome of its last publish, so a publish writes the batch.
    publishing: Mutex<()>,
    /// Each event as added (feature `opentelemetry`): a traced publish adds its trace
    /// context to each event's attributes, which the C batch cannot change, so it
    /// publishes a copy made from these.
    #[cfg(feature = "opentelemetry")]
    events: Vec<(String, Vec<u8>, PublishOptions)>,
}

// SAFETY: an mq_batch is plain memory owned by this value; the header only forbids
// using it from several threads while it is being filled (add takes &mut self) or
// published (each publish holds `publishing`).
unsafe impl Send for Batch {}
// SAFETY: through &self the batch is counted (a read, which the header allows from
// several threads at once) or published: a publish writes the batch's outcome, and
// every publish and the reading of its outcome run under `publishing`, one at a time.
unsafe impl Sync for Batch {}

impl Batch {
    /// An empty batch.
    pub fn new() -> Result<Batch> {
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: out and err point to locals.
        let status = unsafe { sys::mq_batch_new(&mut out, &mut err) };
        check(status, &err)?;
        let ptr =
            NonNull::new(out).ok_or_else(|| Error::internal("mq_batch_new returned MQ_OK and no batch".into()))?;
        Ok(Batch {
            ptr,
            publishing: Mutex::new(()),
            #[cfg(feature = "opentelemetry")]
            events: Vec::new(),
        })
    }

    /// Adds an event for `group` (at most 10,000 per batch) with its options: the
    /// priority (0..4, counts only for a group the publish creates) and the schedule,
    /// as for [`Queue::publish`](crate::Queue::publish), a
    /// [dedup key](PublishOptions::dedup_key) and [attributes](PublishOptions::attr)
    /// (each event of a batch has its own). Checked as a publish would be (nothing is
    /// sent); the bytes, the key and the attributes are copied.
    ///
    /// With the feature `opentelemetry` the batch also keeps a copy of each event: a
    /// publish on a queue with telemetry publishes a copy of the batch with the trace
    /// context in each event's attributes.
    pub fn add(&mut self, group: &str, event: impl AsRef<[u8]>, opts: &PublishOptions) -> Result<()> {
        let event = event.as_ref();
        self.add_c(group, event, opts)?;
        #[cfg(feature = "opentelemetry")]
        self.events.push((group.to_string(), event.to_vec(), opts.clone()));
        Ok(())
    }

    /// `mq_batch_add_with`.
    fn add_c(&mut self, group: &str, event: &[u8], opts: &PublishOptions) -> Result<()> {
        let c_group = c_string("mq_batch_add_with", "group_id", group)?;
        let c_opts = opts.to_c("mq_batch_add_with")?;
        let mut err = sys::mq_error::new();
        // SAFETY: the batch is ours and exclusively borrowed; c_group is a C string,
        // event a slice of event.len() bytes and c_opts a filled mq_publish_opts whose
        // dedup_key and attrs are NULL or point into what c_opts owns, all valid for
        // the call (the batch copies what it keeps); err points to a local.
        let status = unsafe {
            sys::mq_batch_add_with(
                self.ptr.as_ptr(),
                c_group.as_ptr(),
                event.as_ptr().cast(),
                event.len(),
                c_opts.as_ptr(),
                &mut err,
            )
        };
        check(status, &err)
    }

    /// A copy of the batch with `change` applied to each event's attributes (feature
    /// `opentelemetry`: the trace context of a traced publish).
    #[cfg(feature = "opentelemetry")]
    pub(crate) fn with_attrs(&self, change: impl Fn(&mut Vec<(String, String)>)) -> Result<Batch> {
        let mut copy = Batch::new()?;
        for (group, event, opts) in &self.events {
            let mut opts = opts.clone();
            change(&mut opts.attrs);
            copy.add_c(group, event, &opts)?;
        }
        Ok(copy)
    }

    /// Publishes the batch on `queue` (`mq_publish_batch`); returns the first seq and,
    /// with `outcomes`, what became of each event, in add order (`mq_batch_outcome`).
    /// `MQ_DUPLICATE` (some event's key was taken) is a success. Untraced: the queue's
    /// publish_batch goes through src/traced.rs.
    pub(crate) fn publish_c(&self, queue: &Queue, outcomes: bool) -> Result<(i64, Vec<Published>)> {
        // A poisoned lock only means a panic elsewhere while holding it, between C
        // calls that each leave the batch whole.
        let _publishing = self.publishing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut first = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue and the batch are alive for the call (borrowed), and no
        // other publish of the batch runs (`publishing`); first and err point to locals.
        let status = unsafe { sys::mq_publish_batch(queue.ptr(), self.ptr.as_ptr(), &mut first, &mut err) };
        let first = Published::from_c(status, first, &err)?.seq;
        if !outcomes {
            return Ok((first, Vec::new()));
        }
        let events = (0..self.len())
            .map(|i| {
                let mut seq = 0i64;
                let mut err = sys::mq_error::new();
                // SAFETY: the batch was just published and is not changed or published
                // again while `publishing` is held (add takes &mut self); seq and err
                // point to locals.
                let status = unsafe { sys::mq_batch_outcome(self.ptr.as_ptr(), i, &mut seq, &mut err) };
                Published::from_c(status, seq, &err)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((first, events))
    }

    /// Number of events added.
    pub fn len(&self) -> usize {
        // SAFETY: the batch is alive for &self; the call only reads it.
        unsafe { sys::mq_batch_count(self.ptr.as_ptr()) }
    }

    /// True when nothing was added (publishing it is an argument error).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: the batch came from mq_batch_new and is destroyed exactly once, here.
        unsafe { sys::mq_batch_destroy(self.ptr.as_ptr()) }
    }
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch").field("len", &self.len()).finish()
    }
}
