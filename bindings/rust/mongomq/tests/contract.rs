//! Every scenario of bindings/CONTRACT.md, under its name (`test_<scenario>`), against
//! the server named by MONGOMQ_TEST_URI; each on a database of its own, dropped at the
//! end.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{claim, eventually, opts, secs, Fixture};
use mongomq::{
    Batch, CancelToken, ClaimOptions, Client, DedupScope, ErrorKind, GroupState, GroupsOptions, GroupsPage, GroupsSort,
    Lease, ManualClock, PublishOptions, Published, Queue, RepairCounts, WorkerError, WorkerOptions,
};

const PROMPTLY: Duration = Duration::from_secs(5);

// ---- the harel cases ---------------------------------------------------------------

#[test]
fn test_fifo_in_group() {
    let f = Fixture::new();
    let seqs: Vec<i64> =
        (0..5).map(|i| f.queue.publish("g", format!("e{i}"), &PublishOptions::default()).unwrap()).collect();
    for (i, seq) in seqs.iter().enumerate() {
        let lease = claim(&f.queue);
        assert_eq!(lease.seq(), *seq);
        assert_eq!(lease.event(), format!("e{i}").as_bytes());
        f.queue.ack(&lease).unwrap();
    }
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none());
}

#[test]
fn test_one_lease_per_group() {
    let f = Fixture::new();
    f.queue.publish("A", "a1", &PublishOptions::default()).unwrap();
    f.queue.publish("A", "a2", &PublishOptions::default()).unwrap();
    f.queue.publish("B", "b1", &PublishOptions::default()).unwrap();
    let first = claim(&f.queue);
    let second = claim(&f.queue);
    // With partitions, A and B may be in two, and the first claim takes from the
    // turn's: either comes first; with one, A (it waited longest).
    let (a, b) = if f.queue.partitions() > 1 && first.group() == "B" { (&second, &first) } else { (&first, &second) };
    assert_eq!((a.group(), a.event(), b.group(), b.event()), ("A", &b"a1"[..], "B", &b"b1"[..]), "one lease per group");
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "A is leased, B is leased: nothing is due");
}

#[test]
fn test_every_ready_group_claimed() {
    let f = Fixture::new();
    for g in 0..10 {
        f.queue.publish(&format!("g{g}"), "x", &PublishOptions::default()).unwrap();
    }
    let leases: Vec<Lease> = (0..10).map(|_| claim(&f.queue)).collect();
    let groups: HashSet<&str> = leases.iter().map(Lease::group).collect();
    assert_eq!(groups.len(), 10);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none());
}

#[test]
fn test_round_robin() {
    let f = Fixture::new();
    for i in 0..3 {
        f.queue.publish("A", format!("a{i}"), &PublishOptions::default()).unwrap();
    }
    for i in 0..3 {
        f.queue.publish("B", format!("b{i}"), &PublishOptions::default()).unwrap();
    }
    let mut order = Vec::new();
    for _ in 0..6 {
        let lease = claim(&f.queue);
        order.push(String::from_utf8(lease.event().to_vec()).unwrap());
        f.queue.ack(&lease).unwrap();
    }
    let p = f.queue.partitions();
    if p > 1 && common::partition_of(&f.queue, "A") != common::partition_of(&f.queue, "B") {
        // Round-robin holds within a partition; A and B are in two, and each claim
        // starts at the next partition in turn: each group's events come in order, and
        // neither waits through P claims while it has events.
        assert_rotation(&order, p);
        return;
    }
    assert_eq!(order, ["a0", "b0", "a1", "b1", "a2", "b2"]);
}

/// Claims (`a0`, `b1`, ...: the group's letter and the event's index) over groups of
/// distinct partitions of a queue of `p`: each group's in publish order, and a group
/// that still has events is never passed over by `p` claims in a row.
fn assert_rotation(order: &[String], p: usize) {
    let mut next: HashMap<char, usize> = HashMap::new();
    let mut left: HashMap<char, usize> = HashMap::new();
    for e in order {
        *left.entry(e.chars().next().unwrap()).or_default() += 1;
    }
    let mut idle: HashMap<char, usize> = HashMap::new();
    for e in order {
        let g = e.chars().next().unwrap();
        let i = next.entry(g).or_default();
        assert_eq!(e, &format!("{g}{i}"), "claims {order:?}: the group's order");
        *i += 1;
        *left.get_mut(&g).unwrap() -= 1;
        for (&h, &n) in &left {
            let waited = idle.entry(h).or_default();
            if h == g {
                *waited = 0;
            } else if n > 0 {
                *waited += 1;
                assert!(*waited < p, "claims {order:?}: {h} passed over by {waited} claims in a row ({p} partitions)");
            }
        }
    }
}

#[test]
fn test_priority_floor() {
    let f = Fixture::new();
    for p in 0..=3 {
        f.queue.publish(&format!("p{p}"), "x", &PublishOptions::new().priority(p)).unwrap();
    }
    let lease = f.queue.claim(&opts(30_000).min_priority(3)).unwrap().expect("the priority 3 group");
    assert_eq!(lease.group(), "p3");
    assert!(f.queue.claim(&opts(30_000).min_priority(3)).unwrap().is_none());
    assert!(f.queue.claim(&opts(30_000).min_priority(0)).unwrap().is_some(), "lower groups wait for a lower floor");
}

#[test]
fn test_priority_reset_on_drain() {
    let f = Fixture::new();
    f.queue.publish("g", "high", &PublishOptions::new().priority(4)).unwrap();
    let lease = f.queue.claim(&opts(30_000).min_priority(4)).unwrap().expect("priority 4");
    f.queue.ack(&lease).unwrap();
    f.queue.publish("g", "low", &PublishOptions::default()).unwrap();
    assert!(f.queue.claim(&opts(30_000).min_priority(4)).unwrap().is_none(), "the drained group took priority 0");
    let lease = f.queue.claim(&opts(30_000).min_priority(0)).unwrap().unwrap();
    assert_eq!(lease.event(), b"low");
}

#[test]
fn test_ack_removes() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    f.queue.ack(&lease).unwrap();
    assert_eq!(f.queue.stats().unwrap().messages, 0);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none());
}

#[test]
fn test_nack_now() {
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    assert_eq!(lease.attempts(), 1);
    f.queue.nack(&lease, Duration::ZERO).unwrap();
    let again = claim(&f.queue);
    assert_eq!((again.seq(), again.attempts()), (seq, 2));
}

#[test]
fn test_nack_delay_parks() {
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    let nacked = Instant::now();
    f.queue.nack(&lease, Duration::from_millis(800)).unwrap();
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "parked during the delay");
    let mut again = None;
    assert!(eventually(Duration::from_secs(5), || {
        again = f.queue.claim(&opts(30_000)).unwrap();
        again.is_some()
    }));
    assert!(nacked.elapsed() >= Duration::from_millis(700), "claimed before the delay passed");
    let again = again.unwrap();
    assert_eq!((again.seq(), again.attempts()), (seq, 2));
}

#[test]
fn test_stale_owner_lease_lost() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let stale = f.queue.claim(&opts(300)).unwrap().unwrap();
    thread::sleep(Duration::from_millis(500));
    let other = f.other_handle();
    let taken = other.claim(&opts(30_000)).unwrap().expect("the expired group is taken over");
    assert_eq!(taken.attempts(), 2);
    let err = f.queue.ack(&stale).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
    other.ack(&taken).unwrap();
}

#[test]
fn test_extend_keeps_lease() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = f.queue.claim(&opts(600)).unwrap().unwrap();
    f.queue.extend(&lease, Duration::from_secs(5)).unwrap();
    thread::sleep(Duration::from_millis(900)); // past the first visibility
    let other = f.other_handle();
    assert!(other.claim(&opts(30_000)).unwrap().is_none(), "an extended lease is not claimable");
    f.queue.ack(&lease).unwrap();
}

#[test]
fn test_lease_expiry_redelivers() {
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let first = f.queue.claim(&opts(300)).unwrap().unwrap();
    assert_eq!(first.attempts(), 1);
    thread::sleep(Duration::from_millis(500));
    let again = claim(&f.queue);
    assert_eq!((again.seq(), again.attempts()), (seq, 2));
}

#[test]
fn test_unclaim_keeps_attempts() {
    let f = Fixture::new();
    let a = f.queue.publish("A", "a", &PublishOptions::default()).unwrap();
    f.queue.publish("B", "b", &PublishOptions::default()).unwrap();
    // "A then B" is an order within a partition: on a partitioned queue the claims
    // take from A's (B's may be another, whose turn could come first).
    let in_a = opts(30_000).partitions(common::partition_of(&f.queue, "A"));
    let unrun = f.queue.claim(&in_a).unwrap().expect("A");
    assert_eq!((unrun.group(), unrun.attempts()), ("A", 1));
    f.queue.unclaim(&unrun).unwrap(); // no handler ran: not a delivery
    let again = f.queue.claim(&in_a).unwrap().expect("A again");
    assert_eq!(
        (again.group(), again.seq(), again.attempts()),
        ("A", a, 1),
        "A kept its place ahead of B, and its attempts"
    );
    f.queue.ack(&again).unwrap();

    // A stale lease's unclaim is lease-lost and leaves the new holder alone.
    let stale = f.queue.claim(&opts(300)).unwrap().expect("B");
    assert_eq!(stale.group(), "B");
    thread::sleep(Duration::from_millis(500));
    let other = f.other_handle();
    let taken = other.claim(&opts(30_000)).unwrap().expect("the expired group is taken over");
    assert_eq!((taken.group(), taken.attempts()), ("B", 2));
    let err = f.queue.unclaim(&stale).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "B is still the new holder's");
    other.ack(&taken).unwrap();
}

// ---- bytes -----------------------------------------------------------------------

