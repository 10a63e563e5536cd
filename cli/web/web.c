/* mongomq web: the command. Its options, the rule that a non-loopback --listen needs
 * a token or --read-only, opening the queues, then serving until SIGINT/SIGTERM. */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web.h"

enum { OPT_LISTEN = OPT_FIRST_LOCAL, OPT_TOKEN_FILE, OPT_READ_ONLY, OPT_CACHE, OPT_HISTORY, OPT_KEEP };

/* HOST:PORT, [V6]:PORT or PORT. */
static int parse_listen(web_app *app, const char *s) {
    const char *colon = strrchr(s, ':');
    const char *host = "127.0.0.1", *port = s;
    char h[128];
    if (colon != NULL) {
        size_t n = (size_t)(colon - s);
        if (n >= sizeof h) return -1;
        memcpy(h, s, n);
        h[n] = '\0';
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
            memmove(h, h + 1, n - 2);
            h[n - 2] = '\0';
        }
        host = h;
        port = colon + 1;
    }
    long p;
    if (host[0] == '\0' || cli_parse_int(port, 0, 65535, &p) != 0) return -1;
    snprintf(app->listen_host, sizeof app->listen_host, "%s", host);
    app->port = (unsigned short)p;
    return 0;
}

/* Every address the host resolves to is a loopback one. */
static int is_loopback(const char *host) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    int all = res != NULL;
    for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)a->ai_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) all = 0;
        } else if (a->ai_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)a->ai_addr;
            if (!IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) all = 0;
        } else {
            all = 0;
        }
    }
    freeaddrinfo(res);
    return all;
}

/* libmongoc's log (through the library): errors always, warnings with -v, debug with
 * -vv; the URI's password, should a line carry it, replaced by ***. */
static void web_log(int level, const char *domain, const char *message, void *arg) {
    const web_app *app = arg;
    if (level <= 1 || (app->ctx->verbose > 0 && level <= 2) || (app->ctx->verbose > 1 && level <= 4)) {
        char line[2048];
        snprintf(line, sizeof line, "%s", message);
        web_redact(app, line);
        fprintf(stderr, "mongomq web: libmongoc %s: %s\n", domain, line);
    }
}

int cmd_web(cli_ctx *ctx, int argc, char **argv) {
    static const struct option options[] = {
        CLI_COMMON_OPTIONS,
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
        {"read-only", no_argument, NULL, OPT_READ_ONLY},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"history-interval", required_argument, NULL, OPT_HISTORY},
        {"history-keep", required_argument, NULL, OPT_KEEP},
        {NULL, 0, NULL, 0},
    };
    web_app app;
    memset(&app, 0, sizeof app);
    app.ctx = ctx;
    app.cache_s = 5;
    app.history_s = 10;
    app.history_keep = 8640; /* a day at 10 s */
    const char *listen = "127.0.0.1:8080", *token_file = NULL;
    int c, code;
    long keep;
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        if (cli_common_option(ctx, c, optarg, &code)) {
            if (code >= 0) return code;
            continue;
        }
        switch (c) {
            case OPT_LISTEN:
                listen = optarg;
                break;
            case OPT_TOKEN_FILE:
                token_file = optarg;
                break;
            case OPT_READ_ONLY:
                app.read_only = 1;
                break;
            case OPT_CACHE:
                if (cli_parse_double(optarg, 0, 3600, &app.cache_s) != 0)
                    return cli_usage_error(ctx, "--cache '%s': seconds from 0 to 3600", optarg);
                break;
            case OPT_HISTORY:
                if (cli_parse_double(optarg, 0, 3600, &app.history_s) != 0 ||
                    (app.history_s > 0 && app.history_s < 0.5))
                    return cli_usage_error(ctx, "--history-interval '%s': 0 (off) or seconds from 0.5 to 3600", optarg);
                break;
            case OPT_KEEP:
                if (cli_parse_int(optarg, 10, 1000000, &keep) != 0)
                    return cli_usage_error(ctx, "--history-keep '%s': samples from 10 to 1000000", optarg);
                app.history_keep = keep;
                break;
            default:
                return cli_try(ctx);
        }
    }
    if (parse_listen(&app, listen) != 0)
        return cli_usage_error(ctx, "--listen '%s': HOST:PORT, [IPV6]:PORT or PORT (0..65535)", listen);
    app.loopback = is_loopback(app.listen_host);
    if (!app.loopback && token_file == NULL && !app.read_only)
        return cli_usage_error(ctx,
                               "--listen %s is not a loopback address: anyone who reaches it could act on the "
                               "queue; give --token-file FILE, or --read-only to show it without actions",
                               app.listen_host);
    int rc = web_auth_init(&app, token_file);
    if (rc != EXIT_OK) return rc;
    mongoc_init();
    mq_log_set_handler(web_log, &app);
    rc = web_open_queues(&app, (const char *const *)argv + optind, (size_t)(argc - optind));
    if (rc == EXIT_OK) rc = web_serve(&app);
    web_close_queues(&app);
    mq_log_set_handler(NULL, NULL);
    free(app.token);
    return rc;
}
