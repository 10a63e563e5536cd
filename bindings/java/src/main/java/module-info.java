/** The Java binding of libmongomq. org.mongomq is the API; org.mongomq.otel its OpenTelemetry
 * tracing, the only package that uses the OpenTelemetry API (an optional dependency: `requires
 * static`, so a program without it runs as long as it never loads org.mongomq.otel);
 * org.mongomq.internal (the SWIG-generated classes and the native loader) is not exported.
 * jdk.unsupported is for sun.misc.Signal (WorkerOptions.handleSignals). */
module org.mongomq {
    requires jdk.unsupported;
    requires static transitive io.opentelemetry.api; // transitive: org.mongomq.otel's signatures name them
    requires static transitive io.opentelemetry.context;
    exports org.mongomq;
    exports org.mongomq.otel;
}