fn round_trip(event: &[u8]) {
    let f = Fixture::new();
    f.queue.publish("g", event, &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    assert_eq!(lease.event().len(), event.len());
    assert!(lease.event() == event, "the event came back changed");
    f.queue.ack(&lease).unwrap();
}

#[test]
fn test_bytes_text() {
    round_trip("grüße, 世界 — ✓".as_bytes());
}

#[test]
fn test_bytes_binary_nul() {
    round_trip(b"\x00a\x00\xff\xfe\x80 invalid utf-8 \xc3\x28 \x00");
}

#[test]
fn test_bytes_empty() {
    round_trip(b"");
}

#[test]
fn test_bytes_1mib() {
    let event: Vec<u8> = (0..1024 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    round_trip(&event);
}

#[test]
fn test_group_utf8() {
    let f = Fixture::new();
    let group = "kunde-Ærøskøbing-東京-🚚";
    f.queue.publish(group, "x", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    assert_eq!(lease.group(), group);
}

// ---- features --------------------------------------------------------------------

#[test]
fn test_batch_publish_claim() {
    let f = Fixture::new();
    let mut batch = Batch::new().unwrap();
    for i in 0..10 {
        batch.add(if i % 2 == 0 { "even" } else { "odd" }, format!("{i}"), &PublishOptions::default()).unwrap();
    }
    assert_eq!(batch.len(), 10);
    let seqs: Vec<i64> = f.queue.publish_batch_with(&batch).unwrap().iter().map(|p| p.seq).collect();
    // Consecutive with one partition; with more, even's and odd's counters are two
    // partitions' (or one's, interleaved): distinct and increasing within a group.
    let groups: Vec<&str> = (0..10).map(|i| if i % 2 == 0 { "even" } else { "odd" }).collect();
    common::assert_increasing(&f.queue, "the batch's seqs", &groups, &seqs);
    let lease = f.queue.claim(&opts(30_000).max_events(5)).unwrap().unwrap();
    assert_eq!(lease.count(), 5);
    // even: events 0, 2, 4, 6, 8; odd: 1, 3, ...; each at the seq the batch gave it
    let start = if lease.group() == "even" { 0 } else { 1 };
    let got: Vec<(i64, Vec<u8>)> = lease.events().map(|(s, e)| (s, e.to_vec())).collect();
    let want: Vec<(i64, Vec<u8>)> =
        (0..5).map(|k| start + 2 * k).map(|i| (seqs[i], i.to_string().into_bytes())).collect();
    assert_eq!(got, want);
    assert_eq!(lease.seq_at(5), None);
    f.queue.ack(&lease).unwrap();
    assert_eq!(f.queue.stats().unwrap().messages, 5);
}

#[test]
fn test_scheduled_event() {
    let f = Fixture::new();
    let in_a_second = PublishOptions::new().not_before(f.queue.now() + Duration::from_secs(1));
    let seq = f.queue.publish("g", "later", &in_a_second).unwrap();
    let published = Instant::now();
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "not claimable before its time");
    let mut lease = None;
    assert!(eventually(Duration::from_secs(6), || {
        lease = f.queue.claim(&opts(30_000)).unwrap();
        lease.is_some()
    }));
    assert!(published.elapsed() >= Duration::from_millis(800), "claimed before its time");
    assert_eq!(lease.unwrap().seq(), seq);
}

/// Attributes as `StoredEvent::attrs` holds them.
fn owned(attrs: &[(&str, &str)]) -> Vec<(String, String)> {
    attrs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn test_attributes_round_trip() {
    let f = Fixture::new();
    let q = &f.queue;
    // Refused before anything is sent, each naming the attribute: 17 of them, a key
    // with a space and a key given twice (the library's checks), a NUL in a key or a
    // value (the crate's: a C string cannot hold one).
    let seventeen = (0..17).fold(PublishOptions::new(), |o, i| o.attr(format!("k{i}"), "v"));
    let refused = [
        (seventeen, "attr_count is 17"),
        (PublishOptions::new().attr("ok", "1").attr("a key", "v"), "attrs[1].key \"a key\""),
        (PublishOptions::new().attr("k", "1").attr("k", "2"), "attrs[1].key \"k\" appears twice"),
        (PublishOptions::new().attr("a\0b", "v"), "attrs[0].key contains a NUL byte"),
        (PublishOptions::new().attr("k", "a\0b"), "attrs[0].value (key \"k\") contains a NUL byte"),
    ];
    for (bad, names) in &refused {
        assert_bad_argument(q.publish_with("g", "x", bad), names);
        assert_bad_argument(Batch::new().unwrap().add("g", "x", bad), names);
    }
    let stats = q.stats().unwrap();
    assert_eq!((stats.messages, stats.published), (0, 0), "nothing was published, not even a seq taken");

    // Claimed with exactly its attributes, in order; again after a nack.
    let three = [("content-type", "application/json"), ("tenant.id", "t-42"), ("empty", "")];
    let seq = q.publish("g", "e", &PublishOptions::new().attrs(three)).unwrap();
    let peeked = q.peek(Some("g"), 10).unwrap();
    assert_eq!((peeked.len(), peeked[0].seq), (1, Some(seq)));
    assert_eq!(peeked[0].attrs, owned(&three), "peek shows them, in order");
    for attempt in 1..=2 {
        let lease = claim(q);
        assert_eq!((lease.seq(), lease.attempts()), (seq, attempt));
        assert_eq!(lease.attrs(), three);
        assert_eq!(lease.attrs_at(0), Some(three.to_vec()));
        assert_eq!(lease.attrs_at(1), None);
        assert_eq!(lease.attr("tenant.id"), Some("t-42"));
        assert_eq!(lease.attr("empty"), Some(""));
        assert_eq!(lease.attr("absent"), None);
        assert_eq!(lease.attr("a\0b"), None);
        if attempt == 1 {
            q.nack(&lease, Duration::ZERO).unwrap();
        } else {
            q.ack(&lease).unwrap();
        }
    }

    // A batch: each event its own, in one batch lease; peek shows them.
    let batch_attrs: [&[(&str, &str)]; 3] = [&[("n", "1")], &[], &[("n", "2"), ("extra", "yes")]];
    let mut batch = Batch::new().unwrap();
    for (i, attrs) in batch_attrs.iter().enumerate() {
        batch.add("b", format!("b{i}"), &PublishOptions::new().attrs(attrs.iter().copied())).unwrap();
    }
    let first = q.publish_batch(&batch).unwrap();
    let peeked: Vec<Vec<(String, String)>> = q.peek(Some("b"), 10).unwrap().into_iter().map(|e| e.attrs).collect();
    assert_eq!(peeked, batch_attrs.map(owned));
    let lease = f.queue.claim(&opts(30_000).max_events(3)).unwrap().unwrap();
    assert_eq!((lease.group(), lease.seq(), lease.count()), ("b", first, 3));
    for (i, attrs) in batch_attrs.iter().enumerate() {
        assert_eq!(lease.attrs_at(i).as_deref(), Some(*attrs), "event {i} of the batch lease");
    }
    assert_eq!(lease.attrs_at(3), None);
    assert_eq!(lease.attrs(), batch_attrs[0], "the head's");
    assert_eq!((lease.attr("n"), lease.attr("extra")), (Some("1"), None), "the head's");
    q.ack(&lease).unwrap();

    // Max attempts 1: the dead list shows them, and a requeue keeps them.
    q.set_max_attempts(1).unwrap();
    let poison = [("reason", "poison"), ("tenant.id", "t-42")];
    let seq = q.publish("d", "poison", &PublishOptions::new().attrs(poison)).unwrap();
    let lease = claim(q);
    assert_eq!(lease.attrs(), poison);
    q.nack(&lease, Duration::ZERO).unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "the second delivery goes to the dead letters");
    let dead = q.dead_list(10).unwrap();
    assert_eq!((dead.len(), dead[0].seq), (1, Some(seq)));
    assert_eq!(dead[0].attrs, owned(&poison), "the dead list shows them");
    assert_eq!(q.dead_page(0, 10).unwrap().letters[0].attrs, owned(&poison));
    let new_seq = q.dead_requeue(seq).unwrap();
    let lease = claim(q);
    assert_eq!((lease.seq(), lease.attempts()), (new_seq, 1));
    assert_eq!(lease.attrs(), poison, "kept by the requeue");
    q.ack(&lease).unwrap();
}

/// Claims and nacks (delay 0) the head `times` times.
fn nack_times(q: &Queue, times: usize) {
    for _ in 0..times {
        let lease = claim(q);
        q.nack(&lease, Duration::ZERO).unwrap();
    }
}

#[test]
fn test_dead_letters() {
    let f = Fixture::new();
    f.queue.set_max_attempts(2).unwrap();
    let seq = f.queue.publish("g", "poison", &PublishOptions::default()).unwrap();
    nack_times(&f.queue, 2);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "the third delivery goes to the dead letters");
    assert_eq!(f.queue.dead_count().unwrap(), 1);
    let new_seq = f.queue.dead_requeue(seq).unwrap();
    assert!(new_seq > seq);
    assert_eq!(f.queue.dead_count().unwrap(), 0);
    let lease = claim(&f.queue);
    assert_eq!((lease.seq(), lease.event(), lease.attempts()), (new_seq, &b"poison"[..], 1));
    f.queue.nack(&lease, Duration::ZERO).unwrap();
    nack_times(&f.queue, 1);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none());
    assert_eq!(f.queue.dead_count().unwrap(), 1);
    assert_eq!(f.queue.dead_purge().unwrap(), 1);
    assert_eq!(f.queue.dead_count().unwrap(), 0);
}

#[test]
fn test_stats_parsed() {
    let f = Fixture::new();
    f.queue.publish("a", "1", &PublishOptions::new().priority(1)).unwrap();
    f.queue.publish("a", "2", &PublishOptions::new().priority(1)).unwrap();
    f.queue.publish("b", "3", &PublishOptions::new().priority(3)).unwrap();
    let _held = claim(&f.queue);
    let s = f.queue.stats().unwrap();
    assert_eq!(s.queue, format!("{}.{}", f.db, f.prefix));
    assert_eq!(s.messages, 3);
    assert_eq!(s.dead, 0);
    assert_eq!((s.groups.total, s.groups.ready, s.groups.leased, s.groups.parked), (2, 1, 1, 0));
    assert_eq!(s.priorities.keys().copied().collect::<Vec<u8>>(), [0, 1, 2, 3, 4]);
    assert_eq!((s.priorities[&1].groups, s.priorities[&1].messages), (1, 2));
    assert_eq!((s.priorities[&3].groups, s.priorities[&3].messages), (1, 1));
    assert_eq!((s.priorities[&0].groups, s.priorities[&0].messages), (0, 0));
    assert!(s.oldest_message_age_s.is_some_and(|a| a >= 0.0));
    assert!(secs(s.now, f.queue.now()).abs() < 60.0);
    let empty = Fixture::new();
    assert_eq!(empty.queue.stats().unwrap().oldest_message_age_s, None);
}

#[test]
fn test_repair() {
    let f = Fixture::new();
    f.queue.publish("g", "orphan", &PublishOptions::default()).unwrap();
    assert_eq!(common::delete_all_locks(&f), 1);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "no lock: not claimable");
    assert_eq!(f.queue.repair().unwrap(), 1);
    assert_eq!(claim(&f.queue).event(), b"orphan");
    assert_eq!(f.queue.repair().unwrap(), 0, "repair never touches an existing lock");
}

