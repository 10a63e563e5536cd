/* lang/ruby.i — the Ruby typemaps of mongomq.i, for the `mongomq` gem (bindings/ruby).
 *
 * Generated with `swig -ruby -module MongoMQ::Raw -initname mongomq_raw` by
 * bindings/ruby/generate.sh. The raw module is MongoMQ::Raw, private to the gem: users
 * see the hand-written layer in bindings/ruby/lib.
 *
 * Values:
 *   mq_error *err         hidden, on the stack; after the call (argout) any status but
 *                         MQ_OK / MQ_EMPTY raises MongoMQ::Error.from_c(status, server
 *                         code, message), which picks the class (LeaseLost, ...).
 *   (const void *bytes, size_t len)  <- a String of any encoding, its bytes as they are.
 *   const char * in       <- a String (nil is NULL), copied; a NUL byte inside it is a
 *                         MongoMQ::ArgumentError naming the parameter.
 *   mqs_bytes             -> a new String, always ASCII-8BIT (binary), copied once.
 *   const char * out      -> a UTF-8 String (group ids, tokens, names); the stats JSON
 *                         too, its C text released with mq_free.
 *
 * Handles. The five C handles (client, queue, lease, batch, manual clock) reach Ruby as one class,
 * MongoMQ::Raw::Handle, wrapping an mqr_handle that owns the C handle. The GC (the
 * %freefunc) and an explicit close (Raw.mqr_close) both come down to mqr_settle, which
 * destroys the C handle exactly once, when nothing needs it any more:
 *   - `owners` counts what keeps the C handle alive: its Ruby object until it is closed
 *     or collected and, for a client, every live queue made from it. So a queue keeps
 *     its client alive, and the GC may free a client and its queues in any order.
 *   - `busy` counts calls running on it without the GVL. A close while one runs marks
 *     the handle closed (new calls raise MongoMQ::ClosedError), wakes a queue's waiting
 *     claims (mq_queue_interrupt) and leaves the destroy to the last call out.
 * These fields are only touched with the GVL held; only the C calls run without it.
 * A manual clock (mqs_clock) is such a handle too: its destroy is mqs_clock_release,
 * the handle's reference; every queue it was given keeps one of its own until the
 * queue is destroyed, so the clock handle may be closed or collected first. Its calls
 * (now, set, advance) and giving it to a queue (Raw.mqr_queue_set_clock) are a mutex
 * each and run with the GVL held.
 *
 * The GVL. Every shim call that talks to the server (client and queue new, publish,
 * publish_batch, claim, ack, nack, unclaim, extend, the dead letters, stats, repair,
 * purge group, drop), and the destroys of explicit closes, run without the GVL
 * (rb_thread_call_without_gvl2) on arguments copied first, so other Ruby threads run
 * meanwhile. A waiting claim gets an mq_cancel of its own and an unblocking function that
 * triggers it: Thread#kill, Thread#raise, Timeout.timeout and signals (Ctrl-C) end that
 * one claim within milliseconds, the interrupt is then processed as Ruby does, and the
 * queue goes on working. A claim that had just taken a lease when the interrupt raised
 * gives the lease back with mqs_unclaim before the exception goes on, so the group is
 * not held until the visibility runs out, and keeps its attempts count and place in
 * line (nobody saw the lease: a nack would count a delivery). An interrupt that raises
 * nothing (a trap handler that returns) lets the claim wait on for the rest of its
 * time. A plain claim (no wait) and the other calls have no unblocking function: each
 * is a few server commands, bounded by the URI's timeouts; it finishes, then the
 * interrupt is processed.
 *
 * The log. mqs_log_next (up to its timeout; the gem's log thread asks for 0.25 s) runs
 * without the GVL and without an unblocking function: Thread#kill of the log thread
 * takes effect when it returns. A line it took when an interrupt raised is freed.
 */

%{
#include <ruby/thread.h>
#include <time.h>
%}

/* mqs_bytes is declared before this file is included, so SWIG wraps its struct (as
 * Raw::Mqs_bytes, unused: the typemap below turns it into a String) and warns that the
 * name is no Ruby class name (801). The warning says nothing here. */
#pragma SWIG nowarn=801

/* Not for Ruby: the per-call mq_cancel is made here; destroys go through mqr_close. */
%ignore mqs_client_destroy;
%ignore mqs_queue_destroy;
%ignore mqs_lease_destroy;
%ignore mqs_batch_destroy;
%ignore mqs_cancel_new;
%ignore mqs_cancel_trigger;
%ignore mqs_cancel_triggered;
%ignore mqs_cancel_reset;
%ignore mqs_cancel_destroy;
/* A clock's handle is released by mqr_close (or the GC); a queue is given one with
 * mqr_queue_set_clock (nil: server time), which keeps track of it for Queue#reopen. */
