/* mongomq.i — the one SWIG interface every SWIG binding (Java, Go, Ruby, Python) is
 * generated from. What it does once, for every language:
 *
 *   - It wraps the C API itself, from include/mongomq.h (which the C compiler includes
 *     too): every mq_* and MQ_* name of the header is ignored but the functions named
 *     in the list below, so the languages call mq_ack, mq_publish_batch, ... (Go:
 *     Mq_ack) with the header's own parameters. A new function of the header is not
 *     wrapped until it is added to the list.
 *   - "mqs_" shims remain only where SWIG cannot take a C call as it is, each with the
 *     C call's shape (its out-parameters and `mq_error *err` last, an mq_status back):
 *       - the options structs: mqs_publish, mqs_batch_add_at, mqs_claim,
 *         mqs_groups_json and mqs_dead_list_with fill an mq_publish_opts /
 *         mq_claim_opts / mq_groups_opts / mq_dead_list_opts from scalars for
 *         mq_publish_with, mq_batch_add_with, mq_claim_with, mq_groups_json and
 *         mq_dead_list_with (a SWIG struct proxy would cost a heap
 *         object and one call per field, and a typemap that turns several arguments
 *         into one parameter exists in the scripting languages only); mqs_queue_new_with
 *         and mqs_claim_in (0.8.0) likewise for mq_queue_opts and a claim's partitions
 *         (packed as little-endian int32s through the event's typemap);
 *       - MQ_DUPLICATE (0.6.0), a success the typemaps would take for an error:
 *         mqs_publish, mqs_publish_batch and mqs_batch_outcome return MQ_OK and give a
 *         duplicate's seq negated (seqs are >= 1), one int64 out in every language;
 *       - attributes (0.7.0), a list of pairs no typemap of every language takes: in
 *         as one byte string `key NUL value NUL ...` (the event's typemap, applied to
 *         `(const void *attrs, size_t attrs_len)`), out one string at a time
 *         (mqs_lease_attr_key, mqs_lease_attr_value: mq_lease_attr_at without its
 *         two `const char **` out-parameters; mq_lease_attr_count and mq_lease_attr are
 *         wrapped as they are);
 *       - bytes out: mqs_lease_event_at gives an mqs_bytes (a pointer and a length
 *         into the lease), copied once by the typemap;
 *       - the two calls that take a function pointer, reshaped so that the library
 *         never calls into a language's runtime: mq_queue_set_clock gets a manual clock
 *         kept here (mqs_clock_*, mqs_queue_set_clock; mqs_queue_destroy destroys the
 *         queue and lets go of its clocks), and mq_log_set_handler gets a handler kept
 *         here that buffers libmongoc's lines (mqs_log_*), which each binding drains on
 *         a thread of its own and hands to the user's function.
 *   - Out-parameters (`T **out`, the int64_t and uint64_t counts and seqs named below,
 *     `char **json_out`) come back as values, one typemap per type and language, with
 *     no reshaping shim: Python and Ruby return them (a list for
 *     mq_queue_repair_counts' two; text released with mq_free). Java and Go cannot give
 *     a call another return type than its C one without a typemap per function: Java
 *     makes every mq_status a long, so a handle, seq or count comes back as that long,
 *     and text and repair counts' pair in one-element arrays; Go passes pointers
 *     (&seq), as cgo does.
 *   - A returned mq_status is no value of its own: it is None/nil in Python and Ruby,
 *     and a number the Java and Go layers ignore. Errors travel in `mq_error *err`,
 *     hidden from the language: a per-language typemap allocates it on the stack and,
 *     after the call, raises the language's error when err->status is anything but
 *     MQ_OK or MQ_EMPTY (MQ_EMPTY is "no lease": the lease out-parameter is NULL). The
 *     error carries the status, the server code and the message. (Go has no
 *     exceptions: go.i passes the mq_error through and the hand-written Go package
 *     turns it into an `error` value.)
 *   - `(const void *event, size_t event_len)` is the language's byte string in.
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

%inline %{
/* Bytes inside a lease, valid until the lease is destroyed; copied out by the
 * language's typemap. */
typedef struct mqs_bytes {
    const void *data;
    size_t len;
} mqs_bytes;
%}

/* Constants the layers above need. (Declared before the header: SWIG's preprocessor
 * would expand the names once it has read the header's #defines.) */