#[test]
fn test_purge_group() {
    let f = Fixture::new();
    f.queue.publish("g", "1", &PublishOptions::default()).unwrap();
    f.queue.publish("g", "2", &PublishOptions::default()).unwrap();
    f.queue.publish("keep", "3", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    assert_eq!(lease.group(), "g");
    f.queue.purge_group("g").unwrap();
    assert_eq!(f.queue.ack(&lease).unwrap_err().kind(), ErrorKind::LeaseLost);
    assert_eq!(f.queue.stats().unwrap().messages, 1);
    assert_eq!(claim(&f.queue).group(), "keep");
}

#[test]
fn test_drop() {
    let f = Fixture::new();
    for i in 0..3 {
        f.queue.publish("g", format!("{i}"), &PublishOptions::default()).unwrap();
    }
    f.queue.drop_queue().unwrap();
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none());
    assert_eq!(f.queue.stats().unwrap().messages, 0);
    // Seq 1 with one partition; with P, the first of g's partition k: k + 1.
    let want = common::partition_of(&f.queue, "g").first().map_or(1, |&k| k as i64 + 1);
    assert_eq!(f.queue.publish("g", "again", &PublishOptions::default()).unwrap(), want);
}

#[test]
fn test_lease_deadline() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let before = f.queue.now();
    let lease = f.queue.claim(&opts(30_000)).unwrap().unwrap();
    let after = f.queue.now();
    let d: SystemTime = lease.deadline();
    assert!(
        secs(d, before) >= 30.0 - 0.5 && secs(d, after) <= 30.0 + 0.5,
        "deadline {d:?} not in claim time + 30 s [{before:?}, {after:?}]"
    );
    let before = f.queue.now();
    f.queue.extend(&lease, Duration::from_secs(120)).unwrap();
    let after = f.queue.now();
    // extend moves the C lease's deadline; the lease value reflects it.
    let d = lease.deadline();
    assert!(
        secs(d, before) >= 120.0 - 0.5 && secs(d, after) <= 120.0 + 0.5,
        "deadline {d:?} after extend not in [{before:?}, {after:?}] + 120 s"
    );
}

// ---- groups (0.5.0) --------------------------------------------------------------

#[test]
fn test_pause_resume() {
    let f = Fixture::new();
    let q = &f.queue;
    let p2 = PublishOptions::new().priority(2);
    let first = q.publish("P", "p1", &p2).unwrap();
    let second = q.publish("P", "p2", &p2).unwrap();
    q.pause_group("P").unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "a paused group is not claimed");
    let s = q.stats().unwrap();
    assert_eq!((s.groups.paused, s.groups.ready, s.groups.total), (1, 0, 1), "{s:?}");
    q.pause_group("P").unwrap(); // again: nothing changes
    assert!(q.claim(&opts(30_000)).unwrap().is_none());

    q.resume_group("P").unwrap();
    assert_eq!(q.stats().unwrap().groups.paused, 0);
    let held = q.claim(&opts(30_000).min_priority(2)).unwrap().expect("resumed, at its priority 2");
    assert_eq!((held.group(), held.seq(), held.attempts()), ("P", first, 1));

    // Paused while held: the holder keeps its lease; the next event waits.
    q.pause_group("P").unwrap();
    q.ack(&held).unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "P's second event is not claimable while paused");
    assert_eq!(q.stats().unwrap().groups.paused, 1);

    // Its second event's lease acked while paused too: P drains and stays paused.
    q.resume_group("P").unwrap();
    let last = claim(q);
    assert_eq!(last.seq(), second);
    q.pause_group("P").unwrap();
    q.ack(&last).unwrap();
    let s = q.stats().unwrap();
    assert_eq!((s.messages, s.groups.paused), (0, 1), "drained, still paused: {s:?}");
    let third = q.publish("P", "p3", &PublishOptions::default()).unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "a new publish to a paused group is not claimable");
    q.resume_group("P").unwrap();
    let lease = claim(q);
    assert_eq!((lease.seq(), lease.event()), (third, &b"p3"[..]));
    q.ack(&lease).unwrap();

    // Resuming a group that is not paused (or has no lock at all) is OK.
    q.resume_group("P").unwrap();
    q.resume_group("never-seen").unwrap();
    let s = q.stats().unwrap();
    assert_eq!((s.groups.paused, s.groups.total, s.published), (0, 0, 3), "{s:?}");
    assert_bad_argument(q.pause_group(""), "group_id");
    assert_bad_argument(q.resume_group("a\0b"), "group_id");
}

/// The group ids of a page, in page order.
fn ids(page: &GroupsPage) -> Vec<&str> {
    page.groups.iter().map(|g| g.group.as_str()).collect()
}

#[test]
fn test_group_listing() {
    let f = Fixture::new();
    let q = &f.queue;
    // On a manual clock, so that ages and deadlines are exact: b leased by w-b at T,
    // a published at T + 1 s, c at T + 2 s and paused; listed at T + 4 s.
    let start = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let clock = ManualClock::new(start);
    q.set_clock(Some(&clock));
    let at = |s: u64| start + Duration::from_secs(s);
    q.publish("b", "b1", &PublishOptions::new().priority(1)).unwrap();
    let b_lease = q.claim(&opts(60_000).worker_id("w-b")).unwrap().expect("b is the only group: the claim takes it");
    assert_eq!(b_lease.group(), "b");
    clock.advance(Duration::from_secs(1));
    let a1 = q.publish("a", "a1", &PublishOptions::default()).unwrap();
    q.publish("a", "a2", &PublishOptions::default()).unwrap();
    clock.advance(Duration::from_secs(1));
    q.publish("c", "c1", &PublishOptions::new().priority(3)).unwrap();
    q.pause_group("c").unwrap();
    clock.advance(Duration::from_secs(2));

    let page = q.groups(&GroupsOptions::new()).unwrap();
    assert_eq!(ids(&page), ["a", "b", "c"], "by id");
    assert_eq!(page.next, None);
    assert_eq!(page.now, at(4));
    let [a, b, c] = &page.groups[..] else { unreachable!() };
    assert_eq!((a.state, a.paused, a.backlog, a.priority, a.attempts), (GroupState::Ready, false, 2, 0, 0));
    assert_eq!((a.head, a.head_age, a.holder.as_deref()), (Some(a1), Some(Duration::from_secs(3)), None));
    assert_eq!((a.held_for, a.lease_deadline), (None, None));
    assert_eq!((b.state, b.holder.as_deref(), b.attempts, b.backlog), (GroupState::Leased, Some("w-b"), 1, 1));
    assert_eq!(b.held_for, Some(Duration::from_secs(4)));
    assert_eq!(b.lease_deadline, Some(at(60)));
    assert_eq!(b.lease_deadline, Some(b_lease.deadline()), "the lease's own deadline");
    assert_eq!((c.state, c.paused, c.priority, c.backlog), (GroupState::Paused, true, 3, 1), "the priority kept");

    let only =
        |o: GroupsOptions| -> Vec<String> { ids(&q.groups(&o).unwrap()).into_iter().map(str::to_string).collect() };
    assert_eq!(only(GroupsOptions::new().states([GroupState::Leased])), ["b"]);
    assert_eq!(only(GroupsOptions::new().states([GroupState::Ready, GroupState::Paused])), ["a", "c"]);
    assert_eq!(only(GroupsOptions::new().id_prefix("c")), ["c"]);
    assert_eq!(only(GroupsOptions::new().held_longer_than(Duration::from_secs(3))), ["b"]);
    assert!(only(GroupsOptions::new().held_longer_than(Duration::from_secs(5))).is_empty());
    assert_eq!(only(GroupsOptions::new().min_attempts(1)), ["b"]);

    // Pages of 2: a and b with a cursor, then c and none.
    let first = q.groups(&GroupsOptions::new().limit(2)).unwrap();
    assert_eq!(ids(&first), ["a", "b"]);
    let next = first.next.clone().expect("a next cursor after a full page");
    let second = q.groups(&GroupsOptions::new().limit(2).after(next)).unwrap();
    assert_eq!(ids(&second), ["c"]);
    assert_eq!(second.next, None);

    // By due: a (due since T + 1 s), the paused c (T + 2 s) in its place, b (held to T + 60 s).
    let due = q.groups(&GroupsOptions::new().sort(GroupsSort::Due)).unwrap();
    assert_eq!(ids(&due), ["a", "c", "b"]);
    let due_first = q.groups(&GroupsOptions::new().sort(GroupsSort::Due).limit(1)).unwrap();
    let rest = q.groups(&GroupsOptions::new().sort(GroupsSort::Due).after(due_first.next.clone().unwrap())).unwrap();
    assert_eq!((ids(&due_first), ids(&rest)), (vec!["a"], vec!["c", "b"]));

    // Bad options are the argument error, naming the option.
    assert_bad_argument(q.groups(&GroupsOptions::new().limit(1001)), "limit");
    assert_bad_argument(q.groups(&GroupsOptions::new().limit(0)), "limit");
    assert_bad_argument("bogus".parse::<GroupState>(), "state");
    assert_bad_argument(q.groups(&GroupsOptions::new().after(due_first.next.unwrap())), "after"); // another sort's
    assert_bad_argument(q.groups(&GroupsOptions::new().id_prefix("c\0")), "id_prefix");
    assert_bad_argument(q.groups(&GroupsOptions::new().min_attempts(u32::MAX)), "min_attempts");
    q.ack(&b_lease).unwrap();

    // Dead letters by page: 3 letters, a page of 2 from offset 1 is the 2nd and 3rd.
    let d = Fixture::new();
    d.queue.set_max_attempts(1).unwrap();
    let mut dead = Vec::new();
    for i in 0..3 {
        dead.push(d.queue.publish(&format!("d{i}"), format!("dead {i}"), &PublishOptions::default()).unwrap());
        nack_times(&d.queue, 1);
        assert!(d.queue.claim(&opts(30_000)).unwrap().is_none(), "its second delivery went to the dead letters");
    }
    // The dead letters come oldest seq first: d0, d1, d2's with one partition; with
    // more, three groups' seqs come from their partitions' counters, in any order.
    let mut by_seq: Vec<(i64, usize)> = dead.iter().enumerate().map(|(i, &s)| (s, i)).collect();
    by_seq.sort();
    let page = d.queue.dead_page(1, 2).unwrap();
    let seqs: Vec<Option<i64>> = page.letters.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, [Some(by_seq[1].0), Some(by_seq[2].0)]);
    assert_eq!((page.offset, page.total), (1, 3));
    assert_eq!(page.letters[0].event.as_deref(), Some(format!("dead {}", by_seq[1].1).as_bytes()));
    let past = d.queue.dead_page(3, 2).unwrap();
    assert_eq!((past.letters.len(), past.total), (0, 3));
    assert_bad_argument(d.queue.dead_page(0, 1001), "limit");
    assert_bad_argument(d.queue.dead_page(0, 0), "limit");
}

// ---- deduplication (0.6.0) --------------------------------------------------------

fn key(k: &str) -> PublishOptions {
    PublishOptions::new().dedup_key(k)
}

const fn duplicate_of(seq: i64) -> Published {
    Published { seq, duplicate: true }
}

