/* Deduplication keys in the model test (tests/test_model.c; include/mongomq.h,
 * "Deduplication"): each handle's window and scope, keyed publishes and batches
 * (mq_publish_with, mq_batch_add_with, mq_batch_outcome, a batch published again as a
 * retry would), the orphan of a keyed publish that died before its lock and the
 * duplicate that locks it, the records acks and dead letters leave, and the check
 * after every step that the keyed documents of the messages are the model's.
 *
 * What the model holds: a key is held by at most one document of the messages, from
 * the publish that adds its event until the event goes (ack, dead letters, purge),
 * and, when the event was acked or dead-lettered while its dedup_until (its publish
 * time + its publisher's window, on the queue clock) was still ahead, by the record it
 * leaves (its _id, dedup_key, dedup_expires: nothing else) until a publish with the
 * key meets it expired and removes it. A publish whose key is held by a queued event
 * or by a record not yet expired is MQ_DUPLICATE with the holder's seq and adds
 * nothing (the seq counter still advances); within a batch, in add order. Keys of
 * the two scopes never match: a queue-scope key is its string, a group-scope key
 * {group, key}. A duplicate whose holder is queued in a group without a lock makes
 * that lock as the holder's own publish would have. Purge forgets keys; a dead letter
 * requeued is published without its key.
 *
 * The test server has no TTL monitor, so records stay until a publish meets them; on a
 * real mongod the monitor would remove them (the fake clock's dates are in 2001). */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Few keys, so that duplicates are frequent; one is not ASCII. */
const char *const KEY[NKEYS] = {"k0", "k1", "k2", "k3", "k\xc3\xa9"};

static const char *scope_name(int scope) { return scope == MQ_DEDUP_SCOPE_GROUP ? "group" : "queue"; }

static int64_t ms_of(double epoch_s) { return (int64_t)llround(epoch_s * 1000.0); }

/* A time in ms of the fake clock (which starts at MODEL_T0) as the trace shows it. */
static double shown_ms(int64_t ms) { return (double)ms / 1000.0 - MODEL_T0; }

/* A date field read from the server as the trace shows it, or "absent". */
static const char *shown_time(int present, int64_t ms, char *out, size_t size) {
    if (!present) return "absent";
    snprintf(out, size, "+%.3f", shown_ms(ms));
    return out;
}

/* The key as the trace shows it: 'k' in queue scope, {g, 'k'} in group scope. */
static const char *key_text(int key, int scope, int g, char *out, size_t size) {
    if (scope == MQ_DEDUP_SCOPE_GROUP)
        snprintf(out, size, "{%s, '%s'}", GROUP[g], KEY[key]);
    else
        snprintf(out, size, "'%s'", KEY[key]);
    return out;
}

/* ---- the model's keys ---- */

static mev *queued_holder(model *m, int key, int scope, int g) {
    for (int i = 0; i < m->nev; i++) {
        mev *e = &m->ev[i];
        if (e->state == EV_LIVE && e->keyed && e->key == key && e->key_scope == scope &&
            (scope == MQ_DEDUP_SCOPE_QUEUE || e->group == g))
            return e;
    }
    return NULL;
}

static mrec *record_holder(model *m, int key, int scope, int g) {
    const int group = scope == MQ_DEDUP_SCOPE_GROUP ? g : -1;
    for (int i = 0; i < m->nrec; i++)
        if (m->rec[i].key == key && m->rec[i].scope == scope && m->rec[i].group == group) return &m->rec[i];
    return NULL;
}

static mrec *record_of(model *m, int64_t seq) {
    for (int i = 0; i < m->nrec; i++)
        if (m->rec[i].seq == seq) return &m->rec[i];
    return NULL;
}

static void record_remove(model *m, mrec *r) { *r = m->rec[--m->nrec]; }

void dedup_keyed(model *m, mev *e, int key) {
    e->keyed = 1;
    e->key = key;
    e->key_scope = m->scope[m->h];
    e->until_ms = ms_of(now_of(m) + m->window[m->h]); /* dedup_until: the publish's time + its window */
}

