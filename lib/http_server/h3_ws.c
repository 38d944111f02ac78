/* SPDX-License-Identifier: MIT */
/* WebSockets over HTTP/3 (RFC 9220): an extended CONNECT with ":protocol websocket" answered
 * 200 (RFC 8441 §5 as RFC 9220 §3 applies it: no Sec-WebSocket-Accept), and the request stream
 * made a vega_stream for the WebSocket driver (ws_session.c) -- the payload of its DATA frames
 * both ways under QUIC's per-stream flow control, the stream's FIN as end of stream (RFC 9220
 * §3 maps a TCP FIN to it), RESET_STREAM or STOP_SENDING as -ECONNRESET -- so that one handler
 * serves WebSockets over HTTP/1.1, HTTP/2 and HTTP/3. */
#include <string.h>

#include "h3_int.h"
#include "http1_int.h"

static bool field_is(const vega_http_exchange *x, const char *name, const char *value)
{
    const vega_http_field *f = vega_http_fields_get(x->req.fields, name, strlen(name));
    size_t n = strlen(value);
    return f && f->value.len == n && memcmp(f->value.ptr, value, n) == 0;
}

bool vega__h3s_is_websocket(const vega_http_exchange *x)
{
    const vega_http_request *q = &x->req;
    /* RFC 9220 §3 (RFC 8441 §4, §5): ":method" CONNECT, ":protocol" websocket (the core checked
     * that :scheme and :path are there), Sec-WebSocket-Version 13; no Key, no Upgrade */
    return q->version == 30 && q->method == VEGA_HTTP_METHOD_CONNECT && q->protocol.ptr &&
           vega__http1_ieq(q->protocol.ptr, q->protocol.len, "websocket") &&
           field_is(x, "sec-websocket-version", "13");
}

/* ---- the stream over an HTTP/3 request stream ------------------------------------------------ */

struct h3ws {
    struct h3s_req *r; /* borrowed: the handler frees the WebSocket before it returns */
    const vega_mem *mem;
    bool ended; /* our FIN went out (or could not) */
};

static vega_ssize ws_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct h3ws *w = user;
    /* no body timeout: an idle WebSocket may stay (the caller's deadline says how long) */
    return vega__h3s_read(w->r, buf, len, dl);
}

static vega_ssize ws_write(void *user, const void *buf, size_t len, size_t *written,
                           vega_deadline dl)
{
    struct h3ws *w = user;
    vega_http_exchange *x = &w->r->x;
    *written = 0;
    if (w->ended)
        return -EPIPE;
    /* a DATA frame; the exchange holds small ones back for the next write: not here, a
     * WebSocket frame goes out when written */
    vega_ssize k = vega_http_response_write(x, buf, len, dl);
    if (k < 0)
        return k;
    int rc = vega__h3s_flush(w->r, dl);
    if (rc < 0)
        return rc;
    *written = len;
    return (vega_ssize)len;
}

/* Our side ends: the stream's FIN. */
static int end_ours(struct h3ws *w, vega_deadline dl)
{
    if (w->ended)
        return 0;
    w->ended = true;
    return vega_http_response_finish(&w->r->x, NULL, 0, dl);
}

static int ws_shutdown(void *user, int how, vega_deadline dl)
{
    struct h3ws *w = user;
    if (how == SHUT_RD)
        return 0; /* what still comes waits within the stream's window, then STOP_SENDING */
    return end_ours(w, dl);
}

static int ws_close(void *user, vega_deadline dl)
{
    struct h3ws *w = user;
    int rc = end_ours(w, dl);
    vega__mem_free(w->mem, w);
    return rc;
}

static const vega_stream_ops h3ws_ops = {
    .name = "h3-websocket",
    .read = ws_read,
    .write = ws_write,
    .shutdown = ws_shutdown,
    .close = ws_close,
};

int vega__h3s_accept_websocket(vega_http_exchange *x, const vega_websocket_opts *o,
                               const char *proto, size_t plen, const char *ext,
                               const vega_ws_deflate_params *params, vega_websocket **out,
                               vega_deadline dl)
{
    struct h3s_req *r = x->impl;
    const vega_mem *m = r->hc->l->srv->o.mem;
    vega_http_field f[2];
    size_t n = 0;
    if (plen)
        f[n++] = (vega_http_field){{"sec-websocket-protocol", 22}, {proto, plen}};
    if (ext[0])
        f[n++] = (vega_http_field){{"sec-websocket-extensions", 24}, {ext, strlen(ext)}};
    struct h3ws *w = vega__mem_calloc(m, 1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->r = r;
    w->mem = m;
    vega_stream *s;
    int rc = vega_stream_new(&s, &h3ws_ops, w);
    if (rc < 0) {
        vega__mem_free(m, w);
        return rc;
    }
    /* a 2xx without content-length (RFC 9114 §4.4: a 2xx answer to CONNECT has no content);
     * the head goes out now, not with the first message: the client waits for it */
    rc = vega_http_response_start(x, 200, f, n, VEGA_HTTP_LENGTH_UNKNOWN);
    if (rc == 0)
        rc = vega__h3s_flush(r, dl);
    if (rc == 0)
        rc = vega_websocket_new(out, s, true, VEGA_WS_SERVER, params, o, NULL, 0);
    if (rc < 0) {
        w->ended = true; /* the exchange ends the stream (or resets it) when the handler returns */
        (void)vega_stream_close(s, 0);
        return rc;
    }
    return 0;
}
