/* lang/python.i — the Python typemaps of mongomq.i
 * (swig -python -threads -noproxy -module _raw: scripts/swig-generate.sh python).
 *
 * The generated extension is mongomq._raw, private to the package: the hand-written
 * layer (bindings/python/src/mongomq/) is what users import.
 *
 *   mq_error *err                    hidden; after the call a status other than MQ_OK
 *                                    and MQ_EMPTY raises the exception that the
 *                                    package's error factory (mqs_py_set_error_factory)
 *                                    makes from (status, server_code, message)
 *   (const void *event, size_t event_len)  <- any object with the buffer protocol
 *                                    (bytes, bytearray, memoryview...), held for the call
 *   mqs_bytes                        -> bytes, copied once (None for an index out of range)
 *   mq_status (returned)             -> None: the call's value is its out-parameters'
 *   T **out (a handle)               -> returned: a SWIG pointer object (None for NULL:
 *                                    no lease)
 *   int64_t *OUT, uint64_t *OUT      -> returned: an int (two: a list, as
 *                                    mq_queue_repair_counts' [runs, fixed])
 *   char **json_out                  -> returned: str (the C text released with mq_free)
 *
 * The GIL: -threads releases it around every call; the pure accessors below (lease
 * fields, cancel flags, names) keep it, since they touch no server and take
 * nanoseconds. mqs_py_claim manages the GIL itself (see there).
 */

%{
#include <errno.h>
#include <signal.h>
%}

/* ---- errors ------------------------------------------------------------------------ */

%{
/* Not an mq_status: "a Python exception is already set" (mqs_py_claim). */
#define MQS_PY_EXCEPTION_SET ((mq_status)100)

static PyObject *mqs_py_error_factory = NULL;

/* Sets the Python exception for a failed call: factory(status, server_code, message),
 * or a RuntimeError when the package has not registered its factory. */
static void mqs_py_raise(const mq_error *e) {
    PyObject *msg, *exc;
    if (e->status == MQS_PY_EXCEPTION_SET) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "mongomq: lost exception");
        return;
    }
    msg = PyUnicode_DecodeUTF8(e->message, (Py_ssize_t)strnlen(e->message, sizeof e->message), "replace");
    if (msg == NULL) return;
    if (mqs_py_error_factory == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: %U", mq_status_name(e->status), msg);
        Py_DECREF(msg);
        return;
    }
    exc = PyObject_CallFunction(mqs_py_error_factory, "iiO", (int)e->status, e->server_code, msg);
    Py_DECREF(msg);
    if (exc == NULL) return; /* the factory's own exception stands */
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
}
%}

%typemap(in, numinputs=0) mq_error *err (mq_error temp) {
    temp.status = MQ_OK;
    temp.server_code = 0;
    temp.message[0] = '\0';
    $1 = &temp;
}
%typemap(argout) mq_error *err {
    if ($1->status != MQ_OK && $1->status != MQ_EMPTY) {
        Py_XDECREF($result);
        $result = NULL;
        mqs_py_raise($1);
        SWIG_fail;
    }
}

/* ---- bytes in: the buffer is held (and so cannot be resized) for the call --------- */
%typemap(in) (const void *event, size_t event_len) (Py_buffer view, int have_view = 0) {
    if (PyObject_GetBuffer($input, &view, PyBUF_SIMPLE) != 0) SWIG_fail;
    have_view = 1;
    $1 = view.buf;
    $2 = (size_t)view.len;
}
%typemap(freearg) (const void *event, size_t event_len) {
    if (have_view$argnum) PyBuffer_Release(&view$argnum);
}

/* ---- bytes out: one copy into a new bytes object ---------------------------------- */
%typemap(out) mqs_bytes {
    if ($1.data == NULL) {
        Py_INCREF(Py_None);
        $result = Py_None;
    } else {
        $result = PyBytes_FromStringAndSize((const char *)$1.data, (Py_ssize_t)$1.len);
        if ($result == NULL) SWIG_fail;
    }
}

/* ---- the return value: None, then each out-parameter's value -------------------------
 * SWIG_Python_AppendOutput's last argument says that the result so far is "no value"
 * (so the first output replaces it): true here for the mq_status calls too, whose
 * status is None (the error typemap has raised on a failure). */
%typemap(out) mq_status "(void)$1; $result = SWIG_Py_Void();"

%define MQS_PY_HANDLE_OUT(TYPE)
%typemap(in, numinputs=0) TYPE **out (TYPE *made = NULL) "$1 = &made;"
%typemap(argout) TYPE **out {
    $result = SWIG_Python_AppendOutput($result, SWIG_NewPointerObj(made$argnum, $*1_descriptor, 0), 1);
}
%enddef
MQS_PY_HANDLE_OUT(mq_client)
MQS_PY_HANDLE_OUT(mq_queue)
MQS_PY_HANDLE_OUT(mq_lease)
MQS_PY_HANDLE_OUT(mq_batch)
MQS_PY_HANDLE_OUT(mq_cancel)

