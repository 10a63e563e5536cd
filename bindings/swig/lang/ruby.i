/* lang/ruby.i — the Ruby typemaps of mongomq.i, for the `mongomq` gem (bindings/ruby):
 * the handles' ownership, and the calls made without the GVL. Generated into
 * bindings/ruby/ext/mongomq_raw/mongomq_raw_wrap.c by scripts/swig-generate.sh ruby.
 * The raw module, MongoMQ::Raw, is private to the gem: users see bindings/ruby/lib.
 *
 * Values:
 *   mq_error *err         hidden, on the stack; after the call any status but MQ_OK and
 *                         MQ_EMPTY raises MongoMQ::Error.from_c(status, its name, server
 *                         code, message). The status name is mq_status_name's: the gem keeps
 *                         no table of its own.
 *   mq_status (returned)  -> nil: the call's value is its out-parameters'.
 *   T **out               -> returned: the new handle (nil for NULL: no lease).
 *   int64_t *OUT, uint64_t *OUT  -> returned: an Integer (mq_queue_repair_counts: the
 *                         Array [runs, fixed]).
 *   char **json_out       -> returned: a UTF-8 String (the C text released with mq_free).
 *   (const void *event, size_t event_len)  <- a String of any encoding, its bytes as they are.
 *   const char * in       <- a String (nil is NULL), copied; a NUL byte inside it is the
 *                         argument error naming the parameter.
 *   mqs_bytes             -> a new binary (ASCII-8BIT) String, copied once.
 *   const char * out      -> a UTF-8 String (group ids, tokens, names).
 *
 * Handles. The C handles (client, queue, lease, batch, manual clock) reach Ruby as one
 * class, MongoMQ::Raw::Handle, over an mqr_handle. The GC (%freefunc) and an explicit
 * close (Raw.mqr_close) both come down to mqr_settle, which destroys the C handle
 * exactly once, when nothing needs it any more:
 *   - `owners`: its Ruby object until closed or collected and, for a client, each live
 *     queue made from it. So a queue keeps its client alive, and the GC may free a
 *     client and its queues in any order.
 *   - `busy`: calls running on it without the GVL. A close while one runs marks the
 *     handle closed (new calls raise MongoMQ::ClosedError), wakes a queue's waiting
 *     claims (mq_queue_interrupt) and leaves the destroy to the last call out.
 * These fields are only touched with the GVL held. A manual clock's destroy is
 * mqs_clock_release (each queue it was given keeps a reference of its own).
 *
 * The GVL. Every call that talks to the server, and the destroys of explicit closes,
 * run without the GVL (rb_thread_call_without_gvl2) on arguments copied first. A
 * waiting claim gets an mq_cancel of its own and an unblocking function that triggers
 * it: Thread#kill, Thread#raise, Timeout.timeout and signals end that one claim within
 * milliseconds and the interrupt is processed as Ruby does. A lease the claim took as
 * the interrupt came is given back with mq_unclaim first (nobody saw it: a nack would
 * count a delivery). An interrupt that raises nothing (a trap handler that returns)
 * lets the claim wait on for the rest of its time. The other calls have no unblocking
 * function: each is a few server commands, bounded by the URI's timeouts; it finishes,
 * then the interrupt is processed, and what the call made (a handle, a text) is freed
 * if the interrupt raises. mqs_log_next (the gem's log thread asks with timeout 0, and
 * sleeps in Ruby between asks: see lib/mongomq/log.rb) runs without the GVL.
 */

%{
#include <ruby/thread.h>
#include <time.h>
%}

/* mqs_bytes is declared before this file is included, so SWIG wraps its struct (as
 * Raw::Mqs_bytes, unused: the typemap below makes a String) and warns that the name
 * is no Ruby class name (801), which says nothing here. */
#pragma SWIG nowarn=801

/* Not for Ruby: the per-call mq_cancel is made here; destroys go through mqr_close; a
 * queue is given a clock with mqr_queue_set_clock (which notes it for reopen). (Exact
 * names: they win over mongomq.i's list, which comes first.) */
