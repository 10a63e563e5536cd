/* lang/go.i — the Go typemaps of mongomq.i (swig -go -cgo -intgosize 64).
 *
 * Go has no exceptions (SWIG's Go "exceptions" are panics), so `mq_error *err` stays
 * visible here: the raw layer takes an mq_error that the hand-written package
 * (bindings/go) allocates per call with mqs_error_new, reads with the accessors below
 * and frees with mqs_error_free, and turns into an `error` value. The raw package is
 * internal to the Go module; users never see it. A returned mq_status (raw.Mq_status)
 * is ignored there: the mq_error says the same.
 *
 *   (const void *event, size_t event_len)  <- []byte (the slice's bytes, read during the call)
 *   mqs_bytes                        -> []byte, copied once into Go memory
 *   const char *                     -> string, copied once in Go
 *   T **out (a handle)               <- *SwigcptrStruct_SS_T: the caller's variable,
 *                                       which the call sets (var c raw.Swigcptr...; &c)
 *   int64_t *OUT, uint64_t *OUT      <- *int64, *uint64 (SWIG's own: a Go pointer the
 *                                       call writes through; nil is NULL)
 *   char **json_out                  <- *string: set to a Go copy of the text (the C
 *                                       text released with mq_free)
 *
 * Linking: `#cgo pkg-config: mongomq` in the generated file's cgo preamble, so the
 * package builds against an installed libmongomq and no SWIG is needed to build it.
 */

%insert(cgo_comment_typedefs) %{
#cgo pkg-config: mongomq
%}

/* ---- bytes in: a Go []byte, valid for the call (cgo keeps it alive and unmoved) ---- */
%typemap(gotype) (const void *event, size_t event_len) "[]byte"
%typemap(in) (const void *event, size_t event_len) %{
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
/* mqs_log_next's line: mongomq.i's newfree releases it before the wrapper returns, so
 * the wrapper hands Go a malloc'd copy, which Go copies and frees. */
%typemap(out) char *mqs_log_next %{
  $result.n = $1 ? (intgo)strlen($1) : 0;
  $result.p = (char *)malloc($result.n > 0 ? (size_t)$result.n : 1);
  if ($result.p == NULL) $result.n = 0;
  else if ($result.n > 0) memcpy($result.p, $1, (size_t)$result.n);
%}
%typemap(goout) char *mqs_log_next %{
	{
		text := $1
		$result = string([]byte(text))
		Swig_free(*(*uintptr)(unsafe.Pointer(&text)))
	}
%}

/* ---- char **json_out: the caller's *string (a zero string: cgo lets a Go pointer to
 * memory without Go pointers into C) is set, in C, to a malloc'd copy of the library's
 * text, which the library's mq_free then releases; Go replaces it with a Go copy and
 * frees the malloc'd one. "" when the call failed. */
%typemap(gotype) char **json_out "*string"
%typemap(in) char **json_out (char *text = NULL) %{ $1 = &text; %}
%typemap(argout) char **json_out %{
  $input->n = text$argnum ? (intgo)strlen(text$argnum) : 0;
  $input->p = (char *)malloc($input->n > 0 ? (size_t)$input->n : 1);
  if ($input->p == NULL) $input->n = 0;
  else if ($input->n > 0) memcpy($input->p, text$argnum, (size_t)$input->n);
%}
%typemap(freearg) char **json_out %{ mq_free(text$argnum); %}
%typemap(goargout) char **json_out %{
	{
		text := *$input
		*$input = string([]byte(text))
		Swig_free(*(*uintptr)(unsafe.Pointer(&text)))
	}
%}

/* ---- T **out: a pointer to the caller's Swigcptr variable, which the call sets (a
 * uintptr: no Go pointer inside, so cgo lets it into C). ---- */
%typemap(gotype) mq_client **out "*SwigcptrStruct_SS_mq_client"
%typemap(gotype) mq_queue **out "*SwigcptrStruct_SS_mq_queue"
%typemap(gotype) mq_lease **out "*SwigcptrStruct_SS_mq_lease"
%typemap(gotype) mq_batch **out "*SwigcptrStruct_SS_mq_batch"
%typemap(gotype) mq_cancel **out "*SwigcptrStruct_SS_mq_cancel"

/* int64_t *OUT and uint64_t *OUT (mongomq.i applies them to the header's names): what
 * SWIG makes of any int64_t * and uint64_t *, named here for that %apply. */
%typemap(gotype) int64_t *OUT "*int64"
%typemap(gotype) uint64_t *OUT "*uint64"

/* ---- a Go string cannot be nil: mq_peek_json's group_id "" is NULL (the whole
 * queue). The other calls take a group "" as it is (the library's "group_id is
 * empty"). ---- */
%feature("action") mq_peek_json %{
  result = mq_peek_json(arg1, arg2 != NULL && arg2[0] == '\0' ? NULL : arg2, arg3, arg4, arg5);
%}

/* ---- mq_error: allocated in C memory (no Go pointer crosses into C), one per call ---- */
typedef struct mq_error mq_error;
%inline %{
static mq_error *mqs_error_new(void) { return (mq_error *)calloc(1, sizeof(mq_error)); }
static void mqs_error_free(mq_error *err) { free(err); }
static int mqs_error_status(const mq_error *err) { return err ? (int)err->status : MQ_ERR_NOMEM; }
static int mqs_error_server_code(const mq_error *err) { return err ? err->server_code : 0; }
static const char *mqs_error_message(const mq_error *err) { return err ? err->message : "out of memory"; }
%}