%ignore mqs_clock_release;
%ignore mqs_queue_set_clock;

/* ---- the handle ------------------------------------------------------------------ */

%{
typedef enum mqr_kind { MQR_CLIENT = 0, MQR_QUEUE = 1, MQR_LEASE = 2, MQR_BATCH = 3, MQR_CLOCK = 4 } mqr_kind;
#define MQR_KINDS 5

typedef struct mqr_handle {
    mqr_kind kind;
    void *ptr;                 /* the C handle; NULL once its destroy has started */
    int owners;                /* its Ruby object until closed/collected; + each live queue (client) */
    int busy;                  /* calls using ptr without the GVL (and a destroy in progress) */
    int closed;                /* closed from Ruby, or collected: no new calls */
    int collected;             /* the GC freed the Ruby object: free this once ptr is gone */
    struct mqr_handle *parent; /* a queue's client: the queue is one of its owners */
    void *clock;               /* a queue's manual clock (mqs_clock *; NULL: server time), held by the
                                * C queue itself: valid while ptr is (for Queue#reopen) */
} mqr_handle;
%}

%rename(Handle) mqr_handle;
%nodefaultctor mqr_handle;
%nodefaultdtor mqr_handle;
%freefunc mqr_handle "mqr_handle_collected";
struct mqr_handle {};

/* The code below calls the shim, so it goes to the wrapper section, which SWIG emits
 * after the header section that holds mongomq.i's %inline shim. */
