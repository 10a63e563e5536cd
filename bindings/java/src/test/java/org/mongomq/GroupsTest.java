package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The Groups (0.5.0) scenarios of bindings/CONTRACT.md (pauseResume, groupListing) and
 * what they do not show: a row's nulls and clamped ages, the options' checks, a paging
 * walk over ties.
 */
class GroupsTest extends QueueTestBase {
    static final GroupsOptions G = GroupsOptions.defaults();

    private static void badArg(String name, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, name);
        assertTrue(e.getMessage().contains(name), "the message names " + name + ": " + e.getMessage());
    }

    @Test
    void pauseResume() {
        long first = queue.publish("P", b("p1"), P.priority(2));
        long second = queue.publish("P", b("p2"), P.priority(2));
        queue.pauseGroup("P");
        assertFalse(queue.claim().isPresent(), "a paused group is not claimed");
        assertEquals(new Stats.Groups(0, 0, 0, 1, 1), queue.stats().groups());
        queue.pauseGroup("P"); // again: nothing changes
        assertFalse(queue.claim().isPresent());

        queue.resumeGroup("P");
        assertEquals(0, queue.stats().groups().paused());
        Lease held = must(queue.claim(C.minPriority(2))); // resumed, at its priority 2
        assertEquals(List.of("P", first, 1), List.of(held.group(), held.seq(), held.attempts()));

        // Paused while held: the holder keeps its lease; the next event waits.
        queue.pauseGroup("P");
        queue.ack(held);
        assertFalse(queue.claim().isPresent(), "P's second event is not claimable while paused");
        assertEquals(1, queue.stats().groups().paused());

        // Its second event's lease acked while paused too: P drains and stays paused.
        queue.resumeGroup("P");
        Lease last = must(queue.claim());
        assertEquals(second, last.seq());
        queue.pauseGroup("P");
        queue.ack(last);
        Stats s = queue.stats();
        assertEquals(List.of(0L, 1L), List.of(s.messages(), s.groups().paused()), "drained, still paused: " + s);
        long third = queue.publish("P", b("p3"));
        assertFalse(queue.claim().isPresent(), "a new publish to a paused group is not claimable");
        queue.resumeGroup("P");
        Lease l = must(queue.claim());
        assertEquals(third, l.seq());
        assertEquals("p3", s(l.event()));
        queue.ack(l);

        // Resuming a group that is not paused (or has no lock at all) is OK.
        queue.resumeGroup("P");
        queue.resumeGroup("never-seen");
        s = queue.stats();
        assertEquals(List.of(0L, 0L, 3L), List.of(s.groups().paused(), s.groups().total(), s.published()), s.toString());
        badArg("groupId", () -> queue.pauseGroup(""));
        badArg("groupId", () -> queue.resumeGroup("a\0b"));
        badArg("groupId", () -> queue.pauseGroup(null));
    }

    private static List<String> ids(GroupsPage page) {
        List<String> out = new ArrayList<>();
        for (GroupInfo g : page.groups()) out.add(g.group());
        return out;
    }

    private List<String> only(GroupsOptions o) {
        return ids(queue.groups(o));
    }

    @Test
    void groupListing() {
        // On a manual clock, so that ages and deadlines are exact: b leased by w-b at T,
        // a published at T + 1 s, c at T + 2 s and paused; listed at T + 4 s.
        Instant t = Instant.ofEpochSecond(1_000_000_000L);
        try (ManualClock clock = new ManualClock(t)) {
            queue.setClock(clock);
            queue.publish("b", b("b1"), P.priority(1));
            Lease bLease = must(queue.claim(C.visibility(Duration.ofSeconds(60)).workerId("w-b")));
            assertEquals("b", bLease.group());
            clock.advance(Duration.ofSeconds(1));
            long a1 = queue.publish("a", b("a1"));
            queue.publish("a", b("a2"));
            clock.advance(Duration.ofSeconds(1));
            queue.publish("c", b("c1"), P.priority(3));
            queue.pauseGroup("c");
            clock.advance(Duration.ofSeconds(2));

            GroupsPage page = queue.groups();
            assertEquals(List.of("a", "b", "c"), ids(page), "by id");
            assertEquals(Optional.empty(), page.next());
            assertEquals(t.plusSeconds(4), page.now());
            GroupInfo a = page.groups().get(0), bi = page.groups().get(1), c = page.groups().get(2);
            assertEquals(new GroupInfo("a", GroupState.READY, false, 0, 0, Optional.of(t.plusSeconds(1)),
                    Optional.empty(), Optional.empty(), Optional.empty(), 2, OptionalLong.of(a1),
                    Optional.of(Duration.ofSeconds(3))), a);
            assertEquals(GroupState.LEASED, bi.state());
            assertEquals(Optional.of("w-b"), bi.holder());
            assertEquals(List.of(1, 1L), List.of(bi.attempts(), bi.backlog()));
            assertEquals(Optional.of(Duration.ofSeconds(4)), bi.heldFor());
            assertEquals(Optional.of(t.plusSeconds(60)), bi.leaseDeadline());
            assertEquals(Optional.of(bLease.deadline()), bi.leaseDeadline(), "the lease's own deadline");
            assertEquals(List.of(GroupState.PAUSED, true, 3, 1L), List.of(c.state(), c.paused(), c.priority(), c.backlog()),
                    "the priority kept");

            assertEquals(List.of("b"), only(G.states(GroupState.LEASED)));
            assertEquals(List.of("a", "c"), only(G.states(Set.of(GroupState.READY, GroupState.PAUSED))));
            assertEquals(List.of(), only(G.states(GroupState.PARKED)));
            assertEquals(List.of("a", "b", "c"), only(G.states(GroupState.LEASED).states(List.of())), "replaced: every state");
            assertEquals(List.of("c"), only(G.idPrefix("c")));
            assertEquals(List.of("b"), only(G.heldLongerThan(Duration.ofSeconds(3))));
            assertEquals(List.of(), only(G.heldLongerThan(Duration.ofSeconds(5))));
            assertEquals(List.of("b"), only(G.parkedBeyond(Duration.ofSeconds(50))));
            assertEquals(List.of("b"), only(G.minAttempts(1)));

            // Pages of 2: a and b with a cursor, then c and none.
            GroupsPage firstPage = queue.groups(G.limit(2));
            assertEquals(List.of("a", "b"), ids(firstPage));
            assertTrue(firstPage.next().isPresent(), "a next cursor after a full page");
            GroupsPage secondPage = queue.groups(G.limit(2).after(firstPage.next().get()));
            assertEquals(List.of("c"), ids(secondPage));
            assertEquals(Optional.empty(), secondPage.next());

            // By due: a (due since T + 1 s), the paused c (T + 2 s) in its place, b (held to T + 60 s).
            assertEquals(List.of("a", "c", "b"), only(G.sort(GroupsSort.DUE)));
            GroupsPage dueFirst = queue.groups(G.sort(GroupsSort.DUE).limit(1));
            assertEquals(List.of("a"), ids(dueFirst));
            assertEquals(List.of("c", "b"), only(G.sort(GroupsSort.DUE).after(dueFirst.next().get())));

            // Bad options are the argument error, naming the option.
            badArg("limit", () -> G.limit(1001));
            badArg("limit", () -> G.limit(0));
            badArg("state", () -> GroupState.of("bogus"));
            badArg("after", () -> queue.groups(G.after(dueFirst.next().get()))); // another sort's: the library's
            badArg("after", () -> queue.groups(G.after("nonsense")));
            badArg("idPrefix", () -> G.idPrefix("c\0"));
            badArg("minAttempts", () -> G.minAttempts(-1));
            badArg("heldLongerThan", () -> G.heldLongerThan(Duration.ofSeconds(-1)));
            badArg("parkedBeyond", () -> G.parkedBeyond(null));
            badArg("sort", () -> G.sort(null));
            badArg("states", () -> G.states((GroupState) null));
            badArg("options", () -> queue.groups(null));
            queue.ack(bLease);
        }

        // Dead letters by page: 3 letters, a page of 2 from offset 1 is the 2nd and 3rd.
        queue.setClock(null);
        queue.drop();
        try (MongoMqQueue d = client.queue(db, "q", QUEUE)) {
            d.setMaxAttempts(1);
            List<Long> dead = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                dead.add(d.publish("d" + i, b("dead " + i)));
                d.nack(must(d.claim()));
                assertFalse(d.claim().isPresent(), "its second delivery went to the dead letters");
            }
            DeadPage dp = d.deadPage(1, 2);
            // Oldest seq first: publish order with one partition, not across groups with P.
            List<Long> bySeq = new ArrayList<>(dead);
            java.util.Collections.sort(bySeq);
            if (PARTITIONS == 1) assertEquals(dead, bySeq);
            assertEquals(bySeq.subList(1, 3), List.of(dp.letters().get(0).seq(), dp.letters().get(1).seq()));
            assertEquals(List.of(1L, 3L), List.of(dp.offset(), dp.total()));
            StoredEvent first = dp.letters().get(0);
            int i = dead.indexOf(bySeq.get(1));
            assertEquals(List.of("dead " + i, "d" + i, 1), List.of(s(first.event()), first.group(), first.attempts()));
            assertTrue(first.deadAt().isPresent());
            DeadPage past = d.deadPage(3, 2);
            assertEquals(List.of(0, 3L), List.of(past.letters().size(), past.total()));
            badArg("limit", () -> d.deadPage(0, 1001));
            badArg("limit", () -> d.deadPage(0, 0));
            badArg("offset", () -> d.deadPage(-1, 10));
        }
    }

    @Test
    void groupRowParsing() {
        GroupsPage p = GroupsPage.parse("{\"groups\":[{\"attempts\":1,\"available_at\":1000000061.5,\"backlog\":1,"
                + "\"group\":\"b\",\"head\":3,\"head_age_s\":-0.002,\"held_for_s\":2.25,\"holder\":\"host:7:w1\","
                + "\"lease_deadline\":1000000061.5,\"paused\":false,\"priority\":1,\"state\":\"leased\"},"
                + "{\"attempts\":0,\"available_at\":null,\"backlog\":0,\"group\":\"e\",\"head\":null,"
                + "\"head_age_s\":null,\"held_for_s\":null,\"holder\":null,\"lease_deadline\":null,\"paused\":true,"
                + "\"priority\":4,\"state\":\"paused\"}],\"next\":\"id:e\",\"now\":1000000003.0}");
        Instant due = Instant.ofEpochSecond(1_000_000_061L, 500_000_000);
        assertEquals(new GroupsPage(List.of(
                new GroupInfo("b", GroupState.LEASED, false, 1, 1, Optional.of(due), Optional.of("host:7:w1"),
                        Optional.of(Duration.ofMillis(2250)), Optional.of(due), 1, OptionalLong.of(3),
                        Optional.of(Duration.ZERO)), // a head a little ahead is zero old
                new GroupInfo("e", GroupState.PAUSED, true, 4, 0, Optional.empty(), Optional.empty(), Optional.empty(),
                        Optional.empty(), 0, OptionalLong.empty(), Optional.empty())),
                Optional.of("id:e"), Instant.ofEpochSecond(1_000_000_003L)), p);
        // A state this version does not know is the library's fault, not an argument error.
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> GroupsPage.parse(
                "{\"groups\":[{\"group\":\"x\",\"state\":\"frozen\",\"priority\":0,\"attempts\":0,\"backlog\":0}],"
                        + "\"next\":null,\"now\":1.0}"));
        assertTrue(e.getMessage().contains("frozen"), e.getMessage());
        for (GroupState s : GroupState.values()) assertEquals(s, GroupState.of(s.libraryName()));
        assertEquals(10, G.states(GroupState.LEASED, GroupState.PAUSED).stateFlags());
        assertEquals(0, G.stateFlags());
    }

    @Test
    void groupsPagingWalk() {
        // 25 groups of one batch (every group due at the same instant: the due cursor's
        // ties), in pages of 7, by id and by due: each group once, in 4 pages.
        try (Batch batch = new Batch()) {
            for (int i = 0; i < 25; i++) batch.add(String.format("g%02d", i), b("x"));
            queue.publish(batch);
        }
        for (GroupsSort sort : GroupsSort.values()) {
            GroupsOptions o = G.sort(sort).limit(7);
            Map<String, Integer> seen = new HashMap<>();
            int pages = 0;
            while (true) {
                GroupsPage page = queue.groups(o);
                pages++;
                for (GroupInfo g : page.groups()) seen.merge(g.group(), 1, Integer::sum);
                if (page.next().isEmpty()) break;
                assertTrue(pages <= 10, sort + ": more than 10 pages of 7 for 25 groups");
                o = o.after(page.next().get());
            }
            assertEquals(25, seen.size(), sort + ": " + seen);
            assertEquals(4, pages, sort.toString());
            assertTrue(seen.values().stream().allMatch(n -> n == 1), sort + ": " + seen);
        }
    }
}
