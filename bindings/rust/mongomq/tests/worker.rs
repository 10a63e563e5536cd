//! The worker's lifecycle and options beyond the contract's scenarios: `work` ends by
//! its idle timeout, `worker`'s handle stops and waits (from several threads), a drop
//! stops it, and `handle_signals` stops it on SIGTERM and SIGINT and puts the previous
//! handlers back. In a test binary of its own: the signal tests raise signals in this
//! process.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{claim, Fixture};
use mongomq::{BoxError, PublishOptions, WorkerOptions};

fn publish(f: &Fixture, n: usize) {
    for i in 0..n {
        f.queue.publish(&format!("g{}", i % 3), format!("{i}"), &PublishOptions::default()).unwrap();
    }
}

#[test]
fn idle_timeout_ends_work() {
    let f = Fixture::new();
    publish(&f, 9);
    let handled = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&handled);
    let start = Instant::now();
    let idle = Duration::from_millis(700);
    let finished = f
        .queue
        .work(WorkerOptions::new().concurrency(2).idle_timeout(idle), move |_| {
            h.fetch_add(1, Ordering::SeqCst);
            Ok::<(), BoxError>(())
        })
        .unwrap();
    assert!(finished, "every handler finished");
    assert_eq!(handled.load(Ordering::SeqCst), 9, "work returned after draining the queue");
    assert_eq!(f.queue.stats().unwrap().messages, 0);
    assert!(start.elapsed() >= idle, "it waited the idle timeout");
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
}

#[test]
fn idle_timeout_waits_for_a_running_handler() {
    // A handler running longer than the idle timeout is not idleness: the worker ends
    // after it, with its event acked.
    let f = Fixture::new();
    publish(&f, 1);
    let finished = f
        .queue
        .work(WorkerOptions::new().idle_timeout(Duration::from_millis(200)), |_| {
            thread::sleep(Duration::from_millis(1200));
            Ok::<(), BoxError>(())
        })
        .unwrap();
    assert!(finished);
    assert_eq!(f.queue.stats().unwrap().messages, 0, "the slow handler's event was acked");
}

#[test]
fn idle_timeout_zero_stops_at_the_first_empty_claim() {
    let f = Fixture::new();
    let start = Instant::now();
    assert!(f.queue.work(WorkerOptions::new().idle_timeout(Duration::ZERO), |_| Ok::<(), BoxError>(())).unwrap());
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn worker_stop_and_wait_from_several_threads() {
    let f = Fixture::new();
    publish(&f, 1);
    let started = Arc::new(Barrier::new(2));
    let finished = Arc::new(AtomicBool::new(false));
    let (b, fin) = (Arc::clone(&started), Arc::clone(&finished));
    let worker = f
        .queue
        .worker(WorkerOptions::new().concurrency(2), move |_| {
            b.wait();
            thread::sleep(Duration::from_millis(500));
            fin.store(true, Ordering::SeqCst);
            Ok::<(), BoxError>(())
        })
        .unwrap();
    started.wait();
    thread::scope(|s| {
        let waiters: Vec<_> = (0..3).map(|_| s.spawn(|| worker.wait())).collect();
        thread::sleep(Duration::from_millis(100));
        assert!(worker.stop(), "the running handler finished within the shutdown timeout");
        assert!(finished.load(Ordering::SeqCst), "stop returned after the running handler");
        for w in waiters {
            assert!(w.join().unwrap(), "every wait returns the shutdown's result");
        }
    });
    assert_eq!(f.queue.stats().unwrap().messages, 0, "the running handler's event was acked");
    assert!(worker.stop(), "stop again: the same result at once");
}

#[test]
fn worker_stop_abandons_a_handler_past_the_shutdown_timeout() {
    let f = Fixture::new();
    publish(&f, 1);
    let started = Arc::new(Barrier::new(2));
    let b = Arc::clone(&started);
    let worker = f
        .queue
        .worker(
            WorkerOptions::new().shutdown_timeout(Duration::from_millis(200)).visibility(Duration::from_secs(2)),
            move |_| {
                b.wait();
                thread::sleep(Duration::from_secs(3));
                Ok::<(), BoxError>(())
            },
        )
        .unwrap();
    started.wait();
    let start = Instant::now();
    assert!(!worker.stop(), "the handler was still running");
    assert!(start.elapsed() < Duration::from_secs(2), "stop waited {:?}", start.elapsed());
}

#[test]
fn dropping_a_worker_stops_it() {
    let f = Fixture::new();
    let handled = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&handled);
    let worker = f
        .queue
        .worker(WorkerOptions::new().concurrency(2), move |_| {
            h.fetch_add(1, Ordering::SeqCst);
            Ok::<(), BoxError>(())
        })
        .unwrap();
    thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    drop(worker);
    assert!(start.elapsed() < Duration::from_secs(5), "the waiting claims were cancelled");
    publish(&f, 1);
    thread::sleep(Duration::from_millis(500));
    assert_eq!(handled.load(Ordering::SeqCst), 0, "a dropped worker claims nothing");
    assert_eq!(claim(&f.queue).attempts(), 1);
}

