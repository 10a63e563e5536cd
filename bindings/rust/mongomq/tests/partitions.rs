//! The Partitions (0.8.0) scenarios of bindings/CONTRACT.md (`test_partitions_*`),
//! each on a queue it opens with the partitions it needs whatever
//! MONGOMQ_TEST_PARTITIONS says, and what the Rust surface adds (the limit, a
//! worker's bad list refused when it starts, the async claim with partitions).

mod common;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{fresh_name, opts, uri};
use mongomq::{group_partition, ClaimOptions, Client, ErrorKind, PublishOptions, Queue, QueueOptions, WorkerOptions};

const PROMPTLY: Duration = Duration::from_secs(5);

/// A queue of `partitions` partitions in a database of its own, dropped at the end.
struct Partitioned {
    client: Client,
    queue: Queue,
    db: String,
}

impl Partitioned {
    fn new(partitions: usize) -> Partitioned {
        let client = Client::connect(&uri()).expect("connect");
        let db = fresh_name();
        let queue = client.queue_with(&db, "mq", &QueueOptions::new().partitions(partitions)).expect("open");
        Partitioned { client, queue, db }
    }
}

impl Drop for Partitioned {
    fn drop(&mut self) {
        let _ = self.queue.drop_queue();
    }
}

fn assert_bad_argument<T: std::fmt::Debug>(r: mongomq::Result<T>, what: &str, names: &str) {
    let err = r.expect_err(&format!("{what} must be refused"));
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{what}: {err}");
    assert!(err.message().contains(names), "{what}: the message {:?} does not name {names}", err.message());
}

fn publish(q: &Queue, group: &str, event: &str) -> i64 {
    q.publish(group, event, &PublishOptions::default()).unwrap()
}

#[test]
fn test_partitions_open() {
    let p = Partitioned::new(4);
    assert_eq!(p.queue.partitions(), 4);
    assert_eq!(p.queue.stats().unwrap().partitions, 4);
    assert_bad_argument(
        p.client.queue(&p.db, "mq"),
        "the 4-partition queue opened with 1 (the default)",
        "4 partitions",
    );
    assert_bad_argument(
        p.client.queue_with(&p.db, "mq", &QueueOptions::new().partitions(1)),
        "the 4-partition queue opened with 1",
        "4 partitions",
    );
    assert_bad_argument(
        p.client.queue_with(&p.db, "mq", &QueueOptions::new().partitions(8)),
        "the 4-partition queue opened with 8",
        "4 partitions",
    );
    for n in [0, 1025, usize::MAX] {
        assert_bad_argument(
            p.client.queue_with(&fresh_name(), "mq", &QueueOptions::new().partitions(n)),
            &format!("partitions {n}"),
            "partitions",
        );
    }
    let plain = Partitioned::new(1);
    assert_eq!(plain.queue.partitions(), 1);
    let db = fresh_name();
    let default = p.client.queue(&db, "mq").unwrap(); // without the option
    assert_eq!(default.partitions(), 1);
    assert_eq!(default.stats().unwrap().partitions, 1);
    default.drop_queue().unwrap();
}

#[test]
fn test_partitions_group_hash() {
    for (group, partitions, want) in [
        ("a", 4, 3),
        ("b", 4, 0),
        ("customer-17", 4, 1),
        ("g1", 4, 1),
        ("g2", 4, 3),
        ("g3", 4, 0),
        ("a", 16, 11),
        ("customer-17", 16, 9),
        ("g2", 16, 7),
    ] {
        assert_eq!(group_partition(group, partitions).unwrap(), want, "group_partition({group:?}, {partitions})");
    }
    for group in ["a", "b", "customer-17", "g1", "g2", "g3", "", "é"] {
        assert_eq!(group_partition(group, 1).unwrap(), 0, "group_partition({group:?}, 1)");
    }
}

