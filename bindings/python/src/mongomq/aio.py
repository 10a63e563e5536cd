"""mongomq.aio: the package for asyncio. AsyncClient and AsyncQueue (every call that
touches the server awaitable; async context managers) and AsyncWorker (async
handlers run as tasks, the sync worker's options). Start with::

    from mongomq import aio

    async with aio.AsyncClient("mongodb://localhost:27017") as client, client.queue("shop", "orders") as queue:
        await queue.publish("customer-17", b"paid")
        lease = await queue.claim(wait=5.0)
        if lease is not None:
            await queue.ack(lease)

The C calls run on the client's own bounded thread pools (the C library blocks; its
calls release the GIL), never on the event loop's thread: see the README's "Async".
Leases, results, stats and errors are the sync package's types.
"""

from __future__ import annotations

from ._aio_queue import AsyncClient, AsyncQueue
from ._aio_worker import AsyncErrorCallback, AsyncHandler, AsyncWorker

__all__ = ["AsyncClient", "AsyncErrorCallback", "AsyncHandler", "AsyncQueue", "AsyncWorker"]
