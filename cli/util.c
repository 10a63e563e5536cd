/* What the subcommands share: errors and exit codes, opening the queue, parsing
 * option values, formatting times, confirmations, tables. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static void vreport(const cli_ctx *ctx, const char *fmt, va_list ap) {
    fprintf(stderr, "mongomq%s%s: ", ctx->cmd[0] ? " " : "", ctx->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const cli_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, fmt, ap);
    va_end(ap);
}

int cli_usage_error(const cli_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'mongomq%s%s --help'.\n", ctx->cmd[0] ? " " : "", ctx->cmd);
    return EXIT_USAGE;
}

int cli_try(const cli_ctx *ctx) {
    fprintf(stderr, "Try 'mongomq%s%s --help'.\n", ctx->cmd[0] ? " " : "", ctx->cmd);
    return EXIT_USAGE;
}

int cli_exit_code(mq_status st) {
    switch (st) {
        case MQ_OK:
            return EXIT_OK;
        case MQ_ERR_CONNECT:
            return EXIT_UNREACHABLE;
        case MQ_ERR_ARG:
            return EXIT_USAGE;
        default:
            return EXIT_FAIL;
    }
}

int cli_fail(const cli_ctx *ctx, const char *what, mq_status st, const mq_error *err) {
    const char *msg = err != NULL && err->message[0] ? err->message : "(no message)";
    if (st == MQ_ERR_CONNECT)
        cli_error(ctx, "%s: server unreachable (%s): %s", what, mq_status_name(st), msg);
    else
        cli_error(ctx, "%s: %s: %s", what, mq_status_name(st), msg);
    return cli_exit_code(st);
}

int cli_common_option(cli_ctx *ctx, int code, const char *arg, int *exit_code) {
    *exit_code = -1;
    switch (code) {
        case OPT_URI:
            ctx->uri = arg;
            return 1;
        case OPT_DB:
            ctx->db = arg;
            return 1;
        case OPT_PREFIX:
            ctx->prefix = arg;
            return 1;
        case OPT_PARTITIONS:
            if (cli_parse_int(arg, 1, MQ_PARTITIONS_MAX, &ctx->partitions) != 0)
                *exit_code = cli_usage_error(ctx, "--partitions: expected 1..%d, got '%s'", MQ_PARTITIONS_MAX, arg);
            return 1;
        case 'v':
            ctx->verbose++;
            return 1;
        case 'h':
            cli_print_help(ctx->cmd, stdout);
            *exit_code = EXIT_OK;
            return 1;
        default:
            return 0;
    }
}

/* libmongoc's log: errors always, warnings and messages with -v. */
static void log_handler(int level, const char *domain, const char *message, void *ctx) {
    int verbose = *(const int *)ctx;
    if (level <= 1 || (verbose > 0 && level <= 2) || (verbose > 1 && level <= 4))
        fprintf(stderr, "mongomq: libmongoc %s: %s\n", domain, message);
}

char *cli_uri_with_timeout(const char *uri) {
    size_t n = strlen(uri);
    int has = 0;
    for (const char *p = uri; *p; p++)
        if (strncasecmp(p, "serverselectiontimeoutms=", 25) == 0) has = 1;
    char *out = malloc(n + 64);
    if (out == NULL) return NULL;
    memcpy(out, uri, n + 1);
    if (has) return out;
    const char *scheme = strstr(uri, "://");
    const char *hosts = scheme != NULL ? scheme + 3 : uri;
    if (strchr(hosts, '?') != NULL)
        sprintf(out + n, "%sserverSelectionTimeoutMS=%d", uri[n - 1] == '?' ? "" : "&", CLI_DEFAULT_TIMEOUT_MS);
    else if (strchr(hosts, '/') != NULL)
        sprintf(out + n, "?serverSelectionTimeoutMS=%d", CLI_DEFAULT_TIMEOUT_MS);
    else
        sprintf(out + n, "/?serverSelectionTimeoutMS=%d", CLI_DEFAULT_TIMEOUT_MS);
    return out;
}

const char *cli_resolve_env(cli_ctx *ctx) {
    const char *uri = ctx->uri;
    if (uri == NULL) uri = getenv("MONGOMQ_URI");
    if (uri == NULL || uri[0] == '\0') uri = CLI_DEFAULT_URI;
    if (ctx->db == NULL && getenv("MONGOMQ_DB") != NULL && getenv("MONGOMQ_DB")[0] != '\0')
        ctx->db = getenv("MONGOMQ_DB");
    if (ctx->prefix == NULL && getenv("MONGOMQ_PREFIX") != NULL && getenv("MONGOMQ_PREFIX")[0] != '\0')
        ctx->prefix = getenv("MONGOMQ_PREFIX");
    return uri;
}

void cli_log_setup(const cli_ctx *ctx) {
    static int verbose;
    verbose = ctx->verbose;
    mq_log_set_handler(log_handler, &verbose);
}

