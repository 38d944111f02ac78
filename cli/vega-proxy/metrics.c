/* SPDX-License-Identifier: MIT */
/* --metrics: a plain HTTP/1.1 listener of its own that answers GET /metrics with the proxy's
 * counters and the runtime's in the Prometheus text exposition format 0.0.4 (as vega-serve
 * --metrics). Loopback only unless --metrics-public. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vega/http_server.h>

#include "proxy.h"

/* Scrapers are few: a small bound, so that the metrics port cannot hold many descriptors. */
#define METRICS_MAX_CONNS 64
/* Each metrics response write. */
#define METRICS_WRITE_MS 10000

struct proxy_metrics proxy_metrics;

static const char *const kind_names[PROXY_KIND_N] = {"socks5", "socks4", "connect", "forward",
                                                     "udp"};
static const char *const fail_names[PROXY_FAIL_N] = {
    "refused",       "timeout",        "unreachable",          "unknown-host",
    "upstream-auth", "upstream-error", "upstream-unreachable", "error"};
/* The buckets' upper bounds: ns, and as the le label says them. */
static const uint64_t hs_le_ns[PROXY_HS_BUCKETS] = {
    1000000,   2500000,   5000000,   10000000,   25000000,    50000000,
    100000000, 250000000, 500000000, 1000000000, 2500000000u, 10000000000u};
static const char *const hs_le[PROXY_HS_BUCKETS] = {
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "10"};

static struct {
    struct proxy_server *srv;
    vega_http_server *http;
    vega_task *task;
} m;

void metrics_connect_failed(const char *result)
{
    size_t i = 0;
    while (i + 1 < PROXY_FAIL_N && strcmp(fail_names[i], result) != 0)
        i++;
    metric_add(&proxy_metrics.connect_failures[i], 1);
}

void metrics_handshake(uint64_t ns)
{
    size_t i = 0;
    while (i < PROXY_HS_BUCKETS && ns > hs_le_ns[i])
        i++;
    metric_add(&proxy_metrics.hs_buckets[i], 1);
    metric_add(&proxy_metrics.hs_count, 1);
    metric_add(&proxy_metrics.hs_sum_ns, ns);
}

