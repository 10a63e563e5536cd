/* Randomized model-based test: random sequences of every call of the C API on one
 * queue with a fake clock, each step checked against a small reference model of the
 * semantics include/mongomq.h and docs/design.md describe.
 *
 * The model (all in this file): groups with a FIFO of events; a lock per active group
 * (ready / leased by a token until a deadline / parked until a time), with the
 * priority of the publish that created the group; the round robin by available_at;
 * the claim's priority floor and batch size; attempts per EVENT (an event's attempts
 * is the number of its own deliveries: one that becomes head because someone else
 * removed the one before it starts at 0); dead letters only after max_attempts
 * deliveries of that event (lowering max attempts applies to heads already past it);
 * nack delays that keep the group held; mq_unclaim putting a lease back as its
 * claim found it (place in line, attempts); leases fenced by token, not by time (an
 * expired lease that nobody took over still acks, nacks and extends); an ack by a
 * stale lease removes its events all the same and says MQ_LEASE_LOST; purge of a
 * group; groups left with events and no lock (a publisher that died between its
 * insert and its lock: the test deletes the lock its publish made) and what heals
 * them: the group's next publish, mq_repair, or the automatic repair of an empty
 * claim (half the sequences run it on every empty claim, with an interval of ~0,
 * and check mq_queue_repair_counts; the others turn it off); dead letters counted,
 * requeued and purged; the stats; mq_peek_json and mq_dead_list_json. Each sequence uses 2 to 5 groups, a random max
 * attempts to start with, and every claim entry point (mq_claim, mq_claim_batch, and
 * the waiting claims with timeout 0, which are the plain claim).
 *
 * Where the documents allow more than one outcome the model accepts any of them and
 * then follows what the library did:
 *   - groups with equal available_at: the claim may take any of them first. The
 *     groups of the tie that a claim would only park or drop (or whose head it would
 *     move to the dead letters) may or may not have been visited on the way: the
 *     test reads their lock (or the dead letters) to learn which.
 *   - (none for new locks: a new group's lock is in line from its first publish's
 *     time, or parked until its first event's time: docs/design.md, "Round-robin
 *     and fairness")
 *   - events delivered inside a batch lease but not as its head: whether those
 *     deliveries count in the event's attempts (a lease reports only its head's).
 *
 * After every step: the messages and dead letters on the server are exactly the
 * model's (every published event that was not acked, purged or dead-purged is in
 * exactly one of them, never neither); the locks are the model's (existence,
 * available_at, token, priority: the schema in docs/design.md); mq_stats_json agrees
 * (messages, dead, groups total/ready/leased/parked, per priority, now, oldest age).
 * After every claim: the leased events are exactly the model's group head(s) in FIFO
 * order with their bytes, the attempts are the head's deliveries, the deadline is
 * now + visibility.
 *
 * Replay: the seed comes from MONGOMQ_MODEL_SEED (else the time) and is printed;
 * sequence i runs with seed + i. A failure prints its sequence's seed, the step and
 * the last operations; MONGOMQ_MODEL_SEED=<that seed> MONGOMQ_MODEL_SEQUENCES=1 runs
 * exactly that sequence again. MONGOMQ_MODEL_SEQUENCES (default 20) and
 * MONGOMQ_MODEL_STEPS (steps per sequence, default 60) bound the run. A failing
 * sequence does not stop the others: the test fails at the end, listing every
 * failing seed. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NGROUPS 5
#define MAX_EV 2048
#define POOL 8
#define TRACE 50
#define LINE 400

static const char *const GROUP[NGROUPS] = {"g0", "g1", "g2", "g3", "g4"};
static const char *const WORKER[3] = {"w0", "w1", "w2"};

/* What the sequences did, summed over the run: printed at the end, so that a run that
 * never met a case shows it. */
static struct {
    long claims_ok, claims_empty, batch_leases, lost, stale_ok, dead, requeued, parks, drops, tie_peeks, orphans,
        auto_fixed, repaired, relocks, ambiguous_attempts, listed, unclaimed;
} cover;

/* ---- random numbers: splitmix64, the same sequence on every platform ---- */

static uint64_t rnd_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ---- the model ---- */

enum { EV_LIVE, EV_ACKED, EV_DEAD, EV_GONE };
static const char *const EV_STATE[] = {"live", "acked", "dead", "gone"};

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
} mev;

typedef struct mlock {
    int exists;
    double avail;
    char token[256]; /* "" is null */
    int priority;
} mlock;

typedef struct mlease {
    mq_lease *lease;
    int id;
    int group;
    char token[256];
    int64_t seqs[4];
    int n;
    int more_after;
    double prior_avail; /* the lock's available_at before this lease: mq_unclaim puts it back */
    int attempts;       /* the lease's attempts (its head's deliveries, this one included) */
} mlease;

typedef struct model {
    tq *t;
    uint64_t rng;
    uint64_t seed;
    int sequence;
    int step;
    mev ev[MAX_EV]; /* in seq order */
    int nev;
    int64_t next_seq;
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
    char trace[TRACE][LINE];
    int ntrace;
    char cur[LINE];          /* the operation running now */
    struct srv_doc *scratch; /* MAX_EV documents read from the server */
    jmp_buf fail_jmp;
} model;

static int below(model *m, int n) { return (int)(rnd_next(&m->rng) % (uint64_t)n); }
static double now_of(model *m) { return m->t->now; }

/* ---- trace and failure ---- */

static void push_trace(model *m, const char *line) {
    snprintf(m->trace[m->ntrace % TRACE], LINE, "%s", line);
    m->ntrace++;
}

/* Adds to the description of the running operation. */
static void say(model *m, const char *fmt, ...) {
    size_t len = strlen(m->cur);
    if (len + 1 >= LINE) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->cur + len, LINE - len, fmt, ap);
    va_end(ap);
}

static void begin_op(model *m, const char *fmt, ...) {
    m->h = below(m, 2);
    int n = snprintf(m->cur, LINE, "step %d t=+%.2f h%d: ", m->step, now_of(m) - 1e9, m->h);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->cur + n, LINE - (size_t)n, fmt, ap);
    va_end(ap);
}

static void end_op(model *m) {
    push_trace(m, m->cur);
    m->cur[0] = '\0';
}

static void dump_model(model *m) {
    printf("  model state (t=+%.3f, max attempts: handle 0 %d, handle 1 %d):\n", now_of(m) - 1e9, m->hmax[0],
           m->hmax[1]);
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *l = &m->lock[g];
        printf("    %s: ", GROUP[g]);
        if (l->exists)
            printf("lock available_at %s%.3f token %s priority %d;", l->avail == 0 ? "0 = " : "+",
                   l->avail == 0 ? 0 : l->avail - 1e9, l->token[0] ? l->token : "null", l->priority);
        else
            printf("no lock;");
        printf(" events");
        for (int i = 0; i < m->nev; i++) {
            const mev *e = &m->ev[i];
            if (e->group != g || e->state == EV_GONE || e->state == EV_ACKED) continue;
            printf(" %lld%s(d%d", (long long)e->seq, e->state == EV_DEAD ? "[dead]" : "", e->lo);
            if (e->hi != e->lo) printf("..%d", e->hi);
            if (e->not_before > 0) printf(",nb+%.2f", e->not_before - 1e9);
            printf(")");
        }
        printf("\n");
    }
}

static void mfail(model *m, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (m->cur[0]) end_op(m);
    printf("\n[model] FAILED: sequence %d (seed %llu), step %d: %s\n", m->sequence, (unsigned long long)m->seed,
           m->step, msg);
    printf("[model] replay: MONGOMQ_MODEL_SEED=%llu MONGOMQ_MODEL_SEQUENCES=1 (steps: %d)\n",
           (unsigned long long)m->seed, m->step + 1);
    int first = m->ntrace > TRACE ? m->ntrace - TRACE : 0;
    printf("[model] the last %d operations:\n", m->ntrace - first);
    for (int i = first; i < m->ntrace; i++) printf("  %s\n", m->trace[i % TRACE]);
    dump_model(m);
    fflush(stdout);
    longjmp(m->fail_jmp, 1);
}

static void expect_status(model *m, const char *call, mq_status got, mq_status want, const mq_error *err) {
    if (got != want)
        mfail(m, "%s returned %s, the model expects %s (%s)", call, mq_status_name(got), mq_status_name(want),
              err->message);
}

/* ---- model helpers ---- */

static int group_index(const char *name) {
    for (int g = 0; g < NGROUPS; g++)
        if (name != NULL && strcmp(name, GROUP[g]) == 0) return g;
    return -1;
}