%wrapper %{
static const char *const mqr_kind_name[] = {"client", "queue", "lease", "batch", "clock"};

/* C handles made and destroyed, per kind (Raw.mqr_counts): the tests check that the
 * GC destroys each exactly once. */
static long mqr_made[MQR_KINDS];
static long mqr_destroyed[MQR_KINDS];

static double mqr_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Raises the MongoMQ error for a status other than MQ_OK and MQ_EMPTY. */
static void mqr_raise(const mq_error *e) {
    VALUE exc = rb_funcall(rb_path2class("MongoMQ::Error"), rb_intern("from_c"), 3, INT2NUM((int)e->status),
                           INT2NUM(e->server_code), rb_utf8_str_new_cstr(e->message));
    rb_exc_raise(exc);
}

static void mqr_raise_closed(const char *what) {
    rb_raise(rb_path2class("MongoMQ::ClosedError"), "%s", what);
}

/* Runs fn(arg) without the GVL, or with it when an interrupt is pending (gvl2 then
 * does not call fn): for work that must happen whatever comes. Interrupts stay
 * pending for Ruby's next check. */
typedef struct mqr_once {
    void *(*fn)(void *);
    void *arg;
    int ran;
} mqr_once;

static void *mqr_once_run(void *p) {
    mqr_once *o = (mqr_once *)p;
    o->ran = 1;
    return o->fn(o->arg);
}

static void mqr_without_gvl_always(void *(*fn)(void *), void *arg) {
    mqr_once o;
    o.fn = fn;
    o.arg = arg;
    o.ran = 0;
    rb_thread_call_without_gvl2(mqr_once_run, &o, NULL, NULL);
    if (!o.ran) fn(arg);
}

typedef struct mqr_destroy_args {
    mqr_kind kind;
    void *ptr;
} mqr_destroy_args;

static void *mqr_destroy_run(void *p) {
    mqr_destroy_args *a = (mqr_destroy_args *)p;
    switch (a->kind) {
    case MQR_CLIENT: mqs_client_destroy((mq_client *)a->ptr); break;
    case MQR_QUEUE: mqs_queue_destroy((mq_queue *)a->ptr); break;
    case MQR_LEASE: mqs_lease_destroy((mq_lease *)a->ptr); break;
    case MQR_BATCH: mqs_batch_destroy((mq_batch *)a->ptr); break;
    case MQR_CLOCK: mqs_clock_release((mqs_clock *)a->ptr); break;
    }
    return NULL;
}

/* Destroys h's C handle once nothing needs it (then releases its parent, which may go
 * the same way) and frees the struct once its Ruby object is gone too. In the GC
 * (in_gc) destroys run where they are; elsewhere without the GVL. */
static void mqr_settle(mqr_handle *h, int in_gc) {
    while (h != NULL) {
        mqr_handle *parent = NULL;
        if (h->ptr != NULL && h->owners == 0 && h->busy == 0) {
            mqr_destroy_args a;
            a.kind = h->kind;
            a.ptr = h->ptr;
            h->ptr = NULL; /* nobody starts a call on it, or destroys it, again */
            h->busy++;     /* the struct stays while the GVL is released */
            if (in_gc)
                mqr_destroy_run(&a);
            else
                mqr_without_gvl_always(mqr_destroy_run, &a);
            h->busy--;
            mqr_destroyed[h->kind]++;
            parent = h->parent;
            h->parent = NULL;
            if (parent != NULL) parent->owners--;
        }
        if (h->ptr == NULL && h->collected && h->busy == 0) xfree(h);
        h = parent;
    }
}

/* The %freefunc: the GC collected the Ruby object. */
static void mqr_handle_collected(void *p) {
    mqr_handle *h = (mqr_handle *)p;
    if (h == NULL) return;
    h->collected = 1;
    if (!h->closed) {
        h->closed = 1;
        h->owners--;
    }
    mqr_settle(h, 1);
}

static VALUE mqr_wrap(mqr_kind kind, void *ptr, mqr_handle *parent) {
    mqr_handle *h;
    if (ptr == NULL) return Qnil;
    h = ALLOC(mqr_handle);
    h->kind = kind;
    h->ptr = ptr;
    h->owners = 1;
    h->busy = 0;
    h->closed = 0;
    h->collected = 0;
    h->parent = parent;
    h->clock = NULL;
    if (parent != NULL) parent->owners++;
    mqr_made[kind]++;
    return SWIG_NewPointerObj(h, SWIGTYPE_p_mqr_handle, SWIG_POINTER_OWN);
}

static mqr_handle *mqr_peek(VALUE obj, mqr_kind kind) {
    void *p = NULL;
    mqr_handle *h;
    if (!SWIG_IsOK(SWIG_ConvertPtr(obj, &p, SWIGTYPE_p_mqr_handle, 0)) || p == NULL)
        rb_raise(rb_eTypeError, "expected a MongoMQ %s handle", mqr_kind_name[kind]);
    h = (mqr_handle *)p;
    if (h->kind != kind)
        rb_raise(rb_eTypeError, "expected a MongoMQ %s handle, got a %s", mqr_kind_name[kind], mqr_kind_name[h->kind]);
    return h;
}

static void mqr_raise_closed_kind(mqr_kind kind) {
    static const char *const msg[] = {"the client is closed", "the queue is closed", "the lease is closed",
                                      "the batch is closed", "the clock is closed"};
    mqr_raise_closed(msg[kind]);
}

/* The handle behind a typemap's argument; a closed one raises MongoMQ::ClosedError. */
static mqr_handle *mqr_get(VALUE obj, mqr_kind kind) {
    mqr_handle *h = mqr_peek(obj, kind);
    if (h->closed || h->ptr == NULL) mqr_raise_closed_kind(kind);
    return h;
}

/* ---- calls without the GVL ---- */

typedef struct mqr_call {
    void *(*fn)(void *);
    void *arg;
    int ran;
    rb_unblock_function_t *ubf;
    void *ubf_arg;
    mqr_handle *uses[2];
} mqr_call;

static void *mqr_call_run(void *p) {
    mqr_call *c = (mqr_call *)p;
    c->ran = 1;
    return c->fn(c->arg);
}

static VALUE mqr_call_body(VALUE p) {
    mqr_call *c = (mqr_call *)p;
    c->ran = 0;
    for (;;) {
        rb_thread_call_without_gvl2(mqr_call_run, c, c->ubf, c->ubf_arg);
        if (c->ran) return Qnil;
        /* An interrupt came first and gvl2 did not make the call: process it (it may
         * raise, and nothing was made yet), then make the call. */
        rb_thread_check_ints();
    }
}

static VALUE mqr_check_ints(VALUE unused) {
    (void)unused;
    rb_thread_check_ints();
    return Qnil;
}

/* The typemaps checked the handles, but converting the later arguments may have run
 * Ruby code (to_str, to_f) and let another thread close one: check again, with the
 * GVL held from here to the busy count. */
static void mqr_check_open(mqr_call *c) {
    int i;
    for (i = 0; i < 2; i++)
        if (c->uses[i] != NULL && (c->uses[i]->closed || c->uses[i]->ptr == NULL)) mqr_raise_closed_kind(c->uses[i]->kind);
}

static void mqr_begin(mqr_call *c) {
    int i;
    for (i = 0; i < 2; i++)
        if (c->uses[i] != NULL) c->uses[i]->busy++;
}

static void mqr_end(mqr_call *c) {
    int i;
    for (i = 0; i < 2; i++) {
        if (c->uses[i] == NULL) continue;
        c->uses[i]->busy--;
        mqr_settle(c->uses[i], 0); /* it may have been closed meanwhile */
    }
}

/* Makes c's call once without the GVL, then processes pending interrupts. Returns 0,
 * or the tag of the exception an interrupt raised; c->ran says whether the call was
 * made (then the caller releases what it made before rb_jump_tag). */
static int mqr_run(mqr_call *c) {
    int state = 0;
    rb_protect(mqr_call_body, (VALUE)c, &state);
    if (state == 0) rb_protect(mqr_check_ints, Qnil, &state);
    return state;
}

static void mqr_call_init(mqr_call *c, void *(*fn)(void *), void *arg, mqr_handle *h0, mqr_handle *h1) {
    c->fn = fn;
    c->arg = arg;
    c->ran = 0;
    c->ubf = NULL;
    c->ubf_arg = NULL;
    c->uses[0] = h0;
    c->uses[1] = h1;
}

/* The whole of a call with nothing to release if an interrupt raises after it. */
static void mqr_call_simple(void *(*fn)(void *), void *arg, mqr_handle *h0, mqr_handle *h1) {
    mqr_call c;
    int state;
    mqr_call_init(&c, fn, arg, h0, h1);
    mqr_check_open(&c);
    mqr_begin(&c);
    state = mqr_run(&c);
    mqr_end(&c);
    if (state) rb_jump_tag(state);
}

/* MQR_NOGVL(name, result type, fields, call): a struct `name_args` of the call's
 * arguments and its result, and `name_fn`, which makes the call (for mqr_call). */
#define MQR_NOGVL(NAME, RTYPE, FIELDS, CALL)                   \
    typedef struct NAME##_args {                               \
        FIELDS                                                 \
        RTYPE result;                                          \
    } NAME##_args;                                             \
    static void *NAME##_fn(void *p) {                          \
        NAME##_args *a = (NAME##_args *)p;                     \
        a->result = CALL;                                      \
        return NULL;                                           \
    }

