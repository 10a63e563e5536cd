package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The OpenTelemetry API is an optional dependency: no class outside org.mongomq.otel
 * names it, and the binding with no OpenTelemetry jar on the classpath loads, publishes,
 * claims, runs workers and the async view, and takes a Telemetry of the user's own.
 */
class OptionalOtelTest {

    private static final Path CLASSES = Paths.get("target", "classes").toAbsolutePath();

    @Test
    void onlyTheOtelPackageNamesOpenTelemetry() throws Exception {
        List<Path> naming = new ArrayList<>();
        int otel = 0, core = 0;
        try (Stream<Path> all = Files.walk(CLASSES)) {
            for (Path p : all.filter(f -> f.toString().endsWith(".class")).toList()) {
                String rel = CLASSES.relativize(p).toString().replace(File.separatorChar, '/');
                // Class files keep the names they use as UTF-8 in the constant pool.
                boolean names = new String(Files.readAllBytes(p), StandardCharsets.ISO_8859_1).contains("io/opentelemetry");
                if (rel.startsWith("org/mongomq/otel/")) {
                    if (names) otel++;
                } else if (!rel.equals("module-info.class")) { // its `requires static` names the modules
                    core++;
                    if (names) naming.add(p);
                }
            }
        }
        assertTrue(core > 30, "the core's classes were read: " + core);
        assertTrue(otel > 0, "the scan sees the otel package's use of the API");
        assertEquals(List.of(), naming, "core classes that name OpenTelemetry");
    }

    @Test
    void theBindingWorksWithoutOpenTelemetryOnTheClasspath() throws Exception {
        String jvm = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        String cp = CLASSES + File.pathSeparator + Paths.get("target", "test-classes").toAbsolutePath();
        String db = "mqt_java_nootel_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        ProcessBuilder pb = new ProcessBuilder(jvm, "-cp", cp, "org.mongomq.TestProcess", "nootel", QueueTestBase.uri(), db);
        pb.environment().remove("LD_LIBRARY_PATH");
        pb.redirectErrorStream(true);
        Process p = pb.start();
        boolean ended = p.waitFor(120, TimeUnit.SECONDS);
        if (!ended) p.destroyForcibly();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, out);
        assertEquals(0, p.exitValue(), out);
        List<String> lines = out.lines().toList();
        assertEquals("no opentelemetry", lines.get(0), out);
        assertTrue(lines.contains("published and acked seq 1: plain"), out);
        assertTrue(lines.contains("worker handled 3"), out);
        Set<String> handled = Set.of("handled counted {x-test=1} in its process",
                "handled early batch {} in its process", // made before the telemetry: no copy to inject into
                "handled late batch {x-test=1} in its process");
        assertEquals(handled, Set.copyOf(lines.stream().filter(l -> l.startsWith("handled ")).toList()), out);
        assertTrue(lines.contains("telemetry: 3 sends, 3 processes, 3 settles, 3 operations"), out);
        assertTrue(lines.contains("after null: {}, 3 sends"), out);
        assertTrue(lines.contains("MongoMqTelemetry needs opentelemetry: NoClassDefFoundError"), out);
        assertFalse(out.contains("Exception in thread"), out);
    }
}
