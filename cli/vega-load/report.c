/* SPDX-License-Identifier: MIT */
/* The result: a wrk-like summary on stdout, or one JSON object with --json. */
#include <stdio.h>
#include <string.h>

#include "load.h"

static const double pcts[] = {50.0, 90.0, 99.0, 99.9, 99.99};
static const char *const pct_keys[] = {"p50", "p90", "p99", "p999", "p9999"};
static const char *const kind_names[LOAD_ERR_KINDS] = {"connect", "read",     "write",
                                                       "timeout", "mismatch", "parse"};

const char *load_noun(const struct load_opts *o)
{
    return o->http ? "requests" : "round trips";
}

void load_fmt_duration(char *buf, size_t cap, double us)
{
    if (us < 1e3)
        snprintf(buf, cap, "%.2fus", us);
    else if (us < 1e6)
        snprintf(buf, cap, "%.2fms", us / 1e3);
    else if (us < 60e6)
        snprintf(buf, cap, "%.2fs", us / 1e6);
    else
        snprintf(buf, cap, "%.2fm", us / 60e6);
}

/* An option's duration as the user would write it: "5s", "250ms", "1.5s". */
static void fmt_span(char *buf, size_t cap, uint64_t ns)
{
    if (ns % VEGA_NS_PER_S == 0)
        snprintf(buf, cap, "%llus", (unsigned long long)(ns / VEGA_NS_PER_S));
    else if (ns % VEGA_NS_PER_MS == 0 && ns < 10 * VEGA_NS_PER_S)
        snprintf(buf, cap, "%llums", (unsigned long long)(ns / VEGA_NS_PER_MS));
    else
        snprintf(buf, cap, "%.3gs", (double)ns / 1e9);
}

/* Bytes in wrk's units: B, KB, MB, GB, TB (powers of 1024). */
static void fmt_bytes(char *buf, size_t cap, double b)
{
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    unsigned u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.2f%s", b, units[u]);
}

static const char *transport(const struct load_opts *o)
{
    if (o->tls)
        return o->unix_path ? "unix+tls" : "tls";
    return o->unix_path ? "unix" : o->udp ? "udp" : "tcp";
}

static void http_header(const struct load_opts *o);

void load_report_header(const struct load_opts *o)
{
    if (o->http) {
        http_header(o);
        return;
    }
    char d[32];
    const char *t = o->unix_path ? o->unix_path : o->target;
    vega_rt *rt = vega_rt_current();
    unsigned w = vega_rt_workers(rt);
    fmt_span(d, sizeof(d), o->duration_ns);
    if (o->duration_ns && o->round_trips)
        printf("Running %s %s test (at most %llu round trips) @ %s\n", d, o->mode,
               (unsigned long long)o->round_trips, t);
    else if (o->duration_ns)
        printf("Running %s %s test @ %s\n", d, o->mode, t);
    else
        printf("Running %s test of %llu round trips @ %s\n", o->mode,
               (unsigned long long)o->round_trips, t);
    printf("  %u worker%s and %llu connection%s, %zu-byte messages over %s, driver %s\n", w,
           w == 1 ? "" : "s", (unsigned long long)o->conns, o->conns == 1 ? "" : "s", o->size,
           transport(o), vega_rt_driver_name(rt));
    if (o->warmup_ns) {
        fmt_span(d, sizeof(d), o->warmup_ns);
        printf("  %s warm-up first, not counted\n", d);
    }
    fflush(stdout);
}

static double per_sec(uint64_t n, double s)
{
    return s > 0.0 ? (double)n / s : 0.0;
}

/* WebSocket: what the first handshake negotiated (with --ws-protocol, --ws-compress), and the
 * bytes on the wire against the messages' (the compression of --ws-compress shows there). */