%typemap(in, numinputs=0) int64_t *OUT (int64_t value = 0) "$1 = &value;"
%typemap(argout) int64_t *OUT {
    PyObject *o = PyLong_FromLongLong((long long)value$argnum);
    if (o == NULL) SWIG_fail;
    $result = SWIG_Python_AppendOutput($result, o, 1);
}
%typemap(in, numinputs=0) uint64_t *OUT (uint64_t value = 0) "$1 = &value;"
%typemap(argout) uint64_t *OUT {
    PyObject *o = PyLong_FromUnsignedLongLong((unsigned long long)value$argnum);
    if (o == NULL) SWIG_fail;
    $result = SWIG_Python_AppendOutput($result, o, 1);
}

/* The text as SWIG's own char * results are (UTF-8, surrogateescape), released with
 * mq_free on every path. */
%typemap(in, numinputs=0) char **json_out (char *text = NULL) "$1 = &text;"
%typemap(argout) char **json_out {
    PyObject *o = SWIG_FromCharPtr(text$argnum);
    if (o == NULL) SWIG_fail;
    $result = SWIG_Python_AppendOutput($result, o, 1);
}
%typemap(freearg) char **json_out "mq_free(text$argnum);"

/* ---- calls that keep the GIL: no server, no wait ---------------------------------- */
%nothread mq_version;
%nothread mq_status_name;
%nothread mq_client_command_count;
%nothread mq_queue_interrupt;
%nothread mq_queue_now;
%nothread mq_queue_clock_offset;
%nothread mq_queue_repair_counts;
%nothread mq_batch_new;
%nothread mq_batch_count;
%nothread mq_batch_destroy;
%nothread mqs_batch_outcome;
%nothread mq_lease_seq;
%nothread mq_lease_group;
%nothread mq_lease_token;
%nothread mq_lease_attempts;
%nothread mq_lease_deadline;
%nothread mq_lease_count;
%nothread mq_lease_partition;
%nothread mq_queue_partitions;
%nothread mq_group_partition;
%nothread mq_lease_seq_at;
%nothread mqs_lease_event_at;
%nothread mq_lease_attr_count;
%nothread mq_lease_attr;
%nothread mqs_lease_attr_key;
%nothread mqs_lease_attr_value;
%nothread mq_lease_destroy;
%nothread mq_cancel_new;
%nothread mq_cancel_trigger;
%nothread mq_cancel_triggered;
%nothread mq_cancel_reset;
%nothread mq_cancel_destroy;
%nothread mqs_py_set_error_factory;
%nothread mqs_py_claim;
/* the manual clock: a short mutex shared only with C readers (which never take the GIL) */
%nothread mqs_clock_new;
%nothread mqs_clock_now;
%nothread mqs_clock_set;
%nothread mqs_clock_advance;
%nothread mqs_clock_release;
%nothread mqs_log_dropped;
/* And the calls that must release it (the default of -threads, named here so that no
 * one adds them above): mqs_log_next blocks up to its timeout on the package's log
 * thread; mqs_queue_set_clock, mqs_log_capture and mqs_log_silence take the library's
 * and libmongoc's locks, which threads logging or claiming may hold. */

/* ---- Python-only helpers ---------------------------------------------------------- */

%{
/* A waiting claim on the main thread must end when a signal arrives whose Python
 * handler raises (Ctrl-C -> KeyboardInterrupt), yet Python runs handlers only between
 * bytecodes, never while the main thread sits in C. So for the length of the wait,
 * every signal that Python handles gets a C handler of ours chained in front of
 * Python's: it triggers the call's own mq_cancel (async-signal-safe) and passes the
 * signal on to Python's handler, which notes it as usual. The claim returns
 * MQ_CANCELLED; we put Python's handlers back and run the pending Python handlers
 * (PyErr_CheckSignals). Only this call is cancelled: the queue goes on working. */
static const int mqs_py_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
#define MQS_PY_NSIGNALS ((int)(sizeof mqs_py_signals / sizeof mqs_py_signals[0]))
static struct sigaction mqs_py_saved[MQS_PY_NSIGNALS];
static int mqs_py_chained[MQS_PY_NSIGNALS];
static mq_cancel *volatile mqs_py_sig_cancel = NULL;
static volatile sig_atomic_t mqs_py_sig_fired = 0;
static int mqs_py_sig_active = 0; /* main thread only, under the GIL */

static void mqs_py_on_signal(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno, i;
    mqs_py_sig_fired = 1;
    mq_cancel_trigger(mqs_py_sig_cancel);
    for (i = 0; i < MQS_PY_NSIGNALS; i++) {
        if (mqs_py_signals[i] != sig || !mqs_py_chained[i]) continue;
        if (mqs_py_saved[i].sa_flags & SA_SIGINFO)
            mqs_py_saved[i].sa_sigaction(sig, info, uctx);
        else if (mqs_py_saved[i].sa_handler != SIG_DFL && mqs_py_saved[i].sa_handler != SIG_IGN)
            mqs_py_saved[i].sa_handler(sig);
    }
    errno = saved_errno;
}

/* Chains our handler in front of every handler that is a function (Python's; a
 * default or ignored signal is left alone). Returns 1 when it did. */
static int mqs_py_signals_chain(mq_cancel *cancel) {
    int i, any = 0;
    if (mqs_py_sig_active) return 0; /* a claim in a signal handler during a claim */
    mqs_py_sig_cancel = cancel;
    mqs_py_sig_fired = 0;
    for (i = 0; i < MQS_PY_NSIGNALS; i++) {
        struct sigaction ours;
        mqs_py_chained[i] = 0;
        if (sigaction(mqs_py_signals[i], NULL, &mqs_py_saved[i]) != 0) continue;
        if (!(mqs_py_saved[i].sa_flags & SA_SIGINFO) &&
            (mqs_py_saved[i].sa_handler == SIG_DFL || mqs_py_saved[i].sa_handler == SIG_IGN))
            continue;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = mqs_py_on_signal;
        ours.sa_mask = mqs_py_saved[i].sa_mask;
        ours.sa_flags = (mqs_py_saved[i].sa_flags | SA_SIGINFO) & ~(SA_RESETHAND | SA_NODEFER);
        mqs_py_chained[i] = 1; /* before the install: the handler reads it */
        if (sigaction(mqs_py_signals[i], &ours, NULL) != 0) {
            mqs_py_chained[i] = 0;
            continue;
        }
        any = 1;
    }
    if (any) mqs_py_sig_active = 1;
    return any;
}

static void mqs_py_signals_unchain(void) {
    int i;
    for (i = 0; i < MQS_PY_NSIGNALS; i++) {
        if (mqs_py_chained[i]) sigaction(mqs_py_signals[i], &mqs_py_saved[i], NULL);
    }
    for (i = 0; i < MQS_PY_NSIGNALS; i++) mqs_py_chained[i] = 0;
    mqs_py_sig_cancel = NULL;
    mqs_py_sig_active = 0;
}
%}

