package org.mongomq;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Programs the tests run in a fresh JVM (classpath: target/classes and
 * target/test-classes), for what a JVM can do only once or only to itself: the default
 * log handler installed by the first client, and signals.
 *
 * <pre>
 *   TestProcess log URI       the first client's libmongoc warning, as System.Logger "mongomq" got it
 *   TestProcess signals URI DB  two work() runs, each stopped by a signal the test sends
 *   TestProcess nootel URI DB   the binding with no OpenTelemetry on the classpath (OptionalOtelTest)
 * </pre>
 */
public final class TestProcess {
    private TestProcess() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "log" -> log(args[1]);
            case "signals" -> signals(args[1], args[2]);
            case "nootel" -> noOtel(args[1], args[2]);
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /**
     * Without OpenTelemetry on the classpath: says so, then uses every surface a
     * non-tracing program has (publish, batch, claim and ack, a worker, the async view)
     * and a Telemetry of its own (the core's interface needs no tracing library), printing
     * what happened; last, what loading org.mongomq.otel does.
     */
    private static void noOtel(String uri, String db) throws Exception {
        try {
            Class.forName("io.opentelemetry.context.Context");
            say("opentelemetry is on the classpath");
        } catch (ClassNotFoundException e) {
            say("no opentelemetry");
        }
        try (Client c = Client.connect(uri); MongoMqQueue q = c.queue(db, "q")) {
            Batch early = new Batch().add("g", "early batch"); // made before any telemetry: keeps no copy
            long seq = q.publish("g", "plain");
            q.publish(new Batch().add("g", "batch 1").add("g", "batch 2"));
            q.async().publish("g", "async").get();
            Lease l = q.claim().orElseThrow();
            q.ack(l);
            say("published and acked seq " + seq + ": " + l.text());
            java.util.concurrent.CountDownLatch three = new java.util.concurrent.CountDownLatch(3);
            try (Worker w = q.worker(WorkerOptions.defaults(), lease -> three.countDown())) {
                say("worker handled " + (three.await(60, TimeUnit.SECONDS) ? "3" : "fewer than 3"));
            }
            CountingTelemetry t = new CountingTelemetry();
            q.setTelemetry(t);
            Batch late = new Batch().add("h", "late batch");
            q.publish("h", "counted");
            q.publish(early);
            q.publish(late);
            java.util.concurrent.CountDownLatch handled = new java.util.concurrent.CountDownLatch(3);
            try (Worker w = q.worker(WorkerOptions.defaults().maxEvents(1), lease -> {
                say("handled " + lease.text() + " " + lease.attrs() + (t.current.get() ? " in its process" : ""));
                handled.countDown();
            })) {
                handled.await(60, TimeUnit.SECONDS);
            }
            say("telemetry: " + t.sends + " sends, " + t.processes + " processes, " + t.settles + " settles, "
                    + t.operations + " operations");
            q.setTelemetry(null);
            q.publish("g", "untraced");
            say("after null: " + q.peek(1).get(0).attrs() + ", " + t.sends + " sends");
            q.drop();
        }
        try {
            Class.forName("org.mongomq.otel.MongoMqTelemetry").getMethod("global").invoke(null);
            say("MongoMqTelemetry.global() worked");
        } catch (java.lang.reflect.InvocationTargetException | LinkageError e) {
            Throwable why = e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
            say("MongoMqTelemetry needs opentelemetry: " + why.getClass().getSimpleName());
        }
    }

    /** A Telemetry without any tracing library: counts the hooks, injects "x-test". */
    private static final class CountingTelemetry implements Telemetry {
        final java.util.concurrent.atomic.AtomicInteger sends = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger processes = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger settles = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger operations = new java.util.concurrent.atomic.AtomicInteger();
        final ThreadLocal<Boolean> current = ThreadLocal.withInitial(() -> false);

        @Override
        public Sending startSend(String destination, String group, int count) {
            return new Sending() {
                @Override
                public Map<String, String> headers() {
                    return Map.of("x-test", "1");
                }

                @Override
                public void end(long seq, Throwable error) {
                    sends.incrementAndGet();
                }
            };
        }

        @Override
        public Processing startProcess(String destination, Lease lease) {
            processes.incrementAndGet();
            return new Processing() {
                @Override
                public Scope makeCurrent() {
                    current.set(true);
                    return () -> current.set(false);
                }

                @Override
                public void handled(Throwable failure) {}

                @Override
                public Settling settle(String operation) {
                    return error -> settles.incrementAndGet();
                }

                @Override
                public void end() {}
            };
        }

        @Override
        public void recordOperation(String destination, String operation, double seconds, Throwable error) {
            operations.incrementAndGet();
        }

        @Override
        public Runnable wrap(Runnable task) {
            return task;
        }
    }

    /** Prints "got LEVEL MESSAGE on THREAD" for the record naming the unknown URI option, or "got nothing" after 3 s. */
    private static void log(String warnsUri) throws Exception {
        LinkedBlockingQueue<LogRecord> got = new LinkedBlockingQueue<>();
        Map<LogRecord, String> threads = new ConcurrentHashMap<>();
        Logger logger = Logger.getLogger("mongomq");
        logger.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                threads.put(r, Thread.currentThread().getName());
                got.add(r);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
        try (Client c = Client.connect(warnsUri)) {
            say("connected");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        for (long left; (left = deadline - System.nanoTime()) > 0; ) {
            LogRecord r = got.poll(left, TimeUnit.NANOSECONDS);
            if (r != null && r.getMessage().toLowerCase(Locale.ROOT).contains("mongomqnosuchoption")) {
                say("got " + r.getLevel() + " " + r.getMessage() + " on " + threads.get(r));
                return;
            }
        }
        say("got nothing");
    }

    /**
     * Two work() runs with handleSignals, each on one event whose handler takes 1.5 s:
     * the test signals each once its handler started; the run must finish the handler,
     * ack, and return. Then "waiting": the JVM's own handlers are back, so the test's
     * next SIGTERM ends the process (143).
     */
    private static void signals(String uri, String db) throws Exception {
        // The test's queue, with its partitions (QueueTestBase.PARTITIONS, read here
        // without JUnit on the classpath).
        String p = System.getenv("MONGOMQ_TEST_PARTITIONS");
        QueueOptions opts = QueueOptions.defaults().partitions(p == null || p.isEmpty() ? 1 : Integer.parseInt(p));
        try (Client c = Client.connect(uri); MongoMqQueue q = c.queue(db, "q", opts)) {
            for (int run = 1; run <= 2; run++) {
                q.publish("g", ("run " + run).getBytes(StandardCharsets.UTF_8));
                q.work(WorkerOptions.defaults().concurrency(2).handleSignals(true), lease -> {
                    say("handler started " + lease.text());
                    Thread.sleep(1500);
                    say("handler done " + lease.text());
                });
                say("work returned, messages " + q.stats().messages());
            }
        }
        say("waiting");
        Thread.sleep(60_000);
        say("not ended by the signal");
    }
}
