/* The matrix's C agent: the line protocol of tests/matrix/README.md over libmongomq. */
#define _POSIX_C_SOURCE 200809L
#include <mongomq.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static mq_client *client;
static struct {
    char *db, *prefix;
    mq_queue *q;
} queues[64];
static int nqueues;
static mq_queue *held_q;
static mq_lease *held;

static char *out; /* the reply being built */
static size_t out_len, out_cap;

static void put(const char *s) {
    size_t n = strlen(s);
    if (out_len + n + 1 > out_cap) {
        out_cap = (out_len + n + 1) * 2;
        out = realloc(out, out_cap);
    }
    memcpy(out + out_len, s, n + 1);
    out_len += n;
}

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long long fnv(const unsigned char *p, size_t n) {
    unsigned long long h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static unsigned char *unhex(const char *s, size_t *len) {
    size_t n = strlen(s) / 2;
    unsigned char *b = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        b[i] = (unsigned char)v;
    }
    b[n] = 0;
    *len = n;
    return b;
}

static void hex(const unsigned char *p, size_t n) {
    char buf[3];
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%02x", p[i]);
        put(buf);
    }
}

static mq_queue *queue(const char *db, const char *prefix, mq_error *err) {
    for (int i = 0; i < nqueues; i++)
        if (!strcmp(queues[i].db, db) && !strcmp(queues[i].prefix, prefix)) return queues[i].q;
    mq_queue *q = NULL;
    if (nqueues == 64 || mq_queue_new(client, db, prefix, &q, err) != MQ_OK) return NULL;
    queues[nqueues].db = strdup(db);
    queues[nqueues].prefix = strdup(prefix);
    queues[nqueues++].q = q;
    return q;
}

/* popen: a handle of P partitions on DB PREFIX in place of the one the agent had,
 * which stays when the open fails. */
static int popen_queue(const char *db, const char *prefix, int partitions, mq_error *err) {
    mq_queue_opts opts = MQ_QUEUE_OPTS_INIT;
    opts.partitions = partitions;
    mq_queue *q = NULL;
    if (mq_queue_new_with(client, db, prefix, &opts, &q, err) != MQ_OK) return 0;
    for (int i = 0; i < nqueues; i++)
        if (!strcmp(queues[i].db, db) && !strcmp(queues[i].prefix, prefix)) {
            if (queues[i].q != held_q) mq_queue_destroy(queues[i].q); /* a held lease's queue stays */
            queues[i].q = q;
            return 1;
        }
    if (nqueues == 64) {
        mq_queue_destroy(q);
        err->status = MQ_ERR_ARG;
        snprintf(err->message, sizeof err->message, "the agent holds 64 queues already");
        return 0;
    }
    queues[nqueues].db = strdup(db);
    queues[nqueues].prefix = strdup(prefix);
    queues[nqueues++].q = q;
    return 1;
}

/* The protocol's ATTRS: KEYHEX=VALUEHEX joined by ';', '-' for none. */
static void put_attrs(const mq_lease *l) {
    size_t n = mq_lease_attr_count(l, 0);
    if (n == 0) put("-");
    for (size_t j = 0; j < n; j++) {
        const char *k = NULL, *v = NULL;
        mq_error err = {0};
        if (mq_lease_attr_at(l, 0, j, &k, &v, &err) != MQ_OK) {
            put("!attr_at_failed");
            return;
        }
        if (j) put(";");
        hex((const unsigned char *)k, strlen(k));
        put("=");
        hex((const unsigned char *)v, strlen(v));
    }
}

/* Parses ATTRS into attrs[] (up to max; the strings are malloc'ed, free_attrs frees
 * them); returns the count, or -1 when there are more than max. */
static int parse_attrs(const char *word, mq_event_attr *attrs, int max) {
    int n = 0;
    if (!strcmp(word, "-")) return 0;
    char *copy = strdup(word), *save = NULL;
    for (char *pair = strtok_r(copy, ";", &save); pair; pair = strtok_r(NULL, ";", &save)) {
        if (n == max) {
            n = -1;
            break;
        }
        char *eq = strchr(pair, '=');
        size_t len;
        if (eq) *eq = 0;
        attrs[n].key = (char *)unhex(pair, &len);
        attrs[n].value = (char *)unhex(eq ? eq + 1 : "", &len);
        n++;
    }
    free(copy);
    return n;
}

static void free_attrs(mq_event_attr *attrs, int n) {
    for (int i = 0; i < n; i++) {
        free((char *)attrs[i].key);
        free((char *)attrs[i].value);
    }
}

static void record(mq_queue *q, const mq_lease *l) {
    size_t len;
    const unsigned char *ev = mq_lease_event(l, &len);
    const char *g = mq_lease_group(l);
    char buf[128];
    snprintf(buf, sizeof buf, "%lld,", (long long)mq_lease_seq(l));
    put(buf);
    hex((const unsigned char *)g, strlen(g));
    snprintf(buf, sizeof buf, ",%d,%zu,%016llx,%.6f,", mq_lease_attempts(l), len, fnv(ev, len), mq_queue_now(q));
    put(buf);
    put_attrs(l);
}

static int fail(const char *what, mq_status st, const mq_error *err) {
    char buf[700];
    out_len = 0;
    snprintf(buf, sizeof buf, "err %s: %s %s", what, mq_status_name(st), err->message);
    for (char *c = buf; *c; c++)
        if (*c == '\n') *c = ' ';
    put(buf);
    return 0;
}

