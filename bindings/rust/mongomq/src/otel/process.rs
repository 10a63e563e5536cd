//! What the workers (threads, and with `tokio` the async one) record with telemetry
//! for each lease they hand to their handler: the span `process {db}.{prefix}`
//! (consumer; its parent the worker's own context, so a new trace; one link per event
//! to the producer's context found in its attributes), the handler run with it current,
//! its failure, the `ack`/`nack` settle spans under it, and the metrics
//! `consumed.messages` and `process.duration`.

use std::error::Error as StdError;
use std::time::Instant;

use opentelemetry::trace::{Link, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, ContextGuard, KeyValue};

use super::publish::fail;
use super::{base, names, Telemetry};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::queue::Queue;

/// One lease's processing as the worker records it; nothing when its queue has no
/// telemetry. The process span ends when this is dropped (after the settle span).
pub(crate) struct Processing {
    active: Option<Active>,
}

struct Active {
    telemetry: Telemetry,
    queue: Queue,
    /// The worker's context with the process span.
    cx: Context,
    /// When the handler started: what `process.duration` measures from.
    started: Instant,
}

impl Drop for Active {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// The `error.type` of a handler failure: a library error's status name (`MQ_...`,
/// found in the box too), `panic` for a panic, else the type name of the handler's
/// error type `E` (`type_name`), or, when `E` is a box or a string (`BoxError`,
/// `String`, `&str`: no type to name), the type name of a `std::io::Error` inside, or
/// `_OTHER` (OpenTelemetry's value for an error of no known type).
pub(crate) fn error_type(type_name: &'static str, error: &(dyn StdError + 'static), panicked: bool) -> String {
    if let Some(e) = error.downcast_ref::<Error>() {
        return e.status_name().to_string();
    }
    if panicked {
        return "panic".to_string();
    }
    let opaque =
        type_name.starts_with("alloc::boxed::Box<") || type_name == "alloc::string::String" || type_name == "&str";
    if !opaque {
        return type_name.to_string();
    }
    if error.downcast_ref::<std::io::Error>().is_some() {
        return std::any::type_name::<std::io::Error>().to_string();
    }
    "_OTHER".to_string()
}

impl Processing {
    /// Counts the lease's events as consumed and starts its process span.
    pub(crate) fn start(queue: &Queue, lease: &Lease) -> Processing {
        let Some(telemetry) = queue.telemetry() else { return Processing { active: None } };
        let n = lease.count();
        telemetry.consumed(queue, n as u64);
        let links: Vec<Link> = (0..n)
            .filter_map(|i| lease.attrs_at(i))
            .filter_map(|attrs| telemetry.producer(&attrs))
            .map(Link::with_context)
            .collect();
        let mut attrs = base(queue);
        attrs.push(KeyValue::new(names::OPERATION_TYPE, "process"));
        attrs.push(KeyValue::new(names::OPERATION_NAME, "process"));
        if n == 1 {
            attrs.push(KeyValue::new(names::MESSAGE_ID, lease.seq().to_string()));
        } else {
            attrs.push(KeyValue::new(names::BATCH_COUNT, n as i64));
        }
        attrs.push(KeyValue::new(names::GROUP, lease.group().to_string()));
        attrs.push(KeyValue::new(names::ATTEMPTS, i64::from(lease.attempts())));
        let parent = Context::current();
        let tracer = telemetry.tracer();
        let span = tracer
            .span_builder(format!("process {}", queue.name()))
            .with_kind(SpanKind::Consumer)
            .with_attributes(attrs)
            .with_links(links)
            .start_with_context(tracer, &parent);
        let cx = parent.with_span(span);
        Processing { active: Some(Active { telemetry, queue: queue.clone(), cx, started: Instant::now() }) }
    }

    /// Makes the process span current on this thread until the guard is dropped.
    pub(crate) fn attach(&self) -> Option<ContextGuard> {
        self.active.as_ref().map(|a| a.cx.clone().attach())
    }

    /// The handler's future, polled with the process span current.
    #[cfg(feature = "tokio")]
    pub(crate) fn instrument<F: std::future::Future>(&self, fut: F) -> impl std::future::Future<Output = F::Output> {
        use opentelemetry::context::FutureExt;
        let cx = self.active.as_ref().map(|a| a.cx.clone());
        async move {
            match cx {
                Some(cx) => fut.with_context(cx).await,
                None => fut.await,
            }
        }
    }