MQR_NOGVL(mqr_client_new, mq_client *, const char *uri; mq_error *err;, (mqs_client_new(a->uri, a->err)))
MQR_NOGVL(mqr_queue_new, mq_queue *, mq_client *client; const char *db; const char *prefix; mq_error *err;,
          (mqs_queue_new(a->client, a->db, a->prefix, a->err)))
MQR_NOGVL(mqr_publish, int64_t,
          mq_queue *queue; const char *group; const void *bytes; size_t len; int priority; double at; mq_error *err;,
          (mqs_publish(a->queue, a->group, a->bytes, a->len, a->priority, a->at, a->err)))
MQR_NOGVL(mqr_publish_batch, int64_t, mq_queue *queue; mq_batch *batch; mq_error *err;,
          (mqs_publish_batch(a->queue, a->batch, a->err)))
MQR_NOGVL(mqr_ack, int, mq_queue *queue; mq_lease *lease; mq_error *err;, (mqs_ack(a->queue, a->lease, a->err), 0))
MQR_NOGVL(mqr_nack, int, mq_queue *queue; mq_lease *lease; double delay; mq_error *err;,
          (mqs_nack(a->queue, a->lease, a->delay, a->err), 0))
MQR_NOGVL(mqr_unclaim, int, mq_queue *queue; mq_lease *lease; mq_error *err;,
          (mqs_unclaim(a->queue, a->lease, a->err), 0))
MQR_NOGVL(mqr_extend, int, mq_queue *queue; mq_lease *lease; double visibility; mq_error *err;,
          (mqs_extend(a->queue, a->lease, a->visibility, a->err), 0))
MQR_NOGVL(mqr_dead_count, int64_t, mq_queue *queue; mq_error *err;, (mqs_dead_count(a->queue, a->err)))
MQR_NOGVL(mqr_dead_requeue, int64_t, mq_queue *queue; int64_t seq; mq_error *err;,
          (mqs_dead_requeue(a->queue, a->seq, a->err)))
MQR_NOGVL(mqr_dead_purge, int64_t, mq_queue *queue; mq_error *err;, (mqs_dead_purge(a->queue, a->err)))
MQR_NOGVL(mqr_stats_json, char *, mq_queue *queue; mq_error *err;, (mqs_stats_json(a->queue, a->err)))
MQR_NOGVL(mqr_repair, int64_t, mq_queue *queue; mq_error *err;, (mqs_repair(a->queue, a->err)))
MQR_NOGVL(mqr_peek_json, char *, mq_queue *queue; const char *group; size_t n; mq_error *err;,
          (mqs_peek_json(a->queue, a->group, a->n, a->err)))
