//! The options of a publish and of a claim: builders over `mq_publish_opts` and
//! `mq_claim_opts`, the C API's one entry per operation (`mq_publish_with`,
//! `mq_batch_add_with`, `mq_claim_with`).

use std::ffi::CString;
use std::time::{Duration, SystemTime};

use mongomq_sys as sys;

use crate::cancel::CancelToken;
use crate::error::{c_string, Result};
use crate::time::to_epoch;

/// How [`Queue::publish`](crate::Queue::publish),
/// [`Queue::publish_with`](crate::Queue::publish_with) and
/// [`Batch::add`](crate::Batch::add) publish: a builder with the library's defaults.
/// Build it once and use it (by reference) for many publishes; `Clone`, not `Copy`,
/// since 0.6.0: it owns its dedup key and (0.7.0) its attributes, as [`ClaimOptions`]
/// owns its worker id.
///
/// | option | default |
/// |---|---|
/// | [`priority`](PublishOptions::priority) | 0 |
/// | [`not_before`](PublishOptions::not_before) | none: due at once |
/// | [`dedup_key`](PublishOptions::dedup_key) | none: every publish adds its event |
/// | [`attr`](PublishOptions::attr), [`attrs`](PublishOptions::attrs) | none |
///
/// ```
/// use std::time::{Duration, SystemTime};
/// let urgent = mongomq::PublishOptions::new().priority(4);
/// let later = mongomq::PublishOptions::new().not_before(SystemTime::now() + Duration::from_secs(60));
/// let once = mongomq::PublishOptions::new().dedup_key("order-17-charge");
/// let typed = mongomq::PublishOptions::new().attr("content-type", "application/json");
/// # let _ = (urgent, later, once, typed);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PublishOptions {
    pub(crate) priority: i32,
    pub(crate) not_before: Option<SystemTime>,
    pub(crate) dedup_key: Option<String>,
    /// In the order given; checked by the library (a key given twice included).
    pub(crate) attrs: Vec<(String, String)>,
}

impl PublishOptions {
    /// The defaults (see the table above); the same as `PublishOptions::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The group's priority (0..4), a floor claimers filter on. It counts only when
    /// this publish creates the group (the group is new, or was drained).
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Not delivered before `when`, on the queue's clock ([`Queue::now`]: server
    /// time, or a [`ManualClock`](crate::ManualClock)); so for "in a minute" write
    /// `queue.now() + Duration::from_secs(60)`. FIFO stays strict: while it is its
    /// group's head, the group waits for it. A time before the epoch is an argument
    /// error.
    ///
    /// [`Queue::now`]: crate::Queue::now
    pub fn not_before(mut self, when: SystemTime) -> Self {
        self.not_before = Some(when);
        self
    }

    /// Publish exactly once: the event is added only if no event of the queue holds
    /// `key`. While an event published with it is in the queue (leased, parked,
    /// paused: not yet acked), and for the queue's dedup window after its publish
    /// ([`Queue::set_dedup_window`](crate::Queue::set_dedup_window), 5 minutes by
    /// default) even once it was acked or moved to the dead letters, a publish with the
    /// same key adds nothing: [`Queue::publish_with`](crate::Queue::publish_with) then
    /// says `duplicate` and gives that event's seq. So a publish retried with its key
    /// after any error ([`ErrorKind::Connect`](crate::ErrorKind::Connect): a lost
    /// reply, a step-down) leaves exactly one event, from any process and language.
    /// Whether a key reused in another group is a duplicate is the queue's
    /// [`DedupScope`](crate::DedupScope).
    ///
    /// 1..=512 bytes of UTF-8 ([`limits::DEDUP_KEY_MAX`](crate::limits::DEDUP_KEY_MAX));
    /// an empty or longer key, or one with a NUL byte, is an
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error naming `dedup_key`
    /// when the publish (or [`Batch::add`](crate::Batch::add)) is made, and nothing is
    /// sent.
    pub fn dedup_key(mut self, key: impl Into<String>) -> Self {
        self.dedup_key = Some(key.into());
        self
    }

