/* mongomq stats: a queue's counts as a table or its JSON, once or every --watch
 * seconds until Ctrl-C. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"

static volatile sig_atomic_t watch_stop;
static void on_watch_signal(int sig) {
    (void)sig;
    watch_stop = 1;
}

static int print_stats_table(const cli_ctx *ctx, const char *text) {
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL) {
        cli_error(ctx, "the library's stats are not JSON: %s", jerr.text);
        return EXIT_FAIL;
    }
    char when[40], age[48];
    json_t *q = json_object_get(root, "queue");
    cli_format_time(json_number_value(json_object_get(root, "now")), when, sizeof when);
    json_t *oldest = json_object_get(root, "oldest_message_age_s");
    if (json_is_number(oldest)) {
        char d[24];
        cli_format_duration(json_number_value(oldest), d, sizeof d);
        snprintf(age, sizeof age, " (oldest waited %s)", d);
    } else {
        age[0] = '\0';
    }
    printf("queue     %s at %s\n", json_is_string(q) ? json_string_value(q) : "?", when);
    if (jint(root, "partitions", NULL) > 1) printf("partitions %lld\n", (long long)jint(root, "partitions", NULL));
    printf("messages  %lld%s\n", (long long)jint(root, "messages", NULL), age);
    printf("groups    %lld: %lld ready, %lld leased, %lld parked, %lld paused\n",
           (long long)jint(root, "groups", "total"), (long long)jint(root, "groups", "ready"),
           (long long)jint(root, "groups", "leased"), (long long)jint(root, "groups", "parked"),
           (long long)jint(root, "groups", "paused"));
    printf("published %lld (events ever)\n", (long long)jint(root, "published", NULL));
    printf("dead      %lld\n\n", (long long)jint(root, "dead", NULL));
    cli_table *t = cli_table_new(3);
    if (t == NULL) {
        json_decref(root);
        return EXIT_FAIL;
    }
    const char *head[] = {"PRIORITY", "GROUPS", "MESSAGES"};
    cli_table_add(t, head);
    json_t *pri = json_object_get(root, "priorities");
    for (int p = MQ_PRIORITY_MIN; p <= MQ_PRIORITY_MAX; p++) {
        char key[4], g[24], m[24];
        snprintf(key, sizeof key, "%d", p);
        json_t *e = json_object_get(pri, key);
        snprintf(g, sizeof g, "%lld", (long long)jint(e, "groups", NULL));
        snprintf(m, sizeof m, "%lld", (long long)jint(e, "messages", NULL));
        const char *row[] = {key, g, m};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    cli_table_destroy(t);
    json_decref(root);
    return EXIT_OK;
}

int cmd_stats(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    int rc = parse_admin(ctx, argc, argv, "json watch", &o);
    if (rc >= 0) return rc;
    if ((rc = no_more_args(ctx, argc, argv, optind)) >= 0) return rc;
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;

    int tty = isatty(STDOUT_FILENO);
    if (o.watch > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_watch_signal; /* no SA_RESTART: the sleep ends at once */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    for (int round = 0; !watch_stop; round++) {
        mq_error err;
        char *text;
        mq_status st = mq_stats_json(ctx->queue, &text, &err);
        if (st != MQ_OK) {
            rc = cli_fail(ctx, "reading the stats", st, &err);
            /* A watcher rides out a server that went away for a while. */
            if (o.watch > 0 && round > 0 && st == MQ_ERR_CONNECT) goto sleep;
            return rc;
        }
        rc = EXIT_OK;
        if (o.json) {
            printf("%s\n", text);
        } else {
            if (o.watch > 0 && tty)
                fputs("\033[H\033[2J", stdout);
            else if (round > 0)
                fputc('\n', stdout);
            rc = print_stats_table(ctx, text);
            if (o.watch > 0 && tty) printf("\nevery %gs; Ctrl-C to stop\n", o.watch);
        }
        mq_free(text);
        if (fflush(stdout) != 0) {
            cli_error(ctx, "writing the stats: %s", strerror(errno));
            return EXIT_FAIL;
        }
        if (rc != EXIT_OK || o.watch <= 0) return rc;
    sleep:;
        double end = cli_now() + o.watch;
        while (!watch_stop) {
            double left = end - cli_now();
            if (left <= 0) break;
            struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    return rc;
}
