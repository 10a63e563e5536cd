//! Logging the Rust way: by default (no set_log_handler call before the first client)
//! libmongoc's log reaches the `log` crate, target "mongomq", levels mapped; the
//! worker's default on_error logs handler failures there too; and
//! MONGOMQ_LIBMONGOC_LOG=keep leaves libmongoc's own handler (checked in a child
//! process, since the default is chosen once per process). In a test binary of its
//! own: nothing here may call set_log_handler before the first client.

mod common;

use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use common::{eventually, Fixture};
use log::{Level, LevelFilter, Log, Metadata, Record};
use mongomq::{BoxError, Client, PublishOptions, WorkerOptions};

/// A client whose URI makes libmongoc warn about an unknown option.
const UNKNOWN_OPTION_URI: &str = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1";

/// The records this process logged: (level, target, message).
struct Capture(Mutex<Vec<(Level, String, String)>>);

impl Log for Capture {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.level() <= Level::Info
    }
    fn log(&self, record: &Record) {
        if self.enabled(record.metadata()) {
            let line = (record.level(), record.target().to_string(), record.args().to_string());
            self.0.lock().unwrap().push(line);
        }
    }
    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(capture).expect("the only logger of this test binary");
        log::set_max_level(LevelFilter::Info);
        capture
    })
}

fn lines_matching(needle: &str) -> Vec<(Level, String, String)> {
    capture().0.lock().unwrap().iter().filter(|l| l.2.to_lowercase().contains(needle)).cloned().collect()
}

#[test]
fn libmongoc_log_reaches_the_log_crate_by_default() {
    if std::env::var_os("MONGOMQ_TEST_CHILD").is_some() {
        return; // the child of libmongoc_handler_kept_with_env checks the opposite
    }
    capture();
    let _client = Client::connect(UNKNOWN_OPTION_URI).expect("contacts no server");
    assert!(
        eventually(Duration::from_secs(10), || !lines_matching("mongomqnosuchoption").is_empty()),
        "libmongoc's warning did not reach the log crate"
    );
    let (level, target, message) = lines_matching("mongomqnosuchoption")[0].clone();
    assert_eq!((level, target.as_str()), (Level::Warn, "mongomq"), "{message}");
    assert!(message.starts_with("mongoc: "), "{message}");
}

#[test]
fn worker_default_on_error_logs_handler_failures() {
    if std::env::var_os("MONGOMQ_TEST_CHILD").is_some() {
        return;
    }
    capture();
    let f = Fixture::new();
    f.queue.publish("logged-group", "x", &PublishOptions::default()).unwrap();
    let worker = f
        .queue
        .worker(WorkerOptions::new().backoff_base(Duration::from_secs(30)), |_| {
            let cause = std::io::Error::other("the disk is full");
            Err::<(), BoxError>(Box::new(WrappedError(cause)))
        })
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || !lines_matching("logged-group").is_empty()),
        "the handler's failure was not logged"
    );
    assert!(worker.stop());
    let (level, target, message) = lines_matching("logged-group")[0].clone();
    assert_eq!((level, target.as_str()), (Level::Error, "mongomq"), "{message}");
    assert!(message.contains("could not store the order: the disk is full"), "with the source chain: {message}");
    assert!(message.contains("attempt 1"), "{message}");
}

/// An error with a source, as a handler's own error types have.
#[derive(Debug)]
struct WrappedError(std::io::Error);

impl std::fmt::Display for WrappedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("could not store the order")
    }
}

impl std::error::Error for WrappedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn libmongoc_handler_kept_with_env() {
    if std::env::var_os("MONGOMQ_TEST_CHILD").is_some() {
        // The child: with MONGOMQ_LIBMONGOC_LOG=keep, libmongoc's own handler prints
        // the warning to stderr and nothing reaches the log crate.
        capture();
        let _client = Client::connect(UNKNOWN_OPTION_URI).expect("contacts no server");
        std::thread::sleep(Duration::from_millis(500));
        assert!(lines_matching("mongomqnosuchoption").is_empty(), "the default was installed");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "libmongoc_handler_kept_with_env", "--nocapture", "--test-threads=1"])
        .env("MONGOMQ_TEST_CHILD", "1")
        .env("MONGOMQ_LIBMONGOC_LOG", "keep")
        .output()
        .expect("run this test binary as a child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.to_lowercase().contains("mongomqnosuchoption"), "libmongoc's handler printed nothing: {stderr}");
}
