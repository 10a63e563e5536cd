//! Groups for tooling: a page of the queue's groups with their state, holder and
//! backlog (`mq_groups_json`, parsed into `GroupsPage`; its options `GroupsOptions` over
//! `mq_groups_opts`), and pausing and resuming one group (`mq_pause_group`,
//! `mq_resume_group`).

use std::ffi::{c_char, c_int, c_uint};
use std::fmt;
use std::ptr;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use mongomq_sys as sys;
use serde::{Deserialize, Serialize};

use crate::admin::{parse_json, take_text};
use crate::error::{c_string, check, Error, Result};
use crate::queue::{opt_ptr, Queue};

/// Rows per page the library allows (`mq_groups_opts.limit`).
const LIMIT_MAX: usize = 1000;

/// A group's state, as [`Queue::groups`] shows it ([`GroupInfo::state`]) and filters
/// on ([`GroupsOptions::states`]). The first three are the stats' ([`GroupStats`]);
/// a paused group is only paused, whatever its lease or schedule.
///
/// Its text is the library's (`"ready"`, `"leased"`, `"parked"`, `"paused"`): `Display`
/// writes it and `FromStr` reads it back, where a name that is none of them is an
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the state
/// (a state from a command line or a URL, say).
///
/// ```
/// use mongomq::{ErrorKind, GroupState};
/// assert_eq!("leased".parse::<GroupState>().unwrap(), GroupState::Leased);
/// assert_eq!(GroupState::Paused.to_string(), "paused");
/// assert_eq!("stuck".parse::<GroupState>().unwrap_err().kind(), ErrorKind::InvalidArgument);
/// ```
///
/// [`GroupStats`]: crate::GroupStats
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum GroupState {
    /// Due now: the next claim may take it (new, released, retried, or a lease that ran
    /// out).
    Ready,
    /// Held by a worker (a nack with a delay keeps it held).
    Leased,
    /// Waiting for a scheduled head.
    Parked,
    /// Paused ([`Queue::pause_group`]): no claim takes it until it is resumed.
    Paused,
}

impl GroupState {
    /// Every state, in the library's order.
    pub const ALL: [GroupState; 4] = [GroupState::Ready, GroupState::Leased, GroupState::Parked, GroupState::Paused];

    /// The library's name of the state: `"ready"`, `"leased"`, `"parked"` or `"paused"`.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupState::Ready => "ready",
            GroupState::Leased => "leased",
            GroupState::Parked => "parked",
            GroupState::Paused => "paused",
        }
    }

    /// Its `MQ_GROUP_*` flag.
    fn flag(self) -> c_uint {
        match self {
            GroupState::Ready => sys::MQ_GROUP_READY,
            GroupState::Leased => sys::MQ_GROUP_LEASED,
            GroupState::Parked => sys::MQ_GROUP_PARKED,
            GroupState::Paused => sys::MQ_GROUP_PAUSED,
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupState {
    type Err = Error;

    fn from_str(text: &str) -> Result<GroupState> {
        GroupState::ALL.into_iter().find(|s| s.as_str() == text).ok_or_else(|| {
            Error::argument(
                "GroupState::from_str",
                format_args!("state {text:?} is none of ready, leased, parked, paused"),
            )
        })
    }
}

/// The order of a page of groups ([`GroupsOptions::sort`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GroupsSort {
    /// By group id, ascending (byte order of the UTF-8). The default.
    #[default]
    Id,
    /// By when each is due (`available_at`), soonest first: the order claims take them
    /// (paused groups come in their place too).
    Due,
}

/// What [`Queue::groups`] lists: a builder with the library's defaults. Every filter
/// narrows the page (they combine with "and").
///
/// | option | default |
/// |---|---|
/// | [`states`](GroupsOptions::states) | every state |
/// | [`id_prefix`](GroupsOptions::id_prefix) | every id |
/// | [`min_attempts`](GroupsOptions::min_attempts) | 0: any |
/// | [`held_longer_than`](GroupsOptions::held_longer_than) | zero: no filter |
/// | [`parked_beyond`](GroupsOptions::parked_beyond) | zero: no filter |
/// | [`sort`](GroupsOptions::sort) | [`GroupsSort::Id`] |
/// | [`after`](GroupsOptions::after) | none: the first page |
/// | [`limit`](GroupsOptions::limit) | 50 |
///
/// ```
/// use std::time::Duration;
/// use mongomq::{GroupState, GroupsOptions, GroupsSort};
/// // Held for more than a minute, longest-due last, 100 a page:
/// let slow = GroupsOptions::new()
///     .states([GroupState::Leased])
///     .held_longer_than(Duration::from_secs(60))
///     .sort(GroupsSort::Due)
///     .limit(100);
/// // Delivered twice or more ("stuck"), among the customer-* groups:
/// let stuck = GroupsOptions::new().id_prefix("customer-").min_attempts(2);
/// # let _ = (slow, stuck);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct GroupsOptions {
    states: c_uint,
    id_prefix: Option<String>,
    min_attempts: u32,
    held_longer_than: Duration,
    parked_beyond: Duration,
    sort: GroupsSort,
    after: Option<String>,
    limit: usize,
}

