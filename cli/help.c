/* The help texts of the mongomq command: `mongomq --help`, `mongomq COMMAND --help`
 * and `mongomq help [COMMAND]` print them; cli/README.md follows them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The common options as each command's help lists them; shard-plan's --partitions is
 * its own (required, no queue to read it from). */
#define COMMON_OPTIONS_HEAD                                                \
  "Common options (before or after the command):\n"                        \
  "      --uri URI        MongoDB URI (default: $MONGOMQ_URI, else\n"      \
  "                       mongodb://localhost:27017)\n"                    \
  "      --db NAME        database (default: $MONGOMQ_DB, else mongomq)\n" \
  "      --prefix NAME    collections' prefix (default: $MONGOMQ_PREFIX, else mq)\n"
#define COMMON_OPTIONS_TAIL                 \
  "  -v, --verbose        more on stderr\n" \
  "  -h, --help           this help\n"
#define COMMON_OPTIONS_TEXT                                                        \
  COMMON_OPTIONS_HEAD                                                              \
  "      --partitions P   the queue's partitions (default: $MONGOMQ_PARTITIONS,\n" \
  "                       else whatever the queue has; 1 for a new queue)\n" COMMON_OPTIONS_TAIL

static const char main_help[] =
    "Usage: mongomq [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "Publish, work, watch and repair a mongomq queue from the shell.\n"
    "\n"
    "Commands:\n"
    "  publish GROUP [EVENT]   publish EVENT, or one event per line of stdin\n"
    "  work --exec CMD         a worker: run CMD for each event, ack or retry\n"
    "  stats                   groups ready/leased/parked, events per priority,\n"
    "                          oldest age, dead letters\n"
    "  peek [GROUP]            the next events, without claiming them\n"
    "  dead list|count|requeue|purge\n"
    "                          look at and act on the dead letters\n"
    "  repair                  make events claimable whose group lost its lock\n"
    "  purge-group GROUP       delete a group's events\n"
    "  drop                    delete the whole queue\n"
    "  groups                  the groups: state, holder, backlog, head age\n"
    "  pause GROUP, resume GROUP\n"
    "                          stop and restart claims of one group\n"
    "  web [QUEUE...]          a dashboard in the browser, /metrics, a JSON API\n"
    "  shard-plan --partitions P --shards S\n"
    "                          the commands that place a partitioned queue on a\n"
    "                          sharded cluster; --apply runs them\n"
    "  help [COMMAND]          this help, or a command's\n"
    "\n"
    "Options (also accepted after COMMAND):\n"
    "      --uri URI        MongoDB URI (default: $MONGOMQ_URI, else\n"
    "                       mongodb://localhost:27017)\n"
    "      --db NAME        database (default: $MONGOMQ_DB, else mongomq)\n"
    "      --prefix NAME    collections' prefix (default: $MONGOMQ_PREFIX, else mq):\n"
    "                       the queue is NAME.PREFIX_messages, _locks, _counters, _dead\n"
    "      --partitions P   open the queue with P partitions, 1..1024, which makes a\n"
    "                       new queue partitioned (default: $MONGOMQ_PARTITIONS, else\n"
    "                       the number the queue has; 1 for a new queue)\n"
    "  -v, --verbose        more on stderr (libmongoc's warnings, each event of work)\n"
    "  -h, --help           this help; `mongomq COMMAND --help` for a command's\n"
    "      --version        the command's and the library's versions\n"
    "\n"
    "Unless the URI sets serverSelectionTimeoutMS, an unreachable server is reported\n"
    "after 5 seconds. Only data goes to stdout (seqs, tables, JSON); messages go to\n"
    "stderr, so the output composes with pipes and jq.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  failure: the server refused, a confirmation was declined, a command of\n"
    "     `work` had to be killed, ...\n"
    "  2  usage: a bad option or argument\n"
    "  3  the server could not be reached\n";

