/* mongomq shard-plan: the commands that place a partitioned queue on a sharded cluster
 * (a zone per shard, each partition's range of the locks and counters in a zone, the
 * locks and counters sharded on {partition: 1, _id: 1}, the messages on
 * {group_id: 1, _id: 1}), printed for mongosh or, with --apply, run one by one through
 * libmongoc. cli/README.md, "shard-plan", documents it. */
#include <getopt.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_SHARDS = OPT_FIRST_LOCAL, OPT_SHARD_NAMES, OPT_APPLY };

/* MongoDB's error codes (src/mongo/base/error_codes.yml) that mean a step was done
 * before, for the steps where they do. */
#define CODE_ILLEGAL_OPERATION 20      /* shardCollection, 3.2-3.6: "already sharded" */
#define CODE_ALREADY_INITIALIZED 23    /* enableSharding before 4.2; shardCollection 4.0-4.2 */
#define CODE_INDEX_OPTIONS_CONFLICT 85 /* createIndexes: these keys, another index name */

typedef enum { STEP_ENABLE, STEP_ZONE, STEP_RANGE, STEP_INDEX, STEP_SHARD } step_kind;

typedef struct step {
    step_kind kind;
    char why[600];   /* the comment line printed before it */
    char label[512]; /* how errors name it: "updateZoneKeyRange shop.q_locks, partition 3" */
    int admin;       /* run on admin, else on the queue's database */
    bson_t *cmd;
} step;

typedef struct plan {
    step *steps;
    size_t n, cap;
    const char *db, *prefix;
} plan;

static step *plan_add(plan *p, step_kind kind, int admin) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        step *s = realloc(p->steps, cap * sizeof *s);
        if (s == NULL) return NULL;
        p->steps = s;
        p->cap = cap;
    }
    step *s = &p->steps[p->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->admin = admin;
    s->cmd = bson_new();
    return s;
}

static void plan_free(plan *p) {
    for (size_t i = 0; i < p->n; i++) bson_destroy(p->steps[i].cmd);
    free(p->steps);
}

/* ---- printing: BSON as the JSON mongosh takes, MinKey as mongosh's MinKey ------- */