impl Default for GroupsOptions {
    fn default() -> Self {
        GroupsOptions {
            states: 0,
            id_prefix: None,
            min_attempts: 0,
            held_longer_than: Duration::ZERO,
            parked_beyond: Duration::ZERO,
            sort: GroupsSort::Id,
            after: None,
            limit: 50,
        }
    }
}

impl GroupsOptions {
    /// The defaults (see the table above); the same as `GroupsOptions::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only groups in one of these states; none (the default, or an empty list): every
    /// state. Replaces an earlier call's.
    pub fn states(mut self, states: impl IntoIterator<Item = GroupState>) -> Self {
        self.states = states.into_iter().fold(0, |bits, s| bits | s.flag());
        self
    }

    /// Only groups whose id starts with `prefix` (literally: no pattern); `""`: every
    /// id.
    pub fn id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = Some(prefix.into());
        self
    }

    /// Only groups whose head was delivered at least this often (2: "stuck", delivered
    /// and not acked before); 0: any.
    pub fn min_attempts(mut self, attempts: u32) -> Self {
        self.min_attempts = attempts;
        self
    }

    /// Only groups whose current lease was taken more than `held` ago (so only held
    /// groups); zero: no filter.
    pub fn held_longer_than(mut self, held: Duration) -> Self {
        self.held_longer_than = held;
        self
    }

    /// Only groups not due for more than `parked` (leased, parked or paused ones
    /// whose due time is that far ahead); zero: no filter.
    pub fn parked_beyond(mut self, parked: Duration) -> Self {
        self.parked_beyond = parked;
        self
    }

    /// The page's order: by id (the default) or by due.
    pub fn sort(mut self, sort: GroupsSort) -> Self {
        self.sort = sort;
        self
    }

    /// The page after the one whose [`next`](GroupsPage::next) this is (the cursor of
    /// the same sort; another is an argument error). Pages by a cursor, not an offset:
    /// each costs the same, and a walk visits every group once.
    pub fn after(mut self, cursor: impl Into<String>) -> Self {
        self.after = Some(cursor.into());
        self
    }

    /// Groups per page, 1..1000 (50).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// One page of groups ([`Queue::groups`]), parsed from `mq_groups_json`. Serialized
/// back with serde_json it has the library's keys (instants as epoch seconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupsPage {
    /// The page's groups, in the options' order.
    pub groups: Vec<GroupInfo>,
    /// The cursor of the next page (for [`GroupsOptions::after`]); `None` on the last
    /// page.
    pub next: Option<String>,
    /// The queue clock the states were judged at.
    #[serde(with = "crate::time::epoch_seconds")]
    pub now: SystemTime,
}

