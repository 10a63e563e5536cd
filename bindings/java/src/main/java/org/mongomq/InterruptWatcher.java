package org.mongomq;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.mongomq.internal.mongomq_raw;

/**
 * Turns {@link Thread#interrupt()} of a thread blocked in a native waiting claim into
 * {@code mq_cancel_trigger} of that claim's own {@code mq_cancel}.
 *
 * <p>Java gives no hook for "this thread was interrupted" to code that is not blocked in
 * a JDK method, so one daemon thread looks at the interrupt status of each thread that
 * is in a waiting claim, every {@value #PERIOD_MS} ms, and only while there is one (it
 * parks otherwise). The claim returns within that period plus the library's ~10 ms.
 * The triggering and the claim's end are serialized on the registration, so a cancel
 * is never triggered after its claim destroyed it.
 */
final class InterruptWatcher {
    static final long PERIOD_MS = 10;

    static final class Registration implements AutoCloseable {
        private final Thread thread;
        private final long cancel;
        private boolean done;

        private Registration(Thread thread, long cancel) {
            this.thread = thread;
            this.cancel = cancel;
        }

        private synchronized void triggerIfInterrupted() {
            if (!done && thread.isInterrupted()) mongomq_raw.mq_cancel_trigger(cancel);
        }

        /** The claim is over: after this the cancel handle is never touched here. */
        @Override
        public void close() {
            synchronized (this) {
                done = true;
            }
            WAITING.remove(this);
        }
    }

    private static final Set<Registration> WAITING = ConcurrentHashMap.newKeySet();
    private static Thread watcher;

    private InterruptWatcher() {}

    static Registration register(Thread thread, long cancel) {
        Registration r = new Registration(thread, cancel);
        WAITING.add(r);
        LockSupport.unpark(watcher());
        return r;
    }

    private static synchronized Thread watcher() {
        if (watcher == null) {
            Thread t = new Thread(InterruptWatcher::run, "mongomq-interrupt-watcher");
            t.setDaemon(true);
            t.start();
            watcher = t;
        }
        return watcher;
    }

    private static void run() {
        while (true) {
            Thread.interrupted(); // nobody should interrupt this thread; if someone does, do not spin
            if (WAITING.isEmpty()) {
                LockSupport.park(); // register() unparks; a permit given before this park makes it return at once
                continue;
            }
            for (Registration r : WAITING) r.triggerIfInterrupted();
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(PERIOD_MS));
        }
    }
}
