/* mongomq peek, dead, repair, purge-group and drop: looking into a queue and
 * repairing it; and what these and stats (stats.c) share (admin.h: the option parser,
 * a reader of the stats JSON). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "cli.h"

enum { OPT_JSON = OPT_FIRST_LOCAL, OPT_ALL, OPT_OFFSET };

int parse_admin(cli_ctx *ctx, int argc, char **argv, const char *allowed, admin_opts *o) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"json", no_argument, NULL, OPT_JSON},
        {"yes", no_argument, NULL, 'y'},
        {"all", no_argument, NULL, OPT_ALL},
        {"limit", required_argument, NULL, 'n'},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"watch", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    int c, code, idx;
    while ((c = getopt_long(argc, argv, "vhyn:w:", options, &idx)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        const char *name = c == OPT_JSON     ? "json"
                           : c == 'y'        ? "yes"
                           : c == OPT_ALL    ? "all"
                           : c == 'n'        ? "limit"
                           : c == OPT_OFFSET ? "offset"
                           : c == 'w'        ? "watch"
                                             : NULL;
        if (name == NULL) return cli_try(ctx);
        if (strstr(allowed, name) == NULL) return cli_usage_error(ctx, "--%s does not apply here", name);
        switch (c) {
            case OPT_JSON:
                o->json = 1;
                break;
            case 'y':
                o->yes = 1;
                break;
            case OPT_ALL:
                o->all = 1;
                break;
            case 'n':
                if (cli_parse_int(optarg, 1, MQ_BATCH_MAX, &o->limit) != 0)
                    return cli_usage_error(ctx, "--limit: expected 1..%d, got '%s'", MQ_BATCH_MAX, optarg);
                break;
            case OPT_OFFSET:
                if (cli_parse_int(optarg, 0, 0x7fffffffffffffffL, &o->offset) != 0)
                    return cli_usage_error(ctx, "--offset: expected a count (0 or more), got '%s'", optarg);
                break;
            case 'w':
                if (cli_parse_double(optarg, 0.1, 86400, &o->watch) != 0)
                    return cli_usage_error(ctx, "--watch: expected seconds (0.1..86400), got '%s'", optarg);
                break;
        }
    }
    return -1;
}

/* Commands that ask first refuse at once, before contacting the server, when they
 * cannot ask. */
static int refuse_unasked(cli_ctx *ctx, int yes, const char *what) {
    if (yes || isatty(STDIN_FILENO)) return -1;
    return cli_usage_error(ctx, "%s asks for confirmation, and stdin is not a terminal: add --yes", what);
}

int no_more_args(cli_ctx *ctx, int argc, char **argv, int first) {
    if (first < argc) return cli_usage_error(ctx, "unexpected argument '%s'", argv[first]);
    return -1;
}

json_int_t jint(json_t *obj, const char *path1, const char *path2) {
    json_t *v = json_object_get(obj, path1);
    if (path2 != NULL) v = json_object_get(v, path2);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* ---- peek and dead list: events as a table or JSON lines ------------------------ */

/* An event for a table: control characters escaped; cut to `max` characters (0: no
 * cut). */
static void event_cell(json_t *ev, char *buf, size_t size, size_t max) {
    const char *text = "";
    const char *lead = "";
    if (json_is_string(ev)) {
        text = json_string_value(ev);
    } else if (json_is_object(ev) && json_is_string(json_object_get(ev, "base64"))) {
        text = json_string_value(json_object_get(ev, "base64"));
        lead = "base64:";
    }
    size_t n = 0, chars = 0;
    int cut = 0;
    for (const char *p = lead; *p && n + 1 < size; p++) buf[n++] = *p;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (max > 0 && chars >= max) {
            cut = 1;
            break;
        }
        char esc[8];
        size_t k = 0;
        if (*p == '\n')
            k = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (*p == '\t')
            k = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (*p == '\r')
            k = (size_t)snprintf(esc, sizeof esc, "\\r");
        else if (*p < 0x20 || *p == 0x7f)
            k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
        else
            esc[k++] = (char)*p;
        if (n + k + 4 >= size) {
            cut = 1;
            break;
        }
        memcpy(buf + n, esc, k);
        n += k;
        if ((*p & 0xC0) != 0x80) chars++;
    }
    if (cut && n + 4 < size) {
        memcpy(buf + n, "\xe2\x80\xa6", 3); /* … */
        n += 3;
    }
    buf[n] = '\0';
}

