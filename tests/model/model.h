/* The reference model of tests/test_model.c and what its files share: the model's state
 * (events, locks, the leases the test keeps, the dedup keys and their records), the
 * run's coverage counters, and the helpers split out of test_model.c: the trace, the
 * failure report and reading the server (core.c), the checks after every step
 * (invariants.c), the calls that look without claiming, each compared with the model
 * (look.c), and the deduplication keys (dedup.c: keyed publishes and batches, the
 * records acks and dead letters leave, their check). The semantics modelled are in
 * test_model.c's first comment; test_model.c itself holds the claim, the other
 * operations and the runner. */
#ifndef MONGOMQ_TEST_MODEL_H
#define MONGOMQ_TEST_MODEL_H

#include "support.h"

#include <jansson.h>
#include <setjmp.h>

/* The fake clock's start (2036-07-18): later than the real clock, so that on a real
 * MongoDB the TTL monitor, which runs on the server's clock, does not remove a record
 * of a dedup key (docs/design.md, "Deduplication") that the model still holds; and
 * below 2^31 s, past which the test server compares a fractional double with a whole
 * one wrongly (4000000000.5 <= 4000000000.0 is true there: tests/server/README.md). */
#define MODEL_T0 2.1e9

#define NGROUPS 5
#define MAX_EV 2048
#define POOL 8
#define TRACE 50
#define LINE 400
#define NKEYS 5     /* the dedup keys of a sequence: few, so that duplicates are frequent */
#define MAX_REC 128 /* records: at most one per key and scope (NKEYS * (1 + NGROUPS)) */

extern const char *const GROUP[NGROUPS];
extern const char *const WORKER[3];

/* What the sequences did, summed over the run: printed at the end, so that a run that
 * never met a case shows it. */
typedef struct cover_counts {
    long claims_ok, claims_empty, batch_leases, lost, stale_ok, dead, requeued, parks, drops, tie_peeks, orphans,
        auto_fixed, repaired, relocks, ambiguous_attempts, listed, unclaimed;
    /* pausing: pauses of a lock, of a group without one (ahead), of a paused group (no
     * change); resumes, and resumes that changed nothing; the holder of a paused group
     * acking, nacking, extending or giving back; a paused drain (the lock stays), a
     * purge of a paused group, a publish to a paused group (a refill) */
    long pauses, paused_ahead, pause_noop, resumes, resume_noop, paused_holder, paused_drains, paused_purges,
        paused_refills;
    /* the group listing: full walks, pages, rows, pages by due that begin inside a tie
     * of available_at; dead letters by page: pages, rows */
    long group_walks, group_pages, group_rows, group_tie_pages, dead_pages, dead_rows;
    /* dedup keys: keyed publishes (single, batch events, in group scope), duplicates of
     * a queued event and of a record, duplicates of an earlier event of the same
     * batch, batches published again; records made by an ack and by the dead letters,
     * keyed events acked or dead-lettered past their window (deleted), keyed events
     * purged; expired records a publish met; orphans locked by a duplicate's publish;
     * windows and scopes changed */
    long keyed_single, keyed_batch, keyed_group_scope, dup_queued, dup_record, dup_in_batch, batch_again, rec_by_ack,
        rec_by_dead, keyed_past_window, keyed_purged, expired_met, dup_orphan_locks, dedup_changes;
} cover_counts;
extern cover_counts cover;

enum { EV_LIVE, EV_ACKED, EV_DEAD, EV_GONE };
extern const char *const EV_STATE[];

typedef struct mev {
    int64_t seq;
    int group;
    int priority;
    unsigned char bytes[16];
    size_t len;
    double not_before; /* 0: none */
    double published_at;
    /* Deliveries of this event: lo counts those as a lease's head, hi also those
     * inside batch leases behind another head (which the docs do not settle). They
     * are equal once the event was delivered as head. */
    int lo, hi;
    int state;
    double dead_at; /* the queue clock of the claim that moved it to the dead letters */
    /* A dedup key (dedup.c): KEY[key] in key_scope (MQ_DEDUP_SCOPE_*; in group scope
     * the key is {group, key}), held until the event goes, and for its window after
     * its publish (dedup_until, epoch ms on the queue clock) by the record it leaves. */
    int keyed;
    int key;
    int key_scope;
    int64_t until_ms;
} mev;

