/* mongomq publish GROUP [EVENT]: one event from the argument, one per line of stdin or
 * --file, or the whole input as one event (--raw). Prints the seqs on stdout, a
 * duplicate's (a dedup key already taken: --dedup-key, --dedup-key-field) followed by
 * a tab and "duplicate". */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

enum {
    OPT_AT = OPT_FIRST_LOCAL,
    OPT_DELAY,
    OPT_RAW,
    OPT_JSON,
    OPT_KEY,
    OPT_KEY_FIELD,
    OPT_WINDOW,
    OPT_SCOPE,
    OPT_ATTR
};

typedef struct publish_opts {
    const char *group;
    int priority;
    int scheduled; /* --at or --delay */
    double at;     /* epoch seconds (--at) */
    double delay;  /* seconds from now (--delay) */
    int has_delay;
    int raw, json;
    long batch;
    const char *dedup_key;            /* --dedup-key: the one event's */
    const char *dedup_key_field;      /* --dedup-key-field: each line's, from its JSON */
    mq_event_attr attrs[MQ_ATTR_MAX]; /* --attr K=V, every event's (pointers into argv) */
    size_t attr_count;
} publish_opts;

/* A seq on stdout; a duplicate's with a tab and "duplicate". */
static void print_seq(int64_t seq, int duplicate) {
    printf(duplicate ? "%lld\tduplicate\n" : "%lld\n", (long long)seq);
}

/* --dedup-key-field NAME: the line's key, its top-level NAME (a string, or an integer
 * in decimal) in key (size bytes). -1 (after a message naming the line) if it has none. */
static int key_of_line(const cli_ctx *ctx, const char *field, const char *line, size_t len, long lineno, char *key,
                       size_t size) {
    json_error_t jerr;
    json_t *j = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (j == NULL) {
        cli_error(ctx, "line %ld is not JSON (--dedup-key-field): %s", lineno, jerr.text);
        return -1;
    }
    json_t *v = json_is_object(j) ? json_object_get(j, field) : NULL;
    int rc = 0;
    if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) < size &&
        strlen(json_string_value(v)) == json_string_length(v)) {
        memcpy(key, json_string_value(v), json_string_length(v) + 1);
    } else if (json_is_integer(v)) {
        snprintf(key, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else {
        cli_error(ctx,
                  "line %ld has no usable \"%s\" for its dedup key (--dedup-key-field: a non-empty string "
                  "of at most %d bytes, or an integer)",
                  lineno, field, MQ_DEDUP_KEY_MAX);
        rc = -1;
    }
    json_decref(j);
    return rc;
}

static int check_json(const cli_ctx *ctx, const char *event, size_t len, long line) {
    json_error_t jerr;
    json_t *j = json_loadb(event, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (j != NULL) {
        json_decref(j);
        return 0;
    }
    if (line > 0)
        cli_error(ctx, "line %ld is not JSON (--json): %s", line, jerr.text);
    else
        cli_error(ctx, "the event is not JSON (--json): %s", jerr.text);
    return -1;
}

/* Publishes one event (scheduled or not, keyed or not) and prints its seq. */
static int publish_one(cli_ctx *ctx, const publish_opts *o, const void *event, size_t len, const char *key) {
    mq_error err;
    int64_t seq;
    mq_publish_opts po = MQ_PUBLISH_OPTS_INIT;
    po.priority = o->priority;
    if (o->scheduled) po.not_before = o->has_delay ? mq_queue_now(ctx->queue) + o->delay : o->at;
    po.dedup_key = key;
    po.attrs = o->attrs;
    po.attr_count = o->attr_count;
    mq_status st = mq_publish_with(ctx->queue, o->group, event, len, &po, &seq, &err);
    if (st != MQ_OK && st != MQ_DUPLICATE) return cli_fail(ctx, "publishing", st, &err);
    if (err.server_code != 0) cli_error(ctx, "warning: %s", err.message);
    print_seq(seq, st == MQ_DUPLICATE);
    return EXIT_OK;
}

/* --raw: the whole input is one event. */
static int publish_raw(cli_ctx *ctx, const publish_opts *o, FILE *in) {
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        cli_error(ctx, "out of memory");
        return EXIT_FAIL;
    }
    for (;;) {
        if (len == cap) {
            if (cap > MQ_EVENT_MAX) {
                free(buf);
                cli_error(ctx, "the input is larger than an event may be (%d bytes)", MQ_EVENT_MAX);
                return EXIT_USAGE;
            }
            cap *= 2;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                cli_error(ctx, "out of memory");
                return EXIT_FAIL;
            }
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, in);
        len += n;
        if (n == 0) break;
    }
    int rc;
    if (ferror(in)) {
        cli_error(ctx, "reading the input: %s", strerror(errno));
        rc = EXIT_FAIL;
    } else if (len > MQ_EVENT_MAX) {
        cli_error(ctx, "the input is larger than an event may be (%d bytes)", MQ_EVENT_MAX);
        rc = EXIT_USAGE;
    } else if (o->json && check_json(ctx, buf, len, 0) != 0) {
        rc = EXIT_USAGE;
    } else {
        rc = publish_one(ctx, o, buf, len, o->dedup_key);
    }
    free(buf);
    return rc;
}

