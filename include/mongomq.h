/*
 * mongomq.h — a multi-machine queue with per-group FIFO exclusivity on MongoDB.
 *
 * The only public header of libmongomq. C99, includes no libmongoc header.
 *
 * Model (docs/design.md has the schema, every operation's server commands and the
 * argument for each race):
 *   - A queue is three collections under one database: {prefix}_messages,
 *     {prefix}_locks and {prefix}_counters (and {prefix}_dead for dead letters,
 *     when they are turned on). The documents are those of harel's
 *     MongoTransport, so Python services using harel share a queue with us; harel
 *     names its collections {P}_transport_*, so harel's prefix P is our prefix
 *     "P_transport" (harel's defaults: db "harel", prefix "harel_transport").
 *   - Every event belongs to a group. Within a group events are delivered in publish
 *     order (seq order), one at a time: while a worker holds a lease on a group, no
 *     other worker gets that group. Groups are served round-robin.
 *   - A group's priority (0..4) is fixed by the publish that creates the group and
 *     stays until the group drains. A claim's min_priority is a floor: it only
 *     considers groups whose priority is >= the floor.
 *   - A lease lasts visibility_s seconds. If its worker neither acks, nacks nor
 *     extends it in time, the group becomes claimable again and the head is
 *     redelivered (attempts + 1): at-least-once delivery, crash recovery.
 *   - Every lease carries a token. Ack, nack and extend are fenced by it: a worker
 *     whose lease expired and was taken over gets MQ_LEASE_LOST and changes nothing
 *     that belongs to the new owner.
 *   - Beyond the seed design: batches (mq_publish_batch, mq_claim_batch), waiting
 *     claims (mq_claim_wait), scheduled events (mq_publish_at), dead letters,
 *     stats/repair/purge, and a queue clock on server time.
 *
 * Conventions:
 *   - Every fallible call returns an mq_status and fills *err when err is not NULL.
 *     err may be NULL everywhere. Messages never contain a password.
 *   - Out-parameters are set to NULL on failure. What the library returns through
 *     T **out the caller owns and releases with that type's _destroy, which accepts
 *     NULL. Nothing a caller passes is kept by pointer after the call returns.
 *   - Bad arguments give MQ_ERR_ARG with a message naming the argument, and nothing
 *     is sent to the server. One exception: mq_dead_requeue's seq, which only the
 *     server can check (one read; nothing is changed).
 *   - MQ_ERR_CONNECT (server unreachable, the reply was lost, or the server answered
 *     a write with an error it gives when its primary steps down or shuts down:
 *     NotWritablePrimary 10107, InterruptedDueToReplStateChange 11602, ... or any
 *     error labelled RetryableWriteError; err->server_code then holds the server's
 *     code, else 0; docs/design.md, "Lost replies") means the outcome is
 *     unknown: the command may have been applied. Retrying with the same arguments
 *     (and the same lease) is always safe: nothing is lost or held for good. Publish
 *     (mq_publish, _batch, _at), claim, ack, nack, unclaim, extend and mq_dead_requeue say
 *     below what a retry does (a retried publish or requeue may add the event twice);
 *     every other call is a read or idempotent (mq_purge_group, mq_dead_purge,
 *     mq_repair, mq_queue_drop, mq_queue_new): its retry does what the first try
 *     would have done. Commands whose repetition is harmless
 *     (reads, $setOnInsert upserts) are retried inside the call a few times (~350 ms
 *     of pauses) before it reports MQ_ERR_CONNECT. What outlasts that is healed by the
 *     automatic repair (mq_queue_set_repair_interval). On replica sets and mongos
 *     libmongoc also retries each write once by itself (retryable writes).
 *   - A client must outlive the queues made from it; a queue must outlive nothing
 *     (leases are plain values and may outlive their queue).
 *   - No exception, abort() or exit() crosses this API, and the library never
 *     prints. libmongoc's own log goes to its process-wide handler (stderr by
 *     default); see mq_log_set_handler to route or silence it.
 *
 * Threading: mq_client and mq_queue are thread-safe: any number of threads may
 * publish, claim, ack, nack and extend through the same handles at once (each call
 * borrows one connection from the client's pool, and never a second while it holds
 * it, so any maxPoolSize works; when all are in use a call waits for one, up to the
 * URI's waitQueueTimeoutMS if set, then MQ_ERR_CONNECT). A single mq_lease may be read from
 * several threads but must not be destroyed while another thread uses it; the same
 * for an mq_batch, which is not thread-safe while it is being filled. A queue must
 * not be destroyed while a call on it runs. mq_queue_interrupt may also be called
 * from a signal handler.
 */
#ifndef MONGOMQ_H
#define MONGOMQ_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(mongomq_EXPORTS)
#    define MQ_API __declspec(dllexport)
#  else
#    define MQ_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define MQ_API __attribute__((visibility("default")))
#else
#  define MQ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MQ_VERSION_MAJOR 0
#define MQ_VERSION_MINOR 8
#define MQ_VERSION_PATCH 0

/* Limits checked before anything is sent to the server. */
#define MQ_GROUP_ID_MAX 1000                        /* bytes of a group id (UTF-8, non-empty) */
#define MQ_WORKER_ID_MAX 200                        /* bytes of a worker id (UTF-8, non-empty) */
#define MQ_EVENT_MAX (16 * 1024 * 1024 - 16 * 1024) /* bytes of one event: BSON's 16 MiB less room for the envelope */
#define MQ_BATCH_MAX 10000                          /* events in one mq_batch or one batch lease */
#define MQ_PRIORITY_MIN 0
#define MQ_PRIORITY_MAX 4

typedef enum mq_status {
    MQ_OK = 0,
    MQ_EMPTY = 1,        /* mq_claim: no group is due at this priority floor */
    MQ_LEASE_LOST = 2,   /* ack/nack/extend: the lease is no longer this group's (it expired
                          * and another claim took the group, or the group was purged or
                          * drained and dropped); the call changed nothing */
    MQ_INTERRUPTED = 3,  /* mq_claim_wait: mq_queue_interrupt was called on the queue */
    MQ_CANCELLED = 4,    /* mq_claim_wait_cancel: its mq_cancel was triggered (0.3.0) */
    MQ_DUPLICATE = 5,    /* publish with a dedup_key already taken: nothing was added, the
                          * seq given back is the first publish's (0.6.0) */
    MQ_ERR_ARG = -1,     /* bad argument: NULL, out of range, not UTF-8, too large */
    MQ_ERR_CONNECT = -2, /* server unreachable or timed out, or a write's outcome unknown */
    MQ_ERR_SERVER = -3,  /* the server answered with an error */
    MQ_ERR_NOMEM = -4,
    MQ_ERR_INTERNAL = -5
} mq_status;

