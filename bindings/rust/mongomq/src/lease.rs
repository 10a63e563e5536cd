//! `Lease`: one claimed group (its head event, and the events after it for a batch
//! claim, with their attributes), owning its C lease.

use std::ffi::{CStr, CString};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::SystemTime;

use mongomq_sys as sys;

use crate::error::{Error, Result};
use crate::time::from_epoch;

/// One claimed group: its head event (and, for a batch claim, the events after it).
/// Owns its C lease and frees it on drop. A lease is a plain value: it does not borrow
/// its queue, so its reads work after the queue is gone; acking it needs a
/// [`Queue`](crate::Queue) of the same queue (`queue.ack(&lease)`), so a lease can
/// never be acked through a dropped queue. `Send + Sync`.
pub struct Lease {
    inner: Arc<LeaseInner>,
}

/// The C lease, shared only inside the crate (the async calls hand it to a blocking
/// thread); destroyed with the last reference.
struct LeaseInner {
    ptr: NonNull<sys::mq_lease>,
    group: String,
}

// SAFETY: the header: "A single mq_lease may be read from several threads but must
// not be destroyed while another thread uses it". Every method takes &self and only
// reads; the lease is destroyed in Drop, when no reference to it is left.
unsafe impl Send for LeaseInner {}
// SAFETY: as above: shared access only reads.
unsafe impl Sync for LeaseInner {}

impl Drop for LeaseInner {
    fn drop(&mut self) {
        // SAFETY: the lease came from a claim and is destroyed exactly once, here; no
        // reference to it is left.
        unsafe { sys::mq_lease_destroy(self.ptr.as_ptr()) }
    }
}

impl Lease {
    pub(crate) fn from_raw(ptr: *mut sys::mq_lease, function: &str) -> Result<Lease> {
        let ptr =
            NonNull::new(ptr).ok_or_else(|| Error::internal(format!("{function} returned MQ_OK and no lease")))?;
        // SAFETY: a lease from the library always has a group, a NUL-terminated string
        // valid until the lease is destroyed; it is copied here.
        let group = unsafe { CStr::from_ptr(sys::mq_lease_group(ptr.as_ptr())) };
        let group = group.to_string_lossy().into_owned();
        Ok(Lease { inner: Arc::new(LeaseInner { ptr, group }) })
    }

    /// Another reference to the same C lease (for a call on another thread).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn share(&self) -> Lease {
        Lease { inner: Arc::clone(&self.inner) }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::mq_lease {
        self.inner.ptr.as_ptr()
    }

    /// The head event's sequence number.
    pub fn seq(&self) -> i64 {
        // SAFETY: the lease is alive for &self; the call only reads it.
        unsafe { sys::mq_lease_seq(self.as_ptr()) }
    }

    /// The group id (UTF-8).
    pub fn group(&self) -> &str {
        &self.inner.group
    }

    /// The head event, exactly the bytes that were published. Borrowed from the
    /// lease: no copy.
    pub fn event(&self) -> &[u8] {
        self.event_at(0).unwrap_or_default()
    }

    /// How many times this head has been delivered, 1 on the first delivery.
    pub fn attempts(&self) -> u32 {
        // SAFETY: the lease is alive for &self; the call only reads it.
        let attempts = unsafe { sys::mq_lease_attempts(self.as_ptr()) };
        u32::try_from(attempts).unwrap_or(0)
    }

    /// The partition of the lease's group (0.8.0):
    /// [`group_partition`](crate::group_partition)`(group, queue.partitions())`, 0 in a
    /// queue of one partition.
    pub fn partition(&self) -> usize {
        // SAFETY: the lease is alive for &self; the call only reads it.
        usize::try_from(unsafe { sys::mq_lease_partition(self.as_ptr()) }).unwrap_or(0)
    }

    /// The lease's fencing token (what ack, nack, unclaim and extend present to the server).
    pub fn token(&self) -> &str {
        // SAFETY: the token is a NUL-terminated string owned by the lease, valid until
        // it is destroyed, which cannot happen while &self is borrowed.
        let token = unsafe { CStr::from_ptr(sys::mq_lease_token(self.as_ptr())) };
        token.to_str().unwrap_or_default()
    }

    /// When the lease runs out, on the queue's clock
    /// ([`Queue::now`](crate::Queue::now)): the claim's time plus its visibility, moved
    /// by extend and by a nack with a delay.
    pub fn deadline(&self) -> SystemTime {
        // SAFETY: the lease is alive for &self; the call only reads it.
        from_epoch(unsafe { sys::mq_lease_deadline(self.as_ptr()) })
    }