typedef struct progress {
    int on; /* stderr is a terminal and stdin is not */
    int shown;
    double start, last;
} progress;

static void progress_update(progress *p, long count) {
    if (!p->on) return;
    double now = cli_now();
    if (now - p->start < 1.0 || now - p->last < 0.25) return;
    p->last = now;
    p->shown = 1;
    fprintf(stderr, "\rmongomq publish: %ld events published", count);
    fflush(stderr);
}

static void progress_end(progress *p) {
    if (p->shown) fputs("\r\033[K", stderr);
}

/* Publishes the pending batch; prints its seqs. */
static int flush_batch(cli_ctx *ctx, mq_batch *batch, long first_line, long last_line) {
    if (mq_batch_count(batch) == 0) return EXIT_OK;
    mq_error err;
    int64_t first;
    mq_status st = mq_publish_batch(ctx->queue, batch, &first, &err);
    if (st != MQ_OK && st != MQ_DUPLICATE) {
        char what[128];
        if (st == MQ_ERR_CONNECT)
            snprintf(what, sizeof what, "publishing lines %ld..%ld (they may or may not be in the queue)", first_line,
                     last_line);
        else
            snprintf(what, sizeof what, "publishing lines %ld..%ld", first_line, last_line);
        return cli_fail(ctx, what, st, &err);
    }
    if (err.server_code != 0) cli_error(ctx, "warning: %s", err.message);
    size_t n = mq_batch_count(batch);
    for (size_t i = 0; i < n; i++) {
        int64_t seq = first + (int64_t)i;
        mq_status one = st == MQ_DUPLICATE ? mq_batch_outcome(batch, i, &seq, &err) : MQ_OK;
        if (one != MQ_OK && one != MQ_DUPLICATE) return cli_fail(ctx, "reading the batch's outcome", one, &err);
        print_seq(seq, one == MQ_DUPLICATE);
    }
    return EXIT_OK;
}

/* One event per line. */
static int publish_lines(cli_ctx *ctx, const publish_opts *o, FILE *in) {
    mq_error err;
    mq_batch *batch = NULL;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, first_line = 0, count = 0;
    int rc = EXIT_OK;
    progress prog = {isatty(STDERR_FILENO) && !isatty(fileno(in)), 0, cli_now(), 0};

    if (!o->scheduled && mq_batch_new(&batch, &err) != MQ_OK) {
        cli_error(ctx, "out of memory");
        return EXIT_FAIL;
    }
    ssize_t n;
    while ((n = getline(&line, &cap, in)) != -1) {
        lineno++;
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n') len--;
        if (len > 0 && line[len - 1] == '\r') len--;
        if (len == 0) continue;
        if (o->json && check_json(ctx, line, len, lineno) != 0) {
            rc = EXIT_USAGE;
            break;
        }
        char key[MQ_DEDUP_KEY_MAX + 1];
        if (o->dedup_key_field != NULL &&
            key_of_line(ctx, o->dedup_key_field, line, len, lineno, key, sizeof key) != 0) {
            rc = EXIT_USAGE;
            break;
        }
        const char *line_key = o->dedup_key_field != NULL ? key : NULL;
        if (o->scheduled) {
            rc = publish_one(ctx, o, line, len, line_key);
            if (rc != EXIT_OK) {
                cli_error(ctx, "stopped at line %ld", lineno);
                break;
            }
        } else {
            if (mq_batch_count(batch) == 0) first_line = lineno;
            mq_publish_opts po = MQ_PUBLISH_OPTS_INIT;
            po.priority = o->priority;
            po.dedup_key = line_key;
            po.attrs = o->attrs;
            po.attr_count = o->attr_count;
            mq_status st = mq_batch_add_with(batch, o->group, line, len, &po, &err);
            if (st != MQ_OK) {
                char what[64];
                snprintf(what, sizeof what, "line %ld", lineno);
                rc = cli_fail(ctx, what, st, &err);
                break;
            }
            if ((long)mq_batch_count(batch) >= o->batch) {
                rc = flush_batch(ctx, batch, first_line, lineno);
                mq_batch_destroy(batch);
                batch = NULL;
                if (rc != EXIT_OK) break;
                if (mq_batch_new(&batch, &err) != MQ_OK) {
                    cli_error(ctx, "out of memory");
                    rc = EXIT_FAIL;
                    break;
                }
            }
        }
        count++;
        if (fflush(stdout) != 0) {
            cli_error(ctx, "writing the seqs: %s", strerror(errno));
            rc = EXIT_FAIL;
            break;
        }
        progress_update(&prog, count);
    }
    if (rc == EXIT_OK && ferror(in)) {
        cli_error(ctx, "reading line %ld: %s", lineno + 1, strerror(errno));
        rc = EXIT_FAIL;
    }
    /* What was read before a bad line is published all the same (as --json says:
     * nothing from the bad line's batch on is). */
    if (rc == EXIT_OK && batch != NULL) rc = flush_batch(ctx, batch, first_line, lineno);
    progress_end(&prog);
    mq_batch_destroy(batch);
    free(line);
    if (rc == EXIT_OK && fflush(stdout) != 0) {
        cli_error(ctx, "writing the seqs: %s", strerror(errno));
        rc = EXIT_FAIL;
    }
    return rc;
}