/* Prints a JSON array of events (mq_peek_json / mq_dead_list_json). dead: the dead
 * letters' columns. */
static int print_events(const cli_ctx *ctx, const char *text, int json, int dead) {
    json_error_t jerr;
    json_t *arr = json_loads(text, 0, &jerr);
    if (!json_is_array(arr)) {
        cli_error(ctx, "the library's answer is not a JSON array: %s", jerr.text);
        json_decref(arr);
        return EXIT_FAIL;
    }
    size_t i;
    json_t *e;
    if (json) {
        json_array_foreach(arr, i, e) {
            char *line = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
            if (line == NULL) {
                json_decref(arr);
                cli_error(ctx, "out of memory");
                return EXIT_FAIL;
            }
            printf("%s\n", line);
            free(line);
        }
        json_decref(arr);
        return EXIT_OK;
    }
    size_t cut = isatty(STDOUT_FILENO) ? 60 : 0;
    cli_table *t = cli_table_new(dead ? 6 : 7);
    if (t == NULL) {
        json_decref(arr);
        return EXIT_FAIL;
    }
    if (dead) {
        const char *head[] = {"SEQ", "GROUP", "PRI", "ATTEMPTS", "DEAD_AT", "EVENT"};
        cli_table_add(t, head);
    } else {
        const char *head[] = {"SEQ", "GROUP", "PRI", "ATTEMPTS", "PUBLISHED", "DUE", "EVENT"};
        cli_table_add(t, head);
    }
    char *evbuf = malloc(64 * 1024);
    if (evbuf == NULL) {
        cli_table_destroy(t);
        json_decref(arr);
        return EXIT_FAIL;
    }
    json_array_foreach(arr, i, e) {
        char seq[24] = "-", pri[8] = "-", att[16] = "-", pub[40] = "-", due[40] = "-";
        json_t *v;
        if (json_is_integer(v = json_object_get(e, "seq")))
            snprintf(seq, sizeof seq, "%lld", (long long)json_integer_value(v));
        if (json_is_integer(v = json_object_get(e, "priority")))
            snprintf(pri, sizeof pri, "%lld", (long long)json_integer_value(v));
        if (json_is_integer(v = json_object_get(e, "attempts")))
            snprintf(att, sizeof att, "%lld", (long long)json_integer_value(v));
        if (json_is_number(v = json_object_get(e, dead ? "dead_at" : "published_at")))
            cli_format_time(json_number_value(v), pub, sizeof pub);
        if (json_is_number(v = json_object_get(e, "not_before")))
            cli_format_time(json_number_value(v), due, sizeof due);
        json_t *g = json_object_get(e, "group");
        event_cell(json_object_get(e, "event"), evbuf, 64 * 1024, cut);
        const char *group = json_is_string(g) ? json_string_value(g) : "-";
        if (dead) {
            const char *row[] = {seq, group, pri, att, pub, evbuf};
            cli_table_add(t, row);
        } else {
            const char *row[] = {seq, group, pri, att, pub, due, evbuf};
            cli_table_add(t, row);
        }
    }
    free(evbuf);
    cli_table_print(t, stdout);
    cli_table_destroy(t);
    json_decref(arr);
    return EXIT_OK;
}

