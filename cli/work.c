/* mongomq work --exec CMD: N worker threads, each claiming with a waiting claim and
 * running CMD (/bin/sh -c) per event, the event on its stdin; exit 0 acks, anything
 * else nacks with a back-off. The first SIGINT/SIGTERM cancels the waiting claims and
 * lets the running commands finish (a lease a claim returned as the signal came is
 * given back with mq_unclaim, its command never started); a second kills them (their
 * events are nacked for another delivery at once). The command itself, as a child
 * process, is run.c's. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "run.h"

enum {
    OPT_VISIBILITY = OPT_FIRST_LOCAL,
    OPT_MIN_PRIORITY,
    OPT_BACKOFF,
    OPT_MAX_ATTEMPTS,
    OPT_IDLE,
    OPT_LIMIT,
    OPT_WORKER_ID,
    OPT_PARTITION
};

typedef struct work_shared {
    cli_ctx *ctx;
    const char *cmd;
    const char *worker_id; /* NULL: host:pid */
    double visibility, idle;
    double backoff_base, backoff_cap;
    int min_priority, max_attempts, concurrency;
    long limit;
    int *partitions; /* --partition: the only partitions claimed from (NULL: all) */
    size_t partition_count;
    atomic_long tickets; /* claims started, for --limit */
    atomic_long claimed, acked, failed, killed, lost, errors, given_back;
    atomic_int fatal; /* an exit code once a worker met an error it cannot ride out */
} work_shared;

/* What the signal handler sees: it runs in any thread, so only atomics. */
static mq_cancel *g_cancel;  /* set before the handler is installed */
static atomic_int g_signals; /* SIGINT/SIGTERM received */
static atomic_int *g_pgids;  /* per worker: the running command's process group, or 0 */
static int g_workers;

static void say(const char *text) {
    if (write(STDERR_FILENO, text, strlen(text)) < 0) { /* nothing to do */
    }
}

static void on_signal(int sig) {
    (void)sig;
    int saved_errno = errno;
    int n = atomic_fetch_add(&g_signals, 1) + 1;
    if (n == 1) {
        mq_cancel_trigger(g_cancel);
        say("mongomq work: stopping: no more claims; waiting for the running commands "
            "(signal again to kill them)\n");
    } else {
        if (n == 2) say("mongomq work: killing the running commands\n");
        for (int i = 0; i < g_workers; i++) {
            int pgid = atomic_load(&g_pgids[i]);
            if (pgid > 0) kill(-pgid, SIGKILL);
        }
    }
    errno = saved_errno;
}

typedef struct worker {
    work_shared *sh;
    int index;
    unsigned rng;
    pthread_t thread;
} worker;

