/* SPDX-License-Identifier: MIT */
/* http_server: an HTTP/1.1 server with a small route table (exact paths and a prefix), a JSON
 * route, a route that sleeps 200 ms on a timer, 404 for the rest, and a clean shutdown on
 * SIGINT or SIGTERM. Uses only the installed headers.
 *
 *   http_server [ADDR]      ADDR defaults to 127.0.0.1:8080; 127.0.0.1:0 picks a free port
 *   curl http://127.0.0.1:8080/api/status
 *
 * It prints "listening on http://ADDR/" once it accepts connections, and "stopped" on exit. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <vega/vega.h>

/* What the handlers share: the server (for its counters) and when it started. */
struct app {
    vega_http_server *srv;
    vega_tstamp started;
};

/* A handler answers one request; it runs in the connection's own task, so it may sleep or wait
 * on I/O without blocking other connections. */
typedef int (*route_fn)(vega_http_exchange *x, struct app *app);

/* Every response in this file: a status, a Content-Type and a body, with a 5 s write deadline. */
static int reply(vega_http_exchange *x, int status, const char *type, const char *body)
{
    vega_http_field ct = {{"Content-Type", 12}, {type, strlen(type)}};
    return vega_http_respond(x, status, &ct, 1, body, strlen(body), vega_deadline_in_ms(5000));
}

static int hello(vega_http_exchange *x, struct app *app)
{
    (void)app;
    return reply(x, 200, "text/plain", "hello from libvega\n");
}

/* GET /api/status: the server's counters as JSON. */
static int status_json(vega_http_exchange *x, struct app *app)
{
    vega_http_server_stats st;
    vega_http_server_get_stats(app->srv, &st);
    char body[256];
    snprintf(body, sizeof(body),
             "{\"ok\":true,\"version\":\"%s\",\"driver\":\"%s\",\"uptime_ms\":%llu,"
             "\"requests\":%llu,\"open_connections\":%llu}\n",
             vega_version(), vega_rt_driver_name(vega_rt_current()),
             (unsigned long long)((vega_now() - app->started) / VEGA_NS_PER_MS),
             (unsigned long long)st.requests, (unsigned long long)st.conns_open);
    return reply(x, 200, "application/json", body);
}

/* GET /slow: waits 200 ms on the runtime's timer (the task parks; its worker serves others). */
static int slow(vega_http_exchange *x, struct app *app)
{
    (void)app;
    int rc = vega_sleep_ms(200); /* -ECANCELED if the server is cancelling us at shutdown */
    if (rc < 0)
        return rc;
    return reply(x, 200, "text/plain", "slept 200 ms\n");
}

/* GET /static/<name>: everything under a prefix; echoes the (still percent-encoded) rest. */
static int static_prefix(vega_http_exchange *x, struct app *app)
{
    (void)app;
    const vega_http_request *req = vega_http_exchange_request(x);
    char body[512];
    snprintf(body, sizeof(body), "you asked for the file \"%.*s\"\n", (int)req->path.len - 8,
             req->path.ptr + 8);
    return reply(x, 200, "text/plain", body);
}

static const struct route {
    const char *path;
    int prefix; /* 1: path is a prefix; 0: it must match exactly */
    route_fn fn;
} routes[] = {
    {"/", 0, hello},
    {"/api/status", 0, status_json},
    {"/slow", 0, slow},
    {"/static/", 1, static_prefix},
};

/* The server's one handler: finds the route of the request path, or answers 404. */
static int handler(vega_http_exchange *x, void *user)
{
    const vega_http_request *req = vega_http_exchange_request(x);
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        size_t n = strlen(routes[i].path);
        if ((routes[i].prefix ? req->path.len >= n : req->path.len == n) &&
            memcmp(req->path.ptr, routes[i].path, n) == 0)
            return routes[i].fn(x, user);
    }
    return reply(x, 404, "text/plain", "not found\n");
}

static sigset_t stop_signals; /* SIGINT and SIGTERM, blocked in main before the runtime starts */

/* A task that waits for SIGINT/SIGTERM, then asks the server to stop: listeners close at once,
 * requests in flight get 2 s to finish, and vega_http_server_run returns. */
static void *stopper(void *srv)
{
    int signo = 0;
    if (vega_signal_wait(&stop_signals, &signo, VEGA_DEADLINE_NEVER) == 0) {
        fprintf(stderr, "signal %d: shutting down\n", signo);
        vega_http_server_shutdown(srv, vega_deadline_in_ms(2000));
    }
    return NULL;
}

static void *main_task(void *arg)
{
    const char *where = arg;
    vega_addr addr, bound;
    if (vega_addr_parse(&addr, where, "127.0.0.1") < 0) {
        fprintf(stderr, "not an address: %s\n", where);
        return (void *)1;
    }
    static struct app app;
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    o.user = &app; /* handed to every handler call */
    o.server_header = "libvega-example";
    int rc = vega_http_server_new(&app.srv, &o);
    if (rc == 0 && (rc = vega_http_server_listen(app.srv, &addr, 0, &bound)) < 0)
        vega_http_server_free(app.srv);
    if (rc < 0) {
        fprintf(stderr, "cannot serve on %s: %s\n", where, vega_strerror(rc));
        return (void *)1;
    }
    app.started = vega_now();
    char text[VEGA_ADDR_STRLEN];
    vega_addr_format(&bound, text, sizeof(text));
    printf("listening on http://%s/\n", text);
    fflush(stdout);

    vega_task *stop;
    rc = vega_task_spawn(&stop, stopper, app.srv);
    if (rc == 0) {
        rc = vega_http_server_run(app.srv); /* serves until the stopper calls shutdown */
        vega_task_cancel(stop);             /* in case run ended for another reason */
        vega_task_join(stop, NULL, VEGA_DEADLINE_NEVER);
    }
    vega_http_server_free(app.srv);
    if (rc < 0) {
        fprintf(stderr, "server: %s\n", vega_strerror(rc));
        return (void *)1;
    }
    printf("stopped\n");
    return NULL;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* a client that goes away is an error code, not a signal */
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    vega_signal_block(&stop_signals); /* before vega_rt_new: no worker gets them the default way */

    vega_rt *rt;
    int rc = vega_rt_new(&rt, NULL); /* multi-thread, one worker per CPU */
    if (rc < 0) {
        fprintf(stderr, "vega_rt_new: %s\n", vega_strerror(rc));
        return 1;
    }
    void *failed = NULL;
    rc = vega_rt_block_on(rt, main_task, argc > 1 ? argv[1] : "127.0.0.1:8080", &failed);
    vega_rt_free(rt);
    return rc == 0 && failed == NULL ? 0 : 1;
}
