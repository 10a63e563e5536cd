/** The Java binding of libmongomq. org.mongomq is the API; org.mongomq.internal (the
 * SWIG-generated classes and the native loader) is not exported. jdk.unsupported is for
 * sun.misc.Signal (WorkerOptions.handleSignals). */
module org.mongomq {
    requires jdk.unsupported;
    exports org.mongomq;
}