#[test]
fn test_partitions_fifo() {
    let p = Partitioned::new(4);
    let q = &p.queue;
    let groups: Vec<String> = (1..=8).map(|g| format!("g{g}")).collect();
    let mut published: std::collections::HashMap<&str, Vec<i64>> = Default::default();
    for i in 0..5 {
        // Interleaved: g1 e0, g2 e0, ..., g8 e0, g1 e1, ...
        for g in &groups {
            published.entry(g).or_default().push(publish(q, g, &format!("{g}-e{i}")));
        }
    }
    let mut got: std::collections::HashMap<String, Vec<i64>> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for n in 0..40 {
        let lease = q.claim(&opts(30_000)).unwrap().unwrap_or_else(|| panic!("claim {n}: nothing"));
        let g = lease.group().to_string();
        assert_eq!(lease.partition(), group_partition(&g, 4).unwrap(), "lease of {g}");
        let i = got.get(&g).map_or(0, Vec::len);
        assert_eq!(lease.text().unwrap(), format!("{g}-e{i}"), "claim {n}: {g}'s events in publish order");
        assert!(seen.insert(lease.seq()), "seq {} delivered twice", lease.seq());
        got.entry(g).or_default().push(lease.seq());
        q.ack(&lease).unwrap();
    }
    assert!(q.claim(&opts(30_000)).unwrap().is_none());
    for g in &groups {
        let seqs = &got[g.as_str()];
        assert_eq!(seqs, &published[g.as_str()], "{g}'s seqs: the publishes'");
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{g}'s seqs {seqs:?} increase");
    }
    assert_eq!(seen.len(), 40);
    let stats = q.stats().unwrap();
    assert_eq!((stats.messages, stats.published), (0, 40));
}

#[test]
fn test_partitions_claim_subset() {
    let p = Partitioned::new(4);
    let q = &p.queue;
    assert_eq!((group_partition("b", 4).unwrap(), group_partition("customer-17", 4).unwrap()), (0, 1));
    publish(q, "b", "b0");
    publish(q, "b", "b1");
    publish(q, "customer-17", "c0");
    publish(q, "customer-17", "c1");
    for i in 0..2 {
        let lease = q.claim(&opts(30_000).partitions([1])).unwrap().expect("customer-17's");
        assert_eq!(
            (lease.group(), lease.text().unwrap(), lease.partition()),
            ("customer-17", format!("c{i}").as_str(), 1)
        );
        q.ack(&lease).unwrap();
    }
    assert!(q.claim(&opts(30_000).partitions([1])).unwrap().is_none(), "nothing left in partition 1");
    assert_eq!(q.stats().unwrap().messages, 2, "b's 2 still there");

    // One more event in partition 1 than the contract publishes, so that a worker
    // claiming from every partition would be caught handling it.
    publish(q, "customer-17", "c2");
    let handled = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&handled);
    let finished = q
        .work(WorkerOptions::new().partitions([0]).idle_timeout(Duration::from_secs(1)), move |lease| {
            seen.lock().unwrap().push(format!("{}:{}", lease.group(), lease.text()?));
            Ok::<(), mongomq::BoxError>(())
        })
        .unwrap();
    assert!(finished);
    assert_eq!(*handled.lock().unwrap(), ["b:b0", "b:b1"], "the worker on [0] handles b's 2 only");
    let left = q.claim(&opts(30_000).partitions([1])).unwrap().expect("customer-17's c2, left alone");
    assert_eq!(left.text().unwrap(), "c2");
    q.ack(&left).unwrap();

    assert_bad_argument(q.claim(&opts(30_000).partitions([4])), "partitions [4]", "partitions");
    assert_bad_argument(q.claim(&opts(30_000).partitions([0, 0])), "partitions [0, 0]", "partitions");
    assert_bad_argument(
        q.claim(&opts(30_000).partitions([4]).wait(Duration::from_secs(1))),
        "partitions [4], waiting",
        "partitions",
    );
    assert_bad_argument(
        q.claim(&opts(30_000).partitions([0, 0]).max_events(5)),
        "partitions [0, 0], a batch",
        "partitions",
    );
}