static unsigned long long get(const atomic_uint_fast64_t *c)
{
    return (unsigned long long)atomic_load_explicit(c, memory_order_relaxed);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_proxy(FILE *f)
{
    struct proxy_metrics *p = &proxy_metrics;
    head(f, "vega_proxy_connections_active", "gauge",
         "Client connections open (handshaking, relaying or in a UDP association).");
    fprintf(f, "vega_proxy_connections_active %llu\n", get(&m.srv->live));
    head(f, "vega_proxy_connections_total", "counter", "Client connections accepted and served.");
    fprintf(f, "vega_proxy_connections_total %llu\n", get(&m.srv->total));
    head(f, "vega_proxy_tunnels_active", "gauge", "Requests of each kind not yet ended.");
    for (size_t k = 0; k < PROXY_KIND_N; k++)
        fprintf(f, "vega_proxy_tunnels_active{kind=\"%s\"} %llu\n", kind_names[k],
                get(&p->active[k]));
    head(f, "vega_proxy_tunnels_total", "counter",
         "Requests of each kind parsed, whatever their result.");
    for (size_t k = 0; k < PROXY_KIND_N; k++)
        fprintf(f, "vega_proxy_tunnels_total{kind=\"%s\"} %llu\n", kind_names[k],
                get(&p->total[k]));
    head(f, "vega_proxy_bytes_total", "counter",
         "Payload bytes relayed: up is client to destination, down the other way.");
    fprintf(f, "vega_proxy_bytes_total{direction=\"up\"} %llu\n", get(&p->bytes_up));
    fprintf(f, "vega_proxy_bytes_total{direction=\"down\"} %llu\n", get(&p->bytes_down));
    head(f, "vega_proxy_auth_failures_total", "counter",
         "Clients refused for credentials (wrong, missing, or SOCKS4 when they are required).");
    fprintf(f, "vega_proxy_auth_failures_total %llu\n", get(&p->auth_failures));
    head(f, "vega_proxy_denied_total", "counter",
         "Refused by a rule: client (--allow, --deny, the rules file's allow and deny) or "
         "destination (--deny-dest, deny-dest rules; a UDP datagram each).");
    fprintf(f, "vega_proxy_denied_total{rule=\"client\"} %llu\n", get(&p->denied_client));
    fprintf(f, "vega_proxy_denied_total{rule=\"destination\"} %llu\n", get(&p->denied_dest));
    head(f, "vega_proxy_max_conns_rejected_total", "counter",
         "Clients reset at accept because --max-conns tunnels were open.");
    fprintf(f, "vega_proxy_max_conns_rejected_total %llu\n", get(&p->too_many));
    head(f, "vega_proxy_connect_failures_total", "counter",
         "Connects to destinations (or through --upstream) that failed, by reason.");
    for (size_t i = 0; i < PROXY_FAIL_N; i++)
        fprintf(f, "vega_proxy_connect_failures_total{reason=\"%s\"} %llu\n", fail_names[i],
                get(&p->connect_failures[i]));
    head(f, "vega_proxy_handshake_seconds", "histogram",
         "From accept to the success reply, for TCP tunnels that were made.");
    unsigned long long cum = 0;
    for (size_t i = 0; i < PROXY_HS_BUCKETS; i++) {
        cum += get(&p->hs_buckets[i]);
        fprintf(f, "vega_proxy_handshake_seconds_bucket{le=\"%s\"} %llu\n", hs_le[i], cum);
    }
    cum += get(&p->hs_buckets[PROXY_HS_BUCKETS]);
    /* the count is read separately: +Inf is the buckets' sum, so that the two never disagree
     * within one scrape */
    fprintf(f, "vega_proxy_handshake_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    fprintf(f, "vega_proxy_handshake_seconds_sum %.9f\n", (double)get(&p->hs_sum_ns) / 1e9);
    fprintf(f, "vega_proxy_handshake_seconds_count %llu\n", cum);
}

/* The runtime's and the proxy's metrics, as one text. Returns 0 or -errno. */
static int render(char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(buf, len);
    if (!f)
        return -errno;
    int r = vega_rt_metrics_prometheus(vega_rt_current(), f);
    if (r == 0)
        render_proxy(f);
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
    static const char text_type[] = "text/plain; charset=utf-8";
    vega_http_field f[2] = {{{"Content-Type", 12}, {text_type, sizeof text_type - 1}}};
    size_t n = 1;
    if (extra)
        f[n++] = *extra;
    return vega_http_respond(x, status, f, n, body, strlen(body),
                             vega_deadline_in_ms(METRICS_WRITE_MS));
}

static int metrics_handle(vega_http_exchange *x, void *user)
{
    (void)user;
    const vega_http_request *req = vega_http_exchange_request(x);
    if (req->path.len != 8 || memcmp(req->path.ptr, "/metrics", 8) != 0)
        return respond_text(x, 404, NULL, "Not found: the metrics are at /metrics\n");
    if (req->method != VEGA_HTTP_METHOD_GET && req->method != VEGA_HTTP_METHOD_HEAD) {
        static const vega_http_field allow = {{"Allow", 5}, {"GET, HEAD", 9}};
        return respond_text(x, 405, &allow, "Method not allowed: GET /metrics\n");
    }
    char *buf;
    size_t len;
    int r = render(&buf, &len);
    if (r != 0)
        return r; /* the server answers 500 */
    static const char prom_type[] = "text/plain; version=0.0.4; charset=utf-8";
    const vega_http_field ct = {{"Content-Type", 12}, {prom_type, sizeof prom_type - 1}};
    r = vega_http_respond(x, 200, &ct, 1, buf, len, vega_deadline_in_ms(METRICS_WRITE_MS));
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

int metrics_start(struct proxy_server *srv)
{
    const struct proxy_opts *o = srv->o;
    if (!o->metrics)
        return 0;
    m.srv = srv;
    vega_addr addrs[4];
    int n = vega_addr_resolve(addrs, 4, o->metrics_host, o->metrics_port, AF_UNSPEC,
                              VEGA_DEADLINE_NEVER);
    if (n < 0) {
        cli_err(o->metrics, "--metrics: cannot resolve: %s", vega_strerror(n));
        return CLI_EXIT_NET;
    }
    for (int k = 0; k < n && !o->metrics_public; k++) {
        if (!addr_is_loopback(&addrs[k])) {
            char where[VEGA_ADDR_STRLEN];
            vega_addr_format(&addrs[k], where, sizeof where);
            cli_err("--metrics",
                    "%s is not a loopback address: the metrics would be public "
                    "(--metrics-public allows it)",
                    where);
            return CLI_EXIT_USAGE;
        }
    }
    vega_http_server_opts ho;
    vega_http_server_opts_init(&ho);
    ho.handler = metrics_handle;
    ho.max_conns = METRICS_MAX_CONNS;
    int r = vega_http_server_new(&m.http, &ho);
    if (r < 0) {
        cli_err_code("metrics server", r);
        return CLI_EXIT_NET;
    }
    for (int k = 0; k < n; k++) {
        vega_addr bound;
        char where[VEGA_ADDR_STRLEN];
        vega_addr_format(&addrs[k], where, sizeof where);
        r = vega_http_server_listen(m.http, &addrs[k], 0, &bound);
        if (r < 0) {
            cli_err(NULL, "--metrics: cannot listen on %s: %s", where, vega_strerror(r));
            metrics_stop();
            return CLI_EXIT_NET;
        }
        vega_addr_format(&bound, where, sizeof where);
        if (!o->quiet)
            fprintf(stderr, "vega-proxy: metrics on http://%s/metrics\n", where);
    }
    r = vega_task_spawn(&m.task, run_task, m.http);
    if (r < 0) {
        cli_err_code("spawn", r);
        metrics_stop();
        return CLI_EXIT_NET;
    }
    return 0;
}

void metrics_stop(void)
{
    if (m.task) {
        vega_http_server_shutdown(m.http, vega_deadline_in_ms(1000));
        vega_task_join(m.task, NULL, VEGA_DEADLINE_NEVER);
        m.task = NULL;
    }
    vega_http_server_free(m.http);
    m.http = NULL;
}