static const char publish_help[] =
    "Usage: mongomq publish [OPTIONS] GROUP [EVENT]\n"
    "\n"
    "Publishes EVENT at the tail of GROUP or, without EVENT, one event per line of\n"
    "stdin (or of --file): JSON lines, typically. Empty lines are skipped; a line's\n"
    "end (\\n or \\r\\n) is not part of its event. Prints each event's seq on stdout,\n"
    "one per line. On a terminal, long inputs show a progress line on stderr.\n"
    "With a dedup key, an event whose key is already taken (by an event still queued,\n"
    "or one published within the window) is not added: its line on stdout is the\n"
    "first event's seq, a tab and \"duplicate\" (exit status 0). So a publish retried\n"
    "after a failure, by the same or another process, adds its events once.\n"
    "\n"
    "Options:\n"
    "  -p, --priority N     the group's priority, 0..4 (default 0); it counts only\n"
    "                       when this publish creates the group\n"
    "      --at TIME        not delivered before TIME: epoch seconds (1767225600)\n"
    "                       or ISO 8601 with a zone (2026-01-01T09:00:00Z,\n"
    "                       2026-01-01T10:00+01:00)\n"
    "      --delay SECONDS  not delivered before SECONDS from now\n"
    "  -f, --file PATH      read the events from PATH (\"-\": stdin)\n"
    "      --raw            the whole input is ONE event, any bytes (binary too)\n"
    "      --json           refuse an event that is not valid JSON: nothing from its\n"
    "                       batch on is published\n"
    "  -b, --batch N        publish lines N at a time, in 3 server commands per batch\n"
    "                       (1..10000, default 100; scheduled events go one by one)\n"
    "      --dedup-key K    the event's dedup key (EVENT or --raw), 1..512 bytes\n"
    "      --dedup-key-field NAME\n"
    "                       each line's key: its JSON field NAME (a string or an\n"
    "                       integer); a line without one stops the publish there\n"
    "      --dedup-window SECONDS\n"
    "                       how long a key stays taken after its publish, also once\n"
    "                       its event was acked: 1..604800 (default 300)\n"
    "      --dedup-scope queue|group\n"
    "                       where a key must be unique (default queue)\n"
    "      --attr KEY=VALUE an attribute of every event published (up to 16; keys\n"
    "                       of ASCII letters, digits, '_', '-', '.'); repeat it\n"
    "\n" COMMON_OPTIONS_TEXT
    "\n"
    "Examples:\n"
    "  mongomq publish customer-17 '{\"order\": 1042}'\n"
    "  jq -c '.[]' orders.json | mongomq publish orders --priority 2\n"
    "  mongomq publish reminders '{\"call\": 42}' --at 2026-01-01T09:00:00Z\n"
    "  mongomq publish images --raw --file photo.jpg\n"
    "  mongomq publish orders '{\"order\": 1042}' --dedup-key order-1042\n"
    "  jq -c '.[]' orders.json | mongomq publish orders --dedup-key-field order\n"
    "  mongomq publish orders '{\"order\": 7}' --attr content-type=application/json\n";

static const char work_help[] =
    "Usage: mongomq work --exec CMD [OPTIONS]\n"
    "\n"
    "A worker: claims events and runs CMD with /bin/sh -c for each one, the event on\n"
    "its stdin and in its environment MQ_GROUP (the group), MQ_SEQ (the event's seq)\n"
    "and MQ_ATTEMPTS (1 on the first delivery), and each of its attributes as\n"
    "MQ_ATTR_<KEY> (the key in upper case, '-' and '.' as '_': content-type is\n"
    "MQ_ATTR_CONTENT_TYPE). CMD's stdout and stderr are the worker's. Exit status 0 acks the event; anything else (or "
    "a signal) nacks it:\n"
    "the group waits for a back-off, then the event is delivered again. While CMD\n"
    "runs, its lease is extended every VISIBILITY/3 seconds. Groups stay FIFO: one\n"
    "event of a group at a time, in publish order.\n"
    "\n"
    "Options:\n"
    "  -e, --exec CMD          the command (required)\n"
    "  -c, --concurrency N     run up to N commands at once (1..256, default 1)\n"
    "      --visibility SECS   the lease (default 30): if this worker dies, its\n"
    "                          events go to another worker after that long\n"
    "      --min-priority N    claim only groups of priority >= N (0..4, default 0)\n"
    "      --backoff BASE,CAP  after a failure, wait BASE * 2^(attempts-1) seconds,\n"
    "                          at most CAP, times a random 0.5..1 (default 1,60;\n"
    "                          0,0 retries at once)\n"
    "      --max-attempts N    after N failed deliveries the event goes to the dead\n"
    "                          letters (`mongomq dead`) instead (default 0: never)\n"
    "      --idle SECS         stop once nothing was due for SECS (default: run until\n"
    "                          signalled)\n"
    "      --limit N           stop after claiming N events\n"
    "      --worker-id ID      the id recorded in the locks (default host:pid)\n"
    "      --partition LIST    claim only from these partitions of a partitioned\n"
    "                          queue: numbers and ranges, e.g. 0,2-3 (default: all)\n"
    "\n"
    "SIGINT or SIGTERM (Ctrl-C) stops claiming and lets the running commands finish;\n"
    "their events are acked or nacked as usual. A lease claimed just as the signal\n"
    "came gets no command: it is given back with mq_unclaim, which is not a\n"
    "delivery (the event keeps its attempts count and its place in line; the\n"
    "summary ends with \"1 given back unstarted\"). A second signal kills the\n"
    "running commands (SIGKILL to each command's process group) and gives their\n"
    "events back for another delivery at once. The worker waits for events with a\n"
    "waiting claim, not a polling loop.\n"
    "At the end it prints a summary line on stderr:\n"
    "  mongomq work: 12 claimed, 11 acked, 1 failed, 0 killed, 0 leases lost\n"
    "Exit status 0 when it stopped (after --idle, --limit or a signal) with every\n"
    "command finished, 1 when commands were killed or the queue failed, 3 when the\n"
    "server could not be reached at start.\n"
    "\n" COMMON_OPTIONS_TEXT
    "\n"
    "Examples:\n"
    "  mongomq work --exec 'python3 handle.py' --concurrency 4 --max-attempts 5\n"
    "  mongomq work --exec 'echo \"$MQ_GROUP #$MQ_SEQ: $(cat)\"' --idle 1\n";