void dedup_removed(model *m, mev *e, int how) {
    if (!e->keyed) return;
    char k[64];
    key_text(e->key, e->key_scope, e->group, k, sizeof k);
    if (how == DEDUP_PURGED) {
        cover.keyed_purged++;
        return;
    }
    /* ack.record / claim.dead_record while dedup_until is ahead; else ack.delete /
     * claim.dead_delete: the key is free again. */
    if (e->until_ms <= ms_of(now_of(m))) {
        cover.keyed_past_window++;
        say(m, " [%lld past its window: key %s free]", (long long)e->seq, k);
        return;
    }
    if (record_holder(m, e->key, e->key_scope, e->group) != NULL)
        mfail(m, "the model holds key %s twice: by event %lld and a record", k, (long long)e->seq);
    if (m->nrec == MAX_REC) mfail(m, "the model holds at most %d records", MAX_REC);
    mrec *r = &m->rec[m->nrec++];
    r->seq = e->seq;
    r->key = e->key;
    r->scope = e->key_scope;
    r->group = e->key_scope == MQ_DEDUP_SCOPE_GROUP ? e->group : -1;
    r->expires_ms = e->until_ms;
    if (how == DEDUP_ACKED)
        cover.rec_by_ack++;
    else
        cover.rec_by_dead++;
    say(m, " [%lld: record of %s until +%.3f]", (long long)e->seq, k, shown_ms(r->expires_ms));
}

/* ---- publishing with keys ---- */

/* One event of a publish as the test made it. */
typedef struct kev {
    int g, priority;
    int key; /* -1: none */
    unsigned char bytes[16];
    size_t len;
    double nb; /* not_before, 0: none */
} kev;

/* What the publish of evs[0..n-1] (add order) through handle m->h, whose seqs are
 * first..first+n-1, does to the model: seq[i] and dup[i] for each event, the events
 * added, expired records removed, the locks made. True when some event was a
 * duplicate. */
static int model_publish(model *m, const kev *evs, int n, int64_t first, int64_t *seq, int *dup) {
    const double now = now_of(m);
    const int64_t now_ms = ms_of(now);
    const int scope = m->scope[m->h];
    int64_t holders[5];
    int nholders = 0, any = 0;
    if (first != seq_next(m, evs[0].g))
        mfail(m, "the publish's first seq is %lld, the model's counter is at %lld", (long long)first,
              (long long)seq_next(m, evs[0].g));
    for (int i = 0; i < n; i++) {
        const kev *k = &evs[i];
        seq[i] = seq_next(m, k->g);
        const int64_t own = seq[i];
        dup[i] = 0;
        if (k->key >= 0) {
            char kt[64];
            key_text(k->key, scope, k->g, kt, sizeof kt);
            mev *q = queued_holder(m, k->key, scope, k->g);
            mrec *r = record_holder(m, k->key, scope, k->g);
            if (q != NULL) {
                seq[i] = q->seq;
                dup[i] = 1;
                holders[nholders++] = q->seq;
                cover.dup_queued++;
                if (q->seq >= first) cover.dup_in_batch++; /* about: with partitions seqs interleave */
            } else if (r != NULL && r->expires_ms > now_ms) {
                seq[i] = r->seq;
                dup[i] = 1;
                cover.dup_record++;
            } else if (r != NULL) {
                /* dedup.expire: the record is past its window; the event goes in */
                say(m, " [the record %lld of %s expired at +%.3f: removed]", (long long)r->seq, kt,
                    shown_ms(r->expires_ms));
                record_remove(m, r);
                cover.expired_met++;
            }
            if (n > 1)
                cover.keyed_batch++;
            else
                cover.keyed_single++;
            if (scope == MQ_DEDUP_SCOPE_GROUP) cover.keyed_group_scope++;
        }
        if (dup[i]) {
            seq_take(m, k->g); /* the counter moved for it all the same */
            any = 1;
            continue;
        }
        mev *e = add_event(m, own, k->g, k->priority, k->bytes, k->len, k->nb);
        if (k->key >= 0) dedup_keyed(m, e, k->key);
    }
    /* publish.lock: each group from its first event that was added; then the group of
     * each queued holder (its own publish may have died before its lock). */
    for (int i = 0; i < n; i++)
        if (!dup[i]) publish_lock(m, evs[i].g, evs[i].priority, evs[i].nb > now ? evs[i].nb : now, seq[i]);
    for (int j = 0; j < nholders; j++) {
        const mev *h = find_ev(m, holders[j]);
        if (m->lock[h->group].exists) continue;
        lock_created(m, h->group, h->priority, h->not_before > h->published_at ? h->not_before : h->published_at,
                     h->seq);
        cover.dup_orphan_locks++;
        say(m, " [%s locked by the duplicate of %lld]", GROUP[h->group], (long long)h->seq);
    }
    return any;
}

