//! The agent's traced commands (tests/matrix/README.md): `tpublish`, a publish inside a
//! remote parent context given by its trace and span ids, and `twork`, the worker
//! helper run until it handled one event; each replies from the spans the SDK's
//! in-memory exporter (simple processor) finished, and clears it. The queues of these
//! commands are handles of their own with the telemetry set, so the untraced
//! commands' publishes carry no trace context.
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use mongomq::otel::Telemetry;
use mongomq::{BoxError, Client, PublishOptions, Queue, WorkerError, WorkerOptions};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

pub struct Traced {
    spans: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    telemetry: Telemetry,
    queues: HashMap<(String, String), Queue>,
}

impl Traced {
    pub fn new() -> Traced {
        let spans = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let telemetry =
            Telemetry::builder().tracer_provider(&provider).propagator(TraceContextPropagator::new()).build();
        Traced { spans, _provider: provider, telemetry, queues: HashMap::new() }
    }

    fn open(&self, client: &Client, db: &str, prefix: &str) -> Result<Queue, String> {
        let q = client.queue(db, prefix).map_err(|e| e.to_string())?;
        q.set_telemetry(Some(self.telemetry.clone()));
        Ok(q)
    }

    /// The finished spans whose name starts with `op ` (then cleared, with the rest).
    fn take(&self, op: &str) -> Vec<SpanData> {
        let spans = self.spans.get_finished_spans().unwrap_or_default();
        self.spans.reset();
        spans.into_iter().filter(|s| s.name.starts_with(&format!("{op} "))).collect()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn publish(
        &mut self,
        client: &Client,
        db: &str,
        prefix: &str,
        group: &str,
        event: &[u8],
        trace_id: &str,
        span_id: &str,
    ) -> Result<String, String> {
        let key = (db.to_string(), prefix.to_string());
        if !self.queues.contains_key(&key) {
            let q = self.open(client, db, prefix)?;
            self.queues.insert(key.clone(), q);
        }
        let trace_id = TraceId::from_hex(trace_id).map_err(|e| format!("TRACEID: {e}"))?;
        let span_id = SpanId::from_hex(span_id).map_err(|e| format!("SPANID: {e}"))?;
        let remote = SpanContext::new(trace_id, span_id, TraceFlags::SAMPLED, true, TraceState::default());
        self.spans.reset();
        let seq = {
            let _parent = Context::new().with_remote_span_context(remote).attach();
            self.queues[&key].publish(group, event, &PublishOptions::new().priority(0)).map_err(|e| e.to_string())?
        };
        let sends = self.take("send");
        let send = sends.last().ok_or("no send span finished")?;
        Ok(format!("ok {seq} {} {} {}", send.span_context.trace_id(), send.span_context.span_id(), send.parent_span_id))
    }

    /// The worker on a handle of its own, which the handler interrupts once it has
    /// handled its event: the worker's next claim ends at once (it claims no other
    /// event), the ack goes on.
    pub fn work(&mut self, client: &Client, db: &str, prefix: &str, wait: Duration) -> Result<String, String> {
        let q = self.open(client, db, prefix)?;
        self.spans.reset();
        let (tx, rx) = mpsc::channel();
        let (tx, theirs) = (Mutex::new(tx), q.clone());
        let opts = WorkerOptions::new().concurrency(1).visibility(Duration::from_secs(30)).on_error(|e| {
            if !matches!(e, WorkerError::Queue(e) if e.kind() == mongomq::ErrorKind::Interrupted) {
                eprintln!("rust agent: twork: {e}");
            }
        });
        let worker = q
            .worker(opts, move |_lease| {
                theirs.interrupt();
                let _ = tx.lock().unwrap().send(());
                Ok::<(), BoxError>(())
            })
            .map_err(|e| e.to_string())?;
        let _ = rx.recv_timeout(wait);
        worker.stop();
        let processes = self.take("process");
        let Some(p) = processes.first() else { return Ok("ok none".into()) };
        let attr = |key: &str| p.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string());
        let (link_trace, link_span) = match p.links.links.first() {
            Some(l) => (l.span_context.trace_id().to_string(), l.span_context.span_id().to_string()),
            None => ("-".into(), "-".into()),
        };
        Ok(format!(
            "ok {} {} {} {link_trace} {link_span} {}",
            attr("messaging.message.id").ok_or("no message id")?,
            p.span_context.trace_id(),
            p.span_context.span_id(),
            attr("messaging.mongomq.message.attempts").ok_or("no attempts")?
        ))
    }
}
