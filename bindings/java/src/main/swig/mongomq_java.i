/* The Java build's entry to the shared interface: bindings/swig/mongomq.i declares the
 * mqs_bytes struct before it includes lang/java.i, so SWIG's default finalize() would
 * already be in that struct's (unused) proxy class by the time java.i turns it off.
 * Setting the typemap here, before anything is declared, turns it off everywhere
 * (swig#1550). Everything else is in mongomq.i and lang/java.i. */
%typemap(javafinalize) SWIGTYPE ""
%include "mongomq.i"