    /// Adds an attribute to the event (0.7.0): a string key and value beside its
    /// bytes, for what a consumer needs before it reads the event (a content type, a
    /// tenant) and for trace context (W3C `traceparent`, `tracestate`). The consumer
    /// reads them with [`Lease::attrs`](crate::Lease::attrs) and
    /// [`Lease::attr`](crate::Lease::attr), and [peek](crate::Queue::peek) and the
    /// dead letters show them ([`StoredEvent::attrs`](crate::StoredEvent::attrs)).
    /// They stay with the event through nacks, lease expiry, the dead letters and a
    /// requeue.
    ///
    /// Kept in the order given. Up to 16 per event
    /// ([`limits::ATTR_MAX`](crate::limits::ATTR_MAX)); a key is 1..=128 bytes of
    /// ASCII letters, digits, `_`, `-` and `.`, unique in the event; a value is
    /// 0..=4096 bytes of UTF-8. The library checks them when the publish (or
    /// [`Batch::add`](crate::Batch::add)) is made: anything else (a key given twice
    /// included: it is not replaced, it reaches the library, which refuses it) is an
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error naming the
    /// attribute (`attrs[i]`), and nothing is sent.
    ///
    /// ```
    /// let opts = mongomq::PublishOptions::new()
    ///     .attr("content-type", "application/json")
    ///     .attr("tenant.id", "t-42");
    /// # let _ = opts;
    /// ```
    pub fn attr(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attrs.push((key.into(), value.into()));
        self
    }

    /// Adds each (key, value) of `attrs`, in its order, after the attributes already
    /// given: [`attr`](PublishOptions::attr) for each. An ordered source keeps its
    /// order (a slice, a `Vec`, a `BTreeMap`); a `HashMap`'s order is arbitrary.
    ///
    /// ```
    /// let trace = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")];
    /// let opts = mongomq::PublishOptions::new().attrs(trace).attr("tenant.id", "t-42");
    /// # let _ = opts;
    /// ```
    pub fn attrs<I, K, V>(mut self, attrs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.attrs.extend(attrs.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The C options (version MQ_PUBLISH_OPTS_VERSION), for `function` (the C call
    /// they go to, which a NUL in the key's or an attribute's error names). A NUL is
    /// the only thing checked here: C strings cannot hold one; the library checks the
    /// rest.
    pub(crate) fn to_c(&self, function: &str) -> Result<CPublishOptions> {
        let key = self.dedup_key.as_deref().map(|k| c_string(function, "dedup_key", k)).transpose()?;
        let strings = self
            .attrs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                let key = c_string(function, &format!("attrs[{i}].key"), k)?;
                let value = c_string(function, &format!("attrs[{i}].value (key {k:?})"), v)?;
                Ok((key, value))
            })
            .collect::<Result<Vec<_>>>()?;
        // Pointers into the CStrings' heap bytes, which stay put when `strings` moves
        // into the returned value.
        let attrs: Vec<sys::mq_event_attr> =
            strings.iter().map(|(k, v)| sys::mq_event_attr { key: k.as_ptr(), value: v.as_ptr() }).collect();
        let mut c = sys::MQ_PUBLISH_OPTS_INIT;
        c.priority = self.priority;
        c.not_before = self.not_before.map_or(0.0, to_epoch);
        c.dedup_key = key.as_ref().map_or(std::ptr::null(), |k| k.as_ptr());
        c.attrs = if attrs.is_empty() { std::ptr::null() } else { attrs.as_ptr() };
        c.attr_count = attrs.len();
        Ok(CPublishOptions { c, _key: key, _attrs: attrs, _strings: strings })
    }
}

/// C publish options together with what their pointers point into: the C string of
/// `dedup_key`, the array of `attrs` and the C strings of its keys and values (the
/// bytes of a `CString` and of a `Vec` are on the heap: they stay put when this value
/// moves). Keep it alive across the call it is given to.
pub(crate) struct CPublishOptions {
    c: sys::mq_publish_opts,
    _key: Option<CString>,
    _attrs: Vec<sys::mq_event_attr>,
    _strings: Vec<(CString, CString)>,
}

impl CPublishOptions {
    /// The options, valid while `self` is.
    pub(crate) fn as_ptr(&self) -> *const sys::mq_publish_opts {
        &self.c
    }
}

/// How [`Queue::claim`](crate::Queue::claim) claims: a builder with the library's
/// defaults.
///
/// | option | default |
/// |---|---|
/// | [`visibility`](ClaimOptions::visibility) | 30 s |
/// | [`min_priority`](ClaimOptions::min_priority) | 0 |
/// | [`max_events`](ClaimOptions::max_events) | 1 |
/// | [`wait`](ClaimOptions::wait) | zero: return `None` at once when nothing is due |
/// | [`worker_id`](ClaimOptions::worker_id) | the library's `host:pid` |
/// | [`cancel`](ClaimOptions::cancel) | none |
/// | [`partitions`](ClaimOptions::partitions) | none: every partition |
#[derive(Clone, Debug)]
pub struct ClaimOptions {
    pub(crate) visibility: Duration,
    pub(crate) min_priority: i32,
    pub(crate) max_events: usize,
    pub(crate) wait: Duration,
    pub(crate) worker_id: Option<String>,
    pub(crate) cancel: Option<CancelToken>,
    pub(crate) partitions: Vec<usize>,
}

impl Default for ClaimOptions {
    fn default() -> Self {
        ClaimOptions {
            visibility: Duration::from_secs(30),
            min_priority: 0,
            max_events: 1,
            wait: Duration::ZERO,
            worker_id: None,
            cancel: None,
            partitions: Vec::new(),
        }
    }
}

impl ClaimOptions {
    /// The defaults (see the table above); the same as `ClaimOptions::default()`.
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