#[test]
fn test_dedup_same_key() {
    let f = Fixture::new();
    let q = &f.queue;
    let first = q.publish_with("A", "a", &key("k")).unwrap();
    assert!(!first.duplicate, "{first:?}");
    let s = first.seq;
    assert_eq!(q.publish_with("B", "b", &key("k")).unwrap(), duplicate_of(s), "the key is the queue's, not A's");
    assert_eq!(q.stats().unwrap().messages, 1);
    let lease = claim(q);
    assert_eq!((lease.group(), lease.seq(), lease.event()), ("A", s, &b"a"[..]));
    q.ack(&lease).unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "B got no event");
    assert_eq!(
        q.publish_with("A", "a again", &key("k")).unwrap(),
        duplicate_of(s),
        "acked, but within the 5-minute window: still taken"
    );
    assert_eq!(q.stats().unwrap().messages, 0);
}

#[test]
fn test_dedup_different_keys() {
    let f = Fixture::new();
    let q = &f.queue;
    let one = q.publish_with("g", "1", &key("k1")).unwrap();
    let two = q.publish_with("g", "2", &key("k2")).unwrap();
    assert!(!one.duplicate && !two.duplicate, "{one:?} {two:?}");
    assert!(one.seq < two.seq);
    assert_eq!(q.stats().unwrap().messages, 2);
    for (seq, event) in [(one.seq, "1"), (two.seq, "2")] {
        let lease = claim(q);
        assert_eq!((lease.seq(), lease.event()), (seq, event.as_bytes()));
        q.ack(&lease).unwrap();
    }
}

#[test]
fn test_dedup_retry_after_lost_reply() {
    let f = Fixture::new();
    let q = &f.queue;
    // The test server applies this key's insert, then answers a step-down (10107) once.
    let opts_k = key(&format!("mongomq-test-stepdown-{}", common::fresh_name()));
    let payload = b"exactly \x00 once";
    let first = match q.publish_with("g", payload, &opts_k) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Connect, "a write whose outcome is unknown: {e}");
            assert_eq!(e.server_code(), 10107, "the error keeps the server's code: {e}");
            None
        }
        Ok(p) => {
            eprintln!("test_dedup_retry_after_lost_reply: no step-down from this server (no hook): {p:?}");
            assert!(!p.duplicate, "{p:?}");
            Some(p.seq)
        }
    };
    let retry = q.publish_with("g", payload, &opts_k).unwrap();
    assert!(retry.duplicate, "the first insert was applied: the retry adds nothing ({retry:?})");
    if let Some(seq) = first {
        assert_eq!(retry.seq, seq);
    }
    assert_eq!(q.stats().unwrap().messages, 1, "exactly one event");
    let lease = claim(q);
    assert_eq!((lease.seq(), lease.group(), lease.event()), (retry.seq, "g", &payload[..]));
    q.ack(&lease).unwrap();
    assert!(q.claim(&opts(30_000)).unwrap().is_none(), "never two events");
}

#[test]
fn test_dedup_batch() {
    let f = Fixture::new();
    let q = &f.queue;
    let mut batch = Batch::new().unwrap();
    batch.add("g1", "1a", &key("a")).unwrap();
    batch.add("g1", "1b", &key("b")).unwrap();
    batch.add("g2", "2a", &key("a")).unwrap();
    batch.add("g2", "2-", &PublishOptions::default()).unwrap();
    let got = q.publish_batch_with(&batch).unwrap();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got.iter().filter(|p| !p.duplicate).count(), 3, "{got:?}");
    assert_eq!(got[2], duplicate_of(got[0].seq), "the third shares the first's key");
    let seqs: HashSet<i64> = [got[0].seq, got[1].seq, got[3].seq].into();
    assert_eq!(seqs.len(), 3, "three events, three seqs: {got:?}");

    let mut second = Batch::new().unwrap();
    second.add("g1", "1b again", &key("b")).unwrap();
    second.add("g3", "3c", &key("c")).unwrap();
    let again = q.publish_batch_with(&second).unwrap();
    assert_eq!(again.len(), 2, "{again:?}");
    assert_eq!(again[0], duplicate_of(got[1].seq), "a duplicate of the first batch's second event");
    assert!(!again[1].duplicate && !seqs.contains(&again[1].seq), "{again:?}");
    assert_eq!(q.stats().unwrap().messages, 4);
    // The queue holds exactly the added events.
    let mut held: Vec<(i64, Vec<u8>)> =
        q.peek(None, 10).unwrap().into_iter().map(|e| (e.seq.unwrap(), e.event.unwrap())).collect();
    held.sort();
    let mut want: Vec<(i64, Vec<u8>)> =
        [(got[0].seq, "1a"), (got[1].seq, "1b"), (got[3].seq, "2-"), (again[1].seq, "3c")]
            .into_iter()
            .map(|(s, e)| (s, e.as_bytes().to_vec()))
            .collect();
    want.sort();
    assert_eq!(held, want);
}

#[test]
fn test_dedup_scope_group() {
    let f = Fixture::new();
    let q = &f.queue;
    q.set_dedup_scope(DedupScope::Group).unwrap();
    let a = q.publish_with("A", "a", &key("k")).unwrap();
    let b = q.publish_with("B", "b", &key("k")).unwrap();
    assert!(!a.duplicate && !b.duplicate && a.seq != b.seq, "{a:?} {b:?}: two groups, two events");
    assert_eq!(q.publish_with("A", "a again", &key("k")).unwrap(), duplicate_of(a.seq));
    assert_eq!(q.stats().unwrap().messages, 2);
}

#[test]
fn test_dedup_bad_key() {
    let f = Fixture::new();
    let q = &f.queue;
    let too_long = "k".repeat(mongomq::limits::DEDUP_KEY_MAX + 1);
    for bad in ["", too_long.as_str(), "a\0b"] {
        assert_bad_argument(q.publish_with("g", "x", &key(bad)), "dedup_key");
        assert_bad_argument(q.publish("g", "x", &key(bad)), "dedup_key");
        assert_bad_argument(Batch::new().unwrap().add("g", "x", &key(bad)), "dedup_key");
    }
    assert_bad_argument(q.set_dedup_window(Duration::from_millis(500)), "dedup_window");
    assert_bad_argument(q.set_dedup_window(Duration::from_secs(8 * 86400)), "dedup_window");
    assert_bad_argument(q.set_dedup_window(Duration::MAX), "dedup_window");
    assert_eq!(q.stats().unwrap().messages, 0, "nothing was published");
    assert_eq!(q.stats().unwrap().published, 0, "not even a seq was taken");
}

// ---- waiting claims --------------------------------------------------------------

#[test]
fn test_wait_woken_by_publish() {
    let f = Fixture::new();
    let publisher = {
        let q = f.queue.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(200));
            q.publish("g", "wake", &PublishOptions::default()).unwrap()
        })
    };
    let start = Instant::now();
    let lease = f.queue.claim(&opts(30_000).wait(Duration::from_secs(10))).unwrap().expect("woken by the publish");
    assert!(start.elapsed() < PROMPTLY, "took {:?}", start.elapsed());
    assert_eq!(lease.seq(), publisher.join().unwrap());
    assert_eq!(lease.event(), b"wake");
}

#[test]
fn test_wait_cancel_one() {
    let f = Fixture::new();
    let cancel_a = CancelToken::new().unwrap();
    let cancel_b = CancelToken::new().unwrap();
    let waiter = |cancel: &CancelToken| {
        let q = f.queue.clone();
        let o = opts(30_000).cancel(cancel);
        thread::spawn(move || {
            let start = Instant::now();
            let r = q.claim(&o.wait(Duration::from_secs(20)));
            (r, start.elapsed())
        })
    };
    let a = waiter(&cancel_a);
    let b = waiter(&cancel_b);
    thread::sleep(Duration::from_millis(300));
    cancel_a.cancel();
    let (ra, took) = a.join().unwrap();
    assert_eq!(ra.unwrap_err().kind(), ErrorKind::Cancelled);
    assert!(took < PROMPTLY, "the cancelled claim took {took:?}");
    assert!(!cancel_b.is_cancelled());
    let seq = f.queue.publish("g", "for b", &PublishOptions::default()).unwrap();
    let (rb, took) = b.join().unwrap();
    let lease = rb.unwrap().expect("the other waiter gets the event");
    assert_eq!(lease.seq(), seq);
    assert!(took < Duration::from_secs(15));
    // The queue goes on: a later claim without that handle works.
    f.queue.ack(&lease).unwrap();
    f.queue.publish("g", "later", &PublishOptions::default()).unwrap();
    assert!(f.queue.claim(&opts(30_000).wait(Duration::from_secs(5))).unwrap().is_some());
}

