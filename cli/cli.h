/* The mongomq command: what the subcommands share (cli/README.md documents it). */
#ifndef MONGOMQ_CLI_H
#define MONGOMQ_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mongomq.h>

/* Exit codes (documented in --help and cli/README.md). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,       /* the command failed (a server error, a declined confirmation, ...) */
    EXIT_USAGE = 2,      /* bad options or arguments */
    EXIT_UNREACHABLE = 3 /* the server could not be reached (MQ_ERR_CONNECT) */
};

/* Options every subcommand accepts (before or after its name). */
typedef struct cli_ctx {
    const char *cmd;    /* "publish", ... ("" before a subcommand is known) */
    const char *uri;    /* --uri, else MONGOMQ_URI, else the default */
    const char *db;     /* --db, else MONGOMQ_DB, else NULL (the library's "mongomq") */
    const char *prefix; /* --prefix, else MONGOMQ_PREFIX, else NULL ("mq") */
    int verbose;        /* -v: more on stderr (libmongoc's warnings, every event of work) */
    long partitions;    /* --partitions, else MONGOMQ_PARTITIONS, else 0: whatever the queue has */
    char *uri_owned;    /* the URI with the default server selection timeout added */
    mq_client *client;
    mq_queue *queue;
} cli_ctx;

#define CLI_DEFAULT_URI "mongodb://localhost:27017"
#define CLI_DEFAULT_TIMEOUT_MS 5000

/* The common long options, for a subcommand's option table; their codes. */
enum { OPT_URI = 0x1000, OPT_DB, OPT_PREFIX, OPT_HELP, OPT_PARTITIONS, OPT_FIRST_LOCAL };
#define CLI_COMMON_OPTIONS                                                                                      \
  {"uri", required_argument, NULL, OPT_URI}, {"db", required_argument, NULL, OPT_DB},                           \
      {"prefix", required_argument, NULL, OPT_PREFIX}, {"partitions", required_argument, NULL, OPT_PARTITIONS}, \
      {"verbose", no_argument, NULL, 'v'}, {                                                                    \
    "help", no_argument, NULL, 'h'                                                                              \
  }

/* Handles a common option's code from getopt_long: 1 if it was one (with *exit_code
 * set to -1 to go on, or to an exit code: --help printed the help), 0 if not. */
int cli_common_option(cli_ctx *ctx, int code, const char *arg, int *exit_code);

