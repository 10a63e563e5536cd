"""A worker: handles the orders of examples/producer.py, 4 at a time, and stops once
no order came for 3 seconds (or on Ctrl-C / SIGTERM, after the running ones finish).

    MONGOMQ_URI=mongodb://localhost:27017 python worker.py
"""

import logging
import os
import threading

import mongomq

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

uri = os.environ.get("MONGOMQ_URI", "mongodb://localhost:27017")
db = os.environ.get("MONGOMQ_DB", "shop")
handled = []
lock = threading.Lock()


def handle(lease: mongomq.Lease) -> None:
    # Returning acks the event; raising nacks it: it comes back later (attempts + 1),
    # with exponential back-off, and the failure is logged with its traceback.
    order = lease.json()
    print("order %(order)s of %(customer)s: %(step)s" % order, "(attempt %d)" % lease.attempts)
    with lock:
        handled.append(order["order"])


with mongomq.Client(uri) as client, client.queue(db, "orders") as queue:
    # While a handler runs, its lease is extended: a slow handler keeps its group.
    queue.work(handle, concurrency=4, visibility=30.0, idle_timeout=3.0, handle_signals=True)
    print("handled %d orders; %d events left" % (len(handled), queue.stats().messages))
