//! `Client`: a connection pool (`mq_client`), shared by the queues made from it.

use std::ptr::{self, NonNull};
use std::sync::Arc;

use mongomq_sys as sys;

use crate::error::{c_string, check, Error, Result};
use crate::partitions::QueueOptions;
use crate::queue::Queue;

/// Owns one `mq_client` and destroys it when the last [`Client`] clone and the last
/// [`Queue`] made from it are dropped.
pub(crate) struct ClientHandle(NonNull<sys::mq_client>);

// SAFETY: the header says mq_client is thread-safe: any number of threads may use one
// at once (each call borrows a connection from the pool). The pointer is destroyed
// only in Drop, when no clone of the Arc holding it is left.
unsafe impl Send for ClientHandle {}
// SAFETY: as above; no call mutates the handle itself through &self.
unsafe impl Sync for ClientHandle {}

impl Drop for ClientHandle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from mq_client_new and is destroyed exactly once,
        // here; every queue made from it holds an Arc to this handle, so none is left.
        unsafe { sys::mq_client_destroy(self.0.as_ptr()) }
    }
}

impl ClientHandle {
    pub(crate) fn as_ptr(&self) -> *mut sys::mq_client {
        self.0.as_ptr()
    }
}

/// A connection pool to one MongoDB deployment. Cheap to clone (the clones share the
/// pool), `Send + Sync`. Every [`Queue`] made from it keeps the pool alive, so a client
/// may be dropped before its queues.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
/// let client = mongomq::Client::connect(&uri)?;
/// let queue = client.queue("mqt_rust_doc_client", "orders")?;
/// drop(client); // the queue keeps the pool alive
/// queue.publish("customer-17", b"hello", &mongomq::PublishOptions::default())?;
/// # queue.drop_queue()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Client {
    handle: Arc<ClientHandle>,
}

impl Client {
    /// Opens a connection pool for a MongoDB URI (`mongodb://host:port/?options`).
    /// Does not contact the server: a malformed URI is [`ErrorKind::InvalidArgument`]
    /// here, an unreachable server is [`ErrorKind::Connect`] from the first call that
    /// needs it ([`Client::queue`]), after the URI's `serverSelectionTimeoutMS`.
    ///
    /// The process's first client routes libmongoc's log into the `log` crate (see
    /// [`set_log_handler`](crate::set_log_handler) for how to keep another handler).
    ///
    /// [`ErrorKind::InvalidArgument`]: crate::ErrorKind::InvalidArgument
    /// [`ErrorKind::Connect`]: crate::ErrorKind::Connect
    pub fn connect(uri: &str) -> Result<Client> {
        let uri = c_string("mq_client_new", "uri", uri)?;
        // Before the first client, so that libmongoc's lines about this URI go there.
        crate::logging::install_default();
        let mut out = ptr::null_mut();
        let mut err = sys::mq_error::new();
        // SAFETY: uri is a valid C string for the call; out and err point to locals.
        let status = unsafe { sys::mq_client_new(uri.as_ptr(), &mut out, &mut err) };
        check(status, &err)?;
        let ptr =
            NonNull::new(out).ok_or_else(|| Error::internal("mq_client_new returned MQ_OK and no client".into()))?;
        Ok(Client { handle: Arc::new(ClientHandle(ptr)) })
    }

    /// Opens the queue `{db}.{prefix}_*` (checking its collations, creating its indexes
    /// and reading the server's clock: 4 server commands, 5 where `hello` is unknown,
    /// one more on a mongos; so this is where an unreachable server shows up). The
    /// queue holds a reference to this client's pool.
    ///
    /// It opens a queue of one partition: a queue made with more is an
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) error here
    /// (open it with [`queue_with`](Client::queue_with) and its number).
    pub fn queue(&self, db: &str, prefix: &str) -> Result<Queue> {
        self.queue_with(db, prefix, &QueueOptions::default())
    }

    /// [`queue`](Client::queue) with options ([`QueueOptions`]): with
    /// [`partitions`](QueueOptions::partitions) > 1 a partitioned queue (0.8.0; its
    /// first open records the number, 1 command more, once).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let uri = std::env::var("MONGOMQ_TEST_URI")?;
    /// # let db = format!("mqt_rust_doc_queue_with_{}", std::process::id());
    /// let client = mongomq::Client::connect(&uri)?;
    /// let queue = client.queue_with(&db, "orders", &mongomq::QueueOptions::new().partitions(4))?;
    /// assert_eq!(queue.partitions(), 4);
    /// let refused = client.queue(&db, "orders").unwrap_err(); // one partition: not this queue's
    /// assert_eq!(refused.kind(), mongomq::ErrorKind::InvalidArgument);
    /// # queue.drop_queue()?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn queue_with(&self, db: &str, prefix: &str, opts: &QueueOptions) -> Result<Queue> {
        Queue::open(Arc::clone(&self.handle), db, prefix, opts)
    }

    /// Server commands this client has sent so far (monotonic; for benchmarks).
    pub fn command_count(&self) -> u64 {
        // SAFETY: the handle is alive (we hold an Arc) and the call only reads a counter.
        unsafe { sys::mq_client_command_count(self.handle.as_ptr()) }
    }

    /// Writes this client sent that the server applied but whose write concern it
    /// could not confirm (e.g. a wtimeout): such calls return `Ok` (the write
    /// happened), and are counted here. Monotonic.
    pub fn write_concern_errors(&self) -> u64 {
        // SAFETY: the handle is alive (we hold an Arc) and the call only reads a counter.
        unsafe { sys::mq_client_write_concern_errors(self.handle.as_ptr()) }
    }

    /// Drops this handle to the pool; the pool itself closes when no clone and no
    /// queue made from it is left. The same as `drop(client)`; using the client after
    /// it does not compile:
    ///
    /// ```compile_fail,E0382
    /// # let uri = std::env::var("MONGOMQ_TEST_URI").unwrap();
    /// let client = mongomq::Client::connect(&uri).unwrap();
    /// client.close();
    /// client.queue("db", "prefix"); // error[E0382]: use of moved value: `client`
    /// ```
    pub fn close(self) {}
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}
