//! The tracing scenarios of bindings/CONTRACT.md ("Tracing (issue 22)"), each as
//! `test_<scenario>` (feature opentelemetry; scripts/test-rust.sh checks with
//! scripts/contract-scenarios.py that each passed under its name), with the SDK's
//! in-memory span exporter (simple processor), an in-memory metric exporter read by
//! a flush, and the W3C trace-context propagator; then the async surface's spans
//! (feature tokio). No test here sets a global provider or propagator: the scenario
//! without an SDK needs the API's no-op globals.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, Fixture};
use mongomq::otel::Telemetry;
use mongomq::{Batch, BoxError, PublishOptions, WorkerOptions};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// How long a worker may take to handle what the test published.
const HANDLED: Duration = Duration::from_secs(20);

/// An SDK of the test's own, and a telemetry made from it.
struct Otel {
    spans: InMemorySpanExporter,
    tracer_provider: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
    telemetry: Telemetry,
}

impl Otel {
    fn new() -> Otel {
        let spans = InMemorySpanExporter::default();
        let tracer_provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let metrics = InMemoryMetricExporter::default();
        let meter_provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
        let telemetry = Telemetry::builder()
            .tracer_provider(&tracer_provider)
            .meter_provider(&meter_provider)
            .propagator(TraceContextPropagator::new())
            .build();
        Otel { spans, tracer_provider, metrics, meter_provider, telemetry }
    }

    fn finished(&self) -> Vec<SpanData> {
        self.spans.get_finished_spans().unwrap()
    }

    /// The finished spans named `name`, in the order they ended.
    fn named(&self, name: &str) -> Vec<SpanData> {
        self.finished().into_iter().filter(|s| s.name == name).collect()
    }

    /// Waits until `n` spans named `name` have ended.
    fn wait_for(&self, name: &str, n: usize) -> Vec<SpanData> {
        assert!(eventually(HANDLED, || self.named(name).len() >= n), "{n} spans {name}: {:#?}", self.finished());
        self.named(name)
    }

    /// The metrics as they are now (cumulative).
    fn metrics(&self) -> ResourceMetrics {
        self.meter_provider.force_flush().unwrap();
        self.metrics.get_finished_metrics().unwrap().pop().expect("an export")
    }
}

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.clone())
}

fn text(v: &str) -> Option<Value> {
    Some(Value::from(v.to_string()))
}

fn traceparent(sc: &SpanContext) -> String {
    format!("00-{}-{}-01", sc.trace_id(), sc.span_id())
}

/// The attributes every span of the queue has, and its operation's.
fn assert_operation(span: &SpanData, dest: &str, op_type: &str, op_name: &str) {
    assert_eq!(attr(span, "messaging.system"), text("mongomq"), "{span:#?}");
    assert_eq!(attr(span, "messaging.destination.name"), text(dest), "{span:#?}");
    assert_eq!(attr(span, "messaging.operation.type"), text(op_type), "{span:#?}");
    assert_eq!(attr(span, "messaging.operation.name"), text(op_name), "{span:#?}");
    assert_eq!(span.instrumentation_scope.name(), "mongomq");
    assert_eq!(span.instrumentation_scope.version(), Some(env!("CARGO_PKG_VERSION")));
}

fn dest(f: &Fixture) -> String {
    format!("{}.{}", f.db, f.prefix)
}

/// A handler error of a type of the test's own (its name is `error.type`).
#[derive(Debug)]
struct Boom;

impl std::fmt::Display for Boom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("boom")
    }
}

impl std::error::Error for Boom {}