/* Sleeps up to `seconds`, returning early once a signal came. */
static void pause_unless_stopping(double seconds) {
    double end = cli_now() + seconds;
    while (atomic_load(&g_signals) == 0) {
        double left = end - cli_now();
        if (left <= 0) break;
        if (left > 0.1) left = 0.1;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* ack or nack, retried while the server is unreachable (a retry with the same lease is
 * safe). */
static mq_status settle(worker *w, const mq_lease *lease, int ack, double delay, mq_error *err) {
    mq_status st = MQ_OK;
    for (int i = 0; i < 6; i++) {
        st = ack ? mq_ack(w->sh->ctx->queue, lease, err) : mq_nack(w->sh->ctx->queue, lease, delay, err);
        if (st != MQ_ERR_CONNECT) break;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    return st;
}

/* A lease claimed just as the stop came (a waiting claim that already held its lease
 * when the signal's cancel was seen returns it): its command is never started, so it
 * goes back with mq_unclaim, which is not a delivery (the event keeps its attempts
 * count and its place in line); a nack would count a delivery no command saw, and a
 * worker restarted often would push the event towards the dead letters. Retried
 * while the server is unreachable, as settle does. */
static void give_back(worker *w, const mq_lease *lease) {
    work_shared *sh = w->sh;
    long long seq = (long long)mq_lease_seq(lease);
    mq_error err;
    mq_status st = MQ_OK;
    atomic_fetch_add(&sh->claimed, 1);
    for (int i = 0; i < 6; i++) {
        st = mq_unclaim(sh->ctx->queue, lease, &err);
        if (st != MQ_ERR_CONNECT) break;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
    }
    if (st == MQ_OK) {
        atomic_fetch_add(&sh->given_back, 1);
        if (sh->ctx->verbose)
            cli_error(sh->ctx,
                      "seq %lld (group %s, attempt %d): claimed as the stop came; given "
                      "back unstarted",
                      seq, mq_lease_group(lease), mq_lease_attempts(lease));
    } else if (st == MQ_LEASE_LOST) {
        atomic_fetch_add(&sh->lost, 1);
    } else {
        atomic_fetch_add(&sh->errors, 1);
        cli_error(sh->ctx,
                  "seq %lld: giving back its unstarted lease: %s: %s (it will be "
                  "delivered again when the lease runs out)",
                  seq, mq_status_name(st), err.message);
    }
}

static double backoff(worker *w, int attempts) {
    double d = w->sh->backoff_base * pow(2.0, attempts > 1 ? attempts - 1 : 0);
    if (d > w->sh->backoff_cap) d = w->sh->backoff_cap;
    return d * (0.5 + 0.5 * (double)rand_r(&w->rng) / RAND_MAX);
}

static void handle(worker *w, const mq_lease *lease) {
    work_shared *sh = w->sh;
    cli_ctx *ctx = sh->ctx;
    long long seq = (long long)mq_lease_seq(lease);
    const char *group = mq_lease_group(lease);
    int attempts = mq_lease_attempts(lease);
    atomic_fetch_add(&sh->claimed, 1);
    double start = cli_now();
    int ws = 0;
    cli_run run = {ctx, sh->cmd, sh->visibility, &g_pgids[w->index], &g_signals};
    int started = cli_run_command(&run, lease, &ws) == 0;
    double took = cli_now() - start;
    char took_s[24];
    cli_format_duration(took, took_s, sizeof took_s);

    mq_error err;
    mq_status st;
    if (started && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
        st = settle(w, lease, 1, 0, &err);
        if (st == MQ_OK) {
            atomic_fetch_add(&sh->acked, 1);
            if (ctx->verbose)
                cli_error(ctx, "seq %lld (group %s, attempt %d): done in %s, acked", seq, group, attempts, took_s);
        } else if (st == MQ_LEASE_LOST) {
            atomic_fetch_add(&sh->lost, 1);
            cli_error(ctx,
                      "seq %lld (group %s): done in %s, but the lease was lost (longer "
                      "than --visibility?): another worker may run it too",
                      seq, group, took_s);
        } else {
            atomic_fetch_add(&sh->errors, 1);
            cli_error(ctx, "seq %lld: ack: %s: %s (it will be delivered again)", seq, mq_status_name(st), err.message);
        }
        return;
    }

    char why[64];
    double delay;
    int killed = started && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL && atomic_load(&g_signals) >= 2;
    if (!started)
        snprintf(why, sizeof why, "the command could not start");
    else if (WIFEXITED(ws))
        snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws))
        snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(ws));
    else
        snprintf(why, sizeof why, "wait status %d", ws);
    const char *next;
    char next_buf[96];
    if (killed) {
        delay = 0;
        next = "given back for another delivery";
        atomic_fetch_add(&sh->killed, 1);
    } else if (sh->max_attempts > 0 && attempts >= sh->max_attempts) {
        delay = 0; /* the next claim moves it to the dead letters: no need to wait */
        snprintf(next_buf, sizeof next_buf, "to the dead letters (--max-attempts %d)", sh->max_attempts);
        next = next_buf;
        atomic_fetch_add(&sh->failed, 1);
    } else {
        delay = backoff(w, attempts);
        char d[24];
        cli_format_duration(delay, d, sizeof d);
        if (delay > 0)
            snprintf(next_buf, sizeof next_buf, "again in %s", d);
        else
            snprintf(next_buf, sizeof next_buf, "again at once");
        next = next_buf;
        atomic_fetch_add(&sh->failed, 1);
    }
    cli_error(ctx, "seq %lld (group %s, attempt %d): %s after %s; %s", seq, group, attempts, why, took_s, next);
    st = settle(w, lease, 0, delay, &err);
    if (st == MQ_LEASE_LOST) {
        atomic_fetch_add(&sh->lost, 1);
    } else if (st != MQ_OK) {
        atomic_fetch_add(&sh->errors, 1);
        cli_error(ctx,
                  "seq %lld: nack: %s: %s (it will be delivered again when the lease "
                  "runs out)",
                  seq, mq_status_name(st), err.message);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    work_shared *sh = w->sh;
    int trouble = 0;
    while (atomic_load(&g_signals) == 0 && atomic_load(&sh->fatal) == 0) {
        if (sh->limit > 0 && atomic_fetch_add(&sh->tickets, 1) >= sh->limit) break;
        mq_lease *lease = NULL;
        mq_error err;
        double timeout = sh->idle > 0 ? sh->idle : 600;
        mq_claim_opts opts = MQ_CLAIM_OPTS_INIT;
        opts.worker_id = sh->worker_id;
        opts.visibility_s = sh->visibility;
        opts.min_priority = sh->min_priority;
        opts.timeout_s = timeout;
        opts.cancel = g_cancel;
        opts.partitions = sh->partitions;
        opts.partition_count = sh->partition_count;
        mq_status st = mq_claim_with(sh->ctx->queue, &opts, &lease, &err);
        if (st == MQ_OK) {
            trouble = 0;
            if (atomic_load(&g_signals) > 0 || atomic_load(&sh->fatal) != 0) {
                give_back(w, lease); /* stopping: its command is not started */
                mq_lease_destroy(lease);
                break;
            }
            handle(w, lease);
            mq_lease_destroy(lease);
            continue;
        }
        if (sh->limit > 0) atomic_fetch_sub(&sh->tickets, 1);
        if (st == MQ_EMPTY) {
            if (sh->idle > 0) break;
            continue;
        }
        if (st == MQ_CANCELLED || st == MQ_INTERRUPTED) break;
        if (st == MQ_ERR_CONNECT || st == MQ_ERR_SERVER) {
            /* Ride it out, saying so now and then. */
            if (trouble % 10 == 0) cli_error(sh->ctx, "claim: %s: %s (trying again)", mq_status_name(st), err.message);
            trouble++;
            pause_unless_stopping(trouble < 4 ? trouble : 5);
            continue;
        }
        cli_fail(sh->ctx, "claim", st, &err);
        atomic_store(&sh->fatal, cli_exit_code(st));
        mq_cancel_trigger(g_cancel); /* the other workers stop too */
        break;
    }
    return NULL;
}

/* --partition LIST ("0,2-3"): each partition once, in 0..MQ_PARTITIONS_MAX - 1 (the
 * queue's own P is checked once it is open). -1 with a reason in why. */
static int parse_partitions(const char *arg, int **out, size_t *count, char *why, size_t size) {
    static unsigned char seen[MQ_PARTITIONS_MAX];
    memset(seen, 0, sizeof seen);
    *out = NULL;
    *count = 0;
    char buf[8192];
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf) {
        snprintf(why, size, "too long");
        return -1;
    }
    int *list = malloc(MQ_PARTITIONS_MAX * sizeof *list);
    if (list == NULL) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    size_t n = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        long a, b;
        char *dash = strchr(item, '-');
        if (dash != NULL) *dash = '\0';
        if (cli_parse_int(item, 0, MQ_PARTITIONS_MAX - 1, &a) != 0 ||
            (dash != NULL && cli_parse_int(dash + 1, 0, MQ_PARTITIONS_MAX - 1, &b) != 0)) {
            if (dash != NULL) *dash = '-';
            snprintf(why, size, "'%s' is not a partition (0..%d) or a range A-B", item, MQ_PARTITIONS_MAX - 1);
            free(list);
            return -1;
        }
        if (dash == NULL) b = a;
        if (b < a) {
            snprintf(why, size, "the range %ld-%ld runs backwards", a, b);
            free(list);
            return -1;
        }
        for (long k = a; k <= b; k++) {
            if (seen[k]) {
                snprintf(why, size, "partition %ld is given twice", k);
                free(list);
                return -1;
            }
            seen[k] = 1;
            list[n++] = (int)k;
        }
    }
    /* strtok_r skips empty items: ",", "1,,2" and a trailing comma say so here. */
    if (n == 0 || strstr(arg, ",,") != NULL || arg[0] == ',' || arg[strlen(arg) - 1] == ',') {
        snprintf(why, size, "%s", n == 0 ? "no partition" : "an empty item");
        free(list);
        return -1;
    }
    *out = list;
    *count = n;
    return 0;
}

