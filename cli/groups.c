/* mongomq groups, pause and resume: the queue's groups as a table or JSON lines, one
 * page at a time (mq_groups_json: state, holder, held for, attempts, backlog, head
 * age; filters by state, id prefix, stuck, lease age, park length), and pausing and
 * resuming one group (mq_pause_group, mq_resume_group). cli/README.md documents them. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "cli.h"

enum { OPT_JSON = OPT_FIRST_LOCAL, OPT_STATE, OPT_ID_PREFIX, OPT_STUCK, OPT_HELD, OPT_PARKED, OPT_SORT, OPT_AFTER };

/* "ready,leased" -> MQ_GROUP_READY | MQ_GROUP_LEASED; 0 and *bad set on an unknown name. */
static unsigned parse_states(const char *list, const char **bad) {
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"ready", MQ_GROUP_READY},
                 {"leased", MQ_GROUP_LEASED},
                 {"parked", MQ_GROUP_PARKED},
                 {"paused", MQ_GROUP_PAUSED}};
    unsigned states = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(tok, names[i].name) == 0) bit = names[i].bit;
        if (bit == 0) {
            *bad = list;
            return 0;
        }
        states |= bit;
    }
    if (states == 0) *bad = list;
    return states;
}

/* A cell of seconds ("12s", "3m04s") or "-" for null. */
static void seconds_cell(json_t *v, char *buf, size_t size) {
    if (!json_is_number(v)) {
        snprintf(buf, size, "-");
        return;
    }
    cli_format_duration(json_number_value(v), buf, size);
}

static int print_groups(const char *text, int json, const char **next_out, json_t **root_out) {
    json_t *root = json_loads(text, 0, NULL);
    *root_out = root;
    if (root == NULL) return EXIT_FAIL;
    json_t *rows = json_object_get(root, "groups");
    json_t *next = json_object_get(root, "next");
    *next_out = json_is_string(next) ? json_string_value(next) : NULL;
    size_t i;
    json_t *r;
    if (json) {
        json_array_foreach(rows, i, r) {
            char *line = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
            if (line == NULL) return EXIT_FAIL;
            printf("%s\n", line);
            free(line);
        }
        return EXIT_OK;
    }
    cli_table *t = cli_table_new(9);
    if (t == NULL) return EXIT_FAIL;
    const char *head[] = {"GROUP", "STATE", "PRI", "ATTEMPTS", "BACKLOG", "HEAD AGE", "HOLDER", "HELD", "DUE IN"};
    cli_table_add(t, head);
    const double now = json_number_value(json_object_get(root, "now"));
    json_array_foreach(rows, i, r) {
        char pri[16], attempts[16], backlog[32], age[32], held[32], due[32];
        snprintf(pri, sizeof pri, "%lld", (long long)json_integer_value(json_object_get(r, "priority")));
        snprintf(attempts, sizeof attempts, "%lld", (long long)json_integer_value(json_object_get(r, "attempts")));
        snprintf(backlog, sizeof backlog, "%lld", (long long)json_integer_value(json_object_get(r, "backlog")));
        seconds_cell(json_object_get(r, "head_age_s"), age, sizeof age);
        seconds_cell(json_object_get(r, "held_for_s"), held, sizeof held);
        json_t *at = json_object_get(r, "available_at");
        if (json_is_number(at) && json_number_value(at) > now)
            cli_format_duration(json_number_value(at) - now, due, sizeof due);
        else
            snprintf(due, sizeof due, "-");
        json_t *holder = json_object_get(r, "holder");
        /* group ids and holders are text a producer or a worker chose: shown as stored,
         * in a table whose cells are never interpreted */
        const char *cells[] = {json_string_value(json_object_get(r, "group")),
                               json_string_value(json_object_get(r, "state")),
                               pri,
                               attempts,
                               backlog,
                               age,
                               json_is_string(holder) ? json_string_value(holder) : "-",
                               held,
                               due};
        cli_table_add(t, cells);
    }
    cli_table_print(t, stdout);
    cli_table_destroy(t);
    return EXIT_OK;
}