#[test]
fn test_interrupt_stops_all() {
    let f = Fixture::new();
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let q = f.queue.clone();
            thread::spawn(move || {
                let start = Instant::now();
                (q.claim(&opts(30_000).wait(Duration::from_secs(20))), start.elapsed())
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(300));
    f.queue.interrupt();
    for w in waiters {
        let (r, took) = w.join().unwrap();
        assert_eq!(r.unwrap_err().kind(), ErrorKind::Interrupted);
        assert!(took < PROMPTLY, "took {took:?}");
    }
    let start = Instant::now();
    let later = f.queue.claim(&opts(30_000).wait(Duration::from_secs(20)));
    assert_eq!(later.unwrap_err().kind(), ErrorKind::Interrupted);
    assert!(start.elapsed() < PROMPTLY);
    f.queue.publish("g", "still works", &PublishOptions::default()).unwrap();
    assert_eq!(claim(&f.queue).event(), b"still works");
}

// ---- errors ----------------------------------------------------------------------

#[track_caller]
fn assert_bad_argument<T: std::fmt::Debug>(r: mongomq::Result<T>, argument: &str) {
    let err = r.expect_err(&format!("a bad {argument} must be refused"));
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(err.status_name(), "MQ_ERR_ARG");
    assert!(err.message().contains(argument), "the message {:?} does not name {argument}", err.message());
}

#[test]
fn test_error_bad_argument() {
    let f = Fixture::new();
    let q = &f.queue;
    assert_bad_argument(q.publish("", "x", &PublishOptions::default()), "group_id");
    assert_bad_argument(q.publish("a\0b", "x", &PublishOptions::default()), "group_id");
    assert_bad_argument(q.publish(&"g".repeat(1001), "x", &PublishOptions::default()), "group_id");
    assert_bad_argument(q.publish("g", "x", &PublishOptions::new().priority(5)), "priority");
    assert_bad_argument(q.publish("g", "x", &PublishOptions::new().priority(-1)), "priority");
    assert_bad_argument(
        q.publish("g", "x", &PublishOptions::new().not_before(UNIX_EPOCH - Duration::from_secs(1))),
        "not_before",
    );
    assert_bad_argument(
        Batch::new().unwrap().add("g", "x", &PublishOptions::new().not_before(UNIX_EPOCH - Duration::from_secs(1))),
        "not_before",
    );
    assert_bad_argument(q.claim(&opts(30_000).max_events(10_001)), "max_events");
    assert_bad_argument(q.claim(&opts(30_000).visibility(Duration::ZERO)), "visibility");
    assert_bad_argument(q.claim(&opts(30_000).min_priority(-1)), "min_priority");
    assert_bad_argument(q.claim(&opts(30_000).min_priority(5)), "min_priority");
    assert_bad_argument(q.claim(&opts(30_000).max_events(0)), "max_events");
    assert_bad_argument(q.claim(&opts(30_000).worker_id("")), "worker_id");
    assert_bad_argument(q.claim(&opts(30_000).worker_id("w\0")), "worker_id");
    assert_bad_argument(q.claim(&opts(30_000).min_priority(9).wait(Duration::from_secs(1))), "min_priority");
    assert_bad_argument(q.publish_batch(&Batch::new().unwrap()), "batch");
    assert_bad_argument(Batch::new().unwrap().add("", "x", &PublishOptions::default()), "group_id");
    assert_bad_argument(Batch::new().unwrap().add("g", "x", &PublishOptions::new().priority(7)), "priority");
    assert_bad_argument(q.dead_requeue(987_654), "seq");
    assert_bad_argument(q.purge_group(""), "group_id");
    assert_bad_argument(q.set_max_attempts(u32::MAX), "max_attempts");
    q.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(q);
    assert_bad_argument(q.extend(&lease, Duration::ZERO), "visibility");
    assert_bad_argument(f.client.queue("", "mq"), "db_name");
    assert_bad_argument(f.client.queue("a.b", "mq"), "db_name");
    assert_bad_argument(f.client.queue("db", "a\0"), "prefix");
    assert_bad_argument(Client::connect("not a uri"), "uri");
    assert_bad_argument(
        q.worker(WorkerOptions::new().concurrency(0), |_| Ok::<(), mongomq::BoxError>(())),
        "concurrency",
    );
    assert_bad_argument(
        q.worker(WorkerOptions::new().max_events(0), |_| Ok::<(), mongomq::BoxError>(())),
        "max_events",
    );
    assert_bad_argument(
        q.work(WorkerOptions::new().visibility(Duration::ZERO), |_| Ok::<(), mongomq::BoxError>(())),
        "visibility",
    );
    assert_bad_argument(q.peek(None, 0), "limit");
    assert_bad_argument(q.dead_list(10_001), "limit");
}

#[test]
fn test_error_connect() {
    let client = Client::connect("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200").expect("no server contact yet");
    let start = Instant::now();
    let err = common::open(&client, &common::fresh_name(), "mq").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connect, "{err}");
    assert_eq!(err.status_name(), "MQ_ERR_CONNECT");
    assert!(start.elapsed() < PROMPTLY);
}

#[test]
fn test_error_lease_lost_type() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    f.queue.purge_group("g").unwrap();
    let err = f.queue.nack(&lease, Duration::ZERO).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost);
    assert!(err.is_lease_lost());
    assert_eq!(err.status_name(), "MQ_LEASE_LOST");
    assert!(err.to_string().contains("MQ_LEASE_LOST"));
    // and it is the crate's one error type, a std::error::Error
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    let back = boxed.downcast_ref::<mongomq::Error>().expect("a mongomq::Error");
    assert_eq!(back, &err);
    assert_eq!(f.queue.extend(&lease, Duration::from_secs(1)).unwrap_err().kind(), ErrorKind::LeaseLost);
}

// ---- concurrency -----------------------------------------------------------------

/// Runs `f` on a thread of its own and fails the test if it has not returned within
/// 60 s (a call that waits for a second pooled client with `maxPoolSize=1` would hang).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("{what} has not returned within 60 s"),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// `uri` with `option` added to its options (`?` or `&` as the URI needs).
fn with_option(uri: &str, option: &str) -> String {
    match uri.find('?') {
        Some(_) if uri.ends_with('?') || uri.ends_with('&') => format!("{uri}{option}"),
        Some(_) => format!("{uri}&{option}"),
        None if uri.split_once("://").is_some_and(|(_, rest)| rest.contains('/')) => format!("{uri}?{option}"),
        None => format!("{uri}/?{option}"),
    }
}

#[test]
fn test_small_pool() {
    assert_eq!(with_option("mongodb://h:1", "maxPoolSize=1"), "mongodb://h:1/?maxPoolSize=1");
    assert_eq!(with_option("mongodb://h:1/", "maxPoolSize=1"), "mongodb://h:1/?maxPoolSize=1");
    assert_eq!(with_option("mongodb://h:1/?w=1", "maxPoolSize=1"), "mongodb://h:1/?w=1&maxPoolSize=1");
    let f = Fixture::new();
    let client = Client::connect(&with_option(&common::uri(), "maxPoolSize=1")).unwrap();
    let q = common::open(&client, &f.db, &f.prefix).unwrap();
    // The seqs: 1, 2, 3 for b's and 4 for a's with one partition; with more, b's
    // first is that of its partition k (k + 1: the queue is new) and a's its own.
    // The claims that want b take from b's partition (the turn's may be a's).
    let in_b = common::partition_of(&q, "b");
    let b_first = in_b.first().map_or(1, |&k| k as i64 + 1);
    let a_seq = Arc::new(Mutex::new(0i64));
    let one_partition = q.partitions() == 1;
    let call = |what: &str, run: Box<dyn FnOnce(&Queue) + Send>| {
        let q = q.clone();
        bounded(what, move || run(&q));
    };

    call(
        "publish_batch",
        Box::new(move |q| {
            let mut batch = Batch::new().unwrap();
            for e in ["b1", "b2", "b3"] {
                batch.add("b", e, &PublishOptions::default()).unwrap();
            }
            assert_eq!(q.publish_batch(&batch).unwrap(), b_first);
        }),
    );
    let a = Arc::clone(&a_seq);
    call(
        "publish",
        Box::new(move |q| {
            let seq = q.publish("a", "a1", &PublishOptions::default()).unwrap();
            if one_partition {
                assert_eq!(seq, 4);
            }
            *a.lock().unwrap() = seq;
        }),
    );
    let a_seq = *a_seq.lock().unwrap();
    let b = in_b.clone();
    call(
        "claim, extend, unclaim",
        Box::new(move |q| {
            let lease = q.claim(&opts(30_000).partitions(b)).unwrap().expect("b");
            assert_eq!((lease.group(), lease.seq()), ("b", b_first));
            q.extend(&lease, Duration::from_secs(60)).unwrap();
            q.unclaim(&lease).unwrap();
        }),
    );
    call(
        "batch claim, ack",
        Box::new(move |q| {
            let lease = q.claim(&opts(30_000).max_events(3).partitions(in_b)).unwrap().expect("b again");
            assert_eq!((lease.group(), lease.count(), lease.attempts()), ("b", 3, 1));
            q.ack(&lease).unwrap();
        }),
    );
    call(
        "waiting claim, nack",
        Box::new(move |q| {
            let lease = q.claim(&opts(30_000).wait(Duration::from_secs(5))).unwrap().expect("a");
            assert_eq!((lease.group(), lease.seq()), ("a", a_seq));
            q.nack(&lease, Duration::ZERO).unwrap();
        }),
    );
    call(
        "dead-letter requeue after max attempts 1",
        Box::new(move |q| {
            q.set_max_attempts(1).unwrap();
            assert!(q.claim(&opts(30_000)).unwrap().is_none(), "a's second delivery goes to the dead letters");
            assert_eq!(q.dead_count().unwrap(), 1);
            let requeued = q.dead_requeue(a_seq).unwrap();
            if one_partition {
                assert_eq!(requeued, 5);
            } else {
                assert!(requeued > a_seq, "requeued seq {requeued}, want one after a's {a_seq}");
            }
            q.set_max_attempts(0).unwrap();
        }),
    );
    call("repair", Box::new(|q| assert_eq!(q.repair().unwrap(), 0)));
    call("stats", Box::new(|q| assert_eq!(q.stats().unwrap().messages, 1)));
    call("peek", Box::new(|q| assert_eq!(q.peek(None, 10).unwrap().len(), 1)));
    call(
        "purge",
        Box::new(|q| {
            q.purge_group("a").unwrap();
            assert_eq!(q.stats().unwrap().messages, 0);
        }),
    );

    for i in 0..20 {
        q.publish(&format!("w{}", i % 4), format!("{i}"), &PublishOptions::default()).unwrap();
    }
    let handled = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&handled);
    let worker = q
        .worker(WorkerOptions::new().concurrency(4), move |_| {
            h.fetch_add(1, Ordering::SeqCst);
            Ok::<(), mongomq::BoxError>(())
        })
        .unwrap();
    let stats_q = q.clone();
    let drained = bounded("the worker's drain", move || {
        eventually(Duration::from_secs(55), || stats_q.stats().unwrap().messages == 0)
    });
    assert!(drained, "the worker drained the 20 events");
    assert!(bounded("the worker's shutdown", move || worker.stop()));
    assert_eq!(handled.load(Ordering::SeqCst), 20);
}

