package org.mongomq;

import java.lang.ref.Cleaner;
import org.mongomq.internal.mongomq_raw;

/**
 * A connection pool to one MongoDB deployment ({@code mq_client}); thread-safe. Make
 * one per process and open queues from it.
 *
 * <p>{@link #close()} ends it; queues opened from it keep it alive until they are
 * closed too, so closing the client first is safe. If neither is closed, the garbage
 * collector frees both (a Cleaner), in any order.
 */
public final class Client implements AutoCloseable {
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    private Client(long ptr) {
        this.handle = new Handle("client", ptr, mongomq_raw::mq_client_destroy);
        this.cleanable = Native.CLEANER.register(this, handle);
    }

    /**
     * Opens a connection pool for a MongoDB URI ("mongodb://host:port/?opts"). Does not
     * contact the server (the first queue does).
     *
     * @throws IllegalArgumentException a malformed URI
     */
    public static Client connect(String uri) {
        if (uri == null) throw new IllegalArgumentException("uri must not be null");
        Native.text("uri", uri);
        LogPump.installDefault(); // before the client, whose URI warnings are the first lines
        return new Client(mongomq_raw.mq_client_new(uri));
    }

    /**
     * Opens the queue {@code db.prefix_*}, creating its indexes and measuring the
     * server's clock (so an unreachable server shows up here as a
     * {@link MongoMqConnectException}).
     *
     * @param db     database name; null for "mongomq"
     * @param prefix collection prefix; null for "mq"
     */
    public MongoMqQueue queue(String db, String prefix) {
        return queue(db, prefix, QueueOptions.defaults());
    }

    /**
     * {@link #queue(String, String)} with options: {@link QueueOptions#partitions(int)}
     * (a queue of several partitions; a queue opened before with another number of them
     * is an {@link IllegalArgumentException} naming the number it has).
     *
     * @since 0.8.0
     */
    public MongoMqQueue queue(String db, String prefix, QueueOptions options) {
        Native.text("db", db);
        Native.text("prefix", prefix);
        if (options == null) throw new IllegalArgumentException("options must not be null");
        long c = handle.acquire(); // held by the queue until it is freed
        try {
            long q = mongomq_raw.mqs_queue_new_with(c, db, prefix, options.partitions());
            return new MongoMqQueue(this, handle, q, (db == null ? "mongomq" : db) + "." + (prefix == null ? "mq" : prefix));
        } catch (RuntimeException | Error e) {
            handle.release();
            throw e;
        }
    }

    /** Commands this client has sent to the server so far (monotonic). */
    public long commandCount() {
        long c = handle.acquire();
        try {
            return mongomq_raw.mq_client_command_count(c);
        } finally {
            handle.release();
        }
    }

    /**
     * Writes this client sent that the server applied but whose write concern it could
     * not confirm (they may be rolled back if the primary fails before they replicate).
     * Monotonic; 0 on a healthy deployment.
     */
    public long writeConcernErrors() {
        long c = handle.acquire();
        try {
            return mongomq_raw.mq_client_write_concern_errors(c);
        } finally {
            handle.release();
        }
    }

    /**
     * Routes libmongoc's log (the driver's lines: connection trouble, URI warnings, ...)
     * to {@code handler}, or silences it ({@code null}), replacing the default.
     *
     * <p><b>The default</b>: when the first {@code Client} is made, mongomq routes
     * libmongoc's log into {@link System.Logger} "mongomq" ({@link LogHandler#systemLogger()}:
     * levels 0 and 1 as ERROR, 2 WARNING, 3 and 4 INFO, 5 and 6 DEBUG), so it follows
     * the program's logging configuration instead of libmongoc printing to stderr. A
     * program that uses libmongoc itself and keeps its own handler either starts the JVM
     * with the environment variable {@code MONGOMQ_LIBMONGOC_LOG=keep} (mongomq then
     * never installs its default) or calls this method before its first client (an
     * explicit handler, or null to silence, replaces the default for good).
     *
     * <p>Process-wide: this replaces libmongoc's process-wide log handler, for every
     * user of libmongoc in the process. {@code null} silences libmongoc (it does not
     * bring back libmongoc's stderr default).
     *
     * <p>libmongoc's lines are buffered in C (up to 1024; beyond that the oldest are
     * dropped) and handed to {@code handler} on one daemon thread of the binding's,
     * "mongomq-log", started by the first non-null handler; the library never calls into
     * the JVM from its own threads. Levels are libmongoc's: 0 error, 1 critical,
     * 2 warning, 3 message, 4 info, 5 debug, 6 trace. An exception thrown by the handler
     * is printed to stderr and the thread goes on.
     *
     * <p>When this returns, the handler it replaced (or silenced) is not called again: a
     * call of it in progress on the log thread has returned (a handler may call this
     * method itself). Lines buffered and not yet delivered when the handler is set to
     * {@code null} are dropped.
     *
     * <pre>{@code
     * Client.setLogHandler((level, domain, message) -> {
     *     if (level <= 2) System.err.println("mongoc " + domain + ": " + message);
     * });
     * }</pre>
     *
     * @param handler the new handler; null silences libmongoc
     */
    public static void setLogHandler(LogHandler handler) {
        LogPump.set(handler);
    }

    /** The native library's version ("0.8.0"). */
    public static String libraryVersion() {
        return mongomq_raw.mq_version();
    }

    /** Closes the client; the connection pool goes once no queue of it is open. Twice does nothing. */
    @Override
    public void close() {
        cleanable.clean();
    }

    boolean isClosed() {
        return handle.isClosed();
    }

    /** For the tests. */
    Handle handle() {
        return handle;
    }
}
