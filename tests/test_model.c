/* Randomized model-based test: random sequences of every call of the C API on one
 * queue with a fake clock, each step checked against a small reference model of the
 * semantics include/mongomq.h and docs/design.md describe.
 *
 * The model (its state in tests/model/model.h; this file holds the claim, the other
 * operations and the runner): groups with a FIFO of events; a lock per active group
 * (ready / leased by a token until a deadline / parked until a time), with the
 * priority of the publish that created the group; the round robin by available_at;
 * the claim's priority floor and batch size; attempts per EVENT (an event's attempts
 * is the number of its own deliveries: one that becomes head because someone else
 * removed the one before it starts at 0), and the lock's attempts and head as
 * docs/design.md, "Attempts", keeps them; dead letters only after max_attempts
 * deliveries of that event (lowering max attempts applies to heads already past it);
 * nack delays that keep the group held; mq_unclaim putting a lease back as its
 * claim found it (place in line, attempts); leases fenced by token, not by time (an
 * expired lease that nobody took over still acks, nacks and extends); an ack by a
 * stale lease removes its events all the same and says MQ_LEASE_LOST; purge of a
 * group; pausing and resuming a group (docs/design.md, "Pausing a group": the lock
 * keeps priority p as -1 - p and is never claimed; its holder keeps the lease, whose
 * ack, nack, extend and unclaim work; a drain keeps the lock, released and without a
 * head; a refill and a purge keep the pause; a group without a lock is paused ahead,
 * at priority 0; pausing a paused group or resuming one that is not paused changes
 * nothing); groups left with events and no lock (a publisher that died between its
 * insert and its lock: the test deletes the lock its publish made) and what heals
 * them: the group's next publish, mq_repair, or the automatic repair of an empty
 * claim (half the sequences run it on every empty claim, with an interval of ~0,
 * and check mq_queue_repair_counts; the others turn it off); dead letters counted,
 * requeued and purged; the stats. Each sequence uses 2 to 5 groups, a random max
 * attempts to start with, and every claim entry point (mq_claim, mq_claim_batch, and
 * the waiting claims with timeout 0, which are the plain claim).
 *
 * Dedup keys (tests/model/dedup.c; include/mongomq.h, "Deduplication"): each handle
 * has its own window (2 to 30 s, or the default, so that the clock crosses it; now
 * and then changed) and scope (both queue, both group, or one of each, whose keys
 * never match); keyed publishes (mq_publish_with, scheduled or not) and keyed batches
 * (mq_batch_add_with, two events of a batch with one key, a third of the batches
 * published again as a retry would) with keys from a pool of 5, each status, seq and
 * mq_batch_outcome from the model: MQ_DUPLICATE with the holder's seq while an event
 * holds the key or a record holds it within its window, the seq counter advancing
 * all the same; the record an ack or a dead letter leaves of a keyed event whose
 * dedup_until is still ahead (else it is deleted), removed by the publish that meets
 * it expired; purge forgets keys; a requeued dead letter has none; a keyed orphan
 * (its publish died before its lock) is locked by its key's next publish, a
 * duplicate. A clock step to the next dedup deadline puts acks and publishes at the
 * window's end exactly.
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
 *   - the order of groups with equal available_at in the listing sorted by due.
 *
 * After every step (tests/model/invariants.c): the messages and dead letters on the
 * server are exactly the model's (every published event that was not acked, purged or
 * dead-purged is in exactly one of them, never neither); the keyed events carry the
 * model's key and dedup_until, and the records (messages without a group_id) are
 * exactly the model's (seq, key, dedup_expires and nothing else: the test server has
 * no TTL monitor, which would remove them at times the model cannot know); the locks
 * are the model's (existence and every field of the schema in docs/design.md:
 * available_at, token, priority with its paused encoding, paused_at, attempts, head,
 * leased_at); mq_stats_json agrees (messages, records not among them, dead,
 * published, groups total/ready/leased/parked/paused, per priority, now, oldest
 * age). After every claim: the leased events are exactly the model's group head(s)
 * in FIFO order with their bytes, the attempts are the head's deliveries (and the
 * lock's count + 1, or 1 for a head the lock does not count), the deadline is now +
 * visibility. Looking (tests/model/look.c): mq_peek_json and mq_dead_list_json;
 * mq_dead_list_with walked page by page; mq_groups_json walked to its last page with
 * a random limit, sort and filters, every row against the model (state, priority,
 * attempts, holder, held for, deadline, backlog, head, head age) and every group the
 * filters match listed once, in order.
 *
 * Replay: the seed comes from MONGOMQ_MODEL_SEED (else the time) and is printed;
 * sequence i runs with seed + i. A failure prints its sequence's seed, the step and
 * the last operations; MONGOMQ_MODEL_SEED=<that seed> MONGOMQ_MODEL_SEQUENCES=1 runs
 * exactly that sequence again. MONGOMQ_MODEL_SEQUENCES (default 20) and
 * MONGOMQ_MODEL_STEPS (steps per sequence, default 60) bound the run. A failing
 * sequence does not stop the others: the test fails at the end, listing every
 * failing seed. */
