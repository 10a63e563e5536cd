/* What admin.c shares with stats.c: the option parser of mongomq's smaller commands
 * (peek, dead, repair, purge-group, drop and stats) and a reader of the stats JSON. */
#ifndef MONGOMQ_CLI_ADMIN_H
#define MONGOMQ_CLI_ADMIN_H

#include <jansson.h>

#include "cli.h"

/* Options of the smaller commands, parsed in one place. */
typedef struct admin_opts {
    int json, yes, all;
    long limit, offset;
    double watch;
} admin_opts;

/* Parses the options in `allowed` ("json", "yes", "all", "limit", "offset", "watch"); leaves
 * the positional arguments at argv[optind..]. -1 to go on, else an exit code. */
int parse_admin(cli_ctx *ctx, int argc, char **argv, const char *allowed, admin_opts *o);

/* A usage error for argv[first] when there is one (nothing more is expected); -1 to
 * go on. */
int no_more_args(cli_ctx *ctx, int argc, char **argv, int first);

/* obj[path1], or obj[path1][path2], as an integer: 0 when it is missing or no integer
 * (the library's stats JSON, for stats and drop). */
json_int_t jint(json_t *obj, const char *path1, const char *path2);

#endif
