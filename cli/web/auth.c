/* mongomq web: who may look and act. The token (--token-file) as a bearer header or,
 * after the login form, a session cookie (HttpOnly, SameSite=Strict); the CSRF token
 * every POST carries; the Host check that keeps a loopback server from answering a
 * DNS-rebound name. Secrets are compared in constant time. */
#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "web.h"

static int random_hex(char *out, size_t bytes) {
    unsigned char buf[64];
    if (bytes > sizeof buf) return -1;
    size_t got = 0;
    while (got < bytes) {
        ssize_t n = getrandom(buf + got, bytes - got, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < bytes; i++) sprintf(out + 2 * i, "%02x", buf[i]);
    return 0;
}

int web_secret_eq(const char *a, const char *b) {
    if (a == NULL || b == NULL) return 0;
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++) diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

int web_auth_init(web_app *app, const char *token_file) {
    if (random_hex(app->session, 32) != 0 || random_hex(app->csrf, 32) != 0) {
        cli_error(app->ctx, "no random bytes for the session and CSRF tokens");
        return EXIT_FAIL;
    }
    if (token_file == NULL) return EXIT_OK;
    FILE *f = fopen(token_file, "r");
    if (f == NULL) {
        cli_error(app->ctx, "--token-file %s: cannot read it", token_file);
        return EXIT_USAGE;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int more = fgetc(f) != EOF;
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && isspace((unsigned char)buf[n - 1])) buf[--n] = '\0';
    if (more || n < 16 || n != strlen(buf)) {
        cli_error(app->ctx, "--token-file %s: the token must be one line of 16 to 1000 characters", token_file);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)buf[i])) {
            cli_error(app->ctx, "--token-file %s: the token must be printable ASCII without spaces", token_file);
            return EXIT_USAGE;
        }
    app->token = strdup(buf);
    return app->token != NULL ? EXIT_OK : EXIT_FAIL;
}

int web_authorized(web_app *app, struct MHD_Connection *c) {
    if (app->token == NULL) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (h != NULL && strncmp(h, "Bearer ", 7) == 0 && web_secret_eq(h + 7, app->token)) return 1;
    const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "mongomq_session");
    return web_secret_eq(cookie, app->session);
}

/* host[:port] of a Host header names a loopback address of ours. */
static int loopback_host(const char *host) {
    char name[256];
    snprintf(name, sizeof name, "%s", host);
    char *end;
    if (name[0] == '[') {
        end = strchr(name, ']');
        if (end == NULL) return 0;
        *end = '\0';
        return strcmp(name + 1, "::1") == 0;
    }
    end = strchr(name, ':');
    if (end != NULL) *end = '\0';
    if (strcmp(name, "localhost") == 0) return 1;
    unsigned a, b, cc, d;
    char extra;
    return sscanf(name, "%u.%u.%u.%u%c", &a, &b, &cc, &d, &extra) == 4 && a == 127 && b < 256 && cc < 256 && d < 256;
}

int web_host_ok(web_app *app, struct MHD_Connection *c) {
    if (app->token != NULL || !app->loopback) return 1;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    return host != NULL && loopback_host(host);
}

int web_csrf_ok(web_app *app, web_req *r) {
    /* A browser's cross-site POST says where it comes from: refuse another origin. */
    struct MHD_Connection *c = web_conn(r);
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (origin != NULL && strcmp(origin, "null") != 0) {
        const char *o = strstr(origin, "://");
        if (o == NULL || host == NULL || strcmp(o + 3, host) != 0) return 0;
    }
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token");
    if (t == NULL) t = web_field(r, "csrf");
    return web_secret_eq(t, app->csrf);
}

void web_login(web_app *app, const char *method, web_req *r, web_resp *out) {
    if (app->token == NULL) { /* nothing to log in to */
        out->location = "/";
        web_resp_text(out, 303, "text/plain; charset=utf-8", "no token needed: /\n");
        return;
    }
    if (strcmp(method, "GET") == 0) {
        web_resp_asset(out, web_asset_find("login.html"), "text/html; charset=utf-8");
        return;
    }
    if (web_secret_eq(web_field(r, "token"), app->token)) {
        snprintf(out->cookie, sizeof out->cookie, "mongomq_session=%s; Path=/; HttpOnly; SameSite=Strict",
                 app->session);
        out->location = "/";
        web_resp_text(out, 303, "text/plain; charset=utf-8", "logged in: /\n");
    } else {
        out->location = "/login?failed=1";
        web_resp_text(out, 303, "text/plain; charset=utf-8", "wrong token\n");
    }
}