MQR_NOGVL(mqr_dead_list_json, char *, mq_queue *queue; size_t n; mq_error *err;,
          (mqs_dead_list_json(a->queue, a->n, a->err)))
MQR_NOGVL(mqr_purge_group, int, mq_queue *queue; const char *group; mq_error *err;,
          (mqs_purge_group(a->queue, a->group, a->err), 0))
MQR_NOGVL(mqr_queue_drop, int, mq_queue *queue; mq_error *err;, (mqs_queue_drop(a->queue, a->err), 0))
MQR_NOGVL(mqr_log_next, char *, double timeout;, (mqs_log_next(a->timeout)))
MQR_NOGVL(mqr_claim, mq_lease *,
          mq_queue *queue; const char *worker_id; double visibility; int min_priority; size_t max_events;
          double timeout; mq_cancel *cancel; mq_error *err;,
          (mqs_claim(a->queue, a->worker_id, a->visibility, a->min_priority, a->max_events, a->timeout, a->cancel,
                     a->err)))

/* Makes the C handle a call made, then lets a pending interrupt raise: the handle is
 * destroyed first, so nothing leaks. */
static void *mqr_call_making(void *(*fn)(void *), void *arg, void **made, mqr_kind kind, mqr_handle *h0) {
    mqr_call c;
    int state;
    mqr_call_init(&c, fn, arg, h0, NULL);
    mqr_check_open(&c);
    mqr_begin(&c);
    state = mqr_run(&c);
    if (state && c.ran && *made != NULL) {
        mqr_destroy_args d;
        d.kind = kind;
        d.ptr = *made;
        mqr_destroy_run(&d);
        *made = NULL;
    }
    mqr_end(&c);
    if (state) rb_jump_tag(state);
    return *made;
}

static void mqr_ubf_cancel(void *cancel) { mq_cancel_trigger((mq_cancel *)cancel); }

/* A claim, waiting or not, that Ruby's interrupts cancel (see the top of the file). */
static mq_lease *mqr_claim_call(mqr_handle *hq, mqr_claim_args *a) {
    mqr_call c;
    mq_error cerr;
    int state = 0;
    int closed_while_waiting = 0;
    double deadline = mqr_monotonic() + a->timeout;
    mqr_call_init(&c, mqr_claim_fn, a, hq, NULL);
    mqr_check_open(&c);
    a->cancel = NULL;
    if (a->timeout > 0) {
        /* A plain claim (timeout 0) gets no mq_cancel: mqs_claim makes it with
         * mq_claim_batch, which keeps working after mq_queue_interrupt. Like the other
         * short calls, it finishes, then the interrupt is processed. */
        a->cancel = mqs_cancel_new(&cerr);
        if (a->cancel == NULL) rb_raise(rb_eNoMemError, "mq_cancel_new: %s", cerr.message);
        c.ubf = mqr_ubf_cancel;
        c.ubf_arg = a->cancel;
    }
    mqr_begin(&c);
    for (;;) {
        a->result = NULL;
        state = mqr_run(&c);
        if (state) {
            if (c.ran && a->result != NULL) {
                /* The lease came with the interrupt: give it back before raising. No
                 * handler saw it, so it is an unclaim (not a delivery), not a nack. */
                mq_error nerr;
                mqs_unclaim(a->queue, a->result, &nerr);
                mqs_lease_destroy(a->result);
                a->result = NULL;
            }
            break;
        }
        if (a->err->status == MQ_CANCELLED) {
            /* Our unblocking function ran, but the interrupt raised nothing: wait on. */
            double left = deadline - mqr_monotonic();
            if (hq->closed) {
                closed_while_waiting = 1;
                break;
            }
            if (!(left > 0)) {
                a->err->status = MQ_EMPTY;
                a->err->message[0] = '\0';
                break;
            }
            mqs_cancel_reset(a->cancel);
            memset(a->err, 0, sizeof *a->err);
            a->timeout = left;
            continue;
        }
        if (a->err->status == MQ_INTERRUPTED && hq->closed) closed_while_waiting = 1;
        break;
    }
    mqr_end(&c);
    if (a->cancel != NULL) mqs_cancel_destroy(a->cancel);
    a->cancel = NULL;
    if (state) rb_jump_tag(state);
    if (closed_while_waiting) mqr_raise_closed("the queue was closed while the claim waited");
    return a->result;
}

/* ---- Ruby-only functions (wrapped below) ---- */

static mqr_handle *mqr_peek_any(VALUE obj) {
    void *p = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(obj, &p, SWIGTYPE_p_mqr_handle, 0)) || p == NULL)
        rb_raise(rb_eTypeError, "expected a MongoMQ handle");
    return (mqr_handle *)p;
}