typedef struct mq_error { /* caller-allocated; every fallible call fills it */
    mq_status status;
    int server_code;   /* MongoDB error code, or 0 */
    char message[504]; /* NUL-terminated, never contains a password */
} mq_error;

/* The size is part of the ABI. */
typedef char mq_error_size_check_[(sizeof(mq_error) == 512) ? 1 : -1];

typedef struct mq_client mq_client; /* a connection pool; thread-safe */
typedef struct mq_queue mq_queue;   /* one queue (database + prefix); thread-safe */
typedef struct mq_lease mq_lease;   /* one claimed group: 1..n events; owned by the caller */
typedef struct mq_batch mq_batch;   /* events to publish together; not thread-safe */

/* "0.5.0": the library's version, which may differ from MQ_VERSION_* of the header
 * the caller compiled against. */
MQ_API const char *mq_version(void);

/* "MQ_OK", "MQ_ERR_ARG", ...; "MQ_UNKNOWN" for a value that is no mq_status. */
MQ_API const char *mq_status_name(mq_status status);

/* Opens a connection pool for a MongoDB URI ("mongodb://host:port/?opts"). Does not
 * contact the server (the first queue does): a malformed URI is MQ_ERR_ARG here, an
 * unreachable server is MQ_ERR_CONNECT from the first call that needs it, after the
 * URI's serverSelectionTimeoutMS (libmongoc's default: 30 s).
 *
 * Whatever the URI's readPreference and readConcernLevel, every command on a queue's
 * collections reads from the primary with read concern "local" (a secondary, or a
 * majority read, can miss a write just acknowledged and strand or redeliver events).
 * Writes use the URI's w when it sets one, else w:"majority". A write concern that
 * waits for other members (majority, w > 1) always has a time limit: the URI's
 * wtimeoutMS, else 10 s (a write that reaches it was applied: see below). A URI with
 * w=0, or with journal=false under majority, is MQ_ERR_ARG naming the option: the
 * fenced updates need acknowledged writes, and majority writes are journaled. retryWrites is libmongoc's (on by
 * default); see docs/design.md, "Deployments", for what holds on each kind of deployment.
 *
 * A write-concern error (e.g. a wtimeout, server code 64) on a write the server
 * applied is not a failure: the call returns its usual status (MQ_OK) with its
 * out-parameters set (the lease, the seq), and fills err->server_code with the
 * server's code and err->message with a sentence saying the write was applied but
 * not confirmed by the write concern (it may be rolled back if the primary fails
 * before it replicates). A status >= 0 (MQ_OK, MQ_EMPTY, ...) with err->server_code
 * != 0 is that case; mq_client_write_concern_errors counts them. */
MQ_API mq_status mq_client_new(const char *uri, mq_client **out, mq_error *err);
MQ_API void mq_client_destroy(mq_client *client);

/* Number of commands this client has sent to the server so far (counted with
 * libmongoc's APM callbacks). Monotonic; for benchmarks and monitoring. */
MQ_API uint64_t mq_client_command_count(const mq_client *client);

/* Number of writes this client sent that the server applied but whose write concern
 * it could not confirm (see mq_client_new). Monotonic; 0 for NULL. (0.3.0) */
MQ_API uint64_t mq_client_write_concern_errors(const mq_client *client);

/* Opens the queue {db_name}.{prefix}_*. db_name NULL -> "mongomq", prefix NULL ->
 * "mq". A db_name or prefix MongoDB would reject is MQ_ERR_ARG. Checks that none of
 * the queue's collections was created with a non-simple collation (one would merge
 * groups "A" and "a": MQ_ERR_SERVER naming the collection), creates the indexes
 * (idempotent; on a large existing queue the first open builds them and may take
 * long) and measures the server's clock with hello (isMaster where hello is unknown):
 * it also reads the queue's record of partitions (see "Partitioned queues": a queue
 * made with P > 1 is MQ_ERR_ARG here, naming P): 5 commands, 6 without hello, so this
 * is also where an unreachable server shows up.
 * On a mongos it also reads config.collections (1 command) and refuses a queue whose
 * locks or counters collection is sharded (MQ_ERR_SERVER naming it and the fix).
 * A server that reports no localTime leaves the queue on this machine's clock, with a
 * warning in libmongoc's log (domain "mongomq"). */
MQ_API mq_status mq_queue_new(mq_client *client, const char *db_name, const char *prefix, mq_queue **out,
                              mq_error *err);
/* No call may be running on the queue. When it is the last queue of its client and
 * database that waited (mq_claim_wait) with a change-stream watcher, it stops the
 * watcher and waits for its current read: up to 200 ms, a few seconds if the server
 * is unreachable. */
MQ_API void mq_queue_destroy(mq_queue *queue);

/* Appends an event to the tail of group_id. The event is any bytes (event_len may be
 * 0; event may then be NULL). Valid UTF-8 without NUL bytes is stored as a BSON
 * string (what harel stores), anything else as BSON binary; claim hands back exactly
 * these bytes. priority (0..4) counts only when this publish creates the group.
 * *seq_out receives the event's sequence number. 3 server commands.
 * After MQ_ERR_CONNECT the event may or may not be in the queue (it is never in it
 * without a lock for long: the publish locks its group even after a lost insert
 * reply). Retrying publishes it again with a new seq: at-least-once publishing,
 * unless the publish carries a dedup_key (mq_publish_with, "Deduplication"): a retry
 * with the key then leaves exactly one event. */
MQ_API mq_status mq_publish(mq_queue *queue, const char *group_id, const void *event, size_t event_len, int priority,
                            int64_t *seq_out /* may be NULL */, mq_error *err);

