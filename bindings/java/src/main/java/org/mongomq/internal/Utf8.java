package org.mongomq.internal;

import java.nio.charset.StandardCharsets;

/** Strings cross the JNI boundary as UTF-8 bytes (see bindings/swig/lang/java.i). */
public final class Utf8 {
    private Utf8() {}

    /** A Java string as NUL-less UTF-8 bytes for the C side, which adds the NUL; null stays null. */
    public static byte[] cstr(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** UTF-8 bytes from the C side as a Java string; null stays null. */
    public static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
