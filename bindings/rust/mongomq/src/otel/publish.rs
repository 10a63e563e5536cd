//! What a publish records with telemetry: the span `send {db}.{prefix}` (producer, a
//! child of the caller's current context), its context injected into each event's
//! attributes within the library's bounds, and the metrics `sent.messages` and
//! `operation.duration` (publish).

use std::time::Instant;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};

use super::{base, names, Telemetry};
use crate::batch::Batch;
use crate::dedup::Published;
use crate::error::{Error, Result};
use crate::options::PublishOptions;
use crate::queue::Queue;

/// Adds to `attrs` (an event's own, in order) what the propagator injected, leaving
/// out what the library would refuse, so that tracing never fails a publish: a key the
/// event already has (the user's value is kept), a 17th attribute, a key outside
/// `[A-Za-z0-9_.-]{1,128}`, a value over 4096 bytes or with a NUL byte; and an empty
/// value (W3C `tracestate` is injected only when non-empty).
pub(crate) fn merge(attrs: &mut Vec<(String, String)>, injected: &[(String, String)]) {
    for (key, value) in injected {
        let key_ok = (1..=mongomq_sys::MQ_ATTR_KEY_MAX).contains(&key.len())
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        let value_ok = !value.is_empty() && value.len() <= mongomq_sys::MQ_ATTR_VALUE_MAX && !value.contains('\0');
        if key_ok && value_ok && attrs.len() < mongomq_sys::MQ_ATTR_MAX && !attrs.iter().any(|(k, _)| k == key) {
            attrs.push((key.clone(), value.clone()));
        }
    }
}

/// The send span, started as a child of the current context, in a context of its own.
fn send_span(t: &Telemetry, queue: &Queue, extra: KeyValue) -> Context {
    let parent = Context::current();
    let mut attrs = base(queue);
    attrs.push(KeyValue::new(names::OPERATION_TYPE, "send"));
    attrs.push(KeyValue::new(names::OPERATION_NAME, "publish"));
    attrs.push(extra);
    let span = t
        .tracer()
        .span_builder(format!("send {}", queue.name()))
        .with_kind(SpanKind::Producer)
        .with_attributes(attrs)
        .start_with_context(t.tracer(), &parent);
    parent.with_span(span)
}

/// Error status and `error.type` (the status name) on the context's span.
pub(crate) fn fail(cx: &Context, e: &Error) {
    let span = cx.span();
    span.set_status(Status::error(e.to_string()));
    span.set_attribute(KeyValue::new(names::ERROR_TYPE, e.status_name()));
}

/// A single publish (`mq_publish_with` by `publish`, given the options with the trace
/// context added).
pub(crate) fn single(
    t: &Telemetry,
    queue: &Queue,
    group: &str,
    opts: &PublishOptions,
    publish: impl FnOnce(&PublishOptions) -> Result<Published>,
) -> Result<Published> {
    let cx = send_span(t, queue, KeyValue::new(names::GROUP, group.to_string()));
    // The options are copied only when there is something to add (not with the API's
    // no-op propagator).
    let injected = t.injected(&cx);
    let traced = (!injected.is_empty()).then(|| {
        let mut traced = opts.clone();
        merge(&mut traced.attrs, &injected);
        traced
    });
    let started = Instant::now();
    let result = publish(traced.as_ref().unwrap_or(opts));
    let took = started.elapsed();
    match &result {
        Ok(p) => cx.span().set_attribute(KeyValue::new(names::MESSAGE_ID, p.seq.to_string())),
        Err(e) => fail(&cx, e),
    }
    cx.span().end();
    let error = result.as_ref().err();
    t.sent(queue, 1, error);
    t.operation(queue, "publish", took, error);
    result
}

/// A batch publish: one send span for the whole batch, its context in every event.
/// The C batch already holds the events' attributes, so a copy of it is made with the
/// trace context added (from the events the batch keeps with this feature); should
/// that fail, the batch goes as it is, untraced, rather than fail the publish.
pub(crate) fn batch(t: &Telemetry, queue: &Queue, batch: &Batch, outcomes: bool) -> Result<(i64, Vec<Published>)> {
    let n = batch.len();
    let cx = send_span(t, queue, KeyValue::new(names::BATCH_COUNT, n as i64));
    let injected = t.injected(&cx);
    let traced = if injected.is_empty() { None } else { batch.with_attrs(|attrs| merge(attrs, &injected)).ok() };
    let started = Instant::now();
    let result = traced.as_ref().unwrap_or(batch).publish_c(queue, outcomes);
    let took = started.elapsed();
    if let Err(e) = &result {
        fail(&cx, e);
    }
    cx.span().end();
    let error = result.as_ref().err();
    t.sent(queue, n as u64, error);
    t.operation(queue, "publish", took, error);
    result
}

#[cfg(test)]
mod tests {
    use super::merge;

    fn own(n: usize) -> Vec<(String, String)> {
        (0..n).map(|i| (format!("k{i}"), "v".to_string())).collect()
    }

    fn tp() -> Vec<(String, String)> {
        vec![
            ("traceparent".into(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            ("tracestate".into(), String::new()),
        ]
    }

    #[test]
    fn merge_appends_after_the_users_own_and_skips_an_empty_value() {
        let mut attrs = own(2);
        merge(&mut attrs, &tp());
        assert_eq!(attrs.len(), 3);
        assert_eq!(attrs[2].0, "traceparent");
    }

    #[test]
    fn merge_keeps_the_users_key_and_the_bounds() {
        let mut attrs = vec![("traceparent".to_string(), "mine".to_string())];
        merge(&mut attrs, &tp());
        assert_eq!(attrs, [("traceparent".to_string(), "mine".to_string())]);

        let mut full = own(16);
        merge(&mut full, &tp());
        assert_eq!(full, own(16));

        let mut attrs = own(15);
        let bad = vec![
            ("bad key".to_string(), "v".to_string()),
            ("k".repeat(129), "v".to_string()),
            ("big".to_string(), "v".repeat(4097)),
            ("nul".to_string(), "a\0b".to_string()),
            ("ok".to_string(), "v".repeat(4096)),
            ("late".to_string(), "v".to_string()),
        ];
        merge(&mut attrs, &bad);
        assert_eq!(attrs.len(), 16);
        assert_eq!(attrs[15].0, "ok");
    }
}
