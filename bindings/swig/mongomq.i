/* mongomq.i — the one SWIG interface every SWIG binding (Java, Go, Ruby, Python) is
 * generated from. What it does once, for every language:
 *
 *   - It wraps a small set of "mqs_" shim functions (below), not the C API itself.
 *     Each shim is one C API call reshaped for SWIG: the handle a call makes is its
 *     return value (not a T **out), a seq is a return value (not an int64_t *), and
 *     the last parameter is always `mq_error *err`.
 *   - `mq_error *err` is hidden from the language: a per-language typemap allocates
 *     it on the stack and, after the call, raises the language's error when
 *     err->status is anything but MQ_OK or MQ_EMPTY (MQ_EMPTY is "no lease": the shim
 *     returns NULL). The error carries the status, the server code and the message.
 *     (Go has no exceptions: go.i passes the mq_error through and the hand-written
 *     Go package turns it into an `error` value.)
 *   - `(const void *bytes, size_t len)` is the language's byte string in, and
 *     `mqs_bytes` (a pointer and a length into a lease) is a byte string out, copied
 *     once by the typemap.
 *   - Strings the library allocates (the stats JSON) are released with mq_free.
 *   - The two C calls that take a function pointer are reshaped so that the library
 *     never calls into a language's runtime: mq_queue_set_clock gets a manual clock
 *     kept here (mqs_clock: the language sets and advances it), and mq_log_set_handler
 *     gets a handler kept here that buffers libmongoc's lines (mqs_log_*), which each
 *     binding drains on a thread of its own and hands to the user's function.
 *
 * Per-language typemaps live in lang/<language>.i, included below; nothing else here
 * is language-specific. The generated module is private to each package: users see
 * the hand-written layer (bindings/<language>/).
 */
%module mongomq_raw

%{
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mongomq.h"
/* defined with the manual clock, below: it also lets go of the queue's clocks */
static void mqs_queue_destroy(mq_queue *queue);
%}

%include <stdint.i>

/* ---- the shim: one C call each, reshaped for SWIG --------------------------------- */

%inline %{
/* Bytes inside a lease, valid until the lease is destroyed; copied out by the
 * language's typemap. */
typedef struct mqs_bytes {
    const void *data;
    size_t len;
} mqs_bytes;
%}

/* The per-language typemaps: mq_error *err, (const void *bytes, size_t len),
 * mqs_bytes, and the release of returned strings. */
#if defined(SWIGJAVA)
%include "lang/java.i"
#elif defined(SWIGGO)
%include "lang/go.i"
#elif defined(SWIGRUBY)
%include "lang/ruby.i"
#elif defined(SWIGPYTHON)
%include "lang/python.i"
#else
#error "mongomq.i: no typemaps for this SWIG language"
#endif

/* Opaque handles: SWIG sees only the typedef names. */
typedef struct mq_client mq_client;
typedef struct mq_queue mq_queue;
typedef struct mq_lease mq_lease;
typedef struct mq_batch mq_batch;
typedef struct mq_cancel mq_cancel;

/* Constants the layers above need. */
%constant int MQ_OK = MQ_OK;
%constant int MQ_EMPTY = MQ_EMPTY;
%constant int MQ_LEASE_LOST = MQ_LEASE_LOST;
%constant int MQ_INTERRUPTED = MQ_INTERRUPTED;
%constant int MQ_CANCELLED = MQ_CANCELLED;
%constant int MQ_ERR_ARG = MQ_ERR_ARG;
%constant int MQ_ERR_CONNECT = MQ_ERR_CONNECT;
%constant int MQ_ERR_SERVER = MQ_ERR_SERVER;
%constant int MQ_ERR_NOMEM = MQ_ERR_NOMEM;
%constant int MQ_ERR_INTERNAL = MQ_ERR_INTERNAL;
%constant int MQ_PRIORITY_MIN = MQ_PRIORITY_MIN;
%constant int MQ_PRIORITY_MAX = MQ_PRIORITY_MAX;
%constant int MQ_BATCH_MAX = MQ_BATCH_MAX;

%newobject mqs_stats_json;
%newobject mqs_peek_json;
%newobject mqs_dead_list_json;
%typemap(newfree) char *mqs_stats_json "mq_free($1);"
%typemap(newfree) char *mqs_peek_json "mq_free($1);"
%typemap(newfree) char *mqs_dead_list_json "mq_free($1);"
%newobject mqs_log_next;
%typemap(newfree) char *mqs_log_next "free($1);"

