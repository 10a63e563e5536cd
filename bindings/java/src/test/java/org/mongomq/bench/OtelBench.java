// Bench --otel: what tracing (org.mongomq.otel.MongoMqTelemetry) costs the Java binding,
// off / noop / sdk, without and with attributes, in events/s and CPU per event (the process's,
// the calling thread's), checking that every event is acked exactly once.
package org.mongomq.bench;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.metrics.SdkMeterProvider;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.mongomq.Batch;
import org.mongomq.ClaimOptions;
import org.mongomq.Client;
import org.mongomq.Lease;
import org.mongomq.LogHandler;
import org.mongomq.MongoMqQueue;
import org.mongomq.PublishOptions;
import org.mongomq.Stats;
import org.mongomq.Telemetry;
import org.mongomq.Worker;
import org.mongomq.WorkerOptions;
import org.mongomq.otel.MongoMqTelemetry;

/**
 * {@code Bench --otel}: the cost of tracing, as the other bindings' tracing benches measure
 * it (bindings/go/otelmongomq/cmd/otelmongomq-bench, bindings/rust/mongomq/examples/
 * bench_telemetry.rs). Six configurations, tracing three ways times attributes none or 3
 * ({@code content-type}, {@code tenant.id}, {@code request.id}, the same on every event):
 *
 * <ul>
 *   <li><b>off</b>: no telemetry on the queues (what every queue does by default);
 *   <li><b>noop</b>: {@code MongoMqTelemetry.global()} with no SDK registered: the
 *       OpenTelemetry API's no-ops (checked: a span it starts does not record);
 *   <li><b>sdk</b>: an {@code SdkTracerProvider} sampling every span into a batch span
 *       processor ({@code --processor simple}: the synchronous one) and an exporter that
 *       counts the spans and keeps none, an {@code SdkMeterProvider} with a reader never
 *       read, the W3C trace-context propagator.
 * </ul>
 *
 * <p>One run of a configuration, on a fresh queue (dropped at its end): N single publishes
 * round-robin over G groups (group g at priority g % 5, as in Bench), N more in batches of
 * 10, claim + ack by hand from one thread (no wait; an empty claim fails the run) of N of
 * the 2N, and W workers (each a {@code Worker} of concurrency 1 on a queue of its own
 * client, as Bench's drain has W clients) draining the other N, timed from their start to
 * their {@code close()} once the last handler ran (its ack done). Every queue of the run
 * has the configuration's telemetry. Each phase starts after a {@code System.gc()} (outside
 * its timing: no phase pays for the garbage of an earlier one) and gives events/s and the
 * process's CPU time per event ({@code com.sun.management.OperatingSystemMXBean
 * #getProcessCpuTime}: every thread of the JVM, the JIT's, the GC's, the span processor's
 * and the library's included; on Linux the JDK counts it in clock ticks, 10 ms, so each
 * figure is within 10 ms / N per event, which the bench prints); for the three phases that
 * run on the calling thread also that thread's CPU time per event ({@code ThreadMXBean},
 * ns steps: the binding's and the library's work for the call, without the GC, the JIT or
 * the span processor's thread). The sdk's exporter counts the spans of each phase (flushed
 * after it, outside its timing).
 *
 * <p>Checked on the way, failing the bench (exit 1): every event is acked exactly once and
 * with the seq its publish returned (the hand loop counts an event once its {@code ack}
 * returned; the workers' handler counts each delivery, and their acks are confirmed by no
 * error reaching {@code onError} and the queue being left with no message and no dead
 * letter); sdk records exactly one send span per single publish and per batch, and one
 * process and one ack span per event the workers handled, and off and noop record none.
 *
 * <p>The configurations take turns: {@code --rounds R} rounds, each running every
 * configuration once in an order rotated by one from the last round's (no configuration
 * always runs first, in the coldest state), after an unrecorded warm-up run of
 * each ({@code --warmup E} events, default 1000; 0: none) for the JIT. Prints every run, then each
 * configuration's medians over the rounds and its CPU per event over tracing off with as
 * many attributes.
 *
 * <p>A JVM-wide effect to know when reading "off": once some queue of the JVM had a
 * telemetry, every new {@code Batch} keeps a copy of its events (for injecting trace context
 * when it is published; {@code Batch}'s class comment). The warm-up runs every
 * configuration first, so every recorded batch(10) figure, off's included, is with that
 * copy: off is an untraced queue in a program that traces, not a program without tracing.
 *
 * <pre>
 *   java -cp "target/mongomq-0.8.0.jar:target/test-classes:target/otel/*" org.mongomq.bench.Bench --otel \
 *        [--uri URI] [--events N] [--groups G] [--workers W] [--rounds R] [--processor batch|simple] [--warmup E]
 * </pre>
 */
