package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mongomq.internal.NativeLoader;

/**
 * Loading the native library from the jar's content. (scripts/test-java.sh also runs the
 * README example from a directory outside the repo with only the built jar on its
 * classpath.)
 */
class LoadingTest {

    @Test
    void loadedByExtractionNotFromLibraryPath() {
        // This JVM has no java.library.path entry for it and no LD_LIBRARY_PATH (surefire's config).
        assertNotEquals("java.library.path", NativeLoader.loadedFrom());
        assertTrue(NativeLoader.loadedFrom().endsWith("libmongomq_java.so"), NativeLoader.loadedFrom());
        assertFalse(Files.exists(Paths.get(NativeLoader.loadedFrom())), "the extracted copy was removed once mapped");
        assertEquals("0.8.0", Client.libraryVersion());
    }

    private static void assertFalse(boolean b, String msg) {
        assertTrue(!b, msg);
    }

    /** Runs an example in a fresh JVM with the package's classes only and -Dmongomq.native.dir; its output. */
    private static String runExample(Path tmp, String name, String db) throws Exception {
        Path classes = Paths.get("target", "classes").toAbsolutePath();
        Path example = Paths.get("examples", name + ".java").toAbsolutePath();
        Path nativeDir = tmp.resolve("native");
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Dmongomq.native.dir=" + nativeDir, "-cp", classes.toString(),
                example.toString(), QueueTestBase.uri(), db);
        pb.environment().remove("LD_LIBRARY_PATH");
        pb.redirectErrorStream(true);
        pb.directory(tmp.toFile());
        Process p = pb.start();
        boolean ended = p.waitFor(120, TimeUnit.SECONDS);
        if (!ended) p.destroyForcibly();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(ended, name + " ended: " + out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(Files.isDirectory(nativeDir), "extracted under -Dmongomq.native.dir");
        try (Stream<Path> left = Files.list(nativeDir)) {
            List<Path> l = left.toList();
            assertEquals(List.of(), l, "nothing left behind in " + nativeDir + File.separator);
        }
        return out;
    }

    /** The README's producer and worker (examples/), each in a fresh JVM: the worker handles all and ends when idle. */
    @Test
    void readmeExamplesInFreshJvm(@TempDir Path tmp) throws Exception {
        String db = "mqt_java_examples_" + Long.toHexString(System.nanoTime());
        try {
            String produced = runExample(tmp, "Producer", db);
            assertTrue(produced.contains("scheduled a reminder as seq 5"), produced);
            assertTrue(produced.contains("published a batch of 3 from seq 6"), produced);
            long t0 = System.nanoTime();
            String worked = runExample(tmp, "OrderWorker", db);
            double took = (System.nanoTime() - t0) / 1e9;
            assertTrue(worked.contains("handled customer-42 seq 1 (attempt 1): {order=1, step=charge}"), worked);
            assertTrue(worked.contains("handled customer-99 seq 5 (attempt 1): {remind=true}"), worked);
            assertTrue(worked.contains("stopped: messages left: 0, dead letters: 0"), worked);
            assertTrue(took < 60, "the worker stopped by itself once idle: " + took + " s");
        } finally {
            try (Client c = Client.connect(QueueTestBase.uri()); MongoMqQueue q = c.queue(db, "orders")) {
                q.drop();
            }
        }
    }
}
