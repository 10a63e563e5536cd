package org.mongomq.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.mongomq.AsyncQueue;
import org.mongomq.AsyncWorker;
import org.mongomq.Client;
import org.mongomq.MongoMqQueue;
import org.mongomq.Worker;
import org.mongomq.WorkerOptions;

/**
 * {@code Bench --async}: the async surface beside the sync one on Bench's workload (N
 * events over G groups, concurrency W). Publishes: sync; async, each future awaited
 * before the next (the difference per call is the futures' overhead: a hop to the
 * executor and back, also timed alone, without a server call); async with up to 64 in
 * flight. Drains: the sync Worker and the
 * AsyncWorker (a handler returning a completed stage), each with concurrency W, timed
 * from its start to its close after the last handler (the acks done). Each phase on a fresh queue; prints events/s and µs per
 * event.
 */
final class AsyncBench {
    private static final int IN_FLIGHT = 64;

    private AsyncBench() {}

    private static byte[] event(int i) {
        return ("{\"i\":" + i + "}").getBytes(StandardCharsets.UTF_8);
    }

    private static void line(String what, int n, long nanos) {
        double s = nanos / 1e9;
        System.out.printf("%-34s %9.0f events/s  %8.1f us/event%n", what, n / s, nanos / 1e3 / n);
    }

    static void run(String uri, String db, int events, int groups, int workers) throws Exception {
        try (Client c = Client.connect(uri)) {
            // Warm-up: the JIT and the executor's threads, on a queue of its own.
            try (MongoMqQueue q = c.queue(db, "bench_async_warm")) {
                AsyncQueue a = q.async();
                for (int i = 0; i < 300; i++) q.publish("g" + (i % groups), event(i));
                for (int i = 0; i < 300; i++) a.publish("g" + (i % groups), event(i)).join();
                q.drop();
            }
            // The hop alone: a no-op through the default executor and back, no server call.
            long hop;
            {
                int n = 20000;
                long t0 = System.nanoTime();
                for (int i = 0; i < n; i++) CompletableFuture.runAsync(() -> {}, AsyncQueue.defaultExecutor()).join();
                hop = (System.nanoTime() - t0) / n;
            }
            long sync, awaited, pipelined;
            try (MongoMqQueue q = c.queue(db, "bench_async_pub_sync")) {
                long t0 = System.nanoTime();
                for (int i = 0; i < events; i++) q.publish("g" + (i % groups), event(i));
                sync = System.nanoTime() - t0;
                q.drop();
            }
            try (MongoMqQueue q = c.queue(db, "bench_async_pub_awaited")) {
                AsyncQueue a = q.async();
                long t0 = System.nanoTime();
                for (int i = 0; i < events; i++) a.publish("g" + (i % groups), event(i)).join();
                awaited = System.nanoTime() - t0;
                q.drop();
            }
            try (MongoMqQueue q = c.queue(db, "bench_async_pub_pipelined")) {
                AsyncQueue a = q.async();
                ArrayDeque<CompletableFuture<Long>> flight = new ArrayDeque<>();
                long t0 = System.nanoTime();
                for (int i = 0; i < events; i++) {
                    if (flight.size() == IN_FLIGHT) flight.poll().join();
                    flight.add(a.publish("g" + (i % groups), event(i)));
                }
                while (!flight.isEmpty()) flight.poll().join();
                pipelined = System.nanoTime() - t0;
                q.drop();
            }
            line("publish sync", events, sync);
            line("publish async, each awaited", events, awaited);
            line("publish async, " + IN_FLIGHT + " in flight", events, pipelined);
            System.out.printf("%-34s %+9.1f us/call%n", "async overhead per awaited call", (awaited - sync) / 1e3 / events);
            System.out.printf("%-34s %9.1f us/call%n", "executor hop alone (no call)", hop / 1e3);

            WorkerOptions opts = WorkerOptions.defaults().concurrency(workers).visibility(Duration.ofSeconds(30));
            long syncDrain, asyncDrain;
            try (MongoMqQueue q = c.queue(db, "bench_async_drain_sync")) {
                for (int i = 0; i < events; i++) q.publish("g" + (i % groups), event(i));
                CountDownLatch all = new CountDownLatch(events);
                long t0 = System.nanoTime();
                try (Worker w = q.worker(opts, lease -> all.countDown())) {
                    if (!all.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("sync drain timed out");
                } // close(): the last handlers' acks are done
                syncDrain = System.nanoTime() - t0;
                if (q.stats().messages() != 0) throw new IllegalStateException("sync drain left events");
                q.drop();
            }
            try (MongoMqQueue q = c.queue(db, "bench_async_drain_async")) {
                for (int i = 0; i < events; i++) q.publish("g" + (i % groups), event(i));
                CountDownLatch all = new CountDownLatch(events);
                long t0 = System.nanoTime();
                try (AsyncWorker w = q.async().worker(opts, lease -> {
                    all.countDown();
                    return CompletableFuture.completedFuture(null);
                })) {
                    if (!all.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("async drain timed out");
                } // close(): the last handlers' acks are done
                asyncDrain = System.nanoTime() - t0;
                if (q.stats().messages() != 0) throw new IllegalStateException("async drain left events");
                q.drop();
            }
            line("drain sync worker (" + workers + ")", events, syncDrain);
            line("drain async worker (" + workers + ")", events, asyncDrain);
        }
    }
}
