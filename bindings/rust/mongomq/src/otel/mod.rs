//! The `opentelemetry` feature: [`Telemetry`], the tracer, meter and propagator a queue
//! records its spans and metrics with (bindings/CONTRACT.md, "Tracing"), the queue's
//! setter, and [`Telemetry::extract`] for code that claims by hand. What a publish
//! records is in publish.rs, what the workers record in process.rs; the crate calls
//! both through src/traced.rs, which is a no-op without the feature.

pub(crate) mod process;
pub(crate) mod publish;

use std::fmt;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use opentelemetry::{Context, InstrumentationScope, KeyValue};

use crate::error::Error;
use crate::lease::Lease;
use crate::queue::Queue;

/// The names this crate records under (OpenTelemetry's messaging conventions).
pub(crate) mod names {
    pub const SYSTEM: &str = "messaging.system";
    pub const DESTINATION: &str = "messaging.destination.name";
    pub const OPERATION_TYPE: &str = "messaging.operation.type";
    pub const OPERATION_NAME: &str = "messaging.operation.name";
    pub const MESSAGE_ID: &str = "messaging.message.id";
    pub const BATCH_COUNT: &str = "messaging.batch.message_count";
    pub const GROUP: &str = "messaging.mongomq.message.group";
    pub const ATTEMPTS: &str = "messaging.mongomq.message.attempts";
    pub const ERROR_TYPE: &str = "error.type";
    /// The value of `messaging.system`, and the instrumentation scope's name.
    pub const MONGOMQ: &str = "mongomq";
}

/// What a queue records its spans and metrics with: a tracer and a meter of scope
/// `mongomq` (version: this crate's), and a text-map propagator that carries the
/// producer's trace context in each event's attributes (W3C `traceparent` with
/// OpenTelemetry's `TraceContextPropagator`). Give it to a queue with
/// [`Queue::set_telemetry`]; a queue has none by default and then records nothing.
///
/// [`Telemetry::global`] takes the global tracer provider and meter provider as they
/// are when it is called (install the SDK first), and the global propagator as it is
/// at each publish and extract; [`Telemetry::builder`] takes providers and a
/// propagator of your own. Cheap to clone; the clones share everything.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
/// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_telemetry", "q")?;
/// use mongomq::otel::Telemetry;
/// queue.set_telemetry(Some(Telemetry::global()));
/// queue.publish("g", b"traced", &mongomq::PublishOptions::default())?; // a span `send db.q`
/// queue.set_telemetry(None); // records nothing again
/// # queue.drop_queue()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

// Telemetry lives in the queue's handle, whose Send and Sync are asserted by hand (for
// its C pointer): the compiler checks this part.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Telemetry>();
};

struct Inner {
    tracer: BoxedTracer,
    /// None: the global propagator, as it is at each use.
    propagator: Option<Box<dyn TextMapPropagator + Send + Sync>>,
    sent: Counter<u64>,
    consumed: Counter<u64>,
    operation_duration: Histogram<f64>,
    process_duration: Histogram<f64>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("propagator", &self.inner.propagator.as_ref().map_or("global", |_| "given"))
            .finish_non_exhaustive()
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(names::MONGOMQ).with_version(env!("CARGO_PKG_VERSION")).build()
}

/// The builder of a [`Telemetry`] ([`Telemetry::builder`]): what is not given is the
/// global one (see [`Telemetry::global`]).
///
/// ```
/// use opentelemetry::global;
/// use opentelemetry::propagation::TextMapCompositePropagator;
/// let telemetry = mongomq::otel::Telemetry::builder()
///     .tracer_provider(&global::tracer_provider())
///     .meter_provider(&*global::meter_provider())
///     .propagator(TextMapCompositePropagator::new(vec![]))
///     .build();
/// # let _ = telemetry;
/// ```
#[derive(Default)]
pub struct TelemetryBuilder {
    tracer: Option<BoxedTracer>,
    meter: Option<Meter>,
    propagator: Option<Box<dyn TextMapPropagator + Send + Sync>>,
}

impl fmt::Debug for TelemetryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryBuilder")
            .field("tracer", &self.tracer.is_some())
            .field("meter", &self.meter.is_some())
            .field("propagator", &self.propagator.is_some())
            .finish()
    }
}