static const char stats_help[] =
    "Usage: mongomq stats [--json] [--watch SECONDS]\n"
    "\n"
    "The queue's state: its groups, ready (claimable now), leased (held by a worker,\n"
    "including groups nacked with a delay) and parked (waiting for a scheduled\n"
    "event); its events, per priority; how long the oldest has waited; its dead\n"
    "letters; with more than one partition, their number. Reads whole collections:\n"
    "for people and monitors, not every event.\n"
    "\n"
    "Options:\n"
    "      --json           the library's JSON object (mq_stats_json) on one line\n"
    "  -w, --watch SECS     again every SECS seconds until Ctrl-C (on a terminal the\n"
    "                       screen is redrawn; otherwise one table, or one JSON line,\n"
    "                       each time)\n"
    "\n" COMMON_OPTIONS_TEXT
    "\n"
    "Example:\n"
    "  mongomq stats --json | jq .groups.ready\n";

static const char peek_help[] =
    "Usage: mongomq peek [GROUP] [-n N] [--json]\n"
    "\n"
    "The next events, oldest seq first, of GROUP or of the whole queue, without\n"
    "claiming or changing anything. A table (SEQ GROUP PRI ATTEMPTS PUBLISHED DUE\n"
    "EVENT; on a terminal long events are cut), or with --json one object per line:\n"
    "{\"seq\", \"group\", \"priority\", \"attempts\"?, \"published_at\", \"not_before\"?,\n"
    "\"event\"}, where a binary event is {\"base64\": \"...\"}.\n"
    "\n"
    "Options:\n"
    "  -n, --limit N        at most N events (1..10000, default 10)\n"
    "      --json           JSON lines\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char dead_help[] =
    "Usage: mongomq dead list [-n N] [--offset K] [--json]\n"
    "       mongomq dead count\n"
    "       mongomq dead requeue SEQ...\n"
    "       mongomq dead requeue --all [--yes]\n"
    "       mongomq dead purge [--yes]\n"
    "\n"
    "The dead letters: events a worker failed --max-attempts times.\n"
    "  list      oldest first: a table (SEQ GROUP PRI ATTEMPTS DEAD_AT EVENT), or\n"
    "            JSON lines as `peek --json` with \"dead_at\"; -n N: at most N\n"
    "            (default 100)\n"
    "  count     how many there are\n"
    "  requeue   publish them again at the tail of their groups, with new seqs;\n"
    "            prints \"SEQ NEW_SEQ\" for each\n"
    "  purge     delete them all; prints how many\n"
    "\n"
    "Options:\n"
    "  -n, --limit N        list: at most N (1..1000, default 100)\n"
    "      --offset K       list: skip the K oldest first (paging)\n"
    "      --json           list: JSON lines\n"
    "      --all            requeue: every dead letter\n"
    "  -y, --yes            do not ask: `requeue --all` and `purge` ask on a\n"
    "                       terminal, and refuse without --yes otherwise\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char groups_help[] =
    "Usage: mongomq groups [--state S,...] [--id-prefix P] [--stuck] [--held-longer SEC]\n"
    "                      [--parked-beyond SEC] [--sort id|due] [-n N] [--after C]\n"
    "                      [--json]\n"
    "\n"
    "One page of the queue's groups: a table (GROUP STATE PRI ATTEMPTS BACKLOG\n"
    "HEAD AGE HOLDER HELD DUE IN), or with --json one object per line as\n"
    "mq_groups_json's rows. When there are more, stderr says the --after to give.\n"
    "\n"
    "Options:\n"
    "      --state S,...    ready, leased, parked, paused (default: all)\n"
    "      --id-prefix P    group ids starting with P\n"
    "      --stuck          heads delivered 2 times or more\n"
    "      --held-longer SEC  leases taken more than SEC seconds ago\n"
    "      --parked-beyond SEC  groups not due for more than SEC seconds\n"
    "      --sort id|due    by group id (default) or in the order claims take them\n"
    "  -n, --limit N        rows per page (1..1000, default 50)\n"
    "      --after C        the page after cursor C\n"
    "      --json           JSON lines\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char pause_help[] =
    "Usage: mongomq pause GROUP\n"
    "       mongomq resume GROUP\n"
    "\n"
    "pause: no worker claims GROUP (harel's neither) until it is resumed; a worker\n"
    "holding it keeps its lease until it acks or nacks. The pause outlasts the\n"
    "group draining and refilling and purge-group. A group with no events yet can\n"
    "be paused ahead. resume: claims take it again. Both are idempotent.\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char repair_help[] =
    "Usage: mongomq repair\n"
    "\n"
    "Makes claimable the events whose group has no lock (a publisher that died\n"
    "between its two writes); never changes a lock that exists. Prints how many\n"
    "locks it created. Reads every group: for start-up or a periodic sweep.\n"
    "Workers also do this by themselves now and then.\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char purge_group_help[] =
    "Usage: mongomq purge-group GROUP [--yes]\n"
    "\n"
    "Deletes GROUP's events and its lock; a worker holding the group gets \"lease\n"
    "lost\" from its ack. The group's dead letters stay. Events published while it\n"
    "runs are kept. Asks first on a terminal, refuses without --yes otherwise.\n"
    "\n"
    "Options:\n"
    "  -y, --yes            do not ask\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char drop_help[] =
    "Usage: mongomq drop [--yes]\n"
    "\n"
    "Drops the queue's collections: every event, lock, counter and dead letter. Not\n"
    "for a queue in use. Asks first on a terminal, refuses without --yes otherwise.\n"
    "\n"
    "Options:\n"
    "  -y, --yes            do not ask\n"
    "\n" COMMON_OPTIONS_TEXT;

