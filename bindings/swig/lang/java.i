/* lang/java.i — the Java typemaps of mongomq.i (included from it under SWIGJAVA).
 *
 * The generated classes (org.mongomq.internal.mongomq_raw / mongomq_rawJNI) are the
 * private layer of bindings/java; the public org.mongomq classes are written by hand.
 * What this file decides, for every wrapped function at once:
 *
 *   - Handles (mq_client *, mq_queue *, mq_lease *, mq_batch *, mq_cancel *) are plain
 *     Java longs. The hand-written layer owns them (AutoCloseable plus a Cleaner), so
 *     no SWIGTYPE_p_* wrapper classes and no finalize() exist (swig#1550: SWIG's
 *     default finalize() is also turned off for any proxy class, see javafinalize).
 *   - A returned mq_status is a long, and where the call has an out-parameter that is
 *     a long in Java (T **out: the handle; int64_t *OUT: the seq or count) the long is
 *     that value instead: mq_client_new(uri) returns the client. A Java method has one
 *     return type, so the two out-parameters of other types are one-element arrays
 *     the call fills (SWIG's own OUTPUT idiom for Java): char **json_out a String[],
 *     uint64_t *OUT a long[] (mq_queue_repair_counts' runs and fixed; null is NULL).
 *   - `mq_error *err` is hidden: a stack mq_error per call; after the call, when its
 *     status is neither MQ_OK nor MQ_EMPTY, the wrapper throws the exception that
 *     org.mongomq.MongoMqException.fromNative(status, serverCode, messageBytes) builds
 *     (LeaseLostException, IllegalArgumentException for MQ_ERR_ARG, ...), found by
 *     FindClass on first use and cached.
 *   - `(const void *event, size_t event_len)` is a Java byte[] (null is a 0-byte event);
 *     `mqs_bytes` comes back as a byte[] copied once from the lease.
 *   - Strings cross as UTF-8 byte arrays, converted by Java (StandardCharsets.UTF_8),
 *     not by JNI's GetStringUTFChars/NewStringUTF: those use "modified UTF-8", which
 *     encodes characters outside the BMP (emoji in a group id) as surrogate pairs that
 *     the library rightly rejects as invalid UTF-8.
 *   - uint64_t (the command count) is a Java long; mq_dedup_scope an int.
 */

