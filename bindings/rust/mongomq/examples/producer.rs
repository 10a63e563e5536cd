//! A producer: publishes a few orders to the queue `shop.orders` (MONGOMQ_URI,
//! MONGOMQ_DB override the server and the database). Run it, then the worker example.

use std::time::Duration;

use mongomq::{Batch, Client, PublishOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let uri = std::env::var("MONGOMQ_URI").unwrap_or_else(|_| "mongodb://localhost:27017".into());
    let db = std::env::var("MONGOMQ_DB").unwrap_or_else(|_| "shop".into());
    let client = Client::connect(&uri)?;
    let queue = client.queue(&db, "orders")?; // the collections shop.orders_*

    // One group per customer: a group's events are handled in order, one at a time.
    let seq = queue.publish("customer-17", r#"{"order": 1, "step": "charge"}"#, &PublishOptions::default())?;
    println!("published order 1 as #{seq}");
    queue.publish("customer-17", r#"{"order": 1, "step": "ship"}"#, &PublishOptions::default())?;

    // Priority (0..4) is the group's: claimers may ask for a floor.
    let vip = PublishOptions::new().priority(3);
    queue.publish("customer-42", r#"{"order": 2, "step": "charge"}"#, &vip)?;

    // Not before a time on the queue's clock: a reminder in 2 seconds.
    let later = PublishOptions::new().not_before(queue.now() + Duration::from_secs(2));
    queue.publish("customer-42", r#"{"order": 2, "step": "remind"}"#, &later)?;

    // Many events at once: one batch, 3 server commands.
    let mut batch = Batch::new()?;
    for n in 3..6 {
        batch.add(&format!("customer-{n}"), format!(r#"{{"order": {n}, "step": "charge"}}"#), &vip)?;
    }
    let first = queue.publish_batch(&batch)?;
    println!("published orders 3 to 5 as #{first}..#{}", first + 2);

    let stats = queue.stats()?;
    println!("{} events in {} groups", stats.messages, stats.groups.total);
    Ok(())
}
