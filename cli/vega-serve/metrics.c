/* SPDX-License-Identifier: MIT */
/* --metrics: a second, plain HTTP/1.1 listener that answers GET /metrics with the runtime's and
 * the server's counters in the Prometheus text exposition format 0.0.4. Loopback only unless
 * --metrics-public. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Scrapers are few: a small bound, so that the metrics port cannot hold many descriptors. */
#define SERVE_METRICS_MAX_CONNS 64
/* Each metrics response write. */
#define SERVE_METRICS_WRITE_MS 10000

static const char prom_type[] = "text/plain; version=0.0.4; charset=utf-8";
static const char text_type[] = "text/plain; charset=utf-8";

static bool is_loopback(const vega_addr *a)
{
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a->ss;
        return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    }
    if (a->ss.ss_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)&a->ss)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
    }
    return false;
}

static int respond_text(vega_http_exchange *x, int status, const vega_http_field *extra,
                        const char *body)
{
    vega_http_field f[2] = {{{"Content-Type", 12}, {text_type, sizeof text_type - 1}}};
    size_t n = 1;
    if (extra)
        f[n++] = *extra;
    return vega_http_respond(x, status, f, n, body, strlen(body),
                             vega_deadline_in_ms(SERVE_METRICS_WRITE_MS));
}

/* The metrics server's handler; user is the file server whose counters it shows. */
static int metrics_handle(vega_http_exchange *x, void *user)
{
    const vega_http_server *srv = user;
    const vega_http_request *req = vega_http_exchange_request(x);
    if (req->path.len != 8 || memcmp(req->path.ptr, "/metrics", 8) != 0)
        return respond_text(x, 404, NULL, "Not found: the metrics are at /metrics\n");
    if (req->method != VEGA_HTTP_METHOD_GET && req->method != VEGA_HTTP_METHOD_HEAD) {
        static const vega_http_field allow = {{"Allow", 5}, {"GET, HEAD", 9}};
        return respond_text(x, 405, &allow, "Method not allowed: GET /metrics\n");
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -errno; /* the server answers 500 */
    int r = vega_rt_metrics_prometheus(vega_rt_current(), f);
    if (r == 0)
        r = vega_http_server_metrics_prometheus(srv, f);
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    if (r == 0) {
        const vega_http_field ct = {{"Content-Type", 12}, {prom_type, sizeof prom_type - 1}};
        r = vega_http_respond(x, 200, &ct, 1, buf, len,
                              vega_deadline_in_ms(SERVE_METRICS_WRITE_MS));
    }
    free(buf);
    return r;
}

static void *run_task(void *arg)
{
    int r = vega_http_server_run(arg);
    if (r < 0)
        cli_err_code("metrics server", r);
    return NULL;
}

int serve_metrics_start(vega_http_server *srv, struct serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    if (!serve_o.metrics)
        return 0;
    vega_addr addrs[4];
    int n = vega_addr_resolve(addrs, 4, serve_o.metrics_host, serve_o.metrics_port, AF_UNSPEC,
                              VEGA_DEADLINE_NEVER);
    if (n < 0) {
        cli_err(serve_o.metrics, "--metrics: cannot resolve: %s", vega_strerror(n));
        return CLI_EXIT_NET;
    }
    for (int k = 0; k < n && !serve_o.metrics_public; k++) {
        if (!is_loopback(&addrs[k])) {
            char where[VEGA_ADDR_STRLEN];
            vega_addr_format(&addrs[k], where, sizeof where);
            cli_err("--metrics",
                    "%s is not a loopback address: the metrics would be public "
                    "(--metrics-public allows it)",
                    where);
            return CLI_EXIT_USAGE;
        }
    }
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = metrics_handle;
    o.user = srv;
    o.max_conns = SERVE_METRICS_MAX_CONNS;
    int r = vega_http_server_new(&m->srv, &o);
    if (r < 0) {
        cli_err_code("metrics server", r);
        return CLI_EXIT_NET;
    }
    for (int k = 0; k < n; k++) {
        vega_addr bound;
        char where[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[k], where, sizeof where);
        r = vega_http_server_listen(m->srv, &addrs[k], 0, &bound);
        if (r < 0) {
            cli_err(NULL, "--metrics: cannot listen on %s: %s", where, vega_strerror(r));
            serve_metrics_stop(m);
            return CLI_EXIT_NET;
        }
        vega_addr_format(&bound, where, sizeof where);
        if (!serve_o.quiet)
            fprintf(stderr, "vega-serve: metrics on http://%s/metrics\n", where);
    }
    r = vega_task_spawn(&m->task, run_task, m->srv);
    if (r < 0) {
        cli_err_code("spawn", r);
        serve_metrics_stop(m);
        return CLI_EXIT_NET;
    }
    return 0;
}

void serve_metrics_stop(struct serve_metrics *m)
{
    if (m->task) {
        vega_http_server_shutdown(m->srv, vega_deadline_in_ms(1000));
        vega_task_join(m->task, NULL, VEGA_DEADLINE_NEVER);
        m->task = NULL;
    }
    vega_http_server_free(m->srv);
    m->srv = NULL;
}