static void set_opts(mq_publish_opts *o, const kev *k) {
    *o = (mq_publish_opts)MQ_PUBLISH_OPTS_INIT;
    o->priority = k->priority;
    o->not_before = k->nb;
    o->dedup_key = k->key >= 0 ? KEY[k->key] : NULL;
}

static void describe_kev(model *m, const kev *k) {
    char d[64];
    say(m, "%s/p%d %s", GROUP[k->g], k->priority, describe_bytes(k->bytes, k->len, d, sizeof d));
    if (k->nb > 0) say(m, " nb +%.2f", k->nb - MODEL_T0);
    if (k->key >= 0) say(m, " key '%s'", KEY[k->key]);
}

static double pick_not_before(model *m) {
    static const double offsets[] = {-4, 0, 1, 2.5, 7};
    return below(m, 4) == 0 ? now_of(m) + offsets[below(m, (int)(sizeof offsets / sizeof offsets[0]))] : 0;
}

/* The handle's scope and window, for the trace. */
static void say_handle(model *m) {
    say(m, " (h%d: %s scope, window %gs)", m->h, scope_name(m->scope[m->h]), m->window[m->h]);
}

/* A publish meant to meet a key of `scope` goes through the other handle when only
 * that one has the scope. */
static void use_scope(model *m, int scope) {
    if (m->scope[m->h] != scope && m->scope[1 - m->h] == scope) {
        m->h = 1 - m->h;
        say(m, " on h%d, whose scope it has", m->h);
    }
    say_handle(m);
}

/* mq_publish_with of k (the operation begun), against the model. */
static void publish_one(model *m, const kev *k) {
    mq_publish_opts o;
    set_opts(&o, k);
    mq_error err;
    int64_t got = 0;
    const int64_t first = seq_next(m, k->g);
    mq_status st = mq_publish_with(m->q[m->h], GROUP[k->g], k->bytes, k->len, &o, &got, &err);
    say(m, " -> %s seq %lld", mq_status_name(st), (long long)got);
    if (st != MQ_OK && st != MQ_DUPLICATE) expect_status(m, "mq_publish_with", st, MQ_OK, &err);
    int64_t seq;
    int dup;
    model_publish(m, k, 1, first, &seq, &dup);
    expect_status(m, "mq_publish_with", st, dup ? MQ_DUPLICATE : MQ_OK, &err);
    if (got != seq)
        mfail(m, "mq_publish_with gave seq %lld, the model %lld (%s)", (long long)got, (long long)seq,
              dup ? "the key's holder" : "the counter's next");
}

void op_publish_keyed(model *m) {
    kev k;
    k.g = below(m, m->ngroups);
    k.priority = below(m, 5);
    k.key = below(m, NKEYS);
    k.len = make_event(m, k.bytes);
    k.nb = pick_not_before(m);
    begin_op(m, "publish_with ");
    describe_kev(m, &k);
    say_handle(m);
    publish_one(m, &k);
    end_op(m);
}

/* mq_batch_outcome of every event against the model, and past the last one. */
static void check_outcomes(model *m, const mq_batch *batch, int n, const int64_t *seq, const int *dup) {
    mq_error err;
    for (int i = 0; i < n; i++) {
        int64_t got = -1;
        mq_status st = mq_batch_outcome(batch, (size_t)i, &got, &err);
        if (st != (dup[i] ? MQ_DUPLICATE : MQ_OK) || got != seq[i])
            mfail(m, "mq_batch_outcome(%d): %s seq %lld, the model says %s seq %lld%s%s", i, mq_status_name(st),
                  (long long)got, dup[i] ? "MQ_DUPLICATE" : "MQ_OK", (long long)seq[i], st < 0 ? ": " : "",
                  st < 0 ? err.message : "");
    }
    int64_t got = -1;
    mq_status st = mq_batch_outcome(batch, (size_t)n, &got, &err);
    expect_status(m, "mq_batch_outcome past the last event", st, MQ_ERR_ARG, &err);
}