/* Closes a handle: no new calls; the C handle is destroyed now, or when the last call
 * on it returns (a queue's waiting claims are woken for that), or, for a client, when
 * its last queue goes. Closing twice does nothing. */
static void mqr_close(VALUE handle) {
    mqr_handle *h;
    if (NIL_P(handle)) return;
    h = mqr_peek_any(handle);
    if (h->closed) return;
    h->closed = 1;
    if (h->kind == MQR_QUEUE && h->busy > 0 && h->ptr != NULL) mqs_queue_interrupt((mq_queue *)h->ptr);
    h->owners--;
    mqr_settle(h, 0);
}

static VALUE mqr_closed(VALUE handle) { return (NIL_P(handle) || mqr_peek_any(handle)->closed) ? Qtrue : Qfalse; }

/* The queue runs on `clock` (a clock handle) from now on; nil: on server time again.
 * The C queue keeps the clock until it is destroyed; the handle notes it for reopen. */
static void mqr_queue_set_clock(VALUE queue, VALUE clock) {
    mqr_handle *hq = mqr_get(queue, MQR_QUEUE);
    mqr_handle *hc = NIL_P(clock) ? NULL : mqr_get(clock, MQR_CLOCK);
    mqs_queue_set_clock((mq_queue *)hq->ptr, hc == NULL ? NULL : (mqs_clock *)hc->ptr);
    hq->clock = hc == NULL ? NULL : hc->ptr;
}

/* `queue` (reopened from `from`) runs on from's clock: the manual clock from was
 * given last, if any, whether or not its handle was closed since (from's C queue
 * holds it). */
static void mqr_queue_clock_from(VALUE queue, VALUE from) {
    mqr_handle *hq = mqr_get(queue, MQR_QUEUE);
    mqr_handle *hf = mqr_get(from, MQR_QUEUE);
    mqs_queue_set_clock((mq_queue *)hq->ptr, (mqs_clock *)hf->clock);
    hq->clock = hf->clock;
}

/* {"client" => [made, destroyed], "queue" => ..., "lease" => ..., "batch" => ...,
 * "clock" => ...} */
static VALUE mqr_counts(void) {
    VALUE counts = rb_hash_new();
    int k;
    for (k = 0; k < MQR_KINDS; k++)
        rb_hash_aset(counts, rb_str_new_cstr(mqr_kind_name[k]),
                     rb_ary_new_from_args(2, LONG2NUM(mqr_made[k]), LONG2NUM(mqr_destroyed[k])));
    return counts;
}
%}

/* ---- typemaps -------------------------------------------------------------------- */

/* mq_error *err: hidden; raised after the call. */
%typemap(in, numinputs=0) mq_error *err (mq_error e) {
  memset(&e, 0, sizeof e);
  $1 = &e;
}
%typemap(argout) mq_error *err {
  if ($1->status != MQ_OK && $1->status != MQ_EMPTY) mqr_raise($1);
}

/* The per-call mq_cancel of a claim is made in mqr_claim_call. */
%typemap(in, numinputs=0) mq_cancel *cancel {
  $1 = NULL;
}

/* Handles in. */
%typemap(in) mq_client * (mqr_handle *h = NULL) {
  h = mqr_get($input, MQR_CLIENT);
  $1 = (mq_client *)h->ptr;
}
%typemap(in) mq_queue * (mqr_handle *h = NULL) {
  h = mqr_get($input, MQR_QUEUE);
  $1 = (mq_queue *)h->ptr;
}
%typemap(in) mq_lease * (mqr_handle *h = NULL) {
  h = mqr_get($input, MQR_LEASE);
  $1 = (mq_lease *)h->ptr;
}
%typemap(in) mq_batch * (mqr_handle *h = NULL) {
  h = mqr_get($input, MQR_BATCH);
  $1 = (mq_batch *)h->ptr;
}
%typemap(in) mqs_clock * (mqr_handle *h = NULL) {
  h = mqr_get($input, MQR_CLOCK);
  $1 = (mqs_clock *)h->ptr;
}

/* Handles out. */
%typemap(out) mq_client *mqs_client_new "$result = mqr_wrap(MQR_CLIENT, $1, NULL);"
%typemap(out) mq_queue *mqs_queue_new "$result = mqr_wrap(MQR_QUEUE, $1, h1);"
%typemap(out) mq_lease *mqs_claim "$result = mqr_wrap(MQR_LEASE, $1, NULL);"
%typemap(out) mq_batch *mqs_batch_new "$result = mqr_wrap(MQR_BATCH, $1, NULL);"
%typemap(out) mqs_clock *mqs_clock_new {
  if ($1 == NULL) rb_raise(rb_eNoMemError, "mqs_clock_new: out of memory");
  $result = mqr_wrap(MQR_CLOCK, $1, NULL);
}

