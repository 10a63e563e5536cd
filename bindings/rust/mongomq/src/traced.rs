//! The crate's calls into its telemetry: with the feature `opentelemetry` they go to
//! src/otel/ (when the queue has telemetry set), without it they are no-ops of no cost,
//! so that the publishes, the acks and nacks and both workers read the same with and
//! without the feature.

use crate::batch::Batch;
use crate::dedup::Published;
use crate::error::Result;
use crate::options::PublishOptions;
use crate::queue::Queue;

/// A publish of one event (`publish` is `mq_publish_with` given its options).
#[inline]
pub(crate) fn publish(
    queue: &Queue,
    group: &str,
    opts: &PublishOptions,
    publish: impl FnOnce(&PublishOptions) -> Result<Published>,
) -> Result<Published> {
    #[cfg(feature = "opentelemetry")]
    if let Some(t) = queue.telemetry() {
        return crate::otel::publish::single(&t, queue, group, opts, publish);
    }
    let _ = (queue, group);
    publish(opts)
}

/// A batch publish: the first seq and, with `outcomes`, each event's.
#[inline]
pub(crate) fn publish_batch(queue: &Queue, batch: &Batch, outcomes: bool) -> Result<(i64, Vec<Published>)> {
    #[cfg(feature = "opentelemetry")]
    if let Some(t) = queue.telemetry() {
        return crate::otel::publish::batch(&t, queue, batch, outcomes);
    }
    batch.publish_c(queue, outcomes)
}

/// An ack or nack (`op`), timed into `messaging.client.operation.duration`.
#[inline]
pub(crate) fn measured(queue: &Queue, op: &'static str, call: impl FnOnce() -> Result<()>) -> Result<()> {
    #[cfg(feature = "opentelemetry")]
    if let Some(t) = queue.telemetry() {
        let started = std::time::Instant::now();
        let result = call();
        t.operation(queue, op, started.elapsed(), result.as_ref().err());
        return result;
    }
    let _ = (queue, op);
    call()
}

/// The type of a worker handler's error (`E` of its `Result<(), E>`), which
/// `error.type` names when nothing better is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HandlerErrorType {
    #[cfg(feature = "opentelemetry")]
    name: &'static str,
}

impl HandlerErrorType {
    pub(crate) fn of<E>() -> HandlerErrorType {
        HandlerErrorType {
            #[cfg(feature = "opentelemetry")]
            name: std::any::type_name::<E>(),
        }
    }
}

/// The caller's current context, taken where an async call starts and made current
/// again on the blocking thread that runs it (so a publish's send span is the caller's
/// child).
pub(crate) struct CallerContext {
    #[cfg(feature = "opentelemetry")]
    cx: Option<opentelemetry::Context>,
}

/// What [`CallerContext::attach`] and [`Processing::attach`] return: the context is
/// current until it is dropped.
pub(crate) struct Attached {
    #[cfg(feature = "opentelemetry")]
    _guard: Option<opentelemetry::ContextGuard>,
}

impl CallerContext {
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn capture(queue: &Queue) -> CallerContext {
        let _ = queue;
        CallerContext {
            #[cfg(feature = "opentelemetry")]
            cx: queue.telemetry().map(|_| opentelemetry::Context::current()),
        }
    }

    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn attach(self) -> Attached {
        Attached {
            #[cfg(feature = "opentelemetry")]
            _guard: self.cx.map(opentelemetry::Context::attach),
        }
    }
}

/// One lease the worker hands to its handler: with telemetry, its process span (see
/// src/otel/process.rs); else nothing.
pub(crate) struct Processing {
    #[cfg(feature = "opentelemetry")]
    inner: crate::otel::process::Processing,
}

impl Processing {
    pub(crate) fn start(queue: &Queue, lease: &crate::lease::Lease) -> Processing {
        let _ = (queue, lease);
        Processing {
            #[cfg(feature = "opentelemetry")]
            inner: crate::otel::process::Processing::start(queue, lease),
        }
    }

    /// The process span current on this thread while the result lives.
    pub(crate) fn attach(&self) -> Attached {
        Attached {
            #[cfg(feature = "opentelemetry")]
            _guard: self.inner.attach(),
        }
    }

    /// The handler's future, polled with the process span current.
    #[cfg(feature = "tokio")]
    pub(crate) fn instrument<F: std::future::Future>(&self, fut: F) -> impl std::future::Future<Output = F::Output> {
        #[cfg(feature = "opentelemetry")]
        return self.inner.instrument(fut);
        #[cfg(not(feature = "opentelemetry"))]
        fut
    }

    pub(crate) fn succeeded(&mut self) {
        #[cfg(feature = "opentelemetry")]
        self.inner.succeeded();
    }

    pub(crate) fn failed(&mut self, error: &(dyn std::error::Error + 'static), of: HandlerErrorType, panicked: bool) {
        let _ = (error, of, panicked);
        #[cfg(feature = "opentelemetry")]
        self.inner.failed(error, of.name, panicked);
    }

    /// The ack or nack `op`, in its settle span.
    pub(crate) fn settle(&self, op: &'static str, settle: impl FnOnce() -> Result<()>) -> Result<()> {
        #[cfg(feature = "opentelemetry")]
        return self.inner.settle(op, settle);
        #[cfg(not(feature = "opentelemetry"))]
        {
            let _ = op;
            settle()
        }
    }

    /// [`settle`](Processing::settle) of an awaited ack or nack.
    #[cfg(feature = "tokio")]
    pub(crate) async fn settle_async(
        &self,
        op: &'static str,
        settle: impl std::future::Future<Output = Result<()>>,
    ) -> Result<()> {
        #[cfg(feature = "opentelemetry")]
        return self.inner.settle_async(op, settle).await;
        #[cfg(not(feature = "opentelemetry"))]
        {
            let _ = op;
            settle.await
        }
    }
}
