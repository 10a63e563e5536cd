/*
 * mongomq.h — a multi-machine queue with per-group FIFO exclusivity on MongoDB.
 *
 * The only public header of libmongomq. C99, includes no libmongoc header.
 *
 * Model (docs/design.md has the schema, every operation's server commands and the
 * argument for each race):
 *   - A queue is three collections under one database: {prefix}_messages,
 *     {prefix}_locks and {prefix}_counters. The documents are those of harel's
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
 *
 * Conventions:
 *   - Every fallible call returns an mq_status and fills *err when err is not NULL.
 *     err may be NULL everywhere. Messages never contain a password.
 *   - Out-parameters are set to NULL on failure. What the library returns through
 *     T **out the caller owns and releases with that type's _destroy, which accepts
 *     NULL. Nothing a caller passes is kept by pointer after the call returns.
 *   - Bad arguments give MQ_ERR_ARG with a message naming the argument, and nothing
 *     is sent to the server.
 *   - A client must outlive the queues made from it; a queue must outlive nothing
 *     (leases are plain values and may outlive their queue).
 *   - No exception, abort() or exit() crosses this API, and the library never
 *     prints. libmongoc's own log goes to its process-wide handler (stderr by
 *     default); see mq_log_set_handler to route or silence it.
 *
 * Threading: mq_client and mq_queue are thread-safe: any number of threads may
 * publish, claim, ack, nack and extend through the same handles at once (each call
 * borrows a connection from the client's pool). A single mq_lease may be read from
 * several threads but must not be destroyed while another thread uses it.
 * mq_queue_set_clock must not race with calls on the same queue.
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
#define MQ_VERSION_MINOR 1
#define MQ_VERSION_PATCH 0

/* Limits checked before anything is sent to the server. */
#define MQ_GROUP_ID_MAX 1000            /* bytes of a group id (UTF-8, non-empty) */
#define MQ_WORKER_ID_MAX 200            /* bytes of a worker id (UTF-8, non-empty) */
#define MQ_EVENT_MAX (16 * 1024 * 1024 - 16 * 1024) /* bytes of one event: BSON's 16 MiB less room for the envelope */
#define MQ_PRIORITY_MIN 0
#define MQ_PRIORITY_MAX 4

typedef enum mq_status {
    MQ_OK = 0,
    MQ_EMPTY = 1,        /* mq_claim: no group is due at this priority floor */
    MQ_LEASE_LOST = 2,   /* ack/nack/extend: the lease expired and the group moved on */
    MQ_ERR_ARG = -1,     /* bad argument: NULL, out of range, not UTF-8, too large */
    MQ_ERR_CONNECT = -2, /* server unreachable or timed out */
    MQ_ERR_SERVER = -3,  /* the server answered with an error */
    MQ_ERR_NOMEM = -4,
    MQ_ERR_INTERNAL = -5
} mq_status;

typedef struct mq_error {          /* caller-allocated; every fallible call fills it */
    mq_status status;
    int server_code;               /* MongoDB error code, or 0 */
    char message[504];             /* NUL-terminated, never contains a password */
} mq_error;

/* The size is part of the ABI. */
typedef char mq_error_size_check_[(sizeof(mq_error) == 512) ? 1 : -1];

typedef struct mq_client mq_client;  /* a connection pool; thread-safe */
typedef struct mq_queue  mq_queue;   /* one queue (database + prefix); thread-safe */
typedef struct mq_lease  mq_lease;   /* one claimed message; owned by the caller */

/* "0.1.0": the library's version, which may differ from MQ_VERSION_* of the header
 * the caller compiled against. */
MQ_API const char *mq_version(void);

/* "MQ_OK", "MQ_ERR_ARG", ...; "MQ_UNKNOWN" for a value that is no mq_status. */
MQ_API const char *mq_status_name(mq_status status);

