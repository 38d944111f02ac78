/* SPDX-License-Identifier: MIT */
/* --metrics: the proxy's counters and the runtime's in the Prometheus text exposition format
 * 0.0.4, on the tools' scrape listener (cli/common/prom.c; loopback only unless
 * --metrics-public). */
#include <stdio.h>
#include <string.h>

#include "prom.h"
#include "proxy.h"

struct proxy_metrics proxy_metrics;

static const char *const kind_names[PROXY_KIND_N] = {"socks5", "socks4", "connect", "forward",
                                                     "udp"};
static const char *const fail_names[PROXY_FAIL_N] = {
    "refused",       "timeout",        "unreachable",          "unknown-host",
    "upstream-auth", "upstream-error", "upstream-unreachable", "error"};
static const char *const udp_drop_names[UDP_DROP_N] = {"source", "header", "fragment",
                                                       "destination", "send"};
/* The buckets' upper bounds: ns, and as the le label says them. */
static const uint64_t hs_le_ns[PROXY_HS_BUCKETS] = {
    1000000,   2500000,   5000000,   10000000,   25000000,    50000000,
    100000000, 250000000, 500000000, 1000000000, 2500000000u, 10000000000u};
static const char *const hs_le[PROXY_HS_BUCKETS] = {
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "10"};

static struct {
    struct proxy_server *srv;
    struct cli_prom prom;
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

static int render_proxy(void *user, FILE *f)
{
    (void)user;
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
    head(f, "vega_proxy_user_limit_rejected_total", "counter",
         "Requests refused because their user held --max-conns-per-user tunnels already.");
    fprintf(f, "vega_proxy_user_limit_rejected_total %llu\n", get(&p->user_limit));
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
    head(f, "vega_proxy_udp_dropped_total", "counter",
         "UDP ASSOCIATE datagrams dropped, by reason: source (not the client's, or back from "
         "a stranger), header (malformed), fragment (FRAG != 0: no reassembly), destination "
         "(a rule, a name that does not resolve), send (failed: too large, a full buffer).");
    for (size_t i = 0; i < UDP_DROP_N; i++)
        fprintf(f, "vega_proxy_udp_dropped_total{reason=\"%s\"} %llu\n", udp_drop_names[i],
                get(&p->udp_dropped[i]));
    struct pipe_stats ps;
    relay_pipe_stats(&ps);
    head(f, "vega_proxy_pipe_budget_pages", "gauge",
         "Pages that relay pipes grown to 1 MiB may hold beyond their first 16, together.");
    fprintf(f, "vega_proxy_pipe_budget_pages %zu\n", ps.budget_pages);
    head(f, "vega_proxy_pipe_grown_pages", "gauge",
         "Pages that grown relay pipes hold now beyond their first 16.");
    fprintf(f, "vega_proxy_pipe_grown_pages %zu\n", ps.grown_pages);
    head(f, "vega_proxy_pipe_grown_pages_peak", "gauge",
         "The most pages grown relay pipes held at once beyond their first 16.");
    fprintf(f, "vega_proxy_pipe_grown_pages_peak %zu\n", ps.peak_pages);
    head(f, "vega_proxy_pipes_grown_total", "counter", "Relay pipes grown to 1 MiB.");
    fprintf(f, "vega_proxy_pipes_grown_total %llu\n", (unsigned long long)ps.grown);
    head(f, "vega_proxy_pipe_grow_refused_total", "counter",
         "Relay pipes left at 64 KiB because the budget was full.");
    fprintf(f, "vega_proxy_pipe_grow_refused_total %llu\n", (unsigned long long)ps.refused);
    return 0;
}

/* The runtime's and the proxy's metrics, as one text. Returns 0 or -errno. */
static int render(void *user, char **buf, size_t *len)
{
    return cli_prom_render_with(render_proxy, user, buf, len);
}

int metrics_start(struct proxy_server *srv)
{
    const struct proxy_opts *o = srv->o;
    if (!o->metrics)
        return 0;
    m.srv = srv;
    vega_addr addrs[4];
    int n =
        cli_prom_resolve(o->metrics, o->metrics_host, o->metrics_port, o->metrics_public, addrs, 4);
    if (n < 0)
        return -n;
    m.prom.render = render;
    return cli_prom_start(&m.prom, "vega-proxy", addrs, n, NULL, 0, o->quiet);
}

void metrics_stop(void)
{
    cli_prom_stop(&m.prom);
}
