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
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
