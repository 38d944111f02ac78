/* SPDX-License-Identifier: MIT */
/* The HTTP server's metrics: per-request counters and a latency histogram in lock-free stripes,
 * TLS handshake outcomes, and their Prometheus text exposition (format 0.0.4). */
#include <inttypes.h>
#include <stdio.h>

#include "server_int.h"

#define ADD(x, n) atomic_fetch_add_explicit(&(x), (n), memory_order_relaxed)
#define LOAD(x)   atomic_load_explicit(&(x), memory_order_relaxed)

/* The latency buckets' upper bounds (inclusive, as Prometheus' "le"), 0.5 ms to 10 s, and their
 * labels in seconds; the last bucket is +Inf. */
static const uint64_t lat_bound_ns[SRV_LAT_BOUNDS] = {
    500 * VEGA_NS_PER_US, 1 * VEGA_NS_PER_MS,   2500 * VEGA_NS_PER_US, 5 * VEGA_NS_PER_MS,
    10 * VEGA_NS_PER_MS,  25 * VEGA_NS_PER_MS,  50 * VEGA_NS_PER_MS,   100 * VEGA_NS_PER_MS,
    250 * VEGA_NS_PER_MS, 500 * VEGA_NS_PER_MS, 1 * VEGA_NS_PER_S,     2500 * VEGA_NS_PER_MS,
    5 * VEGA_NS_PER_S,    10 * VEGA_NS_PER_S,
};
static const char *const lat_le[SRV_LAT_BUCKETS] = {
    "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
    "0.25",   "0.5",   "1",      "2.5",   "5",    "10",    "+Inf",
};
/* Label values: fixed tokens with nothing the format would need escaped (\, " or newline). */
static const char *const proto_name[SRV_NPROTO] = {"http1", "h2", "h3"};
static const char *const class_name[SRV_NCLASS] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};

static unsigned proto_of(int version)
{
    return version >= 30 ? SRV_PROTO_H3 : version >= 20 ? SRV_PROTO_H2 : SRV_PROTO_H1;
}

void vega__srv_exchange_done(vega_http_server *srv, struct vega_http_exchange *x)
{
    int status = x->started ? x->status : 0;
    uint64_t dur = vega_now() - x->req.start;
    /* a connection's requests share a stripe: another connection, likely on another worker,
     * mostly has its own */
    struct srv_stripe *s = &srv->stripes[x->req.conn_id % SRV_METRIC_STRIPES];
    unsigned p = proto_of(x->req.version);
    unsigned cls = status >= 100 && status <= 599 ? (unsigned)status / 100 : 0;
    unsigned b = 0;
    while (b < SRV_LAT_BOUNDS && dur > lat_bound_ns[b])
        b++;
    ADD(s->requests[p][cls], 1);
    ADD(s->lat[p][b], 1);
    ADD(s->lat_sum_ns[p], dur);
    if (x->body_bytes)
        ADD(s->tx_body[p], x->body_bytes);
    if (x->rx_bytes)
        ADD(s->rx_body[p], x->rx_bytes);
    if (srv->o.on_log) {
        vega_http_log_entry e = {
            .status = status,
            .body_bytes = x->body_bytes,
            .duration_ns = dur,
            .error = x->error,
        };
        srv->o.on_log(srv->o.user, &x->req, &e);
    }
}

void vega__srv_count_tls(struct srv_conn *c, vega_ssize n)
{
    vega_http_server *srv = c->srv;
    if (n > 0) {
        /* application data comes only after the handshake */
        ADD(srv->tls_ok, 1);
    } else if (n <= VEGA_ERR_TLS_BASE && n >= VEGA_ERR_TLS_LAST) {
        /* a TLS error: in the handshake unless it had agreed on a version already */
        if (vega_tls_get_version(c->stream))
            ADD(srv->tls_ok, 1);
        else
            ADD(srv->tls_failed, 1);
    } else {
        return; /* nothing yet (or the peer left without trying): no outcome */
    }
    c->tls_counted = true;
}

