//! What tracing and attributes cost (issue 22's bench; feature `opentelemetry`):
//!
//!     cargo run --release --features opentelemetry --example bench_telemetry -- \
//!         [--uri URI] [--events N] [--groups G] [--workers W]
//!
//! For each of six modes, attributes none or three (`content-type`, `tenant.id`,
//! `request.id`) times telemetry off (none set: the queue as without the feature), global
//! (`Telemetry::global()` with no SDK installed: the API's no-ops) and sdk (the SDK
//! with a synchronous in-memory span exporter, a metric reader and the W3C
//! propagator: every span and metric really recorded), on a fresh queue: N single
//! publishes round-robin over G groups, N events more in batches of 10, a claim + ack
//! loop by hand (one thread) over the first N, and the thread worker (W threads)
//! draining the other N. Prints, per phase, events/s and the process's CPU time per
//! event (user + system, all threads: less swayed than the rate by other load on the
//! machine, and it counts the server's share not at all when the server is another
//! process), and for sdk the spans recorded (N + N/10 send, N process, N ack). Then
//! the binding's own cost per publish without the server: 20 N publishes the library
//! refuses before sending anything (priority 5), each traced as a real one (the span,
//! the injection, the metrics), in ns of this thread's CPU time per call. Exits 1 if the claim loop finds the
//! queue empty or the worker handles other than N events.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mongomq::otel::Telemetry;
use mongomq::{Batch, BoxError, ClaimOptions, Client, PublishOptions, WorkerOptions};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

struct Opts {
    uri: String,
    events: usize,
    groups: usize,
    workers: usize,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts { uri: std::env::var("MONGOMQ_URI").unwrap_or_default(), events: 2000, groups: 50, workers: 4 };
    let mut args = std::env::args().skip(1);
    while let Some(name) = args.next() {
        let value = args.next().ok_or(format!("{name} needs a value"))?;
        let int = |v: &str| v.parse::<usize>().map_err(|_| format!("{name} must be a positive integer (got {v:?})"));
        match name.as_str() {
            "--uri" => o.uri = value,
            "--events" => o.events = int(&value)?,
            "--groups" => o.groups = int(&value)?,
            "--workers" => o.workers = int(&value)?,
            _ => return Err(format!("unknown argument: {name}")),
        }
    }
    if o.uri.is_empty() {
        return Err("no URI: pass --uri or set MONGOMQ_URI".into());
    }
    if o.events == 0 || o.groups == 0 || o.workers == 0 {
        return Err("--events, --groups and --workers must be >= 1".into());
    }
    Ok(o)
}

#[derive(Clone, Copy, PartialEq)]
enum Tracing {
    Off,
    Global,
    Sdk,
}

impl Tracing {
    fn name(self) -> &'static str {
        match self {
            Tracing::Off => "off",
            Tracing::Global => "global",
            Tracing::Sdk => "sdk",
        }
    }
}

/// The SDK of the sdk mode: kept for the mode's length, its spans counted at the end.
struct Sdk {
    spans: InMemorySpanExporter,
    _tracer_provider: SdkTracerProvider,
    _meter_provider: SdkMeterProvider,
    telemetry: Telemetry,
}

fn sdk() -> Sdk {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let reader = PeriodicReader::builder(InMemoryMetricExporter::default()).with_interval(Duration::from_secs(3600));
    let meter_provider = SdkMeterProvider::builder().with_reader(reader.build()).build();
    let telemetry = Telemetry::builder()
        .tracer_provider(&tracer_provider)
        .meter_provider(&meter_provider)
        .propagator(TraceContextPropagator::new())
        .build();
    Sdk { spans, _tracer_provider: tracer_provider, _meter_provider: meter_provider, telemetry }
}

/// One phase: events/s and CPU µs per event.
#[derive(Clone, Copy)]
struct Phase {
    rate: f64,
    cpu_us: f64,
}

struct Rates {
    publish: Phase,
    batch: Phase,
    claim: Phase,
    worker: Phase,
    spans: Option<usize>,
    refused_ns: f64,
}

/// The process's user + system CPU time so far, all threads.
fn cpu() -> Duration {
    cpu_of(libc::RUSAGE_SELF)
}

