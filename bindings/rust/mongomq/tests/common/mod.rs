//! Helpers of the contract tests: a fresh queue per test (with the partitions
//! MONGOMQ_TEST_PARTITIONS says), and a bare MongoDB wire client (OP_MSG) for what the
//! API must not be able to do (delete a lock, for repair).
#![allow(dead_code)]

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use mongomq::{ClaimOptions, Client, Lease, Queue, QueueOptions};

pub fn uri() -> String {
    std::env::var("MONGOMQ_TEST_URI").expect("MONGOMQ_TEST_URI must name the test server (scripts/test-server.sh)")
}

/// The partitions of every test queue: MONGOMQ_TEST_PARTITIONS, 1 when unset.
/// scripts/test-rust.sh runs the contract scenarios with 1 and again with 4
/// (bindings/CONTRACT.md, "Twice: one partition and four").
pub fn test_partitions() -> usize {
    match std::env::var("MONGOMQ_TEST_PARTITIONS") {
        Err(_) => 1,
        Ok(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=mongomq::limits::PARTITIONS_MAX).contains(n))
            .unwrap_or_else(|| panic!("MONGOMQ_TEST_PARTITIONS={v:?}: want 1..=1024")),
    }
}

/// Opens db.prefix with the test partitions: every handle on a test's queue must
/// have them (another number is refused).
pub fn open(client: &Client, db: &str, prefix: &str) -> mongomq::Result<Queue> {
    client.queue_with(db, prefix, &QueueOptions::new().partitions(test_partitions()))
}

/// The claim's partitions for `group`'s alone on a partitioned queue, none (every
/// partition) on a queue of one. A scenario that needs one group's lease while groups
/// of other partitions are ready claims with it: which partition a claim takes from
/// first is the turn's (each claim starts at the next partition), so "the group that
/// waited longest" holds within a partition only.
pub fn partition_of(q: &Queue, group: &str) -> Vec<usize> {
    if q.partitions() <= 1 {
        return Vec::new();
    }
    vec![mongomq::group_partition(group, q.partitions()).unwrap()]
}

/// Panics unless the seqs are distinct and increase within each group (`groups[i]` is
/// `seqs[i]`'s): what a queue of any number of partitions promises; with one they are
/// also consecutive, which it checks then.
pub fn assert_increasing(q: &Queue, what: &str, groups: &[&str], seqs: &[i64]) {
    let mut seen = std::collections::HashSet::new();
    let mut last = std::collections::HashMap::new();
    for (i, (&g, &s)) in groups.iter().zip(seqs).enumerate() {
        assert!(seen.insert(s), "{what}: seq {s} twice in {seqs:?}");
        assert!(s > *last.get(g).unwrap_or(&0), "{what}: seqs {seqs:?} of groups {groups:?} not increasing within {g}");
        last.insert(g, s);
        if q.partitions() == 1 {
            assert_eq!(s, seqs[0] + i as i64, "{what}: seqs {seqs:?}, want them consecutive (one partition)");
        }
    }
}

/// A name no other test or run uses: `mqt_rust_<random>`.
pub fn fresh_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let r = RandomState::new().hash_one((std::process::id(), n, Instant::now()));
    format!("mqt_rust_{:012x}", r & 0xffff_ffff_ffff)
}

/// A queue in a database of its own, dropped when the fixture goes.
pub struct Fixture {
    pub client: Client,
    pub queue: Queue,
    pub db: String,
    pub prefix: String,
}

impl Fixture {
    pub fn new() -> Fixture {
        let client = Client::connect(&uri()).expect("connect");
        let db = fresh_name();
        let prefix = "mq".to_string();
        let queue = open(&client, &db, &prefix).expect("open the queue");
        Fixture { client, queue, db, prefix }
    }

    /// Another handle on the same queue (as another machine would have).
    pub fn other_handle(&self) -> Queue {
        open(&Client::connect(&uri()).unwrap(), &self.db, &self.prefix).unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.queue.drop_queue();
    }
}

pub fn opts(visibility_ms: u64) -> ClaimOptions {
    ClaimOptions::new().visibility(Duration::from_millis(visibility_ms))
}

/// Claims with 30 s visibility and expects a lease.
pub fn claim(q: &Queue) -> Lease {
    q.claim(&opts(30_000)).expect("claim").expect("a lease")
}

