/* mongomq: publish, work, watch and repair a mongomq queue from the shell.
 * Over the public API only (include/mongomq.h). cli/README.md documents it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef MONGOMQ_CLI_VERSION
#  define MONGOMQ_CLI_VERSION "unknown"
#endif

static const struct {
    const char *name;
    int (*run)(cli_ctx *ctx, int argc, char **argv);
} commands[] = {
    {"publish", cmd_publish},
    {"work", cmd_work},
    {"stats", cmd_stats},
    {"peek", cmd_peek},
    {"dead", cmd_dead},
    {"repair", cmd_repair},
    {"purge-group", cmd_purge_group},
    {"drop", cmd_drop},
    {"groups", cmd_groups},
    {"pause", cmd_pause},
    {"resume", cmd_resume},
    {"web", cmd_web},
    {"shard-plan", cmd_shard_plan},
};

enum { OPT_VERSION = OPT_FIRST_LOCAL };

int main(int argc, char **argv) {
    cli_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cmd = "";

    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    argv[0] = "mongomq"; /* getopt's messages start with it */
    int c, code;
    /* "+": stop at the command's name; its own options are parsed by the command. */
    while ((c = getopt_long(argc, argv, "+vh", options, NULL)) != -1) {
        if (cli_common_option(&ctx, c, optarg, &code)) {
            if (code >= 0) return code;
        } else if (c == OPT_VERSION) {
            printf("mongomq %s (libmongomq %s)\n", MONGOMQ_CLI_VERSION, mq_version());
            return EXIT_OK;
        } else {
            fprintf(stderr, "Try 'mongomq --help'.\n");
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr,
                "mongomq: which command? (publish, work, stats, peek, dead, repair, "
                "purge-group, drop, groups, pause, resume, web, shard-plan)\nTry 'mongomq --help'.\n");
        return EXIT_USAGE;
    }
    const char *name = argv[optind];
    if (strcmp(name, "help-man") == 0) {
        cli_print_man(stdout, MONGOMQ_CLI_VERSION);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
    }
    if (strcmp(name, "help") == 0) {
        const char *topic = optind + 1 < argc ? argv[optind + 1] : NULL;
        if (topic != NULL && cli_help_text(topic) == NULL) {
            fprintf(stderr, "mongomq help: no command '%s'\nTry 'mongomq --help'.\n", topic);
            return EXIT_USAGE;
        }
        cli_print_help(topic, stdout);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            ctx.cmd = name;
            /* The command sees argv from its name on; getopt starts afresh. */
            char prog[64];
            snprintf(prog, sizeof prog, "mongomq %s", name);
            char **sub = argv + optind;
            sub[0] = prog;
            optind = 0;
            int rc = commands[i].run(&ctx, argc - (int)(sub - argv), sub);
            cli_close(&ctx);
            return rc;
        }
    }
    fprintf(stderr, "mongomq: no command '%s'\nTry 'mongomq --help'.\n", name);
    return EXIT_USAGE;
}
