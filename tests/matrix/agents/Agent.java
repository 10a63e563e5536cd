// The matrix's Java agent: the line protocol of tests/matrix/README.md over the Java
// binding (bindings/java). Classpath: the binding's jar and, for tpublish/twork (tracing,
// through org.mongomq.otel), the OpenTelemetry jars the build copies to
// bindings/java/target/otel/ (javac/java -cp "JAR:bindings/java/target/otel/*").
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.mongomq.ClaimOptions;
import org.mongomq.Client;
import org.mongomq.Lease;
import org.mongomq.LeaseLostException;
import org.mongomq.MongoMqQueue;
import org.mongomq.PublishOptions;
import org.mongomq.QueueOptions;
import org.mongomq.Worker;
import org.mongomq.WorkerOptions;
import org.mongomq.otel.MongoMqTelemetry;

public class Agent {
    static Client client;
    static final Map<String, MongoMqQueue> queues = new HashMap<>();
    static MongoMqQueue heldQ;
    static Lease held;
    // Tracing (tpublish, twork): queues of their own, so that the plain commands' events
    // never carry a traceparent; the SDK made at first use.
    static final Map<String, MongoMqQueue> tracedQueues = new HashMap<>();
    static InMemorySpanExporter exporter;
    static MongoMqTelemetry telemetry;

