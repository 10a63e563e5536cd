package org.mongomq;

import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.mongomq.internal.mongomq_raw;

/**
 * How the core applies a queue's {@link Telemetry}: the traced publishes (a send around
 * the library's publish, its headers put into the events' attributes within the
 * attribute bounds), and the workers' process and settle steps, each a no-op when the
 * queue has no telemetry (their Processing is then null). Nothing here names a tracing
 * library.
 */
final class Tracing {
    private Tracing() {}

    /** Set once some queue of this JVM was given a telemetry (see {@link Batch}). */
    private static volatile boolean used;

    /** A queue was given a telemetry: from now on each new {@link Batch} keeps its events for injection. */
    static void used() {
        used = true;
    }

    static boolean everUsed() {
        return used;
    }

    // ---- publish ---------------------------------------------------------------------

    /** A single publish with its send: the headers injected, the seq (or the failure) reported. */
    static Published publish(MongoMqQueue queue, Telemetry t, String groupId, byte[] event, PublishOptions options) {
        Telemetry.Sending send = t.startSend(queue.name(), groupId, 1);
        Published p;
        try {
            p = queue.publishNative(groupId, event, withHeaders(options, send.headers()));
        } catch (RuntimeException | Error e) {
            send.end(-1, e);
            throw e;
        }
        send.end(p.seq(), null);
        return p;
    }

    /** A batch publish with its send: one for the whole batch, its headers in every event. */
    static Batch.Outcome publish(MongoMqQueue queue, long queueHandle, Telemetry t, Batch batch, boolean outcomes) {
        Telemetry.Sending send = t.startSend(queue.name(), null, batch.size());
        Batch.Outcome o;
        try {
            o = batch.publishTo(queueHandle, outcomes, send.headers());
        } catch (RuntimeException | Error e) {
            send.end(-1, e);
            throw e;
        }
        send.end(-1, null);
        return o;
    }

    /**
     * {@code options} with the headers after the event's own attributes: each header whose
     * key the event does not have, while there is room (MQ_ATTR_MAX) and the key and value
     * are within the library's bounds; the others are left out, never an error (tracing
     * never fails a publish). The options themselves when nothing is added.
     */
    static PublishOptions withHeaders(PublishOptions options, Map<String, String> headers) {
        if (headers == null || headers.isEmpty()) return options;
        Map<String, String> own = options.attrs();
        Map<String, String> merged = null;
        int n = own.size();
        for (Map.Entry<String, String> h : headers.entrySet()) {
            String k = h.getKey(), v = h.getValue();
            if (n >= mongomq_raw.MQ_ATTR_MAX || own.containsKey(k) || !fits(k, v)) continue;
            if (merged == null) merged = new LinkedHashMap<>(own);
            merged.put(k, v);
            n++;
        }
        if (merged == null) return options;
        try {
            return options.attrs(merged);
        } catch (IllegalArgumentException e) {
            return options; // not expected after fits(): the event goes out with its own
        }
    }

    /** A key and value the library takes (mongomq.h, "Event attributes"). */
    static boolean fits(String key, String value) {
        if (key == null || value == null || key.isEmpty() || key.length() > mongomq_raw.MQ_ATTR_KEY_MAX) return false;
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
                    || c == '-' || c == '.';
            if (!ok) return false; // ASCII only: one char is one byte
        }
        if (value.indexOf('\0') >= 0 || value.length() > mongomq_raw.MQ_ATTR_VALUE_MAX) return false;
        CharsetEncoder enc = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            return enc.encode(CharBuffer.wrap(value)).remaining() <= mongomq_raw.MQ_ATTR_VALUE_MAX;
        } catch (CharacterCodingException e) {
            return false; // an unpaired surrogate
        }
    }

    // ---- the workers -----------------------------------------------------------------

    /** The process of a lease a worker is about to hand to its handler; null when the queue has no telemetry. */
    static Telemetry.Processing startProcess(MongoMqQueue queue, Lease lease) {
        Telemetry t = queue.telemetry();
        return t == null ? null : t.startProcess(queue.name(), lease);
    }

    /** The process made current for the handler (null: nothing to close, in a try-with-resources). */
    static Telemetry.Scope current(Telemetry.Processing p) {
        return p == null ? null : p.makeCurrent();
    }

    static void handled(Telemetry.Processing p, Throwable failure) {
        if (p != null) p.handled(failure);
    }

    /** The worker's ack or nack ({@code operation}), inside its settle. */
    static void settle(Telemetry.Processing p, String operation, Runnable call) {
        Telemetry.Settling s = p == null ? null : p.settle(operation);
        try {
            call.run();
        } catch (RuntimeException | Error e) {
            if (s != null) s.end(e);
            throw e;
        }
        if (s != null) s.end(null);
    }

    static void end(Telemetry.Processing p) {
        if (p != null) p.end();
    }
}