// ---- handle_signals --------------------------------------------------------------

/// Serializes the tests that raise signals.
static SIGNAL_TESTS: Mutex<()> = Mutex::new(());

/// How often the test's own handler of each signal ran.
static SENTINEL_RUNS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

extern "C" fn sentinel(signal: libc::c_int) {
    let i = if signal == libc::SIGINT { 0 } else { 1 };
    SENTINEL_RUNS[i].fetch_add(1, Ordering::SeqCst);
}

/// Installs the test's sentinel handler for `signal` (the "previous handler" the
/// worker must put back), so no raise here can kill the test process.
fn install_sentinel(signal: libc::c_int) {
    // SAFETY: an all-zero sigaction is valid; the handler only bumps an atomic.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = sentinel as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: sa is filled; the old handler is not needed.
    assert_eq!(unsafe { libc::sigaction(signal, &sa, std::ptr::null_mut()) }, 0);
}

fn current_handler(signal: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a query (no new handler) into a zeroed sigaction.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) }, 0);
    old.sa_sigaction
}

fn signal_stops_work_gracefully(signal: libc::c_int) {
    let _serial = SIGNAL_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let index = if signal == libc::SIGINT { 0 } else { 1 };
    for s in [libc::SIGINT, libc::SIGTERM] {
        install_sentinel(s);
    }
    let sentinel_addr = sentinel as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let f = Fixture::new();
    publish(&f, 2); // two groups: one runs when the signal comes, the other is never claimed
    let started = Arc::new(Barrier::new(2));
    let finished = Arc::new(AtomicUsize::new(0));
    let (b, fin) = (Arc::clone(&started), Arc::clone(&finished));
    let queue = f.queue.clone();
    let work = thread::spawn(move || {
        queue.work(WorkerOptions::new().handle_signals(true), move |_| {
            b.wait();
            thread::sleep(Duration::from_millis(600));
            fin.fetch_add(1, Ordering::SeqCst);
            Ok::<(), BoxError>(())
        })
    });
    started.wait();
    assert_ne!(current_handler(signal), sentinel_addr, "the worker's handler is installed");
    let before = SENTINEL_RUNS[index].load(Ordering::SeqCst);
    // SAFETY: raise sends the signal to this process; the worker's handler takes it.
    assert_eq!(unsafe { libc::raise(signal) }, 0);
    let start = Instant::now();
    assert!(work.join().unwrap().unwrap(), "work returned after the running handler finished");
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(finished.load(Ordering::SeqCst), 1, "the running handler finished, no new claim was made");
    assert_eq!(SENTINEL_RUNS[index].load(Ordering::SeqCst), before, "the signal went to the worker");
    assert_eq!(f.queue.stats().unwrap().messages, 1, "one acked, the other left");
    for s in [libc::SIGINT, libc::SIGTERM] {
        assert_eq!(current_handler(s), sentinel_addr, "the previous handler of {s} is back");
    }
    // SAFETY: as above; the sentinel takes it now.
    assert_eq!(unsafe { libc::raise(signal) }, 0);
    assert_eq!(SENTINEL_RUNS[index].load(Ordering::SeqCst), before + 1);
}

#[test]
fn handle_signals_sigterm_stops_work_gracefully() {
    signal_stops_work_gracefully(libc::SIGTERM);
}

#[test]
fn handle_signals_sigint_stops_work_gracefully() {
    signal_stops_work_gracefully(libc::SIGINT);
}

#[test]
fn handle_signals_two_workers_share_the_handlers() {
    // The previous handlers come back with the last worker that handles signals.
    let _serial = SIGNAL_TESTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    install_sentinel(libc::SIGTERM);
    let sentinel_addr = sentinel as extern "C" fn(libc::c_int) as libc::sighandler_t;
    let f = Fixture::new();
    let opts = WorkerOptions::new().handle_signals(true);
    let first = f.queue.worker(opts.clone(), |_| Ok::<(), BoxError>(())).unwrap();
    let second = f.queue.worker(opts, |_| Ok::<(), BoxError>(())).unwrap();
    assert!(first.stop());
    assert_ne!(current_handler(libc::SIGTERM), sentinel_addr, "the second worker still handles SIGTERM");
    // SAFETY: raise sends SIGTERM to this process; the second worker's handler takes it.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    let start = Instant::now();
    assert!(second.wait(), "SIGTERM stopped the second worker");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(current_handler(libc::SIGTERM), sentinel_addr, "the previous handler is back");
}
