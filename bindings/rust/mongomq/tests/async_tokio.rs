//! The async API (feature `tokio`) beyond the contract's scenarios (those are in
//! async_contract.rs): futures that wait without blocking the runtime, a dropped claim
//! future or stream that cancels its claim only and never strands a lease, the stream's
//! end at an interrupt, and the async worker's unclaim at a stop, heartbeat, panics
//! and dead letters.
#![cfg(feature = "tokio")]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{opts, Fixture};
use mongomq::{BoxError, ErrorKind, Lease, PublishOptions, Published, WorkerError, WorkerOptions};

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

// ---- the stream of leases ----------------------------------------------------------

#[tokio::test(flavor = "current_thread")]
async fn async_publishes_carry_attributes() {
    let f = Fixture::new();
    let attrs = PublishOptions::new().attr("content-type", "text/plain").attr("tenant.id", "t-42");
    let seq = f.queue.publish_async("g", "one", &attrs).await.unwrap();
    let second = f.queue.publish_with_async("g", "two", &PublishOptions::new().attr("n", "2")).await.unwrap();
    let mut batch = mongomq::Batch::new().unwrap();
    batch.add("g", "three", &PublishOptions::new().attr("n", "3")).unwrap();
    let (third, _batch) = f.queue.publish_batch_async(batch).await.unwrap();
    let lease = f.queue.claim_async(&opts(30_000).max_events(3)).await.unwrap().expect("a lease");
    assert_eq!((lease.seq(), lease.seq_at(1), lease.seq_at(2)), (seq, Some(second.seq), Some(third)));
    assert_eq!(lease.attrs(), [("content-type", "text/plain"), ("tenant.id", "t-42")]);
    assert_eq!(lease.attrs_at(1), Some(vec![("n", "2")]));
    assert_eq!(lease.attrs_at(2), Some(vec![("n", "3")]));
    // Refused as the blocking publish is, and nothing is sent.
    let twice = PublishOptions::new().attr("k", "1").attr("k", "2");
    let err = f.queue.publish_async("g", "x", &twice).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("appears twice"), "{err}");
    f.queue.ack_async(&lease).await.unwrap();
    assert_eq!(f.queue.stats().unwrap().messages, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_yields_leases_in_order() {
    let f = Fixture::new();
    let mut seqs = Vec::new();
    for i in 0..3 {
        seqs.push(f.queue.publish_async("g", format!("{i}"), &PublishOptions::default()).await.unwrap());
    }
    let mut leases = f.queue.claim_stream(&opts(30_000).wait(Duration::from_millis(200)));
    let mut got = Vec::new();
    while got.len() < 3 {
        // Empty claims (the 200 ms wait ran out) are not items: next waits on.
        let lease = tokio::time::timeout(Duration::from_secs(10), leases.next()).await.unwrap().unwrap().unwrap();
        got.push(lease.seq());
        f.queue.ack_async(&lease).await.unwrap();
    }
    assert_eq!(got, seqs);
    let late = f.queue.publish_async("g", b"late".to_vec(), &PublishOptions::default()).await.unwrap();
    let lease = leases.next().await.unwrap().unwrap();
    assert_eq!(lease.seq(), late, "the stream goes on after empty claims");
    f.queue.ack_async(&lease).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_stream_leaves_no_claim_running() {
    let f = Fixture::new();
    let mut leases = f.queue.claim_stream(&opts(30_000).wait(Duration::from_secs(30)));
    let start = Instant::now();
    assert!(tokio::time::timeout(Duration::from_millis(300), leases.next()).await.is_err(), "nothing to claim");
    drop(leases);
    assert!(start.elapsed() < Duration::from_secs(2));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seq = f.queue.publish_async("g", b"after".to_vec(), &PublishOptions::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(f.queue.stats().unwrap().groups.leased, 0, "the dropped stream's claim took nothing");
    let lease = f.queue.claim_async(&opts(30_000)).await.unwrap().expect("the event");
    assert_eq!((lease.seq(), lease.attempts()), (seq, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_stream_never_strands_a_lease() {
    // As dropped_claim_future_never_strands_a_lease, through a stream dropped at every
    // moment of its claim.
    let f = Fixture::new();
    let seq = f.queue.publish("g", "x", &PublishOptions::default()).unwrap();
    let long = opts(60_000).wait(Duration::from_secs(5));
    for i in 0..20u64 {
        let mut leases = f.queue.claim_stream(&long);
        if let Ok(item) = tokio::time::timeout(Duration::from_micros(i * 150), leases.next()).await {
            let lease = item.unwrap().unwrap();
            f.queue.unclaim_async(&lease).await.unwrap();
        }
        drop(leases);
        let Some(lease) = f.queue.claim_async(&long).await.unwrap() else {
            panic!("iteration {i}: the event is stranded by a dropped stream");
        };
        assert_eq!((lease.seq(), lease.attempts()), (seq, 1), "iteration {i}: no give-back counted a delivery");
        f.queue.unclaim_async(&lease).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_ends_at_an_interrupt() {
    let f = Fixture::new();
    let q = f.other_handle();
    let mut leases = q.claim_stream(&opts(30_000).wait(Duration::from_secs(30)));
    let waiting = tokio::spawn(async move {
        let item = leases.next().await;
        (item, leases.next().await.is_none(), futures_core::stream::FusedStream::is_terminated(&leases))
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    q.interrupt();
    let (item, ended, terminated) = tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap();
    assert_eq!(item.unwrap().unwrap_err().kind(), ErrorKind::Interrupted, "the interrupt is the last item");
    assert!(ended && terminated, "then the stream ends");
}

// ---- the async worker beyond the contract --------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_worker_stop_after_claim_unclaims() {
    // As test_worker_stop_after_claim: a lease the worker got but whose handler it did
    // not start is given back with unclaim, so attempts = handler calls + 1.
    let f = Fixture::new();
    for cycle in 0..30u64 {
        let seq = f.queue.publish_async("g", format!("cycle {cycle}"), &PublishOptions::default()).await.unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let c = Arc::clone(&calls);
        let opts = WorkerOptions::new().concurrency(2).backoff_base(Duration::from_millis(1)).on_error(|_| {});
        let worker = f
            .queue
            .worker_async(opts, move |_lease: Lease| {
                let c = Arc::clone(&c);
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    Err::<(), BoxError>("always fails".into())
                }
            })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_micros((cycle % 10) * 300)).await;
        assert!(worker.stop().await);
        let lease = f.queue.claim_async(&opts_wait()).await.unwrap().expect("the event");
        let calls = calls.load(Ordering::SeqCst);
        assert_eq!(lease.seq(), seq);
        assert_eq!(lease.attempts() as usize, calls + 1, "cycle {cycle}: {calls} handler calls");
        f.queue.ack_async(&lease).await.unwrap();
    }
}

fn opts_wait() -> mongomq::ClaimOptions {
    opts(30_000).wait(Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_worker_extends_lease() {
    let f = Fixture::new();
    f.queue.publish_async("g", b"slow".to_vec(), &PublishOptions::default()).await.unwrap();
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let e = Arc::clone(&errors);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Mutex::new(Some(started_tx));
    let wopts = WorkerOptions::new().visibility(Duration::from_millis(300)).on_error(move |err| {
        e.lock().unwrap().push(err.to_string());
    });
    let worker = f
        .queue
        .worker_async(wopts, move |_lease: Lease| {
            if let Some(tx) = started_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            async move {
                tokio::time::sleep(Duration::from_millis(1000)).await; // 3x the visibility
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    started_rx.await.unwrap();
    let other = f.other_handle();
    let end = Instant::now() + Duration::from_millis(900);
    while Instant::now() < end {
        let taken = other.claim_async(&opts(30_000)).await.unwrap();
        assert!(taken.is_none(), "the heartbeat kept the lease: nobody else got the group");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(worker.stop().await);
    assert!(errors.lock().unwrap().is_empty(), "extends and the ack were OK: {:?}", errors.lock().unwrap());
    assert_eq!(f.queue.stats().unwrap().messages, 0, "acked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_worker_panics_nack_and_dead_letters() {
    let f = Fixture::new();
    f.queue.publish_async("g", b"poison".to_vec(), &PublishOptions::default()).await.unwrap();
    let reports = Arc::new(Mutex::new(Vec::<String>::new()));
    let r = Arc::clone(&reports);
    let opts = WorkerOptions::new().max_attempts(2).backoff_base(Duration::from_millis(1)).on_error(move |e| {
        if let WorkerError::Handler { error, .. } = e {
            r.lock().unwrap().push(error.to_string());
        }
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let worker = f
        .queue
        .worker_async(opts, move |lease: Lease| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    panic!("boom on {}", lease.seq()); // in the handler's future
                }
                Err::<(), BoxError>("fails".into())
            }
        })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.queue.dead_count().unwrap() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(worker.stop().await);
    assert_eq!(f.queue.dead_count().unwrap(), 1, "after 2 attempts the event is dead");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let reports = reports.lock().unwrap();
    assert!(reports[0].contains("handler panicked: boom on 1"), "{reports:?}");
    assert_eq!(reports[1], "fails");
}

#[tokio::test(flavor = "current_thread")]
async fn async_worker_on_one_runtime_thread() {
    // A current-thread runtime: the claims wait on the blocking pool, so the handler,
    // the publish and the stop all run on the one thread.
    let f = Fixture::new();
    let handled = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&handled);
    let worker = f
        .queue
        .worker_async(WorkerOptions::new().concurrency(3), move |_lease: Lease| {
            let h = Arc::clone(&h);
            async move {
                tokio::task::yield_now().await;
                h.fetch_add(1, Ordering::SeqCst);
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    for i in 0..6 {
        f.queue.publish_async(&format!("g{i}"), b"x".to_vec(), &PublishOptions::default()).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while handled.load(Ordering::SeqCst) < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start = Instant::now();
    assert!(worker.stop().await);
    assert!(start.elapsed() < Duration::from_secs(2), "waiting claims were cancelled, not waited out");
    assert_eq!(handled.load(Ordering::SeqCst), 6);
}
