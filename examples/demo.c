/*
 * demo.c — libmongomq in one screen: per-group FIFO with competing workers.
 *
 *   MONGOMQ_URI=mongodb://127.0.0.1:27017 ./demo
 *
 * Publishes DEMO_EVENTS events round-robin over DEMO_GROUPS groups ("order-00" ..
 * "order-29", priority = group index % 5; each event a small JSON text
 * {"group":"order-07","n":3}), and one scheduled event (mq_publish_at) in a group of
 * its own, "reminder", due DEMO_SCHEDULE_S seconds later. Then DEMO_WORKERS threads
 * drain the queue through one shared client and queue handle, waiting in
 * mq_claim_wait while nothing is due. About one delivery in 20 is nacked (delay 0)
 * instead of acked, to show redelivery of the same head. Once every event is acked,
 * the main thread calls mq_queue_interrupt: every worker's mq_claim_wait returns
 * MQ_INTERRUPTED and the worker ends.
 *
 * At the end it prints every group's processing order and checks that, within each
 * group, the n values were processed strictly in publish order (1, 2, 3, ...), that
 * every event was processed exactly once, that the scheduled event was not delivered
 * before its time, and, with mq_stats_json, that nothing is left in the queue.
 *
 * Exit status: 0 on success, 1 on an error or a failed check, 2 on usage.
 *
 * The queue lives in the database "mongomq_demo" under a prefix made from the time
 * and the pid, so reruns against the same server never see each other's events.
 */
#define _POSIX_C_SOURCE 200809L

#include <mongomq.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEMO_GROUPS 30
#define DEMO_PER_GROUP 10
#define DEMO_EVENTS (DEMO_GROUPS * DEMO_PER_GROUP)
#define DEMO_WORKERS 4
#define DEMO_VISIBILITY_S 30.0
#define DEMO_NACK_ONE_IN 20
#define DEMO_MAX_NACKS_PER_HEAD 2 /* never nack a head delivered this often */
#define DEMO_WAIT_S 0.5           /* mq_claim_wait's timeout */
#define DEMO_SCHEDULE_S 0.4       /* the scheduled event is due this long after its publish */
#define DEMO_SCHEDULED_GROUP "reminder"
#define DEMO_STALL_S 60.0 /* give up when nothing is acked for this long */

/* One processed (acked) delivery. */
typedef struct {
    int64_t seq;
    int n;
    int worker;   /* 1..DEMO_WORKERS */
    int attempts; /* delivery attempt that got acked */
} demo_entry;

typedef struct {
    char name[32];
    int priority;
    demo_entry log[DEMO_EVENTS]; /* generous: a duplicate would still fit */
    int count;
    unsigned workers_mask;
} demo_group;

/* The scheduled event: when it was due, and its deliveries. */
typedef struct {
    int64_t seq;
    double published_at; /* queue clock (wall clock + mq_queue_clock_offset) */
    double not_before;   /* queue clock */
    int delivered;       /* deliveries; must end as 1 */
    int early;           /* deliveries before not_before; must be 0 */
    double first_at;     /* queue clock of the first delivery */
    int worker;
} demo_scheduled;

typedef struct {
    mq_queue *queue;
    demo_group groups[DEMO_GROUPS];
    int published; /* every event, the scheduled one included */

    pthread_mutex_t mu; /* guards everything below and groups[].log/count/mask */
    pthread_cond_t cv;  /* signalled on every ack and on a failure */
    int acked;
    int nacked;
    int redelivered; /* deliveries with attempts > 1 */
    int empty_waits; /* mq_claim_wait that timed out */
    int failed;      /* set once; the main thread stops the workers */
    double last_progress;
    double orders_done; /* now_mono() when the last order event was acked; 0 until then */
    int orders_acked;
    demo_scheduled sched;
} demo_state;

typedef struct {
    demo_state *st;
    int index; /* 1..DEMO_WORKERS */
    char worker_id[48];
} demo_worker;

static double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The queue's clock: this machine's wall clock plus the offset to the server's. */
static double queue_now(const mq_queue *queue) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + mq_queue_clock_offset(queue);
}

/* libmongoc's log: warnings and worse only. */
static void demo_log(int level, const char *domain, const char *message, void *ctx) {
    (void)ctx;
    if (level <= 2) fprintf(stderr, "libmongoc: [%s] %s\n", domain ? domain : "?", message ? message : "");
}

static void report_error(const char *what, mq_status st, const mq_error *err) {
    fflush(stdout);
    fprintf(stderr, "demo: %s failed: %s: %s\n", what, mq_status_name(st),
            err && err->message[0] ? err->message : "(no message)");
}