/* The stripes summed: each cell exact, the whole not a snapshot. */
struct srv_totals {
    uint64_t requests[SRV_NPROTO][SRV_NCLASS];
    uint64_t tx_body[SRV_NPROTO], rx_body[SRV_NPROTO];
    uint64_t lat[SRV_NPROTO][SRV_LAT_BUCKETS];
    uint64_t lat_sum_ns[SRV_NPROTO];
};

static void sum_stripes(const vega_http_server *srv, struct srv_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < SRV_METRIC_STRIPES; i++) {
        struct srv_stripe *s = (struct srv_stripe *)&srv->stripes[i];
        for (unsigned p = 0; p < SRV_NPROTO; p++) {
            for (unsigned k = 0; k < SRV_NCLASS; k++)
                t->requests[p][k] += LOAD(s->requests[p][k]);
            for (unsigned b = 0; b < SRV_LAT_BUCKETS; b++)
                t->lat[p][b] += LOAD(s->lat[p][b]);
            t->tx_body[p] += LOAD(s->tx_body[p]);
            t->rx_body[p] += LOAD(s->rx_body[p]);
            t->lat_sum_ns[p] += LOAD(s->lat_sum_ns[p]);
        }
    }
}

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One value per protocol: name{proto="..."} v. */
static void per_proto(FILE *out, const char *name, const char *type, const char *help,
                      const uint64_t v[SRV_NPROTO])
{
    family(out, name, type, help);
    for (unsigned p = 0; p < SRV_NPROTO; p++)
        fprintf(out, "%s{proto=\"%s\"} %" PRIu64 "\n", name, proto_name[p], v[p]);
}

static void histogram(FILE *out, const struct srv_totals *t)
{
    static const char h[] = "vega_http_server_request_duration_seconds";
    family(out, h, "histogram",
           "Time from a request's complete head to the end of its response (to the end of the "
           "session for a WebSocket).");
    for (unsigned p = 0; p < SRV_NPROTO; p++) {
        uint64_t cum = 0; /* Prometheus buckets are cumulative */
        for (unsigned b = 0; b < SRV_LAT_BUCKETS; b++) {
            cum += t->lat[p][b];
            fprintf(out, "%s_bucket{proto=\"%s\",le=\"%s\"} %" PRIu64 "\n", h, proto_name[p],
                    lat_le[b], cum);
        }
        /* the sum in seconds, exactly, from integer nanoseconds */
        uint64_t ns = t->lat_sum_ns[p];
        fprintf(out, "%s_sum{proto=\"%s\"} %" PRIu64 ".%09" PRIu64 "\n", h, proto_name[p],
                ns / (uint64_t)VEGA_NS_PER_S, ns % (uint64_t)VEGA_NS_PER_S);
        fprintf(out, "%s_count{proto=\"%s\"} %" PRIu64 "\n", h, proto_name[p], cum);
    }
}

/* HTTP/3's QUIC endpoint: its counters (vega_quic_endpoint_get_stats), the final ones after
 * the stop. Nothing when HTTP/3 never started. */