static mev *head_of(model *m, int g) {
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == g) return &m->ev[i];
    return NULL;
}

static mev *next_in_group(model *m, const mev *e) {
    for (int i = (int)(e - m->ev) + 1; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == e->group) return &m->ev[i];
    return NULL;
}

static mev *find_ev(model *m, int64_t seq) {
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].seq == seq) return &m->ev[i];
    return NULL;
}

static int live_count(model *m, int g) {
    int n = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && (g < 0 || m->ev[i].group == g)) n++;
    return n;
}

static int dead_count_model(model *m) {
    int n = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_DEAD) n++;
    return n;
}

static mev *add_event(model *m, int64_t seq, int g, int priority, const unsigned char *bytes, size_t len,
                      double not_before) {
    if (m->nev >= MAX_EV) mfail(m, "the model holds at most %d events", MAX_EV);
    if (seq != m->next_seq) mfail(m, "seq %lld, the model expects %lld", (long long)seq, (long long)m->next_seq);
    mev *e = &m->ev[m->nev++];
    memset(e, 0, sizeof *e);
    e->seq = seq;
    e->group = g;
    e->priority = priority;
    memcpy(e->bytes, bytes, len);
    e->len = len;
    e->not_before = not_before;
    e->published_at = now_of(m);
    e->state = EV_LIVE;
    m->next_seq++;
    return e;
}

/* A new event's bytes: text, binary (with a NUL, so stored as BSON binary) or empty. */
static size_t make_event(model *m, unsigned char *buf) {
    int id = ++m->event_ids;
    switch (below(m, 4)) {
        case 0:
            buf[0] = 0x00;
            buf[1] = 0xff;
            buf[2] = (unsigned char)(id & 0xff);
            buf[3] = (unsigned char)((id >> 8) & 0xff);
            return 4;
        case 1:
            return 0;
        default:
            return (size_t)snprintf((char *)buf, 16, "ev%d", id);
    }
}

static const char *describe_bytes(const unsigned char *b, size_t len, char *out, size_t size) {
    if (len == 0) return "''";
    if (b[0] == 0) {
        snprintf(out, size, "bin(%02x%02x%02x%02x)", b[0], b[1], b[2], b[3]);
        return out;
    }
    snprintf(out, size, "'%.*s'", (int)len, (const char *)b);
    return out;
}

/* ---- reading the server (the documents of docs/design.md, "Schema") ---- */

static mongoc_cursor_t *raw_find(model *m, const char *suffix, bson_t *filter, int sorted, mongoc_collection_t **coll) {
    *coll = tq_collection(m->t, suffix);
    bson_t *opts = sorted ? BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}") : bson_new();
    mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(*coll, filter, opts, NULL);
    bson_destroy(opts);
    return cursor;
}

static void raw_done(model *m, mongoc_cursor_t *cursor, mongoc_collection_t *coll, bson_t *filter, const char *what) {
    bson_error_t error;
    int bad = mongoc_cursor_error(cursor, &error);
    mongoc_cursor_destroy(cursor);
    mongoc_collection_destroy(coll);
    bson_destroy(filter);
    if (bad) mfail(m, "reading %s: %s", what, error.message);
}

static double doc_double(const bson_t *doc, const char *field, double fallback) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return fallback;
    return bson_iter_as_double(&it);
}

static void parse_lock(const bson_t *doc, mlock *out) {
    memset(out, 0, sizeof *out);
    out->exists = 1;
    out->avail = doc_double(doc, "available_at", -1);
    out->priority = (int)doc_double(doc, "priority", -1);
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "token") && BSON_ITER_HOLDS_UTF8(&it))
        snprintf(out->token, sizeof out->token, "%s", bson_iter_utf8(&it, NULL));
}

/* The lock of group g on the server. */
static void srv_lock(model *m, int g, mlock *out) {
    mongoc_collection_t *coll;
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(GROUP[g]));
    mongoc_cursor_t *cursor = raw_find(m, "locks", filter, 0, &coll);
    const bson_t *doc;
    memset(out, 0, sizeof *out);
    if (mongoc_cursor_next(cursor, &doc)) parse_lock(doc, out);
    raw_done(m, cursor, coll, filter, "a lock");
}

/* Whether seq is a dead letter on the server, and its attempts. */
static int srv_dead(model *m, int64_t seq, int *attempts) {
    mongoc_collection_t *coll;
    bson_t *filter = BCON_NEW("_id", BCON_INT64(seq));
    mongoc_cursor_t *cursor = raw_find(m, "dead", filter, 0, &coll);
    const bson_t *doc;
    int found = mongoc_cursor_next(cursor, &doc);
    if (found && attempts != NULL) *attempts = (int)doc_double(doc, "attempts", -1);
    raw_done(m, cursor, coll, filter, "a dead letter");
    return found;
}

/* ---- repair: groups with events and no lock (orphans) ---- */

static int is_orphan(model *m, int g) { return !m->lock[g].exists && head_of(m, g) != NULL; }

static int orphan_count(model *m) {
    int n = 0;
    for (int g = 0; g < NGROUPS; g++) n += is_orphan(m, g);
    return n;
}

static void lock_created(model *m, int g, int priority, double avail);

/* What mq_repair does to the model: a lock for every orphan, as its oldest event's
 * publish would have made it. `peek`: the server may be read to settle the
 * available_at of a group whose oldest event was scheduled for a time already past
 * (not after a claim that may have leased the group since). */
static int repair_orphans(model *m, int peek) {
    int fixed = 0;
    for (int g = 0; g < NGROUPS; g++) {
        if (!is_orphan(m, g)) continue;
        mev *h = head_of(m, g);
        /* in line from the head's publish, or parked until its time (docs/design.md,
         * "Round-robin and fairness") */
        (void)peek;
        lock_created(m, g, h->priority, h->not_before > h->published_at ? h->not_before : h->published_at);
        say(m, " [%s repaired]", GROUP[g]);
        fixed++;
    }
    return fixed;
}

/* The automatic repair of a claim whose claim.lease found nothing (at most once per
 * claim): in this test's mode with an interval of ~0, every such claim but the
 * handle's first (which starts the period) runs it. True when it made a lock. */
static int auto_repair_model(model *m) {
    if (!m->auto_repair) return 0;
    if (!m->repair_started[m->h]) {
        m->repair_started[m->h] = 1;
        return 0;
    }
    m->repair_runs[m->h]++;
    int fixed = repair_orphans(m, 0);
    m->repair_fixed[m->h] += (uint64_t)fixed;
    cover.auto_fixed += fixed;
    return fixed > 0;
}

static void check_repair_counts(model *m) {
    for (int h = 0; h < 2; h++) {
        uint64_t runs = 99, fixed = 99;
        mq_queue_repair_counts(m->q[h], &runs, &fixed);
        if (runs != m->repair_runs[h] || fixed != m->repair_fixed[h])
            mfail(m, "mq_queue_repair_counts of handle %d: %llu runs, %llu fixed; the model counts %llu, %llu", h,
                  (unsigned long long)runs, (unsigned long long)fixed, (unsigned long long)m->repair_runs[h],
                  (unsigned long long)m->repair_fixed[h]);
    }
}

/* ---- the claim ---- */

typedef enum { V_LEASE, V_PARK, V_DROP } visit_result;

typedef struct claim_ctx {
    mq_lease *lease;
    const char *worker;
    int max_events;
    double visibility;
    mlease *out;
} claim_ctx;

static void check_lease_events(model *m, const claim_ctx *c, mev **members, int n) {
    mq_lease *l = c->lease;
    char want[600] = "", got[600] = "";
    for (int i = 0; i < n; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), " %lld", (long long)members[i]->seq);
    size_t count = mq_lease_count(l);
    for (size_t i = 0; i < count && i < 8; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %lld", (long long)mq_lease_seq_at(l, i));
    int same = (int)count == n;
    for (int i = 0; same && i < n; i++) same = mq_lease_seq_at(l, (size_t)i) == members[i]->seq;
    if (!same) {
        /* Say where the model's heads are, if the library moved one to the dead letters. */
        char where[300] = "";
        for (int i = 0; i < n; i++) {
            int attempts = -1;
            if (srv_dead(m, members[i]->seq, &attempts))
                snprintf(where + strlen(where), sizeof where - strlen(where),
                         "; %lld is a dead letter (attempts %d; the model counts %d deliveries, max attempts %d)",
                         (long long)members[i]->seq, attempts, members[i]->lo, m->max_attempts);
        }
        mfail(m, "the lease holds seqs [%s ], the model's heads are [%s ]%s", got, want, where);
    }
    for (int i = 0; i < n; i++) {
        size_t len = 99;
        const void *bytes = mq_lease_event_at(l, (size_t)i, &len);
        if (bytes == NULL || len != members[i]->len || (len > 0 && memcmp(bytes, members[i]->bytes, len) != 0))
            mfail(m, "event %lld: the lease's bytes differ from the published ones (len %zu, want %zu)",
                  (long long)members[i]->seq, len, members[i]->len);
    }
    size_t len0 = 99;
    if (mq_lease_seq(l) != members[0]->seq || mq_lease_event(l, &len0) == NULL || len0 != members[0]->len)
        mfail(m, "mq_lease_seq/mq_lease_event disagree with mq_lease_seq_at/event_at(0)");
}

