//! libmongoc's log: the handler a program sets with `set_log_handler`, and the default
//! that the first `Client` installs, which routes every line into the `log` crate
//! (target "mongomq").

use std::any::Any;
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use mongomq_sys as sys;

/// A handler for libmongoc's log lines: `(level, domain, message)`, see
/// [`set_log_handler`].
pub type LogHandler = Box<dyn Fn(i32, &str, &str) + Send + Sync + 'static>;

type SharedHandler = Arc<dyn Fn(i32, &str, &str) + Send + Sync + 'static>;

/// The `log` target of every line the crate logs: libmongoc's (by default) and the
/// worker's reports (handler failures, queue errors, signals).
pub const LOG_TARGET: &str = "mongomq";

/// The environment variable that keeps libmongoc's own handler: with
/// `MONGOMQ_LIBMONGOC_LOG=keep` the first client installs nothing.
pub(crate) const KEEP_ENV: &str = "MONGOMQ_LIBMONGOC_LOG";

/// The handler the trampoline calls. A call clones the Arc under the read lock and
/// calls it outside the lock, so a replacement never frees a handler still running.
static HANDLER: RwLock<Option<SharedHandler>> = RwLock::new(None);
/// Serializes the setters (set_log_handler, install_default), so the handler in
/// HANDLER and the one installed in C agree; it holds whether a handler was chosen
/// (by the program, or the default), after which the default is never installed. The
/// trampoline never takes it: libmongoc calls the trampoline holding its log lock, and
/// mq_log_set_handler takes that lock, so a setter must not hold any lock the
/// trampoline waits for while it calls into C.
static CHOSEN: Mutex<bool> = Mutex::new(false);
/// `*CHOSEN`, readable without the lock (every Client::connect looks).
static CHOSEN_FAST: AtomicBool = AtomicBool::new(false);

/// Routes libmongoc's log to `handler`, or silences it with `None`.
///
/// **By default** (with no call to this), the process's first
/// [`Client::connect`](crate::Client::connect) routes libmongoc's log into the
/// [`log`](https://docs.rs/log) crate, target `"mongomq"`, as `"{domain}: {message}"`,
/// levels mapped: 0 error and 1 critical are `Error`, 2 warning is `Warn`, 3 message and
/// 4 info are `Info`, 5 debug and 6 trace are `Debug`. Your logger decides what is
/// shown (with none installed, nothing is; `env_logger`'s default shows errors only;
/// `RUST_LOG=mongomq=warn` shows libmongoc's warnings). A program that sets libmongoc's
/// handler itself, or wants libmongoc's own stderr printing, keeps it by calling
/// `set_log_handler` before its first client (its choice then stands), or by running
/// with `MONGOMQ_LIBMONGOC_LOG=keep` (the first client then installs nothing).
///
/// This **replaces libmongoc's process-wide log handler** (`mq_log_set_handler`):
/// every libmongoc line of the process goes to `handler`, the ones of other users of
/// libmongoc in the process included. `None` installs no handler at all: libmongoc
/// then drops every line. A later call replaces the handler.
///
/// `handler` gets `(level, domain, message)`: the level as libmongoc's (0 error,
/// 1 critical, 2 warning, 3 message, 4 info, 5 debug, 6 trace), the domain (`"mongoc"`,
/// `"cluster"`, `"mongomq"`, ...) and the message, both converted lossily from C
/// strings. It is called directly on the thread that logs: any thread, libmongoc's
/// background monitoring threads included, hence `Send + Sync`. libmongoc holds its log
/// lock during the call: keep the handler short (hand the line to a channel, say), and
/// do not call `set_log_handler`, nor anything that logs through libmongoc, from it (it
/// would deadlock). A panic in the handler is caught and written to stderr (the line is
/// lost); it never unwinds into C. A handler replaced while one of its calls runs is
/// dropped when that call ends.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let lines = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&lines);
/// mongomq::set_log_handler(Some(Box::new(move |level, domain, message| {
///     sink.lock().unwrap().push(format!("{level} {domain}: {message}"));
/// })));
/// // libmongoc warns about an unknown URI option (level 2, domain "mongoc").
/// let _client = mongomq::Client::connect("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1").unwrap();
/// assert!(lines.lock().unwrap().iter().any(|l| l.starts_with("2 mongoc: ") && l.contains("mongomqnosuchoption")));
/// mongomq::set_log_handler(None); // silence libmongoc
/// ```
pub fn set_log_handler(handler: Option<LogHandler>) {
    let mut chosen = CHOSEN.lock().unwrap_or_else(PoisonError::into_inner);
    *chosen = true;
    CHOSEN_FAST.store(true, Ordering::SeqCst);
    install(handler.map(SharedHandler::from));
}