#[test]
fn test_trace_publish_process() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);

    let tracer = o.tracer_provider.tracer("test");
    let parent = Context::current_with_span(tracer.start("P"));
    let p = parent.span().span_context().clone();
    let seq = {
        let _p = parent.clone().attach();
        f.queue.publish("g", "e", &PublishOptions::new().attr("tenant", "t-1")).unwrap()
    };
    parent.span().end();

    let sends = o.named(&format!("send {dest}"));
    assert_eq!(sends.len(), 1, "one send span: {sends:#?}");
    let send = &sends[0];
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(send.span_context.trace_id(), p.trace_id(), "in P's trace");
    assert_eq!(send.parent_span_id, p.span_id(), "P's child");
    assert_operation(send, &dest, "send", "publish");
    assert_eq!(attr(send, "messaging.message.id"), text(&seq.to_string()));
    assert_eq!(attr(send, "messaging.mongomq.message.group"), text("g"));
    assert_eq!(attr(send, "messaging.batch.message_count"), None);

    let peeked = f.queue.peek(None, 10).unwrap();
    assert_eq!(
        peeked[0].attrs,
        [("tenant".to_string(), "t-1".to_string()), ("traceparent".to_string(), traceparent(&send.span_context))],
        "the user's attribute, then the send span's context"
    );

    let seen: Arc<Mutex<Vec<SpanContext>>> = Arc::default();
    let theirs = Arc::clone(&seen);
    let worker = f
        .queue
        .worker(WorkerOptions::new().concurrency(1), move |_lease| {
            theirs.lock().unwrap().push(Context::current().span().span_context().clone());
            Ok::<(), BoxError>(())
        })
        .unwrap();
    let processes = o.wait_for(&format!("process {dest}"), 1);
    assert!(worker.stop());
    assert_eq!(processes.len(), 1);
    let process = &processes[0];
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_ne!(process.span_context.trace_id(), p.trace_id(), "a trace of its own");
    assert_eq!(process.parent_span_id, SpanId::INVALID, "the worker's own context: a new trace");
    let links = &process.links.links;
    assert_eq!(links.len(), 1, "one link: {links:#?}");
    assert_eq!(links[0].span_context.trace_id(), send.span_context.trace_id());
    assert_eq!(links[0].span_context.span_id(), send.span_context.span_id());
    assert_operation(process, &dest, "process", "process");
    assert_eq!(attr(process, "messaging.message.id"), text(&seq.to_string()));
    assert_eq!(attr(process, "messaging.mongomq.message.group"), text("g"));
    assert_eq!(attr(process, "messaging.mongomq.message.attempts"), Some(Value::I64(1)));
    assert_eq!(process.status, Status::Unset);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].trace_id(), seen[0].span_id()),
        (process.span_context.trace_id(), process.span_context.span_id()),
        "the handler ran with the process span current"
    );

    let acks = o.named(&format!("ack {dest}"));
    assert_eq!(acks.len(), 1, "one ack span: {:#?}", o.finished());
    let ack = &acks[0];
    assert_eq!(ack.span_kind, SpanKind::Client);
    assert_eq!(ack.span_context.trace_id(), process.span_context.trace_id());
    assert_eq!(ack.parent_span_id, process.span_context.span_id(), "the process span's child");
    assert_operation(ack, &dest, "settle", "ack");
    assert_eq!(f.queue.stats().unwrap().messages, 0, "acked");
}

#[test]
fn test_trace_handler_error() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);
    f.queue.publish("g", "e", &PublishOptions::default()).unwrap();
    let opts = WorkerOptions::new().concurrency(1).backoff_base(Duration::from_millis(10)).on_error(|_| {});
    let worker = f.queue.worker(opts, |lease| if lease.attempts() == 1 { Err(Boom) } else { Ok(()) }).unwrap();
    let processes = o.wait_for(&format!("process {dest}"), 2);
    let acks = o.wait_for(&format!("ack {dest}"), 1);
    assert!(worker.stop());
    let send = &o.named(&format!("send {dest}"))[0];
    assert_eq!(processes.len(), 2);
    for process in &processes {
        let links = &process.links.links;
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].span_context.span_id(), send.span_context.span_id(), "both link to the send span");
    }
    let (first, second) = (&processes[0], &processes[1]);
    assert_eq!(attr(first, "messaging.mongomq.message.attempts"), Some(Value::I64(1)));
    assert!(matches!(&first.status, Status::Error { description } if description == "boom"), "{:?}", first.status);
    let exception = first.events.events.iter().find(|e| e.name == "exception").expect("an exception event");
    let message = exception.attributes.iter().find(|kv| kv.key.as_str() == "exception.message");
    assert_eq!(message.map(|kv| kv.value.clone()), text("boom"));
    let error_type = attr(first, "error.type").expect("error.type").to_string();
    assert!(error_type.ends_with("Boom"), "the handler's error type: {error_type}");

    let nacks = o.named(&format!("nack {dest}"));
    assert_eq!(nacks.len(), 1);
    assert_eq!(nacks[0].parent_span_id, first.span_context.span_id(), "the nack follows the failed run");
    assert_operation(&nacks[0], &dest, "settle", "nack");

    assert_eq!(attr(second, "messaging.mongomq.message.attempts"), Some(Value::I64(2)));
    assert_eq!(second.status, Status::Unset);
    assert_eq!(attr(second, "error.type"), None);
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].parent_span_id, second.span_context.span_id(), "the ack follows the second run");
}

