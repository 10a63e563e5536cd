//! `Batch`: events published together (`mq_batch`), each with its own options.

use std::ptr::{self, NonNull};

use mongomq_sys as sys;

use crate::error::{c_string, check, Error, Result};
use crate::options::PublishOptions;

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
pub struct Batch {
    ptr: NonNull<sys::mq_batch>,
}

// SAFETY: an mq_batch is plain memory owned by this value; the header only forbids
// using it from several threads while it is being filled, and filling takes &mut self.
unsafe impl Send for Batch {}
// SAFETY: through &self the batch is only read (count, publish), which the header
// allows from several threads at once.
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
        Ok(Batch { ptr })
    }

    /// Adds an event for `group` (at most 10,000 per batch) with its options: the
    /// priority (0..4, counts only for a group the publish creates) and the schedule,
    /// as for [`Queue::publish`](crate::Queue::publish). Checked as a publish would be
    /// (nothing is sent); the bytes are copied.
    pub fn add(&mut self, group: &str, event: impl AsRef<[u8]>, opts: &PublishOptions) -> Result<()> {
        let group = c_string("mq_batch_add_with", "group_id", group)?;
        let event = event.as_ref();
        let c_opts = opts.to_c();
        let mut err = sys::mq_error::new();
        // SAFETY: the batch is ours and exclusively borrowed; group is a C string,
        // event a slice of event.len() bytes and c_opts a filled mq_publish_opts, all
        // valid for the call (the batch copies what it keeps); err points to a local.
        let status = unsafe {
            sys::mq_batch_add_with(
                self.ptr.as_ptr(),
                group.as_ptr(),
                event.as_ptr().cast(),
                event.len(),
                &c_opts,
                &mut err,
            )
        };
        check(status, &err)
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

    pub(crate) fn as_ptr(&self) -> *const sys::mq_batch {
        self.ptr.as_ptr()
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