static int handle(char **w, int n) {
    mq_error err = {0};
    mq_status st;
    char buf[256];
    if (!strcmp(w[0], "ack_held")) {
        st = mq_ack(held_q, held, &err);
        mq_lease_destroy(held);
        held = NULL;
        if (st == MQ_OK)
            put("ok acked");
        else if (st == MQ_LEASE_LOST)
            put("ok lease_lost");
        else
            return fail("ack", st, &err);
        return 1;
    }
    if (n < 3) {
        put("err bad line");
        return 0;
    }
    if (!strcmp(w[0], "popen") && n == 4) {
        if (!popen_queue(w[1], w[2], atoi(w[3]), &err)) return fail("popen", err.status, &err);
        snprintf(buf, sizeof buf, "ok %d", mq_queue_partitions(queue(w[1], w[2], &err)));
        put(buf);
        return 1;
    }
    mq_queue *q = queue(w[1], w[2], &err);
    if (!q) return fail("queue", err.status, &err);
    if (!strcmp(w[0], "publish") && (n == 7 || n == 8)) {
        /* one more than MQ_ATTR_MAX, so that the library, not this agent, refuses 17 */
        mq_event_attr attrs[MQ_ATTR_MAX + 1];
        int nattrs = n == 8 ? parse_attrs(w[7], attrs, MQ_ATTR_MAX + 1) : 0;
        if (nattrs < 0) {
            put("err publish: more attributes than the agent takes");
            return 0;
        }
        size_t glen, len = 0;
        unsigned char *g = unhex(w[3], &glen), *data;
        int prio = atoi(w[4]);
        double delay = atof(w[5]), at = 0;
        if (!strcmp(w[6], "-"))
            data = calloc(1, 1);
        else if (!strncmp(w[6], "big:", 4)) {
            len = (size_t)atol(w[6] + 4);
            data = malloc(len);
            for (size_t i = 0; i < len; i++) data[i] = (unsigned char)(i % 251);
        } else
            data = unhex(w[6], &len);
        int64_t seq = 0;
        mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT;
        opts.priority = prio;
        if (delay > 0) opts.not_before = at = mq_queue_now(q) + delay;
        opts.attrs = nattrs ? attrs : NULL;
        opts.attr_count = (size_t)nattrs;
        st = mq_publish_with(q, (char *)g, data, len, &opts, &seq, &err);
        free(g);
        free(data);
        free_attrs(attrs, nattrs);
        if (st != MQ_OK) return fail("publish", st, &err);
        snprintf(buf, sizeof buf, "ok %lld %.6f", (long long)seq, at);
        put(buf);
        return 1;
    }
    if (!strcmp(w[0], "claim") && n == 6) {
        int count = atoi(w[3]);
        double wait = atof(w[4]), vis = atof(w[5]);
        put("ok");
        for (int i = 0; i < count; i++) {
            mq_lease *l = NULL;
            st = mq_claim_wait(q, "c-agent", vis, 0, wait, &l, &err);
            if (st == MQ_EMPTY) break;
            if (st != MQ_OK) return fail("claim", st, &err);
            put(" ");
            record(q, l);
            st = mq_ack(q, l, &err);
            mq_lease_destroy(l);
            if (st != MQ_OK) return fail("ack", st, &err);
        }
        return 1;
    }
    if (!strcmp(w[0], "drain") && n == 6) {
        double idle = atof(w[3]), vis = atof(w[4]);
        struct timespec hold = {0, (long)(atof(w[5]) * 1e6)};
        put("ok");
        for (;;) {
            mq_lease *l = NULL;
            st = mq_claim_wait(q, "c-agent", vis, 0, idle, &l, &err);
            if (st == MQ_EMPTY) break;
            if (st != MQ_OK) return fail("claim", st, &err);
            double t1 = wall();
            nanosleep(&hold, NULL);
            double t2 = wall();
            size_t len;
            const unsigned char *ev = mq_lease_event(l, &len);
            const char *g = mq_lease_group(l);
            snprintf(buf, sizeof buf, " %lld,", (long long)mq_lease_seq(l));
            put(buf);
            hex((const unsigned char *)g, strlen(g));
            snprintf(buf, sizeof buf, ",%.6f,%.6f,%016llx", t1, t2, fnv(ev, len));
            put(buf);
            st = mq_ack(q, l, &err);
            mq_lease_destroy(l);
            if (st != MQ_OK) return fail("ack", st, &err);
        }
        return 1;
    }
    if (!strcmp(w[0], "hold") && n == 5) {
        mq_lease *l = NULL;
        st = mq_claim_wait(q, "c-agent", atof(w[4]), 0, atof(w[3]), &l, &err);
        if (st == MQ_EMPTY) {
            put("ok none");
            return 1;
        }
        if (st != MQ_OK) return fail("claim", st, &err);
        held = l;
        held_q = q;
        put("ok ");
        record(q, l);
        return 1;
    }
    if (!strcmp(w[0], "drop")) {
        st = mq_queue_drop(q, &err);
        if (st != MQ_OK) return fail("drop", st, &err);
        put("ok");
        return 1;
    }
    put("err unknown op");
    return 0;
}

int main(int argc, char **argv) {
    mq_error err = {0};
    if (argc < 2 || mq_client_new(argv[1], &client, &err) != MQ_OK) {
        fprintf(stderr, "c agent: cannot connect: %s\n", err.message);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        char *w[16];
        int n = 0;
        for (char *tok = strtok(line, " \t\n"); tok && n < 16; tok = strtok(NULL, " \t\n")) w[n++] = tok;
        if (n == 0) continue;
        if (!strcmp(w[0], "quit")) break;
        out_len = 0;
        put("");
        handle(w, n);
        fputs(out, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    free(line);
    for (int i = 0; i < nqueues; i++) mq_queue_destroy(queues[i].q);
    mq_client_destroy(client);
    return 0;
}