int cmd_groups(cli_ctx *ctx, int argc, char **argv) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"json", no_argument, NULL, OPT_JSON},
        {"state", required_argument, NULL, OPT_STATE},
        {"id-prefix", required_argument, NULL, OPT_ID_PREFIX},
        {"stuck", no_argument, NULL, OPT_STUCK},
        {"held-longer", required_argument, NULL, OPT_HELD},
        {"parked-beyond", required_argument, NULL, OPT_PARKED},
        {"sort", required_argument, NULL, OPT_SORT},
        {"after", required_argument, NULL, OPT_AFTER},
        {"limit", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
    int json = 0, c, code;
    long limit = 50;
    while ((c = getopt_long(argc, argv, "vhn:", options, NULL)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        const char *bad = NULL;
        switch (c) {
            case OPT_JSON:
                json = 1;
                break;
            case OPT_STATE:
                o.states = parse_states(optarg, &bad);
                if (bad != NULL)
                    return cli_usage_error(ctx,
                                           "--state: expected ready, leased, parked or paused (comma-separated), "
                                           "got '%s'",
                                           optarg);
                break;
            case OPT_ID_PREFIX:
                o.id_prefix = optarg;
                break;
            case OPT_STUCK:
                o.min_attempts = 2;
                break;
            case OPT_HELD:
                if (cli_parse_double(optarg, 0.001, 1e9, &o.held_longer_than_s) != 0)
                    return cli_usage_error(ctx, "--held-longer: expected seconds (> 0), got '%s'", optarg);
                break;
            case OPT_PARKED:
                if (cli_parse_double(optarg, 0.001, 1e9, &o.parked_beyond_s) != 0)
                    return cli_usage_error(ctx, "--parked-beyond: expected seconds (> 0), got '%s'", optarg);
                break;
            case OPT_SORT:
                if (strcmp(optarg, "id") == 0)
                    o.sort = MQ_GROUPS_SORT_ID;
                else if (strcmp(optarg, "due") == 0)
                    o.sort = MQ_GROUPS_SORT_DUE;
                else
                    return cli_usage_error(ctx, "--sort: expected id or due, got '%s'", optarg);
                break;
            case OPT_AFTER:
                o.after = optarg;
                break;
            case 'n':
                if (cli_parse_int(optarg, 1, 1000, &limit) != 0)
                    return cli_usage_error(ctx, "--limit: expected 1..1000, got '%s'", optarg);
                break;
            default:
                return cli_try(ctx);
        }
    }
    o.limit = (size_t)limit;
    int rc;
    if ((rc = no_more_args(ctx, argc, argv, optind)) >= 0) return rc;
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    mq_error err;
    char *text = NULL;
    mq_status st = mq_groups_json(ctx->queue, &o, &text, &err);
    if (st != MQ_OK) return cli_fail(ctx, "listing the groups", st, &err);
    const char *next = NULL;
    json_t *root = NULL;
    rc = print_groups(text, json, &next, &root);
    mq_free(text);
    if (rc == EXIT_OK && next != NULL) cli_error(ctx, "more: --after '%s'", next);
    json_decref(root);
    return rc;
}

static int pause_or_resume(cli_ctx *ctx, int argc, char **argv, int pause) {
    admin_opts o = {0};
    int rc = parse_admin(ctx, argc, argv, "", &o);
    if (rc >= 0) return rc;
    if (optind >= argc) return cli_usage_error(ctx, "which group? (mongomq %s GROUP)", pause ? "pause" : "resume");
    const char *group = argv[optind];
    if ((rc = no_more_args(ctx, argc, argv, optind + 1)) >= 0) return rc;
    if (group[0] == '\0') return cli_usage_error(ctx, "the group is empty");
    if ((rc = cli_open(ctx)) != EXIT_OK) return rc;
    mq_error err;
    mq_status st = pause ? mq_pause_group(ctx->queue, group, &err) : mq_resume_group(ctx->queue, group, &err);
    if (st != MQ_OK) return cli_fail(ctx, pause ? "pausing the group" : "resuming the group", st, &err);
    return EXIT_OK;
}

int cmd_pause(cli_ctx *ctx, int argc, char **argv) { return pause_or_resume(ctx, argc, argv, 1); }
int cmd_resume(cli_ctx *ctx, int argc, char **argv) { return pause_or_resume(ctx, argc, argv, 0); }