static void print_string(FILE *out, const char *s, uint32_t len) {
    fputc('"', out);
    for (uint32_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void print_doc(FILE *out, const bson_t *doc, int array);

static void print_value(FILE *out, const bson_iter_t *it) {
    uint32_t len;
    const uint8_t *data;
    bson_t sub;
    switch (bson_iter_type(it)) {
        case BSON_TYPE_UTF8: {
            const char *s = bson_iter_utf8(it, &len);
            print_string(out, s, len);
            break;
        }
        case BSON_TYPE_INT32:
            fprintf(out, "%d", bson_iter_int32(it));
            break;
        case BSON_TYPE_INT64:
            fprintf(out, "NumberLong(\"%lld\")", (long long)bson_iter_int64(it));
            break;
        case BSON_TYPE_BOOL:
            fputs(bson_iter_bool(it) ? "true" : "false", out);
            break;
        case BSON_TYPE_MINKEY:
            fputs("MinKey", out);
            break;
        case BSON_TYPE_MAXKEY:
            fputs("MaxKey", out);
            break;
        case BSON_TYPE_DOCUMENT:
        case BSON_TYPE_ARRAY:
            if (bson_iter_type(it) == BSON_TYPE_DOCUMENT)
                bson_iter_document(it, &len, &data);
            else
                bson_iter_array(it, &len, &data);
            if (bson_init_static(&sub, data, len)) print_doc(out, &sub, bson_iter_type(it) == BSON_TYPE_ARRAY);
            break;
        default: /* the plan holds nothing else */
            fputs("null", out);
            break;
    }
}

static void print_doc(FILE *out, const bson_t *doc, int array) {
    bson_iter_t it;
    int first = 1;
    fputc(array ? '[' : '{', out);
    if (bson_iter_init(&it, doc)) {
        while (bson_iter_next(&it)) {
            if (!first) fputs(", ", out);
            first = 0;
            if (!array) {
                print_string(out, bson_iter_key(&it), bson_iter_key_len(&it));
                fputs(": ", out);
            }
            print_value(out, &it);
        }
    }
    fputc(array ? ']' : '}', out);
}

static void print_step(FILE *out, const plan *p, const step *s) {
    fprintf(out, "// %s\n", s->why);
    if (s->admin) {
        fputs("db.adminCommand(", out);
    } else {
        fputs("db.getSiblingDB(", out);
        print_string(out, p->db, (uint32_t)strlen(p->db));
        fputs(").runCommand(", out);
    }
    print_doc(out, s->cmd, 0);
    fputs(")\n", out);
}

/* ---- the plan ------------------------------------------------------------------- */

/* {field: 1, _id: 1} */
static void append_key(bson_t *doc, const char *name, const char *field) {
    bson_t key;
    BSON_APPEND_DOCUMENT_BEGIN(doc, name, &key);
    BSON_APPEND_INT32(&key, field, 1);
    BSON_APPEND_INT32(&key, "_id", 1);
    bson_append_document_end(doc, &key);
}

/* {partition: k, _id: MinKey}: where partition k starts (and k - 1 ends). */
static void append_bound(bson_t *doc, const char *name, int k) {
    bson_t b;
    BSON_APPEND_DOCUMENT_BEGIN(doc, name, &b);
    BSON_APPEND_INT32(&b, "partition", k);
    BSON_APPEND_MINKEY(&b, "_id");
    bson_append_document_end(doc, &b);
}

/* "0, 2, 4" or, for many, "the 512 partitions k with k mod 2 = 0". */
static void zone_partitions(char *buf, size_t size, int zone, int partitions, int shards) {
    int count = (partitions - zone + shards - 1) / shards;
    if (count > 6) {
        snprintf(buf, size, "the %d partitions k with k mod %d = %d", count, shards, zone);
        return;
    }
    size_t n = (size_t)snprintf(buf, size, "partition%s", count > 1 ? "s" : "");
    for (int k = zone, i = 0; k < partitions && n < size; k += shards, i++)
        n += (size_t)snprintf(buf + n, size - n, "%s %d", i ? "," : "", k);
}

static int build_plan(plan *p, int partitions, int shards, char **names) {
    char ns_locks[400], ns_counters[400], ns_messages[400], locks[300], counters[300];
    snprintf(locks, sizeof locks, "%s_locks", p->prefix);
    snprintf(counters, sizeof counters, "%s_counters", p->prefix);
    snprintf(ns_locks, sizeof ns_locks, "%s.%s", p->db, locks);
    snprintf(ns_counters, sizeof ns_counters, "%s.%s", p->db, counters);
    snprintf(ns_messages, sizeof ns_messages, "%s.%s_messages", p->db, p->prefix);
    step *s;

    if ((s = plan_add(p, STEP_ENABLE, 1)) == NULL) return -1;
    snprintf(s->why, sizeof s->why,
             "Sharding enabled on the database: needed before shardCollection until MongoDB 6.0, harmless since");
    snprintf(s->label, sizeof s->label, "enableSharding %s", p->db);
    BSON_APPEND_UTF8(s->cmd, "enableSharding", p->db);

    /* One partition: the locks and counters stay unsharded, as mongomq requires of a
     * queue of one partition (docs/design.md, "Sharding"); only the messages spread. */
    int zones = partitions > 1 ? (shards < partitions ? shards : partitions) : 0;
    for (int i = 0; i < zones; i++) {
        char parts[200];
        zone_partitions(parts, sizeof parts, i, partitions, shards);
        if ((s = plan_add(p, STEP_ZONE, 1)) == NULL) return -1;
        snprintf(s->why, sizeof s->why, "Zone mongomq-%s-z%d on shard %s: %s", p->prefix, i, names[i], parts);
        snprintf(s->label, sizeof s->label, "addShardToZone %s", names[i]);
        char zone[300];
        snprintf(zone, sizeof zone, "mongomq-%s-z%d", p->prefix, i);
        BSON_APPEND_UTF8(s->cmd, "addShardToZone", names[i]);
        BSON_APPEND_UTF8(s->cmd, "zone", zone);
    }
    for (int k = 0; partitions > 1 && k < partitions; k++) {
        char zone[300];
        snprintf(zone, sizeof zone, "mongomq-%s-z%d", p->prefix, k % shards);
        for (int c = 0; c < 2; c++) {
            if ((s = plan_add(p, STEP_RANGE, 1)) == NULL) return -1;
            const char *ns = c == 0 ? ns_locks : ns_counters;
            if (k == 0 && c == 0)
                snprintf(s->why, sizeof s->why,
                         "Partition 0's locks in zone %s (the ranges come before shardCollection: an empty "
                         "collection is then sharded with one chunk per range, on its shard)",
                         zone);
            else
                snprintf(s->why, sizeof s->why, "Partition %d's %s in zone %s", k, c == 0 ? "locks" : "counter", zone);
            snprintf(s->label, sizeof s->label, "updateZoneKeyRange %s, partition %d", ns, k);
            BSON_APPEND_UTF8(s->cmd, "updateZoneKeyRange", ns);
            append_bound(s->cmd, "min", k);
            append_bound(s->cmd, "max", k + 1);
            BSON_APPEND_UTF8(s->cmd, "zone", zone);
        }
    }
    for (int c = 0; partitions > 1 && c < 2; c++) {
        if ((s = plan_add(p, STEP_INDEX, 0)) == NULL) return -1;
        snprintf(s->why, sizeof s->why, "The shard key's index on the %s%s", c == 0 ? "locks" : "counters",
                 c == 0 ? " (the library makes the claim's index itself)" : "");
        snprintf(s->label, sizeof s->label, "createIndexes %s.%s", p->db, c == 0 ? locks : counters);
        BSON_APPEND_UTF8(s->cmd, "createIndexes", c == 0 ? locks : counters);
        bson_t list, index;
        BSON_APPEND_ARRAY_BEGIN(s->cmd, "indexes", &list);
        BSON_APPEND_DOCUMENT_BEGIN(&list, "0", &index);
        append_key(&index, "key", "partition");
        BSON_APPEND_UTF8(&index, "name", "partition_1__id_1");
        bson_append_document_end(&list, &index);
        bson_append_array_end(s->cmd, &list);
    }
    for (int c = 0; partitions > 1 && c < 2; c++) {
        if ((s = plan_add(p, STEP_SHARD, 1)) == NULL) return -1;
        snprintf(s->why, sizeof s->why, "%s",
                 c == 0 ? "The locks sharded by partition: each command a publish, claim or ack sends them goes "
                          "to one shard"
                        : "The counters sharded by partition: partition k's seq counter is on partition k's shard");
        snprintf(s->label, sizeof s->label, "shardCollection %s", c == 0 ? ns_locks : ns_counters);
        BSON_APPEND_UTF8(s->cmd, "shardCollection", c == 0 ? ns_locks : ns_counters);
        append_key(s->cmd, "key", "partition");
    }
    if ((s = plan_add(p, STEP_SHARD, 1)) == NULL) return -1;
    snprintf(s->why, sizeof s->why,
             "The messages sharded by group, not by partition: every command on them has an equality on group_id. "
             "A unique dedup_key index cannot live under this key: shard before the queue's first open (it then "
             "takes no dedup keys), or leave the messages unsharded");
    snprintf(s->label, sizeof s->label, "shardCollection %s", ns_messages);
    BSON_APPEND_UTF8(s->cmd, "shardCollection", ns_messages);
    append_key(s->cmd, "key", "group_id");
    return 0;
}

/* ---- --apply -------------------------------------------------------------------- */

/* The server's error for a failed command: EXIT_UNREACHABLE when it was not reached. */
static int error_exit(const bson_error_t *e) {
    if (e->domain == MONGOC_ERROR_SERVER || e->domain == MONGOC_ERROR_WRITE_CONCERN) return EXIT_FAIL;
    if (e->domain == MONGOC_ERROR_SERVER_SELECTION || e->domain == MONGOC_ERROR_STREAM) return EXIT_UNREACHABLE;
    return EXIT_FAIL;
}

/* "message (code 23 AlreadyInitialized)" */
static void describe(char *buf, size_t size, const bson_error_t *e, const bson_t *reply) {
    bson_iter_t it;
    const char *name = "";
    if (e->domain == MONGOC_ERROR_SERVER && bson_iter_init_find(&it, reply, "codeName") && BSON_ITER_HOLDS_UTF8(&it))
        name = bson_iter_utf8(&it, NULL);
    if (e->domain == MONGOC_ERROR_SERVER)
        snprintf(buf, size, "%s (code %u%s%s)", e->message, e->code, name[0] ? " " : "", name);
    else
        snprintf(buf, size, "%s", e->message);
}

/* Two shard keys alike: the same fields in order, each 1 (any number type) or the same
 * string ("hashed"). */
static int same_key(const bson_t *a, const bson_t *b) {
    bson_iter_t x, y;
    if (!bson_iter_init(&x, a) || !bson_iter_init(&y, b)) return 0;
    for (;;) {
        int nx = bson_iter_next(&x), ny = bson_iter_next(&y);
        if (!nx || !ny) return nx == ny;
        if (strcmp(bson_iter_key(&x), bson_iter_key(&y)) != 0) return 0;
        if (BSON_ITER_HOLDS_NUMBER(&x) && BSON_ITER_HOLDS_NUMBER(&y)) {
            if (bson_iter_as_int64(&x) != bson_iter_as_int64(&y)) return 0;
        } else if (BSON_ITER_HOLDS_UTF8(&x) && BSON_ITER_HOLDS_UTF8(&y)) {
            if (strcmp(bson_iter_utf8(&x, NULL), bson_iter_utf8(&y, NULL)) != 0) return 0;
        } else {
            return 0;
        }
    }
}

/* Older servers answer shardCollection of a collection sharded before with an error
 * (20 until 3.6, 23 in 4.0 and 4.2), whatever its key: config.collections says whether
 * it is ours. 1 if the collection is sharded on the step's key; else 0, with what was
 * found in `found`. */
static int sharded_alike(mongoc_client_t *client, const step *s, char *found, size_t size) {
    bson_iter_t it;
    snprintf(found, size, "config.collections could not be read");
    if (!bson_iter_init_find(&it, s->cmd, "shardCollection")) return 0;
    const char *ns = bson_iter_utf8(&it, NULL);
    bson_t key;
    uint32_t len;
    const uint8_t *data;
    if (!bson_iter_init_find(&it, s->cmd, "key")) return 0;
    bson_iter_document(&it, &len, &data);
    if (!bson_init_static(&key, data, len)) return 0;

    mongoc_collection_t *coll = mongoc_client_get_collection(client, "config", "collections");
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(ns));
    mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
    const bson_t *doc;
    int alike = 0;
    if (mongoc_cursor_next(cursor, &doc)) {
        bson_t found_key;
        if (bson_iter_init_find(&it, doc, "dropped") && bson_iter_as_bool(&it)) {
            snprintf(found, size, "config.collections says %s was dropped", ns);
        } else if (bson_iter_init_find(&it, doc, "key") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_iter_document(&it, &len, &data);
            if (bson_init_static(&found_key, data, len)) {
                alike = same_key(&key, &found_key);
                char *json = bson_as_relaxed_extended_json(&found_key, NULL);
                snprintf(found, size, "config.collections has %s sharded on %s", ns, json ? json : "?");
                bson_free(json);
            }
        }
    } else {
        bson_error_t e;
        if (mongoc_cursor_error(cursor, &e))
            snprintf(found, size, "config.collections could not be read: %s", e.message);
        else
            snprintf(found, size, "config.collections has no entry for %s", ns);
    }
    mongoc_cursor_destroy(cursor);
    bson_destroy(filter);
    mongoc_collection_destroy(coll);
    return alike;
}

/* Whether a failed step was done before: 1 with why in `note`, else 0 (with anything
 * that explains the failure in `note`, or ""). */
static int already_done(mongoc_client_t *client, const step *s, const bson_error_t *e, char *note, size_t size) {
    note[0] = '\0';
    if (e->domain != MONGOC_ERROR_SERVER) return 0;
    switch (s->kind) {
        case STEP_ENABLE:
            if (e->code != CODE_ALREADY_INITIALIZED) return 0;
            snprintf(note, size, "sharding was enabled before");
            return 1;
        case STEP_INDEX:
            if (e->code != CODE_INDEX_OPTIONS_CONFLICT) return 0;
            snprintf(note, size, "an index on these keys exists under another name, and serves as well");
            return 1;
        case STEP_SHARD: {
            if (e->code != CODE_ILLEGAL_OPERATION && e->code != CODE_ALREADY_INITIALIZED) return 0;
            char found[600];
            int alike = sharded_alike(client, s, found, sizeof found);
            if (alike)
                snprintf(note, size, "sharded before on this key (config.collections)");
            else
                snprintf(note, size, "%s", found);
            return alike;
        }
        default: /* addShardToZone and updateZoneKeyRange are idempotent: ok when done before */
            return 0;
    }
}

/* The shards' names, from listShards (in its order) */
static int list_shards(cli_ctx *ctx, mongoc_client_t *client, char ***names, size_t *count) {
    bson_t *cmd = BCON_NEW("listShards", BCON_INT32(1));
    bson_t reply;
    bson_error_t e;
    int rc = EXIT_OK;
    *names = NULL;
    *count = 0;
    if (!mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &e)) {
        char why[1200];
        describe(why, sizeof why, &e, &reply);
        rc = error_exit(&e);
        cli_error(ctx, "listShards (the shards' names; or give --shard-names): %s%s",
                  rc == EXIT_UNREACHABLE ? "server unreachable: " : "", why);
        goto out;
    }
    bson_iter_t it, arr;
    if (bson_iter_init_find(&it, &reply, "shards") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr)) {
        while (bson_iter_next(&arr)) {
            bson_iter_t id;
            if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &id) || !bson_iter_find(&id, "_id") ||
                !BSON_ITER_HOLDS_UTF8(&id))
                continue;
            char **n = realloc(*names, (*count + 1) * sizeof *n);
            if (n == NULL) {
                rc = EXIT_FAIL;
                goto out;
            }
            *names = n;
            (*names)[(*count)++] = strdup(bson_iter_utf8(&id, NULL));
        }
    }