int cli_resolve_partitions(cli_ctx *ctx) {
    const char *env = getenv("MONGOMQ_PARTITIONS");
    if (ctx->partitions != 0 || env == NULL || env[0] == '\0') return EXIT_OK;
    if (cli_parse_int(env, 1, MQ_PARTITIONS_MAX, &ctx->partitions) != 0)
        return cli_usage_error(ctx, "MONGOMQ_PARTITIONS: expected 1..%d, got '%s'", MQ_PARTITIONS_MAX, env);
    return EXIT_OK;
}

/* N from the library's "... has N partitions (recorded in ...", or 0. */
static int recorded_partitions(const char *msg) {
    static const char tail[] = " partitions (recorded in ";
    for (const char *t = strstr(msg, tail); t != NULL; t = strstr(t + 1, tail)) {
        const char *d = t;
        while (d > msg && isdigit((unsigned char)d[-1])) d--;
        long n;
        char digits[8];
        size_t len = (size_t)(t - d);
        if (len == 0 || len >= sizeof digits || d - msg < 5 || strncmp(d - 5, " has ", 5) != 0) continue;
        memcpy(digits, d, len);
        digits[len] = '\0';
        if (cli_parse_int(digits, 1, MQ_PARTITIONS_MAX, &n) == 0) return (int)n;
    }
    return 0;
}

mq_status cli_queue_open(const cli_ctx *ctx, mq_client *client, const char *db, const char *prefix, mq_queue **out,
                         mq_error *err) {
    mq_queue_opts opts = MQ_QUEUE_OPTS_INIT;
    if (ctx->partitions > 0) {
        opts.partitions = (int)ctx->partitions;
        return mq_queue_new_with(client, db, prefix, &opts, out, err);
    }
    /* What the queue has: the library refuses another P than the record's, naming it
     * (open.partitions reads the record before anything is written). */
    mq_status st = mq_queue_new(client, db, prefix, out, err);
    int n = st == MQ_ERR_ARG && err != NULL ? recorded_partitions(err->message) : 0;
    if (n <= 1) return st;
    opts.partitions = n;
    return mq_queue_new_with(client, db, prefix, &opts, out, err);
}

int cli_open(cli_ctx *ctx) {
    mq_error err;
    int rc = cli_resolve_partitions(ctx);
    if (rc != EXIT_OK) return rc;
    cli_log_setup(ctx);
    ctx->uri_owned = cli_uri_with_timeout(cli_resolve_env(ctx));
    if (ctx->uri_owned == NULL) {
        cli_error(ctx, "out of memory");
        return EXIT_FAIL;
    }
    mq_status st = mq_client_new(ctx->uri_owned, &ctx->client, &err);
    if (st != MQ_OK) return cli_fail(ctx, "bad --uri", st, &err);
    st = cli_queue_open(ctx, ctx->client, ctx->db, ctx->prefix, &ctx->queue, &err);
    if (st != MQ_OK) {
        char name[512];
        cli_queue_name(ctx, name, sizeof name);
        char what[600];
        snprintf(what, sizeof what, "opening the queue %s", name);
        return cli_fail(ctx, what, st, &err);
    }
    return EXIT_OK;
}

void cli_close(cli_ctx *ctx) {
    mq_queue_destroy(ctx->queue);
    ctx->queue = NULL;
    mq_client_destroy(ctx->client);
    ctx->client = NULL;
    free(ctx->uri_owned);
    ctx->uri_owned = NULL;
}

void cli_queue_name(const cli_ctx *ctx, char *buf, size_t size) {
    snprintf(buf, size, "%s.%s", ctx->db ? ctx->db : "mongomq", ctx->prefix ? ctx->prefix : "mq");
}

int cli_parse_int(const char *s, long min, long max, long *out) {
    char *end;
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *s, double min, double max, double *out) {
    char *end;
    if (s == NULL || *s == '\0' || isspace((unsigned char)*s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static long days_from_civil(long y, long m, long d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n digits at *p into *v; advances *p. */
static int digits(const char **p, int n, long *v) {
    long x = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i])) return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

int cli_parse_time(const char *s, double *epoch_s, const char **why) {
    *why = "expected epoch seconds or ISO 8601 (2026-01-01T09:00:00Z)";
    if (s == NULL || *s == '\0') return -1;
    const char *p = s;
    int all_number = 1;
    for (const char *q = s; *q; q++)
        if (!isdigit((unsigned char)*q) && *q != '.') all_number = 0;
    if (all_number) return cli_parse_double(s, 0, 1e11, epoch_s);

    long y, mo, d, h, mi, sec = 0;
    double frac = 0;
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d)) return -1;
    if (*p != 'T' && *p != 't' && *p != ' ') {
        if (*p == '\0') *why = "a date needs a time and a zone (2026-01-01T09:00:00Z)";
        return -1;
    }
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi)) return -1;
    if (*p == ':') {
        p++;
        if (digits(&p, 2, &sec)) return -1;
        if (*p == '.' || *p == ',') {
            double scale = 0.1;
            p++;
            if (!isdigit((unsigned char)*p)) return -1;
            while (isdigit((unsigned char)*p)) {
                frac += (*p++ - '0') * scale;
                scale /= 10;
            }
        }
    }
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60) {
        *why = "a field of the date or time is out of range";
        return -1;
    }
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) {
        *why = "February 29 of a year that is not a leap year";
        return -1;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        long oh, om = 0;
        if (digits(&p, 2, &oh)) return -1;
        if (*p == ':') p++;
        if (*p != '\0' && digits(&p, 2, &om)) return -1;
        if (oh > 23 || om > 59) {
            *why = "the zone offset is out of range";
            return -1;
        }
        offset = sign * (oh * 3600 + om * 60);
    } else {
        *why = *p == '\0' ? "needs a zone: Z for UTC, or an offset such as +01:00"
                          : "expected epoch seconds or ISO 8601 (2026-01-01T09:00:00Z)";
        return -1;
    }
    if (*p != '\0') return -1;
    double t = (double)days_from_civil(y, mo, d) * 86400.0 + h * 3600.0 + mi * 60.0 + sec + frac - offset;
    if (t < 0) {
        *why = "before 1970";
        return -1;
    }
    *epoch_s = t;
    return 0;
}

