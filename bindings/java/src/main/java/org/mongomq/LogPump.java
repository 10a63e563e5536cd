package org.mongomq;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.mongomq.internal.mongomq_raw;

/**
 * The process-wide log handler behind {@link Client#setLogHandler(LogHandler)} and the
 * default one ({@link LogHandler#systemLogger()}, installed by the first
 * {@link Client#connect} unless a handler was set before or MONGOMQ_LIBMONGOC_LOG=keep). The
 * SWIG shim's handler (mqs_log_capture) buffers libmongoc's lines in C, from any of
 * libmongoc's threads; one daemon thread of ours ("mongomq-log", started by the first
 * handler) takes them out (mqs_log_next) and calls the current handler. The library
 * never calls into the JVM.
 *
 * <p>The handler runs under {@link #LOCK}, which {@link #set} takes too: once
 * {@code set} returns, the handler it replaced is never called again. The lock is
 * reentrant, so a handler may call {@code setLogHandler} itself.
 */
final class LogPump {
    private static final ReentrantLock LOCK = new ReentrantLock();
    private static final Condition HANDLER_SET = LOCK.newCondition();
    /** Guarded by LOCK. */
    private static LogHandler handler;
    /** Guarded by LOCK; started once, runs for the life of the process. */
    private static Thread thread;
    /** Guarded by LOCK: the default was installed, or a handler was set before it could be. */
    private static boolean decided;

    private static final System.Logger LOGGER = System.getLogger("mongomq");

    /** libmongoc's levels as System.Logger's: 0, 1 ERROR; 2 WARNING; 3, 4 INFO; 5, 6 DEBUG. */
    static System.Logger.Level level(int mongocLevel) {
        if (mongocLevel <= 1) return System.Logger.Level.ERROR;
        if (mongocLevel == 2) return System.Logger.Level.WARNING;
        if (mongocLevel <= 4) return System.Logger.Level.INFO;
        return System.Logger.Level.DEBUG;
    }

    static final LogHandler SYSTEM_LOGGER = (level, domain, message) -> {
        System.Logger.Level l = level(level);
        if (LOGGER.isLoggable(l)) LOGGER.log(l, domain.isEmpty() ? message : domain + ": " + message);
    };

    /** How long one mqs_log_next waits for a line, in seconds. */
    private static final double POLL_S = 0.25;

    private LogPump() {}

    /**
     * Called before every new client: the first time, unless a handler was set already
     * or the environment says MONGOMQ_LIBMONGOC_LOG=keep (libmongoc's own handler, or
     * the program's, stays), routes libmongoc's log into System.Logger "mongomq".
     */
    static void installDefault() {
        LOCK.lock();
        try {
            if (decided) return;
            decided = true;
            if ("keep".equals(System.getenv("MONGOMQ_LIBMONGOC_LOG"))) return;
            install(SYSTEM_LOGGER);
        } finally {
            LOCK.unlock();
        }
    }

    static void set(LogHandler h) {
        LOCK.lock();
        try {
            decided = true;
            install(h);
        } finally {
            LOCK.unlock();
        }
    }

    /** Under LOCK. */
    private static void install(LogHandler h) {
        handler = h;
        if (h == null) {
            mongomq_raw.mqs_log_silence();
            return;
        }
        mongomq_raw.mqs_log_capture();
        if (thread == null) {
            Thread t = new Thread(LogPump::run, "mongomq-log");
            t.setDaemon(true);
            t.start();
            thread = t;
        }
        HANDLER_SET.signalAll();
    }

    /** The log thread, for the tests. */
    static Thread thread() {
        LOCK.lock();
        try {
            return thread;
        } finally {
            LOCK.unlock();
        }
    }

    private static void run() {
        for (;;) {
            // Silenced: nothing is buffered; sleep until a handler is set again.
            LOCK.lock();
            try {
                while (handler == null) HANDLER_SET.awaitUninterruptibly();
            } finally {
                LOCK.unlock();
            }
            String line = mongomq_raw.mqs_log_next(POLL_S);
            if (line == null) continue;
            LOCK.lock();
            try {
                LogHandler h = handler;
                if (h != null) deliver(h, line); // else: taken just before a silence, dropped
            } finally {
                LOCK.unlock();
            }
        }
    }

    /** "LEVEL\tDOMAIN\tMESSAGE", split at the first two tabs (the message may hold more). */
    private static void deliver(LogHandler h, String line) {
        int a = line.indexOf('\t');
        int b = a < 0 ? -1 : line.indexOf('\t', a + 1);
        int level;
        String domain;
        String message;
        try {
            level = Integer.parseInt(line.substring(0, a < 0 ? line.length() : a));
        } catch (NumberFormatException e) {
            level = 3; // not the shim's format (it always is): a plain message
        }
        if (b < 0) {
            domain = a < 0 ? "" : line.substring(a + 1);
            message = "";
        } else {
            domain = line.substring(a + 1, b);
            message = line.substring(b + 1);
        }
        try {
            h.log(level, domain, message);
        } catch (Throwable t) {
            // A background error: reported on stderr, the thread goes on.
            System.err.println("mongomq: the log handler threw (the log thread goes on):");
            t.printStackTrace();
        }
    }
}