/// `a - b` in seconds (negative when a is before b).
pub fn secs(a: SystemTime, b: SystemTime) -> f64 {
    match a.duration_since(b) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Polls `f` every 20 ms until it is true or `limit` passes; returns whether it was.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- a bare OP_MSG client -------------------------------------------------------

enum Bson<'a> {
    Str(&'a str),
    Int(i32),
    Doc(Vec<(&'a str, Bson<'a>)>),
    Array(Vec<Bson<'a>>),
}

fn encode_doc(fields: &[(&str, Bson<'_>)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        let (tag, bytes) = match value {
            Bson::Str(s) => {
                let mut b = ((s.len() + 1) as i32).to_le_bytes().to_vec();
                b.extend_from_slice(s.as_bytes());
                b.push(0);
                (0x02, b)
            }
            Bson::Int(i) => (0x10, i.to_le_bytes().to_vec()),
            Bson::Doc(d) => (0x03, encode_doc(d)),
            Bson::Array(items) => {
                let keys: Vec<String> = (0..items.len()).map(|i| i.to_string()).collect();
                let mut out = Vec::new();
                for (k, v) in keys.iter().zip(items) {
                    let one = encode_doc(&[(k.as_str(), clone_bson(v))]);
                    out.extend_from_slice(&one[4..one.len() - 1]);
                }
                let mut b = ((out.len() + 5) as i32).to_le_bytes().to_vec();
                b.extend(out);
                b.push(0);
                (0x04, b)
            }
        };
        body.push(tag);
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend(bytes);
    }
    let mut doc = ((body.len() + 5) as i32).to_le_bytes().to_vec();
    doc.extend(body);
    doc.push(0);
    doc
}

fn clone_bson<'a>(b: &Bson<'a>) -> Bson<'a> {
    match b {
        Bson::Str(s) => Bson::Str(s),
        Bson::Int(i) => Bson::Int(*i),
        Bson::Doc(d) => Bson::Doc(d.iter().map(|(k, v)| (*k, clone_bson(v))).collect()),
        Bson::Array(a) => Bson::Array(a.iter().map(clone_bson).collect()),
    }
}

/// The numeric top-level fields of a BSON reply (double, int32, int64, bool).
fn numeric_fields(doc: &[u8]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut i = 4;
    while i < doc.len() - 1 {
        let tag = doc[i];
        let name_end = i + 1 + doc[i + 1..].iter().position(|&b| b == 0).unwrap();
        let name = String::from_utf8_lossy(&doc[i + 1..name_end]).into_owned();
        let v = name_end + 1;
        let le32 = |at: usize| i32::from_le_bytes(doc[at..at + 4].try_into().unwrap());
        let (value, size) = match tag {
            0x01 => (Some(f64::from_le_bytes(doc[v..v + 8].try_into().unwrap())), 8),
            0x10 => (Some(le32(v) as f64), 4),
            0x12 => (Some(i64::from_le_bytes(doc[v..v + 8].try_into().unwrap()) as f64), 8),
            0x08 => (Some(doc[v] as f64), 1),
            0x02 => (None, 4 + le32(v) as usize),
            0x03 | 0x04 => (None, le32(v) as usize),
            0x09 => (None, 8),
            0x0A => (None, 0),
            other => panic!("BSON type {other:#x} in a reply: extend numeric_fields"),
        };
        if let Some(value) = value {
            out.push((name, value));
        }
        i = v + size;
    }
    out
}

/// Runs one command on the test server; returns its numeric reply fields (ok, n, ...).
fn command(db: &str, fields: Vec<(&str, Bson<'_>)>) -> Vec<(String, f64)> {
    let uri = uri();
    let hosts = uri.strip_prefix("mongodb://").expect("a mongodb:// URI");
    let hosts = hosts.split(['/', '?']).next().unwrap();
    let host = hosts.split(',').next().unwrap();
    let host = host.rsplit('@').next().unwrap();
    let mut stream = TcpStream::connect(host).expect("connect to the test server");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut fields = fields;
    fields.push(("$db", Bson::Str(db)));
    let doc = encode_doc(&fields);
    let mut msg = Vec::new();
    msg.extend(((16 + 4 + 1 + doc.len()) as i32).to_le_bytes());
    msg.extend(1i32.to_le_bytes()); // requestID
    msg.extend(0i32.to_le_bytes()); // responseTo
    msg.extend(2013i32.to_le_bytes()); // OP_MSG
    msg.extend(0u32.to_le_bytes()); // flagBits
    msg.push(0); // section kind 0: the body
    msg.extend(doc);
    stream.write_all(&msg).unwrap();
    let mut header = [0u8; 16];
    stream.read_exact(&mut header).unwrap();
    let len = i32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; len - 16];
    stream.read_exact(&mut rest).unwrap();
    assert_eq!(rest[4], 0, "reply section kind");
    numeric_fields(&rest[5..])
}

/// Deletes every lock of the queue behind the library's back (what a publisher that
/// died between its two writes leaves). Returns how many.
pub fn delete_all_locks(f: &Fixture) -> i64 {
    let coll = format!("{}_locks", f.prefix);
    let reply = command(
        &f.db,
        vec![
            ("delete", Bson::Str(&coll)),
            ("deletes", Bson::Array(vec![Bson::Doc(vec![("q", Bson::Doc(vec![])), ("limit", Bson::Int(0))])])),
        ],
    );
    let get = |k: &str| reply.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    assert_eq!(get("ok"), Some(1.0), "delete on {coll}: {reply:?}");
    get("n").unwrap_or(0.0) as i64
}
