package org.mongomq;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How {@link MongoMqQueue#publish(String, byte[], PublishOptions)} and
 * {@link Batch#add(String, byte[], PublishOptions)} publish an event ({@code mq_publish_opts}):
 * immutable, each method returns a new options object, checked at once.
 *
 * <pre>{@code
 * PublishOptions urgent = PublishOptions.defaults().priority(4);
 * queue.publish("customer-17", event, urgent);
 * queue.publish("customer-17", event, urgent.notBefore(queue.now().plusSeconds(60)));
 * Published p = queue.publishWith("customer-17", event, urgent.dedupKey("order-17-charge"));
 * queue.publish("customer-17", event, P.attrs(Map.of("tenant.id", "t-42")));
 * }</pre>
 */
public final class PublishOptions {
    private static final PublishOptions DEFAULTS = new PublishOptions(0, null, null, Collections.emptyMap(), null);

    private final int priority;
    private final Instant notBefore; // null: now
    private final String dedupKey; // null: none
    private final Map<String, String> attrs; // unmodifiable, in the caller's order
    private final byte[] packedAttrs; // attrs as the shims take them; null: none

    private PublishOptions(int priority, Instant notBefore, String dedupKey, Map<String, String> attrs,
                           byte[] packedAttrs) {
        this.priority = priority;
        this.notBefore = notBefore;
        this.dedupKey = dedupKey;
        this.attrs = attrs;
        this.packedAttrs = packedAttrs;
    }

    /** Priority 0, due at once, no dedup key, no attributes. */
    public static PublishOptions defaults() {
        return DEFAULTS;
    }

    /**
     * The group's priority, 0..4 (default 0): it counts only when this publish creates
     * the group (a group keeps its priority until it is drained).
     */
    public PublishOptions priority(int priority) {
        Native.priority("priority", priority);
        return new PublishOptions(priority, notBefore, dedupKey, attrs, packedAttrs);
    }

    /**
     * Not delivered before this instant of the queue's clock ({@link MongoMqQueue#now()});
     * default: due at once. FIFO stays strict: its group waits for it.
     *
     * @throws IllegalArgumentException null, or before the epoch
     */
    public PublishOptions notBefore(Instant notBefore) {
        if (notBefore == null) throw new IllegalArgumentException("notBefore must not be null (leave it unset for now)");
        if (notBefore.getEpochSecond() < 0) throw new IllegalArgumentException("notBefore must not be before the epoch");
        return new PublishOptions(priority, notBefore, dedupKey, attrs, packedAttrs);
    }

    /**
     * Publishes exactly once (0.6.0): while an event published with this key is in the
     * queue, and for the dedup window after its publish ({@link
     * MongoMqQueue#setDedupWindow(java.time.Duration)}, 5 minutes by default) even once it was
     * acked, a publish with the same key adds nothing and reports the first event's seq
     * as a duplicate ({@link MongoMqQueue#publishWith(String, byte[], PublishOptions)}).
     * So a publish retried with its key after any failure (a {@link
     * MongoMqConnectException}: a lost reply, a step-down) leaves exactly one event.
     * 1..512 bytes of UTF-8, checked by the library when the event is published or added
     * to a batch (an empty or longer key is then an {@link IllegalArgumentException}
     * naming {@code dedup_key}); {@code null} (the default): no key.
     *
     * @throws IllegalArgumentException the key contains a NUL character
     * @since 0.6.0
     */
    public PublishOptions dedupKey(String dedupKey) {
        Native.text("dedupKey", dedupKey);
        return new PublishOptions(priority, notBefore, dedupKey, attrs, packedAttrs);
    }

    /**
     * The event's attributes (0.7.0): string keys and values published beside its bytes,
     * for what a consumer needs before it reads the event (a content type, a tenant) and
     * for trace context (W3C {@code traceparent}). Sent in the map's iteration order (a
     * {@code LinkedHashMap}'s insertion order; {@code Map.of} has none of its own), and
     * {@link Lease#attrs()}, peek and the dead list give them back in it; they stay with
     * the event through nack, lease expiry, the dead letters and a requeue. Up to 16, keys
     * 1..128 bytes of ASCII letters, digits, {@code _ - .}, values 0..4096 bytes of UTF-8:
     * checked by the library when the event is published or added to a batch (anything
     * else is then an {@link IllegalArgumentException} naming the attribute). A copy is
     * kept: changing the map afterwards changes nothing. An empty map: none (the
     * default).
     *
     * @throws IllegalArgumentException the map, a key or a value is null, or a key or value
     *                                  contains a NUL character or an unpaired surrogate
     *                                  (which UTF-8 cannot carry), naming it
     * @since 0.7.0
     */
    public PublishOptions attrs(Map<String, String> attrs) {
        if (attrs == null) throw new IllegalArgumentException("attrs must not be null (an empty map is none)");
        Map<String, String> copy = new LinkedHashMap<>();
        ByteArrayOutputStream packed = new ByteArrayOutputStream();
        int i = 0;
        for (Map.Entry<String, String> e : attrs.entrySet()) {
            String k = e.getKey(), v = e.getValue();
            if (k == null) throw new IllegalArgumentException("attrs: key " + i + " is null");
            if (v == null) throw new IllegalArgumentException("attrs: the value of " + quote(k) + " is null (an empty value is \"\")");
            packed.writeBytes(utf8("attrs: key " + i + " " + quote(k), k));
            packed.write(0);
            packed.writeBytes(utf8("attrs: the value of " + quote(k), v));
            packed.write(0);
            copy.put(k, v);
            i++;
        }
        if (copy.isEmpty()) return new PublishOptions(priority, notBefore, dedupKey, Collections.emptyMap(), null);
        return new PublishOptions(priority, notBefore, dedupKey, Collections.unmodifiableMap(copy), packed.toByteArray());
    }

    /** A key as a message shows it: quoted, a NUL as \\u0000. */
    private static String quote(String key) {
        return "\"" + key.replace("\0", "\\u0000") + "\"";
    }

    /** s as UTF-8 for the packing ("key NUL value NUL ..."), which a NUL would split. */
    private static byte[] utf8(String what, String s) {
        if (s.indexOf('\0') >= 0) throw new IllegalArgumentException(what + " contains a NUL character");
        try {
            ByteBuffer b = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).encode(CharBuffer.wrap(s));
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(what + " contains an unpaired surrogate (not encodable as UTF-8)", e);
        }
    }

    public int priority() {
        return priority;
    }

    /** Empty: due at once. */
    public Optional<Instant> notBefore() {
        return Optional.ofNullable(notBefore);
    }

    /** Empty: no dedup key. */
    public Optional<String> dedupKey() {
        return Optional.ofNullable(dedupKey);
    }

    /** The attributes, in their order (unmodifiable; empty: none). */
    public Map<String, String> attrs() {
        return attrs;
    }

    /** The attributes as the shims take them ("key NUL value NUL ..."); null for none. */
    byte[] packedAttrs() {
        return packedAttrs;
    }

    /** The shim's has_key: 0 for none. */
    int hasDedupKey() {
        return dedupKey == null ? 0 : 1;
    }

    /** The shim's not-before: epoch seconds, 0 for now. */
    double notBeforeEpochSeconds() {
        if (notBefore == null) return 0;
        double at = Native.epochSeconds(notBefore);
        return at == 0 ? Double.MIN_VALUE : at; // the shim reads 0 as "now"; the epoch itself is long past anyway
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PublishOptions p && p.priority == priority && Objects.equals(p.notBefore, notBefore)
                && Objects.equals(p.dedupKey, dedupKey)
                && Arrays.equals(p.packedAttrs, packedAttrs); // the attributes and their order
    }

    @Override
    public int hashCode() {
        return Objects.hash(priority, notBefore, dedupKey, Arrays.hashCode(packedAttrs));
    }

    @Override
    public String toString() {
        return "PublishOptions{priority=" + priority + (notBefore == null ? "" : ", notBefore=" + notBefore)
                + (dedupKey == null ? "" : ", dedupKey=" + dedupKey) + (attrs.isEmpty() ? "" : ", attrs=" + attrs) + "}";
    }
}
