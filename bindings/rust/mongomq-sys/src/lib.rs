//! Raw declarations of libmongomq's C API (`include/mongomq.h`, version 0.8.0, with
//! 0.8.0's partitioned queues).
//!
//! Written by hand, one item per declaration of the header, in the header's order and
//! with its comments shortened; `tests/header.rs` compiles them against the installed
//! header and fails on any difference (a function missing on either side, a changed
//! signature, a constant, a struct's size and layout, an `_INIT` value). Use the safe `mongomq` crate
//! unless you need the C calls themselves: everything here is `unsafe` to call and
//! follows the header's rules (ownership, threading, lifetimes).
//!
//! `mq_status` is a plain `c_int` with constants, not a Rust `enum`, so that a value a
//! newer library returns can never be an invalid enum value in Rust.
#![allow(non_camel_case_types)]
#![no_std]
#![deny(clippy::undocumented_unsafe_blocks)]

use core::ffi::{c_char, c_int, c_uint, c_void};
use core::marker::{PhantomData, PhantomPinned};

pub const MQ_VERSION_MAJOR: c_int = 0;
pub const MQ_VERSION_MINOR: c_int = 8;
pub const MQ_VERSION_PATCH: c_int = 0;

/// Bytes of a group id (UTF-8, non-empty).
pub const MQ_GROUP_ID_MAX: usize = 1000;
/// Bytes of a worker id (UTF-8, non-empty).
pub const MQ_WORKER_ID_MAX: usize = 200;
/// Bytes of one event: BSON's 16 MiB less room for the envelope.
pub const MQ_EVENT_MAX: usize = 16 * 1024 * 1024 - 16 * 1024;
/// Events in one mq_batch or one batch lease.
pub const MQ_BATCH_MAX: usize = 10000;
pub const MQ_PRIORITY_MIN: c_int = 0;
pub const MQ_PRIORITY_MAX: c_int = 4;

pub type mq_status = c_int;
pub const MQ_OK: mq_status = 0;
/// mq_claim: no group is due at this priority floor.
pub const MQ_EMPTY: mq_status = 1;
/// ack/nack/extend: the lease expired and the group moved on.
pub const MQ_LEASE_LOST: mq_status = 2;
/// mq_claim_wait: mq_queue_interrupt was called on the queue.
pub const MQ_INTERRUPTED: mq_status = 3;
/// mq_claim_wait_cancel: its mq_cancel was triggered.
pub const MQ_CANCELLED: mq_status = 4;
/// A publish with a dedup_key already taken: nothing was added, the seq given back is
/// the first publish's (0.6.0). Not an error, like MQ_EMPTY.
pub const MQ_DUPLICATE: mq_status = 5;
/// Bad argument: NULL, out of range, not UTF-8, too large.
pub const MQ_ERR_ARG: mq_status = -1;
/// Server unreachable or timed out, or a write's outcome unknown.
pub const MQ_ERR_CONNECT: mq_status = -2;
/// The server answered with an error.
pub const MQ_ERR_SERVER: mq_status = -3;
pub const MQ_ERR_NOMEM: mq_status = -4;
pub const MQ_ERR_INTERNAL: mq_status = -5;

/// Caller-allocated; every fallible call fills it. 512 bytes (part of the ABI).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct mq_error {
    pub status: mq_status,
    /// MongoDB error code, or 0.
    pub server_code: c_int,
    /// NUL-terminated, never contains a password.
    pub message: [c_char; 504],
}

impl mq_error {
    /// An all-zero error (status MQ_OK, empty message), ready to pass to a call.
    pub const fn new() -> Self {
        mq_error { status: MQ_OK, server_code: 0, message: [0; 504] }
    }
}