/* A claim visiting group g (its lease already taken on the server): dead-letters heads
 * past max attempts, then parks the group (scheduled head), drops its lock (no event
 * left) or hands out the lease. With c NULL the group is not the one the claim
 * returned: the caller fails if the model says V_LEASE. Every visit passed here did
 * happen, so the dead letters on the server settle whether an ambiguous head died. */
static visit_result visit(model *m, int g, const claim_ctx *c) {
    double now = now_of(m);
    for (;;) {
        mev *h = head_of(m, g);
        if (h == NULL) {
            m->lock[g].exists = 0;
            cover.drops++;
            say(m, " [%s: no event, lock dropped]", GROUP[g]);
            return V_DROP;
        }
        if (m->max_attempts > 0 && h->hi + 1 > m->max_attempts) {
            int surely = h->lo + 1 > m->max_attempts;
            int attempts = -1;
            int in_dead = srv_dead(m, h->seq, &attempts);
            if (surely && !in_dead)
                mfail(m,
                      "group %s: head %lld was delivered %d times and max attempts is %d: the claim that visited "
                      "the group must move it to the dead letters, and it is not there",
                      GROUP[g], (long long)h->seq, h->lo, m->max_attempts);
            if (in_dead) {
                if (attempts < h->lo || attempts > h->hi)
                    mfail(m, "dead letter %lld says attempts %d, the model counts %d..%d deliveries of that event",
                          (long long)h->seq, attempts, h->lo, h->hi);
                if (attempts < m->max_attempts)
                    mfail(m, "dead letter %lld was delivered %d times, fewer than max attempts %d", (long long)h->seq,
                          attempts, m->max_attempts);
                h->state = EV_DEAD;
                h->dead_at = now;
                h->lo = h->hi = attempts;
                cover.dead++;
                say(m, " [%s: %lld dead after %d]", GROUP[g], (long long)h->seq, attempts);
                continue;
            }
            h->hi = m->max_attempts - 1; /* not dead: fewer deliveries than max */
        }
        if (h->not_before > now) {
            m->lock[g].avail = h->not_before;
            m->lock[g].token[0] = '\0';
            cover.parks++;
            say(m, " [%s: parked until +%.2f]", GROUP[g], h->not_before - 1e9);
            return V_PARK;
        }
        if (c == NULL) return V_LEASE;

        /* The lease: the head and the consecutive events behind it, up to max_events,
         * stopping before one scheduled for later. */
        mev *members[4];
        int n = 0;
        for (mev *e = h; e != NULL && n < c->max_events; e = next_in_group(m, e)) {
            if (n > 0 && e->not_before > now) break;
            members[n++] = e;
        }
        check_lease_events(m, c, members, n);
        int attempts = mq_lease_attempts(c->lease);
        if (attempts < h->lo + 1 || attempts > h->hi + 1) {
            char range[32];
            snprintf(range, sizeof range, h->hi > h->lo ? "%d..%d" : "%d", h->lo + 1, h->hi + 1);
            mfail(m, "lease of %s: attempts %d, the model expects %s (deliveries of seq %lld, this one included)",
                  GROUP[g], attempts, range, (long long)h->seq);
        }
        if (h->hi > h->lo) cover.ambiguous_attempts++;
        h->lo = h->hi = attempts;
        for (int i = 1; i < n; i++) members[i]->hi++;
        if (n > 1) cover.batch_leases++;
        double deadline = mq_lease_deadline(c->lease);
        if (fabs(deadline - (now + c->visibility)) > 1e-6)
            mfail(m, "mq_lease_deadline is +%.3f, the claim's time plus its visibility is +%.3f", deadline - 1e9,
                  now + c->visibility - 1e9);
        mlock *lk = &m->lock[g];
        snprintf(lk->token, sizeof lk->token, "%s", mq_lease_token(c->lease));
        size_t wlen = strlen(c->worker);
        if (strncmp(lk->token, c->worker, wlen) != 0 || lk->token[wlen] != ':' || lk->token[wlen + 1] == '\0')
            mfail(m, "the lease's token '%s' is not '%s:' and its random part", lk->token, c->worker);
        mlease *out = c->out;
        out->prior_avail = lk->avail;
        out->attempts = attempts;
        lk->avail = now + c->visibility;
        out->group = g;
        snprintf(out->token, sizeof out->token, "%s", lk->token);
        out->n = n;
        for (int i = 0; i < n; i++) out->seqs[i] = members[i]->seq;
        out->more_after = next_in_group(m, members[n - 1]) != NULL;
        return V_LEASE;
    }
}

/* Whether a claim that returned another group visited g (a group of the same
 * available_at as the returned one) on the way: only a visit that parks, drops or
 * dead-letters leaves a trace, and only such a visit can have happened. */
static int visited(model *m, int g) {
    mev *h = head_of(m, g);
    mlock srv;
    if (h == NULL) {
        srv_lock(m, g, &srv);
        return !srv.exists;
    }
    if (m->max_attempts > 0 && h->hi + 1 > m->max_attempts) return srv_dead(m, h->seq, NULL);
    if (h->not_before > now_of(m)) {
        srv_lock(m, g, &srv);
        return srv.exists && srv.avail == h->not_before && srv.token[0] == '\0';
    }
    return 0;
}

static int due(model *m, int g, int floor) {
    const mlock *l = &m->lock[g];
    return l->exists && l->avail <= now_of(m) && l->priority >= floor;
}

/* Follows a claim's result through the model: the claim visits the due groups in
 * available_at order (any order within a tie) until one gives a lease. */
static void model_claim(model *m, mq_status st, const mq_error *err, const claim_ctx *c, int floor) {
    int G = -1;
    if (st == MQ_OK) {
        G = group_index(mq_lease_group(c->lease));
        if (G < 0) mfail(m, "the claim returned an unknown group '%s'", mq_lease_group(c->lease));
        if (!due(m, G, floor) && !(m->auto_repair && is_orphan(m, G)))
            mfail(m, "the claim returned group %s, which the model does not hold due at floor %d", GROUP[G], floor);
    } else if (st != MQ_EMPTY) {
        mfail(m, "the claim returned %s: %s", mq_status_name(st), err->message);
    }
    int done = 0, repaired = 0;
    for (;;) {
        double best = INFINITY;
        for (int g = 0; g < NGROUPS; g++)
            if (!(done & (1 << g)) && due(m, g, floor) && m->lock[g].avail < best) best = m->lock[g].avail;
        if (best == INFINITY) {
            /* claim.lease finds nothing: the automatic repair may make locks, and the
             * claim then looks once more. */
            if (!repaired && auto_repair_model(m)) {
                repaired = 1;
                continue;
            }
            if (G >= 0) mfail(m, "the claim returned group %s, but the model has no due group left", GROUP[G]);
            return; /* MQ_EMPTY, as the model says */
        }
        int tie = 0;
        for (int g = 0; g < NGROUPS; g++)
            if (!(done & (1 << g)) && due(m, g, floor) && m->lock[g].avail == best) tie |= 1 << g;
        if (G >= 0 && (tie & (1 << G))) {
            for (int g = 0; g < NGROUPS; g++) {
                if (g == G || !(tie & (1 << g))) continue;
                cover.tie_peeks++;
                if (!visited(m, g)) continue;
                if (visit(m, g, NULL) == V_LEASE)
                    mfail(m, "group %s was visited by the claim and has a deliverable head", GROUP[g]);
            }
            if (visit(m, G, c) != V_LEASE)
                mfail(m, "the claim returned group %s, whose head the model would not deliver", GROUP[G]);
            return;
        }
        for (int g = 0; g < NGROUPS; g++) {
            if (!(tie & (1 << g))) continue;
            if (visit(m, g, NULL) == V_LEASE) {
                mev *h = head_of(m, g);
                int attempts = -1;
                char where[160] = "";
                if (srv_dead(m, h->seq, &attempts))
                    snprintf(where, sizeof where,
                             " (the server moved it to the dead letters with attempts %d; the model counts %d "
                             "deliveries, max attempts %d)",
                             attempts, h->lo, m->max_attempts);
                mfail(m,
                      "the claim returned %s, but group %s (available_at %s%.3f, priority %d) was due%s and its "
                      "head %lld is deliverable%s",
                      G >= 0 ? GROUP[G] : "MQ_EMPTY", GROUP[g], best == 0 ? "0 = " : "+", best == 0 ? 0 : best - 1e9,
                      m->lock[g].priority, G >= 0 ? " first" : "", (long long)h->seq, where);
            }
        }
        done |= tie;
    }
}

