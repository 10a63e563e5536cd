//! `CancelToken`: cancels the waiting claims given it (`mq_cancel`), and nothing else.

use std::ptr::{self, NonNull};
use std::sync::Arc;

use mongomq_sys as sys;

use crate::error::{check, Error, Result};

struct CancelInner(NonNull<sys::mq_cancel>);

// SAFETY: the header: mq_cancel_trigger is thread-safe (and async-signal-safe),
// mq_cancel_triggered only reads, and one mq_cancel may be shared by several calls at
// once; mq_cancel_reset is never called (a token is cancelled for good), and destroy
// happens in Drop once no clone — and so no claim using it — is left.
unsafe impl Send for CancelInner {}
// SAFETY: as above.
unsafe impl Sync for CancelInner {}

impl Drop for CancelInner {
    fn drop(&mut self) {
        // SAFETY: created by mq_cancel_new, destroyed exactly once when the last clone
        // goes; a claim using it holds a clone (through its ClaimOptions borrow).
        unsafe { sys::mq_cancel_destroy(self.0.as_ptr()) }
    }
}

/// Cancels waiting claims from another thread, leaving the queue's other waiters and
/// later calls alone (`mq_cancel`). Give it to claims with
/// [`ClaimOptions::cancel`](crate::ClaimOptions::cancel), keep a clone, and call
/// [`cancel`](CancelToken::cancel): each claim given it returns an error of kind
/// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) (within about 10 ms while it
/// sleeps). A lease a claim already holds is returned instead: a cancel never loses a
/// lease.
///
/// A cancelled token stays cancelled: a claim given it later returns `Cancelled` at
/// once. Make a new one for the next call. Cheap to clone, `Send + Sync`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
/// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_cancel", "q")?;
/// use std::time::Duration;
/// let token = mongomq::CancelToken::new()?;
/// let opts = mongomq::ClaimOptions::new().wait(Duration::from_secs(30)).cancel(&token);
/// let remote = token.clone();
/// std::thread::spawn(move || {
///     std::thread::sleep(Duration::from_millis(100));
///     remote.cancel();
/// });
/// let err = queue.claim(&opts).unwrap_err();
/// assert_eq!(err.kind(), mongomq::ErrorKind::Cancelled);
/// # queue.drop_queue()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Result<CancelToken> {
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: out and err point to locals.
        let status = unsafe { sys::mq_cancel_new(&mut out, &mut err) };
        check(status, &err)?;
        let ptr =
            NonNull::new(out).ok_or_else(|| Error::internal("mq_cancel_new returned MQ_OK and no cancel".into()))?;
        Ok(CancelToken { inner: Arc::new(CancelInner(ptr)) })
    }

    /// Cancels the claims waiting with this token, and every later one given it.
    pub fn cancel(&self) {
        // SAFETY: the cancel is alive (we hold an Arc); trigger is thread-safe.
        unsafe { sys::mq_cancel_trigger(self.inner.0.as_ptr()) }
    }

    /// True once [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        // SAFETY: the cancel is alive (we hold an Arc); the call only reads a flag.
        unsafe { sys::mq_cancel_triggered(self.inner.0.as_ptr()) != 0 }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::mq_cancel {
        self.inner.0.as_ptr()
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}
