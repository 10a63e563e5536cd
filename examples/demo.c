/*
 * demo.c — libmongomq in one screen: per-group FIFO with competing workers.
 *
 *   MONGOMQ_URI=mongodb://127.0.0.1:27017 ./demo
 *
 * Publishes DEMO_EVENTS events round-robin over DEMO_GROUPS groups ("order-00" ..
 * "order-29", priority = group index % 5; each event a small JSON text
 * {"group":"order-07","n":3}), then lets DEMO_WORKERS threads drain the queue
 * through one shared client and queue handle. About one delivery in 20 is nacked
 * (delay 0) instead of acked, to show redelivery of the same head. At the end it
 * prints every group's processing order and checks that, within each group, the
 * n values were processed strictly in publish order (1, 2, 3, ...), that every
 * event was processed exactly once, and that nothing is left in the queue.
 *
 * Exit status: 0 on success, 1 on an error or a FIFO violation, 2 on usage.
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
#define DEMO_IDLE_SLEEP_MS 10
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

typedef struct {
    mq_queue *queue;
    demo_group groups[DEMO_GROUPS];
    int published;

    pthread_mutex_t mu; /* guards everything below and groups[].log/count/mask */
    int acked;
    int nacked;
    int redelivered; /* deliveries with attempts > 1 */
    int failed;      /* set once; workers stop */
    double last_progress;
} demo_state;

typedef struct {
    demo_state *st;
    int index; /* 1..DEMO_WORKERS */
    char worker_id[32];
} demo_worker;

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* libmongoc's log: warnings and worse only. */
static void demo_log(int level, const char *domain, const char *message, void *ctx)
{
    (void)ctx;
    if (level <= 2)
        fprintf(stderr, "libmongoc: [%s] %s\n", domain ? domain : "?", message ? message : "");
}

static void report_error(const char *what, mq_status st, const mq_error *err)
{
    fflush(stdout);
    fprintf(stderr, "demo: %s failed: %s: %s\n", what, mq_status_name(st),
            err && err->message[0] ? err->message : "(no message)");
}

static void fail(demo_state *s, const char *what, mq_status st, const mq_error *err)
{
    pthread_mutex_lock(&s->mu);
    report_error(what, st, err);
    s->failed = 1;
    pthread_mutex_unlock(&s->mu);
}

/* Small per-thread PRNG (xorshift32); deterministic per worker. */
static uint32_t xorshift32(uint32_t *x)
{
    uint32_t v = *x;
    v ^= v << 13;
    v ^= v >> 17;
    v ^= v << 5;
    *x = v;
    return v;
}

