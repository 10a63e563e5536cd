//! The async scenarios of bindings/CONTRACT.md ("Async (0.6.0 ...)"), each as
//! `test_<scenario>` under `#[tokio::test]` (feature tokio): the awaited calls, a claim
//! cancelled by dropping its future, and the async worker. scripts/test-rust.sh checks
//! with scripts/contract-scenarios.py that each passed under its name.
#![cfg(feature = "tokio")]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{opts, Fixture};
use mongomq::{Batch, BoxError, Lease, PublishOptions, Published, WorkerOptions};

/// How long a cancelled claim may take to end (the contract: well under 5 s).
const PROMPTLY: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_async_round_trip() {
    let f = Fixture::new();
    let q = &f.queue;
    let none = PublishOptions::default();
    // Publishes, awaited: the seqs a sync publish would give (1, then consecutive with
    // one partition; with more, g's partition numbers g's, and the duplicates of h and
    // x take theirs from their own partitions: they increase within g).
    let one_partition = q.partitions() == 1;
    let first = q.publish_async("g", b"one".to_vec(), &none).await.unwrap();
    assert_eq!(first, common::partition_of(q, "g").first().map_or(1, |&k| k as i64 + 1));
    let keyed = PublishOptions::new().dedup_key("k");
    let p = q.publish_with_async("g", b"two".to_vec(), &keyed).await.unwrap();
    assert!(!p.duplicate && p.seq > first, "{p:?} after {first}");
    if one_partition {
        assert_eq!(p, Published { seq: 2, duplicate: false });
    }
    let mut batch = Batch::new().unwrap();
    batch.add("g", "three", &none).unwrap();
    batch.add("h", "again", &keyed).unwrap(); // the key of #2: a duplicate, nothing added
    batch.add("g", "four", &none).unwrap();
    let (outcomes, _batch) = q.publish_batch_with_async(batch).await.unwrap();
    assert_eq!(outcomes[1], Published { seq: p.seq, duplicate: true });
    assert!(!outcomes[0].duplicate && !outcomes[2].duplicate, "{outcomes:?}");
    assert!(p.seq < outcomes[0].seq && outcomes[0].seq < outcomes[2].seq, "{outcomes:?}: g's seqs increase");
    if one_partition {
        assert_eq!(
            outcomes,
            vec![
                Published { seq: 3, duplicate: false },
                Published { seq: 2, duplicate: true },
                Published { seq: 5, duplicate: false }, // a batch event's seq is first + its index
            ]
        );
    }
    // The sync call says the same of the key.
    assert_eq!(q.publish_with("x", "sync", &keyed).unwrap(), Published { seq: p.seq, duplicate: true });
    let mut batch = Batch::new().unwrap();
    batch.add("g", "five", &none).unwrap();
    batch.add("g", "six", &none).unwrap();
    let (first_of_batch, batch) = q.publish_batch_async(batch).await.unwrap();
    assert_eq!(batch.len(), 2, "the batch back");
    assert!(first_of_batch > outcomes[2].seq, "the first seq {first_of_batch}, after g's {}", outcomes[2].seq);
    if one_partition {
        // #6 went to the sync duplicate (a keyed publish takes a seq from the counter first).
        assert_eq!(first_of_batch, 7, "the first seq");
    }
    let stats = q.stats().unwrap();
    assert_eq!((stats.messages, stats.groups.total), (6, 1), "duplicates added nothing");

    // Claim, extend, nack, claim again, ack: each awaited.
    let claim_opts = opts(30_000).wait(Duration::from_secs(5));
    let lease = q.claim_async(&claim_opts).await.unwrap().expect("a lease");
    assert_eq!((lease.group(), lease.seq(), lease.event(), lease.attempts()), ("g", first, &b"one"[..], 1));
    q.extend_async(&lease, Duration::from_secs(120)).await.unwrap();
    let left = common::secs(lease.deadline(), q.now());
    assert!((100.0..=125.0).contains(&left), "the extend moved the deadline to now + 120 s: {left}");
    assert!(q.claim_async(&claim_opts.clone().wait(Duration::ZERO)).await.unwrap().is_none(), "g is held");
    q.nack_async(&lease, Duration::ZERO).await.unwrap();
    assert_eq!(
        q.extend_async(&lease, Duration::from_secs(1)).await.unwrap_err().kind(),
        mongomq::ErrorKind::LeaseLost,
        "nacked: the lease is gone"
    );
    let lease = q.claim_async(&claim_opts).await.unwrap().expect("g's head again");
    assert_eq!((lease.seq(), lease.attempts()), (first, 2), "a nack counts a delivery");
    q.ack_async(&lease).await.unwrap();
    let next = q.claim_async(&claim_opts).await.unwrap().expect("the next event");
    assert_eq!((next.seq(), next.event(), next.attempts()), (p.seq, &b"two"[..], 1), "the ack removed #1");
    q.ack_async(&next).await.unwrap();
    assert_eq!(q.stats().unwrap().messages, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_async_claim_cancelled() {
    let f = Fixture::new();
    let wait = opts(30_000).wait(Duration::from_secs(30));
    // 1. Dropped by a timeout (tokio::time::timeout drops the claim's future).
    let start = Instant::now();
    let timed_out = tokio::time::timeout(Duration::from_millis(300), f.queue.claim_async(&wait)).await;
    assert!(timed_out.is_err(), "nothing was published: the claim was still waiting");
    // 2. Dropped by aborting the task that awaits it.
    let q = f.queue.clone();
    let w = wait.clone();
    let task = tokio::spawn(async move { q.claim_async(&w).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert!(start.elapsed() < Duration::from_millis(500) + PROMPTLY, "both ended promptly: {:?}", start.elapsed());
    // The C claims ended with their futures: had one still been waiting, it would take
    // the next event (and hold it for 30 s).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stats = f.queue.stats().unwrap();
    assert_eq!((stats.messages, stats.groups.leased), (0, 0), "no leased group before the publish");
    let seq = f.queue.publish_async("g", b"after".to_vec(), &PublishOptions::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(f.queue.stats().unwrap().groups.leased, 0, "no claim left running took the event");
    let lease = f.queue.claim_async(&wait).await.unwrap().expect("the event is the next claim's");
    assert_eq!((lease.seq(), lease.attempts()), (seq, 1));
    f.queue.ack_async(&lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_async_worker_handles_all() {
    let f = Fixture::new();
    let mut expected: HashMap<String, Vec<i64>> = HashMap::new();
    let mut batch = Batch::new().unwrap();
    for i in 0..40 {
        let group = format!("g{}", i % 8);
        batch.add(&group, format!("{i}"), &PublishOptions::default()).unwrap();
    }
    let outcomes = f.queue.publish_batch_with_async(batch).await.unwrap().0;
    for (i, p) in outcomes.iter().enumerate() {
        expected.entry(format!("g{}", i % 8)).or_default().push(p.seq);
    }
    let seen: Arc<Mutex<HashMap<String, Vec<i64>>>> = Arc::default();
    let in_handler: Arc<Mutex<HashSet<String>>> = Arc::default();
    let overlaps = Arc::new(AtomicUsize::new(0));
    let most_at_once = Arc::new(AtomicUsize::new(0));
    let (seen2, inh, ov, most) =
        (Arc::clone(&seen), Arc::clone(&in_handler), Arc::clone(&overlaps), Arc::clone(&most_at_once));
    let worker = f
        .queue
        .worker_async(WorkerOptions::new().concurrency(4), move |lease: Lease| {
            let (seen, inh, ov, most) = (Arc::clone(&seen2), Arc::clone(&inh), Arc::clone(&ov), Arc::clone(&most));
            async move {
                {
                    let mut held = inh.lock().unwrap();
                    if !held.insert(lease.group().to_string()) {
                        ov.fetch_add(1, Ordering::SeqCst);
                    }
                    most.fetch_max(held.len(), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                seen.lock().unwrap().entry(lease.group().to_string()).or_default().push(lease.seq());
                inh.lock().unwrap().remove(lease.group());
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.lock().unwrap().values().map(Vec::len).sum::<usize>() < 40 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(worker.stop().await);
    assert_eq!(*seen.lock().unwrap(), expected, "each event once, each group in publish order");
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "no group in two handlers at once");
    assert!(most_at_once.load(Ordering::SeqCst) > 1, "the 4 tasks ran handlers concurrently");
    assert_eq!(f.queue.stats().unwrap().messages, 0, "every event acked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_async_worker_retries_failure() {
    let f = Fixture::new();
    let seq = f.queue.publish_async("g", b"flaky".to_vec(), &PublishOptions::default()).await.unwrap();
    let seen: Arc<Mutex<Vec<(i64, u32, Instant)>>> = Arc::default();
    let s = Arc::clone(&seen);
    let failures = Arc::new(AtomicUsize::new(0));
    let fl = Arc::clone(&failures);
    let opts = WorkerOptions::new().backoff_base(Duration::from_millis(10)).on_error(move |e| {
        if matches!(e, mongomq::WorkerError::Handler { .. }) {
            fl.fetch_add(1, Ordering::SeqCst);
        }
    });
    let worker = f
        .queue
        .worker_async(opts, move |lease: Lease| {
            let s = Arc::clone(&s);
            async move {
                tokio::task::yield_now().await;
                s.lock().unwrap().push((lease.seq(), lease.attempts(), Instant::now()));
                if lease.attempts() < 3 {
                    return Err(format!("attempt {} fails", lease.attempts()).into());
                }
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.queue.stats().unwrap().messages > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(worker.stop().await);
    let seen = seen.lock().unwrap();
    let attempts: Vec<(i64, u32)> = seen.iter().map(|&(s, a, _)| (s, a)).collect();
    assert_eq!(attempts, vec![(seq, 1), (seq, 2), (seq, 3)], "seen 3 times with attempts 1, 2, 3");
    assert_eq!(failures.load(Ordering::SeqCst), 2, "both failures reported to on_error");
    // The second retry waited at least base * 2^1 * 0.5 = 10 ms after the second try.
    assert!(seen[2].2 - seen[1].2 >= Duration::from_millis(10), "{:?}", seen[2].2 - seen[1].2);
    assert_eq!(f.queue.stats().unwrap().messages, 0, "acked after the third");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_async_worker_idle_stop() {
    let f = Fixture::new();
    for i in 0..5 {
        f.queue.publish_async(&format!("g{i}"), format!("{i}"), &PublishOptions::default()).await.unwrap();
    }
    let handled = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&handled);
    let start = Instant::now();
    let opts = WorkerOptions::new().concurrency(2).idle_timeout(Duration::from_secs(1));
    let finished = tokio::time::timeout(
        Duration::from_secs(20),
        f.queue.work_async(opts, move |_lease: Lease| {
            let h = Arc::clone(&h);
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        }),
    )
    .await
    .expect("the worker stopped by itself")
    .unwrap();
    assert!(finished, "its handlers had finished");
    assert_eq!(handled.load(Ordering::SeqCst), 5);
    assert!(start.elapsed() >= Duration::from_secs(1), "it waited out the idle second");
    assert_eq!(f.queue.stats().unwrap().messages, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_async_worker_graceful_stop() {
    let f = Fixture::new();
    f.queue.publish_async("g1", b"running".to_vec(), &PublishOptions::default()).await.unwrap();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let finished = Arc::new(AtomicUsize::new(0));
    let handled = Arc::new(AtomicUsize::new(0));
    let (st, fin, h) = (Arc::clone(&started_tx), Arc::clone(&finished), Arc::clone(&handled));
    let worker = f
        .queue
        .worker_async(WorkerOptions::new().concurrency(1), move |_lease: Lease| {
            let (st, fin, h) = (Arc::clone(&st), Arc::clone(&fin), Arc::clone(&h));
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                if let Some(tx) = st.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                tokio::time::sleep(Duration::from_millis(800)).await;
                fin.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    started_rx.await.unwrap();
    f.queue.publish_async("g2", b"not taken".to_vec(), &PublishOptions::default()).await.unwrap();
    let start = Instant::now();
    assert!(worker.stop().await, "the running handler finished within the timeout");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(start.elapsed() >= Duration::from_millis(500), "the stop waited for the handler");
    assert_eq!(finished.load(Ordering::SeqCst), 1, "the running handler finished before the stop returned");
    assert_eq!(handled.load(Ordering::SeqCst), 1, "no claim after the stop");
    assert!(worker.wait().await, "wait after the stop returns its result at once");
    let left = f.queue.claim_async(&opts(30_000)).await.unwrap().expect("g2");
    assert_eq!((left.group(), left.attempts()), ("g2", 1), "g1 was acked, g2 never claimed");
    assert_eq!(f.queue.stats().unwrap().messages, 1);
}