#[test]
fn test_trace_batch_publish() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);
    let mut batch = Batch::new().unwrap();
    batch.add("g1", "a", &PublishOptions::new().attr("n", "1")).unwrap();
    batch.add("g2", "b", &PublishOptions::default()).unwrap();
    batch.add("g1", "c", &PublishOptions::default()).unwrap();
    f.queue.publish_batch(&batch).unwrap();

    let sends = o.named(&format!("send {dest}"));
    assert_eq!(sends.len(), 1, "one send span for the batch");
    let send = &sends[0];
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_operation(send, &dest, "send", "publish");
    assert_eq!(attr(send, "messaging.batch.message_count"), Some(Value::I64(3)));
    assert_eq!(attr(send, "messaging.message.id"), None);
    let expected = traceparent(&send.span_context);
    let peeked = f.queue.peek(None, 10).unwrap();
    assert_eq!(peeked.len(), 3);
    for event in &peeked {
        let tp: Vec<&str> = event.attrs.iter().filter(|(k, _)| k == "traceparent").map(|(_, v)| v.as_str()).collect();
        assert_eq!(tp, [expected.as_str()], "each event names the send span: {event:?}");
    }
    assert_eq!(peeked.iter().find(|e| e.event.as_deref() == Some(b"a")).unwrap().attrs[0], ("n".into(), "1".into()));

    let worker = f.queue.worker(WorkerOptions::new().concurrency(1).max_events(3), |_| Ok::<(), BoxError>(())).unwrap();
    let processes = o.wait_for(&format!("process {dest}"), 2);
    assert!(worker.stop());
    let two: Vec<&SpanData> =
        processes.iter().filter(|s| attr(s, "messaging.mongomq.message.group") == text("g1")).collect();
    assert_eq!(two.len(), 1, "group 1's two events as one lease: {processes:#?}");
    let two = two[0];
    assert_eq!(attr(two, "messaging.batch.message_count"), Some(Value::I64(2)));
    assert_eq!(attr(two, "messaging.message.id"), None);
    let links = &two.links.links;
    assert_eq!(links.len(), 2, "one link per event");
    assert!(links.iter().all(|l| l.span_context.span_id() == send.span_context.span_id()));
}

#[test]
fn test_trace_attrs_kept() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let sixteen: Vec<(String, String)> = (0..16).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
    f.queue.publish("full", "x", &PublishOptions::new().attrs(sixteen.clone())).unwrap();
    assert_eq!(f.queue.peek(Some("full"), 1).unwrap()[0].attrs, sixteen, "exactly its own 16");

    let mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    f.queue.publish("own", "y", &PublishOptions::new().attr("traceparent", mine)).unwrap();
    assert_eq!(
        f.queue.peek(Some("own"), 1).unwrap()[0].attrs,
        [("traceparent".to_string(), mine.to_string())],
        "the user's traceparent, as given"
    );
    assert_eq!(o.named(&format!("send {}", dest(&f))).len(), 2, "both publishes were traced");
}

/// The sum of a u64 counter's points, and whether each point names `dest` and the
/// operation `op`.
fn counter(rm: &ResourceMetrics, name: &str, dest: &str, op: &str) -> (u64, bool) {
    let metric = rm.scope_metrics().flat_map(|s| s.metrics()).find(|m| m.name() == name).expect(name);
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() else { panic!("{name}: {:?}", metric.data()) };
    let total = sum.data_points().map(|p| p.value()).sum();
    let named = sum.data_points().all(|p| {
        let attrs: Vec<(String, String)> =
            p.attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect();
        has(&attrs, "messaging.destination.name", dest) && has(&attrs, "messaging.operation.name", op)
    });
    (total, named)
}

/// A histogram's points as (attributes as text pairs, count).
fn histogram(rm: &ResourceMetrics, name: &str) -> Vec<(Vec<(String, String)>, u64)> {
    let metric = rm.scope_metrics().flat_map(|s| s.metrics()).find(|m| m.name() == name).expect(name);
    let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else { panic!("{name}: {:?}", metric.data()) };
    h.data_points()
        .map(|p| (p.attributes().map(|kv| (kv.key.to_string(), kv.value.to_string())).collect(), p.count()))
        .collect()
}

fn has(attrs: &[(String, String)], key: &str, value: &str) -> bool {
    attrs.iter().any(|(k, v)| k == key && v == value)
}