/* Leases the head event of the due group that has waited longest, considering only
 * groups with priority >= min_priority (0..4). The lease lasts visibility_s seconds
 * (> 0, finite). worker_id NULL -> "host:pid". MQ_EMPTY (and *out NULL) when no group
 * is due. 2 server commands; 1 when nothing is due. More only on the way to a lease:
 * 4-5 for each group left without events that it meets and drops (its lease, head
 * read, drop, re-check, maybe re-lock), 3 for each group whose head is scheduled for
 * later (lease, head read, park), 3 for each head it moves to the dead letters, 1
 * when the head is not the one the lock's attempts counted (claim.rehead: the head
 * before it was removed by someone other than its lease holder, or the lock was made
 * by mq_repair or harel), and the automatic repair's 2-4 now and then when nothing is
 * due (mq_queue_set_repair_interval).
 * attempts (mq_lease_attempts) is the number of deliveries of the head event,
 * this one included: 1 on its first delivery, whoever removed the event before it.
 * After MQ_ERR_CONNECT: a lost lease reply is looked up by its token (1 command) and
 * the lease returned; if even that fails, a group may stay held by a lease nobody has
 * until visibility_s runs out (its head is then redelivered with attempts counting
 * that lost delivery). Retrying the claim is safe. */
MQ_API mq_status mq_claim(mq_queue *queue, const char *worker_id /* NULL -> host:pid */, double visibility_s,
                          int min_priority, mq_lease **out, mq_error *err);

/* Removes the leased event(s) and releases its group: to the back of the round-robin
 * when more events waited at claim time, or deletes the group's lock when the claim
 * saw none behind (3 commands: drop and re-check; when events were published after
 * the claim, the re-check re-creates the lock, in line from that event's publish,
 * the group's priority kept). 2 server commands when more events wait.
 * MQ_LEASE_LOST when the lock no longer carries this lease's token: another worker
 * took the group after the lease expired, the lease's own nack(0) gave it back,
 * mq_purge_group removed it, or a later claim found the group drained and dropped
 * it. The events are removed all the same (they were processed: at-least-once), and
 * nothing of the new owner's is touched. Fencing is by token, not time: a lease that
 * expired but that nobody took over still acks (MQ_OK), and so for nack and extend.
 * After MQ_ERR_CONNECT: retry mq_ack with the same lease. The events are deleted at
 * most once (seqs are never reused); a retry whose release finds its own earlier
 * (lost-reply) release applied reports MQ_OK, and a drained group is re-checked
 * again so an event published meanwhile is never left without a lock. */
MQ_API mq_status mq_ack(mq_queue *queue, const mq_lease *lease, mq_error *err);

/* Gives the event back. delay_s == 0: the group is claimable now, at the front (the
 * same head is redelivered, attempts + 1). delay_s > 0: the group stays held (by this
 * lease's token: extend and ack still work) for delay_s seconds, then the head is
 * redelivered. 1 server command. MQ_LEASE_LOST as mq_ack. After MQ_ERR_CONNECT:
 * retry with the same lease; a nack(0) retry that finds its own earlier release
 * applied reports MQ_OK. */
MQ_API mq_status mq_nack(mq_queue *queue, const mq_lease *lease, double delay_s, mq_error *err);

/* Gives back a lease no handler ran: for a worker that claimed and then was told to
 * stop before it started the handler. Unlike mq_nack, it is not a delivery: the lock
 * gets back the attempts count and the place in line (available_at) the claim found,
 * so the head is redelivered next as if this claim had not happened, and a service
 * restarted often never pushes an unhandled event towards the dead letters. Fenced
 * by the lease's token like mq_ack: MQ_LEASE_LOST (nothing changed) when the group
 * is no longer this lease's, so it never touches a newer holder's lease. 1 server
 * command (unclaim.release). After MQ_ERR_CONNECT: retry with the same lease; a retry
 * that finds its own earlier give-back applied reports MQ_OK. A lease found again by
 * its token after a lost claim reply does not know its place in line: it goes back
 * due now. (0.4.0) */
MQ_API mq_status mq_unclaim(mq_queue *queue, const mq_lease *lease, mq_error *err);

/* Moves the lease's expiry to now + visibility_s (also after a delayed nack: it
 * replaces the delay). 1 server command. MQ_LEASE_LOST as mq_ack. After
 * MQ_ERR_CONNECT: retry (idempotent). */
MQ_API mq_status mq_extend(mq_queue *queue, const mq_lease *lease, double visibility_s, mq_error *err);

/* A lease's fields; NULL lease -> 0 / NULL. Strings and the event are valid until
 * destroy; a 0-byte event is a valid non-NULL pointer with *len_out 0. */
MQ_API int64_t mq_lease_seq(const mq_lease *lease);
MQ_API const char *mq_lease_group(const mq_lease *lease);
MQ_API const void *mq_lease_event(const mq_lease *lease, size_t *len_out); /* valid until destroy */
MQ_API const char *mq_lease_token(const mq_lease *lease);
MQ_API int mq_lease_attempts(const mq_lease *lease); /* deliveries of this head, this one included */
MQ_API void mq_lease_destroy(mq_lease *lease);

/* ---- Batches: fewer round trips per event ------------------------------------ */

/* A batch of events to publish with mq_publish_batch. Each mq_batch_add checks its
 * arguments as mq_publish would (nothing is sent); the batch copies the bytes. */
MQ_API mq_status mq_batch_new(mq_batch **out, mq_error *err);
MQ_API mq_status mq_batch_add(mq_batch *batch, const char *group_id, const void *event, size_t event_len, int priority,
                              mq_error *err);
MQ_API size_t mq_batch_count(const mq_batch *batch);
MQ_API void mq_batch_destroy(mq_batch *batch);

/* Publishes every event of the batch, whatever its size, in 3 server commands: one
 * $inc of the counter by the batch's size, one insertMany, one unordered bulk of
 * lock upserts. Seqs follow add order: *first_seq, first_seq + 1, ... (with P > 1
 * partitions: one $inc per partition the batch's groups fall in, *first_seq is the
 * first event's, and each event's seq is mq_batch_outcome's: see "Partitioned
 * queues"). An empty batch
 * is MQ_ERR_ARG. With dedup keys (mq_batch_add_with): MQ_DUPLICATE when some event's
 * key was taken (it was not added; 1 command more), and mq_batch_outcome says, per
 * event, whether it was added and its seq (a duplicate's seq is not first_seq + i). A batch may be published again (new
 * seqs) or destroyed. MQ_ERR_CONNECT: as mq_publish, for the batch as a whole (its insertMany is one command: all of
 * the batch is in the queue, or none of it, or, on a server that stops inside the insertMany, a prefix of it; with keys
 * the insertMany is unordered: any part of it). */
MQ_API mq_status mq_publish_batch(mq_queue *queue, const mq_batch *batch, int64_t *first_seq /* may be NULL */,
                                  mq_error *err);

