/* SPDX-License-Identifier: MIT */
/* The tools' Prometheus scrape endpoint (prom.h). */
#include "prom.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/rt.h>

#include "cli.h"

/* Scrapers are few: a small bound, so that the metrics port cannot hold many descriptors. */
#define PROM_MAX_CONNS 64
/* Each metrics response write. */
#define PROM_WRITE_MS 10000
/* What a scrape in flight gets at the stop. */
#define PROM_STOP_MS 1000

static const char prom_type[] = "text/plain; version=0.0.4; charset=utf-8";
static const char text_type[] = "text/plain; charset=utf-8";

bool cli_addr_is_loopback(const vega_addr *a)
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

/* The allocator's own account (glibc's mallinfo2), which RSS cannot give: a heap that only
 * grows shows in vega_heap_inuse_bytes, while glibc's per-thread arenas keep the pages of free
 * chunks below their top resident, so RSS rises towards vega_heap_mapped_bytes as a steady
 * load's frees spread over an arena (and falls back with malloc_trim). Returns 0 or -EIO. */
static int render_heap(FILE *f)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    /* Nothing held at all: malloc is not glibc's (a sanitizer's or a preloaded allocator
     * serves it), and zeros would read as an empty heap. Then the two are left out. */
    if (mi.arena + mi.hblkhd == 0)
        return 0;
    if (fprintf(f,
                "# HELP vega_heap_inuse_bytes Bytes allocated with malloc and not freed "
                "(glibc mallinfo2: uordblks + hblkhd).\n"
                "# TYPE vega_heap_inuse_bytes gauge\n"
                "vega_heap_inuse_bytes %zu\n"
                "# HELP vega_heap_mapped_bytes Bytes malloc holds from the kernel, free chunks "
                "included (glibc mallinfo2: arena + hblkhd).\n"
                "# TYPE vega_heap_mapped_bytes gauge\n"
                "vega_heap_mapped_bytes %zu\n",
                mi.uordblks + mi.hblkhd, mi.arena + mi.hblkhd) < 0)
        return -EIO;
#else
    (void)f;
#endif
    return 0;
}

int cli_prom_render_with(int (*more)(void *user, FILE *f), void *user, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return -errno;
    int r = vega_rt_metrics_prometheus(vega_rt_current(), f);
    if (r == 0)
        r = render_heap(f);
    if (r == 0 && more)
        r = more(user, f);
    if (fclose(f) != 0 && r == 0)
        r = -EIO;
    if (r != 0) {
        free(*buf);
        *buf = NULL;
    }
    return r;
}

static int respond_text(vega_http_exchange *x, int status, const vega_http_field *extra,
                        const char *body)
{
    vega_http_field f[2] = {{{"Content-Type", 12}, {text_type, sizeof text_type - 1}}};
    size_t n = 1;
    if (extra)
        f[n++] = *extra;
    return vega_http_respond(x, status, f, n, body, strlen(body),
                             vega_deadline_in_ms(PROM_WRITE_MS));
}

static int handle(vega_http_exchange *x, void *user)
{
    const struct cli_prom *p = user;
    const vega_http_request *req = vega_http_exchange_request(x);
    if (req->path.len != 8 || memcmp(req->path.ptr, "/metrics", 8) != 0)
        return respond_text(x, 404, NULL, "Not found: the metrics are at /metrics\n");
    if (req->method != VEGA_HTTP_METHOD_GET && req->method != VEGA_HTTP_METHOD_HEAD) {
        static const vega_http_field allow = {{"Allow", 5}, {"GET, HEAD", 9}};
        return respond_text(x, 405, &allow, "Method not allowed: GET /metrics\n");
    }
    char *buf;
    size_t len;
    int r = p->render(p->user, &buf, &len);
    if (r != 0)
        return r; /* the server answers 500 */
    const vega_http_field ct = {{"Content-Type", 12}, {prom_type, sizeof prom_type - 1}};
    r = vega_http_respond(x, 200, &ct, 1, buf, len, vega_deadline_in_ms(PROM_WRITE_MS));
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

int cli_prom_resolve(const char *opt, const char *host, const char *port, bool public,
                     vega_addr *addrs, size_t cap)
{
    int n = vega_addr_resolve(addrs, cap, host, port, AF_UNSPEC, VEGA_DEADLINE_NEVER);
    if (n < 0) {
        cli_err(opt, "--metrics: cannot resolve: %s", vega_strerror(n));
        return -CLI_EXIT_NET;
    }
    for (int k = 0; k < n && !public; k++) {
        if (!cli_addr_is_loopback(&addrs[k])) {
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

int cli_prom_start(struct cli_prom *p, const char *tool, const vega_addr *addrs, int n,
                   const int *fds, size_t nfds, bool quiet)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handle;
    o.user = p;
    o.max_conns = PROM_MAX_CONNS;
    int r = vega_http_server_new(&p->http, &o);
    if (r < 0) {
        p->http = NULL;
        cli_err_code("metrics server", r);
        return CLI_EXIT_NET;
    }
    for (size_t k = 0; k < nfds; k++) {
        r = vega_http_server_listen_fd(p->http, fds[k], VEGA_LISTEN_SHARED, NULL);
        if (r < 0) {
            cli_err(NULL, "--metrics: inherited listener: %s", vega_strerror(r));
            cli_prom_stop(p);
            return CLI_EXIT_NET;
        }
    }
    for (int k = 0; k < n; k++) {
        vega_addr bound;
        char where[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[k], where, sizeof where);
        r = vega_http_server_listen(p->http, &addrs[k], 0, &bound);
        if (r < 0) {
            cli_err(NULL, "--metrics: cannot listen on %s: %s", where, vega_strerror(r));
            cli_prom_stop(p);
            return CLI_EXIT_NET;
        }
        vega_addr_format(&bound, where, sizeof where);
        if (!quiet)
            fprintf(stderr, "%s: metrics on http://%s/metrics\n", tool, where);
    }
    r = vega_task_spawn(&p->task, run_task, p->http);
    if (r < 0) {
        p->task = NULL;
        cli_err_code("spawn", r);
        cli_prom_stop(p);
        return CLI_EXIT_NET;
    }
    return 0;
}

void cli_prom_stop(struct cli_prom *p)
{
    if (p->task) {
        vega_http_server_shutdown(p->http, vega_deadline_in_ms(PROM_STOP_MS));
        vega_task_join(p->task, NULL, VEGA_DEADLINE_NEVER);
        p->task = NULL;
    }
    vega_http_server_free(p->http);
    p->http = NULL;
}
