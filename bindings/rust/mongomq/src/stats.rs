//! The parsed stats of a queue (`mq_stats_json`) and the automatic repair's counts.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// A queue's state ([`Queue::stats`](crate::Queue::stats)), parsed from
/// `mq_stats_json` (docs/design.md, "Stats"). Serialize it back with serde_json to get
/// the library's keys and values (`now` as epoch seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// `"db.prefix"`.
    pub queue: String,
    /// The queue clock when the stats were taken.
    #[serde(with = "crate::time::epoch_seconds")]
    pub now: SystemTime,
    /// Events in the queue (harel's included).
    pub messages: u64,
    /// Dead letters.
    pub dead: u64,
    /// Events ever published to the queue (the seq counter; a requeued dead letter
    /// counts again); 0 before the first.
    pub published: u64,
    /// Groups by state.
    pub groups: GroupStats,
    /// Age of the oldest event in seconds (the library's key, which says its unit);
    /// `None` with no events (or one without a publish time, as harel's).
    pub oldest_message_age_s: Option<f64>,
    /// Per priority 0..=4 (always all five keys).
    pub priorities: BTreeMap<u8, PriorityStats>,
    /// The queue's number of partitions (0.8.0; `published` then sums every
    /// partition's counter).
    #[serde(default = "one_partition")]
    pub partitions: usize,
}

/// A library before 0.8.0 wrote no `partitions`: its queues have one.
fn one_partition() -> usize {
    1
}

/// Groups by state (the states of [`GroupState`](crate::GroupState)): `total` is the
/// sum of the other four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupStats {
    /// Claimable now.
    pub ready: u64,
    /// Held by a worker (including groups nacked with a delay).
    pub leased: u64,
    /// Waiting for a scheduled head.
    pub parked: u64,
    /// Paused ([`Queue::pause_group`](crate::Queue::pause_group)), whatever their lease
    /// or schedule: counted here only.
    pub paused: u64,
    /// Every group (with events, or paused ahead of its first).
    pub total: u64,
}

/// Groups and events of one priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityStats {
    /// Groups with this priority.
    pub groups: u64,
    /// Events published with this priority.
    pub messages: u64,
}

/// What [`Queue::repair_counts`](crate::Queue::repair_counts) returns: this handle's
/// automatic repairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RepairCounts {
    /// Automatic repairs run.
    pub runs: u64,
    /// Locks they re-created.
    pub fixed: u64,
}