%ignore mq_cancel_new;
%ignore mq_cancel_trigger;
%ignore mq_cancel_triggered;
%ignore mq_cancel_reset;
%ignore mq_cancel_destroy;
%ignore mq_client_destroy;
%ignore mqs_queue_destroy;
%ignore mq_lease_destroy;
%ignore mq_batch_destroy;
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

/* The code below calls mongomq.i's shims, so it goes to the wrapper section, which SWIG
 * emits after the header section that holds mongomq.i's %inline code. */
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

/* The MongoMQ error for a status (not MQ_OK or MQ_EMPTY), named by the C library. */
static VALUE mqr_error(mq_status status, int server_code, const char *message) {
    return rb_funcall(rb_path2class("MongoMQ::Error"), rb_intern("from_c"), 4, INT2NUM((int)status),
                      rb_utf8_str_new_cstr(mq_status_name(status)), INT2NUM(server_code),
                      rb_utf8_str_new_cstr(message));
}

static void mqr_raise(const mq_error *e) { rb_exc_raise(mqr_error(e->status, e->server_code, e->message)); }

static void mqr_raise_closed(const char *what) { rb_raise(rb_path2class("MongoMQ::ClosedError"), "%s", what); }

static void mqr_raise_closed_kind(mqr_kind kind) {
    static const char *const msg[] = {"the client is closed", "the queue is closed", "the lease is closed",
                                      "the batch is closed", "the clock is closed"};
    mqr_raise_closed(msg[kind]);
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

/* Runs fn(arg) without the GVL, or with it when an interrupt is pending (gvl2 then
 * does not call fn): for work that must happen whatever comes. Interrupts stay
 * pending for Ruby's next check. */
static void mqr_without_gvl_always(void *(*fn)(void *), void *arg) {
    mqr_call c;
    c.fn = fn;
    c.arg = arg;
    c.ran = 0;
    rb_thread_call_without_gvl2(mqr_call_run, &c, NULL, NULL);
    if (!c.ran) fn(arg);
}

typedef struct mqr_destroy_args {
    mqr_kind kind;
    void *ptr;
} mqr_destroy_args;

static void *mqr_destroy_run(void *p) {
    mqr_destroy_args *a = (mqr_destroy_args *)p;
    switch (a->kind) {
    case MQR_CLIENT: mq_client_destroy((mq_client *)a->ptr); break;
    case MQR_QUEUE: mqs_queue_destroy((mq_queue *)a->ptr); break;
    case MQR_LEASE: mq_lease_destroy((mq_lease *)a->ptr); break;
    case MQR_BATCH: mq_batch_destroy((mq_batch *)a->ptr); break;
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

/* The client handle of h: h itself, or a queue's client (a new queue's parent). */
static mqr_handle *mqr_client_of(mqr_handle *h) { return h->kind == MQR_QUEUE ? h->parent : h; }

static VALUE mqr_wrap(mqr_kind kind, void *ptr, mqr_handle *parent) {
    mqr_handle *h;
    if (ptr == NULL) return Qnil;
    h = ALLOC(mqr_handle);
    *h = (mqr_handle){kind, ptr, 1, 0, 0, 0, parent, NULL};
    if (parent != NULL) parent->owners++;
    mqr_made[kind]++;
    return SWIG_NewPointerObj(h, SWIGTYPE_p_mqr_handle, SWIG_POINTER_OWN);
}

static mqr_handle *mqr_peek_any(VALUE obj) {
    void *p = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(obj, &p, SWIGTYPE_p_mqr_handle, 0)) || p == NULL)
        rb_raise(rb_eTypeError, "expected a MongoMQ handle");
    return (mqr_handle *)p;
}

/* The handle behind a typemap's argument; a closed one raises MongoMQ::ClosedError. */
static mqr_handle *mqr_get(VALUE obj, mqr_kind kind) {
    mqr_handle *h = mqr_peek_any(obj);
    if (h->kind != kind)
        rb_raise(rb_eTypeError, "expected a MongoMQ %s handle, got a %s", mqr_kind_name[kind], mqr_kind_name[h->kind]);
    if (h->closed || h->ptr == NULL) mqr_raise_closed_kind(kind);
    return h;
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

static void mqr_call_init(mqr_call *c, void *(*fn)(void *), void *arg, mqr_handle *h0, mqr_handle *h1) {
    int i;
    c->fn = fn;
    c->arg = arg;
    c->ran = 0;
    c->ubf = NULL;
    c->ubf_arg = NULL;
    c->uses[0] = h0;
    c->uses[1] = h1;
    /* The typemaps checked the handles, but converting later arguments may have run
     * Ruby code (to_str, to_f) and let another thread close one: check again, with the
     * GVL held from here to the busy count (mqr_begin). */
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

/* A whole call on handles h0, h1 (either NULL). *made (may be NULL) is what the call
 * made, released with `release` if an interrupt raises after it. */
static void mqr_call_do(void *(*fn)(void *), void *arg, void **made, void (*release)(void *), mqr_handle *h0,
                        mqr_handle *h1) {
    mqr_call c;
    int state;
    mqr_call_init(&c, fn, arg, h0, h1);
    mqr_begin(&c);
    state = mqr_run(&c);
    mqr_end(&c);
    if (state && c.ran && made != NULL && *made != NULL) {
        release(*made);
        *made = NULL;
    }
    if (state) rb_jump_tag(state);
}

static void mqr_release_client(void *p) { mq_client_destroy((mq_client *)p); }
static void mqr_release_queue(void *p) { mqs_queue_destroy((mq_queue *)p); }

/* MQR_NOGVL(name, result type, fields, call): a struct `name_args` of the call's
 * arguments (in the wrapper's order) and its result, and `name_fn`, which makes it. */
#define MQR_NOGVL(NAME, RTYPE, FIELDS, CALL)                   \
    typedef struct mqr_##NAME##_args {                         \
        FIELDS                                                 \
        RTYPE result;                                          \
    } mqr_##NAME##_args;                                       \
    static void *mqr_##NAME##_fn(void *p) {                    \
        mqr_##NAME##_args *a = (mqr_##NAME##_args *)p;         \
        a->result = CALL;                                      \
        return NULL;                                           \
    }

MQR_NOGVL(client_new, mq_status, const char *uri; mq_client **out; mq_error *err;,
          mq_client_new(a->uri, a->out, a->err))
MQR_NOGVL(queue_new, mq_status, mq_client *client; const char *db; const char *prefix; mq_queue **out; mq_error *err;,
          mq_queue_new(a->client, a->db, a->prefix, a->out, a->err))
MQR_NOGVL(queue_new_with, mq_status,
          mq_client *client; const char *db; const char *prefix; int partitions; mq_queue **out; mq_error *err;,
          mqs_queue_new_with(a->client, a->db, a->prefix, a->partitions, a->out, a->err))
MQR_NOGVL(publish, mq_status,
          mq_queue *queue; const char *group; const void *event; size_t len; int priority; double at; int has_key;
          const char *key; const void *attrs; size_t attrs_len; int64_t *seq; mq_error *err;,
          mqs_publish(a->queue, a->group, a->event, a->len, a->priority, a->at, a->has_key, a->key, a->attrs,
                      a->attrs_len, a->seq, a->err))
MQR_NOGVL(publish_batch, mq_status, mq_queue *queue; const mq_batch *batch; int64_t *first; mq_error *err;,
          mqs_publish_batch(a->queue, a->batch, a->first, a->err))
MQR_NOGVL(ack, mq_status, mq_queue *queue; const mq_lease *lease; mq_error *err;, mq_ack(a->queue, a->lease, a->err))
MQR_NOGVL(nack, mq_status, mq_queue *queue; const mq_lease *lease; double delay; mq_error *err;,
          mq_nack(a->queue, a->lease, a->delay, a->err))
MQR_NOGVL(unclaim, mq_status, mq_queue *queue; const mq_lease *lease; mq_error *err;,
          mq_unclaim(a->queue, a->lease, a->err))
MQR_NOGVL(extend, mq_status, mq_queue *queue; const mq_lease *lease; double visibility; mq_error *err;,
          mq_extend(a->queue, a->lease, a->visibility, a->err))
MQR_NOGVL(dead_count, mq_status, mq_queue *queue; int64_t *n; mq_error *err;, mq_dead_count(a->queue, a->n, a->err))
MQR_NOGVL(dead_requeue, mq_status, mq_queue *queue; int64_t seq; int64_t *new_seq; mq_error *err;,
          mq_dead_requeue(a->queue, a->seq, a->new_seq, a->err))
MQR_NOGVL(dead_purge, mq_status, mq_queue *queue; int64_t *n; mq_error *err;, mq_dead_purge(a->queue, a->n, a->err))
MQR_NOGVL(stats_json, mq_status, mq_queue *queue; char **json; mq_error *err;,
          mq_stats_json(a->queue, a->json, a->err))
MQR_NOGVL(repair, mq_status, mq_queue *queue; int64_t *n; mq_error *err;, mq_repair(a->queue, a->n, a->err))
MQR_NOGVL(peek_json, mq_status, mq_queue *queue; const char *group; size_t n; char **json; mq_error *err;,
          mq_peek_json(a->queue, a->group, a->n, a->json, a->err))
MQR_NOGVL(dead_list_json, mq_status, mq_queue *queue; size_t n; char **json; mq_error *err;,
          mq_dead_list_json(a->queue, a->n, a->json, a->err))
MQR_NOGVL(purge_group, mq_status, mq_queue *queue; const char *group; mq_error *err;,
          mq_purge_group(a->queue, a->group, a->err))
MQR_NOGVL(queue_drop, mq_status, mq_queue *queue; mq_error *err;, mq_queue_drop(a->queue, a->err))
MQR_NOGVL(pause_group, mq_status, mq_queue *queue; const char *group; mq_error *err;,
          mq_pause_group(a->queue, a->group, a->err))
MQR_NOGVL(resume_group, mq_status, mq_queue *queue; const char *group; mq_error *err;,
          mq_resume_group(a->queue, a->group, a->err))
MQR_NOGVL(groups_json, mq_status,
          mq_queue *queue; unsigned int states; const char *prefix; int min_attempts; double held; double parked;
          int sort; const char *after; size_t limit; char **json; mq_error *err;,
          mqs_groups_json(a->queue, a->states, a->prefix, a->min_attempts, a->held, a->parked, a->sort, a->after,
                          a->limit, a->json, a->err))
MQR_NOGVL(dead_list_with, mq_status, mq_queue *queue; size_t limit; size_t offset; char **json; mq_error *err;,
          mqs_dead_list_with(a->queue, a->limit, a->offset, a->json, a->err))
MQR_NOGVL(log_next, char *, double timeout;, mqs_log_next(a->timeout))
/* Every claim is mqs_claim_in: parts NULL, 0 (mqs_claim's) is every partition. */
MQR_NOGVL(claim, mq_status,
          mq_queue *queue; const char *worker_id; double visibility; int min_priority; size_t max_events;
          double timeout; mq_cancel *cancel; const void *parts; size_t parts_len; mq_lease **out; mq_error *err;,
          mqs_claim_in(a->queue, a->worker_id, a->visibility, a->min_priority, a->max_events, a->timeout, a->cancel,
                       a->parts, a->parts_len, a->out, a->err))

/* The actions below (one line each): the call NAME without the GVL, its arguments the
 * wrapper's argN; h1, h2 are the typemaps' handles of arguments 1 and 2. MQR_DO: a call;
 * MQR_DO_MADE: a call that makes something (a handle, a text) in *MADE, which RELEASE
 * frees if an interrupt raises after it (the argout typemaps, which would have taken
 * it, then do not run). */
#define MQR_DO(NAME, H2, ...) { mqr_##NAME##_args a = {__VA_ARGS__, 0}; \
    mqr_call_do(mqr_##NAME##_fn, &a, NULL, NULL, h1, H2); result = a.result; }
#define MQR_DO_MADE(NAME, RELEASE, H1, MADE, ...) { mqr_##NAME##_args a = {__VA_ARGS__, 0}; \
    mqr_call_do(mqr_##NAME##_fn, &a, (void **)(MADE), RELEASE, H1, NULL); result = a.result; }

static void mqr_ubf_cancel(void *cancel) { mq_cancel_trigger((mq_cancel *)cancel); }

/* A claim, waiting or not, that Ruby's interrupts cancel (see the top of the file); the
 * lease in *a->out. */
static mq_status mqr_claim_call(mqr_handle *hq, mqr_claim_args *a) {
    mqr_call c;
    mq_error cerr;
    int state = 0;
    int closed_while_waiting = 0;
    double deadline = mqr_monotonic() + a->timeout;
    mqr_call_init(&c, mqr_claim_fn, a, hq, NULL);
    a->cancel = NULL;
    if (a->timeout > 0) {
        /* A plain claim (timeout 0) gets no mq_cancel: without one mqs_claim is the
         * plain claim, which keeps working after mq_queue_interrupt. Like the other
         * short calls, it finishes, then the interrupt is processed. */
        mq_cancel_new(&a->cancel, &cerr);
        if (a->cancel == NULL) rb_raise(rb_eNoMemError, "mq_cancel_new: %s", cerr.message);
        c.ubf = mqr_ubf_cancel;
        c.ubf_arg = a->cancel;
    }
    mqr_begin(&c);
    for (;;) {
        *a->out = NULL;
        state = mqr_run(&c);
        if (state) {
            if (c.ran && *a->out != NULL) {
                /* The lease came with the interrupt: give it back (unclaim: no
                 * handler saw it, so not a delivery) before raising. */
                mq_error nerr;
                mq_unclaim(a->queue, *a->out, &nerr);
                mq_lease_destroy(*a->out);
                *a->out = NULL;
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
                a->result = a->err->status = MQ_EMPTY;
                a->err->message[0] = '\0';
                break;
            }
            mq_cancel_reset(a->cancel);
            memset(a->err, 0, sizeof *a->err);
            a->timeout = left;
            continue;
        }
        if (a->err->status == MQ_INTERRUPTED && hq->closed) closed_while_waiting = 1;
        break;
    }
    mqr_end(&c);
    if (a->cancel != NULL) mq_cancel_destroy(a->cancel);
    a->cancel = NULL;
    if (state) rb_jump_tag(state);
    if (closed_while_waiting) mqr_raise_closed("the queue was closed while the claim waited");
    return a->result;
}

/* ---- Ruby-only functions (declared at the end) ---- */

/* Closes a handle: no new calls; the C handle is destroyed now, or when the last call
 * on it returns (a queue's waiting claims are woken for that), or, for a client, when
 * its last queue goes. Closing twice does nothing. */
static void mqr_close(VALUE handle) {
    mqr_handle *h;
    if (NIL_P(handle)) return;
    h = mqr_peek_any(handle);
    if (h->closed) return;
    h->closed = 1;
    if (h->kind == MQR_QUEUE && h->busy > 0 && h->ptr != NULL) mq_queue_interrupt((mq_queue *)h->ptr);
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

/* Handles in: $1 the C handle, h<argnum> its mqr_handle (for the actions). */
%define MQR_HANDLE_IN(TYPE, KIND)
%typemap(in) TYPE * (mqr_handle *h = NULL) {
  h = mqr_get($input, KIND);
  $1 = (TYPE *)h->ptr;
}
%enddef
MQR_HANDLE_IN(mq_client, MQR_CLIENT)
MQR_HANDLE_IN(mq_queue, MQR_QUEUE)
MQR_HANDLE_IN(mq_lease, MQR_LEASE)
MQR_HANDLE_IN(mq_batch, MQR_BATCH)
MQR_HANDLE_IN(mqs_clock, MQR_CLOCK)

/* The return value: nil, then each out-parameter's value. SWIG_Ruby_AppendOutput's last
 * argument says that the result so far is "no value" (so the first output replaces it):
 * true for the mq_status calls too, whose status is nil (err's typemap has raised on a
 * failure). */
%typemap(out) mq_status "(void)$1; $result = Qnil;"

/* Handles out: T **out, made by the call, is the new handle. A new queue's parent is the
 * client of h1: h1 itself for mq_queue_new, h1's client for mqr_queue_reopen. */
%define MQR_HANDLE_OUT(TYPE, KIND, PARENT)
%typemap(in, numinputs=0) TYPE **out (TYPE *made = NULL) "$1 = &made;"
%typemap(argout) TYPE **out "$result = SWIG_Ruby_AppendOutput($result, mqr_wrap(KIND, made$argnum, PARENT), 1);"
%enddef
MQR_HANDLE_OUT(mq_client, MQR_CLIENT, NULL)
MQR_HANDLE_OUT(mq_queue, MQR_QUEUE, mqr_client_of(h1))
MQR_HANDLE_OUT(mq_lease, MQR_LEASE, NULL)
MQR_HANDLE_OUT(mq_batch, MQR_BATCH, NULL)
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
      rb_exc_raise(mqr_error(MQ_ERR_ARG, 0, "$1_name contains a NUL byte"));
    copy = rb_str_new(RSTRING_PTR(s), RSTRING_LEN(s));
    $1 = RSTRING_PTR(copy);
  }
}
%typemap(freearg) const char * "RB_GC_GUARD(copy$argnum);"

/* Counts and seqs out: Integers. */
%typemap(in, numinputs=0) int64_t *OUT (int64_t value = 0) "$1 = &value;"
%typemap(argout) int64_t *OUT "$result = SWIG_Ruby_AppendOutput($result, LL2NUM((long long)value$argnum), 1);"
%typemap(in, numinputs=0) uint64_t *OUT (uint64_t value = 0) "$1 = &value;"
%typemap(argout) uint64_t *OUT
  "$result = SWIG_Ruby_AppendOutput($result, ULL2NUM((unsigned long long)value$argnum), 1);"

/* JSON out: a UTF-8 String; the C text released with mq_free here (NULL after a
 * failure; an interrupt that raises after the call released it in mqr_call_do). */
%typemap(in, numinputs=0) char **json_out (char *text = NULL) "$1 = &text;"
%typemap(argout) char **json_out {
  VALUE s = text$argnum == NULL ? Qnil : rb_utf8_str_new_cstr(text$argnum);
  mq_free(text$argnum);
  text$argnum = NULL;
  $result = SWIG_Ruby_AppendOutput($result, s, 1);
}

/* Bytes in: a frozen copy (copy-on-write: O(1) for a large String). */
%typemap(in) (const void *event, size_t event_len) (VALUE copy = Qnil) {
  VALUE s = $input;
  StringValue(s);
  copy = rb_str_new_frozen(s);
  $1 = (void *)RSTRING_PTR(copy);
  $2 = (size_t)RSTRING_LEN(copy);
}
%typemap(freearg) (const void *event, size_t event_len) "RB_GC_GUARD(copy$argnum);"

/* Bytes out: binary, copied once. */
%typemap(out) mqs_bytes {
  $result = $1.data == NULL ? Qnil : rb_str_new((const char *)$1.data, (long)$1.len);
}

/* Text out: UTF-8 (a log line, "LEVEL\tDOMAIN\tMESSAGE" or nil after the timeout, is then
 * freed by mongomq.i's newfree). */
%typemap(out) const char *, char * "$result = $1 == NULL ? Qnil : rb_utf8_str_new_cstr($1);"

/* ---- the calls without the GVL ----------------------------------------------------- */

%feature("action") mq_client_new "MQR_DO_MADE(client_new, mqr_release_client, NULL, arg2, arg1, arg2, arg3)"
%feature("action") mq_queue_new "MQR_DO_MADE(queue_new, mqr_release_queue, h1, arg4, arg1, arg2, arg3, arg4, arg5)"
%feature("action") mqs_queue_new_with
  "MQR_DO_MADE(queue_new_with, mqr_release_queue, h1, arg5, arg1, arg2, arg3, arg4, arg5, arg6)"
/* (the client of arg1's queue, which keeps it alive; arg1's partitions) */
%feature("action") mqr_queue_reopen "MQR_DO_MADE(queue_new_with, mqr_release_queue, h1, arg4,
  (mq_client *)h1->parent->ptr, arg2, arg3, mq_queue_partitions(arg1), arg4, arg5)"
%feature("action") mqs_publish
  "MQR_DO(publish, NULL, arg1, arg2, arg3, arg4, arg5, arg6, arg7, arg8, arg9, arg10, arg11, arg12)"
%feature("action") mqs_publish_batch "MQR_DO(publish_batch, h2, arg1, arg2, arg3, arg4)"
%feature("action") mq_ack "MQR_DO(ack, h2, arg1, arg2, arg3)"
%feature("action") mq_nack "MQR_DO(nack, h2, arg1, arg2, arg3, arg4)"
%feature("action") mq_unclaim "MQR_DO(unclaim, h2, arg1, arg2, arg3)"
%feature("action") mq_extend "MQR_DO(extend, h2, arg1, arg2, arg3, arg4)"
%feature("action") mq_dead_count "MQR_DO(dead_count, NULL, arg1, arg2, arg3)"
%feature("action") mq_dead_requeue "MQR_DO(dead_requeue, NULL, arg1, arg2, arg3, arg4)"
%feature("action") mq_dead_purge "MQR_DO(dead_purge, NULL, arg1, arg2, arg3)"
%feature("action") mq_repair "MQR_DO(repair, NULL, arg1, arg2, arg3)"
%feature("action") mq_purge_group "MQR_DO(purge_group, NULL, arg1, arg2, arg3)"
%feature("action") mq_queue_drop "MQR_DO(queue_drop, NULL, arg1, arg2)"
%feature("action") mq_pause_group "MQR_DO(pause_group, NULL, arg1, arg2, arg3)"
%feature("action") mq_resume_group "MQR_DO(resume_group, NULL, arg1, arg2, arg3)"
%feature("action") mqs_groups_json
  "MQR_DO_MADE(groups_json, mq_free, h1, arg10, arg1, arg2, arg3, arg4, arg5, arg6, arg7, arg8, arg9, arg10, arg11)"
%feature("action") mqs_dead_list_with "MQR_DO_MADE(dead_list_with, mq_free, h1, arg4, arg1, arg2, arg3, arg4, arg5)"
%feature("action") mq_stats_json "MQR_DO_MADE(stats_json, mq_free, h1, arg2, arg1, arg2, arg3)"
%feature("action") mq_peek_json "MQR_DO_MADE(peek_json, mq_free, h1, arg4, arg1, arg2, arg3, arg4, arg5)"
%feature("action") mq_dead_list_json "MQR_DO_MADE(dead_list_json, mq_free, h1, arg3, arg1, arg2, arg3, arg4)"
%feature("action") mqs_log_next "MQR_DO_MADE(log_next, free, NULL, &a.result, arg1)"
%feature("action") mqs_claim %{
  {
    mqr_claim_args a = {arg1, arg2, arg3, arg4, arg5, arg6, NULL, NULL, 0, arg8, arg9, MQ_OK};
    (void)arg7; /* the typemap's NULL: mqr_claim_call makes the cancel */
    result = mqr_claim_call(h1, &a);
  }
%}
/* (0.8.0) with the partitions to take from, packed (the frozen copy of the bytes
 * typemap stays alive until the wrapper returns) */
%feature("action") mqs_claim_in %{
  {
    mqr_claim_args a = {arg1, arg2, arg3, arg4, arg5, arg6, NULL, arg8, arg9, arg10, arg11, MQ_OK};
    (void)arg7; /* the typemap's NULL: mqr_claim_call makes the cancel */
    result = mqr_claim_call(h1, &a);
  }
%}

/* ---- Ruby-only functions ---------------------------------------------------------- */

/* Another mq_queue on the client of `queue`, with its partitions, in mq_queue_new's
 * shape: a worker's own handle, which it may interrupt without touching the queue it
 * was made from. Works while `queue` is open, even after its client was closed (the
 * queue keeps the client alive). Only declared: its action (above) is the whole call. */
mq_status mqr_queue_reopen(mq_queue *queue, const char *db_name, const char *prefix, mq_queue **out, mq_error *err);
void mqr_close(VALUE handle);
void mqr_queue_set_clock(VALUE queue, VALUE clock);
void mqr_queue_clock_from(VALUE queue, VALUE from);
VALUE mqr_closed(VALUE handle);
VALUE mqr_counts(void);