/* mqs_py_claim's partitions, packed as mongomq.i's mqs_claim_in takes them (a buffer). */
%apply (const void *event, size_t event_len) { (const void *parts, size_t parts_len) };

%{
/* mongomq.i's shim, defined after this file is included: mqs_py_claim claims through it. */
static mq_status mqs_claim_in(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                              size_t max_events, double timeout_s, mq_cancel *cancel, const void *parts,
                              size_t parts_len, mq_lease **out, mq_error *err);
%}

%inline %{
/* The package registers the callable that makes its exceptions:
 * factory(status: int, server_code: int, message: str) -> BaseException. */
static void mqs_py_set_error_factory(PyObject *factory) {
    PyObject *old = mqs_py_error_factory;
    if (factory == Py_None) factory = NULL;
    Py_XINCREF(factory);
    mqs_py_error_factory = factory;
    Py_XDECREF(old);
}

/* The claim (mq_claim_with, through mongomq.i's mqs_claim_in) with the GIL released, in
 * mqs_claim_in's shape (*out NULL when nothing is due; parts: the partitions to take
 * from as little-endian int32s, b"" for every one): timeout_s 0 with cancel NULL is a
 * plain claim (which keeps working after mq_queue_interrupt), else a waiting one. With
 * watch_signals (the main thread, a waiting claim, `cancel` this call's own), signals
 * with a Python handler cancel the wait; their handlers then run here: an exception
 * they raise (KeyboardInterrupt) ends the call with a lease taken meanwhile given back
 * (mq_unclaim: no handler saw it, so it is no delivery), and if none does the call
 * reports MQ_CANCELLED (the package re-arms the cancel and waits for the rest of the
 * time). */
static mq_status mqs_py_claim(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                              size_t max_events, double timeout_s, mq_cancel *cancel, const void *parts,
                              size_t parts_len, int watch_signals, mq_lease **out, mq_error *err) {
    mq_lease *lease = NULL;
    mq_status status;
    int chained = 0;
    if (watch_signals && cancel != NULL && timeout_s > 0) {
        chained = mqs_py_signals_chain(cancel);
        /* A signal that came before our handler was in place: its Python handler runs
         * now, instead of after the whole wait. */
        if (chained && PyErr_CheckSignals() < 0) {
            mqs_py_signals_unchain();
            return err->status = MQS_PY_EXCEPTION_SET;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    status = mqs_claim_in(queue, worker_id, visibility_s, min_priority, max_events, timeout_s, cancel, parts,
                          parts_len, &lease, err);
    Py_END_ALLOW_THREADS
    if (chained) {
        int fired = mqs_py_sig_fired;
        mqs_py_signals_unchain();
        if (fired && PyErr_CheckSignals() < 0) {
            if (lease != NULL) {
                PyObject *type, *value, *tb;
                mq_error ignored;
                PyErr_Fetch(&type, &value, &tb);
                Py_BEGIN_ALLOW_THREADS
                mq_unclaim(queue, lease, &ignored);
                mq_lease_destroy(lease);
                Py_END_ALLOW_THREADS
                PyErr_Restore(type, value, tb);
                lease = NULL;
            }
            return err->status = MQS_PY_EXCEPTION_SET;
        }
    }
    *out = lease;
    return status;
}
%}
