//! The async API (feature `tokio`): futures that wait without blocking the runtime, and
//! a dropped claim future that cancels its claim only.
#![cfg(feature = "tokio")]

mod common;

use std::time::{Duration, Instant};

use common::{opts, Fixture};
use mongomq::{ErrorKind, PublishOptions, Published};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_async_woken_by_publish() {
    let f = Fixture::new();
    let q = f.queue.clone();
    let waiter = tokio::spawn(async move { q.claim_async(&opts(30_000).wait(Duration::from_secs(10))).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seq = f.queue.publish_async("g", "wake", &PublishOptions::default()).await.unwrap();
    let lease = waiter.await.unwrap().unwrap().expect("woken by the publish");
    assert_eq!((lease.seq(), lease.event()), (seq, &b"wake"[..]));
    f.queue.extend_async(&lease, Duration::from_secs(60)).await.unwrap();
    f.queue.ack_async(&lease).await.unwrap();
    assert_eq!(f.queue.ack_async(&lease).await.unwrap_err().kind(), ErrorKind::LeaseLost);
}

#[tokio::test(flavor = "current_thread")]
async fn async_calls_do_not_block_the_runtime() {
    // One runtime thread: a waiting claim must leave it free for the publish.
    let f = Fixture::new();
    let q = f.queue.clone();
    let waiter = tokio::spawn(async move { q.claim_async(&opts(30_000).wait(Duration::from_secs(10))).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut batch = mongomq::Batch::new().unwrap();
    batch.add("g", "1", &PublishOptions::default()).unwrap();
    let (first, _batch) = f.queue.publish_batch_async(batch).await.unwrap();
    let lease = waiter.await.unwrap().unwrap().unwrap();
    assert_eq!(lease.seq(), first);
    f.queue.nack_async(&lease, Duration::ZERO).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_claim_future_cancels_that_claim_only() {
    let f = Fixture::new();
    let q = f.queue.clone();
    let other = tokio::spawn(async move { q.claim_async(&opts(30_000).wait(Duration::from_secs(20))).await });
    let started = Instant::now();
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        f.queue.claim_async(&opts(30_000).wait(Duration::from_secs(20))),
    )
    .await;
    assert!(dropped.is_err(), "the claim timed out and its future was dropped");
    // The cancelled claim let go at once: the next event goes to the other waiter.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seq = f.queue.publish_async("g", "for the other", &PublishOptions::default()).await.unwrap();
    let lease = other.await.unwrap().unwrap().expect("the other waiter still gets the event");
    assert_eq!(lease.seq(), seq);
    assert!(started.elapsed() < Duration::from_secs(10));
    f.queue.ack_async(&lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_claim_future_never_strands_a_lease() {
    // Drop claim futures at every moment (before the claim, during it, after it took
    // the lease): the event is never left held for the claim's 60 s visibility, and a
    // lease a dropped future took goes back with unclaim, so no delivery is counted.
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let long = opts(60_000).wait(Duration::from_secs(5));
    for i in 0..20u64 {
        let fut = f.queue.claim_async(&long);
        if let Ok(finished) = tokio::time::timeout(Duration::from_micros(i * 150), fut).await {
            // Not dropped: the claim finished in time and its lease is ours to give back.
            let lease = finished.unwrap().expect("the event was due");
            f.queue.unclaim_async(&lease).await.unwrap();
        }
        let lease = f.queue.claim_async(&long).await.unwrap();
        let Some(lease) = lease else {
            panic!("iteration {i}: the event is stranded by a dropped future: {:?}", f.queue.peek(None, 5).unwrap());
        };
        assert_eq!((lease.seq(), lease.attempts()), (seq, 1), "iteration {i}: no give-back counted a delivery");
        f.queue.unclaim_async(&lease).await.unwrap();
    }
}

#[tokio::test(flavor = "current_thread")]
async fn publish_with_async_says_duplicate() {
    let f = Fixture::new();
    let once = PublishOptions::new().dedup_key("k");
    let first = f.queue.publish_with_async("g", "x", &once).await.unwrap();
    assert_eq!(
        f.queue.publish_with_async("h", "y", &once).await.unwrap(),
        Published { seq: first.seq, duplicate: true }
    );
    assert_eq!(f.queue.publish_async("h", "y", &once).await.unwrap(), first.seq, "publish_async keeps its seq");
    let err = f.queue.publish_with_async("g", "x", &PublishOptions::new().dedup_key("a\0b")).await.unwrap_err();
    assert!(err.kind() == ErrorKind::InvalidArgument && err.message().contains("dedup_key"), "{err}");
    let mut batch = mongomq::Batch::new().unwrap();
    batch.add("g", "again", &once).unwrap();
    batch.add("g", "new", &PublishOptions::default()).unwrap();
    let (outcomes, batch) = f.queue.publish_batch_with_async(batch).await.unwrap();
    assert_eq!(outcomes[0], Published { seq: first.seq, duplicate: true });
    assert!(!outcomes[1].duplicate, "{outcomes:?}");
    assert_eq!(batch.len(), 2, "the batch comes back");
    assert_eq!(f.queue.stats().unwrap().messages, 2);
}