int cmd_peek(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    o.limit = 10;
    int rc = parse_admin(ctx, argc, argv, "json limit", &o);
    if (rc >= 0) return rc;
    const char *group = optind < argc ? argv[optind] : NULL;
    if ((rc = no_more_args(ctx, argc, argv, optind + 1)) >= 0) return rc;
    if (group != NULL && group[0] == '\0') return cli_usage_error(ctx, "the group is empty");
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    mq_error err;
    char *text;
    mq_status st = mq_peek_json(ctx->queue, group, (size_t)o.limit, &text, &err);
    if (st != MQ_OK) return cli_fail(ctx, "peeking", st, &err);
    rc = print_events(ctx, text, o.json, 0);
    mq_free(text);
    return rc;
}

/* ---- dead ------------------------------------------------------------------------ */

static int dead_count(cli_ctx *ctx, int64_t *n) {
    mq_error err;
    mq_status st = mq_dead_count(ctx->queue, n, &err);
    if (st != MQ_OK) return cli_fail(ctx, "counting the dead letters", st, &err);
    return EXIT_OK;
}

/* Requeues one dead letter and prints "SEQ NEW_SEQ". */
static int requeue_one(cli_ctx *ctx, int64_t seq) {
    mq_error err;
    int64_t fresh;
    mq_status st = mq_dead_requeue(ctx->queue, seq, &fresh, &err);
    if (st == MQ_ERR_ARG) {
        cli_error(ctx, "%s", err.message);
        return EXIT_FAIL;
    }
    if (st != MQ_OK) {
        char what[64];
        snprintf(what, sizeof what, "requeueing %lld", (long long)seq);
        return cli_fail(ctx, what, st, &err);
    }
    printf("%lld %lld\n", (long long)seq, (long long)fresh);
    fflush(stdout);
    return EXIT_OK;
}

static int requeue_all(cli_ctx *ctx, const admin_opts *o) {
    int64_t total;
    int rc = dead_count(ctx, &total);
    if (rc != EXIT_OK) return rc;
    if (total == 0) {
        if (ctx->verbose) cli_error(ctx, "no dead letters");
        return EXIT_OK;
    }
    char name[512], question[700];
    cli_queue_name(ctx, name, sizeof name);
    snprintf(question, sizeof question, "Requeue %s %lld dead letter%s of %s?", total == 1 ? "the" : "all",
             (long long)total, total == 1 ? "" : "s", name);
    if ((rc = cli_confirm(ctx, o->yes, question)) != EXIT_OK) return rc;
    /* At most the letters there were: ones that die again meanwhile wait for next time. */
    int64_t left = total;
    int worst = EXIT_OK;
    while (left > 0) {
        mq_error err;
        char *text;
        size_t n = left > 1000 ? 1000 : (size_t)left;
        mq_status st = mq_dead_list_json(ctx->queue, n, &text, &err);
        if (st != MQ_OK) return cli_fail(ctx, "listing the dead letters", st, &err);
        json_t *arr = json_loads(text, 0, NULL);
        mq_free(text);
        if (!json_is_array(arr) || json_array_size(arr) == 0) {
            json_decref(arr);
            break;
        }
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e) {
            json_t *seq = json_object_get(e, "seq");
            if (!json_is_integer(seq)) continue;
            rc = requeue_one(ctx, (int64_t)json_integer_value(seq));
            if (rc == EXIT_UNREACHABLE) {
                json_decref(arr);
                return rc;
            }
            if (rc != EXIT_OK) worst = rc;
            left--;
        }
        json_decref(arr);
    }
    return worst;
}

