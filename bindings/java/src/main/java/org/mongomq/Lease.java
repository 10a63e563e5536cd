package org.mongomq;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.mongomq.internal.mongomq_raw;

/**
 * A claimed group: its head event and, for a batch claim, the events after it, in
 * publish order. A plain value: it may outlive the queue it came from.
 *
 * <p>Its fields are copied out of the C lease once, at the claim. {@link MongoMqQueue#ack},
 * {@link MongoMqQueue#nack} and {@link MongoMqQueue#unclaim} finish the lease: they
 * free its C side at once (a later ack, nack, unclaim or extend of it is a
 * {@link LeaseLostException}); the fields stay readable until {@link #close()}. A lease
 * that is neither finished nor closed is freed by the garbage collector. After close,
 * every method throws {@link ClosedException}.
 */
public final class Lease implements AutoCloseable {
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final long seq;
    private final String group;
    private final String token;
    private final int attempts;
    private final int partition;
    private final long[] seqs;
    private final List<byte[]> events;
    private final List<Map<String, String>> attrs; // per event, unmodifiable, in publish order
    private volatile double deadline;
    private volatile boolean finished;
    private volatile boolean closed;

    /** Takes ownership of a C lease. */
    Lease(long ptr) {
        this.handle = new Handle("lease", ptr, mongomq_raw::mq_lease_destroy);
        this.cleanable = Native.CLEANER.register(this, handle);
        this.seq = mongomq_raw.mq_lease_seq(ptr);
        this.group = mongomq_raw.mq_lease_group(ptr);
        this.token = mongomq_raw.mq_lease_token(ptr);
        this.attempts = mongomq_raw.mq_lease_attempts(ptr);
        this.partition = mongomq_raw.mq_lease_partition(ptr);
        this.deadline = mongomq_raw.mq_lease_deadline(ptr);
        int n = (int) mongomq_raw.mq_lease_count(ptr);
        this.seqs = new long[n];
        List<byte[]> ev = new ArrayList<>(n);
        List<Map<String, String>> at = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            seqs[i] = mongomq_raw.mq_lease_seq_at(ptr, i);
            ev.add(mongomq_raw.mqs_lease_event_at(ptr, i));
            at.add(attrsOf(ptr, i));
        }
        this.events = Collections.unmodifiableList(ev);
        this.attrs = Collections.unmodifiableList(at);
    }

    /** Event i's attributes, copied out of the C lease in publish order. */
    private static Map<String, String> attrsOf(long ptr, int i) {
        int n = (int) mongomq_raw.mq_lease_attr_count(ptr, i);
        if (n == 0) return Collections.emptyMap();
        Map<String, String> m = new LinkedHashMap<>();
        for (int j = 0; j < n; j++) m.put(mongomq_raw.mqs_lease_attr_key(ptr, i, j), mongomq_raw.mqs_lease_attr_value(ptr, i, j));
        return Collections.unmodifiableMap(m);
    }

    private void open() {
        if (closed) throw new ClosedException("lease");
    }

    /** The head event's sequence number. */
    public long seq() {
        open();
        return seq;
    }

    /** The group id. */
    public String group() {
        open();
        return group;
    }

    /** The head event's bytes, exactly as published (the array is this lease's copy). */
    public byte[] event() {
        open();
        return events.get(0);
    }

    /**
     * The head event as text: its bytes decoded as UTF-8.
     *
     * @throws IllegalStateException the bytes are not valid UTF-8 (nothing is replaced)
     */
    public String text() {
        return text(0);
    }

    /** The i-th event as text (0 is the head); as {@link #text()}. */
    public String text(int i) {
        open();
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(events.get(i))).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("the event (seq " + seqs[i] + ") is not valid UTF-8", e);
        }
    }

    /**
     * The head event parsed as JSON (its text, {@link #text()}), as plain Java values:
     * an object is a {@code Map<String, Object>} (in the event's key order), an array a
     * {@code List<Object>}, a whole number a {@code Long} (a {@code BigInteger} beyond
     * long), any other number a {@code Double}, and {@code String}, {@code Boolean} or
     * null. Without a JSON library on the classpath; for typed objects give
     * {@link #text()} to the one you use.
     *
     * @throws IllegalStateException the event is not UTF-8 or not JSON
     */
    public Object json() {
        return json(0);
    }

    /** The i-th event parsed as JSON (0 is the head); as {@link #json()}. */
    public Object json(int i) {
        return Json.parse(text(i), "the event (seq " + seqs[i] + ")");
    }

    /** Deliveries of the head event so far: 1 on its first delivery. */
    public int attempts() {
        open();
        return attempts;
    }

    /**
     * The partition of the group ({@link MongoMqQueue#groupPartition(String, int)} of
     * the queue's {@link MongoMqQueue#partitions()}); 0 in a queue of one partition.
     *
     * @since 0.8.0
     */
    public int partition() {
        open();
        return partition;
    }

    /** The lease's fencing token. */
    public String token() {
        open();
        return token;
    }

    /** When the lease runs out, on the queue's clock; moved by {@link MongoMqQueue#extend}. */
    public Instant deadline() {
        open();
        return Native.instant(deadline);
    }

    /** Events in this lease (1 unless it came from a batch claim). */
    public int count() {
        open();
        return seqs.length;
    }

    /** The i-th event's sequence number (0 is the head). */
    public long seq(int i) {
        open();
        return seqs[i];
    }

    /** The i-th event's bytes (0 is the head). */
    public byte[] event(int i) {
        open();
        return events.get(i);
    }

    /** All events of the lease, head first. */
    public List<byte[]> events() {
        open();
        return events;
    }

    /**
     * The head event's attributes (0.7.0), in publish order: an unmodifiable map, empty
     * when it has none.
     *
     * @since 0.7.0
     */
    public Map<String, String> attrs() {
        return attrsAt(0);
    }

    /**
     * The i-th event's attributes (0 is the head), as {@link #attrs()}.
     *
     * @throws IndexOutOfBoundsException i is not 0..count()-1
     * @since 0.7.0
     */
    public Map<String, String> attrsAt(int i) {
        open();
        return attrs.get(i);
    }

    /**
     * The value of the head event's attribute {@code key}; empty when it has none (a
     * value may be "").
     *
     * @since 0.7.0
     */
    public Optional<String> attr(String key) {
        open();
        if (key == null) throw new IllegalArgumentException("key must not be null");
        return Optional.ofNullable(attrs.get(0).get(key));
    }

    /** The C lease for one call; lease lost when already acked, nacked or given back. */
    long acquire() {
        open();
        if (finished) {
            throw new LeaseLostException(0, "lease of group \"" + group + "\" (seq " + seq
                    + ") was already acked, nacked or given back");
        }
        try {
            return handle.acquire();
        } catch (MongoMqException e) {
            if (finished) throw new LeaseLostException(0, "lease was already acked, nacked or given back");
            throw e;
        }
    }

    void release() {
        handle.release();
    }

    void refreshDeadline(long ptr) {
        deadline = mongomq_raw.mq_lease_deadline(ptr);
    }

    /** After ack, nack or unclaim: the C lease goes (once no other call uses it); the fields stay. */
    void finish() {
        finished = true;
        cleanable.clean();
    }

    /** Frees the lease. Twice does nothing. */
    @Override
    public void close() {
        closed = true;
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Lease{group=" + group + ", seq=" + seq + ", count=" + seqs.length + ", attempts=" + attempts + "}";
    }

    /** For the tests. */
    Handle handle() {
        return handle;
    }
}