    static MongoMqQueue traced(String db, String prefix) {
        if (telemetry == null) {
            exporter = InMemorySpanExporter.create();
            OpenTelemetrySdk sdk = OpenTelemetrySdk.builder()
                    .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build())
                    .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                    .build();
            telemetry = MongoMqTelemetry.create(sdk);
        }
        return tracedQueues.computeIfAbsent(db + " " + prefix, k -> {
            MongoMqQueue q = client.queue(db, prefix);
            q.setTelemetry(telemetry);
            return q;
        });
    }

    /** The one finished span whose name starts with op + " ", or null. */
    static SpanData finished(String op) {
        SpanData found = null;
        for (SpanData s : exporter.getFinishedSpanItems()) {
            if (s.getName().startsWith(op + " ") && (found == null || s.getStartEpochNanos() < found.getStartEpochNanos())) found = s;
        }
        return found;
    }

    /** tpublish DB PREFIX GROUPHEX EVENT TRACEID SPANID: ok SEQ SEND_TRACEID SEND_SPANID SEND_PARENT_SPANID. */
    static String tpublish(String[] w) {
        MongoMqQueue q = traced(w[1], w[2]);
        String group = new String(unhex(w[3]), StandardCharsets.UTF_8);
        SpanContext remote = SpanContext.createFromRemoteParent(w[5], w[6], TraceFlags.getSampled(), TraceState.getDefault());
        if (!remote.isValid()) return "err bad trace or span id";
        long seq;
        try (Scope s = Context.root().with(Span.wrap(remote)).makeCurrent()) {
            seq = q.publish(group, specBytes(w[4]), PublishOptions.defaults());
        }
        SpanData send = finished("send");
        exporter.reset();
        if (send == null) return "err no send span";
        return "ok " + seq + " " + send.getTraceId() + " " + send.getSpanId() + " " + send.getParentSpanId();
    }

    /**
     * twork DB PREFIX WAIT_S: a worker (concurrency 1, visibility 30 s) until its handler
     * handled one event (it stops the worker from there, so that no second is claimed) or
     * WAIT_S passed; ok SEQ PROC_TRACEID PROC_SPANID LINK_TRACEID LINK_SPANID ATTEMPTS
     * from the process span ("-" "-" for a link when it has none), or ok none.
     */
    static String twork(String[] w) throws InterruptedException {
        MongoMqQueue q = traced(w[1], w[2]);
        AtomicReference<Worker> worker = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1), handled = new CountDownLatch(1);
        AtomicLong seq = new AtomicLong(-1);
        Worker wk = q.worker(WorkerOptions.defaults().concurrency(1).visibility(Duration.ofSeconds(30)), lease -> {
            if (!seq.compareAndSet(-1, lease.seq())) return;
            started.await();
            worker.get().stop(); // no further claim; this handler still returns and is acked
            handled.countDown();
        });
        worker.set(wk);
        started.countDown();
        handled.await((long) (Double.parseDouble(w[3]) * 1000), TimeUnit.MILLISECONDS);
        wk.close();
        SpanData p = finished("process");
        exporter.reset();
        if (p == null) return "ok none";
        String link = "- -";
        if (!p.getLinks().isEmpty()) {
            LinkData l = p.getLinks().get(0);
            link = l.getSpanContext().getTraceId() + " " + l.getSpanContext().getSpanId();
        }
        Long attempts = p.getAttributes().get(AttributeKey.longKey("messaging.mongomq.message.attempts"));
        String msgId = p.getAttributes().get(AttributeKey.stringKey("messaging.message.id"));
        return "ok " + msgId + " " + p.getTraceId() + " " + p.getSpanId() + " " + link + " " + attempts;
    }

    static String fnv(byte[] b) {
        long h = 0xcbf29ce484222325L;
        for (byte c : b) {
            h ^= (c & 0xff);
            h *= 0x100000001b3L;
        }
        return String.format("%016x", h);
    }

    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte c : b) s.append(String.format("%02x", c & 0xff));
        return s.toString();
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static byte[] specBytes(String s) {
        if (s.equals("-")) return new byte[0];
        if (s.startsWith("big:")) {
            byte[] b = new byte[Integer.parseInt(s.substring(4))];
            for (int i = 0; i < b.length; i++) b[i] = (byte) (i % 251);
            return b;
        }
        return unhex(s);
    }

    /** The protocol's ATTRS (KEYHEX=VALUEHEX joined by ';', "-" for none), in its order. */
    static Map<String, String> specAttrs(String s) {
        Map<String, String> attrs = new LinkedHashMap<>();
        if (s.equals("-")) return attrs;
        for (String pair : s.split(";")) {
            int eq = pair.indexOf('=');
            attrs.put(new String(unhex(pair.substring(0, eq)), StandardCharsets.UTF_8),
                    new String(unhex(pair.substring(eq + 1)), StandardCharsets.UTF_8));
        }
        return attrs;
    }

    static String attrsWord(Map<String, String> attrs) {
        if (attrs.isEmpty()) return "-";
        List<String> pairs = new ArrayList<>();
        attrs.forEach((k, v) -> pairs.add(hex(k.getBytes(StandardCharsets.UTF_8)) + "="
                + hex(v.getBytes(StandardCharsets.UTF_8))));
        return String.join(";", pairs);
    }

    static double epoch(Instant t) {
        return t.getEpochSecond() + t.getNano() / 1e9;
    }

    static double wall() {
        return epoch(Instant.now());
    }

    static Duration secs(String s) {
        return Duration.ofNanos((long) (Double.parseDouble(s) * 1e9));
    }

    static String record(MongoMqQueue q, Lease l) {
        byte[] ev = l.event();
        return String.format("%d,%s,%d,%d,%s,%.6f,%s", l.seq(), hex(l.group().getBytes(StandardCharsets.UTF_8)),
                l.attempts(), ev.length, fnv(ev), epoch(q.now()), attrsWord(l.attrs()));
    }

    static Lease claim(MongoMqQueue q, String wait, String vis) {
        Optional<Lease> l = q.claim(ClaimOptions.defaults().visibility(secs(vis)).wait(secs(wait)));
        return l.orElse(null);
    }

    static String ack(MongoMqQueue q, Lease l) {
        try {
            q.ack(l);
            return "acked";
        } catch (LeaseLostException e) {
            return "lease_lost";
        } finally {
            l.close();
        }
    }

    /**
     * popen DB PREFIX P: a handle of P partitions in place of the one the agent had (kept
     * when the open fails), which every later command on DB PREFIX uses.
     */
    static MongoMqQueue popen(String db, String prefix, int partitions) {
        MongoMqQueue q = client.queue(db, prefix, QueueOptions.defaults().partitions(partitions));
        MongoMqQueue old = queues.put(db + " " + prefix, q);
        if (old != null && old != heldQ) old.close();
        return q;
    }

    static String handle(String[] w) throws InterruptedException {
        if (w[0].equals("tpublish")) return tpublish(w);
        if (w[0].equals("twork")) return twork(w);
        if (w[0].equals("ack_held")) {
            String st = ack(heldQ, held);
            held = null;
            return "ok " + st;
        }
        if (w[0].equals("popen")) return "ok " + popen(w[1], w[2], Integer.parseInt(w[3])).partitions();
        MongoMqQueue q = queues.computeIfAbsent(w[1] + " " + w[2], k -> client.queue(w[1], w[2]));
        switch (w[0]) {
            case "publish": {
                String group = new String(unhex(w[3]), StandardCharsets.UTF_8);
                byte[] data = specBytes(w[6]);
                PublishOptions opts = PublishOptions.defaults().priority(Integer.parseInt(w[4]));
                if (w.length > 7) opts = opts.attrs(specAttrs(w[7]));
                double delay = Double.parseDouble(w[5]);
                if (delay > 0) {
                    Instant at = q.now().plusNanos((long) (delay * 1e9));
                    long seq = q.publish(group, data, opts.notBefore(at));
                    return String.format("ok %d %.6f", seq, epoch(at));
                }
                return "ok " + q.publish(group, data, opts) + " 0";
            }
            case "claim": {
                List<String> out = new ArrayList<>(List.of("ok"));
                int n = Integer.parseInt(w[3]);
                for (int i = 0; i < n; i++) {
                    Lease l = claim(q, w[4], w[5]);
                    if (l == null) break;
                    out.add(record(q, l));
                    String st = ack(q, l);
                    if (!st.equals("acked")) return "err ack: " + st;
                }
                return String.join(" ", out);
            }
            case "drain": {
                long holdNanos = (long) (Double.parseDouble(w[5]) * 1e6);
                List<String> out = new ArrayList<>(List.of("ok"));
                for (Lease l; (l = claim(q, w[3], w[4])) != null; ) {
                    double t1 = wall();
                    try {
                        Thread.sleep(holdNanos / 1_000_000, (int) (holdNanos % 1_000_000));
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                    double t2 = wall();
                    out.add(String.format("%d,%s,%.6f,%.6f,%s", l.seq(),
                            hex(l.group().getBytes(StandardCharsets.UTF_8)), t1, t2, fnv(l.event())));
                    String st = ack(q, l);
                    if (!st.equals("acked")) return "err ack: " + st;
                }
                return String.join(" ", out);
            }
            case "hold": {
                Lease l = claim(q, w[3], w[4]);
                if (l == null) return "ok none";
                held = l;
                heldQ = q;
                return "ok " + record(q, l);
            }
            case "drop":
                q.drop();
                return "ok";
            default:
                return "err unknown op " + w[0];
        }
    }

    public static void main(String[] args) throws Exception {
        client = Client.connect(args[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split("\\s+");
            if (w[0].isEmpty()) continue;
            if (w[0].equals("quit")) break;
            String reply;
            try {
                reply = handle(w);
            } catch (RuntimeException e) {
                reply = "err " + e.getClass().getSimpleName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' ');
            }
            out.println(reply);
            out.flush();
        }
        for (MongoMqQueue q : queues.values()) q.close();
        for (MongoMqQueue q : tracedQueues.values()) q.close();
        client.close();
    }
}
