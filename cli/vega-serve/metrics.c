/* SPDX-License-Identifier: MIT */
/* --metrics: a second, plain HTTP/1.1 listener that answers GET /metrics with the runtime's and
 * the server's counters in the Prometheus text exposition format 0.0.4. Loopback only unless
 * --metrics-public. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

/* --shards: how often a shard copies its counters to its shared slot for the other shards'
 * sums (a scrape that reaches this shard uses its own fresh counters). */
#define SERVE_METRICS_PUBLISH_MS 100

/* The runtime's and srv's metrics, as one text. Returns 0 or -errno. */
static int render(const vega_http_server *srv, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return -errno;
    int r = vega_rt_metrics_prometheus(vega_rt_current(), f);
    if (r == 0)
        r = vega_http_server_metrics_prometheus(srv, f);
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    if (r != 0) {
        free(*buf);
        *buf = NULL;
    }
    return r;
}

/* --shards: this shard's metrics published, then summed with every other shard's. */
static int render_sum(const vega_http_server *srv, char **buf, size_t *len)
{
    char *own;
    size_t olen;
    int r = render(srv, &own, &olen);
    if (r != 0)
        return r;
    serve_shard_metrics_publish(own, olen);
    FILE *f = open_memstream(buf, len);
    if (!f) {
        r = -errno;
    } else {
        r = serve_shard_metrics_sum(own, olen, f);
        if (fclose(f) != 0 && r == 0)
            r = -EIO;
        if (r != 0) {
            free(*buf);
            *buf = NULL;
        }
    }
    free(own);
    return r;
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
    char *buf;
    size_t len;
    int r = serve_shard_metrics_on() ? render_sum(srv, &buf, &len) : render(srv, &buf, &len);
    if (r != 0)
        return r; /* the server answers 500 */
    {
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

/* --shards: copies this shard's counters to its slot every SERVE_METRICS_PUBLISH_MS. */
static void *publish_task(void *arg)
{
    const struct serve_metrics *m = arg;
    while (vega_sleep_ms(SERVE_METRICS_PUBLISH_MS) == 0) {
        char *buf;
        size_t len;
        if (render(m->files, &buf, &len) == 0) {
            serve_shard_metrics_publish(buf, len);
            free(buf);
        }
    }
    return NULL;
}

/* Resolves --metrics and refuses an address that is not loopback without --metrics-public.
 * Returns the addresses (>= 1) or minus an exit code. */
static int metrics_addrs(vega_addr *addrs, size_t cap)
{
    int n = vega_addr_resolve(addrs, cap, serve_o.metrics_host, serve_o.metrics_port, AF_UNSPEC,
                              VEGA_DEADLINE_NEVER);
    if (n < 0) {
        cli_err(serve_o.metrics, "--metrics: cannot resolve: %s", vega_strerror(n));
        return -CLI_EXIT_NET;
    }
    for (int k = 0; k < n && !serve_o.metrics_public; k++) {
        if (!is_loopback(&addrs[k])) {
            char where[VEGA_ADDR_STRLEN];
            vega_addr_format(&addrs[k], where, sizeof where);
            cli_err("--metrics",
                    "%s is not a loopback address: the metrics would be public "
                    "(--metrics-public allows it)",
                    where);
            return -CLI_EXIT_USAGE;
        }
    }
    return n;
}

int serve_metrics_listen_shared(void)
{
    vega_addr addrs[SERVE_SHARD_METRICS_MAX_FDS];
    int n = metrics_addrs(addrs, SERVE_SHARD_METRICS_MAX_FDS);
    if (n < 0)
        return -n;
    for (int k = 0; k < n; k++) {
        char where[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[k], where, sizeof where);
        vega_sock *l;
        vega_addr bound;
        int r = vega_tcp_listen(&l, &addrs[k], 0, VEGA_LISTEN_SHARED);
        if (r == 0 && (r = vega_sock_local_addr(l, &bound)) < 0)
            vega_sock_close(l);
        int fd = -1;
        if (r == 0) {
            fd = fcntl(vega_sock_fd(l), F_DUPFD_CLOEXEC, 3);
            r = fd < 0 ? -errno : 0;
            vega_sock_close(l);
        }
        if (r < 0) {
            cli_err(NULL, "--metrics: cannot listen on %s: %s", where, vega_strerror(r));
            return CLI_EXIT_NET;
        }
        serve_shard_metrics_fds[serve_shard_metrics_nfds++] = fd;
        vega_addr_format(&bound, where, sizeof where);
        if (!serve_o.quiet)
            fprintf(stderr, "vega-serve: metrics on http://%s/metrics\n", where);
    }
    return 0;
}

int serve_metrics_start(vega_http_server *srv, struct serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    if (!serve_o.metrics)
        return 0;
    m->files = srv;
    bool shard = serve_shard_metrics_on();
    vega_addr addrs[4];
    int n = shard ? 0 : metrics_addrs(addrs, 4);
    if (n < 0)
        return -n;
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
    for (size_t k = 0; shard && k < serve_shard_metrics_nfds; k++) {
        r = vega_http_server_listen_fd(m->srv, serve_shard_metrics_fds[k], VEGA_LISTEN_SHARED,
                                       NULL);
        if (r < 0) {
            cli_err(NULL, "--metrics: inherited listener: %s", vega_strerror(r));
            serve_metrics_stop(m);
            return CLI_EXIT_NET;
        }
    }
    if (shard) {
        serve_shard_metrics_attach();
        r = vega_task_spawn(&m->publisher, publish_task, m);
        if (r < 0) {
            cli_err_code("spawn", r);
            serve_metrics_stop(m);
            return CLI_EXIT_NET;
        }
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
    if (m->publisher) {
        vega_task_cancel(m->publisher);
        vega_task_join(m->publisher, NULL, VEGA_DEADLINE_NEVER);
        m->publisher = NULL;
        char *buf;
        size_t len;
        if (render(m->files, &buf, &len) == 0) {
            serve_shard_metrics_detach(buf, len);
            free(buf);
        }
    }
    if (m->task) {
        vega_http_server_shutdown(m->srv, vega_deadline_in_ms(1000));
        vega_task_join(m->task, NULL, VEGA_DEADLINE_NEVER);
        m->task = NULL;
    }
    vega_http_server_free(m->srv);
    m->srv = NULL;
}
