/*
 * waiters.c — the bench's --waiters N mode: how many waiting claims one event wakes.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --waiters N: wake-ups per event ---------------------------------------------
 *
 * N threads share one client and one queue handle (one process's waiters) and loop on
 * mq_claim_wait(timeout 5 s), acking what they get. Another client publishes E events,
 * one at a time, each to a new group, and waits until a waiter acked it, then 100 ms
 * more so every waiter is asleep again. The waiters' client's command count across
 * that window, less the idle rate measured over 1 s before (the watcher's getMores
 * and the waiters' safety-net slices), is what the event cost there:
 *   the waiter that gets it: claim.lease + claim.head, then ack (ack.delete, ack.drop,
 *   ack.recheck), then its next wait's claim.lease and next.due = 7 commands;
 *   every other waiter the event woke: claim.lease (empty) + next.due = 2 commands.
 * So wake-ups per event = 1 + (commands - 7) / 2. */

typedef struct {
    mq_queue *queue;
    long acked;       /* under mu */
    int stop, failed; /* under mu */
    pthread_mutex_t mu;
} waiters_shared;

typedef struct {
    waiters_shared *sh;
    int index;
} waiters_arg;

static void *waiter_main(void *p) {
    waiters_arg *a = p;
    waiters_shared *sh = a->sh;
    char id[32];
    snprintf(id, sizeof id, "waiter-%d", a->index);
    for (;;) {
        mq_error err;
        mq_lease *lease = NULL;
        mq_status st = mq_claim_wait(sh->queue, id, 30, 0, 5.0, &lease, &err);
        if (st == MQ_INTERRUPTED) return NULL;
        if (st == MQ_EMPTY) continue;
        if (st == MQ_OK) st = mq_ack(sh->queue, lease, &err);
        mq_lease_destroy(lease);
        pthread_mutex_lock(&sh->mu);
        if (st == MQ_OK) {
            sh->acked++;
        } else {
            report_error("waiter", st, &err);
            sh->failed = 1;
        }
        pthread_mutex_unlock(&sh->mu);
        if (st != MQ_OK) return NULL;
    }
}

static long waiters_acked(waiters_shared *sh, int *failed) {
    long n;
    pthread_mutex_lock(&sh->mu);
    n = sh->acked;
    *failed = sh->failed;
    pthread_mutex_unlock(&sh->mu);
    return n;
}

int run_waiters(const bench_opts *opt, const char *db) {
    mq_client *wclient = NULL, *pclient = NULL;
    mq_queue *pqueue = NULL;
    waiters_shared sh;
    waiters_arg *args = calloc((size_t)opt->waiters, sizeof *args);
    pthread_t *threads = calloc((size_t)opt->waiters, sizeof *threads);
    mq_error err;
    mq_status st;
    long i, started = 0;
    int failed = 0, rc = 1;
    double idle_rate, cmds = 0, window = 0, latency = 0;
    uint64_t c0;

    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.mu, NULL);
    if (args == NULL || threads == NULL) goto out;
    if ((st = mq_client_new(opt->uri, &wclient, &err)) != MQ_OK ||
        (st = mq_client_new(opt->uri, &pclient, &err)) != MQ_OK) {
        report_error("mq_client_new", st, &err);
        goto out;
    }
    if ((st = mq_queue_new(wclient, db, "bench_waiters", &sh.queue, &err)) != MQ_OK ||
        (st = mq_queue_new(pclient, db, "bench_waiters", &pqueue, &err)) != MQ_OK) {
        report_error("mq_queue_new", st, &err);
        goto out;
    }
    for (i = 0; i < opt->waiters; i++) {
        args[i].sh = &sh;
        args[i].index = (int)i;
        if (pthread_create(&threads[i], NULL, waiter_main, &args[i]) != 0) goto stop;
        started++;
    }
    sleep_ms(1000); /* the watcher is up and every waiter asleep */
    c0 = mq_client_command_count(wclient);
    sleep_ms(1000);
    idle_rate = (double)(mq_client_command_count(wclient) - c0);

    for (i = 0; i < opt->events; i++) {
        char group[32];
        double t0 = now_mono(), t_acked;
        uint64_t before = mq_client_command_count(wclient);
        snprintf(group, sizeof group, "g%ld", i);
        if ((st = mq_publish(pqueue, group, "{}", 2, 0, NULL, &err)) != MQ_OK) {
            report_error("mq_publish", st, &err);
            goto stop;
        }
        while (waiters_acked(&sh, &failed) < i + 1 && !failed && now_mono() - t0 < 10) sleep_ms(1);
        if (failed || waiters_acked(&sh, &failed) < i + 1) {
            fprintf(stderr, "bench: event %ld was not acked within 10 s\n", i);
            goto stop;
        }
        t_acked = now_mono();
        latency += t_acked - t0;
        sleep_ms(100);
        cmds += (double)(mq_client_command_count(wclient) - before);
        window += now_mono() - t0;
    }
    {
        double n = (double)opt->events;
        double per_event = (cmds - idle_rate * window) / n;
        double wakeups = 1.0 + (per_event - 7.0) / 2.0;
        if (opt->json) {
            json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "library", mq_version(), "mode",
                                  "waiters", "waiters", (json_int_t)opt->waiters, "events", (json_int_t)opt->events,
                                  "idle_commands_per_s", rnd(idle_rate, 1), "raw_commands_per_event", rnd(cmds / n, 2),
                                  "commands_per_event", rnd(per_event > 0 ? per_event : 0, 2), "wakeups_per_event",
                                  rnd(wakeups > 0 ? wakeups : 0, 2), "publish_to_ack_ms", rnd(latency / n * 1e3, 2));
            char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
            if (text != NULL) printf("%s\n", text);
            free(text);
            json_decref(o);
        } else {
            printf("== waiters: %ld threads waiting on one queue of one client, %ld events one at a time\n",
                   opt->waiters, opt->events);
            printf("idle commands/s (watcher, safety-net slices)  %.1f\n", idle_rate);
            printf("waiters' commands per event, raw              %.2f\n", cmds / n);
            printf("waiters' commands per event, less idle        %.2f\n", per_event);
            printf("wake-ups per event (1 + (commands - 7) / 2)   %.2f\n", wakeups);
            printf("publish -> acked by a waiter, mean            %.2f ms\n", latency / n * 1e3);
        }
    }
    rc = 0;
stop:
    mq_queue_interrupt(sh.queue);
    for (i = 0; i < started; i++) pthread_join(threads[i], NULL);
out:
    mq_queue_destroy(pqueue);
    mq_queue_destroy(sh.queue);
    mq_client_destroy(pclient);
    mq_client_destroy(wclient);
    pthread_mutex_destroy(&sh.mu);
    free(args);
    free(threads);
    return rc;
}
