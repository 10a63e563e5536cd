/* mongomq work's command runner (run.c), for the worker (work.c). */
#ifndef MONGOMQ_CLI_RUN_H
#define MONGOMQ_CLI_RUN_H

#include <stdatomic.h>

#include "cli.h"

/* What one run needs from its worker. */
typedef struct cli_run {
    cli_ctx *ctx;        /* the queue the lease belongs to, and the messages' prefix */
    const char *cmd;     /* run with /bin/sh -c */
    double visibility;   /* the lease is extended every visibility/3 while it runs */
    atomic_int *pgid;    /* the command's process group while it runs, else 0: the
                          * signal handler kills the group on the second signal */
    atomic_int *signals; /* SIGINT/SIGTERM received (2 or more: kill it at once) */
} cli_run;

/* Runs the command for one event; *wstatus is waitpid's status. 0, or -1 if it could
 * not be started (reported). */
int cli_run_command(const cli_run *run, const mq_lease *lease, int *wstatus);

#endif