/* mq_publish_batch of batch (the operation begun), against the model. */
static void publish_batch(model *m, const mq_batch *batch, const kev *evs, int n) {
    mq_error err;
    int64_t first = 0;
    mq_status st = mq_publish_batch(m->q[m->h], batch, &first, &err);
    say(m, " -> %s first seq %lld", mq_status_name(st), (long long)first);
    if (st != MQ_OK && st != MQ_DUPLICATE) expect_status(m, "mq_publish_batch", st, MQ_OK, &err);
    int64_t seq[5];
    int dup[5];
    int any = model_publish(m, evs, n, first, seq, dup);
    expect_status(m, "mq_publish_batch", st, any ? MQ_DUPLICATE : MQ_OK, &err);
    for (int i = 0; i < n && any; i++)
        if (dup[i]) say(m, " #%d dup of %lld", i, (long long)seq[i]);
    check_outcomes(m, batch, n, seq, dup);
}

/* A batch of 1..5 events, most of them keyed, some with the key (and the group) of an
 * earlier event of the batch; a third of the batches published again, as a retry
 * after an unknown outcome would (its keyed events then duplicates). */
void op_batch_keyed(model *m) {
    int n = 1 + below(m, 5);
    kev evs[5];
    for (int i = 0; i < n; i++) {
        kev *k = &evs[i];
        k->g = below(m, m->ngroups);
        k->priority = below(m, 5);
        k->key = below(m, 4) == 0 ? -1 : below(m, NKEYS);
        if (i > 0 && k->key >= 0 && below(m, 3) == 0) {
            const kev *earlier = &evs[below(m, i)];
            if (earlier->key >= 0) k->key = earlier->key;
            if (below(m, 2)) k->g = earlier->g; /* the same key in group scope too */
        }
        k->len = make_event(m, k->bytes);
        k->nb = pick_not_before(m);
    }
    mq_error err;
    begin_op(m, "publish_batch keyed [");
    if (mq_batch_new(&m->batch, &err) != MQ_OK) mfail(m, "mq_batch_new: %s", err.message);
    mq_batch *batch = m->batch; /* destroyed by the runner if the sequence fails */
    for (int i = 0; i < n; i++) {
        say(m, i ? ", " : "");
        describe_kev(m, &evs[i]);
        mq_publish_opts o;
        set_opts(&o, &evs[i]);
        mq_status st = evs[i].key < 0 && evs[i].nb == 0
                           ? mq_batch_add(batch, GROUP[evs[i].g], evs[i].bytes, evs[i].len, evs[i].priority, &err)
                           : mq_batch_add_with(batch, GROUP[evs[i].g], evs[i].bytes, evs[i].len, &o, &err);
        if (st != MQ_OK) mfail(m, "mq_batch_add_with: %s", err.message);
    }
    say(m, "]");
    say_handle(m);
    int64_t unused = -1;
    mq_status st = mq_batch_outcome(batch, 0, &unused, &err);
    if (st != MQ_ERR_ARG)
        mfail(m, "mq_batch_outcome of a batch not yet published returned %s, not MQ_ERR_ARG", mq_status_name(st));
    publish_batch(m, batch, evs, n);
    if (below(m, 3) == 0) {
        say(m, "; again");
        cover.batch_again++;
        publish_batch(m, batch, evs, n);
    }
    mq_batch_destroy(batch);
    m->batch = NULL;
    end_op(m);
}

/* ---- the orphan of a keyed publish (op_repair) ---- */

int dedup_orphan_key(model *m, int g) {
    if (below(m, 2)) return -1;
    const int scope = m->scope[m->h], start = below(m, NKEYS);
    for (int i = 0; i < NKEYS; i++) {
        int key = (start + i) % NKEYS;
        if (queued_holder(m, key, scope, g) == NULL && record_holder(m, key, scope, g) == NULL) return key;
    }
    return -1;
}