out:
    bson_destroy(&reply);
    bson_destroy(cmd);
    return rc;
}

static int apply_plan(cli_ctx *ctx, mongoc_client_t *client, const plan *p) {
    size_t already = 0;
    for (size_t i = 0; i < p->n; i++) {
        const step *s = &p->steps[i];
        print_step(stdout, p, s);
        fflush(stdout);
        bson_t reply;
        bson_error_t e;
        int ok = mongoc_client_command_simple(client, s->admin ? "admin" : p->db, s->cmd, NULL, &reply, &e);
        if (ok) {
            puts("// ok");
        } else {
            char why[1200], note[800];
            describe(why, sizeof why, &e, &reply);
            if (already_done(client, s, &e, note, sizeof note)) {
                printf("// done before: %s (the server: %s)\n", note, why);
                already++;
            } else {
                int rc = error_exit(&e);
                printf("// failed: %s%s%s\n", why, note[0] ? "; " : "", note);
                fflush(stdout);
                char before[64] = "no step before it was applied";
                if (i == 1) snprintf(before, sizeof before, "step 1 was applied");
                if (i > 1) snprintf(before, sizeof before, "steps 1-%zu were applied", i);
                cli_error(ctx, "step %zu of %zu, %s: %s%s%s%s; %s, the rest not sent", i + 1, p->n, s->label,
                          rc == EXIT_UNREACHABLE ? "server unreachable: " : "the server refused: ", why,
                          note[0] ? "; " : "", note, before);
                bson_destroy(&reply);
                return rc;
            }
        }
        bson_destroy(&reply);
    }
    fflush(stdout);
    fprintf(stderr, "mongomq shard-plan: %zu steps applied (%zu done before)\n", p->n, already);
    return EXIT_OK;
}