%inline %{
static const char *mqs_version(void) { return mq_version(); }
static const char *mqs_status_name(int status) { return mq_status_name((mq_status)status); }

/* ---- client ---- */
static mq_client *mqs_client_new(const char *uri, mq_error *err) {
    mq_client *c = NULL;
    mq_client_new(uri, &c, err);
    return c;
}
static void mqs_client_destroy(mq_client *client) { mq_client_destroy(client); }
static uint64_t mqs_client_command_count(mq_client *client) { return mq_client_command_count(client); }
static uint64_t mqs_client_write_concern_errors(mq_client *client) { return mq_client_write_concern_errors(client); }

/* ---- queue ---- */
static mq_queue *mqs_queue_new(mq_client *client, const char *db_name, const char *prefix, mq_error *err) {
    mq_queue *q = NULL;
    mq_queue_new(client, db_name, prefix, &q, err);
    return q;
}
static void mqs_queue_interrupt(mq_queue *queue) { mq_queue_interrupt(queue); }
static void mqs_queue_set_max_attempts(mq_queue *queue, int max_attempts, mq_error *err) {
    mq_queue_set_max_attempts(queue, max_attempts, err);
}
static double mqs_queue_now(mq_queue *queue) { return mq_queue_now(queue); }
static double mqs_queue_clock_offset(mq_queue *queue) { return mq_queue_clock_offset(queue); }
static void mqs_queue_set_repair_interval(mq_queue *queue, double interval_s, mq_error *err) {
    mq_queue_set_repair_interval(queue, interval_s, err);
}
static uint64_t mqs_queue_repair_runs(mq_queue *queue) {
    uint64_t runs = 0;
    mq_queue_repair_counts(queue, &runs, NULL);
    return runs;
}
static uint64_t mqs_queue_repair_fixed(mq_queue *queue) {
    uint64_t fixed = 0;
    mq_queue_repair_counts(queue, NULL, &fixed);
    return fixed;
}

/* ---- publish (mq_publish_with): not_before_epoch_s 0 is "now" ---- */
static int64_t mqs_publish(mq_queue *queue, const char *group_id, const void *bytes, size_t len, int priority,
                           double not_before_epoch_s, mq_error *err) {
    int64_t seq = 0;
    mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT;
    opts.priority = priority;
    opts.not_before = not_before_epoch_s;
    mq_publish_with(queue, group_id, bytes, len, &opts, &seq, err);
    return seq;
}

/* ---- batches ---- */
static mq_batch *mqs_batch_new(mq_error *err) {
    mq_batch *b = NULL;
    mq_batch_new(&b, err);
    return b;
}
static void mqs_batch_add(mq_batch *batch, const char *group_id, const void *bytes, size_t len, int priority,
                          mq_error *err) {
    mq_batch_add(batch, group_id, bytes, len, priority, err);
}
/* mq_batch_add_with: a batch event may be scheduled (not_before_epoch_s 0: now). */
static void mqs_batch_add_at(mq_batch *batch, const char *group_id, const void *bytes, size_t len, int priority,
                             double not_before_epoch_s, mq_error *err) {
    mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT;
    opts.priority = priority;
    opts.not_before = not_before_epoch_s;
    mq_batch_add_with(batch, group_id, bytes, len, &opts, err);
}
static size_t mqs_batch_count(mq_batch *batch) { return mq_batch_count(batch); }
static void mqs_batch_destroy(mq_batch *batch) { mq_batch_destroy(batch); }
static int64_t mqs_publish_batch(mq_queue *queue, mq_batch *batch, mq_error *err) {
    int64_t first = 0;
    mq_publish_batch(queue, batch, &first, err);
    return first;
}

/* ---- claims: NULL (and err->status MQ_EMPTY) when nothing is due. timeout_s 0 with
 * cancel NULL is a plain claim; cancel may be NULL. worker_id NULL or "" is the library's default. ---- */
static mq_lease *mqs_claim(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                           size_t max_events, double timeout_s, mq_cancel *cancel, mq_error *err) {
    mq_lease *lease = NULL;
    mq_claim_opts opts = MQ_CLAIM_OPTS_INIT;
    /* mq_claim_with: without a timeout or a cancel the plain claim (no MQ_INTERRUPTED
     * after mq_queue_interrupt), else the waiting one. */
    opts.worker_id = worker_id != NULL && worker_id[0] != '\0' ? worker_id : NULL;
    opts.visibility_s = visibility_s;
    opts.min_priority = min_priority;
    opts.max_events = max_events;
    opts.timeout_s = timeout_s;
    opts.cancel = cancel;
    mq_claim_with(queue, &opts, &lease, err);
    return lease;
}
static void mqs_ack(mq_queue *queue, mq_lease *lease, mq_error *err) { mq_ack(queue, lease, err); }
static void mqs_nack(mq_queue *queue, mq_lease *lease, double delay_s, mq_error *err) {
    mq_nack(queue, lease, delay_s, err);
}
/* A lease no handler ran, given back without counting a delivery (0.4.0). */
static void mqs_unclaim(mq_queue *queue, mq_lease *lease, mq_error *err) { mq_unclaim(queue, lease, err); }
static void mqs_extend(mq_queue *queue, mq_lease *lease, double visibility_s, mq_error *err) {
    mq_extend(queue, lease, visibility_s, err);
}

/* ---- a lease's fields ---- */
static int64_t mqs_lease_seq(mq_lease *lease) { return mq_lease_seq(lease); }
static const char *mqs_lease_group(mq_lease *lease) { return mq_lease_group(lease); }
static const char *mqs_lease_token(mq_lease *lease) { return mq_lease_token(lease); }
static int mqs_lease_attempts(mq_lease *lease) { return mq_lease_attempts(lease); }
static double mqs_lease_deadline(mq_lease *lease) { return mq_lease_deadline(lease); }
static size_t mqs_lease_count(mq_lease *lease) { return mq_lease_count(lease); }
static int64_t mqs_lease_seq_at(mq_lease *lease, size_t i) { return mq_lease_seq_at(lease, i); }
static mqs_bytes mqs_lease_event_at(mq_lease *lease, size_t i) {
    mqs_bytes b;
    b.data = mq_lease_event_at(lease, i, &b.len);
    return b;
}
static void mqs_lease_destroy(mq_lease *lease) { mq_lease_destroy(lease); }

/* ---- cancelling one waiting claim ---- */
static mq_cancel *mqs_cancel_new(mq_error *err) {
    mq_cancel *c = NULL;
    mq_cancel_new(&c, err);
    return c;
}
static void mqs_cancel_trigger(mq_cancel *cancel) { mq_cancel_trigger(cancel); }
static int mqs_cancel_triggered(mq_cancel *cancel) { return mq_cancel_triggered(cancel); }
static void mqs_cancel_reset(mq_cancel *cancel) { mq_cancel_reset(cancel); }
static void mqs_cancel_destroy(mq_cancel *cancel) { mq_cancel_destroy(cancel); }

/* ---- dead letters, stats, repair, purge, drop ---- */
static int64_t mqs_dead_count(mq_queue *queue, mq_error *err) {
    int64_t n = 0;
    mq_dead_count(queue, &n, err);
    return n;
}
static int64_t mqs_dead_requeue(mq_queue *queue, int64_t seq, mq_error *err) {
    int64_t n = 0;
    mq_dead_requeue(queue, seq, &n, err);
    return n;
}
static int64_t mqs_dead_purge(mq_queue *queue, mq_error *err) {
    int64_t n = 0;
    mq_dead_purge(queue, &n, err);
    return n;
}
/* The caller (the typemap) frees the text with mq_free. */
static char *mqs_stats_json(mq_queue *queue, mq_error *err) {
    char *json = NULL;
    mq_stats_json(queue, &json, err);
    return json;
}
static int64_t mqs_repair(mq_queue *queue, mq_error *err) {
    int64_t n = 0;
    mq_repair(queue, &n, err);
    return n;
}
/* Read-only looks (JSON arrays, released with mq_free by the typemap). group_id NULL
 * or "" is the whole queue. */
static char *mqs_peek_json(mq_queue *queue, const char *group_id, size_t max_events, mq_error *err) {
    char *json = NULL;
    if (group_id != NULL && group_id[0] == '\0') group_id = NULL;
    mq_peek_json(queue, group_id, max_events, &json, err);
    return json;
}
static char *mqs_dead_list_json(mq_queue *queue, size_t max_events, mq_error *err) {
    char *json = NULL;
    mq_dead_list_json(queue, max_events, &json, err);
    return json;
}
static void mqs_purge_group(mq_queue *queue, const char *group_id, mq_error *err) {
    mq_purge_group(queue, group_id, err);
}
static void mqs_queue_drop(mq_queue *queue, mq_error *err) { mq_queue_drop(queue, err); }

/* ---- a manual clock for a queue (mq_queue_set_clock) ----
 * The language sets and advances it; the library reads it, from any thread. A clock is
 * freed when its last reference goes: the language's handle (mqs_clock_release) and
 * each queue it was ever given to. A queue keeps every clock it was given until
 * mqs_queue_destroy (a call in flight may still read a replaced one). */
typedef struct mqs_clock mqs_clock;
%}