mq_status dedup_publish(model *m, int g, const unsigned char *bytes, size_t len, int priority, int key, int64_t *seq,
                        mq_error *err) {
    if (key < 0) return mq_publish(m->q[m->h], GROUP[g], bytes, len, priority, seq, err);
    say(m, " key '%s'", KEY[key]);
    say_handle(m);
    mq_publish_opts o = MQ_PUBLISH_OPTS_INIT;
    o.priority = priority;
    o.dedup_key = KEY[key];
    cover.keyed_single++;
    if (m->scope[m->h] == MQ_DEDUP_SCOPE_GROUP) cover.keyed_group_scope++;
    return mq_publish_with(m->q[m->h], GROUP[g], bytes, len, &o, seq, err);
}

void dedup_orphan_duplicate(model *m, const mev *orphan) {
    kev k;
    const int scope = orphan->key_scope;
    /* a retry of the orphan's publish, or another publisher's with the same key: in
     * queue scope from any group */
    k.g = scope == MQ_DEDUP_SCOPE_GROUP ? orphan->group : below(m, m->ngroups);
    k.priority = below(m, 5);
    k.key = orphan->key;
    k.len = make_event(m, k.bytes);
    k.nb = 0;
    begin_op(m, "publish_with ");
    describe_kev(m, &k);
    say(m, " (the orphan %lld's key)", (long long)orphan->seq);
    use_scope(m, scope);
    publish_one(m, &k);
    end_op(m);
}

/* The fake clock moved to exactly the next dedup deadline (a keyed event's
 * dedup_until, a record's dedup_expires), or just past it: an ack, a dead letter or a
 * publish at the deadline itself finds the key free (the window is over at its end).
 * Half the time the next record's deadline; when the deadline is a record's, half the
 * time a publish with its key follows. */
void op_dedup_clock(model *m) {
    const int64_t now_ms = ms_of(now_of(m));
    int64_t next = INT64_MAX;
    int rec = -1;
    const int records_only = below(m, 2); /* else the events' deadlines too */
    for (int i = 0; i < m->nev && !records_only; i++)
        if (m->ev[i].state == EV_LIVE && m->ev[i].keyed && m->ev[i].until_ms > now_ms && m->ev[i].until_ms < next)
            next = m->ev[i].until_ms;
    for (int i = 0; i < m->nrec; i++)
        if (m->rec[i].expires_ms > now_ms && m->rec[i].expires_ms < next) {
            next = m->rec[i].expires_ms;
            rec = i;
        }
    if (next == INT64_MAX || next - now_ms > 40000) {
        begin_op(m, "clock to the next dedup deadline%s: none within 40 s", records_only ? " of a record" : "");
        end_op(m);
        return;
    }
    const double by = (double)(next - now_ms) / 1000.0 + (below(m, 3) == 0 ? 0.25 : 0);
    tq_advance(m->t, by);
    begin_op(m, "clock +%g -> t=+%.2f (the dedup deadline +%.3f%s)", by, now_of(m) - MODEL_T0, shown_ms(next),
             ms_of(now_of(m)) == next ? "" : " and a little");
    end_op(m);
    if (rec < 0 || below(m, 2)) return;
    const mrec r = m->rec[rec];
    kev k;
    k.g = r.group >= 0 ? r.group : below(m, m->ngroups);
    k.priority = below(m, 5);
    k.key = r.key;
    k.len = make_event(m, k.bytes);
    k.nb = 0;
    begin_op(m, "publish_with ");
    describe_kev(m, &k);
    say(m, " (record %lld's key, now past its window)", (long long)r.seq);
    use_scope(m, r.scope);
    publish_one(m, &k);
    end_op(m);
}

/* ---- windows and scopes ---- */

/* 2..30 s, so that the fake clock's steps (a sequence of 60 steps moves it by about
 * 30 s) cross it; now and then the default (300 s), which they do not. */
static double pick_window(model *m) { return below(m, 8) == 0 ? MQ_DEDUP_WINDOW_DEFAULT : 2 + below(m, 29); }

