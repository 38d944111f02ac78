/* SPDX-License-Identifier: MIT */
/* WebSockets over HTTP/2 (RFC 8441): an extended CONNECT with ":protocol websocket" answered
 * 200 (§5: no Sec-WebSocket-Accept), and the stream made a vega_stream for the WebSocket
 * driver (ws_session.c) -- its DATA both ways, flow-controlled per stream, the peer's
 * END_STREAM as end of stream (a TCP FIN's equivalent, §5.2 of RFC 8441 maps a FIN to it),
 * a reset as -ECONNRESET -- so that one handler serves HTTP/1.1 and HTTP/2 WebSockets. */
#include <string.h>

#include "h2_srv_int.h"
#include "http1_int.h"

static bool field_is(const vega_http_exchange *x, const char *name, const char *value)
{
    const vega_http_field *f = vega_http_fields_get(x->req.fields, name, strlen(name));
    size_t n = strlen(value);
    return f && f->value.len == n && memcmp(f->value.ptr, value, n) == 0;
}

bool vega__h2s_is_websocket(const vega_http_exchange *x)
{
    const vega_http_request *q = &x->req;
    /* RFC 8441 §4: ":method" CONNECT, ":protocol" websocket (the core checked that :scheme and
     * :path are there); §5: "The ... Sec-WebSocket-Version ... header fields are used as in
     * [RFC6455]"; Sec-WebSocket-Key and Upgrade are not sent. */
    return q->version == 20 && q->method == VEGA_HTTP_METHOD_CONNECT && q->protocol.ptr &&
           vega__http1_ieq(q->protocol.ptr, q->protocol.len, "websocket") &&
           field_is(x, "sec-websocket-version", "13");
}

/* ---- the stream over an HTTP/2 stream -------------------------------------------------------- */

struct h2ws {
    struct h2s_req *r; /* borrowed: the handler frees the WebSocket before it returns */
    bool ended;        /* our END_STREAM went out */
};

static vega_ssize ws_read(void *user, void *buf, size_t len, vega_deadline dl)
{
    struct h2ws *w = user;
    /* no body timeout: an idle WebSocket may stay (the caller's deadline says how long) */
    return vega__h2s_read(w->r, buf, len, dl);
}

static vega_ssize ws_write(void *user, const void *buf, size_t len, size_t *written,
                           vega_deadline dl)
{
    struct h2ws *w = user;
    *written = 0;
    if (w->ended)
        return -EPIPE;
    int rc = vega__h2s_send(w->r, buf, len, false, dl);
    if (rc < 0)
        return rc;
    *written = len;
    w->r->x.body_bytes += len;
    return (vega_ssize)len;
}

/* Our side ends: END_STREAM (an empty DATA frame). */
static int end_ours(struct h2ws *w, vega_deadline dl)
{
    if (w->ended)
        return 0;
    w->ended = true;
    return vega__h2s_send(w->r, NULL, 0, true, dl);
}

static int ws_shutdown(void *user, int how, vega_deadline dl)
{
    struct h2ws *w = user;
    if (how == SHUT_RD)
        return 0; /* what still comes is queued within the window, then dropped at the end */
    return end_ours(w, dl);
}

static int ws_close(void *user, vega_deadline dl)
{
    struct h2ws *w = user;
    const vega_mem *m = w->r->h->mem;
    int rc = end_ours(w, dl);
    vega__mem_free(m, w);
    return rc;
}

static const vega_stream_ops h2ws_ops = {
    .name = "h2-websocket",
    .read = ws_read,
    .write = ws_write,
    .shutdown = ws_shutdown,
    .close = ws_close,
};

int vega__h2s_accept_websocket(vega_http_exchange *x, const vega_websocket_opts *o,
                               const char *proto, size_t plen, const char *ext,
                               const vega_ws_deflate_params *params, vega_websocket **out,
                               vega_deadline dl)
{
    (void)dl; /* nothing waits: the head is queued, the connection task writes it */
    struct h2s_req *r = x->impl;
    struct h2s_conn *h = r->h;
    vega_http_field f[2];
    size_t n = 0;
    if (plen)
        f[n++] = (vega_http_field){{"sec-websocket-protocol", 22}, {proto, plen}};
    if (ext[0])
        f[n++] = (vega_http_field){{"sec-websocket-extensions", 24}, {ext, strlen(ext)}};
    struct h2ws *w = vega__mem_calloc(h->mem, 1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->r = r;
    vega_stream *s;
    int rc = vega_stream_new(&s, &h2ws_ops, w);
    if (rc < 0) {
        vega__mem_free(h->mem, w);
        return rc;
    }
    /* RFC 8441 §5: "a 2xx status code"; no content-length (RFC 9113 §8.5: a 2xx answer to
     * CONNECT has no content) */
    rc = vega_http_response_start(x, 200, f, n, VEGA_HTTP_LENGTH_UNKNOWN);
    if (rc == 0)
        vega_notify_one(&h->wake); /* the head goes out now, not with the first data */
    if (rc == 0)
        rc = vega_websocket_new(out, s, true, VEGA_WS_SERVER, params, o, NULL, 0);
    if (rc < 0) {
        w->ended = true; /* the exchange ends the stream (or resets it) when the handler returns */
        (void)vega_stream_close(s, 0);
        return rc;
    }
    return 0;
}