static void ws_text(const struct load_opts *o, const struct load_totals *t)
{
    if (t->ws_proto) {
        printf("  WebSocket:");
        if (o->nws_protocols)
            printf(" %s%s%s",
                   *t->ws_proto ? "subprotocol " : "no subprotocol (the server chose none)",
                   t->ws_proto, o->ws_compress ? ";" : "");
        if (o->ws_compress && t->ws_deflate->enabled) {
            const vega_ws_deflate_params *p = t->ws_deflate;
            printf(" permessage-deflate, the server answered '%s' (windows: server %u, client %u "
                   "bits; context takeover: server %s, client %s)",
                   t->ws_ext, p->server_max_window_bits ? p->server_max_window_bits : 15u,
                   p->client_max_window_bits ? p->client_max_window_bits : 15u,
                   p->server_no_context_takeover ? "no" : "yes",
                   p->client_no_context_takeover ? "no" : "yes");
        } else if (o->ws_compress) {
            printf(" permessage-deflate declined by the server");
        }
        printf("\n");
    }
    char a[32], b[32], c[32], d[32];
    fmt_bytes(a, sizeof(a), (double)t->ws_wire_out);
    fmt_bytes(b, sizeof(b), (double)t->ws_wire_in);
    fmt_bytes(c, sizeof(c), (double)t->ws_msg_out);
    fmt_bytes(d, sizeof(d), (double)t->ws_msg_in);
    printf("  On the wire after the handshakes: %s sent, %s received, for messages of %s sent, %s "
           "received",
           a, b, c, d);
    if (t->ws_msg_out && t->ws_msg_in)
        printf(" (%.1f%%, %.1f%%)", 100.0 * (double)t->ws_wire_out / (double)t->ws_msg_out,
               100.0 * (double)t->ws_wire_in / (double)t->ws_msg_in);
    printf("\n");
}

void load_report_text(const struct load_opts *o, const struct load_totals *t)
{
    const struct cli_hist *h = &t->hist;
    char a[32], b[32], c[32];
    if (h->total == 0) {
        printf("  No round trip completed\n");
        goto counts;
    }
    load_fmt_duration(a, sizeof(a), cli_hist_mean(h));
    load_fmt_duration(b, sizeof(b), cli_hist_stdev(h));
    load_fmt_duration(c, sizeof(c), (double)(h->total ? h->max : 0));
    printf("  Stats          Avg        Stdev        Max\n");
    printf("    Latency  %10s %10s %10s\n", a, b, c);
    printf("  Latency Distribution (HdrHistogram)\n");
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
        load_fmt_duration(a, sizeof(a), (double)cli_hist_percentile(h, pcts[i]));
        printf("  %6g%% %10s\n", pcts[i], a);
    }
    load_fmt_duration(a, sizeof(a), (double)(h->total ? h->max : 0));
    printf("  %6g%% %10s\n", 100.0, a);
    if (h->clamped)
        printf("  %llu round trips took over 60s and count as 60s\n",
               (unsigned long long)h->clamped);
counts:;
    double bytes = (double)t->round_trips * (double)o->size;
    fmt_bytes(a, sizeof(a), bytes);
    load_fmt_duration(b, sizeof(b), t->elapsed_s * 1e6);
    printf("  %llu round trips in %s, %s sent, %s received\n", (unsigned long long)t->round_trips,
           b, a, a);
    printf("  Errors: connect %llu, read %llu, write %llu, timeout %llu, mismatch %llu\n",
           (unsigned long long)t->errors[LOAD_ERR_CONNECT],
           (unsigned long long)t->errors[LOAD_ERR_READ],
           (unsigned long long)t->errors[LOAD_ERR_WRITE],
           (unsigned long long)t->errors[LOAD_ERR_TIMEOUT],
           (unsigned long long)t->errors[LOAD_ERR_MISMATCH]);
    if (o->ws && o->rate && t->hist_unc.total) {
        char p50[32], p99[32], mx[32];
        const struct cli_hist *u = &t->hist_unc;
        load_fmt_duration(p50, sizeof(p50), (double)cli_hist_percentile(u, 50.0));
        load_fmt_duration(p99, sizeof(p99), (double)cli_hist_percentile(u, 99.0));
        load_fmt_duration(mx, sizeof(mx), (double)u->max);
        printf("  Constant rate: %llu round trips/s over all connections (latency from the "
               "intended send;\n  uncorrected, from the actual send: p50 %s, p99 %s, max %s)\n",
               (unsigned long long)o->rate, p50, p99, mx);
    }
    if (o->ws) { /* a refused or invalid handshake, a protocol error */
        printf("  Parse errors: %llu\n", (unsigned long long)t->errors[LOAD_ERR_PARSE]);
        ws_text(o, t);
    }
    if (t->signo)
        printf("  Stopped early by SIG%s\n", sigabbrev_np(t->signo) ? sigabbrev_np(t->signo) : "?");
    printf("Round trips/sec: %10.2f\n", per_sec(t->round_trips, t->elapsed_s));
    fmt_bytes(a, sizeof(a), t->elapsed_s > 0.0 ? bytes / t->elapsed_s : 0.0);
    printf("Transfer/sec:    %10s (each way)\n", a);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void json_latency(FILE *f, const char *key, const struct cli_hist *h);