impl TelemetryBuilder {
    /// Spans from this provider's tracer of scope `mongomq` (e.g. the SDK's
    /// `SdkTracerProvider`).
    pub fn tracer_provider<P, T, S>(mut self, provider: &P) -> Self
    where
        P: TracerProvider<Tracer = T> + ?Sized,
        T: Tracer<Span = S> + Send + Sync + 'static,
        S: Span + Send + Sync + 'static,
    {
        self.tracer = Some(BoxedTracer::new(Box::new(provider.tracer_with_scope(scope()))));
        self
    }

    /// Metrics from this provider's meter of scope `mongomq` (e.g. the SDK's
    /// `SdkMeterProvider`).
    pub fn meter_provider<M: MeterProvider + ?Sized>(mut self, provider: &M) -> Self {
        self.meter = Some(provider.meter_with_scope(scope()));
        self
    }

    /// Carries trace context in the events' attributes with this propagator (e.g. the
    /// SDK's `TraceContextPropagator`) instead of the global one.
    pub fn propagator<P: TextMapPropagator + Send + Sync + 'static>(mut self, propagator: P) -> Self {
        self.propagator = Some(Box::new(propagator));
        self
    }

    /// The telemetry: its instruments are made now.
    pub fn build(self) -> Telemetry {
        let tracer = self.tracer.unwrap_or_else(|| global::tracer_provider().tracer_with_scope(scope()));
        let meter = self.meter.unwrap_or_else(|| global::meter_provider().meter_with_scope(scope()));
        let inner = Inner {
            tracer,
            propagator: self.propagator,
            sent: meter
                .u64_counter("messaging.client.sent.messages")
                .with_unit("{message}")
                .with_description("Events published (duplicates included)")
                .build(),
            consumed: meter
                .u64_counter("messaging.client.consumed.messages")
                .with_unit("{message}")
                .with_description("Events the worker claimed and gave to its handler")
                .build(),
            operation_duration: meter
                .f64_histogram("messaging.client.operation.duration")
                .with_unit("s")
                .with_description("Duration of a publish, ack or nack")
                .build(),
            process_duration: meter
                .f64_histogram("messaging.process.duration")
                .with_unit("s")
                .with_description("Duration of a worker's handler run")
                .build(),
        };
        Telemetry { inner: Arc::new(inner) }
    }
}

impl Telemetry {
    /// From the global tracer provider and meter provider as they are now (no-ops
    /// until an SDK is installed with `opentelemetry::global::set_tracer_provider`
    /// and `set_meter_provider`: install it before), and the global propagator
    /// (`opentelemetry::global::set_text_map_propagator`) as it is at each use.
    pub fn global() -> Telemetry {
        Telemetry::builder().build()
    }

    /// A builder: what it is not given is the global one.
    pub fn builder() -> TelemetryBuilder {
        TelemetryBuilder::default()
    }

    /// The producer's trace context of the lease's head event, for code that claims
    /// by hand: the current context with, as its remote span, the span context the
    /// propagator finds in the event's attributes (none found: the current context as
    /// it is). Make it the parent of your own span, or link to
    /// `cx.span().span_context()` as the worker's process span does.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_extract", "q")?;
    /// use opentelemetry::trace::{Link, TraceContextExt, Tracer};
    /// let telemetry = mongomq::otel::Telemetry::global();
    /// queue.set_telemetry(Some(telemetry.clone()));
    /// queue.publish("g", b"x", &mongomq::PublishOptions::default())?;
    /// if let Some(lease) = queue.claim(&mongomq::ClaimOptions::new())? {
    ///     let producer = telemetry.extract(&lease);
    ///     let tracer = opentelemetry::global::tracer("my-app");
    ///     let link = Link::with_context(producer.span().span_context().clone());
    ///     let span = tracer.span_builder("handle order").with_links(vec![link]).start(&tracer);
    ///     # drop(span);
    ///     queue.ack(&lease)?;
    /// }
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn extract(&self, lease: &Lease) -> Context {
        let attrs = lease.attrs();
        self.with_propagator(|p| p.extract(&Attrs(&attrs)))
    }

    /// [`extract`](Telemetry::extract) for event `i` of a batch lease (0 is the head),
    /// `None` past the end.
    pub fn extract_at(&self, lease: &Lease, i: usize) -> Option<Context> {
        let attrs = lease.attrs_at(i)?;
        Some(self.with_propagator(|p| p.extract(&Attrs(&attrs))))
    }