/* As mq_claim, but the lease holds up to max_events (>= 1) consecutive events of one
 * group, in FIFO order: 2 server commands. mq_ack removes them all (2 commands, 3 if
 * the group drains), mq_nack gives them all back. mq_claim is this with max_events 1.
 * mq_lease_attempts counts the head's deliveries only: the events behind it start
 * their own count when they become the head (docs/design.md, "Attempts"). */
MQ_API mq_status mq_claim_batch(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                                size_t max_events, mq_lease **out, mq_error *err);

/* The events of a lease, i in 0..count-1 (0 is the head; mq_lease_seq/event are i 0).
 * Out of range -> 0 / NULL. */
MQ_API size_t mq_lease_count(const mq_lease *lease);
MQ_API int64_t mq_lease_seq_at(const mq_lease *lease, size_t i);
MQ_API const void *mq_lease_event_at(const mq_lease *lease, size_t i, size_t *len_out);

/* ---- Waiting claims ------------------------------------------------------------ */

/* As mq_claim, but waits up to timeout_s (>= 0, finite) for a group to become due
 * (0 claims once without waiting, as mq_claim, but unlike mq_claim it too returns
 * MQ_INTERRUPTED after mq_queue_interrupt). Returns as soon as one is: after a
 * publish (noticed within 50 ms), an ack or nack that releases a group, or a lease,
 * park or schedule running out.
 * MQ_EMPTY at the timeout; MQ_INTERRUPTED once mq_queue_interrupt was called; an
 * error ends the wait (with an unreachable server it can come after the URI's
 * serverSelectionTimeoutMS, even if that is longer than timeout_s; MQ_ERR_CONNECT is
 * as mq_claim's, and calling it again goes on waiting). While idle it does
 * not poll the server in a loop: where the server offers change streams, one watcher
 * thread per client and database, with a connection of its own, follows the locks
 * collections of every queue of that client there that has waited (started by the
 * first waiting call; kept until the last of those queues is destroyed, or while all
 * are interrupted) and turns each change into a hint that wakes one waiting claim of
 * its queue (the one with the lowest min_priority); elsewhere waiters back off (5 ms
 * up to 50 ms). Either way they sleep until the earliest known due time. On a fake
 * clock (mq_queue_set_clock) due times become real sleeps. */
MQ_API mq_status mq_claim_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                               double timeout_s, mq_lease **out, mq_error *err);

/* mq_claim_wait for a batch lease (up to max_events consecutive events of one group,
 * as mq_claim_batch). */
MQ_API mq_status mq_claim_batch_wait(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                                     size_t max_events, double timeout_s, mq_lease **out, mq_error *err);

/* Wakes every mq_claim_wait on this queue (within about 10 ms while a change-stream
 * watcher may run, at once otherwise), and makes every later one return
 * MQ_INTERRUPTED at once: for shutdown. There is no reset: open a new mq_queue to
 * wait again. Async-signal-safe (may be called from a SIGINT handler) and
 * thread-safe. Other calls on the queue keep working. */
MQ_API void mq_queue_interrupt(mq_queue *queue);

/* ---- Cancelling one waiting claim (0.3.0) ------------------------------------- */

/* mq_queue_interrupt ends every wait on a queue for good: right for shutdown, wrong
 * for Go's context, Java's Thread.interrupt(), Ruby's Thread#kill or a dropped Rust
 * future, which cancel one call and expect the queue to go on. An mq_cancel is a
 * flag that one waiting claim watches: trigger it from another thread or a signal
 * handler and that claim returns MQ_CANCELLED (within about 10 ms while it sleeps;
 * after the server command in flight, if one is). Other waiters and later calls on
 * the queue are not touched.
 *
 * A triggered mq_cancel stays triggered: a claim given one returns MQ_CANCELLED at
 * once, before sending anything. mq_cancel_reset re-arms it for the next call. One
 * mq_cancel may be shared by several calls at once (one trigger cancels them all).
 * A lease the claim already holds when the trigger is seen is returned (MQ_OK): a
 * cancel never loses or leaks a lease. */
typedef struct mq_cancel mq_cancel;

MQ_API mq_status mq_cancel_new(mq_cancel **out, mq_error *err);
/* Async-signal-safe and thread-safe; NULL does nothing. */
MQ_API void mq_cancel_trigger(mq_cancel *cancel);
/* 1 once triggered (until reset), else 0; 0 for NULL. */
MQ_API int mq_cancel_triggered(const mq_cancel *cancel);
/* Re-arms it. No call may be using it. */
MQ_API void mq_cancel_reset(mq_cancel *cancel);
/* No call may be using it. NULL does nothing. */
MQ_API void mq_cancel_destroy(mq_cancel *cancel);

/* mq_claim_batch_wait (max_events 1 is mq_claim_wait) that also returns MQ_CANCELLED
 * when `cancel` (may be NULL: then it is exactly mq_claim_batch_wait) is triggered
 * before a lease is taken. */
MQ_API mq_status mq_claim_wait_cancel(mq_queue *queue, const char *worker_id, double visibility_s, int min_priority,
                                      size_t max_events, double timeout_s, mq_cancel *cancel, mq_lease **out,
                                      mq_error *err);

/* ---- One entry per operation: versioned options (0.4.0) --------------------------- */

/* Publishing and claiming grow by options, not by new calls (libgit2's
 * git_clone_options): each options struct starts with its `version`, a caller fills
 * it with the _INIT macro (or, where a macro cannot be used, as from an FFI, with the
 * _init function) and then sets what it wants; the library reads only the fields
 * that the caller's version has, so a program built against this header keeps
 * working with later libraries, whose structs only add fields at the end. NULL
 * options mean the defaults. A version the library does not know (0, or newer than
 * it) is MQ_ERR_ARG and nothing is sent. mq_publish_with and mq_claim_with are the
 * one entry for their operation: mq_publish, mq_publish_at, mq_batch_add, mq_claim,
 * mq_claim_batch, mq_claim_wait, mq_claim_batch_wait and mq_claim_wait_cancel are
 * thin wrappers over the same code, kept for the ABI. */

/* An event's attribute: a key and a value, both NUL-terminated (see "Event
 * attributes"). Not "mq_attr": <mqueue.h> has a struct of that name, and the header
 * must compile beside it. (0.7.0) */
typedef struct mq_event_attr {
    const char *key;
    const char *value;
} mq_event_attr;

