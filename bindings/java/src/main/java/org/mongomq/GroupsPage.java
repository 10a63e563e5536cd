package org.mongomq;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One page of groups ({@link MongoMqQueue#groups(GroupsOptions)}), parsed from
 * {@code mq_groups_json}.
 *
 * <pre>{@code
 * GroupsOptions opts = GroupsOptions.defaults().limit(100);
 * while (true) {
 *     GroupsPage page = queue.groups(opts);
 *     for (GroupInfo g : page.groups()) System.out.println(g.group() + " " + g.state() + " " + g.backlog());
 *     if (page.next().isEmpty()) break;
 *     opts = opts.after(page.next().get());
 * }
 * }</pre>
 *
 * @param groups the page's groups, in the options' order (unmodifiable)
 * @param next   the cursor of the next page (for {@link GroupsOptions#after(String)}); empty on the last page
 * @param now    the queue clock the states were judged at
 * @since 0.5.0
 */
public record GroupsPage(List<GroupInfo> groups, Optional<String> next, Instant now) {

    public GroupsPage {
        groups = List.copyOf(groups);
    }

    @SuppressWarnings("unchecked")
    static GroupsPage parse(String json) {
        Object v = Json.parse(json);
        if (!(v instanceof Map)) throw new IllegalStateException("mongomq: expected a JSON object for a page of groups");
        Map<String, Object> m = (Map<String, Object>) v;
        Object rows = m.get("groups");
        Object now = m.get("now");
        if (!(rows instanceof List) || !(now instanceof Number))
            throw new IllegalStateException("mongomq: a page of groups without \"groups\" or \"now\"");
        List<GroupInfo> out = new ArrayList<>();
        for (Object o : (List<Object>) rows) {
            if (!(o instanceof Map)) throw new IllegalStateException("mongomq: expected a JSON object per group");
            out.add(GroupInfo.parse((Map<String, Object>) o));
        }
        Object next = m.get("next");
        return new GroupsPage(out,
                next instanceof String ? Optional.of((String) next) : Optional.empty(),
                Native.instant(((Number) now).doubleValue()));
    }
}
