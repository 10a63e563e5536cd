//! `handle_signals`: SIGINT and SIGTERM stop, gracefully, every worker that asked (the
//! thread worker's and, with the `tokio` feature, the async worker's).
//!
//! The signal handler only writes the signal's number to a pipe (write(2) is
//! async-signal-safe; nothing else is done there); a thread of the crate reads the pipe
//! and stops the registered workers, outside the handler. The handlers are installed
//! with the first registered worker and the previous ones put back (sigaction) when the
//! last one is released. The pipe and its reading thread, made once, stay for the
//! process: a handler running on another thread as the previous ones come back may
//! still write, and must never find the descriptor closed or reused.

use std::ffi::{c_int, c_void};
use std::io::{self, Read};
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::thread;

use crate::logging::LOG_TARGET;

const SIGNALS: [c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// What a signal stops: a worker's phase 1 (no new claims, waiting claims cancelled).
pub(crate) trait Stop: Send + Sync {
    fn stop(&self);
}

struct Registry {
    next_id: u64,
    workers: Vec<(u64, Weak<dyn Stop>)>,
    /// The handlers there were before ours, while ours are installed.
    previous: Option<[libc::sigaction; 2]>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { next_id: 0, workers: Vec::new(), previous: None });

/// The write end of the pipe, for the handler; -1 until the pipe exists.
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);

/// Made once: the pipe and the thread that reads it.
static PIPE: OnceLock<Result<(), String>> = OnceLock::new();

/// A worker's place among the ones the signals stop; dropping it takes it out.
pub(crate) struct Registration {
    id: u64,
}

pub(crate) fn register(worker: Weak<dyn Stop>) -> io::Result<Registration> {
    PIPE.get_or_init(|| start_reader().map_err(|e| e.to_string())).clone().map_err(io::Error::other)?;
    let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    if reg.previous.is_none() {
        reg.previous = Some(install()?);
    }
    let id = reg.next_id;
    reg.next_id += 1;
    reg.workers.push((id, worker));
    Ok(Registration { id })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        reg.workers.retain(|(id, _)| *id != self.id);
        if reg.workers.is_empty() {
            if let Some(previous) = reg.previous.take() {
                restore(&previous);
            }
        }
    }
}

fn start_reader() -> io::Result<()> {
    let (mut reader, writer) = UnixStream::pair()?;
    // A full pipe must never block the handler: the byte is dropped (one is pending).
    writer.set_nonblocking(true)?;
    thread::Builder::new().name("mongomq-signals".into()).spawn(move || {
        let mut byte = [0u8; 1];
        loop {
            match reader.read(&mut byte) {
                Ok(1) => stop_all(c_int::from(byte[0])),
                Ok(_) => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    })?;
    WRITE_FD.store(writer.into_raw_fd(), Ordering::SeqCst);
    Ok(())
}

fn stop_all(signal: c_int) {
    let reg = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let workers: Vec<Arc<dyn Stop>> = reg.workers.iter().filter_map(|(_, w)| w.upgrade()).collect();
    drop(reg);
    if !workers.is_empty() {
        let name = if signal == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
        ::log::info!(target: LOG_TARGET, "{name}: stopping {} worker(s) gracefully", workers.len());
    }
    for w in workers {
        w.stop();
    }
}

/// Installs on_signal for SIGINT and SIGTERM; returns the handlers it replaced.
fn install() -> io::Result<[libc::sigaction; 2]> {
    // SAFETY: an all-zero sigaction is a valid value (SIG_DFL, no flags, empty mask);
    // sigemptyset fills the mask it is given.
    let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
    ours.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
    ours.sa_flags = libc::SA_RESTART;
    // SAFETY: ours.sa_mask is a valid sigset_t to fill.
    unsafe { libc::sigemptyset(&mut ours.sa_mask) };
    // SAFETY: as above.
    let mut previous: [libc::sigaction; 2] = unsafe { std::mem::zeroed() };
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // SAFETY: ours is a filled sigaction whose handler is async-signal-safe
        // (on_signal); previous[i] is writable. The call replaces the process's handler.
        if unsafe { libc::sigaction(signal, &ours, &mut previous[i]) } != 0 {
            let e = io::Error::last_os_error();
            restore(&previous[..i]);
            return Err(e);
        }
    }
    Ok(previous)
}

fn restore(previous: &[libc::sigaction]) {
    for (&signal, old) in SIGNALS.iter().zip(previous) {
        // SAFETY: old is what sigaction returned for this signal: putting it back is
        // what the program had before.
        unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
    }
}

/// The signal handler: the signal's number to the pipe, and nothing else (write(2) is
/// async-signal-safe; errno is kept, for the code the signal interrupted).
extern "C" fn on_signal(signal: c_int) {
    let fd = WRITE_FD.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    let saved = errno::get();
    let byte = signal as u8;
    // SAFETY: fd is the pipe's write end, open for the rest of the process; the buffer
    // is one byte on this stack. A failed write (a full pipe) is fine to ignore.
    let _ = unsafe { libc::write(fd, (&byte as *const u8).cast::<c_void>(), 1) };
    errno::set(saved);
}

mod errno {
    use std::ffi::c_int;

    #[cfg(any(target_os = "linux", target_os = "android", target_os = "emscripten"))]
    fn location() -> *mut c_int {
        // SAFETY: returns the calling thread's errno, always valid.
        unsafe { libc::__errno_location() }
    }
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    fn location() -> *mut c_int {
        // SAFETY: returns the calling thread's errno, always valid.
        unsafe { libc::__error() }
    }
    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        target_os = "emscripten",
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd"
    )))]
    fn location() -> *mut c_int {
        std::ptr::null_mut()
    }

    pub(super) fn get() -> c_int {
        let p = location();
        if p.is_null() {
            return 0;
        }
        // SAFETY: p is this thread's errno.
        unsafe { *p }
    }

    pub(super) fn set(value: c_int) {
        let p = location();
        if !p.is_null() {
            // SAFETY: p is this thread's errno.
            unsafe { *p = value };
        }
    }
}