int cmd_dead(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    o.limit = 100;
    int rc = parse_admin(ctx, argc, argv, "json limit offset yes all", &o);
    if (rc >= 0) return rc;
    if (optind >= argc) return cli_usage_error(ctx, "what? (list, count, requeue, purge)");
    const char *what = argv[optind];
    int first = optind + 1;
    int is_list = strcmp(what, "list") == 0, is_count = strcmp(what, "count") == 0;
    int is_requeue = strcmp(what, "requeue") == 0, is_purge = strcmp(what, "purge") == 0;
    if (!is_list && !is_count && !is_requeue && !is_purge)
        return cli_usage_error(ctx, "no 'dead %s' (list, count, requeue, purge)", what);
    if (!is_list && (o.json || o.limit != 100 || o.offset != 0))
        return cli_usage_error(ctx, "--json, --limit and --offset are for 'dead list'");
    if (is_list && o.limit > 1000) return cli_usage_error(ctx, "--limit: expected 1..1000 for 'dead list'");
    if (!is_requeue && o.all) return cli_usage_error(ctx, "--all is for 'dead requeue'");
    if (o.yes && !is_purge && !(is_requeue && o.all))
        return cli_usage_error(ctx, "--yes is for 'dead purge' and 'dead requeue --all'");

    int64_t *seqs = NULL;
    size_t nseqs = 0;
    if (is_requeue) {
        if (o.all && first < argc) return cli_usage_error(ctx, "give SEQ... or --all, not both");
        if (!o.all && first >= argc) return cli_usage_error(ctx, "which dead letters? (SEQ... or --all)");
        nseqs = (size_t)(argc - first);
        seqs = calloc(nseqs + 1, sizeof *seqs);
        if (seqs == NULL) return EXIT_FAIL;
        for (size_t i = 0; i < nseqs; i++) {
            long v;
            if (cli_parse_int(argv[first + (int)i], 1, 0x7fffffffffffffffL, &v) != 0) {
                free(seqs);
                return cli_usage_error(ctx, "'%s' is not a seq (a positive integer)", argv[first + (int)i]);
            }
            seqs[i] = v;
        }
    } else if ((rc = no_more_args(ctx, argc, argv, first)) >= 0) {
        return rc;
    }
    if ((is_purge || (is_requeue && o.all)) &&
        (rc = refuse_unasked(ctx, o.yes, is_purge ? "'dead purge'" : "'dead requeue --all'")) >= 0) {
        free(seqs);
        return rc;
    }
    if ((rc = cli_open(ctx)) != EXIT_OK) {
        free(seqs);
        return rc;
    }

    mq_error err;
    if (is_list) {
        /* one page (mq_dead_list_with): the letters and how many there are in all */
        mq_dead_list_opts page = MQ_DEAD_LIST_OPTS_INIT;
        page.limit = (size_t)o.limit;
        page.offset = (size_t)o.offset;
        char *text;
        mq_status st = mq_dead_list_with(ctx->queue, &page, &text, &err);
        if (st != MQ_OK) return cli_fail(ctx, "listing the dead letters", st, &err);
        json_t *root = json_loads(text, 0, NULL);
        mq_free(text);
        char *letters = root != NULL ? json_dumps(json_object_get(root, "letters"), JSON_COMPACT) : NULL;
        long long total = (long long)jint(root, "total", NULL);
        json_decref(root);
        if (letters == NULL) return cli_fail(ctx, "reading the dead letters", MQ_ERR_INTERNAL, NULL);
        rc = print_events(ctx, letters, o.json, 1);
        free(letters);
        long long shown_to = o.offset + o.limit < total ? o.offset + o.limit : total;
        if (rc == EXIT_OK && (o.offset > 0 || total > shown_to))
            cli_error(ctx, "%lld..%lld of %lld shown (--offset K, --limit N for others)",
                      total == 0 || o.offset >= total ? 0 : (long long)o.offset + 1, shown_to, total);
        return rc;
    }
    if (is_count) {
        int64_t n;
        if ((rc = dead_count(ctx, &n)) != EXIT_OK) return rc;
        printf("%lld\n", (long long)n);
        return EXIT_OK;
    }
    if (is_requeue) {
        int worst = EXIT_OK;
        if (o.all) {
            worst = requeue_all(ctx, &o);
        } else {
            for (size_t i = 0; i < nseqs; i++) {
                rc = requeue_one(ctx, seqs[i]);
                if (rc != EXIT_OK) worst = rc;
                if (rc == EXIT_UNREACHABLE) break;
            }
        }
        free(seqs);
        return worst;
    }
    /* purge */
    int64_t total, purged;
    if ((rc = dead_count(ctx, &total)) != EXIT_OK) return rc;
    char name[512], question[700];
    cli_queue_name(ctx, name, sizeof name);
    snprintf(question, sizeof question, "Delete %s %lld dead letter%s of %s?", total == 1 ? "the" : "all",
             (long long)total, total == 1 ? "" : "s", name);
    if (total > 0 && (rc = cli_confirm(ctx, o.yes, question)) != EXIT_OK) return rc;
    purged = 0;
    if (total > 0) {
        mq_status st = mq_dead_purge(ctx->queue, &purged, &err);
        if (st != MQ_OK) return cli_fail(ctx, "purging the dead letters", st, &err);
    }
    printf("%lld\n", (long long)purged);
    return EXIT_OK;
}