/* Strings in: a fresh copy that no other thread can change while the GVL is released,
 * kept alive on the stack until the wrapper returns. */
%typemap(in) const char * (VALUE copy = Qnil) {
  if (NIL_P($input)) {
    $1 = NULL;
  } else {
    VALUE s = $input;
    StringValue(s);
    if (memchr(RSTRING_PTR(s), '\0', (size_t)RSTRING_LEN(s)) != NULL)
      rb_exc_raise(rb_funcall(rb_path2class("MongoMQ::Error"), rb_intern("from_c"), 3, INT2NUM(MQ_ERR_ARG),
                              INT2NUM(0), rb_utf8_str_new_cstr("$1_name contains a NUL byte")));
    copy = rb_str_new(RSTRING_PTR(s), RSTRING_LEN(s));
    $1 = RSTRING_PTR(copy);
  }
}
%typemap(freearg) const char * "RB_GC_GUARD(copy$argnum);"

/* Bytes in: a frozen copy (copy-on-write: O(1) for a large String). */
%typemap(in) (const void *bytes, size_t len) (VALUE copy = Qnil) {
  VALUE s = $input;
  StringValue(s);
  copy = rb_str_new_frozen(s);
  $1 = (void *)RSTRING_PTR(copy);
  $2 = (size_t)RSTRING_LEN(copy);
}
%typemap(freearg) (const void *bytes, size_t len) "RB_GC_GUARD(copy$argnum);"

/* Bytes out: binary, copied once. */
%typemap(out) mqs_bytes {
  $result = $1.data == NULL ? Qnil : rb_str_new((const char *)$1.data, (long)$1.len);
}

/* Text out: UTF-8. */
%typemap(out) const char * "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"
%typemap(out) char *mqs_stats_json "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"
%typemap(out) char *mqs_peek_json "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"
%typemap(out) char *mqs_dead_list_json "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"
/* "LEVEL\tDOMAIN\tMESSAGE" (UTF-8 as libmongoc writes it), or nil after the timeout;
 * the C text is freed with free() (mongomq.i's newfree). */
%typemap(out) char *mqs_log_next "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"

/* ---- the calls without the GVL ----------------------------------------------------- */