#define MQ_PUBLISH_OPTS_VERSION 3 /* 2 (0.6.0) added dedup_key, 3 (0.7.0) attrs; older callers keep working */
typedef struct mq_publish_opts {
    unsigned int version;       /* MQ_PUBLISH_OPTS_VERSION */
    int priority;               /* 0..4, default 0; counts only when the publish creates the group */
    double not_before;          /* epoch seconds on the queue's clock (mq_queue_now); 0: now */
    const char *dedup_key;      /* version 2. NULL: none. 1..MQ_DEDUP_KEY_MAX bytes of UTF-8 (see
                                 * "Deduplication"); the library copies it */
    const mq_event_attr *attrs; /* version 3. attr_count attributes (NULL when 0); copied */
    size_t attr_count;          /* 0..MQ_ATTR_MAX */
} mq_publish_opts;
#define MQ_PUBLISH_OPTS_INIT \
  { MQ_PUBLISH_OPTS_VERSION, 0, 0.0, NULL, NULL, 0 }

/* Fills *opts with the defaults of `version` (MQ_PUBLISH_OPTS_VERSION). */
MQ_API mq_status mq_publish_opts_init(mq_publish_opts *opts, unsigned int version);

/* mq_publish with options: not_before > 0 is mq_publish_at's schedule. 3 commands. */
MQ_API mq_status mq_publish_with(mq_queue *queue, const char *group_id, const void *event, size_t event_len,
                                 const mq_publish_opts *opts /* NULL: defaults */, int64_t *seq_out /* may be NULL */,
                                 mq_error *err);

/* mq_batch_add with options: a batch event may be scheduled (not_before), with
 * mq_publish_at's FIFO rule: a group the batch creates starts parked until its first
 * event's time. */
MQ_API mq_status mq_batch_add_with(mq_batch *batch, const char *group_id, const void *event, size_t event_len,
                                   const mq_publish_opts *opts /* NULL: defaults */, mq_error *err);

#define MQ_CLAIM_OPTS_VERSION 2 /* 2 (0.8.0) added partitions; version 1 callers keep working */
typedef struct mq_claim_opts {
    unsigned int version;   /* MQ_CLAIM_OPTS_VERSION */
    const char *worker_id;  /* NULL: "host:pid" */
    double visibility_s;    /* > 0, finite; default 30 */
    int min_priority;       /* 0..4, default 0 */
    size_t max_events;      /* 1..MQ_BATCH_MAX, default 1 (a batch lease when > 1) */
    double timeout_s;       /* >= 0, finite; default 0: don't wait */
    mq_cancel *cancel;      /* NULL: none */
    const int *partitions;  /* version 2. NULL: every partition of the queue; else partition_count
                             * distinct partitions in 0..mq_queue_partitions - 1, the only ones this
                             * claim takes from (see "Partitioned queues"); copied */
    size_t partition_count; /* 0 with partitions NULL; else 1..mq_queue_partitions */
} mq_claim_opts;
#define MQ_CLAIM_OPTS_INIT \
  { MQ_CLAIM_OPTS_VERSION, NULL, 30.0, 0, 1, 0.0, NULL, NULL, 0 }

/* Fills *opts with the defaults of `version` (MQ_CLAIM_OPTS_VERSION). */
MQ_API mq_status mq_claim_opts_init(mq_claim_opts *opts, unsigned int version);

/* The claim, whichever options: with timeout_s 0 and no cancel it is mq_claim_batch
 * (2 commands; MQ_EMPTY when nothing is due; never MQ_INTERRUPTED); with a timeout or
 * a cancel it is mq_claim_wait_cancel (waits up to timeout_s; MQ_INTERRUPTED,
 * MQ_CANCELLED as there). */
MQ_API mq_status mq_claim_with(mq_queue *queue, const mq_claim_opts *opts /* NULL: defaults */, mq_lease **out,
                               mq_error *err);

/* When the lease runs out, on the queue's clock (mq_queue_now): the claim's time plus
 * its visibility, moved by mq_extend and by mq_nack with a delay. A claim that took
 * longer than its visibility hands back a lease whose deadline has passed: the group
 * may then be claimed by another worker (this lease's ack then reports
 * MQ_LEASE_LOST if it was). 0 for NULL. (0.3.0) */
MQ_API double mq_lease_deadline(const mq_lease *lease);

/* ---- Deduplication: publishing exactly once (0.6.0) ------------------------------ */

/* A publish (mq_publish_with, mq_batch_add_with) with a dedup_key adds its event only
 * if no event of the queue holds that key: while an event with the key is queued
 * (leased, parked, paused: not yet acked), and for the window after its publish even
 * once it was acked or moved to the dead letters, a publish with the same key adds
 * nothing and returns MQ_DUPLICATE with that event's seq. So a publish retried with
 * its key after any failure (MQ_ERR_CONNECT: a lost reply at any of its commands, a
 * step-down after the write, a process that died between commands) leaves exactly one
 * event, from any process and language. Costs: without a key, nothing changes; with
 * one, the same 3 commands, and 1 more (dedup.read) when some key was taken: the
 * event itself carries the key under a unique index, so taking the key and adding the
 * event are one write. A duplicate still takes a seq from the counter (never used: a
 * gap, as after a lost reply). Past the window a key is free again only once its event was
 * acked: the window is a lower bound (the record of an acked event is kept until
 * MongoDB's TTL monitor, which runs every 60 s, removes it, or a publish with the key
 * finds it expired and removes it: 2 commands more then). Purge and drop forget keys;
 * a dead letter requeued is published without its key (the key stays taken by the
 * record of the first event). docs/design.md, "Deduplication". */
#define MQ_DEDUP_KEY_MAX 512              /* bytes of one dedup_key */
#define MQ_DEDUP_WINDOW_DEFAULT 300.0     /* seconds: 5 minutes, like SQS */
#define MQ_DEDUP_WINDOW_MIN 1.0           /* seconds */
#define MQ_DEDUP_WINDOW_MAX (7 * 86400.0) /* seconds: 7 days */

/* The window of this handle's keyed publishes, in seconds (MQ_DEDUP_WINDOW_MIN..MAX;
 * anything else, or not finite, is MQ_ERR_ARG). Each event records the window it was
 * published with, so handles with different windows may share a queue. */
MQ_API mq_status mq_queue_set_dedup_window(mq_queue *queue, double seconds, mq_error *err);

/* Where a key must be unique. MQ_DEDUP_SCOPE_QUEUE (the default): in the queue; a key
 * reused in two groups is a duplicate. MQ_DEDUP_SCOPE_GROUP: in the event's group only
 * (SQS FIFO's high-throughput mode), which a queue whose messages are sharded (or, in
 * a later version, partitioned) by group can keep on every shard. Per handle; every
 * publisher of a queue should use one scope: keys published with one scope never
 * match keys published with the other. */