/* ---- repair, purge-group, drop ---------------------------------------------------- */

int cmd_repair(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    int rc = parse_admin(ctx, argc, argv, "", &o);
    if (rc >= 0) return rc;
    if ((rc = no_more_args(ctx, argc, argv, optind)) >= 0) return rc;
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    mq_error err;
    int64_t fixed;
    mq_status st = mq_repair(ctx->queue, &fixed, &err);
    if (st != MQ_OK) return cli_fail(ctx, "repairing", st, &err);
    printf("%lld\n", (long long)fixed);
    return EXIT_OK;
}

int cmd_purge_group(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    int rc = parse_admin(ctx, argc, argv, "yes", &o);
    if (rc >= 0) return rc;
    if (optind >= argc) return cli_usage_error(ctx, "which group? (mongomq purge-group GROUP)");
    const char *group = argv[optind];
    if ((rc = no_more_args(ctx, argc, argv, optind + 1)) >= 0) return rc;
    if (group[0] == '\0') return cli_usage_error(ctx, "the group is empty");
    if ((rc = refuse_unasked(ctx, o.yes, "purge-group")) >= 0) return rc;
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    char name[512], question[1700];
    cli_queue_name(ctx, name, sizeof name);
    snprintf(question, sizeof question, "Delete every event of group '%s' in %s?", group, name);
    if ((rc = cli_confirm(ctx, o.yes, question)) != EXIT_OK) return rc;
    mq_error err;
    mq_status st = mq_purge_group(ctx->queue, group, &err);
    if (st != MQ_OK) return cli_fail(ctx, "purging the group", st, &err);
    return EXIT_OK;
}

int cmd_drop(cli_ctx *ctx, int argc, char **argv) {
    admin_opts o = {0};
    int rc = parse_admin(ctx, argc, argv, "yes", &o);
    if (rc >= 0) return rc;
    if ((rc = no_more_args(ctx, argc, argv, optind)) >= 0) return rc;
    if ((rc = refuse_unasked(ctx, o.yes, "drop")) >= 0) return rc;
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    mq_error err;
    char name[512], question[700];
    cli_queue_name(ctx, name, sizeof name);
    if (!o.yes) {
        char *text;
        mq_status st = mq_stats_json(ctx->queue, &text, &err);
        if (st != MQ_OK) return cli_fail(ctx, "reading the stats", st, &err);
        json_t *root = json_loads(text, 0, NULL);
        mq_free(text);
        long long events = (long long)jint(root, "messages", NULL);
        long long dead = (long long)jint(root, "dead", NULL);
        snprintf(question, sizeof question,
                 "Drop the queue %s (%lld event%s, %lld dead letter%s), for every process using it?", name, events,
                 events == 1 ? "" : "s", dead, dead == 1 ? "" : "s");
        json_decref(root);
        if ((rc = cli_confirm(ctx, o.yes, question)) != EXIT_OK) return rc;
    }
    mq_status st = mq_queue_drop(ctx->queue, &err);
    if (st != MQ_OK) return cli_fail(ctx, "dropping the queue", st, &err);
    if (ctx->verbose) cli_error(ctx, "dropped %s", name);
    return EXIT_OK;
}
