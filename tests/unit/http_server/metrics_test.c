/* SPDX-License-Identifier: MIT */
/* The server's Prometheus text (vega_http_server_metrics_prometheus): every line in the
 * exposition format 0.0.4 with # HELP and # TYPE before each family's samples, and the counters
 * and the latency histogram after requests served over an in-memory stream. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <vega/http_server.h>
#include <vega/rt.h>
#include <vega/stream.h>
#include <vega/test.h>

#include "vtest.h"

#define DL(ms) vega_deadline_in_ms(ms)

static int handler(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *r = vega_http_exchange_request(x);
    if (r->path.len == 3 && memcmp(r->path.ptr, "/ok", 3) == 0)
        return vega_http_respond(x, 200, NULL, 0, "hello", 5, DL(5000));
    if (r->path.len == 5 && memcmp(r->path.ptr, "/read", 5) == 0) {
        char buf[64];
        vega_ssize n;
        while ((n = vega_http_request_read(x, buf, sizeof buf, DL(5000))) > 0)
            ;
        VCHECK_EQ(n, 0);
        return vega_http_respond(x, 200, NULL, 0, "ok", 2, DL(5000));
    }
    return vega_http_respond(x, 404, NULL, 0, "nope", 4, DL(5000));
}

static char *scrape(vega_http_server *srv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    VCHECK(f);
    VCHECK_EQ(vega_http_server_metrics_prometheus(srv, f), 0);
    VCHECK_EQ(fclose(f), 0);
    return buf;
}

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* Checks one sample line "name{k="v",...} value" (p..e, no newline); its name must belong to
 * the family announced last. */
static void check_sample(const char *p, const char *e, const char *fam, const char *type)
{
    const char *n = p;
    while (p < e && name_char(*p, p == n))
        p++;
    size_t nl = (size_t)(p - n), fl = strlen(fam);
    VCHECK(nl >= fl && memcmp(n, fam, fl) == 0);
    const char *suffix = n + fl;
    size_t sl = nl - fl;
    if (strcmp(type, "histogram") == 0)
        VCHECK((sl == 7 && memcmp(suffix, "_bucket", 7) == 0) ||
               (sl == 4 && memcmp(suffix, "_sum", 4) == 0) ||
               (sl == 6 && memcmp(suffix, "_count", 6) == 0));
    else
        VCHECK_EQ(sl, 0);
    if (p < e && *p == '{') {
        p++;
        while (p < e && *p != '}') {
            const char *k = p;
            while (p < e && name_char(*p, p == k))
                p++;
            VCHECK(p > k && p + 1 < e && p[0] == '=' && p[1] == '"');
            p += 2;
            while (p < e && *p != '"') {
                if (*p == '\\') { /* only \\, \" and \n are escapes */
                    VCHECK(p + 1 < e && (p[1] == '\\' || p[1] == '"' || p[1] == 'n'));
                    p++;
                }
                p++;
            }
            VCHECK(p < e);
            p++;
            if (p < e && *p == ',')
                p++;
        }
        VCHECK(p < e);
        p++;
    }
    VCHECK(p < e && *p == ' ');
    p++;
    char *end;
    strtod(p, &end);
    VCHECK(end == e || (e - p == 4 && memcmp(p, "+Inf", 4) == 0));
}

/* Checks every line of t; returns the samples. */
static int check_text(const char *t)
{
    char fam[128] = "", type[16] = "", helped[128] = "";
    int samples = 0;
    for (const char *p = t; *p;) {
        const char *e = strchr(p, '\n');
        VCHECK(e); /* every line ends with \n */
        if (strncmp(p, "# HELP ", 7) == 0) {
            VCHECK(sscanf(p, "# HELP %127s ", helped) == 1);
            VCHECK(e - p > 8 + (long)strlen(helped)); /* a text after the name */
        } else if (strncmp(p, "# TYPE ", 7) == 0) {
            VCHECK(sscanf(p, "# TYPE %127s %15s", fam, type) == 2);
            VCHECK_STR(fam, helped); /* HELP, then TYPE, then the samples */
            VCHECK(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                   strcmp(type, "histogram") == 0);
        } else {
            VCHECK(fam[0]);
            check_sample(p, e, fam, type);
            samples++;
        }
        p = e + 1;
    }
    return samples;
}

/* The value of the sample whose name and labels are exactly key. */
static double value(const char *t, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
            return strtod(p + kl + 1, NULL);
    VCHECK(!"no such sample");
    return -1;
}

struct serve_arg {
    vega_http_server *srv;
    vega_stream *s;
    int rc;
};

static void *serve_task(void *arg)
{
    struct serve_arg *a = arg;
    a->rc = vega_http_server_serve(a->srv, a->s, NULL, NULL);
    return NULL;
}

