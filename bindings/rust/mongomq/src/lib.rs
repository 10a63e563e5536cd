//! A multi-machine queue with per-group FIFO exclusivity on MongoDB: the safe Rust API
//! over libmongomq (found by the `mongomq-sys` crate with pkg-config).
//!
//! Every event belongs to a group. Within a group events are delivered in publish
//! order, one at a time: while a worker holds a lease on a group, no other worker gets
//! that group. Groups are served round-robin, leases expire (at-least-once delivery),
//! and ack, nack, unclaim and extend are fenced by the lease's token.
//!
//! ```
//! use std::time::Duration;
//!
//! use mongomq::{ClaimOptions, PublishOptions};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let uri = std::env::var("MONGOMQ_TEST_URI")?;
//!     let client = mongomq::Client::connect(&uri)?;
//!     let queue = client.queue("mqt_rust_doc_crate", "orders")?; // Send + Sync, keeps the client alive
//!     let seq: i64 = queue.publish("customer-17", b"order #1", &PublishOptions::new().priority(2))?;
//!     let opts = ClaimOptions::new().visibility(Duration::from_secs(30)).wait(Duration::from_secs(5));
//!     if let Some(lease) = queue.claim(&opts)? {
//!         assert_eq!((lease.seq(), lease.group(), lease.text()?, lease.attempts()),
//!                    (seq, "customer-17", "order #1", 1));
//!         match queue.ack(&lease) {
//!             Ok(()) => {}
//!             Err(e) if e.kind() == mongomq::ErrorKind::LeaseLost => eprintln!("too late: {e}"),
//!             Err(e) => return Err(e.into()),
//!         }
//!     }
//!     queue.drop_queue()?;
//!     Ok(())
//! }
//! ```
//!
//! Ownership follows the C library's rules, checked by the compiler: a [`Queue`] holds
//! its [`Client`]'s pool, a [`Lease`] owns its C lease and borrows nothing (it may
//! outlive its queue; it is acked through a live queue, `queue.ack(&lease)`), and
//! nothing can be used after it is dropped (so the crate has no "closed" error):
//!
//! ```compile_fail,E0505
//! # let uri = std::env::var("MONGOMQ_TEST_URI").unwrap();
//! let queue = mongomq::Client::connect(&uri).unwrap().queue("db", "q").unwrap();
//! let lease = queue.claim(&mongomq::ClaimOptions::new()).unwrap().unwrap();
//! let event = lease.event();
//! drop(lease);
//! println!("{event:?}"); // error[E0505]: cannot move out of `lease` because it is borrowed
//! ```
//!
//! Instants are `SystemTime` (on the queue's clock, [`Queue::now`]), durations
//! `Duration`. [`Queue::work`] runs a handler on leases until it is stopped and
//! [`Queue::worker`] starts one and returns its [`Worker`].
//!
//! With the `tokio` feature, the crate is async where tokio programs live: the queue's
//! calls come as futures (`claim_async`, `publish_async`, `ack_async`, ...; the
//! blocking C call runs on tokio's blocking pool), `claim_stream` gives the leases as a
//! `futures_core::Stream` (`LeaseStream`) for a loop of your own, and `worker_async` /
//! `work_async` run an `async` handler (`Fn(Lease) -> impl Future<Output = Result<(),
//! E>>`) on leases with N tasks, with the thread worker's options and behaviour
//! (`AsyncWorker`: `stop().await`, `wait().await`). Dropping a waiting claim's future,
//! or the stream, cancels that claim (no claim is left running in C), and a lease it
//! took just then is given back with `unclaim`, never left held.
//!
//! libmongoc's log goes, from the first [`Client`] on, into the `log` crate (target
//! `"mongomq"`); [`set_log_handler`] routes it elsewhere or silences it. For tests and
//! simulations, a queue runs on a [`ManualClock`] given to [`Queue::set_clock`]. For
//! tooling, [`Queue::groups`] lists the groups a page at a time (state, holder,
//! backlog), [`Queue::pause_group`] stops claims of one until
//! [`Queue::resume_group`], and [`Queue::dead_page`] pages through the dead letters.
//!
//! A publish given a [`dedup_key`](PublishOptions::dedup_key) adds its event only if
//! no event of the queue holds that key (within a window, [`Queue::set_dedup_window`];
//! in the queue or the group, [`Queue::set_dedup_scope`]): retried with its key after
//! any error, it leaves exactly one event. [`Queue::publish_with`] and
//! [`Queue::publish_batch_with`] say, as [`Published`], whether it was a duplicate.
//!
//! A queue may be spread over partitions (0.8.0: [`Client::queue_with`] with
//! [`QueueOptions::partitions`]), each group in the partition [`group_partition`]
//! gives it, so that a sharded cluster can put them on shards of their own; a claim
//! or a worker may take from some of them only ([`ClaimOptions::partitions`],
//! [`WorkerOptions::partitions`]), and a lease says its group's
//! ([`Lease::partition`]).
//!
//! An event may carry attributes (0.7.0), string keys and values beside its bytes (a
//! content type, a tenant, W3C trace context): [`PublishOptions::attr`] adds one, in
//! order; a consumer reads them with [`Lease::attrs`], [`Lease::attrs_at`] and
//! [`Lease::attr`], without parsing the event; peek and the dead letters show them
//! ([`StoredEvent::attrs`]).
//!
//! With the `opentelemetry` feature (off by default: without it the crate has no
//! OpenTelemetry dependency), a queue given a telemetry object
//! (`queue.set_telemetry(Some(mongomq::otel::Telemetry::global()))`) records spans
//! and metrics through the OpenTelemetry API: a `send` span per publish, whose trace
//! context travels in the events' attributes (W3C `traceparent`), and in the workers a
//! `process` span per lease, linked to the producer's, with the handler run in it and
//! `ack`/`nack` spans under it (bindings/CONTRACT.md, "Tracing").
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod admin;
#[cfg(feature = "tokio")]
mod asynchronous;
mod batch;
mod cancel;
mod client;
mod clock;
mod dedup;
mod error;
mod groups;
mod lease;
mod logging;
mod options;
#[cfg(feature = "opentelemetry")]
pub mod otel;
mod partitions;
mod queue;
mod stats;
mod stored;
mod time;
mod traced;
mod worker;

