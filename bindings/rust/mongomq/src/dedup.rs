//! Deduplication keys (0.6.0): what a publish did ([`Published`]: its seq, and whether
//! its key was taken), and the queue's settings for keyed publishes: how long a key
//! holds ([`Queue::set_dedup_window`]) and where it must be unique
//! ([`Queue::set_dedup_scope`], [`DedupScope`]). The key itself is a publish option
//! ([`PublishOptions::dedup_key`](crate::PublishOptions::dedup_key)); the publishes
//! are in queue.rs, a batch's outcomes in batch.rs.

use std::time::Duration;

use mongomq_sys as sys;

use crate::error::{check, Result};
use crate::queue::Queue;

/// A queue's dedup window until [`Queue::set_dedup_window`]: 5 minutes, as SQS's
/// (`MQ_DEDUP_WINDOW_DEFAULT`).
pub const DEFAULT_DEDUP_WINDOW: Duration = Duration::from_secs(sys::MQ_DEDUP_WINDOW_DEFAULT as u64);

/// What a publish did: the event's sequence number, and whether it was a duplicate.
/// A duplicate (its [`dedup_key`](crate::PublishOptions::dedup_key) was taken) added
/// nothing: `seq` is then the seq of the event that took the key (which may already
/// be acked, within the window). A duplicate is a success, never an error (the
/// library's `MQ_DUPLICATE`). Returned by [`Queue::publish_with`] and, one per event
/// in add order, by [`Queue::publish_batch_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Published {
    /// The event's seq: the new event's, or for a duplicate the first publish's.
    pub seq: i64,
    /// The key was taken: nothing was added.
    pub duplicate: bool,
}

impl Published {
    /// A publish's C status (`MQ_OK` or `MQ_DUPLICATE`, which are both successes) and
    /// seq; any other status is the error.
    pub(crate) fn from_c(status: sys::mq_status, seq: i64, err: &sys::mq_error) -> Result<Published> {
        if status == sys::MQ_DUPLICATE {
            return Ok(Published { seq, duplicate: true });
        }
        check(status, err)?;
        Ok(Published { seq, duplicate: false })
    }
}

/// Where a dedup key must be unique ([`Queue::set_dedup_scope`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DedupScope {
    /// In the queue (the default): a key reused in two groups is a duplicate.
    #[default]
    Queue,
    /// In the event's group only (SQS FIFO's high-throughput mode): the same key in
    /// two groups makes two events.
    Group,
}

impl DedupScope {
    fn to_c(self) -> sys::mq_dedup_scope {
        match self {
            DedupScope::Queue => sys::MQ_DEDUP_SCOPE_QUEUE,
            DedupScope::Group => sys::MQ_DEDUP_SCOPE_GROUP,
        }
    }
}

impl Queue {
    /// How long a key stays taken after its publish, even once its event was acked or
    /// moved to the dead letters (while the event is in the queue the key is taken
    /// anyway): 1 s ..= 7 days ([`limits::DEDUP_WINDOW_MIN`](crate::limits::DEDUP_WINDOW_MIN),
    /// [`DEDUP_WINDOW_MAX`](crate::limits::DEDUP_WINDOW_MAX)); anything else is an
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) error. The default is
    /// [`DEFAULT_DEDUP_WINDOW`] (5 minutes). The window is a lower bound: the record of
    /// an acked event goes when MongoDB's TTL monitor (every 60 s) removes it, or a
    /// publish with its key finds it expired. Applies to the keyed publishes of this
    /// queue handle and its clones; each event records the window it was published
    /// with, so handles with different windows may share a queue.
    pub fn set_dedup_window(&self, window: Duration) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_dedup_window(self.ptr(), window.as_secs_f64(), &mut err) };
        check(status, &err)
    }

    /// Where a key must be unique: [`DedupScope::Queue`] (the default) or
    /// [`DedupScope::Group`]. Applies to this queue handle and its clones; every
    /// publisher of a queue should use one scope: keys published with one scope never
    /// match keys published with the other.
    pub fn set_dedup_scope(&self, scope: DedupScope) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_dedup_scope(self.ptr(), scope.to_c(), &mut err) };
        check(status, &err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_constants_are_the_headers() {
        assert_eq!(DEFAULT_DEDUP_WINDOW.as_secs_f64(), sys::MQ_DEDUP_WINDOW_DEFAULT);
        assert_eq!(crate::limits::DEDUP_WINDOW_MIN.as_secs_f64(), sys::MQ_DEDUP_WINDOW_MIN);
        assert_eq!(crate::limits::DEDUP_WINDOW_MAX.as_secs_f64(), sys::MQ_DEDUP_WINDOW_MAX);
    }

    #[test]
    fn duplicate_is_a_success() {
        let err = sys::mq_error::new();
        assert_eq!(Published::from_c(sys::MQ_OK, 7, &err), Ok(Published { seq: 7, duplicate: false }));
        assert_eq!(Published::from_c(sys::MQ_DUPLICATE, 3, &err), Ok(Published { seq: 3, duplicate: true }));
        let e = Published::from_c(sys::MQ_ERR_CONNECT, 0, &err).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Connect);
    }
}