%{
struct mqs_clock {
    pthread_mutex_t mu;
    double now;
    int refs;
};

/* queue -> the clocks it was given: a short list, looked up by the queue's address */
typedef struct mqs_clock_link {
    const mq_queue *queue;
    mqs_clock *clock;
    struct mqs_clock_link *next;
} mqs_clock_link;
static pthread_mutex_t mqs_clock_links_mu = PTHREAD_MUTEX_INITIALIZER;
static mqs_clock_link *mqs_clock_links = NULL;

static void mqs_clock_unref(mqs_clock *clock) {
    pthread_mutex_lock(&clock->mu);
    int left = --clock->refs;
    pthread_mutex_unlock(&clock->mu);
    if (left == 0) {
        pthread_mutex_destroy(&clock->mu);
        free(clock);
    }
}

static double mqs_clock_read(void *ctx) {
    mqs_clock *clock = (mqs_clock *)ctx;
    pthread_mutex_lock(&clock->mu);
    double now = clock->now;
    pthread_mutex_unlock(&clock->mu);
    return now;
}
%}

%inline %{
/* A clock reading start (seconds since the epoch). NULL when out of memory. */
static mqs_clock *mqs_clock_new(double start) {
    mqs_clock *clock = (mqs_clock *)calloc(1, sizeof *clock);
    if (clock == NULL) return NULL;
    pthread_mutex_init(&clock->mu, NULL);
    clock->now = start;
    clock->refs = 1;
    return clock;
}
static double mqs_clock_now(mqs_clock *clock) { return mqs_clock_read(clock); }
static void mqs_clock_set(mqs_clock *clock, double now) {
    pthread_mutex_lock(&clock->mu);
    clock->now = now;
    pthread_mutex_unlock(&clock->mu);
}
static void mqs_clock_advance(mqs_clock *clock, double seconds) {
    pthread_mutex_lock(&clock->mu);
    clock->now += seconds;
    pthread_mutex_unlock(&clock->mu);
}
/* The language's handle is gone (the clock lives on while a queue holds it). */
static void mqs_clock_release(mqs_clock *clock) {
    if (clock != NULL) mqs_clock_unref(clock);
}
/* The queue runs on clock from now on; clock NULL: back to server time. */
static void mqs_queue_set_clock(mq_queue *queue, mqs_clock *clock) {
    if (queue == NULL) return;
    if (clock != NULL) {
        mqs_clock_link *link = (mqs_clock_link *)malloc(sizeof *link);
        if (link == NULL) return; /* out of memory: the queue keeps its clock */
        pthread_mutex_lock(&clock->mu);
        clock->refs++;
        pthread_mutex_unlock(&clock->mu);
        link->queue = queue;
        link->clock = clock;
        pthread_mutex_lock(&mqs_clock_links_mu);
        link->next = mqs_clock_links;
        mqs_clock_links = link;
        pthread_mutex_unlock(&mqs_clock_links_mu);
        mq_queue_set_clock(queue, mqs_clock_read, clock);
    } else {
        mq_queue_set_clock(queue, NULL, NULL);
    }
}
/* mq_queue_destroy, then the queue's references to the clocks it was given go. */
static void mqs_queue_destroy(mq_queue *queue) {
    if (queue == NULL) return;
    mq_queue_destroy(queue);
    mqs_clock_link *mine = NULL;
    pthread_mutex_lock(&mqs_clock_links_mu);
    for (mqs_clock_link **at = &mqs_clock_links; *at != NULL;) {
        mqs_clock_link *link = *at;
        if (link->queue == queue) {
            *at = link->next;
            link->next = mine;
            mine = link;
        } else {
            at = &link->next;
        }
    }
    pthread_mutex_unlock(&mqs_clock_links_mu);
    while (mine != NULL) {
        mqs_clock_link *next = mine->next;
        mqs_clock_unref(mine->clock);
        free(mine);
        mine = next;
    }
}
%}