typedef enum mq_dedup_scope { MQ_DEDUP_SCOPE_QUEUE = 0, MQ_DEDUP_SCOPE_GROUP = 1 } mq_dedup_scope;
MQ_API mq_status mq_queue_set_dedup_scope(mq_queue *queue, mq_dedup_scope scope, mq_error *err);

/* After mq_publish_batch returned MQ_OK or MQ_DUPLICATE: what became of event i (in
 * add order) of that publish. MQ_OK: it was added, *seq is its seq; MQ_DUPLICATE: its
 * key was taken, *seq is the first publish's seq (also when two events of the batch
 * had one key: the later one is the duplicate). MQ_ERR_ARG when i >= the batch's
 * count or the batch was changed or not published since. Reads the batch only (the
 * batch keeps the outcome of its last publish; not thread-safe, like the batch). */
MQ_API mq_status mq_batch_outcome(const mq_batch *batch, size_t i, int64_t *seq, mq_error *err);

/* ---- Event attributes (0.7.0) -------------------------------------------------- */

/* An event may carry up to MQ_ATTR_MAX attributes (mq_publish_opts.attrs, in
 * mq_publish_with and mq_batch_add_with): string keys and values beside its bytes, for
 * what a consumer needs before it reads the event (a content type, a tenant) and for
 * trace context (W3C `traceparent` and `tracestate`). A key is 1..MQ_ATTR_KEY_MAX
 * bytes of ASCII letters, digits, '_', '-' and '.' (the names of HTTP headers and of
 * SQS message attributes), unique in the event; a value is 0..MQ_ATTR_VALUE_MAX bytes
 * of UTF-8 without NUL. Anything else is MQ_ERR_ARG naming the attribute, and nothing
 * is sent. The order is kept. The attributes stay with the event through nack, lease
 * expiry, the dead letters and a requeue; peek and the dead list show them ("attrs":
 * an object); harel ignores them. No command more: they are a field of the event's
 * document (docs/design.md, "Event attributes"). */
#define MQ_ATTR_MAX 16         /* attributes of one event */
#define MQ_ATTR_KEY_MAX 128    /* bytes of a key */
#define MQ_ATTR_VALUE_MAX 4096 /* bytes of a value */

/* Event i of a lease (0 is the head): its number of attributes (0 out of range); the
 * value of `key` (NULL when absent, or i out of range); attribute j in publish order
 * (*key and *value valid until the lease is destroyed; MQ_ERR_ARG when i or j is out
 * of range or an out-pointer is NULL, *key and *value then NULL). No server command. */
MQ_API size_t mq_lease_attr_count(const mq_lease *lease, size_t i);
MQ_API const char *mq_lease_attr(const mq_lease *lease, size_t i, const char *key);
MQ_API mq_status mq_lease_attr_at(const mq_lease *lease, size_t i, size_t j, const char **key, const char **value,
                                  mq_error *err);

/* ---- Automatic repair (0.3.0) ----------------------------------------------------- */

/* What no retry inside a call can heal (a publisher that died between its insert and
 * its lock, a process that died between dropping a lock and re-checking it, a network
 * down for longer than a call's retries) leaves events without a lock: unclaimable
 * until a repair. So claims repair by themselves: when a claim (mq_claim*, waiting or
 * not) finds nothing due and `interval_s` seconds have passed since this queue
 * handle's last automatic repair, that one claim runs mq_repair first, on its own
 * connection (2 server commands, 4 when it re-creates locks; it reads one index key
 * per group) and claims again if it made a group claimable. A repair that fails is
 * logged (domain "mongomq") and counted (the stats' handle.repair.failed); the claim
 * then reports what it found, never the repair's error. The period starts at the
 * handle's first empty claim. Default 60 s; 0 turns it off; negative or not finite is
 * MQ_ERR_ARG. Per handle: a process with several handles on a queue repairs once per
 * handle and period. It runs on empty claims only, because it reads the whole group
 * index of the messages: a queue that is never empty when its claims come (a backlog
 * that never drains) is not repaired by itself; run mq_repair on a schedule there
 * (`mongomq repair`, from cron, say). */
MQ_API mq_status mq_queue_set_repair_interval(mq_queue *queue, double interval_s, mq_error *err);

/* Automatic repairs this handle ran, and locks they re-created (either may be NULL). */
MQ_API void mq_queue_repair_counts(const mq_queue *queue, uint64_t *runs, uint64_t *fixed);

/* ---- Scheduled events ---------------------------------------------------------- */

/* As mq_publish, but the event is not delivered before not_before_epoch_s (seconds
 * since the epoch, on the queue's clock; finite, >= 0). FIFO stays strict: while a
 * scheduled event is its group's head, the group waits for it (the claim that finds
 * it parks the group until then); a group it creates starts parked until then (a
 * time already past makes a group that is due at once, as with mq_publish). 3
 * commands. MQ_ERR_CONNECT: as mq_publish. */
MQ_API mq_status mq_publish_at(mq_queue *queue, const char *group_id, const void *event, size_t event_len, int priority,
                               double not_before_epoch_s, int64_t *seq_out, mq_error *err);

/* ---- Dead letters -------------------------------------------------------------- */

/* n > 0: a claim that would deliver a head for the (n+1)th time moves it to
 * {prefix}_dead instead and goes on with the group's next event. 0 (the default):
 * unlimited. n < 0 is MQ_ERR_ARG. Applies to this mq_queue handle, from its next
 * claim on: lowering it dead-letters, at their next claim, heads already delivered
 * more often than the new n. */
MQ_API mq_status mq_queue_set_max_attempts(mq_queue *queue, int max_attempts, mq_error *err);

/* Dead letters: count them; publish one (by its seq) again at the tail of its group
 * with a new seq (*new_seq); remove them all (*purged = how many). A seq that is not
 * in {prefix}_dead is MQ_ERR_ARG, found by a read (nothing is changed). After
 * MQ_ERR_CONNECT from mq_dead_requeue the letter was moved or not: a retry that finds
 * it gone says MQ_ERR_ARG, and one that finds it still there (its publish landed,
 * its delete did not) publishes it a second time. */
MQ_API mq_status mq_dead_count(mq_queue *queue, int64_t *count, mq_error *err);
MQ_API mq_status mq_dead_requeue(mq_queue *queue, int64_t seq, int64_t *new_seq /* may be NULL */, mq_error *err);
MQ_API mq_status mq_dead_purge(mq_queue *queue, int64_t *purged /* may be NULL */, mq_error *err);

