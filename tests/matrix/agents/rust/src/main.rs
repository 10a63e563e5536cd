//! The matrix's Rust agent: the line protocol of tests/matrix/README.md over the Rust
//! binding (bindings/rust), its traced commands (tpublish, twork) in trace.rs.
mod trace;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mongomq::{ClaimOptions, Client, Lease, PublishOptions, Queue, QueueOptions};

fn fnv(b: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &c in b {
        h ^= c as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{c:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn spec_bytes(s: &str) -> Vec<u8> {
    if s == "-" {
        Vec::new()
    } else if let Some(n) = s.strip_prefix("big:") {
        (0..n.parse::<usize>().unwrap()).map(|i| (i % 251) as u8).collect()
    } else {
        unhex(s)
    }
}

/// The protocol's ATTRS (KEYHEX=VALUEHEX joined by ';', "-" for none), in its order.
fn spec_attrs(s: &str) -> Result<Vec<(String, String)>, String> {
    if s == "-" {
        return Ok(Vec::new());
    }
    let text = |h: &str| String::from_utf8(unhex(h)).map_err(|e| e.to_string());
    s.split(';')
        .map(|pair| {
            let (k, v) = pair.split_once('=').ok_or("an attribute without '='")?;
            Ok((text(k)?, text(v)?))
        })
        .collect()
}

fn attrs_word(l: &Lease) -> String {
    let pairs: Vec<String> =
        l.attrs().iter().map(|(k, v)| format!("{}={}", hex(k.as_bytes()), hex(v.as_bytes()))).collect();
    if pairs.is_empty() {
        "-".into()
    } else {
        pairs.join(";")
    }
}

/// Epoch seconds, as the protocol writes instants.
fn epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

fn wall() -> f64 {
    epoch(SystemTime::now())
}

fn secs(s: &str) -> Duration {
    Duration::from_secs_f64(s.parse().unwrap())
}

fn record(q: &Queue, l: &Lease) -> String {
    let ev = l.event();
    format!(
        "{},{},{},{},{},{:.6},{}",
        l.seq(),
        hex(l.group().as_bytes()),
        l.attempts(),
        ev.len(),
        fnv(ev),
        epoch(q.now()),
        attrs_word(l)
    )
}

fn claim(q: &Queue, wait: &str, vis: &str) -> mongomq::Result<Option<Lease>> {
    let opts = ClaimOptions::new().visibility(secs(vis)).wait(secs(wait)).worker_id("rust-agent");
    q.claim(&opts)
}

fn ack(q: &Queue, l: &Lease) -> Result<&'static str, String> {
    match q.ack(l) {
        Ok(()) => Ok("acked"),
        Err(e) if e.is_lease_lost() => Ok("lease_lost"),
        Err(e) => Err(e.to_string()),
    }
}

struct Agent {
    client: Client,
    queues: HashMap<(String, String), Queue>,
    held: Option<((String, String), Lease)>,
    /// The SDK and the traced queue handles, made at the first traced command.
    traced: Option<trace::Traced>,
}

impl Agent {
    fn handle(&mut self, w: &[&str]) -> Result<String, String> {
        if w[0] == "ack_held" {
            let (key, lease) = self.held.take().ok_or("nothing held")?;
            return Ok(format!("ok {}", ack(&self.queues[&key], &lease)?));
        }
        if w.len() < 3 {
            return Err("bad line".into());
        }
        if w[0] == "tpublish" || w[0] == "twork" {
            let traced = self.traced.get_or_insert_with(trace::Traced::new);
            let a = &w[3..];
            return if w[0] == "tpublish" {
                if a.len() != 4 {
                    return Err("tpublish DB PREFIX GROUPHEX EVENT TRACEID SPANID".into());
                }
                let group = String::from_utf8(unhex(a[0])).map_err(|e| e.to_string())?;
                traced.publish(&self.client, w[1], w[2], &group, &spec_bytes(a[1]), a[2], a[3])
            } else {
                let wait = a.first().ok_or("twork DB PREFIX WAIT_S")?;
                traced.work(&self.client, w[1], w[2], secs(wait))
            };
        }
        let key = (w[1].to_string(), w[2].to_string());
        if w[0] == "popen" && w.len() == 4 {
            // A handle of P partitions in place of the one we had (kept when the open fails).
            let p: usize = w[3].parse().map_err(|e: std::num::ParseIntError| e.to_string())?;
            let q =
                self.client.queue_with(w[1], w[2], &QueueOptions::new().partitions(p)).map_err(|e| e.to_string())?;
            let reply = format!("ok {}", q.partitions());
            self.queues.insert(key, q);
            return Ok(reply);
        }
        if !self.queues.contains_key(&key) {
            let q = self.client.queue(w[1], w[2]).map_err(|e| e.to_string())?;
            self.queues.insert(key.clone(), q);
        }
        let q = &self.queues[&key];
        let a = &w[3..];
        let e = |e: mongomq::Error| e.to_string();
        match w[0] {
            "publish" => {
                let group = String::from_utf8(unhex(a[0])).map_err(|e| e.to_string())?;
                let data = spec_bytes(a[3]);
                let mut opts = PublishOptions::new().priority(a[1].parse().unwrap());
                for (k, v) in spec_attrs(a.get(4).copied().unwrap_or("-"))? {
                    opts = opts.attr(k, v);
                }
                let delay: f64 = a[2].parse().unwrap();
                if delay > 0.0 {
                    let at = q.now() + Duration::from_secs_f64(delay);
                    let seq = q.publish(&group, &data, &opts.not_before(at)).map_err(e)?;
                    Ok(format!("ok {seq} {:.6}", epoch(at)))
                } else {
                    let seq = q.publish(&group, &data, &opts).map_err(e)?;
                    Ok(format!("ok {seq} 0"))
                }
            }
            "claim" => {
                let n: usize = a[0].parse().unwrap();
                let mut out = vec!["ok".to_string()];
                for _ in 0..n {
                    let Some(l) = claim(q, a[1], a[2]).map_err(e)? else { break };
                    out.push(record(q, &l));
                    let st = ack(q, &l)?;
                    if st != "acked" {
                        return Err(format!("ack: {st}"));
                    }
                }
                Ok(out.join(" "))
            }
            "drain" => {
                let hold = Duration::from_secs_f64(a[2].parse::<f64>().unwrap() / 1000.0);
                let mut out = vec!["ok".to_string()];
                while let Some(l) = claim(q, a[0], a[1]).map_err(e)? {
                    let t1 = wall();
                    std::thread::sleep(hold);
                    let t2 = wall();
                    out.push(format!(
                        "{},{},{:.6},{:.6},{}",
                        l.seq(),
                        hex(l.group().as_bytes()),
                        t1,
                        t2,
                        fnv(l.event())
                    ));
                    let st = ack(q, &l)?;
                    if st != "acked" {
                        return Err(format!("ack: {st}"));
                    }
                }
                Ok(out.join(" "))
            }
            "hold" => match claim(q, a[0], a[1]).map_err(e)? {
                None => Ok("ok none".into()),
                Some(l) => {
                    let r = format!("ok {}", record(q, &l));
                    self.held = Some((key, l));
                    Ok(r)
                }
            },
            "drop" => q.drop_queue().map(|_| "ok".to_string()).map_err(e),
            op => Err(format!("unknown op {op}")),
        }
    }
}

fn main() {
    let uri = std::env::args().nth(1).expect("uri");
    let client = Client::connect(&uri).expect("connect");
    let mut agent = Agent { client, queues: HashMap::new(), held: None, traced: None };
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() {
            continue;
        }
        if w[0] == "quit" {
            break;
        }
        let reply = agent.handle(&w).unwrap_or_else(|e| format!("err {}", e.replace('\n', " ")));
        writeln!(stdout, "{reply}").unwrap();
        stdout.flush().unwrap();
    }
}