/* "mongomq publish: <message>\n" on stderr. */
void cli_error(const cli_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cli_error, then "Try 'mongomq publish --help'.", and returns EXIT_USAGE. */
int cli_usage_error(const cli_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After getopt's own message: "Try 'mongomq publish --help'."; returns EXIT_USAGE. */
int cli_try(const cli_ctx *ctx);
/* Reports a failed call (what was being done, the status, the library's message) and
 * returns the exit code for it: 3 for MQ_ERR_CONNECT, 2 for MQ_ERR_ARG, else 1. */
int cli_fail(const cli_ctx *ctx, const char *what, mq_status st, const mq_error *err);
int cli_exit_code(mq_status st);

/* The URI to use (--uri, else $MONGOMQ_URI, else CLI_DEFAULT_URI), with ctx->db and
 * ctx->prefix filled from $MONGOMQ_DB and $MONGOMQ_PREFIX when the options left them
 * unset. */
const char *cli_resolve_env(cli_ctx *ctx);
/* The URI with serverSelectionTimeoutMS=CLI_DEFAULT_TIMEOUT_MS added unless it has
 * one (malloc'd; NULL out of memory). */
char *cli_uri_with_timeout(const char *uri);
/* libmongoc's log on stderr: errors always, warnings with -v, more with -vv. */
void cli_log_setup(const cli_ctx *ctx);
/* ctx->partitions from $MONGOMQ_PARTITIONS when --partitions left it unset: EXIT_OK,
 * or EXIT_USAGE (with a message) for a value outside 1..MQ_PARTITIONS_MAX. */
int cli_resolve_partitions(cli_ctx *ctx);
/* Opens the queue db.prefix with ctx->partitions, or when that is 0 with the number
 * the queue has: mq_queue_new, and, when the library answers that the queue has N
 * partitions (MQ_ERR_ARG "... has N partitions (recorded in ..."), again with N. */
mq_status cli_queue_open(const cli_ctx *ctx, mq_client *client, const char *db, const char *prefix, mq_queue **out,
                         mq_error *err);
/* Opens the client and the queue: EXIT_OK or the exit code to return. */
int cli_open(cli_ctx *ctx);
void cli_close(cli_ctx *ctx);
/* "db.prefix" of the queue, with the library's defaults filled in. */
void cli_queue_name(const cli_ctx *ctx, char *buf, size_t size);

/* Parsers for option values: 0 on success, else -1 (nothing is printed). */
int cli_parse_int(const char *s, long min, long max, long *out);
int cli_parse_double(const char *s, double min, double max, double *out);
/* Epoch seconds ("1767225600", "1767225600.5") or ISO 8601 with a zone
 * ("2026-01-01T00:00:00Z", "2026-01-01T01:00+01:00"). -1 with *why set on error. */
int cli_parse_time(const char *s, double *epoch_s, const char **why);

/* Formats epoch seconds as "2026-01-01T00:00:00Z" (UTC; tenths when not whole). */
void cli_format_time(double epoch_s, char *buf, size_t size);
/* Formats a duration: "850ms", "7.0s", "5m03s", "2h05m", "3d04h". */
void cli_format_duration(double s, char *buf, size_t size);

/* Asks "<question> [y/N] " on a terminal. EXIT_OK to go on; EXIT_FAIL if the answer
 * was not yes; EXIT_USAGE (with a message) when stdin is not a terminal. yes: --yes
 * was given (EXIT_OK without asking). */
int cli_confirm(const cli_ctx *ctx, int yes, const char *question);

/* Monotonic seconds. */
double cli_now(void);

/* A table for humans: cells are copied; columns padded to their widest cell, the last
 * one not padded. */
typedef struct cli_table cli_table;
cli_table *cli_table_new(size_t columns);
int cli_table_add(cli_table *t, const char *const *cells);
void cli_table_print(const cli_table *t, FILE *out);
void cli_table_destroy(cli_table *t);

/* Subcommands: argc/argv start at the subcommand's name. Each returns an exit code. */
int cmd_publish(cli_ctx *ctx, int argc, char **argv);
int cmd_work(cli_ctx *ctx, int argc, char **argv);
int cmd_stats(cli_ctx *ctx, int argc, char **argv);
int cmd_peek(cli_ctx *ctx, int argc, char **argv);
int cmd_dead(cli_ctx *ctx, int argc, char **argv);
int cmd_repair(cli_ctx *ctx, int argc, char **argv);
int cmd_purge_group(cli_ctx *ctx, int argc, char **argv);
int cmd_drop(cli_ctx *ctx, int argc, char **argv);
int cmd_groups(cli_ctx *ctx, int argc, char **argv); /* groups.c */
int cmd_pause(cli_ctx *ctx, int argc, char **argv);
int cmd_resume(cli_ctx *ctx, int argc, char **argv);
int cmd_web(cli_ctx *ctx, int argc, char **argv);        /* cli/web/ */
int cmd_shard_plan(cli_ctx *ctx, int argc, char **argv); /* shard.c */

/* Help texts (help.c): the usage of one subcommand, or of the whole command. */
const char *cli_help_text(const char *cmd); /* NULL for an unknown name */
void cli_print_help(const char *cmd, FILE *out);
/* The same texts as a man page (roff): `mongomq help-man`, hidden; the build makes
 * mongomq.1 with it. */
void cli_print_man(FILE *out, const char *version);

#endif