/// One group as [`Queue::groups`] shows it: its lock, and its events counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// The group id.
    pub group: String,
    /// Its state at the page's [`now`](GroupsPage::now).
    pub state: GroupState,
    /// Whether it is paused (then `state` is [`GroupState::Paused`]).
    pub paused: bool,
    /// Its priority (0..4), paused or not.
    pub priority: i64,
    /// Deliveries of its head so far.
    pub attempts: i64,
    /// When it is due (queue clock): the lease's deadline while held.
    #[serde(default, with = "crate::time::epoch_seconds::option")]
    pub available_at: Option<SystemTime>,
    /// The worker id of its lease holder (its last holder's, when the lease ran out),
    /// or `None`.
    #[serde(default)]
    pub holder: Option<String>,
    /// How long the current lease has been held; `None` unless held.
    #[serde(default, rename = "held_for_s", with = "crate::time::seconds_option")]
    pub held_for: Option<Duration>,
    /// When the current lease runs out (queue clock); `None` unless held.
    #[serde(default, with = "crate::time::epoch_seconds::option")]
    pub lease_deadline: Option<SystemTime>,
    /// Events in the group.
    pub backlog: u64,
    /// The seq of its oldest event, or `None` (no events).
    #[serde(default)]
    pub head: Option<i64>,
    /// Since the head was published (zero when two machines' clocks put it a little
    /// ahead); `None` without a head or its publish time.
    #[serde(default, rename = "head_age_s", with = "crate::time::seconds_option")]
    pub head_age: Option<Duration>,
}

impl Queue {
    /// One page of the queue's groups as the library's JSON text (`{"groups": [...],
    /// "next": ..., "now": ...}`); see [`groups`](Queue::groups).
    pub fn groups_json(&self, opts: &GroupsOptions) -> Result<String> {
        const FUNCTION: &str = "mq_groups_json";
        if opts.limit == 0 {
            return Err(Error::argument("groups", format_args!("limit is 0, outside 1..{LIMIT_MAX}")));
        }
        let min_attempts = c_int::try_from(opts.min_attempts).map_err(|_| {
            Error::argument("groups", format_args!("min_attempts is {}, more than {}", opts.min_attempts, c_int::MAX))
        })?;
        let prefix = opts.id_prefix.as_deref().map(|p| c_string(FUNCTION, "id_prefix", p)).transpose()?;
        let after = opts.after.as_deref().map(|a| c_string(FUNCTION, "after", a)).transpose()?;
        let mut c_opts = sys::MQ_GROUPS_OPTS_INIT;
        c_opts.states = opts.states;
        c_opts.id_prefix = opt_ptr(&prefix);
        c_opts.min_attempts = min_attempts;
        c_opts.held_longer_than_s = opts.held_longer_than.as_secs_f64();
        c_opts.parked_beyond_s = opts.parked_beyond.as_secs_f64();
        c_opts.sort = match opts.sort {
            GroupsSort::Id => sys::MQ_GROUPS_SORT_ID,
            GroupsSort::Due => sys::MQ_GROUPS_SORT_DUE,
        };
        c_opts.after = opt_ptr(&after);
        c_opts.limit = opts.limit;
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; c_opts is a filled mq_groups_opts whose
        // id_prefix and after are NULL or the C strings `prefix` and `after`, alive until
        // the end of this function (the library keeps neither); json and err point to
        // locals.
        let status = unsafe { sys::mq_groups_json(self.ptr(), &c_opts, &mut json, &mut err) };
        take_text(FUNCTION, status, &err, json)
    }