#define _POSIX_C_SOURCE 200809L
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

cover_counts cover;

/* ---- the model's events ---- */

int partition_of(const model *m, int g) { return mq_group_partition(GROUP[g], m->partitions); }

int64_t seq_next(const model *m, int g) {
    const int k = partition_of(m, g);
    return m->taken[k] * m->partitions + k + 1;
}

int64_t seq_take(model *m, int g) {
    const int64_t seq = seq_next(m, g);
    m->taken[partition_of(m, g)]++;
    return seq;
}

int64_t seq_published(const model *m) {
    int64_t n = 0;
    for (int k = 0; k < m->partitions; k++) n += m->taken[k];
    return n;
}

mev *add_event(model *m, int64_t seq, int g, int priority, const unsigned char *bytes, size_t len, double not_before) {
    if (m->nev >= MAX_EV) mfail(m, "the model holds at most %d events", MAX_EV);
    if (seq != seq_next(m, g)) mfail(m, "seq %lld, the model expects %lld", (long long)seq, (long long)seq_next(m, g));
    /* in seq order: with partitions a new seq may be below earlier ones */
    int at = m->nev;
    while (at > 0 && m->ev[at - 1].seq > seq) at--;
    memmove(&m->ev[at + 1], &m->ev[at], sizeof m->ev[0] * (size_t)(m->nev - at));
    m->nev++;
    mev *e = &m->ev[at];
    memset(e, 0, sizeof *e);
    e->seq = seq;
    e->group = g;
    e->priority = priority;
    memcpy(e->bytes, bytes, len);
    e->len = len;
    e->not_before = not_before;
    e->published_at = now_of(m);
    e->state = EV_LIVE;
    m->taken[partition_of(m, g)]++;
    return e;
}