#[test]
fn test_concurrency_16x2000() {
    const EVENTS: usize = 2000;
    const GROUPS: usize = 100;
    let f = Fixture::new();
    let mut published: HashMap<String, Vec<i64>> = HashMap::new();
    for chunk in (0..EVENTS).collect::<Vec<_>>().chunks(500) {
        let mut batch = Batch::new().unwrap();
        for &i in chunk {
            batch.add(&format!("g{}", i % GROUPS), format!("{i}"), &PublishOptions::default()).unwrap();
        }
        // Each event's seq (first + k with one partition only).
        let outcomes = f.queue.publish_batch_with(&batch).unwrap();
        for (k, &i) in chunk.iter().enumerate() {
            published.entry(format!("g{}", i % GROUPS)).or_default().push(outcomes[k].seq);
        }
    }
    let held: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let acked: Mutex<HashMap<String, Vec<i64>>> = Mutex::new(HashMap::new());
    let count = AtomicUsize::new(0);
    let violations = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(240);
    thread::scope(|s| {
        for t in 0..16 {
            let (q, held, acked, count, violations) = (&f.queue, &held, &acked, &count, &violations);
            s.spawn(move || {
                let o = opts(60_000).worker_id(format!("w{t}")).wait(Duration::from_millis(200));
                while count.load(Ordering::SeqCst) < EVENTS && Instant::now() < deadline {
                    let Some(lease) = q.claim(&o).unwrap() else { continue };
                    if !held.lock().unwrap().insert(lease.group().to_string()) {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    acked.lock().unwrap().entry(lease.group().to_string()).or_default().push(lease.seq());
                    held.lock().unwrap().remove(lease.group());
                    q.ack(&lease).unwrap();
                    count.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(violations.load(Ordering::SeqCst), 0, "a group was held twice at once");
    let acked = acked.into_inner().unwrap();
    assert_eq!(acked.values().map(Vec::len).sum::<usize>(), EVENTS, "each event acked exactly once");
    assert_eq!(acked, published, "each group's acks in publish order");
    assert_eq!(f.queue.stats().unwrap().messages, 0);
}

// ---- safety ----------------------------------------------------------------------

#[test]
fn test_safety_use_after_close() {
    // Use after close does not compile in Rust: close() and drop take the value
    // (compile_fail doc tests of Client::close, Queue::close and the crate docs prove
    // it). What is left to check at run time: values that outlive others, and calls
    // on things the server or the queue closed.
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let queue = f.other_handle();
    let lease = claim(&queue);
    queue.close(); // the lease outlives its queue: reads still work
    assert_eq!(
        (lease.seq(), lease.group(), lease.event(), lease.attempts(), lease.count()),
        (seq, "g", &b"x"[..], 1, 1)
    );
    assert!(!lease.token().is_empty());
    f.queue.ack(&lease).unwrap(); // acked through another live handle of the same queue
    assert_eq!(f.queue.ack(&lease).unwrap_err().kind(), ErrorKind::LeaseLost, "an acked lease is spent");
    // an interrupted queue refuses to wait, and keeps working otherwise
    f.queue.interrupt();
    assert_eq!(f.queue.claim(&opts(30_000).wait(Duration::from_secs(5))).unwrap_err().kind(), ErrorKind::Interrupted);
    f.queue.publish("g", "y", &PublishOptions::default()).unwrap();
    // a cancelled handle stays cancelled: a claim given it ends at once
    let cancel = CancelToken::new().unwrap();
    cancel.cancel();
    let other = f.other_handle();
    assert_eq!(
        other.claim(&opts(30_000).cancel(&cancel).wait(Duration::from_secs(5))).unwrap_err().kind(),
        ErrorKind::Cancelled
    );
    // a published batch can be published again
    let mut batch = Batch::new().unwrap();
    batch.add("b", "1", &PublishOptions::default()).unwrap();
    let s1 = other.publish_batch(&batch).unwrap();
    let s2 = other.publish_batch(&batch).unwrap();
    if other.partitions() == 1 {
        assert_eq!(s2, s1 + 1);
    } else {
        assert!(s2 > s1, "b's seqs {s1} then {s2}: they increase within the group");
    }
}

#[test]
fn test_safety_close_twice() {
    // close() consumes, so "twice" is two handles to one object: each close drops a
    // reference, the C object goes with the last one, exactly once.
    let f = Fixture::new();
    let client2 = f.client.clone();
    let queue = common::open(&client2, &f.db, &f.prefix).unwrap();
    let queue2 = queue.clone();
    client2.clone().close();
    client2.close();
    queue.close();
    queue2.publish("g", "x", &PublishOptions::default()).unwrap(); // the last clone still holds the queue and the pool
    queue2.close();
    let cancel = CancelToken::new().unwrap();
    cancel.cancel();
    cancel.cancel();
    assert!(cancel.is_cancelled());
    assert_eq!(claim(&f.queue).event(), b"x");
    f.queue.interrupt();
    f.queue.interrupt();
    assert_eq!(f.queue.claim(&opts(30_000).wait(Duration::from_secs(5))).unwrap_err().kind(), ErrorKind::Interrupted);
    let idle = Fixture::new();
    let worker = idle.queue.worker(WorkerOptions::new(), |_| Ok::<(), mongomq::BoxError>(())).unwrap();
    assert!(worker.stop());
    assert!(worker.stop(), "a second stop returns the first one's result");
    assert!(worker.wait(), "and so does a wait after it");
    drop(worker); // dropping a stopped worker: nothing more happens
    idle.queue.publish("g", "after", &PublishOptions::default()).unwrap();
    assert_eq!(claim(&idle.queue).event(), b"after", "the stopped worker claims nothing");
}

#[test]
fn test_safety_queue_keeps_client() {
    let f = Fixture::new();
    let client = Client::connect(&common::uri()).unwrap();
    let queue = common::open(&client, &f.db, &f.prefix).unwrap();
    drop(client);
    let seq = queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&queue);
    assert_eq!(lease.seq(), seq);
    queue.ack(&lease).unwrap();
    let waiter = {
        let q = queue.clone();
        thread::spawn(move || q.claim(&opts(30_000).wait(Duration::from_secs(10))))
    };
    thread::sleep(Duration::from_millis(200));
    queue.publish("g", "y", &PublishOptions::default()).unwrap();
    assert!(waiter.join().unwrap().unwrap().is_some());
    drop(queue); // the pool closes here, with its last queue
}

#[test]
fn test_safety_gc_any_order() {
    // Every drop order of client, queue and lease frees each C handle exactly once
    // (a double free or a use after free would crash this process).
    let f = Fixture::new();
    let orders: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    for order in orders {
        f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
        let client = Client::connect(&common::uri()).unwrap();
        let queue = common::open(&client, &f.db, &f.prefix).unwrap();
        let lease = claim(&queue);
        let mut slots: [Option<Box<dyn std::any::Any>>; 3] =
            [Some(Box::new(client)), Some(Box::new(queue.clone())), None];
        queue.ack(&lease).unwrap();
        slots[2] = Some(Box::new(lease));
        drop(queue);
        for i in order {
            slots[i].take();
        }
    }
    // and from other threads than the one that made them
    let client = Client::connect(&common::uri()).unwrap();
    let queue = common::open(&client, &f.db, &f.prefix).unwrap();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let lease = claim(&queue);
    let barrier = Arc::new(Barrier::new(3));
    let handles: Vec<_> = [
        Box::new(client) as Box<dyn std::any::Any + Send>,
        Box::new(queue) as Box<dyn std::any::Any + Send>,
        Box::new(lease) as Box<dyn std::any::Any + Send>,
    ]
    .into_iter()
    .map(|v| {
        let b = Arc::clone(&barrier);
        thread::spawn(move || {
            b.wait();
            drop(v);
        })
    })
    .collect();
    for h in handles {
        h.join().unwrap();
    }
}

// ---- clock and log ---------------------------------------------------------------

#[test]
fn test_manual_clock() {
    let t: SystemTime = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let s = Duration::from_secs;
    let f = Fixture::new();
    let clock = ManualClock::new(t);
    f.queue.set_clock(Some(&clock));
    assert_eq!(f.queue.now(), t);
    let seq = f.queue.publish("g", "later", &PublishOptions::new().not_before(t + s(60))).unwrap();
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "claimable before T + 60");
    clock.advance(Duration::from_secs(61));
    assert_eq!(f.queue.now(), t + s(61));
    let lease = f.queue.claim(&opts(30_000)).unwrap().expect("due once the clock is past T + 60");
    assert_eq!(lease.seq(), seq);
    assert!(secs(lease.deadline(), t + s(61 + 30)).abs() < 1e-3, "deadline {:?} is not T + 61 + 30", lease.deadline());
    f.queue.ack(&lease).unwrap();

    // The clock handle dropped while the queue runs on it: the queue keeps it, and reads
    // it from other threads too (a waiting claim, a publish).
    drop(clock);
    assert_eq!(f.queue.now(), t + s(61));
    let waiter = {
        let q = f.queue.clone();
        thread::spawn(move || q.claim(&opts(30_000).wait(Duration::from_secs(10))))
    };
    thread::sleep(Duration::from_millis(200));
    let publisher = {
        let q = f.queue.clone();
        thread::spawn(move || q.publish("h", "now", &PublishOptions::default()))
    };
    let seq = publisher.join().unwrap().unwrap();
    let lease = waiter.join().unwrap().unwrap().expect("the waiting claim got the publish");
    assert_eq!(lease.seq(), seq);
    assert!(
        secs(lease.deadline(), t + s(61 + 30)).abs() < 1e-3,
        "deadline {:?} on the dropped clock",
        lease.deadline()
    );
    f.queue.ack(&lease).unwrap();

    // A replaced clock, itself dropped: the queue reads the new one.
    let second = ManualClock::new(t + s(1000));
    f.queue.set_clock(Some(&second));
    f.queue.set_clock(Some(&second.clone())); // the same clock again
    drop(second);
    assert_eq!(f.queue.clone().now(), t + s(1000), "clones share the clock");

    // No clock: server time again.
    f.queue.set_clock(None);
    let wall = SystemTime::now();
    let now = f.queue.now();
    assert!(secs(now, wall).abs() < 60.0, "now {now:?} is not within a minute of the machine's clock {wall:?}");
}

/// Serializes the tests that set the process-wide log handler (tests run in parallel).
static LOG_TESTS: Mutex<()> = Mutex::new(());

/// A client whose URI makes libmongoc warn about an unknown option.
const UNKNOWN_OPTION_URI: &str = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1";

type LogLines = Arc<Mutex<Vec<(i32, String, String, thread::ThreadId)>>>;

/// A handler that records only the lines about the unknown option (other tests' clients
/// log too, at the same time, in this process).
fn record_unknown_option(lines: &LogLines) -> mongomq::LogHandler {
    let sink = Arc::clone(lines);
    Box::new(move |level, domain, message| {
        if message.to_lowercase().contains("mongomqnosuchoption") {
            sink.lock().unwrap().push((level, domain.to_owned(), message.to_owned(), thread::current().id()));
        }
    })
}

#[test]
fn test_log_handler() {
    let _serial = LOG_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let lines = LogLines::default();
    mongomq::set_log_handler(Some(record_unknown_option(&lines)));
    let _client = Client::connect(UNKNOWN_OPTION_URI).expect("contacts no server");
    assert!(eventually(Duration::from_secs(10), || !lines.lock().unwrap().is_empty()), "no line about the option");
    let (level, domain, message, _thread) = lines.lock().unwrap()[0].clone();
    assert_eq!((level, domain.as_str()), (2, "mongoc"), "{message}");
    assert!(message.contains("mongomqnosuchoption"), "{message}");

    // Silenced: a second such client brings no line.
    mongomq::set_log_handler(None);
    let before = lines.lock().unwrap().len();
    let _client = Client::connect(UNKNOWN_OPTION_URI).expect("contacts no server");
    thread::sleep(Duration::from_secs(1));
    assert_eq!(lines.lock().unwrap().len(), before, "a line came after set_log_handler(None)");
}

// ---- the worker ------------------------------------------------------------------

#[test]
fn test_worker_acks_success() {
    let f = Fixture::new();
    let mut want: HashMap<String, Vec<i64>> = HashMap::new();
    for i in 0..50 {
        let g = format!("g{}", i % 5);
        let seq = f.queue.publish(&g, format!("{i}"), &PublishOptions::default()).unwrap();
        want.entry(g).or_default().push(seq);
    }
    let seen: Arc<Mutex<HashMap<String, Vec<i64>>>> = Arc::default();
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let (s, e) = (Arc::clone(&seen), Arc::clone(&errors));
    let worker = f
        .queue
        .worker(
            WorkerOptions::new().concurrency(4).on_error(move |err| e.lock().unwrap().push(format!("{err:?}"))),
            move |lease| {
                s.lock().unwrap().entry(lease.group().to_string()).or_default().push(lease.seq());
                Ok::<(), mongomq::BoxError>(())
            },
        )
        .unwrap();
    assert!(eventually(Duration::from_secs(30), || seen.lock().unwrap().values().map(Vec::len).sum::<usize>() >= 50));
    assert!(eventually(Duration::from_secs(10), || f.queue.stats().unwrap().messages == 0), "every event acked");
    assert!(worker.stop());
    assert_eq!(*seen.lock().unwrap(), want, "each event handled once, in group order");
    assert!(errors.lock().unwrap().is_empty(), "{:?}", errors.lock().unwrap());
}

#[test]
fn test_worker_nacks_failure_backoff() {
    let f = Fixture::new();
    let seq = f.queue.publish("g", "flaky", &PublishOptions::default()).unwrap();
    let calls: Arc<Mutex<Vec<(Instant, u32, i64)>>> = Arc::default();
    let delays: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let (c, d) = (Arc::clone(&calls), Arc::clone(&delays));
    let worker = f
        .queue
        .worker(
            WorkerOptions::new()
                .backoff_base(Duration::from_millis(300))
                .backoff_cap(Duration::from_secs(10))
                .on_error(move |e| {
                    if let WorkerError::Handler { retry_in, .. } = e {
                        d.lock().unwrap().push(retry_in);
                    }
                }),
            move |lease| {
                let mut calls = c.lock().unwrap();
                calls.push((Instant::now(), lease.attempts(), lease.seq()));
                if calls.len() <= 2 {
                    Err("not yet")
                } else {
                    Ok(())
                }
            },
        )
        .unwrap();
    assert!(eventually(Duration::from_secs(20), || f.queue.stats().unwrap().messages == 0), "acked in the end");
    assert!(worker.stop());
    let calls = calls.lock().unwrap();
    assert_eq!(calls.iter().map(|c| (c.1, c.2)).collect::<Vec<_>>(), [(1, seq), (2, seq), (3, seq)]);
    let delays = delays.lock().unwrap();
    assert_eq!(delays.len(), 2);
    // base 300 ms, attempt 1: [150, 300] ms; attempt 2: [300, 600] ms (equal jitter)
    assert!(delays[0] >= Duration::from_millis(150) && delays[0] <= Duration::from_millis(300), "{delays:?}");
    assert!(delays[1] >= Duration::from_millis(300) && delays[1] <= Duration::from_millis(600), "{delays:?}");
    assert!(delays[1] >= delays[0], "the delays grow: {delays:?}");
    for (k, pair) in calls.windows(2).enumerate() {
        let gap = pair[1].0 - pair[0].0;
        assert!(gap >= delays[k].mul_f64(0.9), "redelivered after {gap:?}, before its nack delay {:?}", delays[k]);
    }
}

#[test]
fn test_worker_extends_lease() {
    let f = Fixture::new();
    f.queue.publish("g", "slow", &PublishOptions::default()).unwrap();
    let started = Arc::new(Barrier::new(2));
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let (b, e) = (Arc::clone(&started), Arc::clone(&errors));
    let worker = f
        .queue
        .worker(
            WorkerOptions::new()
                .visibility(Duration::from_millis(600))
                .on_error(move |err| e.lock().unwrap().push(format!("{err:?}"))),
            move |_| {
                b.wait();
                thread::sleep(Duration::from_millis(1800)); // 3x the visibility
                Ok::<(), mongomq::BoxError>(())
            },
        )
        .unwrap();
    started.wait();
    let other = f.other_handle();
    let end = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < end {
        assert!(other.claim(&opts(30_000)).unwrap().is_none(), "the running handler's group was claimable");
        thread::sleep(Duration::from_millis(100));
    }
    assert!(eventually(Duration::from_secs(10), || f.queue.stats().unwrap().messages == 0), "acked");
    assert!(worker.stop());
    assert!(errors.lock().unwrap().is_empty(), "the ack and every extend were OK: {:?}", errors.lock().unwrap());
}

#[test]
fn test_worker_dead_letters() {
    let f = Fixture::new();
    f.queue.publish("g", "poison", &PublishOptions::default()).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let worker = f
        .queue
        .worker(WorkerOptions::new().max_attempts(2).backoff_base(Duration::from_millis(50)), move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            Err("always fails")
        })
        .unwrap();
    assert!(
        eventually(Duration::from_secs(15), || f.queue.dead_count().unwrap() == 1),
        "the event ends in the dead letters"
    );
    assert!(worker.stop());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(f.queue.stats().unwrap().messages, 0);
}

#[test]
fn test_worker_graceful_shutdown() {
    let f = Fixture::new();
    f.queue.publish("g1", "running", &PublishOptions::default()).unwrap();
    let started = Arc::new(Barrier::new(2));
    let finished = Arc::new(AtomicUsize::new(0));
    let handled = Arc::new(AtomicUsize::new(0));
    let (b, fin, h) = (Arc::clone(&started), Arc::clone(&finished), Arc::clone(&handled));
    let worker = f
        .queue
        .worker(WorkerOptions::new().concurrency(1), move |_| {
            h.fetch_add(1, Ordering::SeqCst);
            b.wait();
            thread::sleep(Duration::from_millis(800));
            fin.fetch_add(1, Ordering::SeqCst);
            Ok::<(), mongomq::BoxError>(())
        })
        .unwrap();
    started.wait();
    f.queue.publish("g2", "not taken", &PublishOptions::default()).unwrap();
    let start = Instant::now();
    assert!(worker.stop(), "the running handler finished within the timeout");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(finished.load(Ordering::SeqCst), 1, "the running handler finished before shutdown returned");
    assert_eq!(handled.load(Ordering::SeqCst), 1, "no claim after the stop");
    let left = claim(&f.queue);
    assert_eq!((left.group(), left.attempts()), ("g2", 1), "g1 was acked, g2 never claimed");
    assert_eq!(f.queue.stats().unwrap().messages, 1);
}

#[test]
fn test_worker_stop_after_claim() {
    let f = Fixture::new();
    for cycle in 0..30u64 {
        let seq = f.queue.publish("g", format!("cycle {cycle}"), &PublishOptions::default()).unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let worker = f
            .queue
            .worker(WorkerOptions::new().concurrency(2).backoff_base(Duration::from_millis(1)), move |_| {
                c.fetch_add(1, Ordering::SeqCst);
                Err("always fails")
            })
            .unwrap();
        // The stop lands anywhere from before the first claim to after a few handler
        // calls: the claims and the handler take about a millisecond each here.
        thread::sleep(Duration::from_micros((cycle % 10) * 300));
        assert!(worker.stop());
        let lease = f.queue.claim(&opts(30_000).wait(Duration::from_secs(30))).unwrap().expect("the event");
        let calls = calls.load(Ordering::SeqCst);
        assert_eq!(lease.seq(), seq);
        assert_eq!(
            lease.attempts() as usize,
            calls + 1,
            "cycle {cycle}: {calls} handler calls; a lease no handler ran was counted as a delivery"
        );
        f.queue.ack(&lease).unwrap();
    }
}

// ---- beyond the contract ---------------------------------------------------------

#[test]
fn worker_stop_ends_wait_on_another_thread() {
    let f = Fixture::new();
    let worker =
        Arc::new(f.queue.worker(WorkerOptions::new().concurrency(3), |_| Ok::<(), mongomq::BoxError>(())).unwrap());
    let waiting = Arc::clone(&worker);
    let waiter = thread::spawn(move || waiting.wait());
    thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    assert!(worker.stop());
    assert!(waiter.join().unwrap(), "wait returns what the stop found");
    assert!(start.elapsed() < PROMPTLY, "waiting claims were cancelled, not waited out");
}

#[test]
fn claim_options_defaults() {
    let f = Fixture::new();
    f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let before = f.queue.now();
    let lease = f.queue.claim(&ClaimOptions::new()).unwrap().unwrap();
    assert!((secs(lease.deadline(), before) - 30.0).abs() < 5.0, "default visibility 30 s");
    assert_eq!(lease.count(), 1);
    assert!(mongomq::library_version().starts_with("0.8."));
}

#[test]
fn automatic_repair_on_empty_claims() {
    let f = Fixture::new();
    f.queue.set_repair_interval(Duration::from_millis(200)).unwrap();
    f.queue.publish("g", "orphan", &PublishOptions::default()).unwrap();
    assert_eq!(common::delete_all_locks(&f), 1);
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "the first empty claim starts the period");
    thread::sleep(Duration::from_millis(300));
    let lease = f.queue.claim(&opts(30_000)).unwrap().expect("the claim repaired the group and took it");
    assert_eq!(lease.event(), b"orphan");
    assert_eq!(f.queue.repair_counts(), RepairCounts { runs: 1, fixed: 1 });
    assert_eq!(f.client.write_concern_errors(), 0);
    assert_bad_argument(f.queue.set_repair_interval(Duration::MAX), "interval");
}

#[test]
fn peek_and_dead_list() {
    let f = Fixture::new();
    let s1 = f.queue.publish("g", "text ✓", &PublishOptions::new().priority(3)).unwrap();
    let s2 = f.queue.publish("g", b"\x00\xff bin", &PublishOptions::new().priority(3)).unwrap();
    let s3 = f.queue.publish("h", b"", &PublishOptions::default()).unwrap();
    let all = f.queue.peek(None, 10).unwrap();
    let got: Vec<_> = all.iter().map(|e| (e.seq, e.group.as_deref(), e.event.as_deref())).collect();
    assert_eq!(
        got,
        [
            (Some(s1), Some("g"), Some("text ✓".as_bytes())),
            (Some(s2), Some("g"), Some(&b"\x00\xff bin"[..])),
            (Some(s3), Some("h"), Some(&b""[..]))
        ]
    );
    assert_eq!(all[0].priority, Some(3));
    assert!(all[0].published_at.is_some());
    assert_eq!(f.queue.peek(Some("h"), 10).unwrap().len(), 1);
    assert_eq!(f.queue.peek(Some("g"), 1).unwrap()[0].seq, Some(s1));
    assert_eq!(f.queue.stats().unwrap().messages, 3, "peek changes nothing");
    assert_bad_argument(f.queue.peek(None, 0), "limit");
    f.queue.set_max_attempts(1).unwrap();
    let lease = claim(&f.queue);
    f.queue.nack(&lease, Duration::ZERO).unwrap();
    let next = claim(&f.queue); // g's head goes to the dead letters; the claim goes on
    assert_ne!(next.seq(), s1);
    let dead = f.queue.dead_list(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].seq, dead[0].attempts), (Some(s1), Some(1)));
    assert!(dead[0].dead_at.is_some());
    assert!(f.queue.dead_list_json(10).unwrap().starts_with('['));
}

#[test]
fn log_handler_panic_is_caught_and_replaced_handler_called_from_any_thread() {
    let _serial = LOG_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // A panicking handler: caught in the trampoline (written to stderr), never unwinds
    // into C; this process goes on.
    let panics = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&panics);
    mongomq::set_log_handler(Some(Box::new(move |_, _, message| {
        if message.to_lowercase().contains("mongomqnosuchoption") {
            count.fetch_add(1, Ordering::SeqCst);
            panic!("a handler that panics (expected by this test)");
        }
    })));
    drop(Client::connect(UNKNOWN_OPTION_URI).unwrap());
    assert!(eventually(PROMPTLY, || panics.load(Ordering::SeqCst) > 0));
    let n = panics.load(Ordering::SeqCst);
    // Replaced: the new handler gets the lines, on the threads that log.
    let lines = LogLines::default();
    mongomq::set_log_handler(Some(record_unknown_option(&lines)));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            thread::spawn(|| {
                drop(Client::connect(UNKNOWN_OPTION_URI).unwrap());
                thread::current().id()
            })
        })
        .collect();
    let ids: HashSet<thread::ThreadId> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(eventually(PROMPTLY, || lines.lock().unwrap().len() >= 4));
    let seen: HashSet<thread::ThreadId> = lines.lock().unwrap().iter().map(|l| l.3).collect();
    assert_eq!(seen, ids, "called on each connecting thread");
    assert_eq!(panics.load(Ordering::SeqCst), n, "the replaced handler is not called any more");
    mongomq::set_log_handler(None);
}