void dedup_setup(model *m) {
    /* Both handles in queue scope (as most queues are), both in group scope, or one of
     * each (whose keys never meet). */
    int r = below(m, 10), mixed = below(m, 2);
    for (int h = 0; h < 2; h++) {
        m->scope[h] = r < 5 ? MQ_DEDUP_SCOPE_QUEUE : r < 7 ? MQ_DEDUP_SCOPE_GROUP : (h == mixed);
        m->window[h] = pick_window(m);
        mq_error err;
        mq_status st = mq_queue_set_dedup_window(m->q[h], m->window[h], &err);
        snprintf(m->cur, LINE, "handle %d: set_dedup_window %g -> %s", h, m->window[h], mq_status_name(st));
        end_op(m);
        expect_status(m, "mq_queue_set_dedup_window", st, MQ_OK, &err);
        st = mq_queue_set_dedup_scope(m->q[h], (mq_dedup_scope)m->scope[h], &err);
        snprintf(m->cur, LINE, "handle %d: set_dedup_scope %s -> %s", h, scope_name(m->scope[h]), mq_status_name(st));
        end_op(m);
        expect_status(m, "mq_queue_set_dedup_scope", st, MQ_OK, &err);
    }
}

/* A handle's window or scope changed mid-sequence: events keep the window they were
 * published with, keys keep their scope. */
void op_dedup_config(model *m) {
    mq_error err;
    mq_status st;
    if (below(m, 2)) {
        double w = pick_window(m);
        begin_op(m, "set_dedup_window %g (was %g)", w, m->window[m->h]);
        st = mq_queue_set_dedup_window(m->q[m->h], w, &err);
        say(m, " -> %s", mq_status_name(st));
        expect_status(m, "mq_queue_set_dedup_window", st, MQ_OK, &err);
        m->window[m->h] = w;
    } else {
        begin_op(m, "set_dedup_scope");
        int s = m->scope[m->h] == MQ_DEDUP_SCOPE_GROUP ? MQ_DEDUP_SCOPE_QUEUE : MQ_DEDUP_SCOPE_GROUP;
        say(m, " %s (was %s)", scope_name(s), scope_name(m->scope[m->h]));
        st = mq_queue_set_dedup_scope(m->q[m->h], (mq_dedup_scope)s, &err);
        say(m, " -> %s", mq_status_name(st));
        expect_status(m, "mq_queue_set_dedup_scope", st, MQ_OK, &err);
        m->scope[m->h] = s;
    }
    cover.dedup_changes++;
    end_op(m);
}

/* ---- the check after every step ---- */

/* A keyed document or record of the messages, read whole before anything is compared. */
typedef struct kdoc {
    int64_t seq;
    int has_group;
    int fields;
    int key_kind; /* 0: no dedup_key, 1: a string, 2: {group, key}, 3: anything else */
    char key[64];
    char key_group[16];
    int has_until, has_expires;
    int64_t until_ms, expires_ms;
} kdoc;

static void parse_kdoc(const bson_t *doc, kdoc *out) {
    memset(out, 0, sizeof *out);
    out->seq = -1;
    bson_iter_t it;
    if (!bson_iter_init(&it, doc)) return;
    while (bson_iter_next(&it)) {
        const char *f = bson_iter_key(&it);
        out->fields++;
        if (strcmp(f, "_id") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
            out->seq = bson_iter_as_int64(&it);
        } else if (strcmp(f, "group_id") == 0) {
            out->has_group = 1;
        } else if (strcmp(f, "dedup_until") == 0 && BSON_ITER_HOLDS_DATE_TIME(&it)) {
            out->has_until = 1;
            out->until_ms = bson_iter_date_time(&it);
        } else if (strcmp(f, "dedup_expires") == 0 && BSON_ITER_HOLDS_DATE_TIME(&it)) {
            out->has_expires = 1;
            out->expires_ms = bson_iter_date_time(&it);
        } else if (strcmp(f, "dedup_key") == 0) {
            out->key_kind = 3;
            bson_iter_t sub;
            if (BSON_ITER_HOLDS_UTF8(&it)) {
                out->key_kind = 1;
                snprintf(out->key, sizeof out->key, "%s", bson_iter_utf8(&it, NULL));
            } else if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &sub)) {
                int parts = 0, n = 0;
                while (bson_iter_next(&sub)) {
                    n++;
                    if (!BSON_ITER_HOLDS_UTF8(&sub)) continue;
                    if (strcmp(bson_iter_key(&sub), "group") == 0 && n == 1) {
                        snprintf(out->key_group, sizeof out->key_group, "%s", bson_iter_utf8(&sub, NULL));
                        parts++;
                    } else if (strcmp(bson_iter_key(&sub), "key") == 0 && n == 2) {
                        snprintf(out->key, sizeof out->key, "%s", bson_iter_utf8(&sub, NULL));
                        parts++;
                    }
                }
                if (parts == 2 && n == 2) out->key_kind = 2;
            }
        }
    }
}