int cmd_work(cli_ctx *ctx, int argc, char **argv) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"exec", required_argument, NULL, 'e'},
        {"concurrency", required_argument, NULL, 'c'},
        {"visibility", required_argument, NULL, OPT_VISIBILITY},
        {"min-priority", required_argument, NULL, OPT_MIN_PRIORITY},
        {"backoff", required_argument, NULL, OPT_BACKOFF},
        {"max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS},
        {"idle", required_argument, NULL, OPT_IDLE},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"worker-id", required_argument, NULL, OPT_WORKER_ID},
        {"partition", required_argument, NULL, OPT_PARTITION},
        {NULL, 0, NULL, 0},
    };
    work_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.ctx = ctx;
    sh.visibility = 30;
    sh.backoff_base = 1;
    sh.backoff_cap = 60;
    sh.concurrency = 1;
    int max_attempts_given = 0, c, code;
    const char *partition_arg = NULL;
    long v;
    while ((c = getopt_long(argc, argv, "vhe:c:", options, NULL)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        switch (c) {
            case 'e':
                if (optarg[0] == '\0') return cli_usage_error(ctx, "--exec: the command is empty");
                sh.cmd = optarg;
                break;
            case 'c':
                if (cli_parse_int(optarg, 1, 256, &v) != 0)
                    return cli_usage_error(ctx, "--concurrency: expected 1..256, got '%s'", optarg);
                sh.concurrency = (int)v;
                break;
            case OPT_VISIBILITY:
                if (cli_parse_double(optarg, 0.5, 3.2e9, &sh.visibility) != 0)
                    return cli_usage_error(ctx, "--visibility: expected seconds >= 0.5, got '%s'", optarg);
                break;
            case OPT_MIN_PRIORITY:
                if (cli_parse_int(optarg, MQ_PRIORITY_MIN, MQ_PRIORITY_MAX, &v) != 0)
                    return cli_usage_error(ctx, "--min-priority: expected 0..4, got '%s'", optarg);
                sh.min_priority = (int)v;
                break;
            case OPT_BACKOFF: {
                char buf[128], *comma;
                snprintf(buf, sizeof buf, "%s", optarg);
                comma = strchr(buf, ',');
                if (comma != NULL) *comma = '\0';
                if (comma == NULL || cli_parse_double(buf, 0, 3.2e9, &sh.backoff_base) != 0 ||
                    cli_parse_double(comma + 1, 0, 3.2e9, &sh.backoff_cap) != 0 || sh.backoff_cap < sh.backoff_base)
                    return cli_usage_error(ctx, "--backoff: expected BASE,CAP in seconds with CAP >= BASE, got '%s'",
                                           optarg);
                break;
            }
            case OPT_MAX_ATTEMPTS:
                if (cli_parse_int(optarg, 0, 1000000, &v) != 0)
                    return cli_usage_error(ctx, "--max-attempts: expected 0.. (0: never), got '%s'", optarg);
                sh.max_attempts = (int)v;
                max_attempts_given = 1;
                break;
            case OPT_IDLE:
                if (cli_parse_double(optarg, 0.01, 3.2e9, &sh.idle) != 0)
                    return cli_usage_error(ctx, "--idle: expected seconds > 0, got '%s'", optarg);
                break;
            case OPT_LIMIT:
                if (cli_parse_int(optarg, 1, 0x7fffffffL, &sh.limit) != 0)
                    return cli_usage_error(ctx, "--limit: expected a count >= 1, got '%s'", optarg);
                break;
            case OPT_WORKER_ID:
                if (optarg[0] == '\0' || strlen(optarg) > MQ_WORKER_ID_MAX)
                    return cli_usage_error(ctx, "--worker-id: 1..%d bytes", MQ_WORKER_ID_MAX);
                sh.worker_id = optarg;
                break;
            case OPT_PARTITION: {
                char why[200];
                free(sh.partitions);
                partition_arg = optarg;
                if (parse_partitions(optarg, &sh.partitions, &sh.partition_count, why, sizeof why) != 0)
                    return cli_usage_error(ctx, "--partition '%s': %s", optarg, why);
                break;
            }
            default:
                free(sh.partitions);
                return cli_try(ctx);
        }
    }
    if (optind < argc) return cli_usage_error(ctx, "unexpected argument '%s' (quote the --exec command)", argv[optind]);
    if (sh.cmd == NULL) return cli_usage_error(ctx, "--exec CMD is required");

    mq_error err;
    int rc = EXIT_OK;
    worker *workers = calloc((size_t)sh.concurrency, sizeof *workers);
    g_pgids = calloc((size_t)sh.concurrency, sizeof *g_pgids);
    if (workers == NULL || g_pgids == NULL || mq_cancel_new(&g_cancel, &err) != MQ_OK) {
        cli_error(ctx, "out of memory");
        free(workers);
        free(g_pgids);
        return EXIT_FAIL;
    }
    g_workers = sh.concurrency;
    atomic_store(&g_signals, 0);

    /* The handler works from any thread; the workers block the signals anyway, so that
     * nothing of theirs sees EINTR. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    struct sigaction ign;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, NULL); /* a command that does not read its stdin */

    rc = cli_open(ctx);
    for (size_t i = 0; rc == EXIT_OK && i < sh.partition_count; i++) {
        int p = mq_queue_partitions(ctx->queue);
        if (sh.partitions[i] >= p)
            rc = cli_usage_error(ctx, "--partition '%s': partition %d is outside 0..%d (the queue has %d partition%s)",
                                 partition_arg, sh.partitions[i], p - 1, p, p > 1 ? "s" : "");
    }
    if (rc == EXIT_OK && max_attempts_given) {
        mq_status st = mq_queue_set_max_attempts(ctx->queue, sh.max_attempts, &err);
        if (st != MQ_OK) rc = cli_fail(ctx, "--max-attempts", st, &err);
    }
    int started = 0;
    if (rc == EXIT_OK) {
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid() * 2654435761u;
        for (int i = 0; i < sh.concurrency; i++) {
            workers[i].sh = &sh;
            workers[i].index = i;
            workers[i].rng = seed + (unsigned)i * 7919u;
            int e = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
            if (e != 0) {
                cli_error(ctx, "starting worker %d: %s", i, strerror(e));
                atomic_store(&sh.fatal, EXIT_FAIL);
                mq_cancel_trigger(g_cancel);
                break;
            }
            started++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        for (int i = 0; i < started; i++) pthread_join(workers[i].thread, NULL);
    }

    /* No handler may use g_cancel from here on: a late signal is ignored (everything
     * is finished but the summary). */
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGTERM, &ign, NULL);
    if (rc == EXIT_OK) {
        long errors = atomic_load(&sh.errors), killed = atomic_load(&sh.killed);
        long given_back = atomic_load(&sh.given_back);
        fprintf(stderr,
                "mongomq work: %ld claimed, %ld acked, %ld failed, %ld killed, "
                "%ld leases lost",
                atomic_load(&sh.claimed), atomic_load(&sh.acked), atomic_load(&sh.failed), killed,
                atomic_load(&sh.lost));
        if (given_back > 0) fprintf(stderr, ", %ld given back unstarted", given_back);
        if (errors > 0) fprintf(stderr, ", %ld acks/nacks/give-backs failed", errors);
        fputc('\n', stderr);
        if (atomic_load(&sh.fatal) != 0)
            rc = atomic_load(&sh.fatal);
        else if (killed > 0 || errors > 0)
            rc = EXIT_FAIL;
    }
    mq_cancel_destroy(g_cancel);
    g_cancel = NULL;
    free(g_pgids);
    g_pgids = NULL;
    free(workers);
    free(sh.partitions);
    return rc;
}