#[test]
fn lease_text_and_json() {
    let f = Fixture::new();
    f.queue.publish("g", r#"{"order": 17, "item": "tea ✓"}"#, &PublishOptions::default()).unwrap();
    f.queue.publish("h", b"\xff\xfe not utf-8", &PublishOptions::default()).unwrap();
    let lease = claim(&f.queue);
    assert_eq!(lease.text().unwrap(), r#"{"order": 17, "item": "tea ✓"}"#);
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Order<'a> {
        order: u32,
        item: &'a str, // borrowed from the lease
    }
    assert_eq!(lease.json::<Order>().unwrap(), Order { order: 17, item: "tea ✓" });
    let value: serde_json::Value = lease.json().unwrap();
    assert_eq!(value["order"], 17);
    let binary = claim(&f.queue);
    let err = binary.text().unwrap_err();
    assert_eq!(err.valid_up_to(), 0, "the error says where the bytes stop being UTF-8");
    assert!(binary.json::<serde_json::Value>().is_err());
}

#[test]
fn instants_are_system_time_on_the_queue_clock() {
    let f = Fixture::new();
    let at = f.queue.now() + Duration::from_secs(3600);
    let seq = f.queue.publish("g", "later", &PublishOptions::new().not_before(at).priority(2)).unwrap();
    let peeked = f.queue.peek(Some("g"), 1).unwrap();
    assert_eq!(peeked[0].seq, Some(seq));
    let not_before = peeked[0].not_before.expect("a scheduled event shows its time");
    assert!(secs(not_before, at).abs() < 1e-3, "{not_before:?} is not {at:?}");
    let published_at = peeked[0].published_at.expect("published_at");
    assert!(secs(published_at, f.queue.now()).abs() < 60.0);
    let stats = f.queue.stats().unwrap();
    assert_eq!(stats.groups.parked, 1, "a scheduled head parks its group");
    // serialized back, the stats keep the library's shape: `now` in epoch seconds
    let json: serde_json::Value = serde_json::to_value(&stats).unwrap();
    assert!(json["now"].as_f64().is_some_and(|now| now > 1.6e9), "{json}");
}

#[test]
fn batch_events_may_be_scheduled() {
    let f = Fixture::new();
    let mut batch = Batch::new().unwrap();
    let later = PublishOptions::new().not_before(f.queue.now() + Duration::from_millis(800));
    batch.add("later", "scheduled", &later).unwrap();
    batch.add("now", "due", &PublishOptions::new().priority(3)).unwrap();
    let first = f.queue.publish_batch(&batch).unwrap();
    let lease = f.queue.claim(&opts(30_000)).unwrap().expect("the due group");
    assert_eq!((lease.group(), lease.seq()), ("now", first + 1));
    assert!(f.queue.claim(&opts(30_000)).unwrap().is_none(), "the scheduled group waits for its time");
    let lease = f.queue.claim(&opts(30_000).wait(Duration::from_secs(10))).unwrap().expect("due after its time");
    assert_eq!((lease.group(), lease.seq()), ("later", first));
}

#[test]
fn groups_show_a_lapsed_lease_and_a_group_paused_ahead() {
    let f = Fixture::new();
    let q = &f.queue;
    let start = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let clock = ManualClock::new(start);
    q.set_clock(Some(&clock));
    q.publish("lapsed", "x", &PublishOptions::default()).unwrap();
    let lease = q.claim(&opts(10_000).worker_id("w-old")).unwrap().unwrap();
    clock.advance(Duration::from_secs(11)); // the lease ran out: ready again
    q.pause_group("ahead").unwrap(); // no events yet
    let page = q.groups(&GroupsOptions::new()).unwrap();
    assert_eq!(ids(&page), ["ahead", "lapsed"]);
    let (ahead, lapsed) = (&page.groups[0], &page.groups[1]);
    assert_eq!((ahead.state, ahead.backlog, ahead.head, ahead.head_age), (GroupState::Paused, 0, None, None));
    assert_eq!((lapsed.state, lapsed.holder.as_deref()), (GroupState::Ready, Some("w-old")), "its last holder");
    assert_eq!((lapsed.held_for, lapsed.lease_deadline, lapsed.attempts), (None, None, 1));
    let s = q.stats().unwrap();
    assert_eq!((s.groups.total, s.groups.ready, s.groups.paused, s.published), (2, 1, 1, 1), "{s:?}");
    q.ack(&lease).unwrap(); // lapsed, but nobody took the group over: the token still fences it
                            // A prefix is literal: no pattern characters.
    q.publish("a.b*1", "x", &PublishOptions::default()).unwrap();
    q.publish("aXb*2", "x", &PublishOptions::default()).unwrap();
    assert_eq!(ids(&q.groups(&GroupsOptions::new().id_prefix("a.b*")).unwrap()), ["a.b*1"]);
    // serialized back, a page keeps the library's keys
    let json: serde_json::Value = serde_json::to_value(&page).unwrap();
    assert_eq!(json["groups"][1]["holder"], "w-old");
    assert!(json["groups"][1]["held_for_s"].is_null() && json["now"].as_f64() == Some(1_000_000_011.0), "{json}");
}

#[test]
fn dedup_plain_publish_and_batch_keep_their_seq() {
    // publish and publish_batch keep their Result<i64>: a duplicate is Ok there too.
    let f = Fixture::new();
    let q = &f.queue;
    let seq = q.publish("g", "x", &key("k")).unwrap();
    assert_eq!(q.publish("h", "y", &key("k")).unwrap(), seq, "the seq of the event that holds the key");
    let mut batch = Batch::new().unwrap();
    batch.add("g", "dup", &key("k")).unwrap();
    batch.add("g", "new", &PublishOptions::default()).unwrap();
    let first = q.publish_batch(&batch).unwrap();
    assert_eq!(q.peek(None, 10).unwrap().iter().map(|e| e.seq.unwrap()).collect::<Vec<_>>(), [seq, first + 1]);
    // A batch's outcome is its last publish's: published again, the key is still taken.
    let outcome = q.publish_batch_with(&batch).unwrap();
    assert_eq!(outcome[0], duplicate_of(seq));
    assert!(!outcome[1].duplicate && outcome[1].seq > first + 1, "{outcome:?}");
    assert_eq!(q.stats().unwrap().messages, 3);
}

#[test]
fn dedup_shared_batch_outcomes_per_publish() {
    // One Batch (Sync) published by several threads at once: each publish gets its own
    // outcome (the C batch keeps only the last one; the crate holds a lock across the
    // publish and the reading of it). The first publish adds the keyed events, every
    // other one finds them all taken.
    let f = Fixture::new();
    let mut batch = Batch::new().unwrap();
    for i in 0..20 {
        batch.add(&format!("g{}", i % 3), format!("{i}"), &key(&format!("k{i}"))).unwrap();
    }
    let batch = Arc::new(batch);
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (q, batch) = (f.queue.clone(), Arc::clone(&batch));
            thread::spawn(move || q.publish_batch_with(&batch).unwrap())
        })
        .collect();
    let outcomes: Vec<Vec<Published>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let (fresh, dups): (Vec<_>, Vec<_>) = outcomes.iter().partition(|o| o.iter().all(|p| !p.duplicate));
    assert_eq!(fresh.len(), 1, "one publish added the events: {outcomes:?}");
    let seqs: Vec<i64> = fresh[0].iter().map(|p| p.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "an adding publish's seqs follow add order: {seqs:?}");
    for o in dups {
        assert_eq!(
            o.iter().map(|p| (p.seq, p.duplicate)).collect::<Vec<_>>(),
            seqs.iter().map(|&s| (s, true)).collect::<Vec<_>>()
        );
    }
    assert_eq!(f.queue.stats().unwrap().messages, 20);
}