/* A new event's bytes: text, binary (with a NUL, so stored as BSON binary) or empty. */
size_t make_event(model *m, unsigned char *buf) {
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

const char *describe_bytes(const unsigned char *b, size_t len, char *out, size_t size) {
    if (len == 0) return "''";
    if (b[0] == 0) {
        snprintf(out, size, "bin(%02x%02x%02x%02x)", b[0], b[1], b[2], b[3]);
        return out;
    }
    snprintf(out, size, "'%.*s'", (int)len, (const char *)b);
    return out;
}

/* ---- repair: groups with events and no lock (orphans) ---- */

static int is_orphan(model *m, int g) { return !m->lock[g].exists && head_of(m, g) != NULL; }

static int orphan_count(model *m) {
    int n = 0;
    for (int g = 0; g < NGROUPS; g++) n += is_orphan(m, g);
    return n;
}

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
        lock_created(m, g, h->priority, h->not_before > h->published_at ? h->not_before : h->published_at, h->seq);
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
    mlock *lk = &m->lock[g];
    /* claim.lease took the lock (leased_at now, attempts + 1); its count is this
     * delivery's if the head is the lock's head, else the head's first (claim.rehead). */
    const int pre_attempts = lk->attempts;
    const int64_t pre_head = lk->head;
    lk->leased_at = now;
    int count = -1;
    for (;;) {
        mev *h = head_of(m, g);
        if (h == NULL) {
            lk->exists = 0;
            cover.drops++;
            say(m, " [%s: no event, lock dropped]", GROUP[g]);
            return V_DROP;
        }
        if (count < 0) count = h->seq == pre_head ? pre_attempts + 1 : 1;
        const int dead_by_lock = m->max_attempts > 0 && count > m->max_attempts;
        if (m->max_attempts > 0 && (h->hi + 1 > m->max_attempts || dead_by_lock)) {
            int surely = h->lo + 1 > m->max_attempts;
            int attempts = -1;
            int in_dead = srv_dead(m, h->seq, &attempts);
            if (surely && !in_dead)
                mfail(m,
                      "group %s: head %lld was delivered %d times and max attempts is %d: the claim that visited "
                      "the group must move it to the dead letters, and it is not there",
                      GROUP[g], (long long)h->seq, h->lo, m->max_attempts);
            if (in_dead != dead_by_lock)
                mfail(m,
                      "group %s: this claim is delivery %d of head %lld by the lock's count (attempts %d, head %lld) "
                      "and max attempts is %d: the head should %sbe a dead letter, and it is%s one",
                      GROUP[g], count, (long long)h->seq, pre_attempts, (long long)pre_head, m->max_attempts,
                      dead_by_lock ? "" : "not ", in_dead ? "" : " not");
            if (in_dead) {
                if (attempts != count - 1)
                    mfail(m, "dead letter %lld says attempts %d, the lock counted %d deliveries", (long long)h->seq,
                          attempts, count - 1);
                if (attempts < h->lo || attempts > h->hi)
                    mfail(m, "dead letter %lld says attempts %d, the model counts %d..%d deliveries of that event",
                          (long long)h->seq, attempts, h->lo, h->hi);
                if (attempts < m->max_attempts)
                    mfail(m, "dead letter %lld was delivered %d times, fewer than max attempts %d", (long long)h->seq,
                          attempts, m->max_attempts);
                h->state = EV_DEAD;
                h->dead_at = now;
                dedup_removed(m, h, DEDUP_DEAD); /* claim.dead_record or claim.dead_delete */
                h->lo = h->hi = attempts;
                cover.dead++;
                say(m, " [%s: %lld dead after %d]", GROUP[g], (long long)h->seq, attempts);
                count = 1; /* the next head's first delivery */
                continue;
            }
            h->hi = m->max_attempts - 1; /* not dead: fewer deliveries than max */
        }
        if (h->not_before > now) {
            lk->avail = h->not_before;
            lk->token[0] = '\0';
            lk->attempts = count - 1; /* claim.park: this claim's attempt undone */
            lk->head = h->seq;
            cover.parks++;
            say(m, " [%s: parked until +%.2f]", GROUP[g], h->not_before - MODEL_T0);
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
        if (attempts != count)
            mfail(m, "lease of %s: attempts %d, the lock's count says %d (its attempts %d, head %lld; the head %lld)",
                  GROUP[g], attempts, count, pre_attempts, (long long)pre_head, (long long)h->seq);
        if (h->hi > h->lo) cover.ambiguous_attempts++;
        h->lo = h->hi = attempts;
        for (int i = 1; i < n; i++) members[i]->hi++;
        if (n > 1) cover.batch_leases++;
        double deadline = mq_lease_deadline(c->lease);
        if (fabs(deadline - (now + c->visibility)) > 1e-6)
            mfail(m, "mq_lease_deadline is +%.3f, the claim's time plus its visibility is +%.3f", deadline - MODEL_T0,
                  now + c->visibility - MODEL_T0);
        snprintf(lk->token, sizeof lk->token, "%s", mq_lease_token(c->lease));
        size_t wlen = strlen(c->worker);
        if (strncmp(lk->token, c->worker, wlen) != 0 || lk->token[wlen] != ':' || lk->token[wlen + 1] == '\0')
            mfail(m, "the lease's token '%s' is not '%s:' and its random part", lk->token, c->worker);
        mlease *out = c->out;
        out->prior_avail = lk->avail;
        out->attempts = attempts;
        lk->avail = now + c->visibility;
        lk->attempts = attempts;
        lk->head = h->seq;
        out->group = g;
        snprintf(out->token, sizeof out->token, "%s", lk->token);
        out->n = n;
        for (int i = 0; i < n; i++) out->seqs[i] = members[i]->seq;
        const mev *behind = next_in_group(m, members[n - 1]);
        out->more_after = behind != NULL;
        out->next_seq = behind != NULL ? behind->seq : 0;
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

/* Claimable at this floor: a paused lock never is (its stored priority is negative). */
static int due(model *m, int g, int floor) {
    const mlock *l = &m->lock[g];
    return l->exists && !l->paused && l->avail <= now_of(m) && l->priority >= floor;
}

/* One partition's part of a claim (every group's with one partition): the claim visits
 * its due groups in available_at order (any order within a tie) until one gives a
 * lease. Returns 1 when the claim's group G was found here (checked), 0 when the
 * partition gave nothing (none of its due groups had a deliverable head). */
static int model_claim_in(model *m, const claim_ctx *c, int floor, int G, int part) {
    int done = 0;
    for (;;) {
        double best = INFINITY;
        for (int g = 0; g < NGROUPS; g++)
            if (!(done & (1 << g)) && partition_of(m, g) == part && due(m, g, floor) && m->lock[g].avail < best)
                best = m->lock[g].avail;
        if (best == INFINITY) return 0;
        int tie = 0;
        for (int g = 0; g < NGROUPS; g++)
            if (!(done & (1 << g)) && partition_of(m, g) == part && due(m, g, floor) && m->lock[g].avail == best)
                tie |= 1 << g;
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
            return 1;
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
                      "the claim returned %s, but group %s (available_at %s%.3f, priority %d, partition %d) was "
                      "due%s and its head %lld is deliverable%s",
                      G >= 0 ? GROUP[G] : "MQ_EMPTY", GROUP[g], best == 0 ? "0 = " : "+",
                      best == 0 ? 0 : best - MODEL_T0, m->lock[g].priority, part, G >= 0 ? " first" : "",
                      (long long)h->seq, where);
            }
        }
        done |= tie;
    }
}

