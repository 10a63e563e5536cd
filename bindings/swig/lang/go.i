/* lang/go.i — the Go typemaps of mongomq.i (swig -go -cgo -intgosize 64).
 *
 * Go has no exceptions (SWIG's Go "exceptions" are panics), so `mq_error *err` stays
 * visible here: the raw layer takes an mq_error that the hand-written package
 * (bindings/go) allocates per call with mqs_error_new, reads with the accessors below
 * and frees with mqs_error_free, and turns into an `error` value. The raw package is
 * internal to the Go module; users never see it.
 *
 *   (const void *bytes, size_t len)  <- []byte (the slice's bytes, read during the call)
 *   mqs_bytes                        -> []byte, copied once into Go memory
 *   const char *                     -> string, copied once in Go
 *   char *mqs_stats_json             -> string (copied; the C text released with mq_free)
 *
 * Linking: `#cgo pkg-config: mongomq` in the generated file's cgo preamble, so the
 * package builds against an installed libmongomq and no SWIG is needed to build it.
 */

%insert(cgo_comment_typedefs) %{
#cgo pkg-config: mongomq
%}

/* ---- bytes in: a Go []byte, valid for the call (cgo keeps it alive and unmoved) ---- */
%typemap(gotype) (const void *bytes, size_t len) "[]byte"
%typemap(in) (const void *bytes, size_t len) %{
  $1 = ($1_ltype)$input.array;
  $2 = ($2_ltype)$input.len;
%}

/* ---- bytes out: a slice header over the lease's C memory, copied in Go before the
 * call returns. The caller keeps the lease alive across the call (runtime.KeepAlive). */
%typemap(gotype) mqs_bytes "[]byte"
%typemap(out) mqs_bytes %{
  $result.array = (void *)$1.data;
  $result.len = (intgo)$1.len;
  $result.cap = (intgo)$1.len;
%}
%typemap(goout) mqs_bytes %{
	{
		copied := make([]byte, len($1))
		copy(copied, $1)
		$result = copied
	}
%}

/* ---- text out. SWIG's own char * typemaps copy twice through a runtime helper that
 * turns a uintptr into an unsafe.Pointer (go vet's unsafeptr check flags it); these
 * copy once in Go, so the generated package needs no vet exception.
 * const char * (a lease's group, a status name, an error's message): borrowed C
 * memory, copied into a Go string before the call returns. */
%typemap(out) const char * %{
  $result.p = (char *)$1;
  $result.n = $1 ? (intgo)strlen((const char *)$1) : 0;
%}
%typemap(goout) const char * %{
	$result = string([]byte($1))
%}
/* The stats text: mongomq.i's newfree releases the library's text (mq_free) before
 * the wrapper returns, so the wrapper hands Go a malloc'd copy, which Go copies and
 * frees. */
%typemap(out) char *mqs_stats_json %{
  $result.n = $1 ? (intgo)strlen($1) : 0;
  $result.p = (char *)malloc($result.n > 0 ? (size_t)$result.n : 1);
  if ($result.p == NULL) $result.n = 0;
  else if ($result.n > 0) memcpy($result.p, $1, (size_t)$result.n);
%}
%typemap(goout) char *mqs_stats_json %{
	{
		text := $1
		$result = string([]byte(text))
		Swig_free(*(*uintptr)(unsafe.Pointer(&text)))
	}
%}
%apply char *mqs_stats_json { char *mqs_peek_json, char *mqs_dead_list_json, char *mqs_log_next };


/* ---- mq_error: allocated in C memory (no Go pointer crosses into C), one per call ---- */
typedef struct mq_error mq_error;
%inline %{
static mq_error *mqs_error_new(void) { return (mq_error *)calloc(1, sizeof(mq_error)); }
static void mqs_error_free(mq_error *err) { free(err); }
static int mqs_error_status(const mq_error *err) { return err ? (int)err->status : MQ_ERR_NOMEM; }
static int mqs_error_server_code(const mq_error *err) { return err ? err->server_code : 0; }
static const char *mqs_error_message(const mq_error *err) { return err ? err->message : "out of memory"; }
%}