/* ---- leases kept by the test (current and stale) ---- */

static mlease *pool_add(model *m) {
    if (m->npool == POOL) { /* the oldest is forgotten, as by a worker that died */
        mq_lease_destroy(m->pool[0].lease);
        memmove(&m->pool[0], &m->pool[1], sizeof m->pool[0] * (POOL - 1));
        m->npool--;
    }
    mlease *l = &m->pool[m->npool++];
    memset(l, 0, sizeof *l);
    l->id = ++m->lease_ids;
    return l;
}

static void pool_clear(model *m) {
    for (int i = 0; i < m->npool; i++) mq_lease_destroy(m->pool[i].lease);
    m->npool = 0;
}

static int lease_is_current(model *m, const mlease *l) {
    const mlock *lk = &m->lock[l->group];
    return lk->exists && lk->token[0] != '\0' && strcmp(lk->token, l->token) == 0;
}

static mlease *pick_lease(model *m, const char *op) {
    if (m->npool == 0) {
        begin_op(m, "%s: no lease held", op);
        end_op(m);
        return NULL;
    }
    /* The newest more often: current leases then get acked more than stale ones. */
    int i = below(m, 3) == 0 ? below(m, m->npool) : m->npool - 1 - below(m, m->npool < 3 ? m->npool : 3);
    return &m->pool[i];
}

static void describe_lease(model *m, const mlease *l) {
    say(m, "#%d (%s [", l->id, GROUP[l->group]);
    for (int i = 0; i < l->n; i++) say(m, i ? " %lld" : "%lld", (long long)l->seqs[i]);
    say(m, "]%s, %s)", l->more_after ? " more" : "", lease_is_current(m, l) ? "current" : "stale");
}

/* ---- the operations ---- */

static void lock_created(model *m, int g, int priority, double avail) {
    mlock *l = &m->lock[g];
    l->exists = 1;
    l->avail = avail;
    l->token[0] = '\0';
    l->priority = priority;
}

static void op_publish(model *m) {
    int g = below(m, m->ngroups), priority = below(m, 5);
    unsigned char bytes[16];
    size_t len = make_event(m, bytes);
    char d[64];
    begin_op(m, "publish %s prio %d %s", GROUP[g], priority, describe_bytes(bytes, len, d, sizeof d));
    mq_error err;
    int64_t seq = 0;
    mq_status st = mq_publish(m->q[m->h], GROUP[g], len == 0 && below(m, 2) ? NULL : (const void *)bytes, len, priority,
                              &seq, &err);
    say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
    expect_status(m, "mq_publish", st, MQ_OK, &err);
    add_event(m, seq, g, priority, bytes, len, 0);
    if (!m->lock[g].exists) lock_created(m, g, priority, now_of(m)); /* in line from its publish */
    end_op(m);
}

static void op_publish_at(model *m) {
    int g = below(m, m->ngroups), priority = below(m, 5);
    unsigned char bytes[16];
    size_t len = make_event(m, bytes);
    static const double offsets[] = {-30, -4, -0.5, 0, 0.5, 1, 2.5, 4, 7, 12, 20};
    double nb = now_of(m) + offsets[below(m, (int)(sizeof offsets / sizeof offsets[0]))];
    char d[64];
    begin_op(m, "publish_at %s prio %d %s not_before +%.2f (%s)", GROUP[g], priority,
             describe_bytes(bytes, len, d, sizeof d), nb - 1e9, nb > now_of(m) ? "future" : "past");
    mq_error err;
    int64_t seq = 0;
    mq_status st = mq_publish_at(m->q[m->h], GROUP[g], bytes, len, priority, nb, &seq, &err);
    say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
    expect_status(m, "mq_publish_at", st, MQ_OK, &err);
    add_event(m, seq, g, priority, bytes, len, nb);
    if (!m->lock[g].exists) {
        if (nb > now_of(m))
            lock_created(m, g, priority, nb); /* parked until then */
        else
            lock_created(m, g, priority, now_of(m)); /* a past time: as a publish now */
    }
    end_op(m);
}

static void op_batch(model *m) {
    int n = 1 + below(m, 5);
    int groups[5], prios[5];
    unsigned char bytes[5][16];
    size_t lens[5];
    mq_batch *batch = NULL;
    mq_error err;
    begin_op(m, "publish_batch [");
    if (mq_batch_new(&batch, &err) != MQ_OK) mfail(m, "mq_batch_new: %s", err.message);
    for (int i = 0; i < n; i++) {
        groups[i] = below(m, m->ngroups);
        prios[i] = below(m, 5);
        lens[i] = make_event(m, bytes[i]);
        char d[64];
        say(m, "%s%s/p%d %s", i ? ", " : "", GROUP[groups[i]], prios[i],
            describe_bytes(bytes[i], lens[i], d, sizeof d));
        if (mq_batch_add(batch, GROUP[groups[i]], bytes[i], lens[i], prios[i], &err) != MQ_OK) {
            mq_batch_destroy(batch);
            mfail(m, "mq_batch_add: %s", err.message);
        }
    }
    int64_t first = 0;
    mq_status st = mq_publish_batch(m->q[m->h], batch, &first, &err);
    mq_batch_destroy(batch);
    say(m, "] -> %s first seq %lld", mq_status_name(st), (long long)first);
    expect_status(m, "mq_publish_batch", st, MQ_OK, &err);
    for (int i = 0; i < n; i++) {
        add_event(m, first + i, groups[i], prios[i], bytes[i], lens[i], 0);
        if (!m->lock[groups[i]].exists) lock_created(m, groups[i], prios[i], now_of(m));
    }
    end_op(m);
}

static void op_claim(model *m) {
    static const double vis[] = {2, 4, 5};
    int floor = below(m, 3) == 0 ? below(m, 5) : 0;
    int max_events = 1 + below(m, 4);
    double visibility = vis[below(m, 3)];
    const char *worker = WORKER[below(m, 3)];
    /* mq_claim is mq_claim_batch with 1 event, and a waiting claim with timeout 0 is
     * the plain claim: every entry point, one model. */
    static const char *const call[] = {"claim_batch", "claim", "claim_batch_wait(0)", "claim_wait_cancel(0)"};
    int variant = below(m, 6);
    if (variant > 3 || (variant == 1 && max_events != 1)) variant = 0;
    begin_op(m, "%s %s vis %g floor %d max %d ->", call[variant], worker, visibility, floor, max_events);
    m->max_attempts = m->hmax[m->h];
    mq_error err;
    mq_lease *lease = NULL;
    mq_status st;
    switch (variant) {
        case 1:
            st = mq_claim(m->q[m->h], worker, visibility, floor, &lease, &err);
            break;
        case 2:
            st = mq_claim_batch_wait(m->q[m->h], worker, visibility, floor, (size_t)max_events, 0, &lease, &err);
            break;
        case 3:
            st = mq_claim_wait_cancel(m->q[m->h], worker, visibility, floor, (size_t)max_events, 0, NULL, &lease, &err);
            break;
        default:
            st = mq_claim_batch(m->q[m->h], worker, visibility, floor, (size_t)max_events, &lease, &err);
    }
    if (st == MQ_OK) {
        say(m, " %s [", mq_lease_group(lease));
        for (size_t i = 0; i < mq_lease_count(lease); i++)
            say(m, i ? " %lld" : "%lld", (long long)mq_lease_seq_at(lease, i));
        say(m, "] attempts %d", mq_lease_attempts(lease));
    } else {
        say(m, " %s", mq_status_name(st));
        if (lease != NULL) mfail(m, "the claim returned %s with a lease", mq_status_name(st));
    }
    mlease *out = NULL;
    if (st == MQ_OK) {
        out = pool_add(m);
        out->lease = lease;
        say(m, " = lease #%d", out->id);
    }
    claim_ctx c = {lease, worker, max_events, visibility, out};
    model_claim(m, st, &err, &c, floor);
    if (st == MQ_OK)
        cover.claims_ok++;
    else
        cover.claims_empty++;
    check_repair_counts(m);
    end_op(m);
}