final class OtelBench {
    private static final Duration VIS = Duration.ofSeconds(30);
    static final int ATTRS = 3;
    private static final String[] TRACINGS = {"off", "noop", "sdk"};
    private static final String USAGE = "usage: Bench --otel [--uri URI] [--events N] [--groups G] [--workers W] "
            + "[--rounds R] [--processor batch|simple] [--warmup E]";

    /** The options of priority 0..4, made once (the bench times the calls, not the options): [attrs?][priority]. */
    private static final PublishOptions[][] OPTIONS = new PublishOptions[2][5];

    static {
        Map<String, String> attrs = new LinkedHashMap<>();
        attrs.put("content-type", "application/json");
        attrs.put("tenant.id", "t-42");
        attrs.put("request.id", "00000000-0000-0000-0000-000000000011");
        for (int p = 0; p < 5; p++) {
            OPTIONS[0][p] = PublishOptions.defaults().priority(p);
            OPTIONS[1][p] = PublishOptions.defaults().priority(p).attrs(attrs);
        }
    }

    private OtelBench() {}

    /** A span exporter that counts what it is given and keeps nothing. */
    static final class Discard implements SpanExporter {
        final AtomicLong spans = new AtomicLong();

        @Override
        public CompletableResultCode export(Collection<SpanData> batch) {
            spans.addAndGet(batch.size());
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    }

    /** One configuration: tracing off, noop or sdk, with 0 or ATTRS attributes. */
    record Config(String tracing, int attrs) {
        @Override
        public String toString() {
            return String.format("%-4s attrs %d", tracing, attrs);
        }
    }

    /**
     * What a run's drain saw of its 2N events: each event's seq as published, and how many
     * times it was acked (or handled). Thread-safe.
     */
    static final class Tally {
        private final long[] seqOf;
        private final int[] times;
        private final List<String> unexpected = new ArrayList<>();
        private int distinct;

        Tally(int events) {
            seqOf = new long[events];
            times = new int[events];
        }

        /** Event i was published as seq. */
        void published(int i, long seq) {
            seqOf[i] = seq;
        }

        /**
         * Event {@code event} was acked (or handled) as {@code seq}; true once every event
         * was counted at least once.
         */
        synchronized boolean acked(byte[] event, long seq) {
            int i = index(event);
            if (i < 0 || i >= times.length) {
                if (unexpected.size() < 5) unexpected.add(new String(event, StandardCharsets.UTF_8) + " (seq " + seq + ")");
                return distinct == times.length;
            }
            if (times[i]++ == 0) distinct++;
            if (seqOf[i] != seq) {
                if (unexpected.size() < 5) unexpected.add("event " + i + " published as seq " + seqOf[i] + ", acked as " + seq);
            }
            return distinct == times.length;
        }

        synchronized int distinct() {
            return distinct;
        }

        /** What went wrong: events never acked, acked more than once, unknown or under another seq. */
        synchronized List<String> problems() {
            List<String> out = new ArrayList<>(unexpected);
            int missing = 0, duplicated = 0;
            int firstMissing = -1, firstDuplicated = -1;
            for (int i = 0; i < times.length; i++) {
                if (times[i] == 0 && missing++ == 0) firstMissing = i;
                if (times[i] > 1 && duplicated++ == 0) firstDuplicated = i;
            }
            if (missing > 0) out.add(missing + " events never acked (the first: event " + firstMissing + ")");
            if (duplicated > 0) {
                out.add(duplicated + " events acked more than once (the first: event " + firstDuplicated + ", "
                        + times[firstDuplicated] + " times)");
            }
            return out;
        }

        /** k of an event {"i":k}; -1 if it is not one. */
        static int index(byte[] e) {
            int n = e.length;
            if (n < 7 || e[0] != '{' || e[1] != '"' || e[2] != 'i' || e[3] != '"' || e[4] != ':' || e[n - 1] != '}') return -1;
            long k = 0;
            for (int j = 5; j < n - 1; j++) {
                if (e[j] < '0' || e[j] > '9' || j > 14) return -1;
                k = k * 10 + (e[j] - '0');
            }
            return k > Integer.MAX_VALUE ? -1 : (int) k;
        }
    }