/* ---- Stats, repair, purge -------------------------------------------------------- */

/* The queue's state as one JSON object (shape in docs/design.md, "Stats"), in
 * *json_out, which the caller releases with mq_free. 4 server commands, three of which
 * read whole collections: for monitoring, not for every event. Its "handle" object is
 * this handle's own: its change-stream mode and its automatic repairs (0.4.0); its
 * "published" (the seq counter) and "groups.paused" are 0.5.0's; "partitions" (the
 * queue's P; "published" then sums every partition's counter) is 0.8.0's. */
MQ_API mq_status mq_stats_json(mq_queue *queue, char **json_out, mq_error *err);

/* Releases memory the library returned (mq_stats_json's text). NULL is fine. */
MQ_API void mq_free(void *ptr);

/* Re-creates the lock of every group that has events but no lock (a publisher that
 * died between its two writes); a group whose oldest event is scheduled waits for it.
 * Never touches an existing lock. Reads one index key per group of the messages and
 * every lock's _id (2 server commands, 4 when it creates locks: the orphans' heads,
 * then their locks, in line from their head's publish), so it is meant for start-up
 * and for a periodic sweep (a minute, say), not for every claim. *fixed = locks
 * created. */
MQ_API mq_status mq_repair(mq_queue *queue, int64_t *fixed /* may be NULL */, mq_error *err);

/* Removes a group's events and its lock; a worker holding it gets MQ_LEASE_LOST from
 * ack, nack and extend. A paused group keeps its lock, released, and stays paused
 * (0.5.0). Events published while it runs are kept and start the group afresh; the
 * group's dead letters stay. 3 server commands (4 when a publish raced or the group is
 * paused). */
MQ_API mq_status mq_purge_group(mq_queue *queue, const char *group_id, mq_error *err);

/* Drops the queue's collections (messages, locks, dead letters, counters; 4 server
 * commands): tests and tooling, not a queue other processes are using. The handle
 * stays valid: its next publish makes the indexes again first (2 commands more, once;
 * 0.6.0: a dedup key must not go without its unique index). */
MQ_API mq_status mq_queue_drop(mq_queue *queue, mq_error *err);

/* ---- Looking without claiming (0.3.0) --------------------------------------------- */

/* Up to max_events (1..MQ_BATCH_MAX) events, oldest first (by seq), of one group
 * (group_id) or of the whole queue (group_id NULL), as a JSON array in *json_out
 * (release with mq_free); nothing is claimed or changed. 1 server command (a find).
 * Each element: {"seq", "group", "priority", "attempts"?, "published_at",
 * "not_before"?, "event"}, where "event" is the text for a text event and
 * {"base64": "..."} for a binary one; a field whose stored value has another type
 * (a document mongomq did not write) is left out. For tooling, not for every event. */
MQ_API mq_status mq_peek_json(mq_queue *queue, const char *group_id /* may be NULL */, size_t max_events,
                              char **json_out, mq_error *err);

/* The dead letters, oldest seq first, up to max_events, as mq_peek_json's array
 * (with "attempts" and "dead_at"). 1 server command. */
MQ_API mq_status mq_dead_list_json(mq_queue *queue, size_t max_events, char **json_out, mq_error *err);

/* ---- Groups: listing, pausing; dead letters by page (0.5.0) ---------------------- */

/* A group's state, as the listing shows it and filters on (bit flags: OR them in
 * mq_groups_opts.states; 0 is every state). The first three are mq_stats_json's. */
#define MQ_GROUP_READY 1u  /* due now: available_at <= now (new, released, retried, a lease that ran out) */
#define MQ_GROUP_LEASED 2u /* available_at > now with a token: held (a nack with a delay keeps it held) */
#define MQ_GROUP_PARKED 4u /* available_at > now without a token: waiting for a scheduled head */
#define MQ_GROUP_PAUSED 8u /* paused (mq_pause_group): never claimed until resumed, whatever the rest */

#define MQ_GROUPS_SORT_ID 0  /* by group id, ascending (byte order) */
#define MQ_GROUPS_SORT_DUE 1 /* by available_at, ascending: the order claims take them */

#define MQ_GROUPS_OPTS_VERSION 1
typedef struct mq_groups_opts {
    unsigned int version;      /* MQ_GROUPS_OPTS_VERSION */
    unsigned int states;       /* OR of MQ_GROUP_*; 0: every state */
    const char *id_prefix;     /* only group ids that start with it; NULL or "": all */
    int min_attempts;          /* only groups whose head was delivered at least this often (2: "stuck"); 0: any */
    double held_longer_than_s; /* > 0: only leases taken more than this long ago (held groups only) */
    double parked_beyond_s;    /* > 0: only groups not due for more than this (leased, parked or paused) */
    int sort;                  /* MQ_GROUPS_SORT_ID (default) or MQ_GROUPS_SORT_DUE */
    const char *after;         /* the previous page's "next" (opaque text); NULL or "": the first page */
    size_t limit;              /* rows per page, 1..1000; 0: 50 */
} mq_groups_opts;
#define MQ_GROUPS_OPTS_INIT \
  { MQ_GROUPS_OPTS_VERSION, 0u, NULL, 0, 0.0, 0.0, MQ_GROUPS_SORT_ID, NULL, 0 }

/* Fills *opts with the defaults of `version` (MQ_GROUPS_OPTS_VERSION). */
MQ_API mq_status mq_groups_opts_init(mq_groups_opts *opts, unsigned int version);

/* One page of the queue's groups (their locks) as a JSON object in *json_out (release
 * with mq_free): {"groups": [...], "next": <text for opts.after, or null on the last
 * page>, "now": <the queue clock>}. Each row: "group", "state" ("ready", "leased",
 * "parked" or "paused"), "paused", "priority" (0..4, also while paused), "attempts"
 * (the lock's count of deliveries of the event it last leased; after that event went
 * some other way than its holder's ack, e.g. a stale worker's ack, it is re-counted at
 * the group's next claim), "available_at", "holder" (the worker id in the lease's
 * token, or null), "held_for_s" (since the current lease was taken, or null),
 * "lease_deadline" (available_at while held, or null), "backlog" (events in the
 * group), "head" (its oldest seq, or null) and "head_age_s" (since the head was
 * published, or null). A page costs 3 server commands (1 when it is empty), each on
 * an index with a limit (docs/design.md, "Listing groups"). For tooling. */