static void op_ack(model *m) {
    mlease *l = pick_lease(m, "ack");
    if (l == NULL) return;
    begin_op(m, "ack ");
    describe_lease(m, l);
    int current = lease_is_current(m, l);
    mq_error err;
    mq_status st = mq_ack(m->q[m->h], l->lease, &err);
    say(m, " -> %s", mq_status_name(st));
    /* The events go, fenced or not (at-least-once). */
    for (int i = 0; i < l->n; i++) {
        mev *e = find_ev(m, l->seqs[i]);
        if (e->state == EV_LIVE) e->state = EV_ACKED;
    }
    if (current && l->lease != NULL && mq_lease_deadline(l->lease) < now_of(m)) cover.stale_ok++;
    if (!current) cover.lost++;
    if (current) {
        expect_status(m, "mq_ack", st, MQ_OK, &err);
        mlock *lk = &m->lock[l->group];
        if (l->more_after) {
            lk->avail = now_of(m); /* the back of the round robin */
            lk->token[0] = '\0';
        } else {
            /* The group drains: the lock goes; events published since the claim make
             * it again, at the front, with the dropped lock's priority. */
            lk->exists = 0;
            if (live_count(m, l->group) > 0) {
                cover.relocks++;
                /* in line from the raced event's publish */
                lock_created(m, l->group, lk->priority, head_of(m, l->group)->published_at);
                say(m, " (re-created: events published after the claim)");
            }
        }
    } else {
        expect_status(m, "mq_ack", st, MQ_LEASE_LOST, &err);
    }
    end_op(m);
}

static void op_nack(model *m) {
    mlease *l = pick_lease(m, "nack");
    if (l == NULL) return;
    static const double delays[] = {0, 0, 0, 0.5, 1, 3, 8};
    double delay = delays[below(m, (int)(sizeof delays / sizeof delays[0]))];
    begin_op(m, "nack(%g) ", delay);
    describe_lease(m, l);
    mq_error err;
    mq_status st = mq_nack(m->q[m->h], l->lease, delay, &err);
    say(m, " -> %s", mq_status_name(st));
    if (lease_is_current(m, l)) {
        expect_status(m, "mq_nack", st, MQ_OK, &err);
        mlock *lk = &m->lock[l->group];
        if (delay > 0) {
            lk->avail = now_of(m) + delay; /* held by this lease's token until then */
            if (fabs(mq_lease_deadline(l->lease) - lk->avail) > 1e-6)
                mfail(m, "mq_lease_deadline after nack(%g) is +%.3f, want +%.3f", delay,
                      mq_lease_deadline(l->lease) - 1e9, lk->avail - 1e9);
        } else {
            lk->avail = 0; /* first in line */
            lk->token[0] = '\0';
        }
    } else {
        expect_status(m, "mq_nack", st, MQ_LEASE_LOST, &err);
    }
    end_op(m);
}

static void op_extend(model *m) {
    mlease *l = pick_lease(m, "extend");
    if (l == NULL) return;
    static const double vis[] = {1, 3, 6};
    double visibility = vis[below(m, 3)];
    begin_op(m, "extend(%g) ", visibility);
    describe_lease(m, l);
    mq_error err;
    mq_status st = mq_extend(m->q[m->h], l->lease, visibility, &err);
    say(m, " -> %s", mq_status_name(st));
    if (lease_is_current(m, l)) {
        expect_status(m, "mq_extend", st, MQ_OK, &err);
        m->lock[l->group].avail = now_of(m) + visibility;
        if (fabs(mq_lease_deadline(l->lease) - (now_of(m) + visibility)) > 1e-6)
            mfail(m, "mq_lease_deadline after extend is +%.3f, want +%.3f", mq_lease_deadline(l->lease) - 1e9,
                  now_of(m) + visibility - 1e9);
    } else {
        expect_status(m, "mq_extend", st, MQ_LEASE_LOST, &err);
    }
    end_op(m);
}

/* mq_unclaim: the lease back as its claim found it, not a delivery (the head's count
 * goes back by one; the events behind it keep their upper bound). */
static void op_unclaim(model *m) {
    mlease *l = pick_lease(m, "unclaim");
    if (l == NULL) return;
    begin_op(m, "unclaim ");
    describe_lease(m, l);
    mq_error err;
    mq_status st = mq_unclaim(m->q[m->h], l->lease, &err);
    say(m, " -> %s", mq_status_name(st));
    if (lease_is_current(m, l)) {
        expect_status(m, "mq_unclaim", st, MQ_OK, &err);
        mlock *lk = &m->lock[l->group];
        lk->avail = l->prior_avail;
        lk->token[0] = '\0';
        mev *h = head_of(m, l->group);
        if (h != NULL && h->seq == l->seqs[0]) h->lo = h->hi = l->attempts - 1;
        cover.unclaimed++;
    } else {
        expect_status(m, "mq_unclaim", st, MQ_LEASE_LOST, &err);
    }
    end_op(m);
}

static void op_clock(model *m, int big) {
    static const double small[] = {0.25, 0.5, 1, 1.5, 2, 3};
    double by = big ? 5.5 + below(m, 8) : small[below(m, 6)];
    tq_advance(m->t, by);
    begin_op(m, "clock +%g -> t=+%.2f", by, now_of(m) - 1e9);
    end_op(m);
}

static void op_max_attempts(model *m) {
    int n = below(m, 4);
    begin_op(m, "set_max_attempts %d", n);
    say(m, " (was %d)", m->hmax[m->h]);
    mq_error err;
    mq_status st = mq_queue_set_max_attempts(m->q[m->h], n, &err);
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, "mq_queue_set_max_attempts", st, MQ_OK, &err);
    m->hmax[m->h] = n;
    end_op(m);
}

static void op_dead_count(model *m) {
    begin_op(m, "dead_count");
    mq_error err;
    int64_t n = -1;
    mq_status st = mq_dead_count(m->q[m->h], &n, &err);
    say(m, " -> %s %lld", mq_status_name(st), (long long)n);
    expect_status(m, "mq_dead_count", st, MQ_OK, &err);
    if (n != dead_count_model(m)) mfail(m, "mq_dead_count says %lld, the model %d", (long long)n, dead_count_model(m));
    end_op(m);
}

static void op_dead_requeue(model *m) {
    mev *dead[MAX_EV];
    int n = 0;
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_DEAD) dead[n++] = &m->ev[i];
    mq_error err;
    int64_t fresh = -1;
    if (n == 0 || below(m, 8) == 0) {
        /* A seq that is no dead letter: a live event's, or one never used. */
        mev *live = head_of(m, below(m, m->ngroups));
        int64_t seq = live != NULL ? live->seq : m->next_seq + 1000;
        begin_op(m, "dead_requeue %lld (not a dead letter)", (long long)seq);
        mq_status st = mq_dead_requeue(m->q[m->h], seq, &fresh, &err);
        say(m, " -> %s", mq_status_name(st));
        expect_status(m, "mq_dead_requeue (a seq that is no dead letter)", st, MQ_ERR_ARG, &err);
        if (fresh != 0) mfail(m, "mq_dead_requeue failed and set *new_seq to %lld, not 0", (long long)fresh);
        end_op(m);
        return;
    }
    mev *e = dead[below(m, n)];
    begin_op(m, "dead_requeue %lld (%s)", (long long)e->seq, GROUP[e->group]);
    mq_status st = mq_dead_requeue(m->q[m->h], e->seq, &fresh, &err);
    say(m, " -> %s new seq %lld", mq_status_name(st), (long long)fresh);
    expect_status(m, "mq_dead_requeue", st, MQ_OK, &err);
    e->state = EV_GONE;
    cover.requeued++;
    int g = e->group, priority = e->priority;
    unsigned char bytes[16];
    size_t len = e->len;
    memcpy(bytes, e->bytes, len);
    add_event(m, fresh, g, priority, bytes, len, 0); /* e may move: copied first */
    if (!m->lock[g].exists) lock_created(m, g, priority, now_of(m));
    end_op(m);
}

static void op_dead_purge(model *m) {
    begin_op(m, "dead_purge");
    mq_error err;
    int64_t purged = -1;
    mq_status st = mq_dead_purge(m->q[m->h], &purged, &err);
    say(m, " -> %s %lld", mq_status_name(st), (long long)purged);
    expect_status(m, "mq_dead_purge", st, MQ_OK, &err);
    if (purged != dead_count_model(m))
        mfail(m, "mq_dead_purge removed %lld, the model holds %d dead letters", (long long)purged, dead_count_model(m));
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_DEAD) m->ev[i].state = EV_GONE;
    end_op(m);
}

