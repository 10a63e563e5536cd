//! `LeaseStream` (feature `tokio`): the queue's leases as a `futures_core::Stream`, for
//! programs that drive their own loop. Each item is one waiting claim (claim_async's):
//! dropping the stream while it waits cancels that claim and gives back a lease it took.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_core::stream::{FusedStream, Stream};

use crate::error::{ErrorKind, Result};
use crate::lease::Lease;
use crate::options::ClaimOptions;
use crate::queue::Queue;

/// How long each claim of a stream waits when its options' `wait` is zero: a stream
/// never polls the server in a loop.
const STREAM_WAIT: Duration = Duration::from_secs(30);

type ClaimFuture = Pin<Box<dyn Future<Output = Result<Option<Lease>>> + Send>>;

/// The leases of a queue, one waiting claim after another ([`Queue::claim_stream`]).
///
/// Each item is `Ok(lease)` (yours to ack, nack, unclaim or extend) or the `Err` of a
/// claim that failed (a connect or server error: the next item claims again). An empty
/// claim (its wait ran out) is not an item: the stream claims again. An
/// [`interrupt`](Queue::interrupt) of the queue is the last item (an error of kind
/// [`ErrorKind::Interrupted`]); the stream then ends.
///
/// Dropping the stream (a `select!` that took another branch, a `break` out of the
/// loop, a timeout) cancels its waiting claim, as dropping
/// [`claim_async`](Queue::claim_async)'s future does: no claim is left running, and a
/// lease the claim took just then is given back with [`unclaim`](Queue::unclaim) (not a
/// delivery). Leases already yielded are the caller's.
///
/// Implements [`futures_core::Stream`] (and `FusedStream`), so `StreamExt` of
/// `futures` or `tokio-stream` works on it; [`next`](LeaseStream::next) needs neither.
pub struct LeaseStream {
    queue: Queue,
    opts: ClaimOptions,
    pending: Option<ClaimFuture>,
    ended: bool,
}

impl fmt::Debug for LeaseStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseStream")
            .field("queue", &self.queue.name())
            .field("waiting", &self.pending.is_some())
            .field("ended", &self.ended)
            .finish()
    }
}

impl LeaseStream {
    /// The next item: what `StreamExt::next` returns (`None` once the queue was
    /// interrupted and that error was yielded).
    pub async fn next(&mut self) -> Option<Result<Lease>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for LeaseStream {
    type Item = Result<Lease>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            let claim = match &mut this.pending {
                Some(claim) => claim,
                None => {
                    let (queue, opts) = (this.queue.clone(), this.opts.clone());
                    this.pending.insert(Box::pin(async move { queue.claim_async(&opts).await }))
                }
            };
            let claimed = ready!(claim.as_mut().poll(cx));
            this.pending = None;
            match claimed {
                Ok(Some(lease)) => return Poll::Ready(Some(Ok(lease))),
                Ok(None) => continue, // the wait ran out: claim again
                Err(e) => {
                    this.ended = e.kind() == ErrorKind::Interrupted;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

impl FusedStream for LeaseStream {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

impl Queue {
    /// The queue's leases as a [`Stream`] ([`LeaseStream`]), for a loop of your own:
    /// each item is one [`claim_async`](Queue::claim_async) with `opts` (waiting up to
    /// their [`wait`](ClaimOptions::wait) before it claims again; a zero wait, the
    /// default, waits 30 s: a stream never polls). Dropping the stream cancels its
    /// waiting claim. Nothing is claimed before the first poll.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_stream", "q")?;
    /// use std::time::Duration;
    /// queue.publish_async("customer-17", b"order".to_vec(), &mongomq::PublishOptions::default()).await?;
    /// let mut leases = queue.claim_stream(&mongomq::ClaimOptions::new().visibility(Duration::from_secs(30)));
    /// while let Some(lease) = leases.next().await {
    ///     let lease = lease?;
    ///     assert_eq!(lease.event(), b"order");
    ///     queue.ack_async(&lease).await?;
    ///     break; // dropping the stream cancels the claim it would wait in next
    /// }
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn claim_stream(&self, opts: &ClaimOptions) -> LeaseStream {
        let mut opts = opts.clone();
        if opts.wait.is_zero() {
            opts = opts.wait(STREAM_WAIT);
        }
        LeaseStream { queue: self.clone(), opts, pending: None, ended: false }
    }
}