/* Whether the stored key is the model's key, scope and group. */
static int same_key(const kdoc *d, int key, int scope, int g) {
    if (scope == MQ_DEDUP_SCOPE_GROUP)
        return d->key_kind == 2 && strcmp(d->key, KEY[key]) == 0 && strcmp(d->key_group, GROUP[g]) == 0;
    return d->key_kind == 1 && strcmp(d->key, KEY[key]) == 0;
}

static const char *stored_key(const kdoc *d, char *out, size_t size) {
    switch (d->key_kind) {
        case 0:
            return "none";
        case 1:
            snprintf(out, size, "'%s'", d->key);
            return out;
        case 2:
            snprintf(out, size, "{%s, '%s'}", d->key_group, d->key);
            return out;
        default:
            return "neither a string nor {group, key}";
    }
}

/* Every document of the messages without a group_id (a record) or with a dedup_key (a
 * keyed event) against the model: a record is the model's, with its key and expiry
 * and nothing else; a keyed event is a queued event of the model with its key and
 * dedup_until (an event without a key in the model carries none). And nothing the
 * model holds is missing. check_messages has checked the events themselves. */
void check_dedup(model *m) {
    mongoc_collection_t *coll;
    bson_t *filter = BCON_NEW("$or", "[", "{", "group_id", "{", "$exists", BCON_BOOL(false), "}", "}", "{", "dedup_key",
                              "{", "$exists", BCON_BOOL(true), "}", "}", "]");
    mongoc_cursor_t *cursor = raw_find(m, "messages", filter, 1, &coll);
    const bson_t *doc;
    kdoc docs[MAX_REC];
    int n = 0, over = 0;
    while (mongoc_cursor_next(cursor, &doc)) {
        if (n == MAX_REC)
            over = 1;
        else
            parse_kdoc(doc, &docs[n++]);
    }
    raw_done(m, cursor, coll, filter, "the keyed messages");
    if (over) mfail(m, "the messages hold more than %d keyed documents and records", MAX_REC);

    int records = 0, keyed = 0;
    for (int i = 0; i < n; i++) {
        const kdoc *d = &docs[i];
        char k1[160], k2[64], t[32];
        if (!d->has_group) {
            const mrec *r = record_of(m, d->seq);
            if (r == NULL) {
                const mev *e = find_ev(m, d->seq);
                mfail(m, "a record %lld (key %s) is in the messages, the model has none (the event is %s%s)",
                      (long long)d->seq, stored_key(d, k1, sizeof k1), e ? EV_STATE[e->state] : "never published",
                      e && !e->keyed ? " and has no key" : "");
            }
            if (!same_key(d, r->key, r->scope, r->group))
                mfail(m, "record %lld holds key %s, the model's %s", (long long)d->seq, stored_key(d, k1, sizeof k1),
                      key_text(r->key, r->scope, r->group, k2, sizeof k2));
            if (!d->has_expires || d->expires_ms != r->expires_ms)
                mfail(m, "record %lld: dedup_expires %s, the model's +%.3f%s", (long long)d->seq,
                      shown_time(d->has_expires, d->expires_ms, t, sizeof t), shown_ms(r->expires_ms),
                      d->has_until ? " (it has a dedup_until)" : "");
            if (d->fields != 3)
                mfail(m, "record %lld has %d fields, not its _id, dedup_key and dedup_expires only", (long long)d->seq,
                      d->fields);
            records++;
            continue;
        }
        const mev *e = find_ev(m, d->seq);
        if (e == NULL || e->state != EV_LIVE || !e->keyed)
            mfail(m, "event %lld carries dedup_key %s, the model has it %s%s", (long long)d->seq,
                  stored_key(d, k1, sizeof k1), e ? EV_STATE[e->state] : "never published",
                  e && !e->keyed ? " and without a key" : "");
        if (!same_key(d, e->key, e->key_scope, e->group))
            mfail(m, "event %lld carries key %s, the model's %s", (long long)d->seq, stored_key(d, k1, sizeof k1),
                  key_text(e->key, e->key_scope, e->group, k2, sizeof k2));
        if (!d->has_until || d->until_ms != e->until_ms || d->has_expires)
            mfail(m, "event %lld: dedup_until %s%s, the model's +%.3f (its publish + the window)", (long long)d->seq,
                  shown_time(d->has_until, d->until_ms, t, sizeof t), d->has_expires ? " and a dedup_expires" : "",
                  shown_ms(e->until_ms));
        keyed++;
    }
    int want_keyed = 0;
    for (int i = 0; i < m->nev; i++) want_keyed += m->ev[i].state == EV_LIVE && m->ev[i].keyed;
    if (records == m->nrec && keyed == want_keyed) return;
    for (int i = 0; i < m->nrec; i++) {
        const mrec *r = &m->rec[i];
        int found = 0;
        for (int j = 0; j < n && !found; j++) found = docs[j].seq == r->seq && !docs[j].has_group;
        char k[64];
        if (!found)
            mfail(m, "the model's record %lld of key %s (until +%.3f) is not in the messages", (long long)r->seq,
                  key_text(r->key, r->scope, r->group, k, sizeof k), shown_ms(r->expires_ms));
    }
    for (int i = 0; i < m->nev; i++) {
        const mev *e = &m->ev[i];
        if (e->state != EV_LIVE || !e->keyed) continue;
        int found = 0;
        for (int j = 0; j < n && !found; j++) found = docs[j].seq == e->seq && docs[j].has_group;
        char k[64];
        if (!found)
            mfail(m, "event %lld (%s) is in the messages without its dedup_key %s", (long long)e->seq, GROUP[e->group],
                  key_text(e->key, e->key_scope, e->group, k, sizeof k));
    }
    mfail(m, "the messages hold %d records and %d keyed events, the model %d and %d", records, keyed, m->nrec,
          want_keyed);
}