    /// One page of the queue's groups: each with its state, holder, lease age and
    /// deadline, head's attempts, backlog and head age, filtered and ordered by `opts`;
    /// [`GroupsPage::next`] is the cursor of the page after it. 3 server commands (1
    /// when the page is empty), each on an index with a limit: for tooling (the view
    /// of `mongomq groups` and `mongomq web`), not for every event.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_groups", "q")?;
    /// use mongomq::{GroupState, GroupsOptions};
    /// for g in ["a", "b", "c"] {
    ///     queue.publish(g, b"x", &mongomq::PublishOptions::default())?;
    /// }
    /// queue.pause_group("c")?;
    /// let mut opts = GroupsOptions::new().limit(2);
    /// let mut seen = Vec::new();
    /// loop {
    ///     let page = queue.groups(&opts)?;
    ///     seen.extend(page.groups.into_iter().map(|g| (g.group, g.state, g.backlog)));
    ///     match page.next {
    ///         Some(next) => opts = opts.after(next),
    ///         None => break,
    ///     }
    /// }
    /// assert_eq!(seen, [("a".into(), GroupState::Ready, 1), ("b".into(), GroupState::Ready, 1),
    ///                   ("c".into(), GroupState::Paused, 1)]);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn groups(&self, opts: &GroupsOptions) -> Result<GroupsPage> {
        parse_json("mq_groups_json", &self.groups_json(opts)?)
    }

    /// Pauses `group`: no claim takes it (harel's neither) until
    /// [`resume_group`](Queue::resume_group). A worker holding it keeps its lease until
    /// it acks, nacks or lets it run out; the pause outlasts the group's draining and
    /// refilling and [`purge_group`](Queue::purge_group). A group without events can be
    /// paused ahead (its first publish finds it paused). Pausing a paused group changes
    /// nothing and is `Ok`. 2 server commands.
    pub fn pause_group(&self, group: &str) -> Result<()> {
        let group = c_string("mq_pause_group", "group_id", group)?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string valid for the call.
        let status = unsafe { sys::mq_pause_group(self.ptr(), group.as_ptr(), &mut err) };
        check(status, &err)
    }

    /// Resumes a paused `group`: claimable again, at its priority, in its place in
    /// line. Resuming a group that is not paused changes nothing and is `Ok`. 2 server
    /// commands.
    pub fn resume_group(&self, group: &str) -> Result<()> {
        let group = c_string("mq_resume_group", "group_id", group)?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string valid for the call.
        let status = unsafe { sys::mq_resume_group(self.ptr(), group.as_ptr(), &mut err) };
        check(status, &err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_the_library_flags() {
        assert_eq!(GroupsOptions::new().states, 0);
        assert_eq!(GroupsOptions::new().states([GroupState::Leased, GroupState::Paused]).states, 2 | 8);
        assert_eq!(GroupsOptions::new().states(GroupState::ALL).states, 15);
        assert_eq!(GroupsOptions::new().states([GroupState::Ready]).states([]).states, 0, "replaced");
        for s in GroupState::ALL {
            assert_eq!(s.to_string().parse::<GroupState>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        let err = "Ready".parse::<GroupState>().unwrap_err();
        assert!(err.message().contains("state \"Ready\""), "{err}");
    }

    #[test]
    fn a_row_parses_and_serializes_back() {
        let text = r#"{"groups":[{"attempts":1,"available_at":1000000061.0,"backlog":1,"group":"b","head":3,
            "head_age_s":-0.002,"held_for_s":2.0,"holder":"host:7:w1","lease_deadline":1000000061.0,"paused":false,
            "priority":1,"state":"leased"}],"next":"id:b","now":1000000003.0}"#;
        let page: GroupsPage = serde_json::from_str(text).unwrap();
        let b = &page.groups[0];
        assert_eq!(
            (b.state, b.holder.as_deref(), b.held_for),
            (GroupState::Leased, Some("host:7:w1"), Some(Duration::from_secs(2)))
        );
        assert_eq!(b.head_age, Some(Duration::ZERO), "a head a little ahead is zero old");
        assert_eq!(page.next.as_deref(), Some("id:b"));
        let back: serde_json::Value = serde_json::to_value(&page).unwrap();
        assert_eq!(back["groups"][0]["held_for_s"], 2.0);
        assert_eq!(back["groups"][0]["lease_deadline"], 1_000_000_061.0);
        assert_eq!(back["now"], 1_000_000_003.0);
    }
}
