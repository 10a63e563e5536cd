/* mongomq web: the HTTP server (libmicrohttpd) and the router. A request's form body
 * is read by MHD's post processor; each response gets the security headers (a strict
 * Content-Security-Policy: scripts and styles only from /assets/, never inline); the
 * pages are one embedded shell that the scripts fill from /api/. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web.h"

#define WEB_MAX_FIELDS 1100
#define WEB_MAX_BODY (256 * 1024)

struct web_req {
    struct MHD_Connection *c;
    struct MHD_PostProcessor *pp;
    size_t nfields;
    char *keys[WEB_MAX_FIELDS];
    char *vals[WEB_MAX_FIELDS];
    size_t body;
    int too_big;
};

struct MHD_Connection *web_conn(web_req *r) {
    return r->c;
}

const char *web_arg(web_req *r, const char *key) {
    return MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, key);
}

const char *web_field(web_req *r, const char *key) {
    for (size_t i = 0; i < r->nfields; i++)
        if (strcmp(r->keys[i], key) == 0) return r->vals[i];
    return NULL;
}

size_t web_fields(web_req *r, const char *key, const char **out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < r->nfields && n < max; i++)
        if (strcmp(r->keys[i], key) == 0) out[n++] = r->vals[i];
    return n;
}

static enum MHD_Result post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                  const char *content_type, const char *transfer_encoding, const char *data,
                                  uint64_t off, size_t size) {
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
    web_req *r = cls;
    /* A long value comes in pieces: off > 0 continues the last field. */
    if (off > 0 && r->nfields > 0 && strcmp(r->keys[r->nfields - 1], key) == 0) {
        size_t have = strlen(r->vals[r->nfields - 1]);
        char *v = realloc(r->vals[r->nfields - 1], have + size + 1);
        if (v == NULL) return MHD_NO;
        memcpy(v + have, data, size);
        v[have + size] = '\0';
        r->vals[r->nfields - 1] = v;
        return MHD_YES;
    }
    if (r->nfields >= WEB_MAX_FIELDS) {
        r->too_big = 1;
        return MHD_NO;
    }
    char *v = malloc(size + 1);
    if (v == NULL) return MHD_NO;
    memcpy(v, data, size);
    v[size] = '\0';
    r->keys[r->nfields] = strdup(key);
    r->vals[r->nfields] = v;
    r->nfields++;
    return MHD_YES;
}

static void req_free(web_req *r) {
    if (r->pp != NULL) MHD_destroy_post_processor(r->pp);
    for (size_t i = 0; i < r->nfields; i++) free(r->keys[i]), free(r->vals[i]);
    free(r);
}

void web_resp_text(web_resp *out, int status, const char *type, const char *text) {
    out->status = status;
    out->type = type;
    out->body = strdup(text);
    out->len = strlen(text);
}

void web_resp_json(web_resp *out, int status, json_t *obj) {
    char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(obj);
    out->status = status;
    out->type = "application/json";
    if (text == NULL) {
        out->status = 500;
        text = strdup("{\"error\":\"out of memory\"}");
    }
    out->body = text; /* jansson's default allocator is malloc */
    out->len = strlen(text);
}

void web_resp_error(web_resp *out, int status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    web_resp_json(out, status, json_pack("{s:s}", "error", msg));
}

void web_redact(const web_app *app, char *text) {
    size_t n = strlen(app->password);
    if (n == 0 || text == NULL) return;
    char *p;
    while ((p = strstr(text, app->password)) != NULL) {
        memmove(p + 3, p + n, strlen(p + n) + 1);
        memcpy(p, "***", 3);
    }
}

static const char *asset_type(const char *path) {
    const char *dot = strrchr(path, '.');
    if (dot == NULL) return "application/octet-stream";
    if (strcmp(dot, ".html") == 0) return "text/html; charset=utf-8";
    if (strcmp(dot, ".css") == 0) return "text/css; charset=utf-8";
    if (strcmp(dot, ".js") == 0) return "text/javascript; charset=utf-8";
    if (strcmp(dot, ".svg") == 0) return "image/svg+xml";
    return "application/octet-stream";
}

static void serve_asset(const char *name, web_resp *out) {
    const web_asset *a = web_asset_find(name);
    if (a == NULL) {
        web_resp_text(out, 404, "text/plain; charset=utf-8", "not found\n");
        return;
    }
    web_resp_asset(out, a, asset_type(name));
}

void web_resp_asset(web_resp *out, const web_asset *a, const char *type) {
    char *body = malloc(a->len + 1);
    if (body == NULL) { /* out->body NULL: answered 500 "out of memory" */
        out->status = 500;
        return;
    }
    memcpy(body, a->data, a->len);
    out->status = 200;
    out->type = type;
    out->body = body;
    out->len = a->len;
}

static int is_page(const char *path) {
    static const char *pages[] = {"/", "/groups", "/group", "/dead", "/workers"};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(path, pages[i]) == 0) return 1;
    return 0;
}

