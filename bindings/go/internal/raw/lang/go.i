/* internal/raw/lang/go.i — a stand-in for bindings/swig/lang/go.i, used only by this
 * package's `go generate` (SWIG looks for mongomq.i's `%include "lang/go.i"` in the
 * current directory, internal/raw, before the including file's directory).
 *
 * It includes the shared typemaps unchanged and adds one line they lack: the
 * returned text of mqs_log_next (%newobject, released with free by mongomq.i's
 * newfree) gets the same typemaps as the stats text. Without it SWIG's default
 * char * typemaps apply, whose runtime helper swigCopyString turns a uintptr into an
 * unsafe.Pointer and fails go vet's unsafeptr check.
 *
 * TODO: move the %apply line below into bindings/swig/lang/go.i (after the other
 * %apply of char *mqs_stats_json) and delete this file; the generated
 * mongomq_raw.go and mongomq_raw_wrap.c stay byte for byte the same (checked).
 */
%include "../../../swig/lang/go.i"
%apply char *mqs_stats_json { char *mqs_log_next };
