//! The async API (feature `tokio`): the queue's calls as futures that run the blocking
//! C call on tokio's blocking pool. A waiting claim's future owns a cancel token:
//! dropping the future (a `select!` that took another branch, a timeout, an aborted
//! task) cancels that claim only, as [`CancelToken::cancel`] would. A publish's future
//! takes the caller's OpenTelemetry context along to the blocking thread (feature
//! `opentelemetry`), so its send span is the caller's child. The stream of
//! leases is in stream.rs, the async worker in worker.rs (its handle and start) and
//! task.rs (one task's loop).

mod stream;
mod task;
mod worker;

pub use stream::LeaseStream;
pub use worker::AsyncWorker;

use std::time::Duration;

use tokio::sync::oneshot;

use crate::batch::Batch;
use crate::cancel::CancelToken;
use crate::dedup::Published;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::options::{ClaimOptions, PublishOptions};
use crate::queue::Queue;
use crate::traced::CallerContext;

type Claimed = Result<Option<Lease>>;

/// The state a claim's future owns. Dropped before the claim's result was taken (the
/// future was dropped), it cancels the claim and gives back a lease the claim may have
/// taken in the meantime: the blocking side unclaims a lease it cannot hand over, and
/// this drop unclaims one that was handed over but never read.
struct PendingClaim {
    queue: Queue,
    cancel: CancelToken,
    rx: oneshot::Receiver<Claimed>,
    done: bool,
}

impl Drop for PendingClaim {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.cancel.cancel();
        self.rx.close();
        if let Ok(Ok(Some(lease))) = self.rx.try_recv() {
            give_back(self.queue.clone(), lease);
        }
    }
}

/// unclaim of a lease nobody will read (no handler ran: not a delivery), off the async
/// thread when there is a runtime.
fn give_back(queue: Queue, lease: Lease) {
    let unclaim = move || {
        let _ = queue.unclaim(&lease);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(unclaim)),
        Err(_) => unclaim(),
    }
}

/// The claim of `opts`, whose cancel token is `cancel`, on the blocking pool: dropping
/// the future cancels `cancel` (every claim given it) and gives back a lease the claim
/// took (claim_async gives each call a token of its own; the async worker its tasks'
/// shared one, which its stop cancels too).
pub(crate) async fn claim_cancelled_on_drop(queue: Queue, opts: ClaimOptions, cancel: CancelToken) -> Claimed {
    let (tx, rx) = oneshot::channel::<Claimed>();
    let mut pending = PendingClaim { queue: queue.clone(), cancel, rx, done: false };
    tokio::task::spawn_blocking(move || {
        let claimed = queue.claim(&opts);
        if let Err(Ok(Some(lease))) = tx.send(claimed) {
            // The future is gone: give the lease back now.
            let _ = queue.unclaim(&lease);
        }
    });
    let claimed = (&mut pending.rx).await;
    pending.done = true;
    claimed.map_err(|_| Error::internal("the blocking claim ended without a result".into()))?
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::internal(format!("the blocking call failed: {e}")))?
}

impl Queue {
    /// [`claim`](Queue::claim) as a future, with the same options (it waits up to
    /// their [`wait`](ClaimOptions::wait)). Dropping the future cancels the claim (that
    /// call only: other waiters and later claims are not touched). If the claim had
    /// already taken a lease when the future was dropped, the lease is given back at
    /// once with [`unclaim`](Queue::unclaim) (not a delivery: the head is claimed next
    /// with the same attempts), so nothing stays held until its visibility runs out.
    /// The options' own [`cancel`](ClaimOptions::cancel) token, if any, is replaced by
    /// the future's (one token per claim): drop the future to cancel it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let queue = mongomq::Client::connect(&uri)?.queue("mqt_rust_doc_async", "q")?;
    /// use std::time::Duration;
    /// let opts = mongomq::ClaimOptions::new().wait(Duration::from_secs(30));
    /// tokio::select! {
    ///     lease = queue.claim_async(&opts) => { let _ = lease?; }
    ///     _ = tokio::time::sleep(Duration::from_millis(100)) => {} // the claim is cancelled
    /// }
    /// queue.publish_async("g", b"x".to_vec(), &mongomq::PublishOptions::default()).await?;
    /// let lease = queue.claim_async(&opts).await?.expect("a lease");
    /// queue.ack_async(&lease).await?;
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn claim_async(&self, opts: &ClaimOptions) -> Result<Option<Lease>> {
        let cancel = CancelToken::new()?;
        let opts = opts.clone().cancel(&cancel);
        claim_cancelled_on_drop(self.clone(), opts, cancel).await
    }

