//! The workload of bench/bench.c through the Rust crate, to measure the binding's
//! overhead against the C bench on the same server:
//!
//!     cargo run --release --example bench -- [--uri URI] [--events N] [--groups G]
//!         [--workers W] [--visibility S] [--batch B] [--wait]
//!
//! Per mode (single: B = 1, publish + claim; batch(10): Batch + claim with max_events
//! 10; `--batch B` runs only that B), on a fresh queue: one thread publishes N events
//! `{"i":<i>}` round-robin over G groups (group g has priority g % 5), then W threads,
//! each with its own Client as separate machines would have, claim and ack until every
//! event is acked (sleeping 2 ms after an empty claim, or with `--wait` waiting in
//! the claim up to 1 s). Prints events/s for both phases and server commands per
//! event, and checks that every event was acked exactly once (exit 1 if not).
//!
//! Built with the `tokio` feature (`--features tokio`), it then compares the async API
//! with the sync one on the same server (skip it with `--no-async`): N publishes one
//! at a time, awaited (`publish_async`) against plain `publish`, and a drain of N
//! events by the async worker (`worker_async`, W tasks) against the thread worker (W
//! threads), each with events/s and the time per call or event; the difference per
//! call is what running the C call on tokio's blocking pool costs.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mongomq::{Batch, ClaimOptions, Client, PublishOptions};

struct Opts {
    uri: String,
    events: usize,
    groups: usize,
    workers: usize,
    visibility: f64,
    batch: Option<usize>,
    wait: bool,
    no_async: bool,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        uri: std::env::var("MONGOMQ_URI").unwrap_or_default(),
        events: 2000,
        groups: 50,
        workers: 4,
        visibility: 30.0,
        batch: None,
        wait: false,
        no_async: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if name == "--wait" {
            o.wait = true;
            continue;
        }
        if name == "--no-async" {
            o.no_async = true;
            continue;
        }
        let value = inline.or_else(|| args.next()).ok_or(format!("{name} needs a value"))?;
        let int = |v: &str| v.parse::<usize>().map_err(|_| format!("{name} must be a positive integer (got {v:?})"));
        match name.as_str() {
            "--uri" => o.uri = value,
            "--events" => o.events = int(&value)?,
            "--groups" => o.groups = int(&value)?,
            "--workers" => o.workers = int(&value)?,
            "--batch" => o.batch = Some(int(&value)?),
            "--visibility" => o.visibility = value.parse().map_err(|_| format!("--visibility: {value:?}"))?,
            _ => return Err(format!("unknown argument: {name}")),
        }
    }
    if o.uri.is_empty() {
        return Err("no URI: pass --uri or set MONGOMQ_URI".into());
    }
    if o.events == 0 || o.groups == 0 || o.workers == 0 || o.batch == Some(0) {
        return Err("--events, --groups, --workers and --batch must be >= 1".into());
    }
    Ok(o)
}

struct ModeResult {
    name: String,
    t_pub: f64,
    t_drain: f64,
    cmd_pub: u64,
    cmd_drain: u64,
    ok: bool,
}

