//! Errors: every status but `MQ_OK` and `MQ_EMPTY` becomes an [`Error`] carrying the
//! status, the server's error code and the C library's message.

use std::ffi::{CStr, CString, NulError};
use std::fmt;

use mongomq_sys as sys;

/// What went wrong, for callers that branch on it (`match err.kind()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `MQ_LEASE_LOST`: the lease expired and another worker took the group (ack,
    /// nack, unclaim, extend), or the group was purged.
    LeaseLost,
    /// `MQ_ERR_ARG`: a bad argument; the message names it. Nothing was sent.
    InvalidArgument,
    /// `MQ_ERR_CONNECT`: the server is unreachable or timed out, or a write's outcome
    /// is unknown (a lost reply, a step-down): a publish may then have added its event.
    /// A publish retried with its [`dedup_key`](crate::PublishOptions::dedup_key)
    /// leaves exactly one event.
    Connect,
    /// `MQ_INTERRUPTED`: [`Queue::interrupt`](crate::Queue::interrupt) was called; every
    /// later waiting claim on that queue ends at once.
    Interrupted,
    /// `MQ_CANCELLED`: the claim's [`CancelToken`](crate::CancelToken) was cancelled.
    Cancelled,
    /// `MQ_ERR_SERVER`: the server answered with an error ([`Error::server_code`]).
    Server,
    /// `MQ_ERR_NOMEM`.
    NoMemory,
    /// `MQ_ERR_INTERNAL`, a status this crate does not know, or a reply it could not
    /// read (stats that are not the documented JSON).
    Internal,
}

/// The error of every fallible call. `std::error::Error`, `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    status: i32,
    server_code: i32,
    message: String,
}

/// `Result<T, mongomq::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The C status (`mq_status`), e.g. `-1` for `MQ_ERR_ARG`.
    pub fn status(&self) -> i32 {
        self.status
    }

    /// The C status's name, e.g. `"MQ_LEASE_LOST"`.
    pub fn status_name(&self) -> &'static str {
        status_name(self.status)
    }

    /// MongoDB's error code for [`ErrorKind::Server`], else 0.
    pub fn server_code(&self) -> i32 {
        self.server_code
    }

    /// The library's message, e.g. `"mq_publish_with: priority is 5, outside 0..4"`.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Shorthand for `kind() == ErrorKind::LeaseLost`.
    pub fn is_lease_lost(&self) -> bool {
        self.kind == ErrorKind::LeaseLost
    }

    pub(crate) fn new(status: sys::mq_status, server_code: i32, message: String) -> Error {
        let kind = match status {
            sys::MQ_LEASE_LOST => ErrorKind::LeaseLost,
            sys::MQ_ERR_ARG => ErrorKind::InvalidArgument,
            sys::MQ_ERR_CONNECT => ErrorKind::Connect,
            sys::MQ_INTERRUPTED => ErrorKind::Interrupted,
            sys::MQ_CANCELLED => ErrorKind::Cancelled,
            sys::MQ_ERR_SERVER => ErrorKind::Server,
            sys::MQ_ERR_NOMEM => ErrorKind::NoMemory,
            _ => ErrorKind::Internal,
        };
        Error { kind, status, server_code, message }
    }

    /// An argument this crate rejects before calling C (a NUL byte in a string, a
    /// count that does not fit C's type): the same kind as the library's own.
    pub(crate) fn argument(function: &str, message: impl fmt::Display) -> Error {
        Error::new(sys::MQ_ERR_ARG, 0, format!("{function}: {message}"))
    }

    pub(crate) fn internal(message: String) -> Error {
        Error::new(sys::MQ_ERR_INTERNAL, 0, message)
    }

    pub(crate) fn from_c(status: sys::mq_status, err: &sys::mq_error) -> Error {
        let bytes: Vec<u8> = err.message.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        let mut message = String::from_utf8_lossy(&bytes).into_owned();
        if message.is_empty() {
            message = status_name(status).to_string();
        }
        Error::new(status, err.server_code, message)
    }
}

/// `MQ_OK` -> `Ok(())`, anything else -> the error (`MQ_EMPTY` is handled by the
/// claims, `MQ_DUPLICATE` by the publishes, before they get here).
pub(crate) fn check(status: sys::mq_status, err: &sys::mq_error) -> Result<()> {
    if status == sys::MQ_OK {
        Ok(())
    } else {
        Err(Error::from_c(status, err))
    }
}

/// The name of a C status (`"MQ_LEASE_LOST"`), `"MQ_UNKNOWN"` for a value that is
/// none: the library's own table (`mq_status_name`).
pub fn status_name(status: i32) -> &'static str {
    // SAFETY: mq_status_name takes any int and returns a pointer to a static
    // NUL-terminated string (a literal of the library, which stays loaded for the
    // process: the crate links it), so the borrow may be 'static.
    let name = unsafe { CStr::from_ptr(sys::mq_status_name(status)) };
    name.to_str().unwrap_or("MQ_UNKNOWN")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.status_name())?;
        if self.server_code != 0 {
            write!(f, " [server code {}]", self.server_code)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// A Rust string as a C string, or the argument error naming `name`.
pub(crate) fn c_string(function: &str, name: &str, value: &str) -> Result<CString> {
    CString::new(value).map_err(|e: NulError| {
        Error::argument(function, format_args!("{name} contains a NUL byte (byte offset {})", e.nul_position()))
    })
}