    /// Up to this many consecutive events of one group in one lease (1..10,000).
    pub fn max_events(mut self, max_events: usize) -> Self {
        self.max_events = max_events;
        self
    }

    /// Wait up to this long for a group to become due (woken by publishes, acks and
    /// nacks, not by polling); `Duration::ZERO` does not wait. A waiting claim ends
    /// early with [`ErrorKind::Interrupted`](crate::ErrorKind::Interrupted) after
    /// [`Queue::interrupt`](crate::Queue::interrupt), or with
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) by its
    /// [`cancel`](ClaimOptions::cancel) token.
    pub fn wait(mut self, timeout: Duration) -> Self {
        self.wait = timeout;
        self
    }

    /// The worker id stored in the lease (non-empty UTF-8, at most 200 bytes).
    pub fn worker_id(mut self, worker_id: impl Into<String>) -> Self {
        self.worker_id = Some(worker_id.into());
        self
    }

    /// Claims made with these options end with
    /// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) once `token` is cancelled
    /// (see [`CancelToken`]); a token already cancelled ends them before anything is
    /// sent.
    pub fn cancel(mut self, token: &CancelToken) -> Self {
        self.cancel = Some(token.clone());
        self
    }

    /// On a partitioned queue ([`QueueOptions::partitions`](crate::QueueOptions::partitions),
    /// 0.8.0), the only partitions this claim takes from, in place of any given before:
    /// distinct, each in `0..queue.partitions()` (a group's is
    /// [`group_partition`](crate::group_partition)); empty (the default) is every
    /// partition. A waiting claim wakes for events of these partitions only. A bad
    /// list (a partition outside the queue's, one given twice, more than the queue
    /// has) is the library's
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error naming
    /// `partitions[i]` or `partition_count`, when the claim is made.
    ///
    /// ```
    /// let mine = mongomq::ClaimOptions::new().partitions([0, 2]);
    /// # let _ = mine;
    /// ```
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = usize>) -> Self {
        self.partitions = partitions.into_iter().collect();
        self
    }
}