static void route(web_app *app, const char *method, const char *path, web_req *r, web_resp *out) {
    int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int post = strcmp(method, "POST") == 0;
    if (!get && !post) {
        web_resp_text(out, 405, "text/plain; charset=utf-8", "method not allowed\n");
        return;
    }
    if (strcmp(path, "/healthz") == 0) {
        web_resp_text(out, 200, "text/plain; charset=utf-8", "ok\n");
        return;
    }
    if (!web_host_ok(app, r->c)) {
        web_resp_text(out, 421, "text/plain; charset=utf-8", "this server answers to its own address only\n");
        return;
    }
    if (r->too_big) {
        web_resp_error(out, 413, "request body too large (at most %d bytes)", WEB_MAX_BODY);
        return;
    }
    if (strcmp(path, "/login") == 0) {
        web_login(app, post ? "POST" : "GET", r, out);
        return;
    }
    if (strncmp(path, "/assets/", 8) == 0 && get) {
        serve_asset(path + 8, out);
        return;
    }
    if (!web_authorized(app, r->c)) {
        if (get && is_page(path)) {
            out->status = 303;
            out->location = "/login";
            web_resp_text(out, 303, "text/plain; charset=utf-8", "log in first: /login\n");
        } else {
            web_resp_error(out, 401, "not authorized: send the token as 'Authorization: Bearer TOKEN' or log in");
        }
        return;
    }
    if (strcmp(path, "/metrics") == 0 && get) {
        web_metrics(app, out);
        return;
    }
    if (strncmp(path, "/api/", 5) == 0) {
        web_api(app, post ? "POST" : "GET", path + 5, r, out);
        return;
    }
    if (get && is_page(path)) {
        serve_asset("index.html", out);
        return;
    }
    web_resp_text(out, 404, "text/plain; charset=utf-8", "not found\n");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
    (void)version;
    web_app *app = cls;
    web_req *r = *con_cls;
    if (r == NULL) {
        r = calloc(1, sizeof *r);
        if (r == NULL) return MHD_NO;
        r->c = c;
        if (strcmp(method, "POST") == 0) r->pp = MHD_create_post_processor(c, 16 * 1024, post_field, r);
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        r->body += *upload_data_size;
        if (r->body > WEB_MAX_BODY)
            r->too_big = 1;
        else if (r->pp != NULL && !r->too_big)
            MHD_post_process(r->pp, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    web_resp out;
    memset(&out, 0, sizeof out);
    route(app, method, url, r, &out);
    if (out.body == NULL) web_resp_text(&out, 500, "text/plain; charset=utf-8", "out of memory\n");
    struct MHD_Response *resp = MHD_create_response_from_buffer(out.len, out.body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out.type);
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (out.location != NULL) MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, out.location);
    if (out.cookie[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, out.cookie);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)out.status, resp);
    MHD_destroy_response(resp);
    if (app->ctx->verbose > 0) fprintf(stderr, "mongomq web: %s %s %d\n", method, url, out.status);
    return ok;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)cls, (void)c, (void)why;
    if (*con_cls != NULL) req_free(*con_cls);
    *con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    fputs("mongomq web: libmicrohttpd: ", stderr);
    vfprintf(stderr, fmt, ap);
}

int web_serve(web_app *app) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%u", app->port);
    int gai = getaddrinfo(app->listen_host, port, &hints, &res);
    if (gai != 0) {
        cli_error(app->ctx, "--listen %s: %s", app->listen_host, gai_strerror(gai));
        return EXIT_USAGE;
    }
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* the server's threads inherit it */
    signal(SIGPIPE, SIG_IGN);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (res->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, app->port, NULL, NULL, handle, app, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
        res->ai_addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)8, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
    freeaddrinfo(res);
    if (d == NULL) {
        cli_error(app->ctx, "cannot listen on %s:%u: %s", app->listen_host, app->port, strerror(errno));
        return EXIT_FAIL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info != NULL ? info->port : app->port;
    int v6 = strchr(app->listen_host, ':') != NULL;
    fprintf(stderr, "mongomq web: serving http://%s%s%s:%u/ (%zu queue%s%s%s)\n", v6 ? "[" : "", app->listen_host,
            v6 ? "]" : "", bound, app->nqueues, app->nqueues == 1 ? "" : "s", app->read_only ? ", read-only" : "",
            app->token != NULL ? ", token required" : "");
    for (size_t i = 0; i < app->nqueues; i++) fprintf(stderr, "mongomq web: queue %s\n", app->queues[i].name);
    fflush(stderr);
    int rc = web_history_start(app);
    if (rc == EXIT_OK) {
        int sig = 0;
        sigwait(&sigs, &sig);
        fprintf(stderr, "mongomq web: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    MHD_stop_daemon(d);
    web_history_stop(app);
    return rc;
}