void load_report_json(FILE *f, const struct load_opts *o, const struct load_totals *t)
{
    const struct cli_hist *h = &t->hist;
    double bytes = (double)t->round_trips * (double)o->size;
    fputs("{\"mode\":", f);
    json_str(f, o->mode);
    fputs(",\"target\":", f);
    json_str(f, o->unix_path ? o->unix_path : o->target);
    fprintf(f, ",\"transport\":\"%s\",\"driver\":", transport(o));
    json_str(f, t->driver);
    fprintf(f, ",\"workers\":%u,\"connections\":%llu,\"size\":%zu", t->workers,
            (unsigned long long)o->conns, o->size);
    fprintf(f, ",\"duration_s\":%.6f,\"warm_up_s\":%.6f,\"timeout_s\":%.6f", t->elapsed_s,
            (double)o->warmup_ns / 1e9, (double)o->timeout_ns / 1e9);
    fprintf(f, ",\"round_trips\":%llu,\"rps\":%.2f", (unsigned long long)t->round_trips,
            per_sec(t->round_trips, t->elapsed_s));
    fprintf(f, ",\"bytes_sent\":%.0f,\"bytes_received\":%.0f,\"bytes_per_sec\":%.2f", bytes, bytes,
            t->elapsed_s > 0.0 ? bytes / t->elapsed_s : 0.0);
    fputs(",\"latency_us\":{", f);
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
        fprintf(f, "\"%s\":%llu,", pct_keys[i],
                (unsigned long long)cli_hist_percentile(h, pcts[i]));
    fprintf(f, "\"max\":%llu,\"min\":%llu,\"mean\":%.2f,\"stdev\":%.2f}",
            (unsigned long long)(h->total ? h->max : 0),
            (unsigned long long)(h->total ? h->min : 0), cli_hist_mean(h), cli_hist_stdev(h));
    fprintf(f, ",\"errors\":%llu", (unsigned long long)t->error_sum);
    for (int k = 0; k < LOAD_ERR_KINDS; k++)
        fprintf(f, ",\"%s_errors\":%llu", kind_names[k], (unsigned long long)t->errors[k]);
    fprintf(f, ",\"connects\":%llu,\"connections_failed\":%llu,\"connections_gave_up\":%llu",
            (unsigned long long)t->connects, (unsigned long long)t->never_connected,
            (unsigned long long)t->gave_up);
    if (o->ws && o->rate) {
        fprintf(f, ",\"rate\":%llu", (unsigned long long)o->rate);
        json_latency(f, "latency_uncorrected_us", &t->hist_unc);
    }
    if (o->ws) {
        fprintf(f,
                ",\"ws_wire_bytes_sent\":%llu,\"ws_wire_bytes_received\":%llu,"
                "\"ws_message_bytes_sent\":%llu,\"ws_message_bytes_received\":%llu",
                (unsigned long long)t->ws_wire_out, (unsigned long long)t->ws_wire_in,
                (unsigned long long)t->ws_msg_out, (unsigned long long)t->ws_msg_in);
        if (o->nws_protocols) {
            fputs(",\"ws_subprotocol\":", f);
            if (t->ws_proto && *t->ws_proto)
                json_str(f, t->ws_proto);
            else
                fputs("null", f);
        }
        if (o->ws_compress) {
            fputs(",\"ws_extensions\":", f);
            if (t->ws_ext && *t->ws_ext)
                json_str(f, t->ws_ext);
            else
                fputs("null", f);
            const vega_ws_deflate_params *p = t->ws_deflate;
            if (p && p->enabled)
                fprintf(f,
                        ",\"ws_deflate\":{\"server_max_window_bits\":%u,"
                        "\"client_max_window_bits\":%u,\"server_no_context_takeover\":%s,"
                        "\"client_no_context_takeover\":%s}",
                        p->server_max_window_bits ? p->server_max_window_bits : 15u,
                        p->client_max_window_bits ? p->client_max_window_bits : 15u,
                        p->server_no_context_takeover ? "true" : "false",
                        p->client_no_context_takeover ? "true" : "false");
            else
                fputs(",\"ws_deflate\":null", f);
        }
    }
    fprintf(f, ",\"interrupted\":%s", t->signo ? "true" : "false");
    fputs("}\n", f);
}

