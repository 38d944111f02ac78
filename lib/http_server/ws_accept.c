/* SPDX-License-Identifier: MIT */
/* The server's side of the WebSocket opening handshake (RFC 6455 §4.2): checks the request,
 * negotiates the subprotocol and permessage-deflate (RFC 7692) alike for both versions, and
 * over HTTP/1.1 answers 101 with Sec-WebSocket-Accept and hands the connection to the driver
 * (ws_session.c; the connection closes when the handler returns); over HTTP/2 (RFC 8441) and
 * HTTP/3 (RFC 9220) the stream is handed over instead (h2_ws.c, h3_ws.c). */
#include <stdio.h>
#include <string.h>

#include "h2_srv_int.h"
#include "h3_int.h"
#include "server_int.h"
#include "ws_drv.h"

static bool field(const vega_http_exchange *x, const char *name, const char **v, size_t *len)
{
    const vega_http_field *f = vega_http_fields_get(x->req.fields, name, strlen(name));
    if (!f)
        return false;
    *v = f->value.ptr;
    *len = f->value.len;
    return true;
}

bool vega_http_exchange_is_websocket(const vega_http_exchange *x)
{
    const char *v;
    size_t n;
    char acc[VEGA_WS_ACCEPT_LEN + 1];
    if (x && x->ops == &vega__h2s_xops)
        return vega__h2s_is_websocket(x);
    if (x && x->ops == &vega__h3s_xops)
        return vega__h3s_is_websocket(x);
    /* §4.2.1: a GET of HTTP/1.1 or higher, "Upgrade" with "websocket", "Connection" with
     * "Upgrade", "Sec-WebSocket-Key" of 16 bytes base64, "Sec-WebSocket-Version" 13. */
    return x && !x->ops && x->req.version == 11 && x->req.method == VEGA_HTTP_METHOD_GET &&
           field(x, "upgrade", &v, &n) && vega_ws_header_has_token(v, n, "websocket") &&
           field(x, "connection", &v, &n) && vega_ws_header_has_token(v, n, "upgrade") &&
           field(x, "sec-websocket-version", &v, &n) && n == 2 && memcmp(v, "13", 2) == 0 &&
           field(x, "sec-websocket-key", &v, &n) && vega_ws_handshake_accept(v, n, acc) == 0;
}

/* The 101 response's head into buf. Returns its length, or VEGA_ERR_NOBUF. */
static int head_101(const char *accept, const char *proto, size_t plen, const char *ext, char *buf,
                    size_t cap)
{
    int n = snprintf(buf, cap,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%.*s%s%s%s%s\r\n",
                     accept, plen ? "Sec-WebSocket-Protocol: " : "", (int)plen, proto,
                     plen ? "\r\n" : "", ext[0] ? "Sec-WebSocket-Extensions: " : "", ext,
                     ext[0] ? "\r\n" : "");
    return n < 0 || (size_t)n >= cap ? VEGA_ERR_NOBUF : n;
}

/* The selected subprotocol's name (a token of the client's list equal to ours). */
static void select_proto(const vega_http_exchange *x, const vega_websocket_opts *o, const char **p,
                         size_t *plen)
{
    *p = "";
    *plen = 0;
    const char *v;
    size_t n;
    if (!o->nsubprotocols || !field(x, "sec-websocket-protocol", &v, &n))
        return;
    int i = vega_ws_select_subprotocol(v, n, o->subprotocols, o->nsubprotocols);
    if (i >= 0 && strlen(o->subprotocols[i]) < 64) {
        *p = o->subprotocols[i];
        *plen = strlen(*p);
    }
}

int vega_http_exchange_accept_websocket_versioned(vega_http_exchange *x,
                                                  const vega_websocket_opts *o,
                                                  vega_websocket **out, vega_deadline dl,
                                                  int opts_version)
{
    if (opts_version != VEGA_WEBSOCKET_OPTS_VERSION || !x || !out)
        return -EINVAL;
    bool h2 = x->ops == &vega__h2s_xops, h3 = x->ops == &vega__h3s_xops;
    if (x->ops && !h2 && !h3)
        return -EINVAL; /* an exchange of no kind this code knows */
    if (x->started)
        return VEGA_ERR_CLOSED;
    if (!vega_http_exchange_is_websocket(x))
        return -EINVAL;
    vega_websocket_opts d;
    vega_websocket_opts_init(&d);
    if (!o)
        o = &d;
    char ext[160] = "";
    vega_ws_deflate_params params = {0};
    const char *offers;
    size_t olen;
    if (o->deflate.enabled && field(x, "sec-websocket-extensions", &offers, &olen)) {
        vega_ssize e =
            vega_ws_deflate_accept_offer(offers, olen, &o->deflate, &params, ext, sizeof ext);
        if (e < 0)
            return (int)e;
    }
    const char *proto;
    size_t plen;
    select_proto(x, o, &proto, &plen);
    if (h2 || h3) {
        int rc = h2 ? vega__h2s_accept_websocket(x, o, proto, plen, ext, &params, out, dl)
                    : vega__h3s_accept_websocket(x, o, proto, plen, ext, &params, out, dl);
        if (rc == 0)
            vega__websocket_set_subprotocol(*out, proto, plen);
        return rc;
    }
    const char *key = NULL;
    size_t klen = 0;
    (void)field(x, "sec-websocket-key", &key, &klen);
    char accept[VEGA_WS_ACCEPT_LEN + 1];
    int rc = vega_ws_handshake_accept(key, klen, accept);
    if (rc < 0)
        return rc;
    char head[512];
    int n = head_101(accept, proto, plen, ext, head, sizeof head);
    if (n < 0)
        return n;
    struct srv_conn *c = x->c;
    struct srv_active *a = c->a;
    /* From here the connection is no longer HTTP: whatever happens, it closes after. */
    x->started = true;
    x->finished = true;
    x->status = 101;
    x->want_close = true;
    x->keep_alive = false;
    x->body.done = true;
    rc = vega__srv_flush(c, dl);
    if (rc == 0) {
        vega_ssize w = vega_stream_write(c->stream, head, (size_t)n, NULL, dl);
        rc = w < 0 ? (int)w : 0;
    }
    if (rc < 0) {
        x->broken = true;
        return rc;
    }
    /* Bytes the client sent right behind its handshake are already in our buffer. */
    const uint8_t *pre = a->in + a->in_pos;
    size_t pre_len = a->in_end - a->in_pos;
    a->in_pos = a->in_end;
    rc = vega_websocket_new(out, c->stream, false, VEGA_WS_SERVER, &params, o, pre, pre_len);
    if (rc < 0) {
        x->broken = true;
        return rc;
    }
    vega__websocket_set_subprotocol(*out, proto, plen);
    return 0;
}
