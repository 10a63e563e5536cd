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
        assertEquals("0.4.0", Client.libraryVersion());
    }

    private static void assertFalse(boolean b, String msg) {
        assertTrue(!b, msg);
    }

    /** A fresh JVM with the package's classes only, the example, and -Dmongomq.native.dir. */
    @Test
    void readmeExampleInFreshJvm(@TempDir Path tmp) throws Exception {
        String uri = QueueTestBase.uri();
        Path classes = Paths.get("target", "classes").toAbsolutePath();
        Path example = Paths.get("examples", "Example.java").toAbsolutePath();
        Path nativeDir = tmp.resolve("native");
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Dmongomq.native.dir=" + nativeDir, "-cp", classes.toString(),
                example.toString(), uri);
        pb.environment().remove("LD_LIBRARY_PATH");
        pb.redirectErrorStream(true);
        pb.directory(tmp.toFile());
        Process p = pb.start();
        boolean ended = p.waitFor(120, TimeUnit.SECONDS);
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!ended) p.destroyForcibly();
        assertTrue(ended, "the example ended: " + out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("claimed customer-17 seq"), out);
        assertTrue(out.contains("messages left: 0"), out);
        assertTrue(Files.isDirectory(nativeDir), "extracted under -Dmongomq.native.dir");
        try (Stream<Path> left = Files.list(nativeDir)) {
            List<Path> l = left.toList();
            assertEquals(List.of(), l, "nothing left behind in " + nativeDir + File.separator);
        }
    }
}