/* ---- HTTP ----------------------------------------------------------------------------------- */

static void http_header(const struct load_opts *o)
{
    char d[32];
    vega_rt *rt = vega_rt_current();
    unsigned w = vega_rt_workers(rt);
    fmt_span(d, sizeof(d), o->duration_ns);
    if (o->duration_ns && o->round_trips)
        printf("Running %s test (at most %llu requests) @ %s\n", d,
               (unsigned long long)o->round_trips, o->url);
    else if (o->duration_ns)
        printf("Running %s test @ %s\n", d, o->url);
    else
        printf("Running test of %llu requests @ %s\n", (unsigned long long)o->round_trips, o->url);
    printf("  %u thread%s and %llu connection%s, driver %s", w, w == 1 ? "" : "s",
           (unsigned long long)o->conns, o->conns == 1 ? "" : "s", vega_rt_driver_name(rt));
    if (o->pipeline > 1)
        printf(", pipeline %u", o->pipeline);
    if (o->h3)
        printf(", HTTP/3 with %u stream%s per connection", o->streams, o->streams == 1 ? "" : "s");
    if (o->h2)
        printf(", HTTP/2%s with %u stream%s per connection", o->tls ? "" : " (h2c)", o->streams,
               o->streams == 1 ? "" : "s");
    if (o->unix_path)
        printf(", over %s", o->unix_path);
    putchar('\n');
    if (o->nstages) {
        printf("  Stages (rate ramped linearly, from 0):");
        for (unsigned i = 0; i < o->nstages; i++) {
            fmt_span(d, sizeof(d), o->stages[i].ns);
            printf("%s %s to %.0f/s", i ? "," : "", d, o->stages[i].rate);
        }
        printf("\n  (latency from the intended send time; uncorrected: from the actual send)\n");
    } else if (o->rate) {
        printf("  Constant rate: %llu requests/s over all connections (latency from the intended "
               "send time;\n  uncorrected: from the actual send)\n",
               (unsigned long long)o->rate);
    }
    if (o->warmup_ns) {
        fmt_span(d, sizeof(d), o->warmup_ns);
        printf("  %s warm-up first, not counted\n", d);
    }
    fflush(stdout);
}

/* wrk's Req/Sec numbers: "56.20k", "1.20M", "950.00". */
static void fmt_count(char *buf, size_t cap, double v)
{
    if (v >= 1e6)
        snprintf(buf, cap, "%.2fM", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, cap, "%.2fk", v / 1e3);
    else
        snprintf(buf, cap, "%.2f", v);
}

static double series_mean(const struct load_series *s)
{
    return s->n ? s->sum / (double)s->n : 0.0;
}

static double series_stdev(const struct load_series *s)
{
    if (s->n < 2)
        return 0.0;
    double m = series_mean(s);
    double var = (s->sumsq - (double)s->n * m * m) / (double)(s->n - 1);
    return cli_sqrt(var);
}

static void latency_row(const char *name, const struct cli_hist *h)
{
    char a[32], b[32], c[32];
    load_fmt_duration(a, sizeof(a), cli_hist_mean(h));
    load_fmt_duration(b, sizeof(b), cli_hist_stdev(h));
    load_fmt_duration(c, sizeof(c), (double)(h->total ? h->max : 0));
    printf("    %-9s %10s %10s %10s\n", name, a, b, c);
}

/* "avg 52.00us, p50 50.00us, p99 80.00us, max 1.20ms (64)" for a connection-time histogram. */
static void conn_time_row(const char *name, const struct cli_hist *h)
{
    char a[32], b[32], c[32], d[32];
    if (h->total == 0)
        return;
    load_fmt_duration(a, sizeof(a), cli_hist_mean(h));
    load_fmt_duration(b, sizeof(b), (double)cli_hist_percentile(h, 50.0));
    load_fmt_duration(c, sizeof(c), (double)cli_hist_percentile(h, 99.0));
    load_fmt_duration(d, sizeof(d), (double)h->max);
    printf("    %-14s %10s %10s %10s %10s %8llu\n", name, a, b, c, d, (unsigned long long)h->total);
}