    fn with_propagator<T>(&self, f: impl FnOnce(&dyn TextMapPropagator) -> T) -> T {
        match &self.inner.propagator {
            Some(p) => f(&**p),
            None => {
                let mut f = Some(f);
                global::get_text_map_propagator(|p| (f.take().expect("called once"))(p))
            }
        }
    }

    pub(crate) fn tracer(&self) -> &BoxedTracer {
        &self.inner.tracer
    }

    /// What the propagator injects for `cx`, in its order (a key set twice keeps its
    /// last value).
    pub(crate) fn injected(&self, cx: &Context) -> Vec<(String, String)> {
        let mut out = Collected(Vec::new());
        self.with_propagator(|p| p.inject_context(cx, &mut out));
        out.0
    }

    /// The span context the propagator finds in `attrs` (on an empty context), if valid.
    pub(crate) fn producer(&self, attrs: &[(&str, &str)]) -> Option<opentelemetry::trace::SpanContext> {
        use opentelemetry::trace::TraceContextExt;
        let cx = self.with_propagator(|p| p.extract_with_context(&Context::new(), &Attrs(attrs)));
        let sc = cx.span().span_context().clone();
        sc.is_valid().then_some(sc)
    }

    pub(crate) fn sent(&self, queue: &Queue, n: u64, error: Option<&Error>) {
        let mut attrs = base(queue);
        attrs.push(KeyValue::new(names::OPERATION_NAME, "publish"));
        attrs.extend(error.map(|e| KeyValue::new(names::ERROR_TYPE, e.status_name())));
        self.inner.sent.add(n, &attrs);
    }

    pub(crate) fn consumed(&self, queue: &Queue, n: u64) {
        let mut attrs = base(queue);
        attrs.push(KeyValue::new(names::OPERATION_NAME, "claim"));
        self.inner.consumed.add(n, &attrs);
    }

    /// `messaging.client.operation.duration` of a publish, ack or nack.
    pub(crate) fn operation(&self, queue: &Queue, name: &'static str, took: Duration, error: Option<&Error>) {
        let mut attrs = base(queue);
        attrs.push(KeyValue::new(names::OPERATION_NAME, name));
        attrs.extend(error.map(|e| KeyValue::new(names::ERROR_TYPE, e.status_name())));
        self.inner.operation_duration.record(took.as_secs_f64(), &attrs);
    }

    /// `messaging.process.duration` of a handler run; `error_type` when it failed.
    pub(crate) fn processed(&self, queue: &Queue, took: Duration, error_type: Option<String>) {
        let mut attrs = base(queue);
        attrs.push(KeyValue::new(names::OPERATION_NAME, "process"));
        attrs.extend(error_type.map(|t| KeyValue::new(names::ERROR_TYPE, t)));
        self.inner.process_duration.record(took.as_secs_f64(), &attrs);
    }
}

/// `messaging.system` and `messaging.destination.name`: on every span and metric
/// (each metric adds its `messaging.operation.name`).
pub(crate) fn base(queue: &Queue) -> Vec<KeyValue> {
    vec![KeyValue::new(names::SYSTEM, names::MONGOMQ), KeyValue::new(names::DESTINATION, queue.name().to_string())]
}

/// An event's attributes as the propagator reads them (the first of a key given twice).
struct Attrs<'a>(&'a [(&'a str, &'a str)]);

impl Extractor for Attrs<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| *k).collect()
    }
}

/// What a propagator injects, in order.
struct Collected(Vec<(String, String)>);

impl Injector for Collected {
    fn set(&mut self, key: &str, value: String) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_string(), value)),
        }
    }
}

impl Queue {
    /// Records this queue's spans and metrics with `telemetry` (`None`: nothing, as
    /// a queue starts): a span `send {db}.{prefix}` per publish (its trace context
    /// injected into each event's attributes), and, in the workers, a span
    /// `process {db}.{prefix}` per lease linked to the producer's, with the handler
    /// run in it, and `ack`/`nack` spans under it; the four metrics of
    /// bindings/CONTRACT.md. Applies to this queue and its clones (they share one
    /// handle), from the next call on. Feature `opentelemetry`.
    pub fn set_telemetry(&self, telemetry: Option<Telemetry>) {
        *self.telemetry_cell().write().unwrap_or_else(PoisonError::into_inner) = telemetry;
    }

    /// The telemetry given to [`set_telemetry`](Queue::set_telemetry), if any.
    pub fn telemetry(&self) -> Option<Telemetry> {
        self.telemetry_cell().read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}