static void op_purge_group(model *m) {
    int g = below(m, m->ngroups);
    begin_op(m, "purge_group %s (%d events)", GROUP[g], live_count(m, g));
    mq_error err;
    mq_status st = mq_purge_group(m->q[m->h], GROUP[g], &err);
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, "mq_purge_group", st, MQ_OK, &err);
    for (int i = 0; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == g) m->ev[i].state = EV_GONE;
    m->lock[g].exists = 0;
    end_op(m);
}

/* ---- looking without claiming: mq_peek_json, mq_dead_list_json ---- */

static void base64_of(const unsigned char *in, size_t len, char *out) {
    static const char *const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v =
            (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < len ? in[i + 2] : 0);
        out[o++] = abc[(v >> 18) & 63];
        out[o++] = abc[(v >> 12) & 63];
        out[o++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? abc[v & 63] : '=';
    }
    out[o] = '\0';
}

/* One element of mq_peek_json / mq_dead_list_json against the model's event; the
 * first difference goes to msg. */
static void compare_listed(const mev *e, json_t *el, int dead, char *msg, size_t size) {
    json_t *v;
    if (!json_is_object(el)) {
        snprintf(msg, size, "an element is not an object");
        return;
    }
    v = json_object_get(el, "seq");
    if (!json_is_integer(v) || json_integer_value(v) != e->seq) {
        snprintf(msg, size, "seq %lld expected", (long long)e->seq);
        return;
    }
    v = json_object_get(el, "group");
    if (!json_is_string(v) || strcmp(json_string_value(v), GROUP[e->group]) != 0) {
        snprintf(msg, size, "seq %lld: group %s expected", (long long)e->seq, GROUP[e->group]);
        return;
    }
    v = json_object_get(el, "priority");
    if (!json_is_integer(v) || json_integer_value(v) != e->priority) {
        snprintf(msg, size, "seq %lld: priority %d expected", (long long)e->seq, e->priority);
        return;
    }
    v = json_object_get(el, "published_at");
    if (!json_is_number(v) || fabs(json_number_value(v) - e->published_at) > 1e-6) {
        snprintf(msg, size, "seq %lld: published_at +%.3f expected", (long long)e->seq, e->published_at - 1e9);
        return;
    }
    v = json_object_get(el, "event");
    int text = e->len == 0 || e->bytes[0] != 0; /* the test's binary events start with a NUL */
    if (text) {
        if (!json_is_string(v) || json_string_length(v) != e->len ||
            memcmp(json_string_value(v), e->bytes, e->len) != 0) {
            snprintf(msg, size, "seq %lld: the event should be the text '%.*s'", (long long)e->seq, (int)e->len,
                     (const char *)e->bytes);
            return;
        }
    } else {
        char b64[32];
        base64_of(e->bytes, e->len, b64);
        json_t *b = json_object_get(v, "base64");
        if (!json_is_string(b) || strcmp(json_string_value(b), b64) != 0) {
            snprintf(msg, size, "seq %lld: the event should be {\"base64\": \"%s\"}", (long long)e->seq, b64);
            return;
        }
    }
    if (dead) {
        v = json_object_get(el, "attempts");
        if (!json_is_integer(v) || json_integer_value(v) != e->lo) {
            snprintf(msg, size, "dead letter %lld: attempts %d expected", (long long)e->seq, e->lo);
            return;
        }
        v = json_object_get(el, "dead_at");
        if (!json_is_number(v) || fabs(json_number_value(v) - e->dead_at) > 1e-6) {
            snprintf(msg, size, "dead letter %lld: dead_at +%.3f expected", (long long)e->seq, e->dead_at - 1e9);
            return;
        }
    } else {
        v = json_object_get(el, "not_before");
        if (e->not_before > 0 ? !json_is_number(v) || fabs(json_number_value(v) - e->not_before) > 1e-6 : v != NULL) {
            snprintf(msg, size, "seq %lld: not_before should be %s", (long long)e->seq,
                     e->not_before > 0 ? "the scheduled time" : "absent");
            return;
        }
    }
}

/* mq_peek_json of one group or of the whole queue, or mq_dead_list_json: the model's
 * events (live, or dead), oldest seq first, up to max_events. */
static void op_peek(model *m) {
    int dead = below(m, 3) == 0;
    int g = dead || below(m, 3) == 0 ? -1 : below(m, m->ngroups);
    size_t max_events = (size_t)(1 + below(m, 6));
    mq_error err;
    char *text = NULL;
    mq_status st;
    if (dead) {
        begin_op(m, "dead_list_json max %zu", max_events);
        st = mq_dead_list_json(m->q[m->h], max_events, &text, &err);
    } else {
        begin_op(m, "peek_json %s max %zu", g >= 0 ? GROUP[g] : "(all)", max_events);
        st = mq_peek_json(m->q[m->h], g >= 0 ? GROUP[g] : NULL, max_events, &text, &err);
    }
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, dead ? "mq_dead_list_json" : "mq_peek_json", st, MQ_OK, &err);
    const mev *want[MAX_EV];
    size_t n = 0;
    for (int i = 0; i < m->nev && n < max_events; i++) {
        const mev *e = &m->ev[i];
        if (dead ? e->state == EV_DEAD : e->state == EV_LIVE && (g < 0 || e->group == g)) want[n++] = e;
    }
    char msg[300] = "";
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL || !json_is_array(root)) {
        snprintf(msg, sizeof msg, "not a JSON array");
    } else if (json_array_size(root) != n) {
        snprintf(msg, sizeof msg, "%zu elements, the model has %zu", json_array_size(root), n);
    } else {
        for (size_t i = 0; i < n && msg[0] == '\0'; i++)
            compare_listed(want[i], json_array_get(root, i), dead, msg, sizeof msg);
    }
    json_decref(root);
    if (msg[0] != '\0') {
        char copy[900];
        snprintf(copy, sizeof copy, "%s", text);
        mq_free(text);
        mfail(m, "%s: %s: %s", dead ? "mq_dead_list_json" : "mq_peek_json", msg, copy);
    }
    mq_free(text);
    cover.listed += (long)n;
    say(m, " %zu events", n);
    end_op(m);
}

/* mq_repair, and what it is for: a publisher that died between publish.insert and
 * publish.lock (docs/design.md, "A process that dies between two commands"). The
 * test publishes to a group without a lock and deletes the lock the publish made, so
 * the group has an event and no lock (an orphan). Then the group's next publish makes
 * the lock, or mq_repair does, or the orphan stays for later steps: a later publish,
 * repair, or (when this sequence runs it) the automatic repair of an empty claim. */
static void op_repair(model *m) {
    int orphan = -1;
    if (below(m, 3)) {
        int start = below(m, m->ngroups);
        for (int i = 0; i < m->ngroups && orphan < 0; i++) {
            int g = (start + i) % m->ngroups;
            if (!m->lock[g].exists && live_count(m, g) == 0) orphan = g;
        }
    }
    mq_error err;
    if (orphan >= 0) {
        int g = orphan, priority = below(m, 5);
        unsigned char bytes[16];
        size_t len = make_event(m, bytes);
        char d[64];
        begin_op(m,
                 "publish %s prio %d %s, its lock then deleted on the server (a publisher that died before "
                 "publish.lock)",
                 GROUP[g], priority, describe_bytes(bytes, len, d, sizeof d));
        int64_t seq = 0;
        mq_status st = mq_publish(m->q[m->h], GROUP[g], bytes, len, priority, &seq, &err);
        say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
        expect_status(m, "mq_publish", st, MQ_OK, &err);
        add_event(m, seq, g, priority, bytes, len, 0);
        mongoc_collection_t *coll = tq_collection(m->t, "locks");
        bson_t *filter = BCON_NEW("_id", BCON_UTF8(GROUP[g]));
        bson_error_t error;
        int ok = mongoc_collection_delete_one(coll, filter, NULL, NULL, &error);
        bson_destroy(filter);
        mongoc_collection_destroy(coll);
        if (!ok) mfail(m, "deleting a lock: %s", error.message);
        cover.orphans++;
        end_op(m);
        int next = below(m, 3);
        if (next == 0) {
            /* The group's next publish makes the lock (its own priority). */
            int p2 = below(m, 5);
            len = make_event(m, bytes);
            begin_op(m, "publish %s prio %d %s (the orphan's next publish)", GROUP[g], p2,
                     describe_bytes(bytes, len, d, sizeof d));
            st = mq_publish(m->q[m->h], GROUP[g], bytes, len, p2, &seq, &err);
            say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
            expect_status(m, "mq_publish", st, MQ_OK, &err);
            add_event(m, seq, g, p2, bytes, len, 0);
            lock_created(m, g, p2, now_of(m));
            end_op(m);
            return;
        }
        if (next == 1) {
            /* The orphan stays. With the automatic repair on, idle workers' claims are
             * what heals it: claim twice (each handle's first empty claim only starts
             * its period). */
            if (m->auto_repair) {
                op_claim(m);
                op_claim(m);
            }
            return;
        }
    }
    begin_op(m, "repair (%d orphans)", orphan_count(m));
    int64_t fixed = -1;
    mq_status st = mq_repair(m->q[m->h], &fixed, &err);
    say(m, " -> %s fixed %lld", mq_status_name(st), (long long)fixed);
    expect_status(m, "mq_repair", st, MQ_OK, &err);
    int want = repair_orphans(m, 1);
    cover.repaired += want;
    if (fixed != want) mfail(m, "mq_repair fixed %lld groups, the model %d", (long long)fixed, want);
    end_op(m);
}