/* ---- the command ---------------------------------------------------------------- */

/* Splits "a,b,c" into *names (each non-empty, none twice); -1 with a message. */
static int split_names(cli_ctx *ctx, const char *arg, char ***names, size_t *count) {
    *names = NULL;
    *count = 0;
    const char *p = arg;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || len > 200) {
            cli_usage_error(ctx, "--shard-names '%s': %s", arg, len ? "a name over 200 bytes" : "an empty name");
            return -1;
        }
        for (size_t i = 0; i < *count; i++)
            if (strlen((*names)[i]) == len && strncmp((*names)[i], p, len) == 0) {
                cli_usage_error(ctx, "--shard-names '%s': '%.*s' twice", arg, (int)len, p);
                return -1;
            }
        char **n = realloc(*names, (*count + 1) * sizeof *n);
        if (n == NULL) return -1;
        *names = n;
        (*names)[(*count)++] = strndup(p, len);
        if (end == NULL) return 0;
        p = end + 1;
    }
}

static void free_names(char **names, size_t count) {
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

int cmd_shard_plan(cli_ctx *ctx, int argc, char **argv) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"shards", required_argument, NULL, OPT_SHARDS},
        {"shard-names", required_argument, NULL, OPT_SHARD_NAMES},
        {"apply", no_argument, NULL, OPT_APPLY},
        {NULL, 0, NULL, 0},
    };
    long partitions, shards = 0;
    int apply = 0, c, code, rc = EXIT_OK;
    char **names = NULL;
    size_t nnames = 0;
    const char *names_arg = NULL;
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        switch (c) {
            case OPT_SHARDS:
                if (cli_parse_int(optarg, 1, MQ_PARTITIONS_MAX, &shards) != 0)
                    return cli_usage_error(ctx, "--shards: expected 1..%d, got '%s'", MQ_PARTITIONS_MAX, optarg);
                break;
            case OPT_SHARD_NAMES:
                names_arg = optarg;
                break;
            case OPT_APPLY:
                apply = 1;
                break;
            default:
                return cli_try(ctx);
        }
    }
    if (optind < argc) return cli_usage_error(ctx, "unexpected argument '%s'", argv[optind]);
    /* The common --partitions (or MONGOMQ_PARTITIONS): here the plan's P. */
    if ((rc = cli_resolve_partitions(ctx)) != EXIT_OK) return rc;
    partitions = ctx->partitions;
    if (partitions == 0) return cli_usage_error(ctx, "--partitions P is required (1..%d)", MQ_PARTITIONS_MAX);
    if (shards == 0) return cli_usage_error(ctx, "--shards S is required (1..%d)", MQ_PARTITIONS_MAX);
    const char *uri = cli_resolve_env(ctx);
    plan p = {.db = ctx->db ? ctx->db : "mongomq", .prefix = ctx->prefix ? ctx->prefix : "mq"};
    if (p.db[0] == '\0' || strlen(p.db) > 63 || strpbrk(p.db, "/\\. \"$") != NULL)
        return cli_usage_error(ctx, "--db '%s': not a database name", p.db);
    if (p.prefix[0] == '\0' || strlen(p.prefix) > 200 || strchr(p.prefix, '$') != NULL)
        return cli_usage_error(ctx, "--prefix '%s': not a collection prefix", p.prefix);
    if (names_arg != NULL) {
        if (split_names(ctx, names_arg, &names, &nnames) != 0) {
            free_names(names, nnames);
            return EXIT_USAGE;
        }
        if (nnames != (size_t)shards) {
            free_names(names, nnames);
            return cli_usage_error(ctx, "--shard-names '%s': %zu names for --shards %ld", names_arg, nnames, shards);
        }
    }

    if (partitions == 1)
        cli_error(ctx,
                  "warning: --partitions 1: the queue's locks and counters then live on one shard (unsharded, on "
                  "the database's primary shard, as mongomq requires of one partition); only its messages are "
                  "sharded");
    else if (shards == partitions + 1)
        cli_error(ctx, "warning: --shards %ld > --partitions %ld: shard %ld gets no partition (only messages)", shards,
                  partitions, partitions);
    else if (shards > partitions)
        cli_error(ctx, "warning: --shards %ld > --partitions %ld: shards %ld..%ld get no partition (only messages)",
                  shards, partitions, partitions, shards - 1);

    mongoc_client_t *client = NULL;
    if (apply) {
        mongoc_init();
        cli_log_setup(ctx);
        char *text = cli_uri_with_timeout(uri);
        bson_error_t e;
        mongoc_uri_t *u = text ? mongoc_uri_new_with_error(text, &e) : NULL;
        free(text);
        if (u == NULL) {
            free_names(names, nnames);
            return cli_usage_error(ctx, "bad --uri: %s", e.message);
        }
        client = mongoc_client_new_from_uri(u);
        mongoc_uri_destroy(u);
        if (client == NULL) {
            free_names(names, nnames);
            return cli_usage_error(ctx, "bad --uri");
        }
        mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
        if (names == NULL && partitions > 1) {
            if ((rc = list_shards(ctx, client, &names, &nnames)) != EXIT_OK) goto out;
            if (nnames != (size_t)shards) {
                fprintf(stderr, "mongomq shard-plan: --shards %ld, but listShards names %zu:", shards, nnames);
                for (size_t i = 0; i < nnames; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
                fputs("\nTry 'mongomq shard-plan --shard-names ...' to pick them.\n", stderr);
                rc = EXIT_USAGE;
                goto out;
            }
        }
    }
    int placeholders = names == NULL;
    if (placeholders) {
        nnames = (size_t)shards;
        names = calloc(nnames, sizeof *names);
        if (names == NULL) {
            rc = EXIT_FAIL;
            goto out;
        }
        for (size_t i = 0; i < nnames; i++) {
            char n[32];
            snprintf(n, sizeof n, "<shard%zu>", i);
            names[i] = strdup(n);
        }
    }
    if (build_plan(&p, (int)partitions, (int)shards, names) != 0) {
        cli_error(ctx, "out of memory");
        rc = EXIT_FAIL;
        goto out;
    }
    printf("// mongomq shard-plan: the queue %s.%s, %ld partition%s on %ld shard%s (mongosh on a mongos)\n", p.db,
           p.prefix, partitions, partitions > 1 ? "s" : "", shards, shards > 1 ? "s" : "");
    if (placeholders && partitions > 1)
        printf(
            "// <shard0>..<shard%ld> stand for the shards' names (db.adminCommand({listShards: 1})): give "
            "--shard-names, or --apply reads them\n",
            shards - 1);
    if (apply) {
        rc = apply_plan(ctx, client, &p);
    } else {
        for (size_t i = 0; i < p.n; i++) print_step(stdout, &p, &p.steps[i]);
        if (fflush(stdout) != 0) rc = EXIT_FAIL;
    }
out:
    plan_free(&p);
    free_names(names, nnames);
    if (client != NULL) mongoc_client_destroy(client);
    return rc;
}