#[test]
fn test_trace_metrics() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);
    for i in 0..3 {
        f.queue.publish(&format!("g{i}"), "x", &PublishOptions::default()).unwrap();
    }
    let failed = Arc::new(Mutex::new(false));
    let opts = WorkerOptions::new().concurrency(1).backoff_base(Duration::from_millis(10)).on_error(|_| {});
    let worker = f
        .queue
        .worker(opts, move |_| {
            let mut failed = failed.lock().unwrap();
            if *failed {
                Ok(())
            } else {
                *failed = true;
                Err(Boom)
            }
        })
        .unwrap();
    o.wait_for(&format!("ack {dest}"), 3);
    assert!(worker.stop());
    assert_eq!(o.named(&format!("nack {dest}")).len(), 1);

    let rm = o.metrics();
    assert_eq!(counter(&rm, "messaging.client.sent.messages", &dest, "publish"), (3, true));
    assert_eq!(counter(&rm, "messaging.client.consumed.messages", &dest, "claim"), (4, true));
    let ops = histogram(&rm, "messaging.client.operation.duration");
    for (op, n) in [("publish", 3), ("ack", 3), ("nack", 1)] {
        let count: u64 = ops.iter().filter(|(a, _)| has(a, "messaging.operation.name", op)).map(|(_, c)| c).sum();
        assert_eq!(count, n, "{op} points: {ops:?}");
    }
    assert!(ops
        .iter()
        .all(|(a, _)| has(a, "messaging.system", "mongomq") && has(a, "messaging.destination.name", &dest)));
    let runs = histogram(&rm, "messaging.process.duration");
    assert_eq!(runs.iter().map(|(_, c)| c).sum::<u64>(), 4, "{runs:?}");
    assert!(runs.iter().all(|(a, _)| has(a, "messaging.operation.name", "process")), "{runs:?}");
    let errors: u64 = runs.iter().filter(|(a, _)| a.iter().any(|(k, _)| k == "error.type")).map(|(_, c)| c).sum();
    assert_eq!(errors, 1, "{runs:?}");
}

#[test]
fn test_trace_off_without_sdk() {
    let none = Fixture::new();
    let global = Fixture::new();
    global.queue.set_telemetry(Some(Telemetry::global()));
    assert!(none.queue.telemetry().is_none() && global.queue.telemetry().is_some());
    for f in [&none, &global] {
        f.queue.publish("g", "x", &PublishOptions::new().attr("k", "v")).unwrap();
        let mut batch = Batch::new().unwrap();
        batch.add("b", "y", &PublishOptions::default()).unwrap();
        f.queue.publish_batch(&batch).unwrap();
        for event in f.queue.peek(None, 10).unwrap() {
            assert!(event.attrs.iter().all(|(k, _)| k != "traceparent"), "no trace context stored: {event:?}");
        }
        let recording: Arc<Mutex<Vec<bool>>> = Arc::default();
        let theirs = Arc::clone(&recording);
        let worker = f
            .queue
            .worker(WorkerOptions::new().concurrency(1), move |_| {
                let cx = Context::current();
                theirs.lock().unwrap().push(cx.span().is_recording() || cx.span().span_context().is_valid());
                Ok::<(), BoxError>(())
            })
            .unwrap();
        assert!(eventually(HANDLED, || f.queue.stats().unwrap().messages == 0), "both handled and acked");
        assert!(worker.stop());
        assert_eq!(*recording.lock().unwrap(), [false, false], "no recording span current in the handler");
    }
}