    /// [`publish`](Queue::publish) as a future (the event and a copy of the options
    /// are moved to the blocking pool). Dropping it does not stop the publish.
    pub async fn publish_async(&self, group: &str, event: impl Into<Vec<u8>>, opts: &PublishOptions) -> Result<i64> {
        self.publish_with_async(group, event, opts).await.map(|p| p.seq)
    }

    /// [`publish_with`](Queue::publish_with) as a future: the seq and whether the
    /// publish was a duplicate of an event holding its
    /// [`dedup_key`](PublishOptions::dedup_key). Dropping it does not stop the publish
    /// (retry with the same key to know what it did).
    pub async fn publish_with_async(
        &self,
        group: &str,
        event: impl Into<Vec<u8>>,
        opts: &PublishOptions,
    ) -> Result<Published> {
        let (queue, group, event, opts) = (self.clone(), group.to_string(), event.into(), opts.clone());
        let caller = CallerContext::capture(self);
        blocking(move || {
            let _current = caller.attach();
            queue.publish_with(&group, event, &opts)
        })
        .await
    }

    /// [`publish_batch`](Queue::publish_batch) as a future; takes the batch and hands
    /// it back with the first seq.
    pub async fn publish_batch_async(&self, batch: Batch) -> Result<(i64, Batch)> {
        let (queue, caller) = (self.clone(), CallerContext::capture(self));
        blocking(move || {
            let _current = caller.attach();
            queue.publish_batch(&batch).map(|seq| (seq, batch))
        })
        .await
    }

    /// [`publish_batch_with`](Queue::publish_batch_with) as a future; takes the batch
    /// and hands it back with each event's outcome, in add order.
    pub async fn publish_batch_with_async(&self, batch: Batch) -> Result<(Vec<Published>, Batch)> {
        let (queue, caller) = (self.clone(), CallerContext::capture(self));
        blocking(move || {
            let _current = caller.attach();
            queue.publish_batch_with(&batch).map(|outcomes| (outcomes, batch))
        })
        .await
    }

    /// [`ack`](Queue::ack) as a future. Dropping it does not stop the ack.
    pub async fn ack_async(&self, lease: &Lease) -> Result<()> {
        let (queue, lease) = (self.clone(), lease.share());
        blocking(move || queue.ack(&lease)).await
    }

    /// [`nack`](Queue::nack) as a future. Dropping it does not stop the nack.
    pub async fn nack_async(&self, lease: &Lease, delay: Duration) -> Result<()> {
        let (queue, lease) = (self.clone(), lease.share());
        blocking(move || queue.nack(&lease, delay)).await
    }

    /// [`unclaim`](Queue::unclaim) as a future. Dropping it does not stop the unclaim.
    pub async fn unclaim_async(&self, lease: &Lease) -> Result<()> {
        let (queue, lease) = (self.clone(), lease.share());
        blocking(move || queue.unclaim(&lease)).await
    }

    /// [`extend`](Queue::extend) as a future. Dropping it does not stop the extend.
    pub async fn extend_async(&self, lease: &Lease, visibility: Duration) -> Result<()> {
        let (queue, lease) = (self.clone(), lease.share());
        blocking(move || queue.extend(&lease, visibility)).await
    }
}
