//! The queue's admin and inspection calls: dead letters (by page too), stats, peek,
//! repair, purge, drop, and the per-handle settings (max attempts, the automatic
//! repair's period). The group listing and pausing are in groups.rs.

use std::ffi::{c_char, CStr};
use std::ptr;
use std::time::Duration;

use mongomq_sys as sys;

use crate::error::{c_string, check, Error, Result};
use crate::queue::{opt_ptr, Queue};
use crate::stats::{RepairCounts, Stats};
use crate::stored::{DeadPage, StoredEvent};

/// The text a `*_json` call returned: copied, then released with mq_free.
pub(crate) fn take_text(
    function: &str,
    status: sys::mq_status,
    err: &sys::mq_error,
    json: *mut c_char,
) -> Result<String> {
    check(status, err)?;
    if json.is_null() {
        return Err(Error::internal(format!("{function} returned MQ_OK and no text")));
    }
    // SAFETY: on MQ_OK json is a NUL-terminated string the library allocated for us;
    // it is copied here, then released with mq_free, exactly once.
    let text = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
    // SAFETY: json came from the library's *_json call and is not used after this.
    unsafe { sys::mq_free(json.cast()) };
    Ok(text)
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(function: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("{function}: cannot parse {text:?}: {e}")))
}

/// `limit` checked here, so that the error names the crate's argument (the C call
/// names its own, `max_events`).
fn check_limit(function: &str, limit: usize) -> Result<()> {
    if limit == 0 || limit > sys::MQ_BATCH_MAX {
        return Err(Error::argument(function, format_args!("limit is {limit}, outside 1..{}", sys::MQ_BATCH_MAX)));
    }
    Ok(())
}