%{
/* ---- libmongoc's log, buffered for the language (mq_log_set_handler) ---- */
#define MQS_LOG_MAX 1024
static pthread_mutex_t mqs_log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mqs_log_cv = PTHREAD_COND_INITIALIZER;
static char *mqs_log_ring[MQS_LOG_MAX];
static size_t mqs_log_head = 0, mqs_log_count = 0;
static uint64_t mqs_log_lost = 0;

static void mqs_log_clear_locked(void) {
    while (mqs_log_count > 0) {
        free(mqs_log_ring[mqs_log_head]);
        mqs_log_ring[mqs_log_head] = NULL;
        mqs_log_head = (mqs_log_head + 1) % MQS_LOG_MAX;
        mqs_log_count--;
    }
}

/* The handler given to mq_log_set_handler: "LEVEL\tDOMAIN\tMESSAGE", oldest dropped
 * (and counted) when the buffer is full. Called from any thread. */
static void mqs_log_push(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (domain == NULL) domain = "";
    if (message == NULL) message = "";
    size_t n = strlen(domain) + strlen(message) + 16;
    char *line = (char *)malloc(n);
    if (line == NULL) return;
    snprintf(line, n, "%d\t%s\t%s", level, domain, message);
    pthread_mutex_lock(&mqs_log_mu);
    if (mqs_log_count == MQS_LOG_MAX) {
        free(mqs_log_ring[mqs_log_head]);
        mqs_log_ring[mqs_log_head] = NULL;
        mqs_log_head = (mqs_log_head + 1) % MQS_LOG_MAX;
        mqs_log_count--;
        mqs_log_lost++;
    }
    mqs_log_ring[(mqs_log_head + mqs_log_count) % MQS_LOG_MAX] = line;
    mqs_log_count++;
    pthread_cond_signal(&mqs_log_cv);
    pthread_mutex_unlock(&mqs_log_mu);
}
%}