static void quic_metrics(const vega_http_server *srv, FILE *out)
{
    vega_http_server *s = (vega_http_server *)srv;
    vega_quic_endpoint_stats q;
    pthread_mutex_lock(&s->lock);
    bool on = s->quic_on;
    if (s->quic_ep)
        vega_quic_endpoint_get_stats(s->quic_ep, &q);
    else
        q = s->quic_last;
    pthread_mutex_unlock(&s->lock);
    if (!on)
        return;
    static const struct {
        const char *name, *type, *help;
        size_t off;
    } one[] = {
#define Q(n, ty, f, h) {"vega_quic_" n, ty, h, offsetof(vega_quic_endpoint_stats, f)}
        Q("connections_accepted_total", "counter", conns_accepted,
          "QUIC connections created for a client's Initial."),
        Q("connections_refused_total", "counter", conns_refused,
          "QUIC connections refused (over the limit, or the accept queue full)."),
        Q("connections_open", "gauge", conns_open, "QUIC connections open (handshaking included)."),
        Q("handshakes_in_progress", "gauge", handshakes, "QUIC connections in their handshake."),
        Q("retry_packets_sent_total", "counter", retries_sent, "Retry packets sent."),
        Q("version_negotiation_sent_total", "counter", vn_sent,
          "Version Negotiation packets sent."),
        Q("stateless_resets_sent_total", "counter", resets_sent, "Stateless resets sent."),
        Q("tokens_invalid_total", "counter", tokens_invalid,
          "Initials whose address-validation token did not validate."),
        Q("datagrams_received_total", "counter", dgrams_in, "UDP datagrams received."),
        Q("datagrams_sent_total", "counter", dgrams_out, "UDP datagrams sent."),
        Q("datagrams_dropped_total", "counter", dgrams_dropped,
          "UDP datagrams routed to no connection and not answered (malformed, limits)."),
        Q("received_bytes_total", "counter", bytes_in, "UDP payload bytes received."),
        Q("sent_bytes_total", "counter", bytes_out, "UDP payload bytes sent."),
        Q("packets_sent_total", "counter", pkts_sent,
          "QUIC packets sent, added when each connection ends."),
        Q("packets_received_total", "counter", pkts_recv,
          "QUIC packets received, added when each connection ends."),
        Q("packets_lost_total", "counter", pkts_lost,
          "QUIC packets declared lost, added when each connection ends."),
        Q("pto_expirations_total", "counter", ptos,
          "Probe timeouts that expired, added when each connection ends."),
#undef Q
    };
    for (size_t i = 0; i < VEGA__ARRAY_LEN(one); i++) {
        family(out, one[i].name, one[i].type, one[i].help);
        uint64_t v = *(const uint64_t *)((const char *)&q + one[i].off);
        fprintf(out, "%s %" PRIu64 "\n", one[i].name, v);
    }
    static const char hs[] = "vega_quic_handshakes_total";
    family(out, hs, "counter",
           "QUIC handshakes by result (failed: the connection ended before it completed).");
    fprintf(out, "%s{result=\"ok\"} %" PRIu64 "\n%s{result=\"failed\"} %" PRIu64 "\n", hs,
            q.handshakes_ok, hs, q.handshakes_failed);
    static const char cl[] = "vega_quic_connections_closed_total";
    family(out, cl, "counter",
           "QUIC connections ended, by how: idle_timeout, peer (its CONNECTION_CLOSE or stateless "
           "reset), local (we closed it), handshake_failed (ended before the handshake "
           "completed).");
    fprintf(out,
            "%s{reason=\"idle_timeout\"} %" PRIu64 "\n%s{reason=\"peer\"} %" PRIu64
            "\n%s{reason=\"local\"} %" PRIu64 "\n%s{reason=\"handshake_failed\"} %" PRIu64 "\n",
            cl, q.closed_idle, cl, q.closed_peer, cl, q.closed_local, cl, q.handshakes_failed);
    static const char ed[] = "vega_quic_early_data_total";
    family(out, ed, "counter", "Connections whose 0-RTT data was accepted or rejected.");
    fprintf(out, "%s{result=\"accepted\"} %" PRIu64 "\n%s{result=\"rejected\"} %" PRIu64 "\n", ed,
            q.early_accepted, ed, q.early_rejected);
    static const char hd[] = "vega_quic_handshake_duration_seconds";
    static const char *const le[VEGA_QUIC_EP_HS_BUCKETS] = {
        "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
        "0.25",  "0.5",    "1",     "2.5",  "5",     "+Inf",
    };
    family(out, hd, "histogram",
           "Completed QUIC handshakes by duration, from the client's first Initial that the "
           "server kept to the handshake's completion.");
    uint64_t cum = 0;
    for (size_t b = 0; b < VEGA_QUIC_EP_HS_BUCKETS; b++) {
        cum += q.hs_duration[b];
        fprintf(out, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", hd, le[b], cum);
    }
    fprintf(out, "%s_sum %" PRIu64 ".%09" PRIu64 "\n%s_count %" PRIu64 "\n", hd,
            q.hs_duration_sum_ns / (uint64_t)VEGA_NS_PER_S,
            q.hs_duration_sum_ns % (uint64_t)VEGA_NS_PER_S, hd, cum);
}

int vega_http_server_metrics_prometheus(const vega_http_server *srv, FILE *out)
{
    if (!srv || !out)
        return -EINVAL;
    struct srv_totals t;
    sum_stripes(srv, &t);
    vega_http_server_stats st;
    vega_http_server_get_stats(srv, &st);

    static const char rq[] = "vega_http_server_requests_total";
    family(out, rq, "counter",
           "Requests that reached the handler, by protocol and status class of the response "
           "(none: no response could be sent).");
    for (unsigned p = 0; p < SRV_NPROTO; p++)
        for (unsigned k = 0; k < SRV_NCLASS; k++)
            fprintf(out, "%s{proto=\"%s\",code=\"%s\"} %" PRIu64 "\n", rq, proto_name[p],
                    class_name[k], t.requests[p][k]);
    per_proto(out, "vega_http_server_response_body_bytes_total", "counter",
              "Response body bytes written (none for HEAD, 204 and 304).", t.tx_body);
    per_proto(out, "vega_http_server_request_body_bytes_total", "counter",
              "Request body bytes the handlers read.", t.rx_body);
    histogram(out, &t);

    static const struct {
        const char *name, *type, *help;
        size_t off;
    } conn[] = {
#define S(n, ty, f, h) {"vega_http_server_" n, ty, h, offsetof(vega_http_server_stats, f)}
        S("connections_accepted_total", "counter", conns_accepted, "TCP connections accepted."),
        S("connections_refused_total", "counter", conns_refused,
          "TCP connections closed at once because max_conns were open."),
        S("connections_open", "gauge", conns_open, "TCP connections open (active and parked)."),
        S("connections_parked", "gauge", conns_parked,
          "Idle keep-alive TCP connections parked (no task, no buffer)."),
        S("bad_requests_total", "counter", bad_requests,
          "Requests refused by the server for malformed input or limits (4xx sent, handler not "
          "called)."),
        S("timeouts_total", "counter", timeouts,
          "Connections closed by a header, body, idle or write timeout."),
#undef S
    };
    for (size_t i = 0; i < VEGA__ARRAY_LEN(conn); i++) {
        family(out, conn[i].name, conn[i].type, conn[i].help);
        uint64_t v = *(const uint64_t *)((const char *)&st + conn[i].off);
        fprintf(out, "%s %" PRIu64 "\n", conn[i].name, v);
    }
    static const char pb[] = "vega_http_server_pool_blocks";
    family(out, pb, "gauge",
           "Free connection blocks (parser and buffers, about 52 KiB each) the per-worker pools "
           "keep for the next requests; those unused for 2 s are given back.");
    fprintf(out, "%s %zu\n", pb, vega__srv_pool_held(srv));
    static const char hs[] = "vega_http_server_tls_handshakes_total";
    family(out, hs, "counter", "TLS handshakes on TCP connections, by result.");
    vega_http_server *s = (vega_http_server *)srv;
    fprintf(out, "%s{result=\"ok\"} %" PRIu64 "\n%s{result=\"failed\"} %" PRIu64 "\n", hs,
            (uint64_t)LOAD(s->tls_ok), hs, (uint64_t)LOAD(s->tls_failed));
    quic_metrics(srv, out);
    return ferror(out) ? -EIO : 0;
}