impl Default for mq_error {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! opaque {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque! {
    /// A connection pool; thread-safe.
    mq_client;
    /// One queue (database + prefix); thread-safe.
    mq_queue;
    /// One claimed group: 1..n events; owned by the caller.
    mq_lease;
    /// Events to publish together; not thread-safe.
    mq_batch;
    /// A flag one waiting claim watches (0.3.0).
    mq_cancel;
}

/// libmongoc's log handler: level (0 error .. 6 trace), domain, message, ctx.
pub type mq_log_fn =
    Option<unsafe extern "C" fn(level: c_int, domain: *const c_char, message: *const c_char, ctx: *mut c_void)>;

/// The clock of mq_queue_set_clock (the header spells it inline: `double (*clock)(void *ctx)`).
pub type mq_clock_fn = Option<unsafe extern "C" fn(ctx: *mut c_void) -> f64>;

extern "C" {
    pub fn mq_version() -> *const c_char;
    pub fn mq_status_name(status: mq_status) -> *const c_char;

    pub fn mq_client_new(uri: *const c_char, out: *mut *mut mq_client, err: *mut mq_error) -> mq_status;
    pub fn mq_client_destroy(client: *mut mq_client);
    pub fn mq_client_command_count(client: *const mq_client) -> u64;
    pub fn mq_client_write_concern_errors(client: *const mq_client) -> u64;

    pub fn mq_queue_new(
        client: *mut mq_client,
        db_name: *const c_char,
        prefix: *const c_char,
        out: *mut *mut mq_queue,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_queue_destroy(queue: *mut mq_queue);

    pub fn mq_publish(
        queue: *mut mq_queue,
        group_id: *const c_char,
        event: *const c_void,
        event_len: usize,
        priority: c_int,
        seq_out: *mut i64,
        err: *mut mq_error,
    ) -> mq_status;

    pub fn mq_claim(
        queue: *mut mq_queue,
        worker_id: *const c_char,
        visibility_s: f64,
        min_priority: c_int,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_ack(queue: *mut mq_queue, lease: *const mq_lease, err: *mut mq_error) -> mq_status;
    pub fn mq_nack(queue: *mut mq_queue, lease: *const mq_lease, delay_s: f64, err: *mut mq_error) -> mq_status;
    /// Gives back a lease no handler ran: not a delivery (attempts and place in line
    /// restored); fenced by the token like `mq_ack` (0.4.0).
    pub fn mq_unclaim(queue: *mut mq_queue, lease: *const mq_lease, err: *mut mq_error) -> mq_status;
    pub fn mq_extend(queue: *mut mq_queue, lease: *const mq_lease, visibility_s: f64, err: *mut mq_error) -> mq_status;

    pub fn mq_lease_seq(lease: *const mq_lease) -> i64;
    pub fn mq_lease_group(lease: *const mq_lease) -> *const c_char;
    pub fn mq_lease_event(lease: *const mq_lease, len_out: *mut usize) -> *const c_void;
    pub fn mq_lease_token(lease: *const mq_lease) -> *const c_char;
    pub fn mq_lease_attempts(lease: *const mq_lease) -> c_int;
    pub fn mq_lease_destroy(lease: *mut mq_lease);

    pub fn mq_batch_new(out: *mut *mut mq_batch, err: *mut mq_error) -> mq_status;
    pub fn mq_batch_add(
        batch: *mut mq_batch,
        group_id: *const c_char,
        event: *const c_void,
        event_len: usize,
        priority: c_int,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_batch_count(batch: *const mq_batch) -> usize;
    pub fn mq_batch_destroy(batch: *mut mq_batch);
    /// 3 commands; with dedup keys MQ_DUPLICATE when some event's key was taken (it
    /// was not added): mq_batch_outcome says, per event, what became of it.
    pub fn mq_publish_batch(
        queue: *mut mq_queue,
        batch: *const mq_batch,
        first_seq: *mut i64,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_claim_batch(
        queue: *mut mq_queue,
        worker_id: *const c_char,
        visibility_s: f64,
        min_priority: c_int,
        max_events: usize,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_lease_count(lease: *const mq_lease) -> usize;
    pub fn mq_lease_seq_at(lease: *const mq_lease, i: usize) -> i64;
    pub fn mq_lease_event_at(lease: *const mq_lease, i: usize, len_out: *mut usize) -> *const c_void;

    pub fn mq_claim_wait(
        queue: *mut mq_queue,
        worker_id: *const c_char,
        visibility_s: f64,
        min_priority: c_int,
        timeout_s: f64,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_claim_batch_wait(
        queue: *mut mq_queue,
        worker_id: *const c_char,
        visibility_s: f64,
        min_priority: c_int,
        max_events: usize,
        timeout_s: f64,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_queue_interrupt(queue: *mut mq_queue);

    pub fn mq_cancel_new(out: *mut *mut mq_cancel, err: *mut mq_error) -> mq_status;
    pub fn mq_cancel_trigger(cancel: *mut mq_cancel);
    pub fn mq_cancel_triggered(cancel: *const mq_cancel) -> c_int;
    pub fn mq_cancel_reset(cancel: *mut mq_cancel);
    pub fn mq_cancel_destroy(cancel: *mut mq_cancel);
    pub fn mq_claim_wait_cancel(
        queue: *mut mq_queue,
        worker_id: *const c_char,
        visibility_s: f64,
        min_priority: c_int,
        max_events: usize,
        timeout_s: f64,
        cancel: *mut mq_cancel,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;
}

// ---- One entry per operation: versioned options (0.4.0) ----------------------------
//
// Each options struct starts with its `version`; the library reads only the fields
// that version has, so later libraries (whose structs only grow at the end) keep
// reading what this crate writes. Start from the `_INIT` constant (the header's
// macro) and set what you want; NULL options mean the defaults. A version the library
// does not know is MQ_ERR_ARG. mq_publish_with, mq_batch_add_with and mq_claim_with
// are the one entry for their operation; the older calls are wrappers of them.

/// An event's attribute (see "Event attributes" below): a key and a value, both
/// NUL-terminated. Not `mq_attr`: `<mqueue.h>` has a struct of that name (0.7.0).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct mq_event_attr {
    pub key: *const c_char,
    pub value: *const c_char,
}

/// 2 (0.6.0) added dedup_key, 3 (0.7.0) attrs; older callers keep working.
pub const MQ_PUBLISH_OPTS_VERSION: c_uint = 3;

/// Options of mq_publish_with and mq_batch_add_with.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct mq_publish_opts {
    /// MQ_PUBLISH_OPTS_VERSION.
    pub version: c_uint,
    /// 0..4, default 0; counts only when the publish creates the group.
    pub priority: c_int,
    /// Epoch seconds on the queue's clock (mq_queue_now); 0: now.
    pub not_before: f64,
    /// Version 2. NULL: none. 1..MQ_DEDUP_KEY_MAX bytes of UTF-8, NUL-terminated; the
    /// library copies it.
    pub dedup_key: *const c_char,
    /// Version 3. attr_count attributes (NULL when 0); the library copies them.
    pub attrs: *const mq_event_attr,
    /// 0..MQ_ATTR_MAX.
    pub attr_count: usize,
}

/// The header's `MQ_PUBLISH_OPTS_INIT`: version 3, priority 0, not_before 0 (now), no
/// dedup key, no attributes.
pub const MQ_PUBLISH_OPTS_INIT: mq_publish_opts = mq_publish_opts {
    version: MQ_PUBLISH_OPTS_VERSION,
    priority: 0,
    not_before: 0.0,
    dedup_key: core::ptr::null(),
    attrs: core::ptr::null(),
    attr_count: 0,
};

/// 2 (0.8.0) added partitions; version 1 callers keep working.
pub const MQ_CLAIM_OPTS_VERSION: c_uint = 2;

/// Options of mq_claim_with.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct mq_claim_opts {
    /// MQ_CLAIM_OPTS_VERSION.
    pub version: c_uint,
    /// NULL: "host:pid".
    pub worker_id: *const c_char,
    /// > 0, finite; default 30.
    pub visibility_s: f64,
    /// 0..4, default 0.
    pub min_priority: c_int,
    /// 1..MQ_BATCH_MAX, default 1 (a batch lease when > 1).
    pub max_events: usize,
    /// >= 0, finite; default 0: don't wait.
    pub timeout_s: f64,
    /// NULL: none.
    pub cancel: *mut mq_cancel,
    /// Version 2. NULL: every partition of the queue; else partition_count distinct
    /// partitions in 0..mq_queue_partitions - 1, the only ones this claim takes from;
    /// the library copies them.
    pub partitions: *const c_int,
    /// 0 with partitions NULL; else 1..mq_queue_partitions.
    pub partition_count: usize,
}

/// The header's `MQ_CLAIM_OPTS_INIT`: version 2, no worker id, 30 s, floor 0, one
/// event, no wait, no cancel, every partition.
pub const MQ_CLAIM_OPTS_INIT: mq_claim_opts = mq_claim_opts {
    version: MQ_CLAIM_OPTS_VERSION,
    worker_id: core::ptr::null(),
    visibility_s: 30.0,
    min_priority: 0,
    max_events: 1,
    timeout_s: 0.0,
    cancel: core::ptr::null_mut(),
    partitions: core::ptr::null(),
    partition_count: 0,
};

extern "C" {
    /// Fills *opts with the defaults of `version`.
    pub fn mq_publish_opts_init(opts: *mut mq_publish_opts, version: c_uint) -> mq_status;
    /// mq_publish with options (opts NULL: defaults). 3 commands. MQ_DUPLICATE (and
    /// the first publish's seq) when its dedup_key is taken.
    pub fn mq_publish_with(
        queue: *mut mq_queue,
        group_id: *const c_char,
        event: *const c_void,
        event_len: usize,
        opts: *const mq_publish_opts,
        seq_out: *mut i64,
        err: *mut mq_error,
    ) -> mq_status;
    /// mq_batch_add with options: a batch event may be scheduled, and keyed.
    pub fn mq_batch_add_with(
        batch: *mut mq_batch,
        group_id: *const c_char,
        event: *const c_void,
        event_len: usize,
        opts: *const mq_publish_opts,
        err: *mut mq_error,
    ) -> mq_status;
    /// Fills *opts with the defaults of `version`.
    pub fn mq_claim_opts_init(opts: *mut mq_claim_opts, version: c_uint) -> mq_status;
    /// The claim, whichever options: no timeout and no cancel is mq_claim_batch;
    /// otherwise mq_claim_wait_cancel.
    pub fn mq_claim_with(
        queue: *mut mq_queue,
        opts: *const mq_claim_opts,
        out: *mut *mut mq_lease,
        err: *mut mq_error,
    ) -> mq_status;

    pub fn mq_lease_deadline(lease: *const mq_lease) -> f64;
}

// ---- Deduplication: publishing exactly once (0.6.0) ------------------------------
//
// A publish (mq_publish_with, mq_batch_add_with) with a dedup_key adds its event only
// if no event of the queue holds that key (while it is queued, and for the window
// after its publish even once acked); otherwise it adds nothing and returns
// MQ_DUPLICATE with that event's seq.

/// Bytes of one dedup_key.
pub const MQ_DEDUP_KEY_MAX: usize = 512;
/// Seconds: 5 minutes, like SQS.
pub const MQ_DEDUP_WINDOW_DEFAULT: f64 = 300.0;
/// Seconds.
pub const MQ_DEDUP_WINDOW_MIN: f64 = 1.0;
/// Seconds: 7 days.
pub const MQ_DEDUP_WINDOW_MAX: f64 = 7.0 * 86400.0;

/// Where a key must be unique (the header's `enum mq_dedup_scope`: a plain integer
/// here, as mq_status; C compilers on this crate's targets give the enum
/// `unsigned int`, which tests/header.rs checks).
pub type mq_dedup_scope = c_uint;
/// In the queue (the default): a key reused in two groups is a duplicate.
pub const MQ_DEDUP_SCOPE_QUEUE: mq_dedup_scope = 0;
/// In the event's group only.
pub const MQ_DEDUP_SCOPE_GROUP: mq_dedup_scope = 1;

extern "C" {
    /// The window of this handle's keyed publishes, in seconds
    /// (MQ_DEDUP_WINDOW_MIN..MAX; anything else, or not finite, is MQ_ERR_ARG).
    pub fn mq_queue_set_dedup_window(queue: *mut mq_queue, seconds: f64, err: *mut mq_error) -> mq_status;
    /// Per handle; every publisher of a queue should use one scope.
    pub fn mq_queue_set_dedup_scope(queue: *mut mq_queue, scope: mq_dedup_scope, err: *mut mq_error) -> mq_status;
    /// After mq_publish_batch returned MQ_OK or MQ_DUPLICATE: event i (add order) was
    /// added (MQ_OK, *seq its seq) or a duplicate (MQ_DUPLICATE, *seq the first
    /// publish's). MQ_ERR_ARG when i >= the count or the batch was changed or not
    /// published since. Reads the batch only; not thread-safe, like the batch.
    pub fn mq_batch_outcome(batch: *const mq_batch, i: usize, seq: *mut i64, err: *mut mq_error) -> mq_status;
}

// ---- Event attributes (0.7.0) --------------------------------------------------
//
// An event may carry up to MQ_ATTR_MAX attributes (mq_publish_opts.attrs): a key of
// 1..MQ_ATTR_KEY_MAX bytes of ASCII letters, digits, '_', '-' and '.', unique in the
// event, and a value of 0..MQ_ATTR_VALUE_MAX bytes of UTF-8 without NUL; anything
// else is MQ_ERR_ARG naming the attribute, and nothing is sent. The order is kept, and
// they stay with the event through nack, expiry, the dead letters and a requeue.

/// Attributes of one event.
pub const MQ_ATTR_MAX: usize = 16;
/// Bytes of a key.
pub const MQ_ATTR_KEY_MAX: usize = 128;
/// Bytes of a value.
pub const MQ_ATTR_VALUE_MAX: usize = 4096;

extern "C" {
    /// Event i's number of attributes (0 when i is out of range).
    pub fn mq_lease_attr_count(lease: *const mq_lease, i: usize) -> usize;
    /// Event i's value of `key`: NULL when absent, or i out of range. Valid until the
    /// lease is destroyed.
    pub fn mq_lease_attr(lease: *const mq_lease, i: usize, key: *const c_char) -> *const c_char;
    /// Event i's attribute j, in publish order (*key and *value valid until the lease
    /// is destroyed; MQ_ERR_ARG when i or j is out of range or an out-pointer is NULL,
    /// *key and *value then NULL). No server command.
    pub fn mq_lease_attr_at(
        lease: *const mq_lease,
        i: usize,
        j: usize,
        key: *mut *const c_char,
        value: *mut *const c_char,
        err: *mut mq_error,
    ) -> mq_status;
}

// ---- Automatic repair (0.3.0) -----------------------------------------------------

extern "C" {
    pub fn mq_queue_set_repair_interval(queue: *mut mq_queue, interval_s: f64, err: *mut mq_error) -> mq_status;
    pub fn mq_queue_repair_counts(queue: *const mq_queue, runs: *mut u64, fixed: *mut u64);

    pub fn mq_publish_at(
        queue: *mut mq_queue,
        group_id: *const c_char,
        event: *const c_void,
        event_len: usize,
        priority: c_int,
        not_before_epoch_s: f64,
        seq_out: *mut i64,
        err: *mut mq_error,
    ) -> mq_status;

    pub fn mq_queue_set_max_attempts(queue: *mut mq_queue, max_attempts: c_int, err: *mut mq_error) -> mq_status;
    pub fn mq_dead_count(queue: *mut mq_queue, count: *mut i64, err: *mut mq_error) -> mq_status;
    pub fn mq_dead_requeue(queue: *mut mq_queue, seq: i64, new_seq: *mut i64, err: *mut mq_error) -> mq_status;
    pub fn mq_dead_purge(queue: *mut mq_queue, purged: *mut i64, err: *mut mq_error) -> mq_status;

    pub fn mq_stats_json(queue: *mut mq_queue, json_out: *mut *mut c_char, err: *mut mq_error) -> mq_status;
    pub fn mq_free(ptr: *mut c_void);
    pub fn mq_repair(queue: *mut mq_queue, fixed: *mut i64, err: *mut mq_error) -> mq_status;
    pub fn mq_purge_group(queue: *mut mq_queue, group_id: *const c_char, err: *mut mq_error) -> mq_status;
    pub fn mq_queue_drop(queue: *mut mq_queue, err: *mut mq_error) -> mq_status;
    pub fn mq_peek_json(
        queue: *mut mq_queue,
        group_id: *const c_char,
        max_events: usize,
        json_out: *mut *mut c_char,
        err: *mut mq_error,
    ) -> mq_status;
    pub fn mq_dead_list_json(
        queue: *mut mq_queue,
        max_events: usize,
        json_out: *mut *mut c_char,
        err: *mut mq_error,
    ) -> mq_status;
}

// ---- Groups: listing, pausing; dead letters by page (0.5.0) ------------------------

// A group's state, as mq_groups_json shows it and filters on: bit flags, OR them in
// mq_groups_opts.states (0: every state).

/// Due now: available_at <= now.
pub const MQ_GROUP_READY: c_uint = 1;
/// Held: available_at > now with a token (a nack with a delay keeps it held).
pub const MQ_GROUP_LEASED: c_uint = 2;
/// available_at > now without a token: waiting for a scheduled head.
pub const MQ_GROUP_PARKED: c_uint = 4;
/// Paused (mq_pause_group): never claimed until resumed.
pub const MQ_GROUP_PAUSED: c_uint = 8;

/// By group id, ascending (byte order).
pub const MQ_GROUPS_SORT_ID: c_int = 0;
/// By available_at, ascending: the order claims take them.
pub const MQ_GROUPS_SORT_DUE: c_int = 1;

pub const MQ_GROUPS_OPTS_VERSION: c_uint = 1;

/// Options of mq_groups_json.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct mq_groups_opts {
    /// MQ_GROUPS_OPTS_VERSION.
    pub version: c_uint,
    /// OR of MQ_GROUP_*; 0: every state.
    pub states: c_uint,
    /// Only group ids that start with it; NULL or "": all.
    pub id_prefix: *const c_char,
    /// Only groups whose head was delivered at least this often; 0: any.
    pub min_attempts: c_int,
    /// > 0: only leases taken more than this long ago.
    pub held_longer_than_s: f64,
    /// > 0: only groups not due for more than this.
    pub parked_beyond_s: f64,
    /// MQ_GROUPS_SORT_ID (default) or MQ_GROUPS_SORT_DUE.
    pub sort: c_int,
    /// The previous page's "next"; NULL or "": the first page.
    pub after: *const c_char,
    /// Rows per page, 1..1000; 0: 50.
    pub limit: usize,
}

/// The header's `MQ_GROUPS_OPTS_INIT`: version 1, every state, no filter, by id, the
/// first page of 50.
pub const MQ_GROUPS_OPTS_INIT: mq_groups_opts = mq_groups_opts {
    version: MQ_GROUPS_OPTS_VERSION,
    states: 0,
    id_prefix: core::ptr::null(),
    min_attempts: 0,
    held_longer_than_s: 0.0,
    parked_beyond_s: 0.0,
    sort: MQ_GROUPS_SORT_ID,
    after: core::ptr::null(),
    limit: 0,
};

extern "C" {
    /// Fills *opts with the defaults of `version`.
    pub fn mq_groups_opts_init(opts: *mut mq_groups_opts, version: c_uint) -> mq_status;
    /// One page of groups as JSON (`{"groups": [...], "next": ..., "now": ...}`,
    /// release with mq_free). opts NULL: defaults. 3 commands (1 when empty).
    pub fn mq_groups_json(
        queue: *mut mq_queue,
        opts: *const mq_groups_opts,
        json_out: *mut *mut c_char,
        err: *mut mq_error,
    ) -> mq_status;
    /// No claim takes the group until mq_resume_group; the holder keeps its lease.
    /// Pausing a paused group is MQ_OK. 2 commands.
    pub fn mq_pause_group(queue: *mut mq_queue, group_id: *const c_char, err: *mut mq_error) -> mq_status;
    /// Resuming a group that is not paused is MQ_OK. 2 commands.
    pub fn mq_resume_group(queue: *mut mq_queue, group_id: *const c_char, err: *mut mq_error) -> mq_status;
}

pub const MQ_DEAD_LIST_OPTS_VERSION: c_uint = 1;

/// Options of mq_dead_list_with.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct mq_dead_list_opts {
    /// MQ_DEAD_LIST_OPTS_VERSION.
    pub version: c_uint,
    /// Letters per page, 1..1000; 0: 50.
    pub limit: usize,
    /// Letters to skip, oldest seq first.
    pub offset: usize,
}

/// The header's `MQ_DEAD_LIST_OPTS_INIT`: version 1, a page of 50 from the first.
pub const MQ_DEAD_LIST_OPTS_INIT: mq_dead_list_opts =
    mq_dead_list_opts { version: MQ_DEAD_LIST_OPTS_VERSION, limit: 0, offset: 0 };

extern "C" {
    /// Fills *opts with the defaults of `version`.
    pub fn mq_dead_list_opts_init(opts: *mut mq_dead_list_opts, version: c_uint) -> mq_status;
    /// A page of dead letters, oldest seq first: `{"letters": [...], "offset": n,
    /// "total": n}` (release with mq_free). opts NULL: defaults. 2 commands.
    pub fn mq_dead_list_with(
        queue: *mut mq_queue,
        opts: *const mq_dead_list_opts,
        json_out: *mut *mut c_char,
        err: *mut mq_error,
    ) -> mq_status;
}

// ---- Partitioned queues: past one primary (0.8.0) ---------------------------------
//
// A queue may be spread over P partitions: a group belongs to partition
// mq_group_partition(group_id, P), its lock carries it, and every command of a publish,
// claim, ack, nack, extend, unclaim, pause or resume names it. Per-group FIFO,
// exclusivity and fencing hold as with one partition; round-robin holds within each
// partition, a claim starts at the next partition in turn. Seqs stay unique and
// increase within a group: partition k's n-th event gets (n - 1) * P + k + 1. P is
// fixed by the first open with it (recorded in the counters); another P is MQ_ERR_ARG
// naming both. P = 1 is the default and the schema before 0.8.0.

/// The most partitions a queue may have.
pub const MQ_PARTITIONS_MAX: c_int = 1024;

pub const MQ_QUEUE_OPTS_VERSION: c_uint = 1;

/// Options of mq_queue_new_with.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct mq_queue_opts {
    /// MQ_QUEUE_OPTS_VERSION.
    pub version: c_uint,
    /// 1..MQ_PARTITIONS_MAX, default 1.
    pub partitions: c_int,
}

/// The header's `MQ_QUEUE_OPTS_INIT`: version 1, one partition.
pub const MQ_QUEUE_OPTS_INIT: mq_queue_opts = mq_queue_opts { version: MQ_QUEUE_OPTS_VERSION, partitions: 1 };

extern "C" {
    /// Fills *opts with the defaults of `version`.
    pub fn mq_queue_opts_init(opts: *mut mq_queue_opts, version: c_uint) -> mq_status;
    /// mq_queue_new with options (NULL: defaults, which is mq_queue_new); the first
    /// open with P > 1 writes the record of P (1 command more, once).
    pub fn mq_queue_new_with(
        client: *mut mq_client,
        db_name: *const c_char,
        prefix: *const c_char,
        opts: *const mq_queue_opts,
        out: *mut *mut mq_queue,
        err: *mut mq_error,
    ) -> mq_status;
    /// The queue's number of partitions (1 unless opened with more); 0 for NULL.
    pub fn mq_queue_partitions(queue: *const mq_queue) -> c_int;
    /// The partition of group_id among `partitions` (FNV-1a 64, fmix64, modulo); 0
    /// when partitions is 1; -1 for NULL or partitions outside 1..MQ_PARTITIONS_MAX.
    pub fn mq_group_partition(group_id: *const c_char, partitions: c_int) -> c_int;
    /// The partition of the lease's group (0 in a queue of one partition); -1 for NULL.
    pub fn mq_lease_partition(lease: *const mq_lease) -> c_int;
}

// ---- Time, log --------------------------------------------------------------------

extern "C" {
    pub fn mq_queue_clock_offset(queue: *const mq_queue) -> f64;
    pub fn mq_queue_now(queue: *mut mq_queue) -> f64;
    pub fn mq_queue_set_clock(queue: *mut mq_queue, clock: mq_clock_fn, ctx: *mut c_void);
    pub fn mq_log_set_handler(handler: mq_log_fn, ctx: *mut c_void);
}