%inline %{
/* From now on libmongoc's lines are buffered here (up to 1024; beyond, the oldest
 * go and are counted by mqs_log_dropped) for mqs_log_next. */
static void mqs_log_capture(void) { mq_log_set_handler(mqs_log_push, NULL); }
/* libmongoc is silenced (mq_log_set_handler(NULL)); what was buffered is dropped. */
static void mqs_log_silence(void) {
    mq_log_set_handler(NULL, NULL);
    pthread_mutex_lock(&mqs_log_mu);
    mqs_log_clear_locked();
    pthread_cond_broadcast(&mqs_log_cv);
    pthread_mutex_unlock(&mqs_log_mu);
}
/* The oldest buffered line, "LEVEL\tDOMAIN\tMESSAGE" (freed by the typemap), waiting up
 * to timeout_s seconds for one; NULL when none came. */
static char *mqs_log_next(double timeout_s) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    if (timeout_s > 0) {
        if (timeout_s > 3600) timeout_s = 3600;
        long long ns = until.tv_nsec + (long long)(timeout_s * 1e9);
        until.tv_sec += (time_t)(ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
    }
    char *line = NULL;
    pthread_mutex_lock(&mqs_log_mu);
    while (mqs_log_count == 0 && timeout_s > 0) {
        if (pthread_cond_timedwait(&mqs_log_cv, &mqs_log_mu, &until) != 0) break;
    }
    if (mqs_log_count > 0) {
        line = mqs_log_ring[mqs_log_head];
        mqs_log_ring[mqs_log_head] = NULL;
        mqs_log_head = (mqs_log_head + 1) % MQS_LOG_MAX;
        mqs_log_count--;
    }
    pthread_mutex_unlock(&mqs_log_mu);
    return line;
}
/* Lines dropped because the buffer was full, since the process started. */
static uint64_t mqs_log_dropped(void) {
    pthread_mutex_lock(&mqs_log_mu);
    uint64_t n = mqs_log_lost;
    pthread_mutex_unlock(&mqs_log_mu);
    return n;
}
%}