/* The record an ack or a dead letter leaves of a keyed event within its window: the
 * event's _id, its key, dedup_expires (its dedup_until); nothing else. */
typedef struct mrec {
    int64_t seq;
    int key;
    int scope;
    int group; /* group scope: the event's group (part of the key); else -1 */
    int64_t expires_ms;
} mrec;

/* A lock document (docs/design.md, "Schema"). */
typedef struct mlock {
    int exists;
    double avail;
    char token[256]; /* "" is null */
    int priority;    /* 0..4; stored as -1 - priority while paused */
    int paused;
    double paused_at; /* 0: absent (set while paused) */
    int attempts;     /* the deliveries of `head` (docs/design.md, "Attempts") */
    int64_t head;     /* 0: absent */
    double leased_at; /* 0: absent; set by every claim that leases the lock */
} mlock;

typedef struct mlease {
    mq_lease *lease;
    int id;
    int group;
    char token[256];
    int64_t seqs[4];
    int n;
    int more_after;
    int64_t next_seq;   /* with more_after: the seq behind the lease the claim saw (ack.release's head) */
    double prior_avail; /* the lock's available_at before this lease: mq_unclaim puts it back */
    int attempts;       /* the lease's attempts (its head's deliveries, this one included) */
} mlease;

/* The _id and group_id of a document read from the server. */
typedef struct srv_doc {
    int64_t seq;
    char group[16];
    int no_group; /* no group_id field: a dedup record (dedup.c checks those) */
} srv_doc;

#define MODEL_MAX_PARTITIONS 16

typedef struct model {
    tq *t;
    uint64_t rng;
    uint64_t seed;
    int sequence;
    int step;
    mev ev[MAX_EV]; /* in seq order */
    int nev;
    /* Seqs (lib/partition.hpp): partition k's n-th event gets (n - 1) * P + k + 1; with
     * one partition they are 1, 2, 3... taken[k] counts the seqs partition k gave. */
    int partitions; /* tq_partitions(), at most MODEL_MAX_PARTITIONS */
    int64_t taken[MODEL_MAX_PARTITIONS];
    /* Each handle's claim turn: a claim over P > 1 partitions starts at partition turn
     * and, when it takes from partition k, sets turn to k + 1 (mod P); an empty claim
     * leaves it. */
    uint64_t turn[2];
    mlock lock[NGROUPS];
    mlease pool[POOL];
    int npool;
    int lease_ids;
    int event_ids;
    /* Two handles on the queue, as two processes would have: each call goes through
     * one of them. max attempts and the automatic repair are per handle. */
    mq_queue *q[2];
    int h;                 /* the handle of the running operation */
    int hmax[2];           /* each handle's max attempts */
    int max_attempts;      /* the claiming handle's, while a claim is modelled */
    int ngroups;           /* this sequence's groups: GROUP[0 .. ngroups-1] */
    int auto_repair;       /* the automatic repair runs on every empty claim (interval ~0) */
    int repair_started[2]; /* its period started (the handle's first empty claim) */
    uint64_t repair_runs[2], repair_fixed[2];
    double window[2];  /* each handle's dedup window, seconds */
    int scope[2];      /* each handle's dedup scope */
    mrec rec[MAX_REC]; /* the records on the server, in no order */
    int nrec;
    mq_batch *batch; /* a keyed batch being published (dedup.c), or NULL */
    char trace[TRACE][LINE];
    int ntrace;
    char cur[LINE];   /* the operation running now */
    srv_doc *scratch; /* MAX_EV documents read from the server */
    jmp_buf fail_jmp;
} model;

/* ---- test_model.c: what dedup.c publishes with ---- */

/* The model's new event (seq must be the counter's next). */
mev *add_event(model *m, int64_t seq, int g, int priority, const unsigned char *bytes, size_t len, double not_before);
/* The seq a publish to group g gets next, and taking it (the counter moves, for a
 * duplicate too); the events ever published (stats' "published"); g's partition. */
