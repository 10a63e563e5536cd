package org.mongomq;

import java.util.function.LongConsumer;

/**
 * One C handle and the rules that keep it from being freed while in use: every call
 * brackets its native work with {@link #acquire()}/{@link #release()}; {@link #close()}
 * (explicit, or the Cleaner's run) frees the handle at once when no call is running,
 * else when the last running call releases it. Exactly once either way.
 *
 * <p>It is the Cleaner's action, so it must never refer to the object that owns it.
 */
final class Handle implements Runnable {
    private final String what;
    private final long ptr;
    private final LongConsumer destroy;
    private int users;
    private boolean closed;
    private boolean freed;

    Handle(String what, long ptr, LongConsumer destroy) {
        this.what = what;
        this.ptr = ptr;
        this.destroy = destroy;
    }

    /** The pointer, for one call; {@link ClosedException} after close. */
    long acquire() {
        synchronized (this) {
            if (closed) throw new ClosedException(what);
            users++;
            return ptr;
        }
    }

    void release() {
        boolean free;
        synchronized (this) {
            users--;
            free = closed && users == 0 && !freed;
            if (free) freed = true;
        }
        if (free) destroy.accept(ptr);
    }

    /** Closes; a second close does nothing. */
    void close() {
        boolean free;
        synchronized (this) {
            if (closed) return;
            closed = true;
            free = users == 0 && !freed;
            if (free) freed = true;
        }
        if (free) destroy.accept(ptr);
    }

    synchronized boolean isClosed() {
        return closed;
    }

    /** The C handle was destroyed (for the tests: exactly once, after close). */
    synchronized boolean isFreed() {
        return freed;
    }

    @Override
    public void run() {
        close();
    }
}