#[cfg(feature = "tokio")]
pub use asynchronous::{AsyncWorker, LeaseStream};
pub use batch::Batch;
pub use cancel::CancelToken;
pub use client::Client;
pub use clock::ManualClock;
pub use dedup::{DedupScope, Published, DEFAULT_DEDUP_WINDOW};
pub use error::{status_name, Error, ErrorKind, Result};
pub use groups::{GroupInfo, GroupState, GroupsOptions, GroupsPage, GroupsSort};
pub use lease::Lease;
pub use logging::{set_log_handler, LogHandler, LOG_TARGET};
pub use options::{ClaimOptions, PublishOptions};
pub use partitions::{group_partition, QueueOptions};
pub use queue::Queue;
pub use stats::{GroupStats, PriorityStats, RepairCounts, Stats};
pub use stored::{DeadPage, StoredEvent};
pub use worker::{BoxError, Worker, WorkerError, WorkerOptions};

/// The version of the libmongomq this process runs with (e.g. `"0.8.0"`), which may
/// differ from the one the crate was built against.
pub fn library_version() -> &'static str {
    // SAFETY: mq_version returns a pointer to a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(mongomq_sys::mq_version()) };
    v.to_str().unwrap_or("unknown")
}

/// Limits the library checks before anything is sent (`MQ_*_MAX` of the header).
pub mod limits {
    /// Bytes of a group id (UTF-8, non-empty).
    pub const GROUP_ID_MAX: usize = mongomq_sys::MQ_GROUP_ID_MAX;
    /// Bytes of a worker id (UTF-8, non-empty).
    pub const WORKER_ID_MAX: usize = mongomq_sys::MQ_WORKER_ID_MAX;
    /// Bytes of one event.
    pub const EVENT_MAX: usize = mongomq_sys::MQ_EVENT_MAX;
    /// Events in one batch or one batch lease.
    pub const BATCH_MAX: usize = mongomq_sys::MQ_BATCH_MAX;
    /// The lowest priority.
    pub const PRIORITY_MIN: i32 = mongomq_sys::MQ_PRIORITY_MIN;
    /// The highest priority.
    pub const PRIORITY_MAX: i32 = mongomq_sys::MQ_PRIORITY_MAX;
    /// Bytes of one dedup key ([`PublishOptions::dedup_key`](crate::PublishOptions::dedup_key)).
    pub const DEDUP_KEY_MAX: usize = mongomq_sys::MQ_DEDUP_KEY_MAX;
    /// The shortest dedup window ([`Queue::set_dedup_window`](crate::Queue::set_dedup_window)).
    pub const DEDUP_WINDOW_MIN: std::time::Duration =
        std::time::Duration::from_secs(mongomq_sys::MQ_DEDUP_WINDOW_MIN as u64);
    /// The longest dedup window: 7 days.
    pub const DEDUP_WINDOW_MAX: std::time::Duration =
        std::time::Duration::from_secs(mongomq_sys::MQ_DEDUP_WINDOW_MAX as u64);
    /// Attributes of one event ([`PublishOptions::attr`](crate::PublishOptions::attr)).
    pub const ATTR_MAX: usize = mongomq_sys::MQ_ATTR_MAX;
    /// Bytes of an attribute's key.
    pub const ATTR_KEY_MAX: usize = mongomq_sys::MQ_ATTR_KEY_MAX;
    /// Bytes of an attribute's value.
    pub const ATTR_VALUE_MAX: usize = mongomq_sys::MQ_ATTR_VALUE_MAX;
    /// Partitions of one queue ([`QueueOptions::partitions`](crate::QueueOptions::partitions)).
    pub const PARTITIONS_MAX: usize = mongomq_sys::MQ_PARTITIONS_MAX as usize;
}
