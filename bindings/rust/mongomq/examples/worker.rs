//! A worker: handles the orders of the producer example on `shop.orders` (MONGOMQ_URI,
//! MONGOMQ_DB as there) with 4 threads, and ends once the queue was idle for 3 s (or
//! at Ctrl-C / SIGTERM, after the running handlers finished).

use std::time::Duration;

use mongomq::{BoxError, Client, Lease, WorkerOptions};

/// Ok acks the event; an error nacks it, and it comes back later (with back-off).
fn handle(lease: &Lease) -> Result<(), BoxError> {
    let order: serde_json::Value = lease.json()?;
    let step = order["step"].as_str().ok_or("no step")?;
    println!("{}: order {} {step} (attempt {})", lease.group(), order["order"], lease.attempts());
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let uri = std::env::var("MONGOMQ_URI").unwrap_or_else(|_| "mongodb://localhost:27017".into());
    let db = std::env::var("MONGOMQ_DB").unwrap_or_else(|_| "shop".into());
    let client = Client::connect(&uri)?;
    let queue = client.queue(&db, "orders")?;

    let opts = WorkerOptions::new()
        .concurrency(4) // threads
        .visibility(Duration::from_secs(30)) // each lease, extended while the handler runs
        .max_attempts(5) // then the dead letters
        .idle_timeout(Duration::from_secs(3)) // end when the queue is drained
        .handle_signals(true); // Ctrl-C and SIGTERM stop it gracefully
    let finished = queue.work(opts, handle)?; // blocks until it stops
    println!("worker stopped (handlers finished: {finished})");

    let stats = queue.stats()?;
    println!("left: {} events, {} dead", stats.messages, stats.dead);
    Ok(())
}