/// `who`'s (RUSAGE_SELF, RUSAGE_THREAD) user + system CPU time so far.
fn cpu_of(who: libc::c_int) -> Duration {
    // SAFETY: getrusage fills the struct it is given (zeroed: plain integers).
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Times `f`, which handles `n` events.
fn phase<E>(n: usize, f: impl FnOnce() -> Result<(), E>) -> Result<Phase, E> {
    let (t, c) = (Instant::now(), cpu());
    f()?;
    let (wall, cpu) = (t.elapsed(), cpu() - c);
    Ok(Phase { rate: n as f64 / wall.as_secs_f64(), cpu_us: cpu.as_secs_f64() * 1e6 / n as f64 })
}

fn run(o: &Opts, db: &str, attrs: bool, tracing: Tracing) -> Result<Rates, Box<dyn std::error::Error>> {
    let prefix = format!("bench_attrs{}_{}", if attrs { 3 } else { 0 }, tracing.name());
    let queue = Client::connect(&o.uri)?.queue(db, &prefix)?;
    let sdk = (tracing == Tracing::Sdk).then(sdk);
    match (tracing, &sdk) {
        (Tracing::Global, _) => queue.set_telemetry(Some(Telemetry::global())),
        (Tracing::Sdk, Some(s)) => queue.set_telemetry(Some(s.telemetry.clone())),
        _ => {}
    }
    let opts = |i: usize| {
        let opts = PublishOptions::new();
        if !attrs {
            return opts;
        }
        opts.attr("content-type", "application/json")
            .attr("tenant.id", format!("t-{}", i % 7))
            .attr("request.id", i.to_string())
    };
    let group = |i: usize| format!("bench-{:06}", i % o.groups);
    let n = o.events;

    let publish = phase(n, || -> Result<(), mongomq::Error> {
        for i in 0..n {
            queue.publish(&group(i), format!("{{\"i\":{i}}}"), &opts(i))?;
        }
        Ok(())
    })?;

    let batch = phase(n, || -> Result<(), mongomq::Error> {
        for start in (n..2 * n).step_by(10) {
            let mut batch = Batch::new()?;
            for i in start..(start + 10).min(2 * n) {
                batch.add(&group(i), format!("{{\"i\":{i}}}"), &opts(i))?;
            }
            queue.publish_batch(&batch)?;
        }
        Ok(())
    })?;

    // Claims take the groups round-robin, so the first N claimed are not the first N
    // published: what counts is N claims and acks, then N handled by the worker.
    let claim_opts = ClaimOptions::new().wait(Duration::from_secs(1));
    let claim = phase(n, || -> Result<(), Box<dyn std::error::Error>> {
        for _ in 0..n {
            let lease = queue.claim(&claim_opts)?.ok_or("the claim loop found the queue empty")?;
            queue.ack(&lease)?;
        }
        Ok(())
    })?;

    let handled = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&handled);
    let worker = phase(n, || -> Result<(), mongomq::Error> {
        let worker = queue.worker(WorkerOptions::new().concurrency(o.workers), move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
            Ok::<(), BoxError>(())
        })?;
        while queue.stats()?.messages > 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        worker.stop();
        Ok(())
    })?;
    let seen = handled.load(Ordering::Relaxed);
    if seen != n as u64 {
        return Err(format!("the worker handled {seen} events, not {n}").into());
    }

    let spans = sdk.as_ref().map(|s| s.spans.get_finished_spans().map_or(0, |v| v.len()));
    let refused = 20 * n;
    let bad = opts(0).priority(5);
    let c = cpu_of(libc::RUSAGE_THREAD);
    for _ in 0..refused {
        if queue.publish("g", "x", &bad).is_ok() {
            return Err("a publish with priority 5 was accepted".into());
        }
    }
    let refused_ns = (cpu_of(libc::RUSAGE_THREAD) - c).as_secs_f64() * 1e9 / refused as f64;
    queue.drop_queue()?;
    Ok(Rates { publish, batch, claim, worker, spans, refused_ns })
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("bench_telemetry: {e}");
            return ExitCode::from(2);
        }
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let db = format!("mongomq_bench_rust_otel_{}_{stamp}", std::process::id());
    println!(
        "rust telemetry bench (mongomq {}): events {}  groups {}  workers {}",
        env!("CARGO_PKG_VERSION"),
        o.events,
        o.groups,
        o.workers
    );
    println!("ev/s (CPU µs/ev); refused: the binding's own CPU ns per publish, no server");
    println!(
        "{:<6} {:<8} {:>16} {:>16} {:>16} {:>16} {:>7} {:>8}",
        "attrs", "tracing", "publish", "batch(10)", "claim+ack", "worker", "spans", "refused"
    );
    let cell = |p: Phase| format!("{:.0} ({:.0})", p.rate, p.cpu_us);
    for attrs in [false, true] {
        for tracing in [Tracing::Off, Tracing::Global, Tracing::Sdk] {
            match run(&o, &db, attrs, tracing) {
                Ok(r) => println!(
                    "{:<6} {:<8} {:>16} {:>16} {:>16} {:>16} {:>7} {:>8.0}",
                    if attrs { 3 } else { 0 },
                    tracing.name(),
                    cell(r.publish),
                    cell(r.batch),
                    cell(r.claim),
                    cell(r.worker),
                    r.spans.map_or("-".to_string(), |s| s.to_string()),
                    r.refused_ns
                ),
                Err(e) => {
                    eprintln!("bench_telemetry: attrs {attrs}, tracing {}: {e}", tracing.name());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