void cli_format_time(double epoch_s, char *buf, size_t size) {
    if (!isfinite(epoch_s) || epoch_s < 0 || epoch_s > 1e11) {
        snprintf(buf, size, "-");
        return;
    }
    time_t t = (time_t)floor(epoch_s);
    struct tm tm;
    gmtime_r(&t, &tm);
    int tenths = (int)floor((epoch_s - (double)t) * 10);
    if (tenths > 0)
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, tenths);
    else
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec);
}

void cli_format_duration(double s, char *buf, size_t size) {
    if (!isfinite(s)) {
        snprintf(buf, size, "-");
        return;
    }
    const char *sign = s < 0 ? "-" : "";
    s = fabs(s);
    long whole = (long)s;
    if (s < 1)
        snprintf(buf, size, "%s%dms", sign, (int)(s * 1000));
    else if (s < 60)
        snprintf(buf, size, "%s%.1fs", sign, s);
    else if (s < 3600)
        snprintf(buf, size, "%s%ldm%02lds", sign, whole / 60, whole % 60);
    else if (s < 86400)
        snprintf(buf, size, "%s%ldh%02ldm", sign, whole / 3600, whole % 3600 / 60);
    else
        snprintf(buf, size, "%s%ldd%02ldh", sign, whole / 86400, whole % 86400 / 3600);
}

int cli_confirm(const cli_ctx *ctx, int yes, const char *question) {
    if (yes) return EXIT_OK;
    if (!isatty(STDIN_FILENO))
        return cli_usage_error(ctx, "%s -- stdin is not a terminal: add --yes to go ahead", question);
    fprintf(stderr, "%s [y/N] ", question);
    fflush(stderr);
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        fputc('\n', stderr);
        cli_error(ctx, "not confirmed: nothing was changed");
        return EXIT_FAIL;
    }
    if (strcasecmp(line, "y\n") == 0 || strcasecmp(line, "yes\n") == 0) return EXIT_OK;
    cli_error(ctx, "not confirmed: nothing was changed");
    return EXIT_FAIL;
}

double cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct cli_table {
    size_t columns, rows, cap;
    char **cells; /* rows * columns */
};

cli_table *cli_table_new(size_t columns) {
    cli_table *t = calloc(1, sizeof *t);
    if (t != NULL) t->columns = columns;
    return t;
}

int cli_table_add(cli_table *t, const char *const *cells) {
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, cap * t->columns * sizeof *grown);
        if (grown == NULL) return -1;
        t->cells = grown;
        t->cap = cap;
    }
    char **row = t->cells + t->rows * t->columns;
    for (size_t c = 0; c < t->columns; c++) {
        row[c] = strdup(cells[c] ? cells[c] : "");
        if (row[c] == NULL) {
            for (size_t k = 0; k < c; k++) free(row[k]);
            return -1;
        }
    }
    t->rows++;
    return 0;
}

/* Display width of UTF-8 text: code points (good enough for tables). */
static size_t width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

void cli_table_print(const cli_table *t, FILE *out) {
    size_t *w = calloc(t->columns, sizeof *w);
    if (w == NULL) return;
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->columns; c++) {
            size_t n = width(t->cells[r * t->columns + c]);
            if (n > w[c]) w[c] = n;
        }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < t->columns; c++) {
            const char *cell = t->cells[r * t->columns + c];
            fputs(cell, out);
            if (c + 1 < t->columns) fprintf(out, "%*s", (int)(w[c] - width(cell) + 2), "");
        }
        fputc('\n', out);
    }
    free(w);
}

void cli_table_destroy(cli_table *t) {
    if (t == NULL) return;
    for (size_t i = 0; i < t->rows * t->columns; i++) free(t->cells[i]);
    free(t->cells);
    free(t);
}