%{
#include <jni.h>

/* org.mongomq.MongoMqException and its factory, resolved once. A global reference
 * keeps the class from being unloaded while we hold its method id. */
static jclass mqj_exc_class = NULL;
static jmethodID mqj_exc_factory = NULL;

static void mqj_throw(JNIEnv *jenv, const mq_error *err) {
    if ((*jenv)->ExceptionCheck(jenv)) return;
    jclass cls = __atomic_load_n(&mqj_exc_class, __ATOMIC_ACQUIRE);
    if (cls == NULL) {
        jclass local = (*jenv)->FindClass(jenv, "org/mongomq/MongoMqException");
        if (local == NULL) return; /* NoClassDefFoundError is pending */
        jmethodID factory = (*jenv)->GetStaticMethodID(jenv, local, "fromNative", "(II[B)Ljava/lang/RuntimeException;");
        if (factory == NULL) return;
        jclass global = (jclass)(*jenv)->NewGlobalRef(jenv, local);
        (*jenv)->DeleteLocalRef(jenv, local);
        if (global == NULL) return;
        /* Two threads may get here at once: the first to publish its class wins, the
         * other drops its reference. The method id is the same for both. */
        __atomic_store_n(&mqj_exc_factory, factory, __ATOMIC_RELAXED);
        jclass expected = NULL;
        if (__atomic_compare_exchange_n(&mqj_exc_class, &expected, global, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            cls = global;
        } else {
            (*jenv)->DeleteGlobalRef(jenv, global);
            cls = expected;
        }
    }
    jmethodID factory = __atomic_load_n(&mqj_exc_factory, __ATOMIC_RELAXED);
    size_t len = strnlen(err->message, sizeof err->message);
    jbyteArray msg = (*jenv)->NewByteArray(jenv, (jsize)len);
    if (msg == NULL) return;
    (*jenv)->SetByteArrayRegion(jenv, msg, 0, (jsize)len, (const jbyte *)err->message);
    jobject exc = (*jenv)->CallStaticObjectMethod(jenv, cls, factory, (jint)err->status,
                                                  (jint)err->server_code, msg);
    (*jenv)->DeleteLocalRef(jenv, msg);
    if (exc == NULL || (*jenv)->ExceptionCheck(jenv)) return;
    (*jenv)->Throw(jenv, (jthrowable)exc);
    (*jenv)->DeleteLocalRef(jenv, exc);
}

/* A NUL-terminated copy of a Java byte[] (the UTF-8 that org.mongomq.internal.Utf8.cstr
 * made of a String; the hand-written layer rejects strings with NUL characters); NULL
 * for null. */
static char *mqj_cstr(JNIEnv *jenv, jbyteArray a) {
    if (a == NULL) return NULL;
    jsize n = (*jenv)->GetArrayLength(jenv, a);
    char *s = (char *)malloc((size_t)n + 1);
    if (s == NULL) {
        jclass oom = (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError");
        if (oom != NULL) (*jenv)->ThrowNew(jenv, oom, "mongomq: string copy");
        return NULL;
    }
    (*jenv)->GetByteArrayRegion(jenv, a, 0, n, (jbyte *)s);
    s[n] = '\0';
    return s;
}

static jbyteArray mqj_bytes(JNIEnv *jenv, const void *data, size_t len) {
    if (len > 0x7fffffff) {
        jclass oom = (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError");
        if (oom != NULL) (*jenv)->ThrowNew(jenv, oom, "mongomq: event larger than a Java array");
        return NULL;
    }
    jbyteArray a = (*jenv)->NewByteArray(jenv, (jsize)len);
    if (a != NULL && len > 0) (*jenv)->SetByteArrayRegion(jenv, a, 0, (jsize)len, (const jbyte *)data);
    return a;
}
%}

/* swig#1550: no finalize() in any proxy class; the hand-written layer uses a Cleaner.
 * (mqs_bytes is declared in mongomq.i before this file is included, so the Java build
 * generates from bindings/java/src/main/swig/mongomq_java.i, which sets this same
 * typemap first and then includes mongomq.i.) */
%typemap(javafinalize) SWIGTYPE ""

/* The generated JNI class loads the native library (from the jar if need be) before
 * its first native call. */
%pragma(java) jniclasscode=%{
  static {
    org.mongomq.internal.NativeLoader.load();
  }
%}
/* The raw classes are for org.mongomq only. */
%pragma(java) moduleclassmodifiers="public final class"

/* ---- mq_error *err: hidden, thrown after the call ---------------------------------- */
%typemap(in, numinputs=0) mq_error *err (mq_error tmp) {
    memset(&tmp, 0, sizeof tmp);
    $1 = &tmp;
}
/* No early return: freearg still releases the copied strings and bytes; with the
 * exception pending the JVM ignores the value returned. */
%typemap(argout) mq_error *err {
    if ($1->status != MQ_OK && $1->status != MQ_EMPTY) mqj_throw(jenv, $1);
}

/* ---- mq_status is a long: the status, or the out-parameter's value (below) --------- */
%typemap(jni) mq_status "jlong"
%typemap(jtype) mq_status "long"
%typemap(jstype) mq_status "long"
%typemap(javain) mq_status "$javainput"
%typemap(javaout) mq_status { return $jnicall; }
%typemap(in) mq_status %{ $1 = (mq_status)$input; %}
%typemap(out) mq_status %{ $result = (jlong)$1; %}

/* ---- handles are longs; T **out is the call's return value ------------------------- */
%define MQJ_HANDLE(TYPE)
%typemap(jni) TYPE * "jlong"
%typemap(jtype) TYPE * "long"
%typemap(jstype) TYPE * "long"
%typemap(javain) TYPE * "$javainput"
%typemap(javaout) TYPE * { return $jnicall; }
%typemap(in) TYPE * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE * %{ $result = (jlong)(intptr_t)$1; %}
%typemap(in, numinputs=0) TYPE **out (TYPE *made = NULL) %{ $1 = &made; %}
%typemap(argout) TYPE **out %{ $result = (jlong)(intptr_t)made$argnum; %}
%enddef
MQJ_HANDLE(mq_client)
MQJ_HANDLE(mq_queue)
MQJ_HANDLE(mq_lease)
MQJ_HANDLE(mq_batch)
MQJ_HANDLE(mq_cancel)
MQJ_HANDLE(mqs_clock)

/* ---- strings as UTF-8 byte arrays ----------------------------------------------------- */
%typemap(jni) char * "jbyteArray"
%typemap(jtype) char * "byte[]"
%typemap(jstype) char * "String"
%typemap(javain) char * "org.mongomq.internal.Utf8.cstr($javainput)"
%typemap(javaout) char * { return org.mongomq.internal.Utf8.str($jnicall); }
%typemap(in) char * %{
    $1 = mqj_cstr(jenv, $input);
    if ($input != NULL && $1 == NULL) return $null;
%}
%typemap(freearg) char * %{ free($1); %}
%typemap(out) char * %{ $result = $1 ? mqj_bytes(jenv, $1, strlen($1)) : NULL; %}

/* ---- (const void *event, size_t event_len) <-> byte[] ------------------------------- */
%typemap(jni) (const void *event, size_t event_len) "jbyteArray"
%typemap(jtype) (const void *event, size_t event_len) "byte[]"
%typemap(jstype) (const void *event, size_t event_len) "byte[]"
%typemap(javain) (const void *event, size_t event_len) "$javainput"
%typemap(in) (const void *event, size_t event_len) {
    /* Copied out of the Java heap, not pinned: the call may wait on the network. */
    $1 = NULL;
    $2 = 0;
    if ($input != NULL) {
        jsize n = (*jenv)->GetArrayLength(jenv, $input);
        if (n > 0) {
            $1 = malloc((size_t)n);
            if ($1 == NULL) {
                jclass oom = (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError");
                if (oom != NULL) (*jenv)->ThrowNew(jenv, oom, "mongomq: event copy");
                return $null;
            }
            (*jenv)->GetByteArrayRegion(jenv, $input, 0, n, (jbyte *)$1);
        }
        $2 = (size_t)n;
    }
}
%typemap(freearg) (const void *event, size_t event_len) %{ free((void *)$1); %}

/* ---- mqs_bytes -> byte[], copied once ------------------------------------------------- */
%typemap(jni) mqs_bytes "jbyteArray"
%typemap(jtype) mqs_bytes "byte[]"
%typemap(jstype) mqs_bytes "byte[]"
%typemap(javaout) mqs_bytes { return $jnicall; }
%typemap(out) mqs_bytes %{ $result = $1.data ? mqj_bytes(jenv, $1.data, $1.len) : NULL; %}

/* ---- mq_dedup_scope is an int (an MQ_DEDUP_SCOPE_* constant) -------------------------- *
 * mongomq.i ignores the header's enums, so SWIG's own enum class for it would have no
 * values; org.mongomq.DedupScope passes the constant. */
%typemap(jni) mq_dedup_scope "jint"
%typemap(jtype) mq_dedup_scope "int"
%typemap(jstype) mq_dedup_scope "int"
%typemap(javain) mq_dedup_scope "$javainput"
%typemap(in) mq_dedup_scope %{ $1 = (mq_dedup_scope)$input; %}

/* ---- uint64_t (command count) is a long ----------------------------------------------- */
%typemap(jni) uint64_t "jlong"
%typemap(jtype) uint64_t "long"
%typemap(jstype) uint64_t "long"
%typemap(javain) uint64_t "$javainput"
%typemap(javaout) uint64_t { return $jnicall; }
%typemap(out) uint64_t %{ $result = (jlong)$1; %}

/* ---- int64_t *OUT (a seq, a count) is the call's return value -------------------------- */
%typemap(in, numinputs=0) int64_t *OUT (int64_t value = 0) %{ $1 = &value; %}
%typemap(argout) int64_t *OUT %{ $result = (jlong)value$argnum; %}

/* ---- uint64_t *OUT is a long[] of at least one element, filled; null is NULL -------- */
%typemap(jni) uint64_t *OUT "jlongArray"
%typemap(jtype) uint64_t *OUT "long[]"
%typemap(jstype) uint64_t *OUT "long[]"
%typemap(javain) uint64_t *OUT "$javainput"
%typemap(in) uint64_t *OUT (uint64_t value = 0) {
    $1 = NULL;
    if ($input != NULL) {
        if ((*jenv)->GetArrayLength(jenv, $input) < 1) {
            jclass iae = (*jenv)->FindClass(jenv, "java/lang/IllegalArgumentException");
            if (iae != NULL) (*jenv)->ThrowNew(jenv, iae, "mongomq: an out array needs one element");
            return $null;
        }
        $1 = &value;
    }
}
%typemap(argout) uint64_t *OUT {
    if ($1 != NULL) {
        jlong v = (jlong)value$argnum;
        (*jenv)->SetLongArrayRegion(jenv, $input, 0, 1, &v);
    }
}

/* ---- char **json_out is a String[] of at least one element, [0] set to the text ------- *
 * The C text goes to Java as UTF-8 bytes (see the strings above), released with mq_free;
 * the Java side makes the String. [0] is null when the call failed. */
%typemap(jni) char **json_out "jobjectArray"
%typemap(jtype) char **json_out "byte[][]"
%typemap(jstype) char **json_out "String[]"
%typemap(javain, pre="    byte[][] utf8$javainput = new byte[1][];",
         post="      $javainput[0] = org.mongomq.internal.Utf8.str(utf8$javainput[0]);") char **json_out
    "utf8$javainput"
%typemap(in) char **json_out (char *text = NULL) %{ $1 = &text; %}
%typemap(argout) char **json_out {
    if (text$argnum != NULL) {
        jbyteArray utf8 = mqj_bytes(jenv, text$argnum, strlen(text$argnum));
        if (utf8 != NULL) {
            (*jenv)->SetObjectArrayElement(jenv, $input, 0, utf8);
            (*jenv)->DeleteLocalRef(jenv, utf8);
        }
    }
}
%typemap(freearg) char **json_out %{ mq_free(text$argnum); %}