static uint64_t status_class(const struct load_totals *t, int cls)
{
    uint64_t n = 0;
    for (int s = cls * 100; s < cls * 100 + 100; s++)
        n += t->status[s];
    return n;
}

/* h2load's "space savings": the share of the decoded header bytes that HPACK saved. */
static double savings(uint64_t wire, uint64_t decoded)
{
    return decoded ? 1.0 - (double)wire / (double)decoded : 0.0;
}

static void h2_text(const struct load_totals *t)
{
    char a[32], b[32], c[32], d[32], e[32];
    fmt_bytes(a, sizeof(a), (double)t->h2_head_in);
    fmt_bytes(b, sizeof(b), (double)t->h2_head_in_decoded);
    fmt_bytes(c, sizeof(c), (double)t->h2_head_out);
    fmt_bytes(d, sizeof(d), (double)t->h2_head_out_decoded);
    fmt_bytes(e, sizeof(e), (double)t->h2_data_in);
    printf("  HTTP/2 headers: received %s for %s decoded (space savings %.2f%%), sent %s for %s "
           "(%.2f%%); data received %s\n",
           a, b, 100.0 * savings(t->h2_head_in, t->h2_head_in_decoded), c, d,
           100.0 * savings(t->h2_head_out, t->h2_head_out_decoded), e);
    printf("  HTTP/2 streams: %llu refused by the server (retried), %llu reset by the server; "
           "%llu GOAWAY received\n",
           (unsigned long long)t->h2_refused, (unsigned long long)t->h2_reset,
           (unsigned long long)t->h2_goaway);
}

void load_report_http_text(const struct load_opts *o, const struct load_totals *t)
{
    const struct cli_hist *h = &t->hist, *u = &t->hist_unc;
    char a[32], b[32], c[32];
    if (h->total == 0) {
        printf("  No request completed\n");
        goto counts;
    }
    printf("  Thread Stats       Avg      Stdev        Max\n");
    latency_row("Latency", h);
    if (o->rate)
        latency_row("(uncorr.)", u);
    fmt_count(a, sizeof(a), series_mean(&t->thread_rps));
    fmt_count(b, sizeof(b), series_stdev(&t->thread_rps));
    fmt_count(c, sizeof(c), t->thread_rps.max);
    printf("    %-9s %10s %10s %10s\n", "Req/Sec", a, b, c);
    printf("  Latency Distribution (HdrHistogram)\n");
    if (o->rate)
        printf("  %7s %10s %12s\n", "", "corrected", "uncorrected");
    for (size_t i = 0; i <= sizeof(pcts) / sizeof(pcts[0]); i++) {
        double pct = i < sizeof(pcts) / sizeof(pcts[0]) ? pcts[i] : 100.0;
        load_fmt_duration(a, sizeof(a),
                          (double)(pct < 100.0 ? cli_hist_percentile(h, pct) : h->max));
        printf("  %6g%% %10s", pct, a);
        if (o->rate) {
            load_fmt_duration(b, sizeof(b),
                              (double)(pct < 100.0 ? cli_hist_percentile(u, pct) : u->max));
            printf(" %12s", b);
        }
        putchar('\n');
    }
    if (h->clamped)
        printf("  %llu requests took over 60s and count as 60s\n", (unsigned long long)h->clamped);
counts:
    fmt_bytes(a, sizeof(a), (double)t->bytes);
    load_fmt_duration(b, sizeof(b), t->elapsed_s * 1e6);
    printf("  %llu requests in %s, %s read\n", (unsigned long long)t->round_trips, b, a);
    printf("  Status:");
    const char *sep = " ";
    for (int s = 1; s < LOAD_STATUS_MAX; s++) {
        if (t->status[s]) {
            printf("%s%d x %llu", sep, s, (unsigned long long)t->status[s]);
            sep = ", ";
        }
    }
    printf(" (2xx %llu, 3xx %llu, 4xx %llu, 5xx %llu)\n", (unsigned long long)status_class(t, 2),
           (unsigned long long)status_class(t, 3), (unsigned long long)status_class(t, 4),
           (unsigned long long)status_class(t, 5));
    uint64_t other = t->round_trips - status_class(t, 2) - status_class(t, 3);
    if (other)
        printf("  Non-2xx or 3xx responses: %llu\n", (unsigned long long)other);
    printf("  Errors: connect %llu, read %llu, write %llu, timeout %llu, parse %llu\n",
           (unsigned long long)t->errors[LOAD_ERR_CONNECT],
           (unsigned long long)t->errors[LOAD_ERR_READ],
           (unsigned long long)t->errors[LOAD_ERR_WRITE],
           (unsigned long long)t->errors[LOAD_ERR_TIMEOUT],
           (unsigned long long)t->errors[LOAD_ERR_PARSE]);
    printf("  Connections: %llu connects, %llu reconnects\n", (unsigned long long)t->connects,
           (unsigned long long)t->reconnects);
    if (t->connect_hist.total || t->tls_hist.total) {
        /* HTTP/3: the QUIC handshake is the connect (no row of its own). */
        printf("    %-14s %10s %10s %10s %10s %8s\n", "Times", "Avg", "p50", "p99", "Max", "Count");
        conn_time_row("Connect", &t->connect_hist);
        conn_time_row(o->h3 ? "QUIC handshake" : "TLS handshake", &t->tls_hist);
        conn_time_row("First byte", &t->first_byte_hist);
    }
    if (t->tls_info)
        printf("  TLS: %s\n", t->tls_info);
    if (o->h2)
        h2_text(t);
    if (o->h3) {
        printf("  QUIC packets: %llu sent, %llu received, %llu declared lost\n",
               (unsigned long long)t->quic_sent, (unsigned long long)t->quic_recv,
               (unsigned long long)t->quic_lost);
        printf("  HTTP/3 requests: %llu not processed by the server (retried); %llu GOAWAY "
               "received\n",
               (unsigned long long)t->h3_retried, (unsigned long long)t->h3_goaway);
    }
    if (t->signo)
        printf("  Stopped early by SIG%s\n", sigabbrev_np(t->signo) ? sigabbrev_np(t->signo) : "?");
    printf("Requests/sec: %10.2f\n", per_sec(t->round_trips, t->elapsed_s));
    fmt_bytes(a, sizeof(a), t->elapsed_s > 0.0 ? (double)t->bytes / t->elapsed_s : 0.0);
    printf("Transfer/sec: %10s\n", a);
}

