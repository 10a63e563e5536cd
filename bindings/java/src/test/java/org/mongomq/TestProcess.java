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
 * </pre>
 */
public final class TestProcess {
    private TestProcess() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "log" -> log(args[1]);
            case "signals" -> signals(args[1], args[2]);
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
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
        try (Client c = Client.connect(uri); MongoMqQueue q = c.queue(db, "q")) {
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