/* Called with s->mu held: marks the run failed and wakes the main thread. */
static void set_failed_locked(demo_state *s) {
    s->failed = 1;
    pthread_cond_broadcast(&s->cv);
}

static void fail(demo_state *s, const char *what, mq_status st, const mq_error *err) {
    pthread_mutex_lock(&s->mu);
    report_error(what, st, err);
    set_failed_locked(s);
    pthread_mutex_unlock(&s->mu);
}

/* Small per-thread PRNG (xorshift32); deterministic per worker. */
static uint32_t xorshift32(uint32_t *x) {
    uint32_t v = *x;
    v ^= v << 13;
    v ^= v >> 17;
    v ^= v << 5;
    *x = v;
    return v;
}

/* Parses {"group":"NAME","n":N} (the exact form this program publishes). */
static int parse_event(const void *data, size_t len, char *group, size_t group_cap, int *n) {
    char buf[128];
    const char *g, *end, *np;
    if (data == NULL || len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    g = strstr(buf, "\"group\":\"");
    if (g == NULL) return -1;
    g += strlen("\"group\":\"");
    end = strchr(g, '"');
    if (end == NULL || (size_t)(end - g) >= group_cap) return -1;
    memcpy(group, g, (size_t)(end - g));
    group[end - g] = '\0';
    np = strstr(end, "\"n\":");
    if (np == NULL || sscanf(np + 4, "%d", n) != 1) return -1;
    return 0;
}

static int group_index(const demo_state *s, const char *name) {
    int i;
    for (i = 0; i < DEMO_GROUPS; i++)
        if (strcmp(s->groups[i].name, name) == 0) return i;
    return -1;
}

/* The integer value of `key` at the top level of a JSON object (not inside a nested
 * object: mq_stats_json's "priorities" repeat "messages"). 0 if found. Enough for the
 * stats' compact text; not a general JSON parser. */
static int json_top_level_int(const char *json, const char *key, long long *out) {
    size_t klen = strlen(key);
    int depth = 0;
    const char *p;
    for (p = json; *p != '\0'; p++) {
        if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            depth--;
        } else if (*p == '"') {
            const char *start = p + 1;
            for (p = start; *p != '\0' && *p != '"'; p++)
                if (*p == '\\' && p[1] != '\0') p++;
            if (*p == '\0') return -1;
            if (depth == 1 && (size_t)(p - start) == klen && strncmp(start, key, klen) == 0 && p[1] == ':')
                return sscanf(p + 2, "%lld", out) == 1 ? 0 : -1;
        }
    }
    return -1;
}

/* The scheduled event: checked against its time, then acked. */
static int process_scheduled(demo_worker *w, mq_lease *lease) {
    demo_state *s = w->st;
    double at = queue_now(s->queue);
    mq_error err;
    mq_status st;

    pthread_mutex_lock(&s->mu);
    if (s->sched.delivered++ == 0) {
        s->sched.first_at = at;
        s->sched.worker = w->index;
    }
    if (at < s->sched.not_before) s->sched.early++;
    pthread_mutex_unlock(&s->mu);

    st = mq_ack(s->queue, lease, &err);
    if (st != MQ_OK) {
        fail(s, "mq_ack (scheduled event)", st, &err);
        return -1;
    }
    return 0;
}

/* An order event: nacked now and then, else logged (while the lease is held) and
 * acked. 1 when it was acked, 0 nacked, -1 on an error. */