/* ---- the invariants, after every step ---- */

/* The _id and group_id of every document of {prefix}_<suffix>, in _id order (read
 * whole before anything is compared, so that a failure leaves no cursor open). */
typedef struct srv_doc {
    int64_t seq;
    char group[16];
} srv_doc;

static int read_ids(model *m, const char *suffix, srv_doc *out, int cap) {
    mongoc_collection_t *coll;
    bson_t *filter = bson_new();
    mongoc_cursor_t *cursor = raw_find(m, suffix, filter, 1, &coll);
    const bson_t *doc;
    int n = 0, over = 0;
    while (mongoc_cursor_next(cursor, &doc)) {
        if (n == cap) {
            over = 1;
            continue;
        }
        bson_iter_t it;
        out[n].seq = bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
        snprintf(
            out[n].group, sizeof out[n].group, "%s",
            bson_iter_init_find(&it, doc, "group_id") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "?");
        n++;
    }
    raw_done(m, cursor, coll, filter, suffix);
    if (over) mfail(m, "%s holds more than %d documents", suffix, cap);
    return n;
}

static void missing_event(model *m, const mev *e) {
    int dead = srv_dead(m, e->seq, NULL);
    mfail(m, "event %lld (%s) is in the model's queue but not in the messages collection%s", (long long)e->seq,
          GROUP[e->group], dead ? " (it is a dead letter)" : ": it is in neither the queue nor the dead letters");
}

/* The messages on the server are exactly the model's live events: every published
 * event not acked, purged or dead is there, and nothing else. */
static void check_messages(model *m) {
    int n = read_ids(m, "messages", m->scratch, MAX_EV);
    int i = 0; /* the model's next event, in seq order */
    for (int k = 0; k < n; k++) {
        int64_t seq = m->scratch[k].seq;
        for (; i < m->nev && m->ev[i].seq < seq; i++)
            if (m->ev[i].state == EV_LIVE) missing_event(m, &m->ev[i]);
        mev *e = find_ev(m, seq);
        if (e == NULL || e->state != EV_LIVE)
            mfail(m, "event %lld (%s) is in the messages collection, the model has it %s", (long long)seq,
                  m->scratch[k].group, e ? EV_STATE[e->state] : "never published");
        if (strcmp(m->scratch[k].group, GROUP[e->group]) != 0)
            mfail(m, "event %lld is in group %s on the server, %s in the model", (long long)seq, m->scratch[k].group,
                  GROUP[e->group]);
        i = (int)(e - m->ev) + 1;
    }
    for (; i < m->nev; i++)
        if (m->ev[i].state == EV_LIVE) missing_event(m, &m->ev[i]);
}

/* The dead letters on the server are exactly the model's. */
static void check_dead(model *m) {
    int n = read_ids(m, "dead", m->scratch, MAX_EV);
    for (int k = 0; k < n; k++) {
        mev *e = find_ev(m, m->scratch[k].seq);
        if (e == NULL || e->state != EV_DEAD)
            mfail(m, "event %lld (%s) is a dead letter on the server, the model has it %s",
                  (long long)m->scratch[k].seq, m->scratch[k].group, e ? EV_STATE[e->state] : "never published");
    }
    if (n != dead_count_model(m)) {
        for (int i = 0; i < m->nev; i++)
            if (m->ev[i].state == EV_DEAD && !srv_dead(m, m->ev[i].seq, NULL))
                mfail(m, "event %lld (%s) is a dead letter in the model but not on the server", (long long)m->ev[i].seq,
                      GROUP[m->ev[i].group]);
    }
}

/* The locks on the server are the model's: which groups have one, and its
 * available_at, token and priority (docs/design.md, "Schema"). */
static void check_locks(model *m) {
    mongoc_collection_t *coll;
    bson_t *filter = bson_new();
    mongoc_cursor_t *cursor = raw_find(m, "locks", filter, 0, &coll);
    const bson_t *doc;
    mlock srv[NGROUPS];
    memset(srv, 0, sizeof srv);
    char unknown[128] = "";
    while (mongoc_cursor_next(cursor, &doc)) {
        bson_iter_t it;
        const char *id =
            bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "?";
        int g = group_index(id);
        if (g < 0)
            snprintf(unknown, sizeof unknown, "%s", id);
        else
            parse_lock(doc, &srv[g]);
    }
    raw_done(m, cursor, coll, filter, "the locks");
    if (unknown[0]) mfail(m, "a lock for an unknown group '%s'", unknown);
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *a = &srv[g], *b = &m->lock[g];
        if (a->exists != b->exists)
            mfail(m, "group %s: %s on the server, %s in the model (%d events)", GROUP[g],
                  a->exists ? "a lock" : "no lock", b->exists ? "a lock" : "no lock", live_count(m, g));
        if (!a->exists) continue;
        if (a->avail != b->avail || strcmp(a->token, b->token) != 0 || a->priority != b->priority)
            mfail(m, "group %s: the lock is {available_at %.3f, token %s, priority %d}, the model's {%.3f, %s, %d}",
                  GROUP[g], a->avail == 0 ? 0 : a->avail - 1e9, a->token[0] ? a->token : "null", a->priority,
                  b->avail == 0 ? 0 : b->avail - 1e9, b->token[0] ? b->token : "null", b->priority);
    }
}

/* An integer at a dotted path of the stats, or -1 with *bad set. */
static long long json_int_at(json_t *root, const char *path, int *bad) {
    json_t *j = root;
    char buf[64];
    snprintf(buf, sizeof buf, "%.60s", path);
    char *save = NULL;
    for (char *part = strtok_r(buf, ".", &save); part != NULL; part = strtok_r(NULL, ".", &save))
        j = json_object_get(j, part);
    if (!json_is_integer(j)) {
        *bad = 1;
        return -1;
    }
    return (long long)json_integer_value(j);
}

/* mq_stats_json agrees with the model. The first difference is written to msg. */
static void compare_stats(model *m, json_t *root, char *msg, size_t size) {
    double now = now_of(m);
    long long want_groups[5] = {0}, want_msgs[5] = {0};
    long long total = 0, ready = 0, leased = 0, parked = 0, messages = 0;
    for (int g = 0; g < NGROUPS; g++) {
        const mlock *l = &m->lock[g];
        if (!l->exists) continue;
        total++;
        want_groups[l->priority]++;
        if (l->avail <= now)
            ready++;
        else if (l->token[0])
            leased++;
        else
            parked++;
    }
    const mev *oldest = NULL;
    for (int i = 0; i < m->nev; i++) {
        if (m->ev[i].state != EV_LIVE) continue;
        if (oldest == NULL) oldest = &m->ev[i];
        messages++;
        want_msgs[m->ev[i].priority]++;
    }
    struct {
        char path[40];
        long long want;
    } ints[16] = {{"messages", messages},  {"dead", dead_count_model(m)}, {"groups.total", total},
                  {"groups.ready", ready}, {"groups.leased", leased},     {"groups.parked", parked}};
    int n = 6;
    for (int p = 0; p < 5; p++) {
        snprintf(ints[n].path, sizeof ints[n].path, "priorities.%d.groups", p);
        ints[n++].want = want_groups[p];
        snprintf(ints[n].path, sizeof ints[n].path, "priorities.%d.messages", p);
        ints[n++].want = want_msgs[p];
    }
    for (int i = 0; i < n; i++) {
        int bad = 0;
        long long got = json_int_at(root, ints[i].path, &bad);
        if (bad || got != ints[i].want) {
            snprintf(msg, size, "%.39s is %lld, the model says %lld", ints[i].path, got, ints[i].want);
            return;
        }
    }
    json_t *jnow = json_object_get(root, "now");
    if (!json_is_real(jnow) || fabs(json_real_value(jnow) - now) > 1e-6) {
        snprintf(msg, size, "now is not the queue clock (+%.3f)", now - 1e9);
        return;
    }
    json_t *age = json_object_get(root, "oldest_message_age_s");
    if (oldest == NULL ? !json_is_null(age)
                       : !json_is_real(age) || fabs(json_real_value(age) - (now - oldest->published_at)) > 1e-6)
        snprintf(msg, size, "oldest_message_age_s should be %s%.3f", oldest ? "" : "null, not ",
                 oldest ? now - oldest->published_at : 0.0);
}