    /// The handler returned: `process.duration`.
    pub(crate) fn succeeded(&mut self) {
        if let Some(a) = &self.active {
            a.telemetry.processed(&a.queue, a.started.elapsed(), None);
        }
    }

    /// The handler failed (returned `error`, of type `type_name`, or panicked):
    /// `process.duration` with `error.type`, and on the span its error status, an
    /// `exception` event and `error.type`.
    pub(crate) fn failed(&mut self, error: &(dyn StdError + 'static), type_name: &'static str, panicked: bool) {
        let Some(a) = &self.active else { return };
        let took = a.started.elapsed();
        let error_type = error_type(type_name, error, panicked);
        let (span, message) = (a.cx.span(), error.to_string());
        span.add_event(
            "exception",
            vec![
                KeyValue::new("exception.type", error_type.clone()),
                KeyValue::new("exception.message", message.clone()),
            ],
        );
        span.set_status(Status::error(message));
        span.set_attribute(KeyValue::new(names::ERROR_TYPE, error_type.clone()));
        a.telemetry.processed(&a.queue, took, Some(error_type));
    }

    /// The settle span `ack`/`nack` (`op`), a child of the process span, started.
    fn settle_span(&self, op: &'static str) -> Option<Context> {
        let a = self.active.as_ref()?;
        let mut attrs = base(&a.queue);
        attrs.push(KeyValue::new(names::OPERATION_TYPE, "settle"));
        attrs.push(KeyValue::new(names::OPERATION_NAME, op));
        let tracer = a.telemetry.tracer();
        let span = tracer
            .span_builder(format!("{op} {}", a.queue.name()))
            .with_kind(SpanKind::Client)
            .with_attributes(attrs)
            .start_with_context(tracer, &a.cx);
        Some(a.cx.with_span(span))
    }

    /// `settle` (the ack or nack, `op`) in its settle span.
    pub(crate) fn settle(&self, op: &'static str, settle: impl FnOnce() -> Result<()>) -> Result<()> {
        let cx = self.settle_span(op);
        let result = settle();
        settled(cx, &result);
        result
    }

    /// [`settle`](Processing::settle) of an awaited ack or nack.
    #[cfg(feature = "tokio")]
    pub(crate) async fn settle_async(
        &self,
        op: &'static str,
        settle: impl std::future::Future<Output = Result<()>>,
    ) -> Result<()> {
        let cx = self.settle_span(op);
        let result = settle.await;
        settled(cx, &result);
        result
    }
}

fn settled(cx: Option<Context>, result: &Result<()>) {
    if let Some(cx) = cx {
        if let Err(e) = result {
            fail(&cx, e);
        }
        cx.span().end();
    }
}

#[cfg(test)]
mod tests {
    use super::error_type;
    use crate::error::Error;
    use crate::worker::BoxError;

    fn of<E: Into<BoxError>>(e: E) -> String {
        let boxed: BoxError = e.into();
        error_type(std::any::type_name::<E>(), &*boxed, false)
    }

    #[test]
    fn error_type_names_what_it_can() {
        #[derive(Debug)]
        struct Mine;
        impl std::fmt::Display for Mine {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("mine")
            }
        }
        impl std::error::Error for Mine {}

        let lost = Error::new(mongomq_sys::MQ_LEASE_LOST, 0, "lost".into());
        assert_eq!(of(lost.clone()), "MQ_LEASE_LOST");
        assert_eq!(of(Box::new(lost) as BoxError), "MQ_LEASE_LOST", "found in the box");
        assert!(of(Mine).ends_with("::Mine"), "{}", of(Mine));
        assert_eq!(of(std::io::Error::other("x")), "std::io::error::Error");
        assert_eq!(of(Box::new(std::io::Error::other("x")) as BoxError), "std::io::error::Error");
        assert_eq!(of("text"), "_OTHER");
        assert_eq!(of(String::from("text")), "_OTHER");
        assert_eq!(of(Box::new(Mine) as BoxError), "_OTHER", "a box names no type");
        let boxed: BoxError = "x".into();
        assert_eq!(error_type("alloc::string::String", &*boxed, true), "panic");
    }
}
