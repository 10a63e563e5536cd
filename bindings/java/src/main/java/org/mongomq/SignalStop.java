package org.mongomq;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGINT and SIGTERM for the workers ({@link Worker}, {@link AsyncWorker}) started with
 * {@code handleSignals(true)}: while at
 * least one runs, either signal stops them all gracefully (Sidekiq's TERM) instead of
 * the JVM's default (run the shutdown hooks and exit 130/143); when the last one ends,
 * the handlers that were there before are put back. One registry for the process, so
 * that workers ending in any order never put back another worker's handler.
 *
 * <p>{@code sun.misc.Signal} (module jdk.unsupported) is the JDK's only way to catch a
 * signal; a shutdown hook cannot stop the exit, only delay it.
 */
final class SignalStop {
    private static final System.Logger LOG = System.getLogger("mongomq");
    private static final String[] SIGNALS = {"INT", "TERM"};

    /** Guarded by the class: each worker and its stop. */
    private static final Map<Object, Runnable> WORKERS = new LinkedHashMap<>();
    /** Guarded by the class: the handlers to put back, while WORKERS is not empty. */
    private static final Map<Signal, SignalHandler> PREVIOUS = new LinkedHashMap<>();

    private SignalStop() {}

    static synchronized void register(Object w, Runnable stop) {
        if (WORKERS.isEmpty()) {
            try {
                for (String name : SIGNALS) {
                    Signal s = new Signal(name);
                    PREVIOUS.put(s, Signal.handle(s, SignalStop::onSignal));
                }
            } catch (IllegalArgumentException e) {
                restore();
                throw new IllegalStateException("handleSignals: cannot handle SIGINT/SIGTERM in this JVM", e);
            }
        }
        WORKERS.put(w, stop);
    }

    static synchronized void unregister(Object w) {
        if (WORKERS.remove(w) != null && WORKERS.isEmpty()) restore();
    }

    private static void restore() {
        for (Map.Entry<Signal, SignalHandler> e : PREVIOUS.entrySet()) Signal.handle(e.getKey(), e.getValue());
        PREVIOUS.clear();
    }

    private static void onSignal(Signal s) {
        List<Runnable> ws;
        synchronized (SignalStop.class) {
            ws = new ArrayList<>(WORKERS.values());
        }
        LOG.log(System.Logger.Level.INFO, "mongomq: SIG" + s.getName() + ": stopping " + ws.size() + " worker(s) gracefully");
        for (Runnable stop : ws) stop.run();
    }
}