    /**
     * A run's four phases, in PHASES order: events/s, the process's CPU µs per event, the
     * calling thread's CPU µs per event (NaN for the worker drain, which runs on the
     * workers' threads), spans.
     */
    record Run(double[] rate, double[] cpuUs, double[] threadUs, long[] spans) {
        Run() {
            this(new double[4], new double[4], new double[4], new long[4]);
        }
    }

    /** Times one phase of n events into run's slot p: started when made, ended by {@link #stop}. */
    private static final class Phase {
        private final Run run;
        private final int p, n;
        private final long t0, c0, th0;

        /** Collects first (outside the timing), so that no phase pays for an earlier one's garbage. */
        Phase(Run run, int p, int n) {
            System.gc();
            this.run = run;
            this.p = p;
            this.n = n;
            this.th0 = THREADS.getCurrentThreadCpuTime();
            this.c0 = cpuNanos();
            this.t0 = System.nanoTime();
        }

        /** calling: whether the phase's work ran on this thread (its CPU is then the thread figure). */
        void stop(boolean calling) {
            long t1 = System.nanoTime(), c1 = cpuNanos(), th1 = THREADS.getCurrentThreadCpuTime();
            run.rate()[p] = n / ((t1 - t0) / 1e9);
            run.cpuUs()[p] = (c1 - c0) / 1e3 / n;
            run.threadUs()[p] = calling ? (th1 - th0) / 1e3 / n : Double.NaN;
        }
    }

    static final String[] PHASES = {"single publish", "batch(10) publish", "claim+ack", "worker drain"};

    /** The failure of a run: a check that did not hold. */
    static final class Failed extends Exception {
        Failed(String message) {
            super(message);
        }
    }

    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** The process's CPU time so far, ns (user + system, every thread). */
    static long cpuNanos() {
        return OS.getProcessCpuTime();
    }

    /**
     * The step of {@link #cpuNanos()}, ns, as seen spinning for up to 200 ms (0: none seen).
     * On Linux the JDK reads it with times(2), in clock ticks: 10 ms at 100 Hz, so a phase's
     * figure is within 10 ms / N per event of the truth.
     */
    static long cpuResolutionNanos() {
        long end = System.nanoTime() + 200_000_000L, prev = cpuNanos(), step = 0;
        int changes = 0;
        while (changes < 3 && System.nanoTime() < end) {
            long v = cpuNanos();
            if (v != prev) {
                step = step == 0 ? v - prev : Math.min(step, v - prev);
                prev = v;
                changes++;
            }
        }
        return step;
    }

    private static byte[] event(int i) {
        return ("{\"i\":" + i + "}").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Runs the bench with {@code args} (Bench's, without {@code --otel}), printing to
     * {@code out}: 0 when every check held, 1 when one failed, 2 on bad arguments.
     */
    static int run(String[] args, PrintStream out) throws Exception {
        String uri = System.getenv().getOrDefault("MONGOMQ_URI", System.getenv("MONGOMQ_TEST_URI"));
        int events = 2000, groups = 50, workers = 4, rounds = 3, warmup = 1000;
        String processor = "batch";
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = a.contains("=") ? a.substring(a.indexOf('=') + 1) : (i + 1 < args.length ? args[++i] : "");
                String k = a.contains("=") ? a.substring(0, a.indexOf('=')) : a;
                switch (k) {
                    case "--uri": uri = v; break;
                    case "--events": events = Integer.parseInt(v); break;
                    case "--groups": groups = Integer.parseInt(v); break;
                    case "--workers": workers = Integer.parseInt(v); break;
                    case "--rounds": rounds = Integer.parseInt(v); break;
                    case "--warmup": warmup = Integer.parseInt(v); break;
                    case "--processor": processor = v; break;
                    default:
                        System.err.println(USAGE);
                        return 2;
                }
            }
        } catch (NumberFormatException e) {
            System.err.println("Bench --otel: " + e.getMessage() + "\n" + USAGE);
            return 2;
        }
        if (uri == null || uri.isEmpty()) {
            System.err.println("Bench --otel: --uri or MONGOMQ_URI");
            return 2;
        }
        if (events < 1 || groups < 1 || workers < 1 || rounds < 1 || warmup < 0
                || !(processor.equals("batch") || processor.equals("simple"))) {
            System.err.println("Bench --otel: --events, --groups, --workers, --rounds must be >= 1, --warmup >= 0, "
                    + "--processor batch or simple\n" + USAGE);
            return 2;
        }

        // Each client of a run logs the same lines (e.g. a server without change streams, where
        // the waiting claims poll): each distinct line once, on stderr.
        Set<String> logged = ConcurrentHashMap.newKeySet();
        Client.setLogHandler((level, domain, message) -> {
            if (logged.add(domain + ": " + message)) System.err.println("libmongoc " + domain + ": " + message + " (shown once)");
        });
        try {
            return measure(uri, events, groups, workers, rounds, warmup, processor, out);
        } finally {
            Client.setLogHandler(LogHandler.systemLogger());
        }
    }