static void check_stats(model *m) {
    mq_error err;
    char *text = NULL;
    mq_status st = mq_stats_json(m->q[m->h], &text, &err);
    if (st != MQ_OK) mfail(m, "mq_stats_json returned %s: %s", mq_status_name(st), err.message);
    char msg[200] = "";
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL) {
        snprintf(msg, sizeof msg, "not JSON (%s)", jerr.text);
    } else {
        compare_stats(m, root, msg, sizeof msg);
        json_decref(root);
    }
    if (msg[0] != '\0') {
        char copy[1200];
        snprintf(copy, sizeof copy, "%s", text);
        mq_free(text);
        mfail(m, "mq_stats_json: %s: %s", msg, copy);
    }
    mq_free(text);
}

static void check_all(model *m) {
    for (int h = 0; h < 2; h++)
        if (mq_queue_now(m->q[h]) != now_of(m))
            mfail(m, "mq_queue_now of handle %d is +%.3f, the fake clock +%.3f", h, mq_queue_now(m->q[h]) - 1e9,
                  now_of(m) - 1e9);
    check_repair_counts(m);
    check_messages(m);
    check_dead(m);
    check_locks(m);
    check_stats(m);
}

/* ---- the runner ---- */

static void step(model *m) {
    /* Weights: publishes and claims most, the rest enough to meet each other. */
    int r = below(m, 100);
    if (r < 13)
        op_publish(m);
    else if (r < 21)
        op_publish_at(m);
    else if (r < 26)
        op_batch(m);
    else if (r < 46)
        op_claim(m);
    else if (r < 57)
        op_ack(m);
    else if (r < 66)
        op_nack(m);
    else if (r < 68)
        op_extend(m);
    else if (r < 69)
        op_unclaim(m);
    else if (r < 77)
        op_clock(m, 0);
    else if (r < 82)
        op_clock(m, 1);
    else if (r < 85)
        op_max_attempts(m);
    else if (r < 86)
        op_dead_count(m);
    else if (r < 87)
        op_peek(m);
    else if (r < 91)
        op_dead_requeue(m);
    else if (r < 92)
        op_dead_purge(m);
    else if (r < 94)
        op_purge_group(m);
    else
        op_repair(m);
}

static long env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') return fallback;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end != '\0' || n <= 0) fail_msg("%s must be a positive integer, not '%s'", name, v);
    return n;
}

/* One sequence on a fresh queue; 0 if it agreed with the model, 1 if it failed. */
static double model_clock(void *ctx) { return ((tq *)ctx)->now; }

static int run_sequence(model *m, uint64_t seed, int sequence, int steps) {
    void *state = NULL;
    tq_setup_fake_clock(&state);
    struct srv_doc *scratch = m->scratch;
    memset(m, 0, sizeof *m);
    m->scratch = scratch;
    m->t = state;
    m->q[0] = m->t->queue;
    mq_error open_err;
    if (mq_queue_new(m->t->client, m->t->db, m->t->prefix, &m->q[1], &open_err) != MQ_OK)
        fail_msg("a second handle on the queue: %s", open_err.message);
    mq_queue_set_clock(m->q[1], model_clock, m->t);
    m->seed = seed;
    m->rng = seed;
    m->sequence = sequence;
    m->next_seq = 1;
    int failed = 0;
    if (setjmp(m->fail_jmp) == 0) {
        /* Half the sequences run the automatic repair on every empty claim (but the
         * first, which starts its period); the others turn it off. Its default period
         * (60 s of real time) would make it run at times the model cannot know. */
        m->ngroups = 2 + below(m, NGROUPS - 1); /* few groups: more meet each other */
        m->auto_repair = below(m, 2);
        /* max attempts 0 (unlimited, the default) or 1..3; the second handle's often
         * the same, as one configuration shared by two processes. */
        m->hmax[0] = below(m, 4);
        m->hmax[1] = below(m, 2) ? m->hmax[0] : below(m, 4);
        for (int h = 0; h < 2; h++) {
            mq_error e2;
            mq_status s2 = mq_queue_set_max_attempts(m->q[h], m->hmax[h], &e2);
            snprintf(m->cur, LINE, "handle %d: set_max_attempts %d -> %s", h, m->hmax[h], mq_status_name(s2));
            end_op(m);
            expect_status(m, "mq_queue_set_max_attempts", s2, MQ_OK, &e2);
            s2 = mq_queue_set_repair_interval(m->q[h], m->auto_repair ? 1e-6 : 0, &e2);
            snprintf(m->cur, LINE, "handle %d: set_repair_interval %s -> %s", h, m->auto_repair ? "1e-6" : "0 (off)",
                     mq_status_name(s2));
            end_op(m);
            expect_status(m, "mq_queue_set_repair_interval", s2, MQ_OK, &e2);
        }
        for (m->step = 0; m->step < steps; m->step++) {
            step(m);
            check_all(m);
        }
    } else {
        failed = 1;
    }
    pool_clear(m);
    mq_queue_destroy(m->q[1]);
    tq_teardown(&state);
    return failed;
}

static void random_sequences_agree_with_the_model(void **state) {
    (void)state;
    (void)test_uri();
    uint64_t base;
    const char *seed_env = getenv("MONGOMQ_MODEL_SEED");
    if (seed_env != NULL && seed_env[0] != '\0') {
        char *end;
        base = strtoull(seed_env, &end, 10);
        if (*end != '\0') fail_msg("MONGOMQ_MODEL_SEED must be a number, not '%s'", seed_env);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        base = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
        base %= 1000000000000ULL;
    }
    int sequences = (int)env_long("MONGOMQ_MODEL_SEQUENCES", 20);
    int steps = (int)env_long("MONGOMQ_MODEL_STEPS", 60);
    printf("[model] seed %llu: %d sequences of %d steps (sequence i runs with seed %llu + i)\n",
           (unsigned long long)base, sequences, steps, (unsigned long long)base);
    fflush(stdout);

    model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->scratch = calloc(MAX_EV, sizeof *m->scratch);
    assert_non_null(m->scratch);
    char failed_seeds[1024] = "";
    int failures = 0;
    double t0 = tq_monotonic();
    for (int i = 0; i < sequences; i++) {
        uint64_t seed = base + (uint64_t)i;
        if (run_sequence(m, seed, i, steps)) {
            failures++;
            size_t len = strlen(failed_seeds);
            if (len + 32 < sizeof failed_seeds)
                snprintf(failed_seeds + len, sizeof failed_seeds - len, " %llu", (unsigned long long)seed);
        }
    }
    free(m->scratch);
    free(m);
    printf("[model] %d sequences, %d failed, in %.1f s\n", sequences, failures, tq_monotonic() - t0);
    printf(
        "[model] met: %ld leases (%ld of batches), %ld empty claims, %ld acks of stale leases (MQ_LEASE_LOST), "
        "%ld acks of expired leases nobody took, %ld dead letters, %ld requeued, %ld parks, %ld stale locks dropped, "
        "%ld ties settled by reading the server, %ld groups re-created by an ack, %ld orphans (%ld repaired by "
        "mq_repair, %ld by the automatic repair), %ld attempts of heads first delivered inside a batch, %ld events "
        "listed by peek and dead list, %ld leases given back (unclaim)\n",
        cover.claims_ok, cover.batch_leases, cover.claims_empty, cover.lost, cover.stale_ok, cover.dead, cover.requeued,
        cover.parks, cover.drops, cover.tie_peeks, cover.relocks, cover.orphans, cover.repaired, cover.auto_fixed,
        cover.ambiguous_attempts, cover.listed, cover.unclaimed);
    if (failures > 0)
        fail_msg("%d of %d sequences disagree with the model; their seeds:%s", failures, sequences, failed_seeds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_sequences_agree_with_the_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