#[test]
fn dedup_window_and_scopes() {
    let f = Fixture::new();
    let q = &f.queue;
    assert_eq!(mongomq::DEFAULT_DEDUP_WINDOW, Duration::from_secs(300));
    q.set_dedup_window(mongomq::limits::DEDUP_WINDOW_MAX).unwrap();
    q.set_dedup_window(mongomq::limits::DEDUP_WINDOW_MIN).unwrap();
    let at_most = "k".repeat(mongomq::limits::DEDUP_KEY_MAX);
    let first = q.publish_with("g", "x", &key(&at_most)).unwrap();
    assert!(!first.duplicate, "a key of 512 bytes is fine");
    // Past the 1 s window, a key whose event is still queued stays taken...
    thread::sleep(Duration::from_millis(1300));
    assert_eq!(q.publish_with("g", "x", &key(&at_most)).unwrap(), duplicate_of(first.seq));
    // ... and once the event is acked and the window passed, it is free again.
    let lease = claim(q);
    q.ack(&lease).unwrap();
    let again = q.publish_with("g", "x", &key(&at_most)).unwrap();
    assert!(!again.duplicate && again.seq > first.seq, "{again:?}");
    // Keys of one scope never match keys of the other.
    let by_group = f.other_handle();
    by_group.set_dedup_scope(DedupScope::Group).unwrap();
    assert!(!by_group.publish_with("g", "y", &key(&at_most)).unwrap().duplicate);
    by_group.set_dedup_scope(DedupScope::Queue).unwrap();
    assert!(by_group.publish_with("g", "z", &key(&at_most)).unwrap().duplicate, "the queue scope again");
}
