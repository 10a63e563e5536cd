package org.mongomq.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.mongomq.Batch;
import org.mongomq.ClaimOptions;
import org.mongomq.Client;
import org.mongomq.Lease;
import org.mongomq.MongoMqQueue;
import org.mongomq.PublishOptions;

/**
 * The workload of bench/bench.c through the Java binding: publish N events (`{"i":k}`)
 * round-robin over G groups (group g at priority g % 5) from one thread, then drain them
 * with W threads (each with its own Client, as separate machines would) claiming and
 * acking; once one event per call ("single"), once in batches of 10 (publish_batch and
 * batch claims, "batch(10)"). {@code --batch B} runs only the mode with batches of B
 * ({@code --batch 1}: the single mode alone), as the other benches do, so that
 * bench/compare.py can time each mode's process on its own. Prints events/s for both
 * phases. Not a test.
 *
 * <p>{@code --async} compares the async surface (AsyncQueue, AsyncWorker) with the sync
 * one instead, on the same workload: N publishes through the futures, each awaited
 * before the next (its per-call overhead over the sync call) and with up to 64 in flight
 * (what the futures buy one thread), beside N sync publishes; then drains of N events by
 * the sync worker and by the async worker (handlers that return a completed stage), both
 * with concurrency W.
 *
 * <p>{@code --otel} measures what tracing costs instead ({@link OtelBench}: tracing off, noop
 * and sdk, without and with attributes, over rounds; its own options, the OpenTelemetry
 * jars of target/otel on the classpath).
 *
 * <pre>
 *   java -cp target/mongomq-0.8.0.jar:target/test-classes org.mongomq.bench.Bench \
 *        [--uri URI] [--events N] [--groups G] [--workers W] [--batch B] [--async]
 *   java -cp "target/mongomq-0.8.0.jar:target/test-classes:target/otel/*" org.mongomq.bench.Bench --otel [...]
 * </pre>
 */
public final class Bench {
    private static final Duration VIS = Duration.ofSeconds(30);
    /** The options of priority 0..4, made once (the bench times the calls, not the options). */
    private static final PublishOptions[] PRIORITY = new PublishOptions[5];

    static {
        for (int p = 0; p < 5; p++) PRIORITY[p] = PublishOptions.defaults().priority(p);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--otel")) {
            int code = OtelBench.run(java.util.Arrays.copyOfRange(args, 1, args.length), System.out);
            if (code != 0) System.exit(code);
            return;
        }
        String uri = System.getenv().getOrDefault("MONGOMQ_URI", System.getenv("MONGOMQ_TEST_URI"));
        int events = 2000, groups = 50, workers = 4, batch = 0; // 0: both modes
        boolean async = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--async")) {
                async = true;
                continue;
            }
            String v = a.contains("=") ? a.substring(a.indexOf('=') + 1) : (i + 1 < args.length ? args[++i] : "");
            String k = a.contains("=") ? a.substring(0, a.indexOf('=')) : a;
            switch (k) {
                case "--uri": uri = v; break;
                case "--events": events = Integer.parseInt(v); break;
                case "--groups": groups = Integer.parseInt(v); break;
                case "--workers": workers = Integer.parseInt(v); break;
                case "--batch": batch = Integer.parseInt(v); break;
                default:
                    System.err.println("usage: Bench [--uri URI] [--events N] [--groups G] [--workers W] [--batch B] [--async]");
                    System.exit(2);
            }
        }
        if (uri == null) {
            System.err.println("Bench: --uri or MONGOMQ_URI");
            System.exit(2);
        }
        String db = "mongomq_bench_java_" + ProcessHandle.current().pid() + "_" + System.currentTimeMillis() / 1000;
        System.out.printf("java bench: %d events, %d groups, %d workers, db %s%n", events, groups, workers, db);
        if (batch < 0) {
            System.err.println("Bench: --batch must be >= 1 (none: both modes)");
            System.exit(2);
        }
        if (async) {
            AsyncBench.run(uri, db, events, groups, workers);
            return;
        }
        int[] modes = batch == 0 ? new int[] {1, 10} : new int[] {batch};
        for (int b : modes) {
            String name = b == 1 ? "single" : "batch(" + b + ")";
            double[] r = run(uri, db, b == 1 ? "bench_single" : "bench_batch" + b, events, groups, workers, b);
            System.out.printf("%-10s publish %9.0f events/s   drain %9.0f events/s%n", name, r[0], r[1]);
        }
    }

    private static double[] run(String uri, String db, String prefix, int events, int groups, int workers, int b)
            throws Exception {
        List<Client> clients = new ArrayList<>();
        List<MongoMqQueue> queues = new ArrayList<>();
        try {
            for (int w = 0; w <= workers; w++) {
                Client c = Client.connect(uri);
                clients.add(c);
                queues.add(c.queue(db, prefix)); // index creation before any timing
            }
            MongoMqQueue pub = queues.get(0);
            long t0 = System.nanoTime();
            if (b == 1) {
                for (int i = 0; i < events; i++) {
                    int g = i % groups;
                    pub.publish("g" + g, ("{\"i\":" + i + "}").getBytes(StandardCharsets.UTF_8), PRIORITY[g % 5]);
                }
            } else {
                for (int i = 0; i < events; ) {
                    try (Batch batch = new Batch()) {
                        for (int k = 0; k < b && i < events; k++, i++) {
                            int g = i % groups;
                            batch.add("g" + g, ("{\"i\":" + i + "}").getBytes(StandardCharsets.UTF_8), PRIORITY[g % 5]);
                        }
                        pub.publish(batch);
                    }
                }
            }
            double publishEps = events / ((System.nanoTime() - t0) / 1e9);

            AtomicLong acked = new AtomicLong();
            List<Thread> threads = new ArrayList<>();
            long t1 = System.nanoTime();
            for (int w = 1; w <= workers; w++) {
                MongoMqQueue q = queues.get(w);
                ClaimOptions claim = ClaimOptions.defaults().visibility(VIS).maxEvents(b);
                Thread t = new Thread(() -> {
                    while (acked.get() < events) {
                        Optional<Lease> got = q.claim(claim);
                        if (got.isEmpty()) {
                            try {
                                Thread.sleep(2);
                            } catch (InterruptedException e) {
                                return;
                            }
                            continue;
                        }
                        try (Lease l = got.get()) {
                            q.ack(l);
                            acked.addAndGet(l.count());
                        }
                    }
                });
                threads.add(t);
                t.start();
            }
            for (Thread t : threads) t.join();
            double drainEps = acked.get() / ((System.nanoTime() - t1) / 1e9);
            pub.drop();
            return new double[] {publishEps, drainEps};
        } finally {
            for (MongoMqQueue q : queues) q.close();
            for (Client c : clients) c.close();
        }
    }
}