static const char web_help[] =
    "Usage: mongomq web [OPTIONS] [QUEUE...]\n"
    "\n"
    "Serves a dashboard of the queue(s) over HTTP: the overview with charts over\n"
    "time, the groups (paged, filtered by GET parameters), one group with its\n"
    "oldest events and actions (purge, pause, resume), the dead letters (requeue,\n"
    "purge), the workers holding leases; /metrics for Prometheus, /healthz, and\n"
    "the JSON API under /api/ that the pages use. Runs until SIGINT or SIGTERM.\n"
    "\n"
    "QUEUE is DB.PREFIX, or PREFIX in --db. Without one: --prefix's queue if it is\n"
    "given, else every queue found in --db (a PREFIX_locks/PREFIX_messages pair).\n"
    "\n"
    "Options:\n"
    "      --listen HOST:PORT   where to listen (default 127.0.0.1:8080; port 0\n"
    "                       picks a free one, printed on stderr). A non-loopback\n"
    "                       address needs --token-file or --read-only\n"
    "      --token-file PATH    require this token (one line, 16+ characters): an\n"
    "                       'Authorization: Bearer TOKEN' header, or the login\n"
    "                       form, which sets a session cookie\n"
    "      --read-only      no actions: the pages show none and POSTs are refused\n"
    "      --cache SECONDS  stats (metrics, overview) are at most this old: one\n"
    "                       read per queue per interval (default 5)\n"
    "      --history-interval SECONDS\n"
    "                       one history sample per queue per interval, whoever\n"
    "                       writes it (default 10; 0: do not sample)\n"
    "      --history-keep N samples kept in PREFIX_web_history (default 8640: a\n"
    "                       day at 10 s)\n"
    "\n" COMMON_OPTIONS_TEXT
    "\n"
    "Examples:\n"
    "  mongomq web --db shop                 every queue of the database shop\n"
    "  mongomq web shop.orders shop.refunds --listen 0.0.0.0:8080 --token-file tok\n";