    private static int measure(String uri, int events, int groups, int workers, int rounds, int warmup,
                               String processor, PrintStream out) throws Exception {
        // noop is the API's no-op only if nothing registered a global SDK (an agent, autoconfigure).
        Span probe = GlobalOpenTelemetry.getOrNoop().getTracer("mongomq-bench").spanBuilder("probe").startSpan();
        boolean globalIsNoop = !probe.isRecording();
        probe.end();
        if (!globalIsNoop) {
            System.err.println("Bench --otel: the global OpenTelemetry records spans (an SDK is registered): "
                    + "noop would not be the no-op");
            return 1;
        }

        Discard exporter = new Discard();
        SpanProcessor spans = processor.equals("simple") ? SimpleSpanProcessor.create(exporter)
                : BatchSpanProcessor.builder(exporter).build();
        SdkTracerProvider tracerProvider = SdkTracerProvider.builder().setSampler(Sampler.alwaysOn())
                .addSpanProcessor(spans).build();
        SdkMeterProvider meterProvider = SdkMeterProvider.builder().registerMetricReader(InMemoryMetricReader.create())
                .build();
        try {
            Map<String, Telemetry> telemetries = new LinkedHashMap<>();
            telemetries.put("off", null);
            telemetries.put("noop", MongoMqTelemetry.global());
            telemetries.put("sdk", MongoMqTelemetry.create(tracerProvider, meterProvider,
                    W3CTraceContextPropagator.getInstance()));
            List<Config> configs = new ArrayList<>();
            for (String t : TRACINGS) {
                for (int a : new int[] {0, ATTRS}) configs.add(new Config(t, a));
            }

            String db = "mongomq_bench_java_otel_" + ProcessHandle.current().pid() + "_" + System.currentTimeMillis() / 1000;
            out.printf("java otel bench (libmongomq %s, Java %s, %d CPUs, load average %.2f): database %s%n",
                    Client.libraryVersion(), System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
                    OS.getSystemLoadAverage(), db);
            out.printf("events %d  groups %d  workers %d  rounds %d  warm-up %d  sdk span processor %s%n", events,
                    groups, workers, rounds, warmup, processor);
            long res = cpuResolutionNanos();
            out.printf("process CPU time (OperatingSystemMXBean) in steps of %.1f ms: each CPU figure within %.1f us/event%n",
                    res / 1e6, res / 1e3 / events);
            out.printf("per run, on a fresh queue: %d single publishes, %d in batches of 10, claim+ack of %d (one thread), "
                    + "%d workers draining %d%n%n", events, events, events, workers, events);

            if (warmup > 0) {
                for (Config c : configs) {
                    one(uri, db, "otel_warm_" + c.tracing() + "_a" + c.attrs(), c, telemetries.get(c.tracing()),
                            tracerProvider, exporter, warmup, groups, workers);
                }
                out.printf("warm-up: %d runs of %d events (not counted), every check held%n", configs.size(), warmup);
            }

            Map<Config, List<Run>> runs = new LinkedHashMap<>();
            for (Config c : configs) runs.put(c, new ArrayList<>());
            for (int round = 0; round < rounds; round++) {
                for (int j = 0; j < configs.size(); j++) {
                    Config c = configs.get((round + j) % configs.size());
                    Run r = one(uri, db, "otel_" + c.tracing() + "_a" + c.attrs() + "_r" + (round + 1), c,
                            telemetries.get(c.tracing()), tracerProvider, exporter, events, groups, workers);
                    runs.get(c).add(r);
                    StringBuilder line = new StringBuilder(String.format("round %d  %s ", round + 1, c));
                    for (int p = 0; p < PHASES.length; p++) {
                        line.append(String.format("  %s %6.0f/s %5.0f", PHASES[p].split(" ")[0], r.rate()[p], r.cpuUs()[p]));
                        if (!Double.isNaN(r.threadUs()[p])) line.append(String.format(" (%.1f)", r.threadUs()[p]));
                        line.append(" us");
                    }
                    line.append("  spans ").append(Arrays.toString(r.spans()));
                    out.println(line);
                }
            }

            out.printf("%nmedian of %d rounds: events/s (CPU us per event: the process's, the calling thread's); "
                    + "spans per event of each phase%n", rounds);
            out.printf("%-12s %22s %22s %22s %22s   %s%n", "tracing", PHASES[0], PHASES[1], PHASES[2], PHASES[3],
                    "spans/event");
            Map<Config, double[]> cpu = new LinkedHashMap<>(), thread = new LinkedHashMap<>();
            for (Config c : configs) {
                List<Run> rs = runs.get(c);
                StringBuilder line = new StringBuilder(String.format("%-12s", c));
                double[] cpus = new double[PHASES.length], threads = new double[PHASES.length];
                StringBuilder spansPer = new StringBuilder();
                for (int p = 0; p < PHASES.length; p++) {
                    final int q = p;
                    double rate = median(rs.stream().mapToDouble(r -> r.rate()[q]).toArray());
                    cpus[p] = median(rs.stream().mapToDouble(r -> r.cpuUs()[q]).toArray());
                    threads[p] = median(rs.stream().mapToDouble(r -> r.threadUs()[q]).toArray());
                    String cpuCell = Double.isNaN(threads[p]) ? String.format("%.1f", cpus[p])
                            : String.format("%.1f, %.1f", cpus[p], threads[p]);
                    line.append(String.format(" %22s", String.format("%,.0f (%s)", rate, cpuCell)));
                    long total = rs.stream().mapToLong(r -> r.spans()[q]).sum();
                    spansPer.append(p == 0 ? "" : " / ").append(String.format("%.2f", total / (double) (rs.size() * events)));
                }
                cpu.put(c, cpus);
                thread.put(c, threads);
                out.println(line + "   " + spansPer);
            }
            out.printf("%nCPU us per event over tracing off with as many attributes (medians): the process's; in "
                    + "parentheses the calling thread's (ns steps; none for the worker drain)%n");
            out.printf("%-12s %20s %20s %20s %20s%n", "tracing", PHASES[0], PHASES[1], PHASES[2], PHASES[3]);
            for (Config c : configs) {
                StringBuilder line = new StringBuilder(String.format("%-12s", c));
                boolean off = c.tracing().equals("off");
                Config base = new Config("off", c.attrs());
                for (int p = 0; p < PHASES.length; p++) {
                    double d = cpu.get(c)[p] - cpu.get(base)[p], dt = thread.get(c)[p] - thread.get(base)[p];
                    String cell = off ? String.format("%.1f", cpu.get(c)[p]) : String.format("%+.1f", d);
                    if (!Double.isNaN(dt)) {
                        cell += off ? String.format(" (%.1f)", thread.get(c)[p]) : String.format(" (%+.1f)", dt);
                    }
                    line.append(String.format(" %20s", cell));
                }
                out.println(line + (off ? "   <- the base" : ""));
            }
            out.printf("%nload average at the end %.2f%n", OS.getSystemLoadAverage());
            return 0;
        } catch (Failed e) {
            out.flush();
            System.err.println("Bench --otel: FAILED: " + e.getMessage());
            return 1;
        } finally {
            tracerProvider.close();
            meterProvider.close();
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /** Flushes the SDK's spans (a batch processor holds some) and returns the exporter's count. */
    private static long spansSoFar(SdkTracerProvider tp, Discard exporter) throws Failed {
        if (!tp.forceFlush().join(30, TimeUnit.SECONDS).isSuccess()) throw new Failed("the span processor did not flush");
        return exporter.spans.get();
    }

    /** One run of configuration c on the queue db.prefix; dropped at the end. */
    static Run one(String uri, String db, String prefix, Config c, Telemetry telemetry, SdkTracerProvider tp,
                   Discard exporter, int n, int groups, int workers) throws Exception {
        PublishOptions[] opts = OPTIONS[c.attrs() == 0 ? 0 : 1];
        Run run = new Run();
        long[] spans = run.spans();
        Tally tally = new Tally(2 * n);
        List<Client> clients = new ArrayList<>();
        List<MongoMqQueue> queues = new ArrayList<>();
        try {
            for (int w = 0; w <= workers; w++) { // 0: the publisher's, also the claim+ack loop's
                Client cl = Client.connect(uri);
                clients.add(cl);
                MongoMqQueue q = cl.queue(db, prefix); // index creation before any timing
                queues.add(q);
                q.setTelemetry(telemetry);
            }
            MongoMqQueue pub = queues.get(0);
            long s0 = spansSoFar(tp, exporter);

            // 1. Single publishes: events 0..n-1.
            Phase phase = new Phase(run, 0, n);
            for (int i = 0; i < n; i++) {
                int g = i % groups;
                tally.published(i, pub.publish("g" + g, event(i), opts[g % 5]));
            }
            phase.stop(true);
            long s1 = spansSoFar(tp, exporter);
            spans[0] = s1 - s0;

            // 2. Batches of 10: events n..2n-1.
            phase = new Phase(run, 1, n);
            for (int i = n; i < 2 * n; ) {
                int first = i;
                try (Batch batch = new Batch()) {
                    for (int k = 0; k < 10 && i < 2 * n; k++, i++) {
                        int g = i % groups;
                        batch.add("g" + g, event(i), opts[g % 5]);
                    }
                    long seq = pub.publish(batch);
                    for (int j = first; j < i; j++) tally.published(j, seq + (j - first));
                }
            }
            phase.stop(true);
            long s2 = spansSoFar(tp, exporter);
            spans[1] = s2 - s1;

            // 3. Claim + ack by hand, one thread, n of the 2n (the claims take the groups round-robin).
            ClaimOptions claim = ClaimOptions.defaults().visibility(VIS);
            phase = new Phase(run, 2, n);
            for (int k = 0; k < n; k++) {
                Optional<Lease> got = pub.claim(claim);
                if (got.isEmpty()) throw new Failed(c + ": the claim+ack loop found the queue empty after " + k + " of " + n);
                try (Lease l = got.get()) {
                    pub.ack(l); // a lost lease throws: the run fails
                    tally.acked(l.event(), l.seq());
                }
            }
            phase.stop(true);
            long s3 = spansSoFar(tp, exporter);
            spans[2] = s3 - s2;

            // 4. W workers, each on a client of its own, drain the other n.
            CountDownLatch all = new CountDownLatch(1);
            ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
            List<Worker> running = new ArrayList<>();
            phase = new Phase(run, 3, n);
            try {
                for (int w = 1; w <= workers; w++) {
                    WorkerOptions wo = WorkerOptions.defaults().concurrency(1).visibility(VIS)
                            .workerId("bench-worker-" + w).onError(errors::add);
                    running.add(queues.get(w).worker(wo, lease -> {
                        if (tally.acked(lease.event(), lease.seq())) all.countDown();
                    }));
                }
                if (!all.await(n * 10L + 30_000, TimeUnit.MILLISECONDS)) {
                    throw new Failed(c + ": the workers handled " + (tally.distinct() - n) + " of " + n + " events in time");
                }
            } finally {
                for (Worker w : running) w.stop();
                for (Worker w : running) w.close();
            }
            phase.stop(false);
            spans[3] = spansSoFar(tp, exporter) - s3;

            // Every event acked exactly once, with its seq.
            List<String> problems = tally.problems();
            if (!errors.isEmpty()) problems.add("the workers reported " + errors.size() + " errors, the first: " + errors.peek());
            Stats st = pub.stats();
            if (st.messages() != 0 || st.dead() != 0) {
                problems.add("left on the queue: " + st.messages() + " messages, " + st.dead() + " dead letters");
            }
            long[] want = c.tracing().equals("sdk") ? new long[] {n, (n + 9) / 10, 0, 2L * n} : new long[4];
            if (!Arrays.equals(spans, want)) {
                problems.add("spans per phase " + Arrays.toString(spans) + ", expected " + Arrays.toString(want)
                        + (c.tracing().equals("sdk") ? " (send; send; none; process + ack): a span processor dropping spans?" : ""));
            }
            if (!problems.isEmpty()) throw new Failed(c + " on " + db + "." + prefix + ": " + String.join("; ", problems));
            pub.drop();
            return run;
        } finally {
            for (MongoMqQueue q : queues) q.close();
            for (Client cl : clients) cl.close();
        }
    }
}