/// The default of the first Client: libmongoc's lines into the `log` crate, unless a
/// handler was chosen before or MONGOMQ_LIBMONGOC_LOG=keep.
pub(crate) fn install_default() {
    if CHOSEN_FAST.load(Ordering::SeqCst) {
        return;
    }
    let mut chosen = CHOSEN.lock().unwrap_or_else(PoisonError::into_inner);
    if *chosen {
        return;
    }
    *chosen = true;
    CHOSEN_FAST.store(true, Ordering::SeqCst);
    if std::env::var_os(KEEP_ENV).is_some_and(|v| v == "keep") {
        return;
    }
    install(Some(Arc::new(to_log_crate)));
}

/// The `log` level of a libmongoc level.
pub(crate) fn log_level(level: i32) -> ::log::Level {
    match level {
        i32::MIN..=1 => ::log::Level::Error,
        2 => ::log::Level::Warn,
        3 | 4 => ::log::Level::Info,
        _ => ::log::Level::Debug,
    }
}

fn to_log_crate(level: i32, domain: &str, message: &str) {
    let level = log_level(level);
    if ::log::log_enabled!(target: LOG_TARGET, level) {
        ::log::log!(target: LOG_TARGET, level, "{domain}: {message}");
    }
}

/// Puts `handler` in HANDLER and the trampoline (or nothing) into C. The caller holds
/// CHOSEN.
fn install(handler: Option<SharedHandler>) {
    match handler {
        Some(handler) => {
            // The old handler (if any) is dropped after the write lock is released.
            let _old = HANDLER.write().unwrap_or_else(PoisonError::into_inner).replace(handler);
            // SAFETY: log_trampoline has mq_log_fn's signature, never unwinds (panics
            // are caught) and only reads the global HANDLER, so any thread may call it
            // at any time for the rest of the process; ctx is unused (NULL).
            unsafe { sys::mq_log_set_handler(Some(log_trampoline), ptr::null_mut()) }
        }
        None => {
            // SAFETY: a NULL handler silences libmongoc; nothing is kept.
            unsafe { sys::mq_log_set_handler(None, ptr::null_mut()) }
            let _old = HANDLER.write().unwrap_or_else(PoisonError::into_inner).take();
        }
    }
}

/// A C string of the log, lossily as UTF-8 ("" for NULL).
///
/// # Safety
///
/// `s` is NULL or a NUL-terminated string alive for `'a`.
unsafe fn text<'a>(s: *const c_char) -> Cow<'a, str> {
    if s.is_null() {
        return Cow::Borrowed("");
    }
    // SAFETY: by this function's contract, s is a NUL-terminated string alive for 'a.
    unsafe { CStr::from_ptr(s) }.to_string_lossy()
}

fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("?")
}

/// The mq_log_fn installed by set_log_handler and install_default: calls the current
/// handler, if any.
///
/// # Safety
///
/// `domain` and `message` are NULL or NUL-terminated strings alive for the call (what
/// libmongomq passes).
unsafe extern "C" fn log_trampoline(level: c_int, domain: *const c_char, message: *const c_char, _ctx: *mut c_void) {
    let handler = HANDLER.read().unwrap_or_else(PoisonError::into_inner).clone();
    let Some(handler) = handler else { return };
    // The handler moves into the closure: if this is its last Arc (it was replaced
    // meanwhile), its drop runs inside catch_unwind too.
    let result = catch_unwind(AssertUnwindSafe(move || {
        // SAFETY: by this function's contract, domain and message are NULL or C strings
        // alive for this call; the Cows do not outlive it.
        let (domain, message) = unsafe { (text(domain), text(message)) };
        handler(level, &domain, &message);
    }));
    if let Err(panic) = result {
        let _ = writeln!(
            std::io::stderr(),
            "mongomq: the log handler panicked ({}); the log line was dropped",
            panic_text(&*panic)
        );
        // Dropping the payload runs foreign code too: keep it from unwinding into C.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(panic)));
    }
}

#[cfg(test)]
mod tests {
    use super::log_level;
    use log::Level;

    #[test]
    fn libmongoc_levels_map_to_log_levels() {
        let got: Vec<Level> = (0..=6).map(log_level).collect();
        use Level::*;
        assert_eq!(got, [Error, Error, Warn, Info, Info, Debug, Debug]);
    }
}