#[test]
fn test_partitions_wait_hint() {
    let p = Partitioned::new(4);
    assert_eq!((group_partition("a", 4).unwrap(), group_partition("b", 4).unwrap()), (3, 0));
    let publisher = {
        let q = p.queue.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(100));
            publish(&q, "b", "not this"); // meanwhile, in partition 0
            thread::sleep(Duration::from_millis(100));
            publish(&q, "a", "wake")
        })
    };
    let start = Instant::now();
    let lease = p
        .queue
        .claim(&opts(30_000).partitions([3]).wait(Duration::from_secs(10)))
        .unwrap()
        .expect("woken by a's publish");
    assert!(start.elapsed() < PROMPTLY, "took {:?}", start.elapsed());
    assert_eq!((lease.group(), lease.text().unwrap(), lease.partition()), ("a", "wake", 3));
    assert_eq!(lease.seq(), publisher.join().unwrap());
    p.queue.ack(&lease).unwrap();
    let b = p.queue.claim(&opts(30_000).partitions([0])).unwrap().expect("b's event");
    assert_eq!(b.group(), "b");
    p.queue.ack(&b).unwrap();
}

// ---- beyond the contract ----------------------------------------------------------

#[test]
fn partitions_limits_and_bad_values() {
    assert_eq!(mongomq::limits::PARTITIONS_MAX, 1024);
    for n in [0, 1025, usize::MAX] {
        assert_bad_argument(group_partition("a", n), &format!("group_partition(a, {n})"), "partitions");
    }
    assert_bad_argument(group_partition("a\0b", 4), "a group with a NUL byte", "group_id");
    assert!(group_partition("a", 1024).unwrap() < 1024);

    let p = Partitioned::new(4);
    let q = &p.queue;
    assert_bad_argument(q.claim(&opts(30_000).partitions([0, 1, 2, 3, 0])), "5 partitions of 4", "partition_count");
    assert_bad_argument(q.claim(&opts(30_000).partitions([0, usize::MAX])), "beyond C's int", "partitions[1]");
    // Empty is every partition; a later .partitions() replaces the earlier list.
    publish(q, "b", "x");
    let lease = q.claim(&opts(30_000).partitions([1]).partitions([])).unwrap().expect("every partition");
    q.ack(&lease).unwrap();
    let handler = |_: &mongomq::Lease| Ok::<(), mongomq::BoxError>(());
    for (parts, names) in
        [(vec![4], "partitions[0]"), (vec![0, 0], "partitions[1]"), (vec![0, 1, 2, 3, 0], "partition_count")]
    {
        assert_bad_argument(
            q.worker(WorkerOptions::new().partitions(parts.clone()), handler),
            &format!("a worker on {parts:?}"),
            names,
        );
    }
    // A queue of one partition: [0] is every partition, [1] is refused.
    let one = Partitioned::new(1);
    publish(&one.queue, "a", "x");
    let lease = one.queue.claim(&ClaimOptions::new().partitions([0])).unwrap().expect("a's");
    assert_eq!((lease.partition(), one.queue.partitions()), (0, 1));
    one.queue.ack(&lease).unwrap();
    assert_bad_argument(one.queue.claim(&ClaimOptions::new().partitions([1])), "[1] of one", "partitions[0]");
}

#[cfg(feature = "tokio")]
#[tokio::test]
async fn partitions_async_claim_and_worker() {
    let p = Partitioned::new(4);
    let q = p.queue.clone();
    publish(&q, "b", "b0");
    publish(&q, "customer-17", "c0");
    let lease = q.claim_async(&opts(30_000).partitions([1]).wait(Duration::from_secs(5))).await.unwrap().unwrap();
    assert_eq!(lease.group(), "customer-17");
    q.ack_async(&lease).await.unwrap();
    let handled = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&handled);
    let opts = WorkerOptions::new().partitions([0]).idle_timeout(Duration::from_millis(500));
    q.work_async(opts, move |lease| {
        let seen = Arc::clone(&seen);
        async move {
            seen.lock().unwrap().push(lease.group().to_string());
            Ok::<(), mongomq::BoxError>(())
        }
    })
    .await
    .unwrap();
    assert_eq!(*handled.lock().unwrap(), ["b"]);
    let bad = q.worker_async(WorkerOptions::new().partitions([9]), |_lease| async { Ok::<(), mongomq::BoxError>(()) });
    assert_bad_argument(bad.await, "an async worker on [9]", "partitions[0]");
}