MQ_API mq_status mq_groups_json(mq_queue *queue, const mq_groups_opts *opts /* NULL: defaults */, char **json_out,
                                mq_error *err);

/* Pauses a group: no claim takes it (harel's neither) until mq_resume_group; a worker
 * holding it keeps its lease until it acks, nacks or lets it run out, and the pause
 * outlasts the group's draining and refilling and mq_purge_group. A group without
 * events can be paused ahead (its first publish then finds it paused, at priority 0).
 * Pausing a paused group, or resuming one that is not paused, changes nothing and is
 * MQ_OK. 2 server commands. */
MQ_API mq_status mq_pause_group(mq_queue *queue, const char *group_id, mq_error *err);
MQ_API mq_status mq_resume_group(mq_queue *queue, const char *group_id, mq_error *err);

#define MQ_DEAD_LIST_OPTS_VERSION 1
typedef struct mq_dead_list_opts {
    unsigned int version; /* MQ_DEAD_LIST_OPTS_VERSION */
    size_t limit;         /* letters per page, 1..1000; 0: 50 */
    size_t offset;        /* letters to skip, oldest seq first */
} mq_dead_list_opts;
#define MQ_DEAD_LIST_OPTS_INIT \
  { MQ_DEAD_LIST_OPTS_VERSION, 0, 0 }

/* Fills *opts with the defaults of `version` (MQ_DEAD_LIST_OPTS_VERSION). */
MQ_API mq_status mq_dead_list_opts_init(mq_dead_list_opts *opts, unsigned int version);

/* A page of the dead letters, oldest seq first: {"letters": [mq_dead_list_json's
 * rows], "offset": <opts.offset>, "total": <letters in all>}. 2 server commands. */
MQ_API mq_status mq_dead_list_with(mq_queue *queue, const mq_dead_list_opts *opts /* NULL: defaults */, char **json_out,
                                   mq_error *err);

/* ---- Partitioned queues: past one primary (0.8.0) --------------------------------- */

/* A queue may be spread over P partitions (docs/design.md, "Partitioned queues"): a
 * group belongs to partition mq_group_partition(group_id, P), its lock carries it in
 * the field `partition`, and every command a publish, claim, ack, nack, extend,
 * unclaim, pause or resume sends to the locks and counters names the partition in its
 * filter, so locks and counters sharded on {partition: 1, _id: 1} send each of those
 * commands to one shard (`mongomq shard-plan` prints the commands). Per-group FIFO,
 * exclusivity, fencing, priorities, schedules, dead letters and batches mean what they
 * mean with one partition; round-robin holds within each partition, and a claim starts
 * at the next partition in turn (an empty claim costs one command per partition it
 * tries). Seqs stay unique in the queue and increase within a group: partition k's
 * n-th event (n from 1) gets seq (n - 1) * P + k + 1, so with P = 1 they are 1, 2, 3...
 * P is fixed when the queue is first opened with it, recorded in the counters
 * collection ({_id: "partitions", partition: 0, n: P}); opening the queue with another
 * P, or a queue that already holds events of P = 1 with P > 1, is MQ_ERR_ARG naming
 * both. P = 1 is today's schema (harel's), writes no record, and is the default. */
#define MQ_PARTITIONS_MAX 1024

#define MQ_QUEUE_OPTS_VERSION 1
typedef struct mq_queue_opts {
    unsigned int version; /* MQ_QUEUE_OPTS_VERSION */
    int partitions;       /* 1..MQ_PARTITIONS_MAX, default 1 */
} mq_queue_opts;
#define MQ_QUEUE_OPTS_INIT \
  { MQ_QUEUE_OPTS_VERSION, 1 }

/* Fills *opts with the defaults of `version` (MQ_QUEUE_OPTS_VERSION). */
MQ_API mq_status mq_queue_opts_init(mq_queue_opts *opts, unsigned int version);

/* mq_queue_new with options (NULL: defaults, which is mq_queue_new). Its commands are
 * mq_queue_new's, whose open.partitions (a find of the record) also reads P; the first
 * open of a queue with P > 1 writes the record (1 command more, once). */
MQ_API mq_status mq_queue_new_with(mq_client *client, const char *db_name, const char *prefix,
                                   const mq_queue_opts *opts /* NULL: defaults */, mq_queue **out, mq_error *err);

/* The queue's number of partitions (1 unless opened with more); 0 for NULL. */
MQ_API int mq_queue_partitions(const mq_queue *queue);

/* The partition of group_id in a queue of `partitions` partitions: the 64-bit FNV-1a
 * hash of its bytes, mixed by MurmurHash3's 64-bit finalizer (fmix64), modulo
 * partitions; 0 when partitions is 1. -1 for a NULL group_id or partitions outside
 * 1..MQ_PARTITIONS_MAX. Stable across versions and machines: the lock's partition. */
MQ_API int mq_group_partition(const char *group_id, int partitions);

/* The partition of the lease's group (0 in a queue of one partition); -1 for NULL. */
MQ_API int mq_lease_partition(const mq_lease *lease);

/* ---- Time ---------------------------------------------------------------------- */

/* Leases compare times written by different machines. mq_queue_new measures the
 * offset of the server's clock to this machine's (from the server's localTime,
 * corrected by half the round trip), and the queue runs on server time: wall clock
 * plus this offset, in seconds. */
MQ_API double mq_queue_clock_offset(const mq_queue *queue);

/* The queue's clock now (seconds since the epoch): server time, or the clock given to
 * mq_queue_set_clock. What mq_publish_at's not_before is compared with. 0 for NULL. */
MQ_API double mq_queue_now(mq_queue *queue);

/* tests and simulations: replace the clock (seconds since the epoch; the measured
 * offset is then not applied). clock NULL restores server time. */
MQ_API void mq_queue_set_clock(mq_queue *queue, double (*clock)(void *ctx), void *ctx);

/* libmongoc's log. Levels as libmongoc's: 0 error, 1 critical, 2 warning, 3 message,
 * 4 info, 5 debug, 6 trace. */
typedef void (*mq_log_fn)(int level, const char *domain, const char *message, void *ctx);

/* Replaces libmongoc's process-wide log handler: handler receives every libmongoc
 * log line; handler NULL silences libmongoc. Affects every user of libmongoc in the
 * process, so an application that sets libmongoc's handler itself should not call
 * this. mongomq never calls it on its own. The handler may be called from any
 * thread, including libmongoc's background monitoring threads, at the same time. */
MQ_API void mq_log_set_handler(mq_log_fn handler, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* MONGOMQ_H */
