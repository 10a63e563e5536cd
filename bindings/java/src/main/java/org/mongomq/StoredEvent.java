package org.mongomq;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One stored event as {@link MongoMqQueue#peek}, {@link MongoMqQueue#deadList} and
 * {@link MongoMqQueue#deadPage} show it, without
 * claiming it: the elements of {@code mq_peek_json} / {@code mq_dead_list_json}
 * (include/mongomq.h, "Looking without claiming") as Java values.
 *
 * @param seq         the event's sequence number
 * @param group       its group
 * @param priority    the priority it was published with
 * @param attempts    a dead letter's deliveries (0 for a live event: its group's lock counts them)
 * @param publishedAt when it was published (queue clock)
 * @param notBefore   for a scheduled event, when it becomes due
 * @param deadAt      for a dead letter, when it was moved to the dead letters
 * @param event       its bytes exactly as published ({@link #event()} returns a copy)
 * @param attrs       its attributes in publish order (0.7.0; unmodifiable, empty when it has none)
 */
public record StoredEvent(long seq, String group, int priority, int attempts, Instant publishedAt,
                          Optional<Instant> notBefore, Optional<Instant> deadAt, byte[] event,
                          Map<String, String> attrs) {

    public StoredEvent {
        event = event.clone();
        attrs = attrs == null || attrs.isEmpty() ? Collections.emptyMap()
                : Collections.unmodifiableMap(new LinkedHashMap<>(attrs));
    }

    /** A stored event without attributes (the constructor before 0.7.0). */
    public StoredEvent(long seq, String group, int priority, int attempts, Instant publishedAt,
                       Optional<Instant> notBefore, Optional<Instant> deadAt, byte[] event) {
        this(seq, group, priority, attempts, publishedAt, notBefore, deadAt, event, Collections.emptyMap());
    }

    /** The event's bytes (a copy: the record stays unchanged). */
    @Override
    public byte[] event() {
        return event.clone();
    }

    @Override
    public String toString() {
        return "StoredEvent{seq=" + seq + ", group=" + group + ", priority=" + priority + ", attempts=" + attempts
                + ", publishedAt=" + publishedAt + ", notBefore=" + notBefore + ", deadAt=" + deadAt
                + ", event=" + event.length + " bytes" + (attrs.isEmpty() ? "" : ", attrs=" + attrs) + "}";
    }

    static List<StoredEvent> parseList(String json) {
        return fromList(Json.parse(json));
    }

    /** The events of a parsed JSON array (a dead-letter page's "letters"). */
    @SuppressWarnings("unchecked")
    static List<StoredEvent> fromList(Object v) {
        if (!(v instanceof List)) throw new IllegalStateException("mongomq: expected a JSON array of events");
        List<StoredEvent> out = new ArrayList<>();
        for (Object o : (List<Object>) v) {
            if (!(o instanceof Map)) throw new IllegalStateException("mongomq: expected a JSON object per event");
            out.add(parse((Map<String, Object>) o));
        }
        return Collections.unmodifiableList(out);
    }

    @SuppressWarnings("unchecked")
    private static StoredEvent parse(Map<String, Object> m) {
        Object e = m.get("event");
        byte[] bytes;
        if (e instanceof String) {
            bytes = ((String) e).getBytes(StandardCharsets.UTF_8);
        } else if (e instanceof Map && ((Map<String, Object>) e).get("base64") instanceof String) {
            bytes = Base64.getDecoder().decode((String) ((Map<String, Object>) e).get("base64"));
        } else {
            bytes = new byte[0]; // a document mongomq did not write: no event of a known type
        }
        Object g = m.get("group");
        return new StoredEvent(num(m, "seq"), g instanceof String ? (String) g : "", (int) num(m, "priority"),
                (int) num(m, "attempts"), time(m, "published_at").orElse(null), time(m, "not_before"),
                time(m, "dead_at"), bytes, attrs(m));
    }

    /** "attrs": {key: value} in publish order (Json keeps an object's order); absent: none. */
    private static Map<String, String> attrs(Map<String, Object> m) {
        if (!(m.get("attrs") instanceof Map<?, ?> a)) return Collections.emptyMap();
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : a.entrySet())
            if (e.getKey() instanceof String k && e.getValue() instanceof String v) out.put(k, v);
        return out;
    }

    private static long num(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof Number ? ((Number) v).longValue() : 0;
    }

    private static Optional<Instant> time(Map<String, Object> m, String key) {
        Object v = m.get(key);
        return v instanceof Number ? Optional.of(Native.instant(((Number) v).doubleValue())) : Optional.empty();
    }
}