int64_t seq_next(const model *m, int g);
int64_t seq_take(model *m, int g);
int64_t seq_published(const model *m);
int partition_of(const model *m, int g);
/* A new event's bytes (at most 16). */
size_t make_event(model *m, unsigned char *buf);
const char *describe_bytes(const unsigned char *b, size_t len, char *out, size_t size);
/* A new lock: attempts 0 counting `head` (0: none), not paused, never leased. */
void lock_created(model *m, int g, int priority, double avail, int64_t head);
/* publish.lock: a group without a lock gets one, a lock that is there stays. */
void publish_lock(model *m, int g, int priority, double avail, int64_t seq);

/* ---- core.c: random numbers, the trace, failing, the model's queries, the server ---- */

uint64_t rnd_next(uint64_t *s);
int below(model *m, int n);
double now_of(model *m);

void say(model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts an operation: picks its handle (m->h) and describes it. */
void begin_op(model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void end_op(model *m);
/* Prints the failure, the replay line, the trace and the model, and ends the sequence. */
void mfail(model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void expect_status(model *m, const char *call, mq_status got, mq_status want, const mq_error *err);

int group_index(const char *name);
mev *head_of(model *m, int g);
mev *next_in_group(model *m, const mev *e);
mev *find_ev(model *m, int64_t seq);
int live_count(model *m, int g); /* g < 0: every group */
int dead_count_model(model *m);
/* The worker id in a token "{worker_id}:{32 hex}" (the listing's holder). */
void holder_of_token(const char *token, char *out, size_t size);

mongoc_cursor_t *raw_find(model *m, const char *suffix, bson_t *filter, int sorted, mongoc_collection_t **coll);
void raw_done(model *m, mongoc_cursor_t *cursor, mongoc_collection_t *coll, bson_t *filter, const char *what);
void parse_lock(const bson_t *doc, mlock *out);
void srv_lock(model *m, int g, mlock *out);
int srv_dead(model *m, int64_t seq, int *attempts);
/* The _id and group_id of every document of {prefix}_<suffix>, in _id order. */
int read_ids(model *m, const char *suffix, srv_doc *out, int cap);

/* ---- invariants.c: after every step ---- */

void check_repair_counts(model *m);
void check_all(model *m);

/* ---- look.c: mq_peek_json, mq_dead_list_json, mq_dead_list_with, mq_groups_json ---- */

void op_peek(model *m);
void op_dead_pages(model *m);
void op_groups(model *m);

/* ---- dedup.c: deduplication keys ---- */

extern const char *const KEY[NKEYS];

/* Each handle's window and scope, at a sequence's start. */
void dedup_setup(model *m);
/* A keyed event leaves the queue: acked or moved to the dead letters (a record stays
 * while its dedup_until is still ahead, else nothing), or purged (nothing stays).
 * Nothing for an event without a key. */
enum { DEDUP_PURGED, DEDUP_ACKED, DEDUP_DEAD };
void dedup_removed(model *m, mev *e, int how);
/* For the orphan publish of op_repair: half the time a key free in the running
 * handle's scope for group g, else -1; then the publish (mq_publish_with when keyed),
 * and the key on the model's event. */
int dedup_orphan_key(model *m, int g);
mq_status dedup_publish(model *m, int g, const unsigned char *bytes, size_t len, int priority, int key, int64_t *seq,
                        mq_error *err);
void dedup_keyed(model *m, mev *e, int key);
/* The orphan's next publish as a duplicate of its key (the orphan is keyed): the
 * duplicate's publish makes the lock the orphan's publish did not. */
void dedup_orphan_duplicate(model *m, const mev *orphan);
void op_publish_keyed(model *m);
void op_batch_keyed(model *m);
void op_dedup_config(model *m);
void op_dedup_clock(model *m);
/* After every step: the keyed documents of the messages (events and records) are
 * exactly the model's. */
void check_dedup(model *m);
void dump_dedup(model *m);
void print_dedup_cover(void);

#endif /* MONGOMQ_TEST_MODEL_H */