/* Follows a claim's result through the model: the claim looks in each partition, from
 * the handle's turn on (lib/partition.cpp, claim_order), until one gives a lease (the
 * turn is then the partition after it: claim_took); finding nothing, the automatic
 * repair may make locks, and the claim then looks once more from the same turn. */
static void model_claim(model *m, mq_status st, const mq_error *err, const claim_ctx *c, int floor) {
    int G = -1;
    if (st == MQ_OK) {
        G = group_index(mq_lease_group(c->lease));
        if (G < 0) mfail(m, "the claim returned an unknown group '%s'", mq_lease_group(c->lease));
        if (!due(m, G, floor) && !(m->auto_repair && is_orphan(m, G)))
            mfail(m, "the claim returned group %s, which the model does not hold due at floor %d", GROUP[G], floor);
        if (mq_lease_partition(c->lease) != partition_of(m, G))
            mfail(m, "the lease of group %s says partition %d, the hash %d", GROUP[G], mq_lease_partition(c->lease),
                  partition_of(m, G));
    } else if (st != MQ_EMPTY) {
        mfail(m, "the claim returned %s: %s", mq_status_name(st), err->message);
    }
    int repaired = 0;
    for (;;) {
        const int P = m->partitions;
        const int start = P > 1 ? (int)(m->turn[m->h] % (uint64_t)P) : 0;
        for (int i = 0; i < P; i++) {
            if (model_claim_in(m, c, floor, G, (start + i) % P)) {
                m->turn[m->h] = (uint64_t)((start + i + 1) % P);
                return;
            }
        }
        if (!repaired && auto_repair_model(m)) {
            repaired = 1;
            continue;
        }
        if (G >= 0) mfail(m, "the claim returned group %s, but the model has no due group left", GROUP[G]);
        return; /* MQ_EMPTY, as the model says */
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
    say(m, "]%s, %s%s)", l->more_after ? " more" : "", lease_is_current(m, l) ? "current" : "stale",
        m->lock[l->group].exists && m->lock[l->group].paused ? ", paused" : "");
}

/* ---- the operations ---- */

/* A new lock (publish.lock's $setOnInsert, a relock, repair): attempts 0 counting
 * `head` (0: none), not paused, never leased. */
void lock_created(model *m, int g, int priority, double avail, int64_t head) {
    mlock *l = &m->lock[g];
    memset(l, 0, sizeof *l);
    l->exists = 1;
    l->avail = avail;
    l->priority = priority;
    l->head = head;
}

/* publish.lock: a group without a lock gets one, its head the event; a lock that is
 * there stays as it is, a paused one paused (a refill keeps the pause). */
void publish_lock(model *m, int g, int priority, double avail, int64_t seq) {
    if (!m->lock[g].exists) {
        lock_created(m, g, priority, avail, seq);
    } else if (m->lock[g].paused) {
        cover.paused_refills++;
        say(m, " (%s stays paused)", GROUP[g]);
    }
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
    publish_lock(m, g, priority, now_of(m), seq); /* in line from its publish */
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
             describe_bytes(bytes, len, d, sizeof d), nb - MODEL_T0, nb > now_of(m) ? "future" : "past");
    mq_error err;
    int64_t seq = 0;
    mq_status st = mq_publish_at(m->q[m->h], GROUP[g], bytes, len, priority, nb, &seq, &err);
    say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
    expect_status(m, "mq_publish_at", st, MQ_OK, &err);
    add_event(m, seq, g, priority, bytes, len, nb);
    publish_lock(m, g, priority, nb > now_of(m) ? nb : now_of(m), seq); /* parked until then, or in line now */
    end_op(m);
}

