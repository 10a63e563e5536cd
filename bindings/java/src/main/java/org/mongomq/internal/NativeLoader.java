package org.mongomq.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads the JNI library once, before the first native call.
 *
 * <ol>
 *   <li>{@code System.loadLibrary("mongomq_java")}: a libmongomq_java.so installed on
 *       {@code java.library.path} (which then finds libmongomq.so.0 the usual way);</li>
 *   <li>else the copies the jar carries ({@code org/mongomq/native/linux-ARCH/}:
 *       libmongomq_java.so and libmongomq.so.0) are extracted into a fresh directory
 *       and loaded with {@code System.load}. libmongomq_java.so has RPATH $ORIGIN, so
 *       it finds the libmongomq.so.0 beside it. The directory is made under the system
 *       property {@code mongomq.native.dir} when set (for a noexec /tmp), else under
 *       {@code java.io.tmpdir}; it is removed again once the libraries are mapped.</li>
 * </ol>
 */
public final class NativeLoader {
    /** System property: the directory to extract the native libraries under. */
    public static final String DIR_PROPERTY = "mongomq.native.dir";

    private static volatile String loadedFrom;

    private NativeLoader() {}

    /** Where the library was loaded from ("java.library.path" or the extracted file's path). */
    public static String loadedFrom() {
        load();
        return loadedFrom;
    }

    public static synchronized void load() {
        if (loadedFrom != null) return;
        try {
            System.loadLibrary("mongomq_java");
            loadedFrom = "java.library.path";
            return;
        } catch (UnsatisfiedLinkError notInstalled) {
            // Not installed (or not loadable there): use the jar's copies.
        }
        String dir = "org/mongomq/native/linux-" + arch() + "/";
        Path tmp = null;
        try {
            String base = System.getProperty(DIR_PROPERTY);
            Path parent = Paths.get(base != null && !base.isEmpty() ? base : System.getProperty("java.io.tmpdir"));
            Files.createDirectories(parent);
            tmp = Files.createTempDirectory(parent, "mongomq-native-");
            extract(dir + "libmongomq.so.0", tmp.resolve("libmongomq.so.0"));
            Path jni = tmp.resolve("libmongomq_java.so");
            extract(dir + "libmongomq_java.so", jni);
            System.load(jni.toAbsolutePath().toString());
            loadedFrom = jni.toAbsolutePath().toString();
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError(
                    "mongomq: cannot extract the native library (set -D" + DIR_PROPERTY
                            + "=DIR to a writable directory that allows executables): " + e);
            err.initCause(e);
            throw err;
        } finally {
            // Mapped libraries stay usable after their files are gone (Linux), and each
            // process has its own directory: nothing is left behind, nothing is shared.
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp.resolve("libmongomq_java.so"));
                    Files.deleteIfExists(tmp.resolve("libmongomq.so.0"));
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // best effort
                }
            }
        }
    }

    private static void extract(String resource, Path to) throws IOException {
        try (InputStream in = NativeLoader.class.getClassLoader() != null
                ? NativeLoader.class.getClassLoader().getResourceAsStream(resource)
                : ClassLoader.getSystemResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("mongomq: this jar has no native library for linux-" + arch()
                        + " (" + resource + ") and libmongomq_java is not on java.library.path");
            }
            Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static String arch() {
        String a = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        switch (a) {
            case "amd64":
            case "x86_64":
                return "x86_64";
            case "aarch64":
            case "arm64":
                return "aarch64";
            default:
                return a;
        }
    }
}
