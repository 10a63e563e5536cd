// Tests of the tracing bench (Bench --otel, OtelBench): that its exactly-once check catches
// what it must, and that a small run on the test server passes its checks and prints its table.
package org.mongomq.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class OtelBenchTest {
    private static byte[] ev(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static OtelBench.Tally published(int n) {
        OtelBench.Tally t = new OtelBench.Tally(n);
        for (int i = 0; i < n; i++) t.published(i, 100 + i);
        return t;
    }

    @Test
    void tallyPassesEveryEventAckedOnceWithItsSeq() {
        OtelBench.Tally t = published(3);
        assertFalse(t.acked(ev("{\"i\":2}"), 102));
        assertFalse(t.acked(ev("{\"i\":0}"), 100));
        assertTrue(t.acked(ev("{\"i\":1}"), 101), "complete once the last event is in");
        assertEquals(List.of(), t.problems());
    }

    @Test
    void tallyReportsMissingDuplicatedWrongSeqAndForeignEvents() {
        OtelBench.Tally missing = published(3);
        missing.acked(ev("{\"i\":0}"), 100);
        missing.acked(ev("{\"i\":1}"), 101);
        assertEquals(List.of("1 events never acked (the first: event 2)"), missing.problems());

        OtelBench.Tally twice = published(2);
        twice.acked(ev("{\"i\":0}"), 100);
        twice.acked(ev("{\"i\":1}"), 101);
        twice.acked(ev("{\"i\":1}"), 101);
        assertEquals(List.of("1 events acked more than once (the first: event 1, 2 times)"), twice.problems());

        OtelBench.Tally seq = published(1);
        seq.acked(ev("{\"i\":0}"), 7);
        assertEquals(List.of("event 0 published as seq 100, acked as 7"), seq.problems());

        OtelBench.Tally foreign = published(1);
        foreign.acked(ev("{\"i\":0}"), 100);
        foreign.acked(ev("{\"i\":5}"), 105); // out of range
        foreign.acked(ev("hello"), 9);
        assertEquals(List.of("{\"i\":5} (seq 105)", "hello (seq 9)"), foreign.problems());
    }

    @Test
    void indexParsesOnlyTheBenchsEvents() {
        assertEquals(0, OtelBench.Tally.index(ev("{\"i\":0}")));
        assertEquals(1999, OtelBench.Tally.index(ev("{\"i\":1999}")));
        assertEquals(-1, OtelBench.Tally.index(ev("{\"i\":}")));
        assertEquals(-1, OtelBench.Tally.index(ev("{\"i\":-1}")));
        assertEquals(-1, OtelBench.Tally.index(ev("{\"j\":1}")));
        assertEquals(-1, OtelBench.Tally.index(ev("{\"i\":99999999999}")));
    }

    @Test
    void aSmallRunPassesItsChecksAndPrintsEveryConfiguration() throws Exception {
        String uri = System.getenv("MONGOMQ_TEST_URI");
        assertNotNull(uri, "MONGOMQ_TEST_URI must name the test server (scripts/test-server.sh start)");
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int code;
        try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            code = OtelBench.run(new String[] {"--uri", uri, "--events", "30", "--groups", "7", "--workers", "2",
                    "--rounds", "2", "--warmup", "0"}, out);
        }
        String text = buf.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, text);
        for (String tracing : new String[] {"off", "noop", "sdk"}) {
            for (int attrs : new int[] {0, OtelBench.ATTRS}) {
                // The medians' row: 4 phases "rate (process cpu, thread cpu)" (the worker drain: no
                // thread figure), then the spans per event of each phase.
                String row = "^" + Pattern.quote(String.format("%-4s attrs %d", tracing, attrs))
                        + "(?: +[\\d,]+ \\([\\d.]+, [\\d.]+\\)){3} +[\\d,]+ \\([\\d.]+\\)"
                        + " +(\\S+ / \\S+ / \\S+ / \\S+)$";
                Matcher m = Pattern.compile(row, Pattern.MULTILINE).matcher(text);
                assertTrue(m.find(), tracing + " attrs " + attrs + " row in:\n" + text);
                String spans = tracing.equals("sdk") ? "1.00 / 0.10 / 0.00 / 2.00" : "0.00 / 0.00 / 0.00 / 0.00";
                assertEquals(spans, m.group(1), "spans per event of " + tracing);
            }
        }
        assertEquals(12, Pattern.compile("^round [12] ", Pattern.MULTILINE).matcher(text).results().count(), text);
    }
}