static int process_order(demo_worker *w, mq_lease *lease, uint32_t *rng) {
    demo_state *s = w->st;
    mq_error err;
    mq_status st;
    char group[64];
    int n = 0, gi = -1, attempts = mq_lease_attempts(lease);
    size_t ev_len = 0;
    const void *ev = mq_lease_event(lease, &ev_len);

    if (parse_event(ev, ev_len, group, sizeof group, &n) != 0 || strcmp(group, mq_lease_group(lease)) != 0 ||
        (gi = group_index(s, group)) < 0) {
        pthread_mutex_lock(&s->mu);
        fprintf(stderr, "demo: unexpected event %.*s in group %s\n", (int)ev_len, (const char *)ev,
                mq_lease_group(lease));
        set_failed_locked(s);
        pthread_mutex_unlock(&s->mu);
        return -1;
    }

    if (attempts > 1) {
        pthread_mutex_lock(&s->mu);
        s->redelivered++;
        pthread_mutex_unlock(&s->mu);
    }

    if (attempts <= DEMO_MAX_NACKS_PER_HEAD && xorshift32(rng) % DEMO_NACK_ONE_IN == 0) {
        st = mq_nack(s->queue, lease, 0.0, &err);
        if (st != MQ_OK) {
            fail(s, "mq_nack", st, &err);
            return -1;
        }
        pthread_mutex_lock(&s->mu);
        s->nacked++;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }

    /* Record while the lease is still held: no other worker can be inside this
     * group now, so the log's order is the group's processing order. */
    pthread_mutex_lock(&s->mu);
    {
        demo_group *g = &s->groups[gi];
        if (g->count < DEMO_EVENTS) {
            demo_entry *e = &g->log[g->count++];
            e->seq = mq_lease_seq(lease);
            e->n = n;
            e->worker = w->index;
            e->attempts = attempts;
        }
        g->workers_mask |= 1u << w->index;
    }
    pthread_mutex_unlock(&s->mu);

    st = mq_ack(s->queue, lease, &err);
    if (st != MQ_OK) {
        fail(s, "mq_ack", st, &err);
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    if (++s->orders_acked == DEMO_EVENTS) s->orders_done = now_mono();
    pthread_mutex_unlock(&s->mu);
    return 1;
}

/* Claims (waiting up to DEMO_WAIT_S while nothing is due) until the main thread
 * interrupts the queue. */
static void *worker_main(void *arg) {
    demo_worker *w = (demo_worker *)arg;
    demo_state *s = w->st;
    uint32_t rng = 0x9E3779B9u * (uint32_t)w->index;

    for (;;) {
        mq_lease *lease = NULL;
        mq_error err;
        mq_status st;
        int r;

        st = mq_claim_wait(s->queue, w->worker_id, DEMO_VISIBILITY_S, 0, DEMO_WAIT_S, &lease, &err);
        if (st == MQ_INTERRUPTED) break; /* the main thread is done with us */
        if (st == MQ_EMPTY) {
            pthread_mutex_lock(&s->mu);
            s->empty_waits++;
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        if (st != MQ_OK) {
            fail(s, "mq_claim_wait", st, &err);
            break;
        }

        if (strcmp(mq_lease_group(lease), DEMO_SCHEDULED_GROUP) == 0)
            r = process_scheduled(w, lease) == 0 ? 1 : -1;
        else
            r = process_order(w, lease, &rng);
        mq_lease_destroy(lease);
        if (r < 0) break;
        if (r > 0) {
            pthread_mutex_lock(&s->mu);
            s->acked++;
            s->last_progress = now_mono();
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
        }
    }
    return NULL;
}

/* The main thread: sleeps until every event is acked, a worker failed, or nothing
 * was acked for DEMO_STALL_S. 0 when every event was acked. */
static int wait_until_drained(demo_state *s) {
    int rc;
    pthread_mutex_lock(&s->mu);
    while (!s->failed && s->acked < s->published) {
        double deadline = s->last_progress + DEMO_STALL_S;
        double now = now_mono();
        struct timespec ts;
        if (now >= deadline) {
            fprintf(stderr, "demo: no progress for %.0f s with %d of %d events acked\n", DEMO_STALL_S, s->acked,
                    s->published);
            s->failed = 1;
            break;
        }
        ts.tv_sec = (time_t)deadline;
        ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    rc = s->failed ? -1 : 0;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The condition variable times out on CLOCK_MONOTONIC, as now_mono. */
static int init_sync(demo_state *s) {
    pthread_condattr_t ca;
    int ok;
    if (pthread_mutex_init(&s->mu, NULL) != 0) return -1;
    if (pthread_condattr_init(&ca) != 0) return -1;
    ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&s->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    return ok ? 0 : -1;
}

int main(void) {
    static demo_state s; /* large: keep it off the stack */
    demo_worker workers[DEMO_WORKERS];
    pthread_t threads[DEMO_WORKERS];
    const char *uri = getenv("MONGOMQ_URI");
    char prefix[64];
    mq_client *client = NULL;
    mq_error err;
    mq_status st;
    char *stats = NULL;
    long long left = -1;
    double t0, t_pub, t_drain, t_orders, t_end;
    int i, started = 0, rc = 0, violations = 0, miscounts = 0, total_logged = 0;
    int sched_ok = 0;

    if (uri == NULL || uri[0] == '\0') {
        fprintf(stderr,
                "usage: MONGOMQ_URI=mongodb://host:port demo\n"
                "  Publishes %d events over %d groups and one scheduled event to a fresh\n"
                "  queue in the database \"mongomq_demo\", drains them with %d worker threads\n"
                "  and checks per-group FIFO order. (scripts/test-server.sh start prints a URI.)\n",
                DEMO_EVENTS, DEMO_GROUPS, DEMO_WORKERS);
        return 2;
    }

    mq_log_set_handler(demo_log, NULL);
    if (init_sync(&s) != 0) {
        fprintf(stderr, "demo: pthread mutex/condition init failed\n");
        return 1;
    }

    printf("libmongomq %s (header %d.%d.%d)\n", mq_version(), MQ_VERSION_MAJOR, MQ_VERSION_MINOR, MQ_VERSION_PATCH);

    st = mq_client_new(uri, &client, &err);
    if (st != MQ_OK) {
        report_error("mq_client_new", st, &err);
        return 1;
    }
    snprintf(prefix, sizeof prefix, "demo_%ld_%ld", (long)time(NULL), (long)getpid());
    st = mq_queue_new(client, "mongomq_demo", prefix, &s.queue, &err);
    if (st != MQ_OK) {
        report_error("mq_queue_new", st, &err);
        mq_client_destroy(client);
        return 1;
    }
    printf("queue: mongomq_demo.%s_* (server clock offset %+.3f s)\n", prefix, mq_queue_clock_offset(s.queue));

    for (i = 0; i < DEMO_GROUPS; i++) {
        snprintf(s.groups[i].name, sizeof s.groups[i].name, "order-%02d", i);
        s.groups[i].priority = i % (MQ_PRIORITY_MAX + 1);
    }

    /* Publish round-robin so the groups interleave: event k of group g is n = k+1. */
    t0 = now_mono();
    for (i = 0; i < DEMO_EVENTS; i++) {
        demo_group *g = &s.groups[i % DEMO_GROUPS];
        int n = i / DEMO_GROUPS + 1;
        char ev[96];
        int len = snprintf(ev, sizeof ev, "{\"group\":\"%s\",\"n\":%d}", g->name, n);
        int64_t seq = 0;
        st = mq_publish(s.queue, g->name, ev, (size_t)len, g->priority, &seq, &err);
        if (st != MQ_OK) {
            report_error("mq_publish", st, &err);
            mq_queue_destroy(s.queue);
            mq_client_destroy(client);
            return 1;
        }
        s.published++;
    }
    t_pub = now_mono();
    printf("published %d events over %d groups in %.2f s\n", s.published, DEMO_GROUPS, t_pub - t0);

    /* One scheduled event, in a group of its own: not delivered before its time. */
    {
        const char *ev = "{\"remind\":\"follow up\"}";
        s.sched.published_at = queue_now(s.queue);
        s.sched.not_before = s.sched.published_at + DEMO_SCHEDULE_S;
        st = mq_publish_at(s.queue, DEMO_SCHEDULED_GROUP, ev, strlen(ev), 0, s.sched.not_before, &s.sched.seq, &err);
        if (st != MQ_OK) {
            report_error("mq_publish_at", st, &err);
            mq_queue_destroy(s.queue);
            mq_client_destroy(client);
            return 1;
        }
        s.published++;
        printf("scheduled 1 event: group %s seq %lld, not before %.3f (queue clock, +%.1f s)\n", DEMO_SCHEDULED_GROUP,
               (long long)s.sched.seq, s.sched.not_before, DEMO_SCHEDULE_S);
    }

    t_drain = s.last_progress = now_mono();
    for (i = 0; i < DEMO_WORKERS; i++) {
        workers[i].st = &s;
        workers[i].index = i + 1;
        snprintf(workers[i].worker_id, sizeof workers[i].worker_id, "demo-worker-%d", i + 1);
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "demo: pthread_create failed\n");
            pthread_mutex_lock(&s.mu);
            s.failed = 1;
            pthread_mutex_unlock(&s.mu);
            break;
        }
        started++;
    }
    if (started == DEMO_WORKERS) wait_until_drained(&s);
    t_end = now_mono();
    /* Every event is acked (or the run failed): wake the waiting workers. */
    mq_queue_interrupt(s.queue);
    for (i = 0; i < started; i++) pthread_join(threads[i], NULL);

    /* Per-group order; "7(a2)" means n=7 was acked on its 2nd delivery. */
    printf("\nprocessing order per group (n values; (aK) = acked on delivery K):\n");
    for (i = 0; i < DEMO_GROUPS; i++) {
        demo_group *g = &s.groups[i];
        int k, w, first = 1;
        printf("%s [p%d]:", g->name, g->priority);
        for (k = 0; k < g->count; k++) {
            if (g->log[k].attempts > 1)
                printf(" %d(a%d)", g->log[k].n, g->log[k].attempts);
            else
                printf(" %d", g->log[k].n);
        }
        printf(" (workers: ");
        for (w = 1; w <= DEMO_WORKERS; w++) {
            if (g->workers_mask & (1u << w)) {
                printf("%s%d", first ? "" : ",", w);
                first = 0;
            }
        }
        printf(")\n");
    }

    /* FIFO: within a group, n goes 1, 2, 3, ... DEMO_PER_GROUP, and seq increases. */
    for (i = 0; i < DEMO_GROUPS; i++) {
        demo_group *g = &s.groups[i];
        int k;
        total_logged += g->count;
        for (k = 0; k < g->count; k++) {
            if (g->log[k].n != k + 1) {
                if (violations++ < 10)
                    printf("FIFO violation: %s position %d has n=%d (expected %d)\n", g->name, k + 1, g->log[k].n,
                           k + 1);
                break;
            }
            if (k > 0 && g->log[k].seq <= g->log[k - 1].seq) {
                if (violations++ < 10)
                    printf("FIFO violation: %s seq %lld after seq %lld\n", g->name, (long long)g->log[k].seq,
                           (long long)g->log[k - 1].seq);
                break;
            }
        }
        if (g->count != DEMO_PER_GROUP) {
            if (miscounts++ < 10)
                printf("count mismatch: %s processed %d events (expected %d)\n", g->name, g->count, DEMO_PER_GROUP);
        }
    }

    /* The scheduled event: delivered once, never before its time. */
    sched_ok = s.sched.delivered == 1 && s.sched.early == 0;
    if (s.sched.delivered > 0)
        printf(
            "\nscheduled event %s seq %lld: delivered %.3f s after its publish, %.3f s after "
            "its time (worker %d)%s\n",
            DEMO_SCHEDULED_GROUP, (long long)s.sched.seq, s.sched.first_at - s.sched.published_at,
            s.sched.first_at - s.sched.not_before, s.sched.worker, s.sched.early ? ": EARLY" : "");
    else
        printf("\nscheduled event %s seq %lld: never delivered\n", DEMO_SCHEDULED_GROUP, (long long)s.sched.seq);

    /* Nothing may be left: the queue's stats (3 commands; fine once, not per event). */
    st = mq_stats_json(s.queue, &stats, &err);
    if (st == MQ_OK) {
        printf("\nmq_stats_json: %s\n", stats);
        if (json_top_level_int(stats, "messages", &left) != 0) {
            printf("stats: no top-level \"messages\" count\n");
            rc = 1;
        } else if (left != 0) {
            printf("leftover: %lld event(s) still queued\n", left);
            rc = 1;
        }
        mq_free(stats);
    } else {
        report_error("mq_stats_json", st, &err);
        rc = 1;
    }

    printf("\nsummary\n");
    printf("  events published : %d (%d + 1 scheduled)\n", s.published, DEMO_EVENTS);
    printf("  events acked     : %d\n", s.acked);
    printf("  nacked           : %d\n", s.nacked);
    printf("  redelivered      : %d\n", s.redelivered);
    printf("  empty waits      : %d (mq_claim_wait timed out after %.1f s)\n", s.empty_waits, DEMO_WAIT_S);
    printf("  groups           : %d (+ %s)\n", DEMO_GROUPS, DEMO_SCHEDULED_GROUP);
    printf("  workers          : %d\n", DEMO_WORKERS);
    t_orders = s.orders_done > 0 ? s.orders_done : t_end;
    printf(
        "  elapsed          : %.2f s (publish %.2f s, drain %.2f s; every event acked "
        "after %.2f s)\n",
        t_end - t0, t_pub - t0, t_orders - t_drain, t_end - t_drain);
    printf("  events/s         : %.1f (drain), %.1f (publish)\n",
           t_orders > t_drain ? s.orders_acked / (t_orders - t_drain) : 0.0,
           t_pub > t0 ? DEMO_EVENTS / (t_pub - t0) : 0.0);
    printf("  queue empty      : %s\n", left == 0 ? "yes (stats: messages 0)" : "NO");
    printf("  exactly once     : %s\n",
           miscounts == 0 && total_logged == DEMO_EVENTS && s.sched.delivered == 1 ? "yes" : "NO");
    printf("  scheduled on time: %s\n", sched_ok ? "yes" : "NO");
    if (violations > 0)
        printf("  FIFO per group: VIOLATED (%d group(s))\n", violations);
    else if (s.failed)
        printf("  FIFO per group: not verified (the run failed)\n");
    else
        printf("  FIFO per group: OK\n");

    if (violations > 0 || miscounts > 0 || s.failed || s.acked != s.published || !sched_ok) rc = 1;

    mq_queue_destroy(s.queue);
    mq_client_destroy(client);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