impl Queue {
    /// With `max_attempts` > 0, a claim that would deliver a head for the
    /// (max_attempts + 1)th time moves it to the dead letters instead. 0: unlimited
    /// (the default). Applies to this queue handle and its clones.
    pub fn set_max_attempts(&self, max_attempts: u32) -> Result<()> {
        let n = i32::try_from(max_attempts).map_err(|_| {
            Error::argument(
                "mq_queue_set_max_attempts",
                format_args!("max_attempts is {max_attempts}, more than {}", i32::MAX),
            )
        })?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_max_attempts(self.ptr(), n, &mut err) };
        check(status, &err)
    }

    fn count_call(
        &self,
        call: unsafe extern "C" fn(*mut sys::mq_queue, *mut i64, *mut sys::mq_error) -> sys::mq_status,
    ) -> Result<i64> {
        let mut n = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: call is one of mq_dead_count, mq_dead_purge, mq_repair (all take the
        // queue, an i64 out-parameter and the error); the queue is alive for &self, n
        // and err point to locals.
        let status = unsafe { call(self.ptr(), &mut n, &mut err) };
        check(status, &err)?;
        Ok(n)
    }

    /// Number of dead letters.
    pub fn dead_count(&self) -> Result<i64> {
        self.count_call(sys::mq_dead_count)
    }

    /// Publishes the dead letter `seq` again at the tail of its group; returns its new
    /// seq. A seq that is no dead letter is an argument error.
    pub fn dead_requeue(&self, seq: i64) -> Result<i64> {
        let mut new_seq = 0i64;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; new_seq and err point to locals.
        let status = unsafe { sys::mq_dead_requeue(self.ptr(), seq, &mut new_seq, &mut err) };
        check(status, &err)?;
        Ok(new_seq)
    }

    /// Removes every dead letter; returns how many.
    pub fn dead_purge(&self) -> Result<i64> {
        self.count_call(sys::mq_dead_purge)
    }

    /// The queue's state as the library's JSON text (docs/design.md, "Stats").
    pub fn stats_json(&self) -> Result<String> {
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; json and err point to locals.
        let status = unsafe { sys::mq_stats_json(self.ptr(), &mut json, &mut err) };
        take_text("mq_stats_json", status, &err, json)
    }

    /// The queue's state, parsed. 3 server commands that read whole collections: for
    /// monitoring, not for every event.
    pub fn stats(&self) -> Result<Stats> {
        parse_json("mq_stats_json", &self.stats_json()?)
    }

    /// Up to `limit` (1..10,000) events, oldest first, of one group (or of the whole
    /// queue with `None`), as the library's JSON array; nothing is claimed or changed.
    /// 1 server command: for tooling.
    pub fn peek_json(&self, group: Option<&str>, limit: usize) -> Result<String> {
        check_limit("peek", limit)?;
        let group = group.map(|g| c_string("mq_peek_json", "group_id", g)).transpose()?;
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is NULL or a C string valid for
        // the call; json and err point to locals.
        let status = unsafe { sys::mq_peek_json(self.ptr(), opt_ptr(&group), limit, &mut json, &mut err) };
        take_text("mq_peek_json", status, &err, json)
    }

    /// [`peek_json`](Queue::peek_json), parsed: the events with their bytes.
    pub fn peek(&self, group: Option<&str>, limit: usize) -> Result<Vec<StoredEvent>> {
        parse_json("mq_peek_json", &self.peek_json(group, limit)?)
    }

    /// The dead letters, oldest first, up to `limit` (1..10,000), as the library's
    /// JSON array (with `attempts` and `dead_at`). 1 server command.
    pub fn dead_list_json(&self, limit: usize) -> Result<String> {
        check_limit("dead_list", limit)?;
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; json and err point to locals.
        let status = unsafe { sys::mq_dead_list_json(self.ptr(), limit, &mut json, &mut err) };
        take_text("mq_dead_list_json", status, &err, json)
    }

    /// [`dead_list_json`](Queue::dead_list_json), parsed.
    pub fn dead_list(&self, limit: usize) -> Result<Vec<StoredEvent>> {
        parse_json("mq_dead_list_json", &self.dead_list_json(limit)?)
    }

    /// A page of the dead letters as the library's JSON text (`{"letters": [...],
    /// "offset": n, "total": n}`); see [`dead_page`](Queue::dead_page).
    pub fn dead_page_json(&self, offset: usize, limit: usize) -> Result<String> {
        if limit == 0 {
            return Err(Error::argument("dead_page", "limit is 0, outside 1..1000"));
        }
        let mut c_opts = sys::MQ_DEAD_LIST_OPTS_INIT;
        c_opts.offset = offset;
        c_opts.limit = limit;
        let mut json: *mut c_char = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; c_opts is a filled mq_dead_list_opts;
        // json and err point to locals.
        let status = unsafe { sys::mq_dead_list_with(self.ptr(), &c_opts, &mut json, &mut err) };
        take_text("mq_dead_list_with", status, &err, json)
    }

    /// Up to `limit` (1..1000) dead letters, oldest seq first, after skipping `offset`
    /// of them, and how many there are in all ([`DeadPage`]): a page of a dead-letter
    /// view. 2 server commands (the skip walks the index: a far offset costs what it
    /// skips).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_dead_page", "q")?;
    /// let page = queue.dead_page(0, 20)?;
    /// println!("{} of {} dead letters", page.letters.len(), page.total);
    /// # assert_eq!((page.letters.len(), page.offset, page.total), (0, 0, 0));
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn dead_page(&self, offset: usize, limit: usize) -> Result<DeadPage> {
        parse_json("mq_dead_list_with", &self.dead_page_json(offset, limit)?)
    }

    /// Re-creates the lock of every group that has events but no lock (a publisher
    /// that died between its two writes); returns how many. For start-up and a
    /// periodic sweep.
    pub fn repair(&self) -> Result<i64> {
        self.count_call(sys::mq_repair)
    }

    /// Sets the period of the automatic repair: when a claim finds nothing due and this
    /// long has passed since this handle's last automatic repair, it runs
    /// [`repair`](Queue::repair) first. Default 60 s; `Duration::ZERO` turns it off.
    /// Per handle (shared by its clones).
    pub fn set_repair_interval(&self, interval: Duration) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_set_repair_interval(self.ptr(), interval.as_secs_f64(), &mut err) };
        check(status, &err)
    }

    /// The automatic repairs this handle ran, and the locks they re-created.
    pub fn repair_counts(&self) -> RepairCounts {
        let (mut runs, mut fixed) = (0u64, 0u64);
        // SAFETY: the queue is alive for &self; runs and fixed point to locals.
        unsafe { sys::mq_queue_repair_counts(self.ptr(), &mut runs, &mut fixed) };
        RepairCounts { runs, fixed }
    }

    /// Removes a group's events and its lock; its lease holder's ack, nack and extend
    /// get [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost).
    pub fn purge_group(&self, group: &str) -> Result<()> {
        let group = c_string("mq_purge_group", "group_id", group)?;
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; group is a C string valid for the call.
        let status = unsafe { sys::mq_purge_group(self.ptr(), group.as_ptr(), &mut err) };
        check(status, &err)
    }

    /// Drops the queue's collections (events, locks, dead letters, counters): for
    /// tests and tooling. The handle stays usable (seqs start at 1 again), but without
    /// the indexes: open the queue again before real use. Not `drop`: that name is
    /// `Drop::drop`'s.
    pub fn drop_queue(&self) -> Result<()> {
        let mut err = sys::mq_error::new();
        // SAFETY: the queue is alive for &self; err points to a local.
        let status = unsafe { sys::mq_queue_drop(self.ptr(), &mut err) };
        check(status, &err)
    }
}