int cmd_publish(cli_ctx *ctx, int argc, char **argv) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"priority", required_argument, NULL, 'p'},
        {"at", required_argument, NULL, OPT_AT},
        {"delay", required_argument, NULL, OPT_DELAY},
        {"file", required_argument, NULL, 'f'},
        {"raw", no_argument, NULL, OPT_RAW},
        {"json", no_argument, NULL, OPT_JSON},
        {"batch", required_argument, NULL, 'b'},
        {"dedup-key", required_argument, NULL, OPT_KEY},
        {"dedup-key-field", required_argument, NULL, OPT_KEY_FIELD},
        {"dedup-window", required_argument, NULL, OPT_WINDOW},
        {"dedup-scope", required_argument, NULL, OPT_SCOPE},
        {"attr", required_argument, NULL, OPT_ATTR},
        {NULL, 0, NULL, 0},
    };
    publish_opts o;
    memset(&o, 0, sizeof o);
    o.batch = 100;
    const char *file = NULL;
    int batch_given = 0, c, code;
    long v;
    double window = 0;
    int scope = -1;
    while ((c = getopt_long(argc, argv, "vhp:f:b:", options, NULL)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        switch (c) {
            case 'p':
                if (cli_parse_int(optarg, MQ_PRIORITY_MIN, MQ_PRIORITY_MAX, &v) != 0)
                    return cli_usage_error(ctx, "--priority: expected 0..4, got '%s'", optarg);
                o.priority = (int)v;
                break;
            case OPT_AT: {
                const char *why;
                if (o.scheduled) return cli_usage_error(ctx, "give one of --at and --delay");
                if (cli_parse_time(optarg, &o.at, &why) != 0) return cli_usage_error(ctx, "--at '%s': %s", optarg, why);
                o.scheduled = 1;
                break;
            }
            case OPT_DELAY:
                if (o.scheduled) return cli_usage_error(ctx, "give one of --at and --delay");
                if (cli_parse_double(optarg, 0, 3.2e9, &o.delay) != 0)
                    return cli_usage_error(ctx, "--delay: expected seconds >= 0, got '%s'", optarg);
                o.scheduled = o.has_delay = 1;
                break;
            case 'f':
                file = optarg;
                break;
            case OPT_RAW:
                o.raw = 1;
                break;
            case OPT_JSON:
                o.json = 1;
                break;
            case 'b':
                if (cli_parse_int(optarg, 1, MQ_BATCH_MAX, &o.batch) != 0)
                    return cli_usage_error(ctx, "--batch: expected 1..%d, got '%s'", MQ_BATCH_MAX, optarg);
                batch_given = 1;
                break;
            case OPT_KEY:
                o.dedup_key = optarg;
                break;
            case OPT_ATTR: {
                char *eq = strchr(optarg, '=');
                if (eq == NULL || eq == optarg)
                    return cli_usage_error(ctx, "--attr: expected KEY=VALUE, got '%s'", optarg);
                if (o.attr_count == MQ_ATTR_MAX)
                    return cli_usage_error(ctx, "--attr: at most %d attributes per event", MQ_ATTR_MAX);
                *eq = '\0'; /* argv is ours to cut */
                o.attrs[o.attr_count].key = optarg;
                o.attrs[o.attr_count].value = eq + 1;
                o.attr_count++;
                break;
            }
            case OPT_KEY_FIELD:
                if (optarg[0] == '\0') return cli_usage_error(ctx, "--dedup-key-field: the field name is empty");
                o.dedup_key_field = optarg;
                break;
            case OPT_WINDOW:
                if (cli_parse_double(optarg, MQ_DEDUP_WINDOW_MIN, MQ_DEDUP_WINDOW_MAX, &window) != 0)
                    return cli_usage_error(ctx, "--dedup-window: expected seconds, 1..604800 (7 days), got '%s'",
                                           optarg);
                break;
            case OPT_SCOPE:
                if (strcmp(optarg, "queue") == 0)
                    scope = MQ_DEDUP_SCOPE_QUEUE;
                else if (strcmp(optarg, "group") == 0)
                    scope = MQ_DEDUP_SCOPE_GROUP;
                else
                    return cli_usage_error(ctx, "--dedup-scope: expected queue or group, got '%s'", optarg);
                break;
            default:
                return cli_try(ctx);
        }
    }
    int rest = argc - optind;
    if (rest < 1) return cli_usage_error(ctx, "which group? (mongomq publish GROUP [EVENT])");
    if (rest > 2) return cli_usage_error(ctx, "too many arguments from '%s' on (quote the event)", argv[optind + 2]);
    o.group = argv[optind];
    const char *event = rest == 2 ? argv[optind + 1] : NULL;
    if (o.group[0] == '\0') return cli_usage_error(ctx, "the group is empty");
    if (event != NULL && file != NULL) return cli_usage_error(ctx, "give EVENT or --file, not both");
    if (event != NULL && o.raw) return cli_usage_error(ctx, "--raw reads the input: give no EVENT");
    if (batch_given && (o.scheduled || o.raw || event != NULL))
        return cli_usage_error(ctx, "--batch applies to lines of input without --at or --delay");
    if (event != NULL && o.json && check_json(ctx, event, strlen(event), 0) != 0) return EXIT_USAGE;
    if (o.dedup_key != NULL && o.dedup_key_field != NULL)
        return cli_usage_error(ctx, "give one of --dedup-key and --dedup-key-field");
    if (o.dedup_key != NULL && event == NULL && !o.raw)
        return cli_usage_error(ctx, "--dedup-key is one event's key: give EVENT or --raw (lines: --dedup-key-field)");
    if (o.dedup_key_field != NULL && (event != NULL || o.raw))
        return cli_usage_error(ctx,
                               "--dedup-key-field reads each line's key: give no EVENT and no --raw "
                               "(one event: --dedup-key)");
    if (o.dedup_key != NULL && (o.dedup_key[0] == '\0' || strlen(o.dedup_key) > MQ_DEDUP_KEY_MAX))
        return cli_usage_error(ctx, "--dedup-key: expected 1..%d bytes", MQ_DEDUP_KEY_MAX);

    FILE *in = stdin;
    if (event == NULL && file != NULL && strcmp(file, "-") != 0) {
        in = fopen(file, "rb");
        if (in == NULL) return cli_usage_error(ctx, "--file %s: %s", file, strerror(errno));
    }
    int rc = cli_open(ctx);
    if (rc == EXIT_OK && (window > 0 || scope >= 0)) {
        mq_error err;
        mq_status st = window > 0 ? mq_queue_set_dedup_window(ctx->queue, window, &err) : MQ_OK;
        if (st == MQ_OK && scope >= 0) st = mq_queue_set_dedup_scope(ctx->queue, (mq_dedup_scope)scope, &err);
        if (st != MQ_OK) rc = cli_fail(ctx, "setting the dedup window or scope", st, &err);
    }
    if (rc == EXIT_OK) {
        if (event != NULL) {
            rc = publish_one(ctx, &o, event, strlen(event), o.dedup_key);
        } else if (o.raw) {
            rc = publish_raw(ctx, &o, in);
        } else {
            if (isatty(fileno(in))) fprintf(stderr, "mongomq publish: one event per line; Ctrl-D ends\n");
            rc = publish_lines(ctx, &o, in);
        }
    }
    if (in != stdin) fclose(in);
    if (rc == EXIT_OK && fflush(stdout) != 0) {
        cli_error(ctx, "writing the seqs: %s", strerror(errno));
        rc = EXIT_FAIL;
    }
    return rc;
}