fn run_mode(o: &Opts, db: &str, batch: usize) -> Result<ModeResult, mongomq::Error> {
    let prefix = if batch == 1 { "bench_single".to_string() } else { format!("bench_batch{batch}") };
    let client = Client::connect(&o.uri)?;
    let queue = client.queue(db, &prefix)?;
    let group = |i: usize| format!("bench-{:06}", i % o.groups);

    // Phase 1: publish.
    let mut seq_of = vec![0i64; o.events];
    let c0 = client.command_count();
    let t0 = Instant::now();
    if batch == 1 {
        for (i, seq) in seq_of.iter_mut().enumerate() {
            *seq = queue.publish(
                &group(i),
                format!("{{\"i\":{i}}}"),
                &PublishOptions::new().priority(((i % o.groups) % 5) as i32),
            )?;
        }
    } else {
        for start in (0..o.events).step_by(batch) {
            let end = (start + batch).min(o.events);
            let mut b = Batch::new()?;
            for i in start..end {
                b.add(
                    &group(i),
                    format!("{{\"i\":{i}}}"),
                    &PublishOptions::new().priority(((i % o.groups) % 5) as i32),
                )?;
            }
            let first = queue.publish_batch(&b)?;
            for (k, seq) in seq_of[start..end].iter_mut().enumerate() {
                *seq = first + k as i64;
            }
        }
    }
    let t_pub = t0.elapsed().as_secs_f64();
    let cmd_pub = client.command_count() - c0;

    // Phase 2: drain with W workers, each with its own client.
    let acked: Mutex<Vec<u32>> = Mutex::new(vec![0; o.events]);
    let acked_total = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let failed: Mutex<Option<mongomq::Error>> = Mutex::new(None);
    let cmd_drain = AtomicU64::new(0);
    let mismatches = AtomicU64::new(0);
    let t1 = Instant::now();
    thread::scope(|s| {
        for w in 0..o.workers {
            let (acked, acked_total, done, failed, cmd_drain, mismatches, seq_of) =
                (&acked, &acked_total, &done, &failed, &cmd_drain, &mismatches, &seq_of);
            let (uri, prefix) = (&o.uri, &prefix);
            s.spawn(move || {
                let run = || -> Result<(), mongomq::Error> {
                    let client = Client::connect(uri)?;
                    let queue = client.queue(db, prefix)?;
                    let c0 = client.command_count();
                    let opts = ClaimOptions::new()
                        .visibility(Duration::from_secs_f64(o.visibility))
                        .max_events(batch)
                        .worker_id(format!("bench-worker-{}", w + 1))
                        .wait(if o.wait { Duration::from_secs(1) } else { Duration::ZERO });
                    while !done.load(Ordering::Relaxed) {
                        let lease = queue.claim(&opts)?;
                        let Some(lease) = lease else {
                            if !o.wait {
                                thread::sleep(Duration::from_millis(2));
                            }
                            continue;
                        };
                        let mut idx = Vec::with_capacity(lease.count());
                        for (seq, event) in lease.events() {
                            let text = std::str::from_utf8(event).unwrap_or("");
                            let i: usize = text
                                .strip_prefix("{\"i\":")
                                .and_then(|t| t.strip_suffix('}'))
                                .and_then(|t| t.parse().ok())
                                .unwrap_or(usize::MAX);
                            if i >= seq_of.len() || seq_of[i] != seq {
                                mismatches.fetch_add(1, Ordering::Relaxed);
                            } else {
                                idx.push(i);
                            }
                        }
                        queue.ack(&lease)?;
                        let mut a = acked.lock().unwrap();
                        for i in idx {
                            a[i] += 1;
                            if a[i] == 1 && acked_total.fetch_add(1, Ordering::SeqCst) + 1 == seq_of.len() as u64 {
                                done.store(true, Ordering::SeqCst);
                                queue.interrupt();
                            }
                        }
                    }
                    cmd_drain.fetch_add(client.command_count() - c0, Ordering::Relaxed);
                    Ok(())
                };
                if let Err(e) = run() {
                    if e.kind() != mongomq::ErrorKind::Interrupted {
                        *failed.lock().unwrap() = Some(e);
                        done.store(true, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let t_drain = t1.elapsed().as_secs_f64();
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(e);
    }
    let acked = acked.into_inner().unwrap();
    let ok = acked.iter().all(|&n| n == 1) && mismatches.load(Ordering::Relaxed) == 0;
    queue.drop_queue()?;
    Ok(ModeResult {
        name: if batch == 1 { "single".into() } else { format!("batch({batch})") },
        t_pub,
        t_drain,
        cmd_pub,
        cmd_drain: cmd_drain.load(Ordering::Relaxed),
        ok,
    })
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let db = format!("mongomq_bench_rust_{}_{stamp}", std::process::id());
    let modes = match o.batch {
        Some(b) => vec![b],
        None => vec![1, 10],
    };
    println!(
        "rust bench (mongomq {}, libmongomq {}): events {}  groups {}  workers {}  visibility {} s{}",
        env!("CARGO_PKG_VERSION"),
        mongomq::library_version(),
        o.events,
        o.groups,
        o.workers,
        o.visibility,
        if o.wait { "  --wait" } else { "" }
    );
    println!(
        "{:<10} {:>12} {:>12} {:>12} {:>12}  exactly once",
        "mode", "publish ev/s", "drain ev/s", "cmd/ev pub", "cmd/ev total"
    );
    let mut all_ok = true;
    for b in modes {
        match run_mode(&o, &db, b) {
            Ok(r) => {
                let n = o.events as f64;
                println!(
                    "{:<10} {:>12.1} {:>12.1} {:>12.2} {:>12.2}  {}",
                    r.name,
                    n / r.t_pub,
                    n / r.t_drain,
                    r.cmd_pub as f64 / n,
                    (r.cmd_pub + r.cmd_drain) as f64 / n,
                    if r.ok { "yes" } else { "NO" }
                );
                all_ok &= r.ok;
            }
            Err(e) => {
                eprintln!("bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    #[cfg(feature = "tokio")]
    if !o.no_async {
        match async_vs_sync::run(&o, &db) {
            Ok(ok) => all_ok &= ok,
            Err(e) => {
                eprintln!("bench: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The async API against the sync one (feature `tokio`).
#[cfg(feature = "tokio")]
mod async_vs_sync {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use mongomq::{Batch, BoxError, Client, Lease, PublishOptions, Queue, WorkerOptions};

    use super::Opts;

    /// Publishes N events in batches of 100 (not timed) over G groups.
    fn fill(queue: &Queue, o: &Opts) -> Result<(), mongomq::Error> {
        for start in (0..o.events).step_by(100) {
            let mut b = Batch::new()?;
            for i in start..(start + 100).min(o.events) {
                b.add(&format!("bench-{:06}", i % o.groups), format!("{{\"i\":{i}}}"), &PublishOptions::default())?;
            }
            queue.publish_batch(&b)?;
        }
        Ok(())
    }

    /// Handled counts by seq; true when every one of N was handled exactly once.
    type Seen = Arc<Mutex<HashMap<i64, u32>>>;

    fn exactly_once(seen: &Seen, n: usize) -> bool {
        let seen = seen.lock().unwrap();
        seen.len() == n && seen.values().all(|&c| c == 1)
    }

    async fn until_handled(seen: &Seen, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(600);
        while seen.lock().unwrap().len() < n && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    const ROUNDS: usize = 3;

    /// N publishes one at a time, sync then awaited: the two times in seconds.
    fn publishes(
        runtime: &tokio::runtime::Runtime,
        client: &Client,
        db: &str,
        o: &Opts,
    ) -> Result<(f64, f64), mongomq::Error> {
        let opts = PublishOptions::default();
        let sync_q = client.queue(db, "bench_sync_publish")?;
        let t0 = Instant::now();
        for i in 0..o.events {
            sync_q.publish(&format!("bench-{:06}", i % o.groups), format!("{{\"i\":{i}}}"), &opts)?;
        }
        let t_sync = t0.elapsed().as_secs_f64();
        sync_q.drop_queue()?;
        let async_q = client.queue(db, "bench_async_publish")?;
        let t_async = runtime.block_on(async {
            let t0 = Instant::now();
            for i in 0..o.events {
                async_q.publish_async(&format!("bench-{:06}", i % o.groups), format!("{{\"i\":{i}}}"), &opts).await?;
            }
            Ok::<f64, mongomq::Error>(t0.elapsed().as_secs_f64())
        })?;
        async_q.drop_queue()?;
        Ok((t_sync, t_async))
    }

    fn worker_opts(o: &Opts) -> WorkerOptions {
        WorkerOptions::new().concurrency(o.workers).visibility(Duration::from_secs_f64(o.visibility))
    }

    /// A drain of N events by the thread worker (W threads), timed from its start on a
    /// full queue until its last event was handled and its stop returned; and whether
    /// each was handled exactly once.
    fn sync_drain(
        runtime: &tokio::runtime::Runtime,
        client: &Client,
        db: &str,
        o: &Opts,
    ) -> Result<(f64, bool), mongomq::Error> {
        let q = client.queue(db, "bench_sync_worker")?;
        fill(&q, o)?;
        let seen: Seen = Arc::default();
        let s = Arc::clone(&seen);
        let t0 = Instant::now();
        let worker = q.worker(worker_opts(o), move |lease: &Lease| {
            *s.lock().unwrap().entry(lease.seq()).or_default() += 1;
            Ok::<(), BoxError>(())
        })?;
        runtime.block_on(until_handled(&seen, o.events));
        let stopped = worker.stop();
        let t = t0.elapsed().as_secs_f64();
        let ok = stopped && exactly_once(&seen, o.events) && q.stats()?.messages == 0;
        q.drop_queue()?;
        Ok((t, ok))
    }

    /// The same drain by the async worker (W tasks).
    fn async_drain(
        runtime: &tokio::runtime::Runtime,
        client: &Client,
        db: &str,
        o: &Opts,
    ) -> Result<(f64, bool), mongomq::Error> {
        let q = client.queue(db, "bench_async_worker")?;
        fill(&q, o)?;
        let seen: Seen = Arc::default();
        let s = Arc::clone(&seen);
        let (t, stopped) = runtime.block_on(async {
            let t0 = Instant::now();
            let worker = q
                .worker_async(worker_opts(o), move |lease: Lease| {
                    *s.lock().unwrap().entry(lease.seq()).or_default() += 1;
                    async { Ok::<(), BoxError>(()) }
                })
                .await?;
            until_handled(&seen, o.events).await;
            let stopped = worker.stop().await;
            Ok::<_, mongomq::Error>((t0.elapsed().as_secs_f64(), stopped))
        })?;
        let ok = stopped && exactly_once(&seen, o.events) && q.stats()?.messages == 0;
        q.drop_queue()?;
        Ok((t, ok))
    }

    pub(super) fn run(o: &Opts, db: &str) -> Result<bool, Box<dyn std::error::Error>> {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build()?;
        let client = Client::connect(&o.uri)?;
        let n = o.events;
        // Best of ROUNDS, the sync and async runs alternating (a shared machine's noise
        // is larger than the difference measured).
        let (mut t_sync_pub, mut t_async_pub, mut t_sync_drain, mut t_async_drain) =
            (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
        let mut ok = true;
        for _ in 0..ROUNDS {
            let (sp, ap) = publishes(&runtime, &client, db, o)?;
            let (sd, s_ok) = sync_drain(&runtime, &client, db, o)?;
            let (ad, a_ok) = async_drain(&runtime, &client, db, o)?;
            t_sync_pub = t_sync_pub.min(sp);
            t_async_pub = t_async_pub.min(ap);
            t_sync_drain = t_sync_drain.min(sd);
            t_async_drain = t_async_drain.min(ad);
            ok &= s_ok && a_ok;
        }
        let nf = n as f64;
        println!();
        println!(
            "async (tokio, multi-thread runtime) vs sync: {n} events, {} workers (threads / tasks), best of {ROUNDS}",
            o.workers
        );
        println!(
            "{:<24} {:>11} {:>11} {:>12} {:>12} {:>12}  exactly once",
            "what", "sync ev/s", "async ev/s", "sync us/ev", "async us/ev", "overhead us"
        );
        let row = |what: &str, t_sync: f64, t_async: f64, ok: &str| {
            println!(
                "{:<24} {:>11.1} {:>11.1} {:>12.1} {:>12.1} {:>12.1}  {ok}",
                what,
                nf / t_sync,
                nf / t_async,
                t_sync / nf * 1e6,
                t_async / nf * 1e6,
                (t_async - t_sync) / nf * 1e6
            );
        };
        row("publish, one at a time", t_sync_pub, t_async_pub, "-");
        row("drain by the worker", t_sync_drain, t_async_drain, if ok { "yes" } else { "NO" });
        Ok(ok)
    }
}