    /// The head event as text: its bytes if they are UTF-8, else the error saying
    /// where they are not (`?` in a handler turns it into the handler's failure).
    /// Borrowed from the lease: no copy.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_text", "q")?;
    /// queue.publish("g", r#"{"order": 1}"#, &mongomq::PublishOptions::default())?;
    /// let lease = queue.claim(&mongomq::ClaimOptions::new())?.expect("a lease");
    /// assert_eq!(lease.text()?, r#"{"order": 1}"#);
    /// let order: serde_json::Value = lease.json()?;
    /// assert_eq!(order["order"], 1);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn text(&self) -> std::result::Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(self.event())
    }

    /// The head event parsed as JSON into any `serde::Deserialize` type (borrowing
    /// from the lease where the type does, as `&str` fields do); the error says what
    /// and where (serde_json's).
    pub fn json<'a, T: serde::Deserialize<'a>>(&'a self) -> std::result::Result<T, serde_json::Error> {
        serde_json::from_slice(self.event())
    }

    /// Number of events in the lease: 1 for [`Queue::claim`](crate::Queue::claim)
    /// without `max_events`, up to `max_events` for a batch claim.
    pub fn count(&self) -> usize {
        // SAFETY: the lease is alive for &self; the call only reads it.
        unsafe { sys::mq_lease_count(self.as_ptr()) }
    }

    /// The sequence number of event `i` (0 is the head), `None` past the end.
    pub fn seq_at(&self, i: usize) -> Option<i64> {
        // SAFETY: the lease is alive for &self; an index out of range returns 0.
        (i < self.count()).then(|| unsafe { sys::mq_lease_seq_at(self.as_ptr(), i) })
    }

    /// Event `i` (0 is the head), `None` past the end. Borrowed from the lease.
    pub fn event_at(&self, i: usize) -> Option<&[u8]> {
        if i >= self.count() {
            return None;
        }
        let mut len = 0usize;
        // SAFETY: the lease is alive for &self and i is in range; len points to a local.
        let data = unsafe { sys::mq_lease_event_at(self.as_ptr(), i, &mut len) };
        if data.is_null() {
            return None;
        }
        // SAFETY: the library hands back len readable bytes at data (a valid non-NULL
        // pointer even for 0 bytes), owned by the lease and unchanged until it is
        // destroyed; the slice borrows &self, so it cannot outlive the lease.
        Some(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })
    }

    /// Every event of the lease as (seq, bytes), head first.
    pub fn events(&self) -> impl ExactSizeIterator<Item = (i64, &[u8])> + '_ {
        (0..self.count()).map(move |i| (self.seq_at(i).unwrap_or_default(), self.event_at(i).unwrap_or_default()))
    }

    /// The head event's attributes (0.7.0) as (key, value), in the order they were
    /// published with ([`PublishOptions::attr`](crate::PublishOptions::attr)); empty
    /// when it has none. Borrowed from the lease, like [`event`](Lease::event): no
    /// copy of the strings (`.to_owned()` what must outlive the lease); a `Vec` of
    /// pairs rather than a map, since the order is part of what was published and
    /// there are at most 16. No server command.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_attrs", "q")?;
    /// use mongomq::PublishOptions;
    /// let opts = PublishOptions::new().attr("content-type", "application/json").attr("tenant.id", "t-42");
    /// queue.publish("g", r#"{"order": 1}"#, &opts)?;
    /// let lease = queue.claim(&mongomq::ClaimOptions::new())?.expect("a lease");
    /// assert_eq!(lease.attrs(), [("content-type", "application/json"), ("tenant.id", "t-42")]);
    /// assert_eq!(lease.attr("tenant.id"), Some("t-42"));
    /// assert_eq!(lease.attr("absent"), None);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn attrs(&self) -> Vec<(&str, &str)> {
        self.attrs_at(0).unwrap_or_default()
    }

    /// The attributes of event `i` (0 is the head) as [`attrs`](Lease::attrs) gives
    /// the head's, `None` past the end. Each event of a batch lease has its own.
    pub fn attrs_at(&self, i: usize) -> Option<Vec<(&str, &str)>> {
        if i >= self.count() {
            return None;
        }
        // SAFETY: the lease is alive for &self; the call only reads it.
        let n = unsafe { sys::mq_lease_attr_count(self.as_ptr(), i) };
        Some((0..n).filter_map(|j| self.attr_at(i, j)).collect())
    }

    /// The head event's value of attribute `key`, `None` when it has no such
    /// attribute (a key with a NUL byte never names one). Borrowed from the lease.
    pub fn attr(&self, key: &str) -> Option<&str> {
        let key = CString::new(key).ok()?;
        // SAFETY: the lease is alive for &self and key is a C string for the call; the
        // value returned is NULL or a NUL-terminated string owned by the lease.
        let value = unsafe { sys::mq_lease_attr(self.as_ptr(), 0, key.as_ptr()) };
        // SAFETY: a non-NULL value is valid until the lease is destroyed, which cannot
        // happen while &self is borrowed.
        (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) }).and_then(|v| v.to_str().ok())
    }

    /// Attribute j of event i; `None` only if the library refused (i, j in range are
    /// never refused) or a string were not UTF-8 (the library leaves out, when it
    /// reads the event, any attribute that is not).
    fn attr_at(&self, i: usize, j: usize) -> Option<(&str, &str)> {
        let (mut key, mut value) = (std::ptr::null(), std::ptr::null());
        let mut err = sys::mq_error::new();
        // SAFETY: the lease is alive for &self; key, value and err point to locals.
        let status = unsafe { sys::mq_lease_attr_at(self.as_ptr(), i, j, &mut key, &mut value, &mut err) };
        if status != sys::MQ_OK || key.is_null() || value.is_null() {
            return None;
        }
        // SAFETY: on MQ_OK both are NUL-terminated strings owned by the lease, valid
        // until it is destroyed, which cannot happen while &self is borrowed.
        let (key, value) = unsafe { (CStr::from_ptr(key), CStr::from_ptr(value)) };
        Some((key.to_str().ok()?, value.to_str().ok()?))
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("group", &self.inner.group)
            .field("seq", &self.seq())
            .field("count", &self.count())
            .field("attempts", &self.attempts())
            .finish_non_exhaustive()
    }
}
