package org.mongomq;

import java.util.List;
import java.util.Map;

/**
 * A page of the dead letters ({@link MongoMqQueue#deadPage(long, int)}, {@code mq_dead_list_with}).
 *
 * @param letters up to the page's limit, oldest seq first (unmodifiable; empty past the end)
 * @param offset  the letters skipped before this page (the call's offset)
 * @param total   the dead letters in all
 * @since 0.5.0
 */
public record DeadPage(List<StoredEvent> letters, long offset, long total) {

    public DeadPage {
        letters = List.copyOf(letters);
    }

    @SuppressWarnings("unchecked")
    static DeadPage parse(String json) {
        Object v = Json.parse(json);
        if (!(v instanceof Map)) throw new IllegalStateException("mongomq: expected a JSON object for a dead-letter page");
        Map<String, Object> m = (Map<String, Object>) v;
        Object offset = m.get("offset");
        Object total = m.get("total");
        if (!(offset instanceof Number) || !(total instanceof Number))
            throw new IllegalStateException("mongomq: a dead-letter page without \"offset\" or \"total\"");
        return new DeadPage(StoredEvent.fromList(m.get("letters")), ((Number) offset).longValue(),
                ((Number) total).longValue());
    }
}