/* ---- the failure report and the run's summary ---- */

void dump_dedup(model *m) {
    printf("  dedup: handle 0 %s scope, window %gs; handle 1 %s scope, window %gs\n", scope_name(m->scope[0]),
           m->window[0], scope_name(m->scope[1]), m->window[1]);
    printf("    keyed events:");
    char k[64];
    for (int i = 0; i < m->nev; i++) {
        const mev *e = &m->ev[i];
        if (e->state != EV_LIVE || !e->keyed) continue;
        printf(" %lld %s until +%.3f;", (long long)e->seq, key_text(e->key, e->key_scope, e->group, k, sizeof k),
               shown_ms(e->until_ms));
    }
    printf("\n    records:");
    for (int i = 0; i < m->nrec; i++) {
        const mrec *r = &m->rec[i];
        printf(" %lld %s until +%.3f;", (long long)r->seq, key_text(r->key, r->scope, r->group, k, sizeof k),
               shown_ms(r->expires_ms));
    }
    printf("\n");
}

void print_dedup_cover(void) {
    printf(
        "[model] dedup: %ld keyed publishes and %ld keyed batch events (%ld in group scope), %ld duplicates of a "
        "queued event (%ld of an earlier event of the batch), %ld of a record, %ld batches published again; "
        "records made by %ld acks and %ld dead letters, %ld keyed events acked or dead past their window, %ld "
        "purged; %ld expired records met by a publish, %ld orphans locked by a duplicate, %ld windows and scopes "
        "changed\n",
        cover.keyed_single, cover.keyed_batch, cover.keyed_group_scope, cover.dup_queued, cover.dup_in_batch,
        cover.dup_record, cover.batch_again, cover.rec_by_ack, cover.rec_by_dead, cover.keyed_past_window,
        cover.keyed_purged, cover.expired_met, cover.dup_orphan_locks, cover.dedup_changes);
}