%constant int MQ_OK = MQ_OK;
%constant int MQ_EMPTY = MQ_EMPTY;
%constant int MQ_LEASE_LOST = MQ_LEASE_LOST;
%constant int MQ_INTERRUPTED = MQ_INTERRUPTED;
%constant int MQ_CANCELLED = MQ_CANCELLED;
%constant int MQ_DUPLICATE = MQ_DUPLICATE;
%constant int MQ_DEDUP_KEY_MAX = MQ_DEDUP_KEY_MAX;
%constant int MQ_DEDUP_SCOPE_QUEUE = MQ_DEDUP_SCOPE_QUEUE;
%constant int MQ_DEDUP_SCOPE_GROUP = MQ_DEDUP_SCOPE_GROUP;
%constant int MQ_ATTR_MAX = MQ_ATTR_MAX;
%constant int MQ_ATTR_KEY_MAX = MQ_ATTR_KEY_MAX;
%constant int MQ_ATTR_VALUE_MAX = MQ_ATTR_VALUE_MAX;
%constant int MQ_ERR_ARG = MQ_ERR_ARG;
%constant int MQ_ERR_CONNECT = MQ_ERR_CONNECT;
%constant int MQ_ERR_SERVER = MQ_ERR_SERVER;
%constant int MQ_ERR_NOMEM = MQ_ERR_NOMEM;
%constant int MQ_ERR_INTERNAL = MQ_ERR_INTERNAL;
%constant int MQ_PRIORITY_MIN = MQ_PRIORITY_MIN;
%constant int MQ_PRIORITY_MAX = MQ_PRIORITY_MAX;
%constant int MQ_BATCH_MAX = MQ_BATCH_MAX;
%constant int MQ_PARTITIONS_MAX = MQ_PARTITIONS_MAX;
%constant unsigned int MQ_GROUP_READY = MQ_GROUP_READY;
%constant unsigned int MQ_GROUP_LEASED = MQ_GROUP_LEASED;
%constant unsigned int MQ_GROUP_PARKED = MQ_GROUP_PARKED;
%constant unsigned int MQ_GROUP_PAUSED = MQ_GROUP_PAUSED;
%constant int MQ_GROUPS_SORT_ID = MQ_GROUPS_SORT_ID;
%constant int MQ_GROUPS_SORT_DUE = MQ_GROUPS_SORT_DUE;

/* ---- the C API: what of the header is wrapped ---------------------------------- */

/* Nothing of the header (functions, its structs, enums and macros) but these
 * functions; an exact name beats the patterns. Not here: mq_queue_destroy and
 * mq_queue_set_clock (the clock shims), mq_log_set_handler (the log shims), mq_free
 * (the typemaps call it), the publish and claim entries and mq_batch_add* (the options
 * shims), mq_lease_event* (mqs_lease_event_at). */
%rename("$ignore", regextarget=1) "^mq_";
%rename("$ignore", regextarget=1) "^MQ_";
%rename("%s") mq_version;
%rename("%s") mq_status_name;
%rename("%s") mq_client_new;
%rename("%s") mq_client_destroy;
%rename("%s") mq_client_command_count;
%rename("%s") mq_client_write_concern_errors;
%rename("%s") mq_queue_new;
%rename("%s") mq_queue_interrupt;
%rename("%s") mq_queue_set_max_attempts;
%rename("%s") mq_queue_now;
%rename("%s") mq_queue_clock_offset;
%rename("%s") mq_queue_set_repair_interval;
%rename("%s") mq_queue_repair_counts;
%rename("%s") mq_batch_new;
%rename("%s") mq_batch_count;
%rename("%s") mq_batch_destroy;
%rename("%s") mq_lease_attr_count;
%rename("%s") mq_lease_attr;
%rename("%s") mq_queue_set_dedup_window;
%rename("%s") mq_queue_set_dedup_scope;
%rename("%s") mq_ack;
%rename("%s") mq_nack;
%rename("%s") mq_unclaim;
%rename("%s") mq_extend;
%rename("%s") mq_lease_seq;
%rename("%s") mq_lease_group;
%rename("%s") mq_lease_token;
%rename("%s") mq_lease_attempts;
%rename("%s") mq_lease_partition;
%rename("%s") mq_queue_partitions;
%rename("%s") mq_group_partition;
%rename("%s") mq_lease_deadline;
%rename("%s") mq_lease_count;
%rename("%s") mq_lease_seq_at;
%rename("%s") mq_lease_destroy;
%rename("%s") mq_cancel_new;
%rename("%s") mq_cancel_trigger;
%rename("%s") mq_cancel_triggered;
%rename("%s") mq_cancel_reset;
%rename("%s") mq_cancel_destroy;
%rename("%s") mq_dead_count;
%rename("%s") mq_dead_requeue;
%rename("%s") mq_dead_purge;
%rename("%s") mq_stats_json;
%rename("%s") mq_repair;
%rename("%s") mq_peek_json;
%rename("%s") mq_dead_list_json;
%rename("%s") mq_purge_group;
%rename("%s") mq_queue_drop;
%rename("%s") mq_pause_group;
%rename("%s") mq_resume_group;