/// What the scenarios leave out: a lease-lost ack's settle span, a failed publish's
/// span and metric, and a hand claimer's calls (no span; the ack's duration) and its
/// `extract`.
#[test]
fn lease_lost_settle_failed_publish_and_hand_claims() {
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);

    f.queue.publish("g", "purged under its handler", &PublishOptions::default()).unwrap();
    let theirs = f.queue.clone();
    let opts = WorkerOptions::new().concurrency(1).on_error(|_| {});
    let worker = f.queue.worker(opts, move |lease| theirs.purge_group(lease.group())).unwrap();
    let acks = o.wait_for(&format!("ack {dest}"), 1);
    assert!(worker.stop());
    assert!(matches!(acks[0].status, Status::Error { .. }), "{:?}", acks[0].status);
    assert_eq!(attr(&acks[0], "error.type"), text("MQ_LEASE_LOST"));
    let process = &o.named(&format!("process {dest}"))[0];
    assert_eq!(process.status, Status::Unset, "the handler itself succeeded");
    o.spans.reset();

    let refused = f.queue.publish("g", "x", &PublishOptions::new().priority(5));
    assert_eq!(refused.unwrap_err().kind(), mongomq::ErrorKind::InvalidArgument);
    let sends = o.named(&format!("send {dest}"));
    assert_eq!(sends.len(), 1);
    assert!(matches!(sends[0].status, Status::Error { .. }));
    assert_eq!(attr(&sends[0], "error.type"), text("MQ_ERR_ARG"));
    assert_eq!(attr(&sends[0], "messaging.message.id"), None);
    let rm = o.metrics();
    let sent = rm
        .scope_metrics()
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == "messaging.client.sent.messages")
        .map(|m| format!("{:?}", m.data()))
        .unwrap();
    assert!(sent.contains("MQ_ERR_ARG"), "the failed publish is counted with its error.type: {sent}");

    o.spans.reset();
    f.queue.publish("h", "by hand", &PublishOptions::default()).unwrap();
    let send = o.named(&format!("send {dest}")).pop().unwrap();
    o.spans.reset();
    let lease = f.queue.claim(&common::opts(30_000)).unwrap().expect("a lease");
    let producer = o.telemetry.extract(&lease);
    assert_eq!(producer.span().span_context().span_id(), send.span_context.span_id());
    assert!(producer.span().span_context().is_remote());
    assert!(o.telemetry.extract_at(&lease, 1).is_none(), "past the end");
    f.queue.nack(&lease, Duration::ZERO).unwrap();
    let lease = f.queue.claim(&common::opts(30_000)).unwrap().expect("a lease");
    f.queue.ack(&lease).unwrap();
    assert!(o.finished().is_empty(), "a hand claim, nack and ack record no span: {:#?}", o.finished());
    let ops = histogram(&o.metrics(), "messaging.client.operation.duration");
    for op in ["ack", "nack"] {
        assert!(ops.iter().any(|(a, _)| has(a, "messaging.operation.name", op)), "{op}: {ops:?}");
    }

    f.queue.set_telemetry(None);
    f.queue.publish("h", "untraced", &PublishOptions::default()).unwrap();
    assert!(o.finished().is_empty(), "set_telemetry(None) turns it off");
    let peeked = f.queue.peek(Some("h"), 1).unwrap();
    assert!(peeked[0].attrs.is_empty(), "{peeked:?}");
}

/// The async surface: an awaited publish's send span is the child of the caller's
/// context (taken along to the blocking thread), and the async worker records the
/// same process and ack spans as the thread worker, its handler run with the process
/// span current.
#[cfg(feature = "tokio")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_publish_and_worker_are_traced() {
    use opentelemetry::context::FutureExt;
    let f = Fixture::new();
    let o = Otel::new();
    f.queue.set_telemetry(Some(o.telemetry.clone()));
    let dest = dest(&f);
    let tracer = o.tracer_provider.tracer("test");
    let parent = Context::current_with_span(tracer.start("P"));
    let p = parent.span().span_context().clone();
    let seq = f.queue.publish_async("g", b"x".to_vec(), &PublishOptions::default()).with_context(parent.clone()).await;
    let seq = seq.unwrap();
    let mut batch = Batch::new().unwrap();
    batch.add("g", "y", &PublishOptions::default()).unwrap();
    f.queue.publish_batch_async(batch).with_context(parent.clone()).await.unwrap();
    parent.span().end();
    let sends = o.named(&format!("send {dest}"));
    assert_eq!(sends.len(), 2);
    assert!(sends.iter().all(|s| s.parent_span_id == p.span_id()), "children of the awaiting caller's span");

    let seen: Arc<Mutex<Vec<SpanContext>>> = Arc::default();
    let theirs = Arc::clone(&seen);
    let worker = f
        .queue
        .worker_async(WorkerOptions::new().concurrency(1), move |_lease| {
            let theirs = Arc::clone(&theirs);
            async move {
                tokio::task::yield_now().await;
                theirs.lock().unwrap().push(Context::current().span().span_context().clone());
                Ok::<(), BoxError>(())
            }
        })
        .await
        .unwrap();
    let processes = tokio::task::spawn_blocking({
        let (spans, name) = (o.spans.clone(), format!("ack {dest}"));
        move || {
            eventually(HANDLED, || spans.get_finished_spans().unwrap().iter().filter(|s| s.name == name).count() == 2)
        }
    })
    .await
    .unwrap();
    assert!(processes, "both acked: {:#?}", o.finished());
    assert!(worker.stop().await);
    let processes = o.named(&format!("process {dest}"));
    assert_eq!(processes.len(), 2);
    let first = processes.iter().find(|s| attr(s, "messaging.message.id") == text(&seq.to_string())).unwrap();
    assert_eq!(first.links.links[0].span_context.span_id(), sends[0].span_context.span_id());
    let seen = seen.lock().unwrap();
    for process in &processes {
        assert!(seen.iter().any(|sc| sc.span_id() == process.span_context.span_id()), "the handler saw its span");
        let acks = o.named(&format!("ack {dest}"));
        assert!(acks.iter().any(|a| a.parent_span_id == process.span_context.span_id()));
    }
}