static void body_prometheus(void)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    VCHECK_EQ(vega_http_server_metrics_prometheus(NULL, stdout), -EINVAL);
    VCHECK_EQ(vega_http_server_metrics_prometheus(srv, NULL), -EINVAL);

    /* a fresh server: 18 request counters, 3 + 3 byte counters, 3 histograms of 15 buckets,
     * _sum and _count, 6 connection values, the pool's blocks, 2 TLS handshake counters; all 0 */
    char *t = scrape(srv);
    VCHECK_EQ(check_text(t), 18 + 6 + 3 * 17 + 6 + 1 + 2);
    VCHECK_EQ(value(t, "vega_http_server_pool_blocks"), 0);
    VCHECK_EQ(value(t, "vega_http_server_requests_total{proto=\"http1\",code=\"2xx\"}"), 0);
    VCHECK_EQ(value(t, "vega_http_server_request_duration_seconds_count{proto=\"h2\"}"), 0);
    free(t);

    vega_stream *a, *b;
    VCHECK_EQ(vega_duplex_new(&a, &b, 0), 0);
    struct serve_arg sa = {srv, b, -1};
    vega_task *st;
    VCHECK_EQ(vega_task_spawn(&st, serve_task, &sa), 0);
    static const char reqs[] = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"
                               "POST /read HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
                               "0123456789"
                               "GET /missing HTTP/1.1\r\nHost: a\r\n\r\n";
    VCHECK_EQ(vega_stream_write(a, reqs, sizeof reqs - 1, NULL, DL(5000)),
              (vega_ssize)(sizeof reqs - 1));
    VCHECK_EQ(vega_stream_shutdown(a, SHUT_WR, DL(1000)), 0);
    char buf[4096];
    vega_ssize n;
    while ((n = vega_stream_read(a, buf, sizeof buf, DL(5000))) > 0)
        ;
    VCHECK_EQ(n, 0);
    /* the requests are counted before serve returns */
    VCHECK_EQ(vega_task_join(st, NULL, DL(5000)), 0);
    VCHECK_EQ(sa.rc, 0);
    vega_stream_close(a, DL(1000));

    t = scrape(srv);
    VCHECK_EQ(check_text(t), 18 + 6 + 3 * 17 + 6 + 1 + 2);
    VCHECK_EQ(value(t, "vega_http_server_requests_total{proto=\"http1\",code=\"2xx\"}"), 2);
    VCHECK_EQ(value(t, "vega_http_server_requests_total{proto=\"http1\",code=\"4xx\"}"), 1);
    VCHECK_EQ(value(t, "vega_http_server_requests_total{proto=\"http1\",code=\"5xx\"}"), 0);
    VCHECK_EQ(value(t, "vega_http_server_requests_total{proto=\"h2\",code=\"2xx\"}"), 0);
    VCHECK_EQ(value(t, "vega_http_server_response_body_bytes_total{proto=\"http1\"}"), 5 + 2 + 4);
    VCHECK_EQ(value(t, "vega_http_server_request_body_bytes_total{proto=\"http1\"}"), 10);
    VCHECK_EQ(value(t, "vega_http_server_request_duration_seconds_count{proto=\"http1\"}"), 3);
    VCHECK_EQ(
        value(t, "vega_http_server_request_duration_seconds_bucket{proto=\"http1\",le=\"+Inf\"}"),
        3);
    VCHECK(value(t, "vega_http_server_request_duration_seconds_sum{proto=\"http1\"}") > 0);
    VCHECK_EQ(value(t, "vega_http_server_connections_accepted_total"), 1);
    VCHECK_EQ(value(t, "vega_http_server_connections_open"), 0);
    /* one connection ever: its block, given back, is all the pools can hold (or none, once a
     * slow run let the decay return it) */
    VCHECK(strstr(t, "\nvega_http_server_pool_blocks ") != NULL);
    VCHECK(value(t, "vega_http_server_pool_blocks") <= 1);
    free(t);
    vega_http_server_free(srv);
}
VTEST(prometheus)
{
    vtest_run(body_prometheus, 1);
}

/* API rules, ABI: vega_http_server_stats is versioned as options are. A layout this library
 * does not know is refused and the struct left as it was; the current one is filled to its
 * end and not past it. */
static void body_stats_layouts(void)
{
    vega_http_server_opts o;
    vega_http_server_opts_init(&o);
    o.handler = handler;
    vega_http_server *srv;
    VCHECK_EQ(vega_http_server_new(&srv, &o), 0);
    struct {
        vega_http_server_stats st;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    VCHECK_EQ(vega_http_server_get_stats_versioned(srv, &a.st, VEGA_HTTP_SERVER_STATS_VERSION + 1),
              -EINVAL);
    VCHECK_EQ(vega_http_server_get_stats_versioned(srv, &a.st, 0), -EINVAL);
    VCHECK_EQ(vega_http_server_get_stats_versioned(NULL, &a.st, 1), -EINVAL);
    VCHECK_EQ(vega_http_server_get_stats_versioned(srv, NULL, 1), -EINVAL);
    VCHECK(a.st.requests == 0xa5a5a5a5a5a5a5a5ull && a.st.timeouts == 0xa5a5a5a5a5a5a5a5ull);
    VCHECK_EQ(vega_http_server_get_stats(srv, &a.st), 0);
    VCHECK_EQ(a.st.conns_accepted, 0);
    VCHECK_EQ(a.st.timeouts, 0);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
    vega_http_server_free(srv);
}
VTEST(stats_layouts)
{
    vtest_run(body_stats_layouts, 1);
}