static void op_batch(model *m) {
    int n = 1 + below(m, 5);
    int groups[5] = {0}, prios[5];
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
    if (first != seq_next(m, groups[0]))
        mfail(m, "the batch's first seq is %lld, the model's %lld", (long long)first,
              (long long)seq_next(m, groups[0]));
    for (int i = 0; i < n; i++) {
        const int64_t seq = seq_next(m, groups[i]); /* with partitions, not first + i */
        add_event(m, seq, groups[i], prios[i], bytes[i], lens[i], 0);
        publish_lock(m, groups[i], prios[i], now_of(m), seq); /* from the group's first event in the batch */
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
    const long dead_before = cover.dead;
    model_claim(m, st, &err, &c, floor);
    if (st == MQ_OK)
        cover.claims_ok++;
    else
        cover.claims_empty++;
    check_repair_counts(m);
    end_op(m);
    /* A claim that made dead letters: read them back by pages (dead letters are few at
     * a random step, most of them requeued or purged soon). */
    if (cover.dead > dead_before) op_dead_pages(m);
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
        if (e->state == EV_LIVE) {
            e->state = EV_ACKED;
            dedup_removed(m, e, DEDUP_ACKED); /* ack.record or ack.delete */
        }
    }
    if (current && l->lease != NULL && mq_lease_deadline(l->lease) < now_of(m)) cover.stale_ok++;
    if (!current) cover.lost++;
    if (current) {
        expect_status(m, "mq_ack", st, MQ_OK, &err);
        mlock *lk = &m->lock[l->group];
        if (lk->paused) cover.paused_holder++;
        if (l->more_after) {
            lk->avail = now_of(m); /* the back of the round robin */
            lk->token[0] = '\0';
            lk->attempts = 0; /* ack.release: the event behind the lease is the head the count starts on */
            lk->head = l->next_seq;
        } else if (lk->paused) {
            /* ack.keep_paused: the pause outlasts the drain; the lock stays, released,
             * its count reset and without a head (events published since the claim
             * have their lock: this one). */
            lk->avail = now_of(m);
            lk->token[0] = '\0';
            lk->attempts = 0;
            lk->head = 0;
            cover.paused_drains++;
            say(m, " (paused: the lock stays)");
        } else {
            /* The group drains: the lock goes; events published since the claim make
             * it again, at the front, with the dropped lock's priority. */
            lk->exists = 0;
            mev *h = head_of(m, l->group);
            if (h != NULL) {
                cover.relocks++;
                /* in line from the raced event's publish */
                lock_created(m, l->group, lk->priority, h->published_at, h->seq);
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
        if (lk->paused) cover.paused_holder++;
        if (delay > 0) {
            lk->avail = now_of(m) + delay; /* held by this lease's token until then */
            if (fabs(mq_lease_deadline(l->lease) - lk->avail) > 1e-6)
                mfail(m, "mq_lease_deadline after nack(%g) is +%.3f, want +%.3f", delay,
                      mq_lease_deadline(l->lease) - MODEL_T0, lk->avail - MODEL_T0);
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
        if (m->lock[l->group].paused) cover.paused_holder++;
        m->lock[l->group].avail = now_of(m) + visibility;
        if (fabs(mq_lease_deadline(l->lease) - (now_of(m) + visibility)) > 1e-6)
            mfail(m, "mq_lease_deadline after extend is +%.3f, want +%.3f", mq_lease_deadline(l->lease) - MODEL_T0,
                  now_of(m) + visibility - MODEL_T0);
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
        if (lk->paused) cover.paused_holder++;
        lk->avail = l->prior_avail;
        lk->token[0] = '\0';
        lk->attempts = l->attempts > 0 ? l->attempts - 1 : 0; /* the lease's delivery undone */
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
    begin_op(m, "clock +%g -> t=+%.2f", by, now_of(m) - MODEL_T0);
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
        int64_t seq = live != NULL ? live->seq : (seq_published(m) + 1000) * m->partitions;
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
    publish_lock(m, g, priority, now_of(m), fresh);  /* a publish of the same event */
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
        if (m->ev[i].state == EV_LIVE && m->ev[i].group == g) {
            m->ev[i].state = EV_GONE;
            dedup_removed(m, &m->ev[i], DEDUP_PURGED);
        }
    mlock *lk = &m->lock[g];
    if (lk->exists && lk->paused) {
        /* purge.unlease: the pause stays, the lock released (a holder's lease is lost),
         * its count reset and without a head */
        lk->avail = now_of(m);
        lk->token[0] = '\0';
        lk->attempts = 0;
        lk->head = 0;
        cover.paused_purges++;
        say(m, " (paused: the lock stays)");
    } else {
        lk->exists = 0;
    }
    end_op(m);
}

/* ---- pausing (docs/design.md, "Pausing a group") ---- */

static const char *pause_state(const mlock *lk) {
    if (!lk->exists) return "no lock";
    return lk->paused ? "paused" : "not paused";
}

/* mq_pause_group of a random group: one with a lock keeps its priority p as -1 - p
 * (paused_at now) and nothing else changes; one without a lock gets a paused lock
 * (priority 0, released, in line from now, no head); a paused one stays as it is. */
static void op_pause(model *m) {
    int g = below(m, m->ngroups);
    mlock *lk = &m->lock[g];
    begin_op(m, "pause %s (%s, %d events)", GROUP[g], pause_state(lk), live_count(m, g));
    mq_error err;
    mq_status st = mq_pause_group(m->q[m->h], GROUP[g], &err);
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, "mq_pause_group", st, MQ_OK, &err);
    if (!lk->exists) {
        lock_created(m, g, 0, now_of(m), 0); /* pause.lock: priority -1 */
        lk->paused = 1;
        lk->paused_at = now_of(m);
        cover.paused_ahead++;
    } else if (!lk->paused) {
        lk->paused = 1;
        lk->paused_at = now_of(m);
        cover.pauses++;
    } else {
        cover.pause_noop++;
    }
    end_op(m);
}

/* mq_resume_group, three times in four of a paused group (so that pauses do not pile
 * up and starve the claims), else of a random one: a paused lock gets its priority
 * back (paused_at goes), where its available_at says; any other group is left as it
 * is. */
static void op_resume(model *m) {
    int paused[NGROUPS], npaused = 0;
    for (int k = 0; k < m->ngroups; k++)
        if (m->lock[k].exists && m->lock[k].paused) paused[npaused++] = k;
    int g = npaused > 0 && below(m, 4) != 0 ? paused[below(m, npaused)] : below(m, m->ngroups);
    mlock *lk = &m->lock[g];
    begin_op(m, "resume %s (%s, %d events)", GROUP[g], pause_state(lk), live_count(m, g));
    mq_error err;
    mq_status st = mq_resume_group(m->q[m->h], GROUP[g], &err);
    say(m, " -> %s", mq_status_name(st));
    expect_status(m, "mq_resume_group", st, MQ_OK, &err);
    if (lk->exists && lk->paused) {
        lk->paused = 0;
        lk->paused_at = 0;
        cover.resumes++;
    } else {
        cover.resume_noop++;
    }
    end_op(m);
}

/* mq_repair, and what it is for: a publisher that died between publish.insert and
 * publish.lock (docs/design.md, "A process that dies between two commands"). The
 * test publishes to a group without a lock (half the time with a free dedup key) and
 * deletes the lock the publish made, so the group has an event and no lock (an
 * orphan). Then the group's next publish makes the lock (or, for a keyed orphan, half
 * the time a publish with its key: a duplicate, which makes the orphan's own lock), or
 * mq_repair does, or the orphan stays for later steps: a later publish, repair, or
 * (when this sequence runs it) the automatic repair of an empty claim. */
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
        const int key = dedup_orphan_key(m, g);
        mq_status st = dedup_publish(m, g, bytes, len, priority, key, &seq, &err);
        say(m, " -> %s seq %lld", mq_status_name(st), (long long)seq);
        expect_status(m, "mq_publish", st, MQ_OK, &err);
        mev *e = add_event(m, seq, g, priority, bytes, len, 0);
        if (key >= 0) dedup_keyed(m, e, key);
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
        if (next == 0 && e->keyed && below(m, 2)) {
            dedup_orphan_duplicate(m, e);
            return;
        }
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
            lock_created(m, g, p2, now_of(m), seq); /* its head: this event, not the orphan's */
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

/* ---- the runner ---- */

static void op_clock_small(model *m) { op_clock(m, 0); }
static void op_clock_big(model *m) { op_clock(m, 1); }

/* Weights: publishes and claims most, the rest enough to meet each other. Pauses are
 * rare and resumes a little more frequent (and aimed at paused groups), so that most
 * groups are claimable most of the time and the claim-side cases keep their share. */
static const struct {
    int weight;
    void (*op)(model *m);
} OPS[] = {
    {26, op_publish},     {16, op_publish_at},    {10, op_batch},      {42, op_claim},       {22, op_ack},
    {18, op_nack},        {4, op_extend},         {2, op_unclaim},     {14, op_clock_small}, {10, op_clock_big},
    {6, op_max_attempts}, {2, op_dead_count},     {2, op_peek},        {7, op_dead_requeue}, {2, op_dead_purge},
    {4, op_purge_group},  {9, op_repair},         {3, op_pause},       {4, op_resume},       {4, op_groups},
    {1, op_dead_pages},   {16, op_publish_keyed}, {7, op_batch_keyed}, {2, op_dedup_config}, {3, op_dedup_clock},
};

static void step(model *m) {
    int total = 0;
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++) total += OPS[i].weight;
    int r = below(m, total);
    for (size_t i = 0;; i++) {
        if (r < OPS[i].weight) {
            OPS[i].op(m);
            return;
        }
        r -= OPS[i].weight;
    }
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
    m->t->now = MODEL_T0; /* before any call: the queue has no state yet */
    m->q[0] = m->t->queue;
    mq_error open_err;
    if (tq_queue_new(m->t->client, m->t->db, m->t->prefix, &m->q[1], &open_err) != MQ_OK)
        fail_msg("a second handle on the queue: %s", open_err.message);
    mq_queue_set_clock(m->q[1], model_clock, m->t);
    m->seed = seed;
    m->rng = seed;
    m->sequence = sequence;
    m->partitions = tq_partitions();
    if (m->partitions > MODEL_MAX_PARTITIONS) fail_msg("the model follows at most 16 partitions");
    memset(m->taken, 0, sizeof m->taken);
    m->turn[0] = m->turn[1] = 0;
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
        dedup_setup(m); /* each handle's dedup window and scope */
        for (m->step = 0; m->step < steps; m->step++) {
            step(m);
            check_all(m);
        }
    } else {
        failed = 1;
    }
    pool_clear(m);
    mq_batch_destroy(m->batch); /* a keyed batch a failure left */
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
    printf(
        "[model] paused: %ld pauses (%ld of groups without a lock, %ld of paused ones), %ld resumes (%ld of groups "
        "not paused), %ld acks/nacks/extends/unclaims by a paused group's holder, %ld paused drains, %ld paused "
        "purges, %ld publishes to a paused group; listed: %ld group walks (%ld pages, %ld rows, %ld pages by due "
        "that begin inside a tie), %ld pages of dead letters (%ld letters)\n",
        cover.pauses + cover.paused_ahead, cover.paused_ahead, cover.pause_noop, cover.resumes, cover.resume_noop,
        cover.paused_holder, cover.paused_drains, cover.paused_purges, cover.paused_refills, cover.group_walks,
        cover.group_pages, cover.group_rows, cover.group_tie_pages, cover.dead_pages, cover.dead_rows);
    print_dedup_cover();
    if (failures > 0)
        fail_msg("%d of %d sequences disagree with the model; their seeds:%s", failures, sequences, failed_seeds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_sequences_agree_with_the_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