static const char shard_plan_help[] =
    "Usage: mongomq shard-plan --partitions P --shards S [--shard-names A,B,...]\n"
    "                          [--apply]\n"
    "\n"
    "Prints the commands that place a queue of P partitions on a cluster of S shards,\n"
    "for mongosh connected to a mongos: one per line, each after a // line that says\n"
    "why. Zone mongomq-PREFIX-zI holds shard I; partition K's range of the locks and\n"
    "of the counters ({partition: K, _id: MinKey} up to {partition: K+1, _id: MinKey})\n"
    "is in zone K mod S, set before the locks and counters are sharded on\n"
    "{partition: 1, _id: 1}; the messages are sharded on {group_id: 1, _id: 1}.\n"
    "With one partition only the messages are sharded (the locks and counters stay\n"
    "on the database's primary shard). Run it before the queue's first open.\n"
    "\n"
    "Options:\n"
    "      --partitions P   the queue's partitions, 1..1024 (required; default:\n"
    "                       $MONGOMQ_PARTITIONS)\n"
    "      --shards S       the shards to spread them over, 1..1024 (required; more\n"
    "                       shards than partitions leaves some without any)\n"
    "      --shard-names A,B,...\n"
    "                       the S shards' names, in zone order; without it the plan\n"
    "                       says <shard0>, <shard1>..., and --apply reads listShards\n"
    "      --apply          run the commands in order on --uri (a mongos), printing\n"
    "                       each with its outcome (// ok, // done before: ...,\n"
    "                       // failed: ...); the first failure stops it, naming the\n"
    "                       command and the server's message (exit 1). A step done\n"
    "                       before (sharding enabled, a collection sharded on the\n"
    "                       same key) is no failure\n"
    "\n" COMMON_OPTIONS_HEAD COMMON_OPTIONS_TAIL
    "\n"
    "Examples:\n"
    "  mongomq shard-plan --db shop --prefix orders --partitions 8 --shards 2\n"
    "  mongomq shard-plan --partitions 8 --shards 2 --apply --uri mongodb://mongos:27017\n";

static const struct {
    const char *name;
    const char *text;
} helps[] = {
    {"publish", publish_help},
    {"work", work_help},
    {"stats", stats_help},
    {"peek", peek_help},
    {"dead", dead_help},
    {"repair", repair_help},
    {"purge-group", purge_group_help},
    {"drop", drop_help},
    {"groups", groups_help},
    {"pause", pause_help},
    {"resume", pause_help},
    {"web", web_help},
    {"shard-plan", shard_plan_help},
};

const char *cli_help_text(const char *cmd) {
    if (cmd == NULL || cmd[0] == '\0') return main_help;
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++)
        if (strcmp(helps[i].name, cmd) == 0) return helps[i].text;
    return NULL;
}

void cli_print_help(const char *cmd, FILE *out) {
    const char *text = cli_help_text(cmd);
    fputs(text != NULL ? text : main_help, out);
}

/* A line of help text as roff: backslashes escaped, a leading '.' or '\'' made plain. */
static void roff_text(const char *text, FILE *out) {
    int line_start = 1;
    for (const char *p = text; *p; p++) {
        if (line_start && (*p == '.' || *p == '\'')) fputs("\\&", out);
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
        line_start = *p == '\n';
    }
}

void cli_print_man(FILE *out, const char *version) {
    fprintf(out, ".TH MONGOMQ 1 \"\" \"mongomq %s\" \"User Commands\"\n", version);
    fputs(".SH NAME\nmongomq \\- publish, work, watch and repair a mongomq queue from the shell\n", out);
    fputs(".SH DESCRIPTION\n.nf\n", out);
    roff_text(main_help, out);
    fputs(".fi\n", out);
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        fprintf(out, ".SH \"mongomq %s\"\n.nf\n", helps[i].name);
        roff_text(helps[i].text, out);
        fputs(".fi\n", out);
    }
    fputs(".SH SEE ALSO\nThe library's README.md and docs/design.md; cli/README.md.\n", out);
}