static void json_latency(FILE *f, const char *key, const struct cli_hist *h)
{
    fprintf(f, ",\"%s\":{", key);
    for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
        fprintf(f, "\"%s\":%llu,", pct_keys[i],
                (unsigned long long)cli_hist_percentile(h, pcts[i]));
    fprintf(f, "\"max\":%llu,\"min\":%llu,\"mean\":%.2f,\"stdev\":%.2f,\"count\":%llu}",
            (unsigned long long)(h->total ? h->max : 0),
            (unsigned long long)(h->total ? h->min : 0), cli_hist_mean(h), cli_hist_stdev(h),
            (unsigned long long)h->total);
}

void load_report_http_json(FILE *f, const struct load_opts *o, const struct load_totals *t)
{
    fputs("{\"mode\":\"http\",\"url\":", f);
    json_str(f, o->url);
    fputs(",\"target\":", f);
    json_str(f, o->url);
    fputs(",\"driver\":", f);
    json_str(f, t->driver);
    fprintf(f, ",\"protocol\":\"%s\"", o->h3 ? "h3" : o->h2 ? (o->tls ? "h2" : "h2c") : "http/1.1");
    fprintf(f, ",\"workers\":%u,\"threads\":%u,\"connections\":%llu,\"pipeline\":%u", t->workers,
            t->workers, (unsigned long long)o->conns, o->pipeline);
    fprintf(f, ",\"max_concurrent_streams\":%u", o->h3 || o->h2 ? o->streams : 1u);
    fprintf(f, ",\"rate\":%llu", (unsigned long long)o->rate);
    fprintf(f, ",\"duration_s\":%.6f,\"warm_up_s\":%.6f,\"timeout_s\":%.6f", t->elapsed_s,
            (double)o->warmup_ns / 1e9, (double)o->timeout_ns / 1e9);
    fprintf(f, ",\"requests\":%llu,\"round_trips\":%llu,\"rps\":%.2f",
            (unsigned long long)t->round_trips, (unsigned long long)t->round_trips,
            per_sec(t->round_trips, t->elapsed_s));
    fprintf(f, ",\"bytes\":%llu,\"bytes_received\":%llu,\"bytes_per_sec\":%.2f",
            (unsigned long long)t->bytes, (unsigned long long)t->bytes,
            t->elapsed_s > 0.0 ? (double)t->bytes / t->elapsed_s : 0.0);
    json_latency(f, "latency_us", &t->hist);
    if (o->rate)
        json_latency(f, "latency_uncorrected_us", &t->hist_unc);
    fprintf(f, ",\"thread_rps\":{\"mean\":%.2f,\"stdev\":%.2f,\"max\":%.2f}",
            series_mean(&t->thread_rps), series_stdev(&t->thread_rps), t->thread_rps.max);
    fputs(",\"status\":{", f);
    const char *sep = "";
    for (int s = 1; s < LOAD_STATUS_MAX; s++) {
        if (t->status[s]) {
            fprintf(f, "%s\"%d\":%llu", sep, s, (unsigned long long)t->status[s]);
            sep = ",";
        }
    }
    fprintf(f, "},\"status_classes\":{\"2xx\":%llu,\"3xx\":%llu,\"4xx\":%llu,\"5xx\":%llu}",
            (unsigned long long)status_class(t, 2), (unsigned long long)status_class(t, 3),
            (unsigned long long)status_class(t, 4), (unsigned long long)status_class(t, 5));
    fprintf(f, ",\"errors\":%llu", (unsigned long long)t->error_sum);
    for (int k = 0; k < LOAD_ERR_KINDS; k++)
        if (k != LOAD_ERR_MISMATCH)
            fprintf(f, ",\"%s_errors\":%llu", kind_names[k], (unsigned long long)t->errors[k]);
    fputs(",\"errors_by_kind\":{", f);
    for (int k = 0, n = 0; k < LOAD_ERR_KINDS; k++)
        if (k != LOAD_ERR_MISMATCH)
            fprintf(f, "%s\"%s\":%llu", n++ ? "," : "", kind_names[k],
                    (unsigned long long)t->errors[k]);
    fputc('}', f);
    fprintf(f,
            ",\"connects\":%llu,\"reconnects\":%llu,\"connections_failed\":%llu,"
            "\"connections_gave_up\":%llu",
            (unsigned long long)t->connects, (unsigned long long)t->reconnects,
            (unsigned long long)t->never_connected, (unsigned long long)t->gave_up);
    json_latency(f, "connect_us", &t->connect_hist);
    json_latency(f, "tls_us", &t->tls_hist);
    json_latency(f, "first_byte_us", &t->first_byte_hist);
    if (t->tls_info) {
        fputs(",\"tls\":", f);
        json_str(f, t->tls_info);
    }
    if (o->h2)
        fprintf(f,
                ",\"h2\":{\"header_bytes\":%llu,\"header_bytes_decoded\":%llu,"
                "\"header_space_savings\":%.4f,\"request_header_bytes\":%llu,"
                "\"request_header_bytes_decoded\":%llu,\"request_header_space_savings\":%.4f,"
                "\"data_bytes\":%llu,\"streams_refused\":%llu,\"streams_reset\":%llu,"
                "\"goaway_received\":%llu}",
                (unsigned long long)t->h2_head_in, (unsigned long long)t->h2_head_in_decoded,
                savings(t->h2_head_in, t->h2_head_in_decoded), (unsigned long long)t->h2_head_out,
                (unsigned long long)t->h2_head_out_decoded,
                savings(t->h2_head_out, t->h2_head_out_decoded), (unsigned long long)t->h2_data_in,
                (unsigned long long)t->h2_refused, (unsigned long long)t->h2_reset,
                (unsigned long long)t->h2_goaway);
    if (o->h3)
        fprintf(f,
                ",\"quic\":{\"packets_sent\":%llu,\"packets_received\":%llu,\"packets_lost\":%llu},"
                "\"h3\":{\"requests_retried\":%llu,\"goaway_received\":%llu}",
                (unsigned long long)t->quic_sent, (unsigned long long)t->quic_recv,
                (unsigned long long)t->quic_lost, (unsigned long long)t->h3_retried,
                (unsigned long long)t->h3_goaway);
    fprintf(f, ",\"interrupted\":%s", t->signo ? "true" : "false");
    fputs("}\n", f);
}
