/* SPDX-License-Identifier: MIT */
/* vega-serve: the access log, one line per exchange in the combined log format (Apache's and
 * nginx's default) or as JSON. Each line is one write(2) on an O_APPEND descriptor, so lines
 * from different workers never interleave; the write is not deferred (a slow log file slows
 * the worker that writes it: a known limit of this first version). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* Writes s escaped for a quoted log field: '"', '\\' and bytes outside printable ASCII as \xHH
 * (nginx's escaping), so a request cannot forge a log line. */
static void esc(struct sbuf *b, const char *s, size_t n, bool json)
{
    if (json) {
        sbuf_json(b, s, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\')
            sbuf_addf(b, "\\x%02X", c);
        else
            sbuf_add(b, &s[i], 1);
    }
}

static void peer_ip(const vega_addr *a, char *out, size_t cap)
{
    char buf[VEGA_ADDR_STRLEN];
    if (!a || vega_addr_format(a, buf, sizeof(buf)) < 0) {
        snprintf(out, cap, "-");
        return;
    }
    char *colon = strrchr(buf, ':');
    if (colon && colon != buf && (buf[0] != '[' || colon[-1] == ']'))
        *colon = '\0';
    char *h = buf;
    if (h[0] == '[') {
        h++;
        size_t l = strlen(h);
        if (l && h[l - 1] == ']')
            h[l - 1] = '\0';
    }
    snprintf(out, cap, "%s", h);
}

static void field_or_dash(struct sbuf *b, const vega_http_request *req, const char *name, bool json)
{
    size_t len;
    const char *v = serve_req_field(req, name, &len);
    if (v)
        esc(b, v, len, json);
    else if (!json)
        sbuf_adds(b, "-");
}

void serve_on_log(void *user, const vega_http_request *req, const vega_http_log_entry *e)
{
    (void)user;
    if (serve_o.log_fd < 0)
        return;
    bool json = serve_o.log_format == SERVE_LOG_JSON;
    char ip[VEGA_ADDR_STRLEN], when[64];
    peer_ip(req->peer, ip, sizeof(ip));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), json ? "%Y-%m-%dT%H:%M:%SZ" : "%d/%b/%Y:%H:%M:%S +0000", &tm);
    const char *proto = req->version == 10   ? "HTTP/1.0"
                        : req->version == 30 ? "HTTP/3"
                        : req->version == 20 ? "HTTP/2.0"
                                             : "HTTP/1.1";

    /* The line lives on the stack: max is below cap, so sbuf never reallocs it. */
    char stack[2048];
    struct sbuf b = {stack, 0, sizeof(stack), sizeof(stack) - 1, false};
    if (json) {
        sbuf_addf(&b, "{\"time\":\"%s\",\"remote\":\"%s\",\"method\":\"", when, ip);
        esc(&b, req->method_name.ptr, req->method_name.len, true);
        sbuf_adds(&b, "\",\"target\":\"");
        esc(&b, req->target.ptr, req->target.len, true);
        sbuf_addf(&b,
                  "\",\"protocol\":\"%s\",\"status\":%d,\"bytes\":%" PRIu64
                  ",\"duration_ms\":%.3f,\"referer\":\"",
                  proto, e->status, e->body_bytes, (double)e->duration_ns / 1e6);
        field_or_dash(&b, req, "Referer", true);
        sbuf_adds(&b, "\",\"user_agent\":\"");
        field_or_dash(&b, req, "User-Agent", true);
        sbuf_adds(&b, "\"}");
    } else {
        sbuf_addf(&b, "%s - - [%s] \"", ip, when);
        esc(&b, req->method_name.ptr, req->method_name.len, false);
        sbuf_adds(&b, " ");
        esc(&b, req->target.ptr, req->target.len, false);
        sbuf_addf(&b, " %s\" %d %" PRIu64 " \"", proto, e->status, e->body_bytes);
        field_or_dash(&b, req, "Referer", false);
        sbuf_adds(&b, "\" \"");
        field_or_dash(&b, req, "User-Agent", false);
        sbuf_adds(&b, "\"");
    }
    if (b.failed) {
        /* Too long for one line (a huge target or User-Agent): the line without them. */
        b.len = 0;
        b.failed = false;
        if (json)
            sbuf_addf(&b,
                      "{\"time\":\"%s\",\"remote\":\"%s\",\"protocol\":\"%s\",\"status\":%d,"
                      "\"bytes\":%" PRIu64 ",\"truncated\":true}",
                      when, ip, proto, e->status, e->body_bytes);
        else
            sbuf_addf(&b, "%s - - [%s] \"-\" %d %" PRIu64 " \"-\" \"-\"", ip, when, e->status,
                      e->body_bytes);
    }
    b.p[b.len++] = '\n';
    ssize_t w = write(serve_o.log_fd, b.p, b.len);
    (void)w;
}