%feature("action") mqs_client_new %{
  {
    mqr_client_new_args a = {arg1, arg2, NULL};
    result = (mq_client *)mqr_call_making(mqr_client_new_fn, &a, (void **)&a.result, MQR_CLIENT, NULL);
  }
%}
%feature("action") mqs_queue_new %{
  {
    mqr_queue_new_args a = {arg1, arg2, arg3, arg4, NULL};
    result = (mq_queue *)mqr_call_making(mqr_queue_new_fn, &a, (void **)&a.result, MQR_QUEUE, h1);
  }
%}
%feature("action") mqr_queue_reopen %{
  {
    mqr_queue_new_args a = {(mq_client *)h1->parent->ptr, arg2, arg3, arg4, NULL};
    (void)arg1;
    result = (mq_queue *)mqr_call_making(mqr_queue_new_fn, &a, (void **)&a.result, MQR_QUEUE, h1);
  }
%}
%typemap(out) mq_queue *mqr_queue_reopen "$result = mqr_wrap(MQR_QUEUE, $1, h1->parent);"
%feature("action") mqs_publish %{
  {
    mqr_publish_args a = {arg1, arg2, arg3, arg4, arg5, arg6, arg7, 0};
    mqr_call_simple(mqr_publish_fn, &a, h1, NULL);
    result = a.result;
  }
%}
%feature("action") mqs_publish_batch %{
  {
    mqr_publish_batch_args a = {arg1, arg2, arg3, 0};
    mqr_call_simple(mqr_publish_batch_fn, &a, h1, h2);
    result = a.result;
  }
%}
%feature("action") mqs_claim %{
  {
    mqr_claim_args a = {arg1, arg2, arg3, arg4, arg5, arg6, NULL, arg8, NULL};
    (void)arg7; /* the typemap's NULL: mqr_claim_call makes the cancel */
    result = mqr_claim_call(h1, &a);
  }
%}
%feature("action") mqs_ack %{
  {
    mqr_ack_args a = {arg1, arg2, arg3, 0};
    mqr_call_simple(mqr_ack_fn, &a, h1, h2);
  }
%}
%feature("action") mqs_nack %{
  {
    mqr_nack_args a = {arg1, arg2, arg3, arg4, 0};
    mqr_call_simple(mqr_nack_fn, &a, h1, h2);
  }
%}
%feature("action") mqs_unclaim %{
  {
    mqr_unclaim_args a = {arg1, arg2, arg3, 0};
    mqr_call_simple(mqr_unclaim_fn, &a, h1, h2);
  }
%}
%feature("action") mqs_extend %{
  {
    mqr_extend_args a = {arg1, arg2, arg3, arg4, 0};
    mqr_call_simple(mqr_extend_fn, &a, h1, h2);
  }
%}
%feature("action") mqs_dead_count %{
  {
    mqr_dead_count_args a = {arg1, arg2, 0};
    mqr_call_simple(mqr_dead_count_fn, &a, h1, NULL);
    result = a.result;
  }
%}
%feature("action") mqs_dead_requeue %{
  {
    mqr_dead_requeue_args a = {arg1, arg2, arg3, 0};
    mqr_call_simple(mqr_dead_requeue_fn, &a, h1, NULL);
    result = a.result;
  }
%}
%feature("action") mqs_dead_purge %{
  {
    mqr_dead_purge_args a = {arg1, arg2, 0};
    mqr_call_simple(mqr_dead_purge_fn, &a, h1, NULL);
    result = a.result;
  }
%}
%feature("action") mqs_stats_json %{
  {
    mqr_stats_json_args a = {arg1, arg2, NULL};
    mqr_call c;
    int state;
    mqr_call_init(&c, mqr_stats_json_fn, &a, h1, NULL);
    mqr_check_open(&c);
    mqr_begin(&c);
    state = mqr_run(&c);
    mqr_end(&c);
    if (state) {
      mq_free(a.result);
      rb_jump_tag(state);
    }
    result = a.result;
  }
%}
%feature("action") mqs_peek_json %{
  {
    mqr_peek_json_args a = {arg1, arg2, arg3, arg4, NULL};
    mqr_call c;
    int state;
    mqr_call_init(&c, mqr_peek_json_fn, &a, h1, NULL);
    mqr_check_open(&c);
    mqr_begin(&c);
    state = mqr_run(&c);
    mqr_end(&c);
    if (state) {
      mq_free(a.result);
      rb_jump_tag(state);
    }
    result = a.result;
  }
%}
%feature("action") mqs_dead_list_json %{
  {
    mqr_dead_list_json_args a = {arg1, arg2, arg3, NULL};
    mqr_call c;
    int state;
    mqr_call_init(&c, mqr_dead_list_json_fn, &a, h1, NULL);
    mqr_check_open(&c);
    mqr_begin(&c);
    state = mqr_run(&c);
    mqr_end(&c);
    if (state) {
      mq_free(a.result);
      rb_jump_tag(state);
    }
    result = a.result;
  }
%}
%feature("action") mqs_repair %{
  {
    mqr_repair_args a = {arg1, arg2, 0};
    mqr_call_simple(mqr_repair_fn, &a, h1, NULL);
    result = a.result;
  }
%}
%feature("action") mqs_purge_group %{
  {
    mqr_purge_group_args a = {arg1, arg2, arg3, 0};
    mqr_call_simple(mqr_purge_group_fn, &a, h1, NULL);
  }
%}
%feature("action") mqs_queue_drop %{
  {
    mqr_queue_drop_args a = {arg1, arg2, 0};
    mqr_call_simple(mqr_queue_drop_fn, &a, h1, NULL);
  }
%}
%feature("action") mqs_log_next %{
  {
    mqr_log_next_args a = {arg1, NULL};
    mqr_call c;
    int state;
    mqr_call_init(&c, mqr_log_next_fn, &a, NULL, NULL);
    state = mqr_run(&c);
    if (state) {
      free(a.result);
      rb_jump_tag(state);
    }
    result = a.result;
  }
%}

/* ---- Ruby-only functions ---------------------------------------------------------- */

/* Another mq_queue on the client of `queue`: a worker's own handle, which it may
 * interrupt without touching the queue it was made from. Works while `queue` is open,
 * even after its client was closed (the queue keeps the client alive). Only declared:
 * its action (above) is the whole call. */
mq_queue *mqr_queue_reopen(mq_queue *queue, const char *db_name, const char *prefix, mq_error *err);
void mqr_close(VALUE handle);
void mqr_queue_set_clock(VALUE queue, VALUE clock);
void mqr_queue_clock_from(VALUE queue, VALUE from);
VALUE mqr_closed(VALUE handle);
VALUE mqr_counts(void);