/* Parses {"group":"NAME","n":N} (the exact form this program publishes). */
static int parse_event(const void *data, size_t len, char *group, size_t group_cap, int *n)
{
    char buf[128];
    const char *g, *end, *np;
    if (data == NULL || len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    g = strstr(buf, "\"group\":\"");
    if (g == NULL)
        return -1;
    g += strlen("\"group\":\"");
    end = strchr(g, '"');
    if (end == NULL || (size_t)(end - g) >= group_cap)
        return -1;
    memcpy(group, g, (size_t)(end - g));
    group[end - g] = '\0';
    np = strstr(end, "\"n\":");
    if (np == NULL || sscanf(np + 4, "%d", n) != 1)
        return -1;
    return 0;
}

static int group_index(const demo_state *s, const char *name)
{
    int i;
    for (i = 0; i < DEMO_GROUPS; i++)
        if (strcmp(s->groups[i].name, name) == 0)
            return i;
    return -1;
}

static void *worker_main(void *arg)
{
    demo_worker *w = (demo_worker *)arg;
    demo_state *s = w->st;
    uint32_t rng = 0x9E3779B9u * (uint32_t)w->index;

    for (;;) {
        mq_lease *lease = NULL;
        mq_error err;
        mq_status st;
        char group[64];
        int n = 0, gi, attempts, nack;
        const void *ev;
        size_t ev_len = 0;

        pthread_mutex_lock(&s->mu);
        if (s->failed) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        pthread_mutex_unlock(&s->mu);

        st = mq_claim(s->queue, w->worker_id, DEMO_VISIBILITY_S, 0, &lease, &err);
        if (st == MQ_EMPTY) {
            int done, stalled;
            pthread_mutex_lock(&s->mu);
            done = s->acked >= s->published;
            stalled = now_mono() - s->last_progress > DEMO_STALL_S;
            if (!done && stalled && !s->failed) {
                fprintf(stderr, "demo: no progress for %.0f s with %d of %d events acked\n",
                        DEMO_STALL_S, s->acked, s->published);
                s->failed = 1;
            }
            pthread_mutex_unlock(&s->mu);
            if (done || stalled)
                break;
            sleep_ms(DEMO_IDLE_SLEEP_MS);
            continue;
        }
        if (st != MQ_OK) {
            fail(s, "mq_claim", st, &err);
            break;
        }

        ev = mq_lease_event(lease, &ev_len);
        attempts = mq_lease_attempts(lease);
        if (parse_event(ev, ev_len, group, sizeof group, &n) != 0 ||
            strcmp(group, mq_lease_group(lease)) != 0 ||
            (gi = group_index(s, group)) < 0) {
            pthread_mutex_lock(&s->mu);
            fprintf(stderr, "demo: unexpected event %.*s in group %s\n", (int)ev_len,
                    (const char *)ev, mq_lease_group(lease));
            s->failed = 1;
            pthread_mutex_unlock(&s->mu);
            mq_lease_destroy(lease);
            break;
        }

        if (attempts > 1) {
            pthread_mutex_lock(&s->mu);
            s->redelivered++;
            pthread_mutex_unlock(&s->mu);
        }

        nack = attempts <= DEMO_MAX_NACKS_PER_HEAD && xorshift32(&rng) % DEMO_NACK_ONE_IN == 0;
        if (nack) {
            st = mq_nack(s->queue, lease, 0.0, &err);
            mq_lease_destroy(lease);
            if (st != MQ_OK) {
                fail(s, "mq_nack", st, &err);
                break;
            }
            pthread_mutex_lock(&s->mu);
            s->nacked++;
            pthread_mutex_unlock(&s->mu);
            continue;
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
        mq_lease_destroy(lease);
        if (st != MQ_OK) {
            fail(s, "mq_ack", st, &err);
            break;
        }
        pthread_mutex_lock(&s->mu);
        s->acked++;
        s->last_progress = now_mono();
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

int main(void)
{
    static demo_state s; /* large: keep it off the stack */
    demo_worker workers[DEMO_WORKERS];
    pthread_t threads[DEMO_WORKERS];
    const char *uri = getenv("MONGOMQ_URI");
    char prefix[64];
    mq_client *client = NULL;
    mq_error err;
    mq_status st;
    mq_lease *left = NULL;
    double t0, t_pub, t_end;
    int i, rc = 0, violations = 0, miscounts = 0, total_logged = 0;

    if (uri == NULL || uri[0] == '\0') {
        fprintf(stderr,
                "usage: MONGOMQ_URI=mongodb://host:port demo\n"
                "  Publishes %d events over %d groups to a fresh queue in the database\n"
                "  \"mongomq_demo\", drains them with %d worker threads and checks\n"
                "  per-group FIFO order. (scripts/test-server.sh start prints a URI.)\n",
                DEMO_EVENTS, DEMO_GROUPS, DEMO_WORKERS);
        return 2;
    }

    mq_log_set_handler(demo_log, NULL);
    if (pthread_mutex_init(&s.mu, NULL) != 0) {
        fprintf(stderr, "demo: pthread_mutex_init failed\n");
        return 1;
    }

    printf("libmongomq %s (header %d.%d.%d)\n", mq_version(), MQ_VERSION_MAJOR,
           MQ_VERSION_MINOR, MQ_VERSION_PATCH);

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
    printf("queue: mongomq_demo.%s_*\n", prefix);

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
    printf("published %d events over %d groups in %.2f s\n", s.published, DEMO_GROUPS,
           t_pub - t0);

    s.last_progress = now_mono();
    for (i = 0; i < DEMO_WORKERS; i++) {
        workers[i].st = &s;
        workers[i].index = i + 1;
        snprintf(workers[i].worker_id, sizeof workers[i].worker_id, "demo-worker-%d", i + 1);
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "demo: pthread_create failed\n");
            pthread_mutex_lock(&s.mu);
            s.failed = 1;
            pthread_mutex_unlock(&s.mu);
            while (i-- > 0)
                pthread_join(threads[i], NULL);
            mq_queue_destroy(s.queue);
            mq_client_destroy(client);
            return 1;
        }
    }
    for (i = 0; i < DEMO_WORKERS; i++)
        pthread_join(threads[i], NULL);
    t_end = now_mono();

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
                    printf("FIFO violation: %s position %d has n=%d (expected %d)\n", g->name,
                           k + 1, g->log[k].n, k + 1);
                break;
            }
            if (k > 0 && g->log[k].seq <= g->log[k - 1].seq) {
                if (violations++ < 10)
                    printf("FIFO violation: %s seq %lld after seq %lld\n", g->name,
                           (long long)g->log[k].seq, (long long)g->log[k - 1].seq);
                break;
            }
        }
        if (g->count != DEMO_PER_GROUP) {
            if (miscounts++ < 10)
                printf("count mismatch: %s processed %d events (expected %d)\n", g->name,
                       g->count, DEMO_PER_GROUP);
        }
    }

    /* Nothing may be left. */
    if (!s.failed) {
        st = mq_claim(s.queue, "demo-final-check", DEMO_VISIBILITY_S, 0, &left, &err);
        if (st == MQ_OK) {
            printf("leftover: group %s seq %lld is still queued\n", mq_lease_group(left),
                   (long long)mq_lease_seq(left));
            mq_lease_destroy(left);
            rc = 1;
        } else if (st != MQ_EMPTY) {
            report_error("final mq_claim", st, &err);
            rc = 1;
        }
    }

    printf("\nsummary\n");
    printf("  events published : %d\n", s.published);
    printf("  events acked     : %d\n", s.acked);
    printf("  nacked           : %d\n", s.nacked);
    printf("  redelivered      : %d\n", s.redelivered);
    printf("  groups           : %d\n", DEMO_GROUPS);
    printf("  workers          : %d\n", DEMO_WORKERS);
    printf("  elapsed          : %.2f s (publish %.2f s, drain %.2f s)\n", t_end - t0,
           t_pub - t0, t_end - t_pub);
    printf("  events/s         : %.1f (drain), %.1f (publish)\n",
           t_end > t_pub ? s.acked / (t_end - t_pub) : 0.0,
           t_pub > t0 ? s.published / (t_pub - t0) : 0.0);
    printf("  queue empty      : %s\n", s.failed ? "not checked" : rc == 0 ? "yes" : "NO");
    printf("  exactly once     : %s\n",
           miscounts == 0 && total_logged == s.published ? "yes" : "NO");
    if (violations > 0)
        printf("  FIFO per group: VIOLATED (%d group(s))\n", violations);
    else if (s.failed)
        printf("  FIFO per group: not verified (the run failed)\n");
    else
        printf("  FIFO per group: OK\n");

    if (violations > 0 || miscounts > 0 || s.failed || s.acked != s.published)
        rc = 1;

    mq_queue_destroy(s.queue);
    mq_client_destroy(client);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