/* The per-language typemaps: mq_error *err, (const void *event, size_t event_len),
 * mqs_bytes, the handles, mq_status and the out-parameters (T **out, int64_t *OUT,
 * uint64_t *OUT, char **json_out). A language file may %ignore a function of the list
 * above (an %ignore after it wins). */
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

/* Packed attributes in, as the event's bytes are (see the shims). */
%apply (const void *event, size_t event_len) { (const void *attrs, size_t attrs_len) };
/* And a claim's partitions (mqs_claim_in), packed as little-endian int32s. */
%apply (const void *event, size_t event_len) { (const void *parts, size_t parts_len) };

/* The header's counts and seqs returned through a pointer, by their names there. */
%apply int64_t *OUT { int64_t *seq_out, int64_t *seq, int64_t *first_seq, int64_t *count, int64_t *new_seq, int64_t *purged,
                      int64_t *fixed };
%apply uint64_t *OUT { uint64_t *runs, uint64_t *fixed };

%include "mongomq.h"

/* ---- the shims -------------------------------------------------------------------- */

%inline %{
/* MQ_DUPLICATE as MQ_OK with the seq negated (the three shims below). */
static mq_status mqs_duplicate_as_negative(mq_status status, int64_t *seq, mq_error *err) {
    if (status != MQ_DUPLICATE) return status;
    if (seq != NULL) *seq = -*seq;
    if (err != NULL) err->status = MQ_OK;
    return MQ_OK;
}

/* Packed attributes ("key NUL value NUL ..." in attrs_len bytes) into `out`, pointing
 * into a copy the caller frees (*copy). MQ_ERR_ARG when the packing is not whole
 * pairs or holds more than MQ_ATTR_MAX; the library checks the keys and values. */
static mq_status mqs_unpack_attrs(const void *attrs, size_t attrs_len, mq_event_attr *out, size_t *count,
                                  char **copy, mq_error *err) {
    *count = 0;
    *copy = NULL;
    if (attrs_len == 0) return MQ_OK;
    char *buf = (char *)malloc(attrs_len);
    if (buf == NULL) {
        err->status = MQ_ERR_NOMEM;
        err->server_code = 0;
        snprintf(err->message, sizeof err->message, "out of memory");
        return MQ_ERR_NOMEM;
    }
    memcpy(buf, attrs, attrs_len);
    size_t at = 0, n = 0;
    const char *why = NULL;
    while (at < attrs_len && why == NULL) {
        const char *k = buf + at;
        const char *kend = (const char *)memchr(k, '\0', attrs_len - at);
        if (kend == NULL) { why = "a key without its NUL"; break; }
        const char *v = kend + 1;
        size_t vat = (size_t)(v - buf);
        const char *vend = vat < attrs_len ? (const char *)memchr(v, '\0', attrs_len - vat) : NULL;
        if (vend == NULL) { why = "a key without its value"; break; }
        if (n == MQ_ATTR_MAX) { why = "more than MQ_ATTR_MAX (16) attributes"; break; }
        out[n].key = k;
        out[n].value = v;
        n++;
        at = (size_t)(vend - buf) + 1;
    }
    if (why != NULL) {
        free(buf);
        err->status = MQ_ERR_ARG;
        err->server_code = 0;
        snprintf(err->message, sizeof err->message, "attrs: %s", why);
        return MQ_ERR_ARG;
    }
    *count = n;
    *copy = buf;
    return MQ_OK;
}

/* mq_publish_with: not_before 0 is "now"; with has_key 0 the key is none (Go cannot
 * pass a NULL string), else dedup_key as given (NULL, "", too long: MQ_ERR_ARG from
 * the library); attrs packed (see mqs_unpack_attrs; 0 bytes: none). *seq_out < 0: a
 * duplicate of the event -*seq_out. */
static mq_status mqs_publish(mq_queue *queue, const char *group_id, const void *event, size_t event_len,
                             int priority, double not_before, int has_key, const char *dedup_key, const void *attrs,
                             size_t attrs_len, int64_t *seq_out, mq_error *err) {
    mq_event_attr list[MQ_ATTR_MAX];
    char *copy;
    mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT;
    if (seq_out != NULL) *seq_out = 0;
    if (mqs_unpack_attrs(attrs, attrs_len, list, &opts.attr_count, &copy, err) != MQ_OK) return err->status;
    opts.attrs = list;
    opts.priority = priority;
    opts.not_before = not_before;
    opts.dedup_key = has_key ? (dedup_key != NULL ? dedup_key : "") : NULL;
    mq_status st = mq_publish_with(queue, group_id, event, event_len, &opts, seq_out, err);
    free(copy);
    return mqs_duplicate_as_negative(st, seq_out, err);
}

/* mq_batch_add_with: a batch event may be scheduled (not_before 0: now), keyed
 * (has_key, dedup_key as mqs_publish) and carry attributes (packed, as mqs_publish). */
static mq_status mqs_batch_add_at(mq_batch *batch, const char *group_id, const void *event, size_t event_len,
                                  int priority, double not_before, int has_key, const char *dedup_key,
                                  const void *attrs, size_t attrs_len, mq_error *err) {
    mq_event_attr list[MQ_ATTR_MAX];
    char *copy;
    mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT;
    if (mqs_unpack_attrs(attrs, attrs_len, list, &opts.attr_count, &copy, err) != MQ_OK) return err->status;
    opts.attrs = list;
    opts.priority = priority;
    opts.not_before = not_before;
    opts.dedup_key = has_key ? (dedup_key != NULL ? dedup_key : "") : NULL;
    mq_status st = mq_batch_add_with(batch, group_id, event, event_len, &opts, err);
    free(copy);
    return st;
}

/* mq_publish_batch: *first_seq < 0 when some event was a duplicate (-*first_seq is
 * the first seq); mqs_batch_outcome then says which. */
static mq_status mqs_publish_batch(mq_queue *queue, const mq_batch *batch, int64_t *first_seq, mq_error *err) {
    return mqs_duplicate_as_negative(mq_publish_batch(queue, batch, first_seq, err), first_seq, err);
}

/* mq_batch_outcome: *seq < 0 when event i was a duplicate of the event -*seq. */
static mq_status mqs_batch_outcome(const mq_batch *batch, size_t i, int64_t *seq, mq_error *err) {
    return mqs_duplicate_as_negative(mq_batch_outcome(batch, i, seq, err), seq, err);
}

/* mq_claim_with: *out NULL (and MQ_EMPTY) when nothing is due. Without a timeout or a
 * cancel (timeout_s 0, cancel NULL) the plain claim (no MQ_INTERRUPTED after
 * mq_queue_interrupt), else the waiting one. worker_id NULL or "" is the library's
 * default. */
static mq_status mqs_claim(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                           size_t max_events, double timeout_s, mq_cancel *cancel, mq_lease **out, mq_error *err) {
    mq_claim_opts opts = MQ_CLAIM_OPTS_INIT;
    opts.worker_id = worker_id != NULL && worker_id[0] != '\0' ? worker_id : NULL;
    opts.visibility_s = visibility_s;
    opts.min_priority = min_priority;
    opts.max_events = max_events;
    opts.timeout_s = timeout_s;
    opts.cancel = cancel;
    return mq_claim_with(queue, &opts, out, err);
}

/* mq_queue_new_with (0.8.0) with its options from scalars: partitions 1 is
 * mq_queue_new. */
static mq_status mqs_queue_new_with(mq_client *client, const char *db_name, const char *prefix, int partitions,
                                    mq_queue **out, mq_error *err) {
    mq_queue_opts opts = MQ_QUEUE_OPTS_INIT;
    opts.partitions = partitions;
    return mq_queue_new_with(client, db_name, prefix, &opts, out, err);
}

/* mqs_claim taking only from some partitions (0.8.0): parts packs them as
 * little-endian int32s, parts_len / 4 of them (0 bytes: every partition; a length
 * that is no multiple of 4 is MQ_ERR_ARG). */
static mq_status mqs_claim_in(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                              size_t max_events, double timeout_s, mq_cancel *cancel, const void *parts,
                              size_t parts_len, mq_lease **out, mq_error *err) {
    if (out != NULL) *out = NULL;
    if (parts_len % 4 != 0 || parts_len / 4 > MQ_PARTITIONS_MAX) {
        if (err != NULL) {
            memset(err, 0, sizeof *err);
            err->status = MQ_ERR_ARG;
            snprintf(err->message, sizeof err->message,
                     "mq_claim_with: the partitions are %zu bytes, not 4 per partition up to 1024 partitions",
                     parts_len);
        }
        return MQ_ERR_ARG;
    }
    int list[MQ_PARTITIONS_MAX];
    const unsigned char *b = (const unsigned char *)parts;
    size_t n = parts_len / 4;
    for (size_t i = 0; i < n; i++)
        list[i] = (int)((uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 | (uint32_t)b[4 * i + 2] << 16 |
                        (uint32_t)b[4 * i + 3] << 24);
    mq_claim_opts opts = MQ_CLAIM_OPTS_INIT;
    opts.worker_id = worker_id != NULL && worker_id[0] != '\0' ? worker_id : NULL;
    opts.visibility_s = visibility_s;
    opts.min_priority = min_priority;
    opts.max_events = max_events;
    opts.timeout_s = timeout_s;
    opts.cancel = cancel;
    opts.partitions = n > 0 ? list : NULL;
    opts.partition_count = n;
    return mq_claim_with(queue, &opts, out, err);
}

/* mq_groups_json (0.5.0) with its options from scalars; id_prefix and after NULL or ""
 * are none. */
static mq_status mqs_groups_json(mq_queue *queue, unsigned int states, const char *id_prefix, int min_attempts,
                                 double held_longer_than_s, double parked_beyond_s, int sort, const char *after,
                                 size_t limit, char **json_out, mq_error *err) {
    mq_groups_opts opts = MQ_GROUPS_OPTS_INIT;
    opts.states = states;
    opts.id_prefix = id_prefix != NULL && id_prefix[0] != '\0' ? id_prefix : NULL;
    opts.min_attempts = min_attempts;
    opts.held_longer_than_s = held_longer_than_s;
    opts.parked_beyond_s = parked_beyond_s;
    opts.sort = sort;
    opts.after = after != NULL && after[0] != '\0' ? after : NULL;
    opts.limit = limit;
    return mq_groups_json(queue, &opts, json_out, err);
}

/* mq_dead_list_with (0.5.0): a page of the dead letters. */
static mq_status mqs_dead_list_with(mq_queue *queue, size_t limit, size_t offset, char **json_out, mq_error *err) {
    mq_dead_list_opts opts = MQ_DEAD_LIST_OPTS_INIT;
    opts.limit = limit;
    opts.offset = offset;
    return mq_dead_list_with(queue, &opts, json_out, err);
}

/* Attribute j of event i of a lease: its key, its value (NULL out of range). */
static const char *mqs_lease_attr_key(mq_lease *lease, size_t i, size_t j) {
    const char *key, *value;
    mq_error err;
    return mq_lease_attr_at(lease, i, j, &key, &value, &err) == MQ_OK ? key : NULL;
}
static const char *mqs_lease_attr_value(mq_lease *lease, size_t i, size_t j) {
    const char *key, *value;
    mq_error err;
    return mq_lease_attr_at(lease, i, j, &key, &value, &err) == MQ_OK ? value : NULL;
}

/* Event i of a lease (mq_lease_event_at), as bytes; data NULL when i is out of range. */
static mqs_bytes mqs_lease_event_at(mq_lease *lease, size_t i) {
    mqs_bytes b;
    b.data = mq_lease_event_at(lease, i, &b.len);
    return b;
}

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

/* mqs_log_next's line is malloc'd here: the wrapper frees it once the language has its copy. */
%newobject mqs_log_next;
%typemap(newfree) char *mqs_log_next "free($1);"

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
