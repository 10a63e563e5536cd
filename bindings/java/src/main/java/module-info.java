/** The Java binding of libmongomq. org.mongomq is the API; org.mongomq.internal (the
 * SWIG-generated classes and the native loader) is not exported. */
module org.mongomq {
    exports org.mongomq;
}
