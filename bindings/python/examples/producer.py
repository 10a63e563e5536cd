"""A producer: publishes orders to the queue shop.orders for examples/worker.py.

    MONGOMQ_URI=mongodb://localhost:27017 python producer.py
"""

import json
import os
from datetime import timedelta

import mongomq

uri = os.environ.get("MONGOMQ_URI", "mongodb://localhost:27017")
db = os.environ.get("MONGOMQ_DB", "shop")

with mongomq.Client(uri) as client, client.queue(db, "orders") as queue:
    # An event goes to the tail of its group (here: a customer). A group's events are
    # delivered in publish order, one at a time; groups are served round-robin.
    for order in range(1, 7):
        customer = "customer-%d" % (order % 3)
        event = json.dumps({"order": order, "customer": customer, "step": "charge"})
        seq = queue.publish(customer, event)  # str is sent as UTF-8; bytes as they are
        print("published order", order, "for", customer, "as seq", seq)

    # A priority (0..4) that claims can filter on, and an event not due for 2 seconds
    # (an aware datetime on the queue clock).
    queue.publish("vip-1", json.dumps({"order": 7, "customer": "vip-1", "step": "charge"}), priority=3)
    later = queue.now() + timedelta(seconds=2)
    queue.publish("customer-1", json.dumps({"order": 8, "customer": "customer-1", "step": "remind"}),
                  not_before=later)

    # Many events in 3 server commands.
    batch = mongomq.Batch()
    for order in (9, 10):
        batch.add("customer-2", json.dumps({"order": order, "customer": "customer-2", "step": "ship"}))
    queue.publish_batch(batch)

    print("queued:", queue.stats().messages, "events")