/* Opens a connection pool for a MongoDB URI ("mongodb://host:port/?opts"). Does not
 * contact the server (the first queue does): a malformed URI is MQ_ERR_ARG here, an
 * unreachable server is MQ_ERR_CONNECT from the first call that needs it, after the
 * URI's serverSelectionTimeoutMS (libmongoc's default: 30 s). */
MQ_API mq_status mq_client_new(const char *uri, mq_client **out, mq_error *err);
MQ_API void      mq_client_destroy(mq_client *client);

/* Number of commands this client has sent to the server so far (counted with
 * libmongoc's APM callbacks). Monotonic; for benchmarks and monitoring. */
MQ_API uint64_t mq_client_command_count(const mq_client *client);

/* Opens the queue {db_name}.{prefix}_*. db_name NULL -> "mongomq", prefix NULL ->
 * "mq". A db_name or prefix MongoDB would reject is MQ_ERR_ARG. Creates the indexes
 * (idempotent; 2 commands), so this is also where an unreachable server shows up. */
MQ_API mq_status mq_queue_new(mq_client *client, const char *db_name, const char *prefix,
                              mq_queue **out, mq_error *err);
MQ_API void      mq_queue_destroy(mq_queue *queue);

/* Appends an event to the tail of group_id. The event is any bytes (event_len may be
 * 0; event may then be NULL). Valid UTF-8 without NUL bytes is stored as a BSON
 * string (what harel stores), anything else as BSON binary; claim hands back exactly
 * these bytes. priority (0..4) counts only when this publish creates the group.
 * *seq_out receives the event's sequence number. 3 server commands. */
MQ_API mq_status mq_publish(mq_queue *queue, const char *group_id,
                            const void *event, size_t event_len, int priority,
                            int64_t *seq_out /* may be NULL */, mq_error *err);

/* Leases the head event of the due group that has waited longest, considering only
 * groups with priority >= min_priority (0..4). The lease lasts visibility_s seconds
 * (> 0, finite). worker_id NULL -> "host:pid". MQ_EMPTY (and *out NULL) when no group
 * is due. 2 server commands; 1 when nothing is due; 3 more for each group left
 * without events that it meets and drops on the way. */
MQ_API mq_status mq_claim(mq_queue *queue, const char *worker_id /* NULL -> host:pid */,
                          double visibility_s, int min_priority,
                          mq_lease **out, mq_error *err);

/* Removes the leased event and releases its group: to the back of the round-robin
 * when more events wait, or deletes the group when it drained. MQ_LEASE_LOST when
 * the lease expired and another worker took the group (the event is removed all the
 * same: it was processed; at-least-once). 2 server commands when more events wait,
 * 3 when the group drains. */
MQ_API mq_status mq_ack(mq_queue *queue, const mq_lease *lease, mq_error *err);

/* Gives the event back. delay_s == 0: the group is claimable now (the same head is
 * redelivered, attempts + 1). delay_s > 0: the group stays held for delay_s seconds,
 * then the head is redelivered. 1 server command. */
MQ_API mq_status mq_nack(mq_queue *queue, const mq_lease *lease, double delay_s, mq_error *err);

/* Moves the lease's expiry to now + visibility_s. 1 server command. */
MQ_API mq_status mq_extend(mq_queue *queue, const mq_lease *lease, double visibility_s,
                           mq_error *err);

/* A lease's fields; NULL lease -> 0 / NULL. Strings and the event are valid until
 * destroy; a 0-byte event is a valid non-NULL pointer with *len_out 0. */
MQ_API int64_t     mq_lease_seq(const mq_lease *lease);
MQ_API const char *mq_lease_group(const mq_lease *lease);
MQ_API const void *mq_lease_event(const mq_lease *lease, size_t *len_out); /* valid until destroy */
MQ_API const char *mq_lease_token(const mq_lease *lease);
MQ_API int         mq_lease_attempts(const mq_lease *lease); /* 1 on first delivery of this head */
MQ_API void        mq_lease_destroy(mq_lease *lease);

/* tests and simulations: replace the wall clock (seconds since the epoch).
 * clock NULL restores the wall clock. */
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
