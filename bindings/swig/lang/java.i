/* lang/java.i — the Java typemaps of mongomq.i (included from it under SWIGJAVA).
 *
 * The generated classes (org.mongomq.internal.mongomq_raw / mongomq_rawJNI) are the
 * private layer of bindings/java; the public org.mongomq classes are written by hand.
 * What this file decides, for every shim function at once:
 *
 *   - Handles (mq_client *, mq_queue *, mq_lease *, mq_batch *, mq_cancel *) are plain
 *     Java longs. The hand-written layer owns them (AutoCloseable plus a Cleaner), so
 *     no SWIGTYPE_p_* wrapper classes and no finalize() exist (swig#1550: SWIG's
 *     default finalize() is also turned off for any proxy class, see javafinalize).
 *   - `mq_error *err` is hidden: a stack mq_error per call; after the call, when its
 *     status is neither MQ_OK nor MQ_EMPTY, the wrapper throws the exception that
 *     org.mongomq.MongoMqException.fromNative(status, serverCode, messageBytes) builds
 *     (LeaseLostException, IllegalArgumentException for MQ_ERR_ARG, ...), found by
 *     FindClass on first use and cached.
 *   - `(const void *bytes, size_t len)` is a Java byte[] (null is a 0-byte event);
 *     `mqs_bytes` comes back as a byte[] copied once from the lease.
 *   - Strings cross as UTF-8 byte arrays, converted by Java (StandardCharsets.UTF_8),
 *     not by JNI's GetStringUTFChars/NewStringUTF: those use "modified UTF-8", which
 *     encodes characters outside the BMP (emoji in a group id) as surrogate pairs that
 *     the library rightly rejects as invalid UTF-8.
 *   - uint64_t (the command count) is a Java long.
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

/* ---- handles are longs -------------------------------------------------------------- */
%define MQJ_HANDLE(TYPE)
%typemap(jni) TYPE * "jlong"
%typemap(jtype) TYPE * "long"
%typemap(jstype) TYPE * "long"
%typemap(javain) TYPE * "$javainput"
%typemap(javaout) TYPE * { return $jnicall; }
%typemap(in) TYPE * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE * %{ $result = (jlong)(intptr_t)$1; %}
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

/* ---- (const void *bytes, size_t len) <-> byte[] --------------------------------------- */
%typemap(jni) (const void *bytes, size_t len) "jbyteArray"
%typemap(jtype) (const void *bytes, size_t len) "byte[]"
%typemap(jstype) (const void *bytes, size_t len) "byte[]"
%typemap(javain) (const void *bytes, size_t len) "$javainput"
%typemap(in) (const void *bytes, size_t len) {
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
%typemap(freearg) (const void *bytes, size_t len) %{ free((void *)$1); %}

/* ---- mqs_bytes -> byte[], copied once ------------------------------------------------- */
%typemap(jni) mqs_bytes "jbyteArray"
%typemap(jtype) mqs_bytes "byte[]"
%typemap(jstype) mqs_bytes "byte[]"
%typemap(javaout) mqs_bytes { return $jnicall; }
%typemap(out) mqs_bytes %{ $result = $1.data ? mqj_bytes(jenv, $1.data, $1.len) : NULL; %}

/* ---- uint64_t (command count) is a long ----------------------------------------------- */
%typemap(jni) uint64_t "jlong"
%typemap(jtype) uint64_t "long"
%typemap(jstype) uint64_t "long"
%typemap(javain) uint64_t "$javainput"
%typemap(javaout) uint64_t { return $jnicall; }
%typemap(out) uint64_t %{ $result = (jlong)$1; %}
