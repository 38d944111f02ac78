/* SPDX-License-Identifier: MIT */
/* The client's side of the WebSocket opening handshake (RFC 6455 §4.1): an HTTP/1.1 GET with
 * Upgrade on a fresh connection of the HTTP client (so DNS, --resolve, the connect hook, TLS and
 * proxies are the client's own), the 101 checked field by field, then the connection handed to
 * the same driver the server uses (lib/http_server/ws_session.c) in the client role. Or over
 * HTTP/2 (RFC 8441): an extended CONNECT on the origin's HTTP/2 connection, a 2xx, and that
 * stream (h2_tunnel.c) handed to the driver instead; when the server does not do it, the
 * HTTP/1.1 Upgrade if the caller allows (as browsers fall back). */
#include <stddef.h>
#include <string.h>

#include <vega/crypto.h>
#include <vega/websocket.h>

#include "client_int.h"

/* ws_session.c (lib/http_server/ws_drv.h): records the selected subprotocol. Declared here
 * because layers see only their own private headers; the symbol is the library's. */
void vega__websocket_set_subprotocol(vega_websocket *ws, const char *p, size_t len);

/* Longest URL accepted, and the most bytes of the joined subprotocol offer. */
#define WS_MAX_URL    8192
#define WS_MAX_PROTOS 1024
/* The longest response field value the checks read (the combined Extensions, say). */
#define WS_MAX_VALUE 1024

/* Layout 1 ends where version 2's version starts. */
#define WS_CONNECT_OPTS_V1_SIZE offsetof(vega_websocket_connect_opts, version)

static size_t opts_size(int opts_version)
{
    return opts_version == 1 ? WS_CONNECT_OPTS_V1_SIZE : sizeof(vega_websocket_connect_opts);
}

void vega_websocket_connect_opts_init_versioned(vega_websocket_connect_opts *o, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_WEBSOCKET_CONNECT_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_websocket_connect_opts_init: options of another libvega (version %d)",
                    opts_version);
    memset(o, 0, opts_size(opts_version));
    vega_websocket_opts_init(&o->ws);
}

static bool name_is(const vega_http_field *f, const char *lname)
{
    size_t n = strlen(lname);
    return f->name.len == n && strncasecmp(f->name.ptr, lname, n) == 0;
}

/* The handshake's own fields are ours to write (§4.1). */
static bool reserved_field(const vega_http_field *f)
{
    static const char *const names[] = {"upgrade",
                                        "connection",
                                        "sec-websocket-key",
                                        "sec-websocket-version",
                                        "sec-websocket-extensions",
                                        "sec-websocket-protocol"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++)
        if (name_is(f, names[i]))
            return true;
    return false;
}

/* "http" + what follows "ws", "https" + what follows "wss" (http:// and https:// as they are)
 * into a new string from mem. */
static int http_url(const vega_mem *mem, const char *url, char **out)
{
    size_t n = strlen(url), skip = 0;
    const char *scheme = "";
    if (n > WS_MAX_URL)
        return VEGA_ERR_HTTP_URL;
    if (strncasecmp(url, "ws://", 5) == 0) {
        scheme = "http";
        skip = 2;
    } else if (strncasecmp(url, "wss://", 6) == 0) {
        scheme = "https";
        skip = 3;
    } else if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
        return strstr(url, "://") ? VEGA_ERR_HTTP_SCHEME : VEGA_ERR_HTTP_URL;
    }
    size_t sl = strlen(scheme);
    char *u = vega__mem_malloc(mem, sl + (n - skip) + 1);
    if (!u)
        return -ENOMEM;
    memcpy(u, scheme, sl);
    memcpy(u + sl, url + skip, n - skip + 1);
    *out = u;
    return 0;
}

/* The offered subprotocols joined with ", " into buf (cap WS_MAX_PROTOS). */
static int join_protos(const vega_websocket_opts *o, char *buf, size_t *len)
{
    size_t used = 0;
    for (size_t i = 0; i < o->nsubprotocols; i++) {
        const char *p = o->subprotocols[i];
        size_t n = p ? strlen(p) : 0;
        if (!n || !vega_http_token_is_valid(p, n) || n >= 64)
            return -EINVAL;
        size_t need = n + (i ? 2 : 0);
        if (!vega__fits(used, need, WS_MAX_PROTOS))
            return -EINVAL;
        if (i) {
            memcpy(buf + used, ", ", 2);
            used += 2;
        }
        memcpy(buf + used, p, n);
        used += n;
    }
    *len = used;
    return 0;
}

/* The value of the response's fields named name, joined (RFC 9110 §5.3), into buf: its length,
 * -ENOENT when there is none, VEGA_ERR_WS_HANDSHAKE when it is longer than we read. */
static vega_ssize resp_field(const vega_http_client_info *info, const char *name, char *buf)
{
    vega_ssize n =
        vega_http_fields_get_combined(info->fields, name, strlen(name), buf, WS_MAX_VALUE);
    if (n == VEGA_ERR_NOBUF)
        return VEGA_ERR_WS_HANDSHAKE;
    return n;
}

/* §4.1 items 5 and 6, alike over HTTP/1.1 and HTTP/2 (RFC 8441 §5): the extension and the
 * subprotocol the server chose. Fills *params and the selected subprotocol. */
static int check_negotiated(const vega_http_client_info *info, const vega_websocket_opts *o,
                            vega_ws_deflate_params *params, char *proto, size_t *proto_len)
{
    char v[WS_MAX_VALUE];
    /* Extensions: only what was offered (RFC 7692 §7.1 checks the parameters). */
    memset(params, 0, sizeof *params);
    vega_ssize n = resp_field(info, "sec-websocket-extensions", v);
    if (n == VEGA_ERR_WS_HANDSHAKE)
        return (int)n;
    if (n > 0 && vega_ws_deflate_check_response(v, (size_t)n, &o->deflate, params) < 0)
        return VEGA_ERR_WS_HANDSHAKE;
    /* Subprotocol: none, or exactly one of those offered. */
    *proto_len = 0;
    n = resp_field(info, "sec-websocket-protocol", v);
    if (n == VEGA_ERR_WS_HANDSHAKE)
        return (int)n;
    if (n >= 0) {
        bool ok = false;
        for (size_t i = 0; i < o->nsubprotocols && !ok; i++)
            ok = strlen(o->subprotocols[i]) == (size_t)n &&
                 memcmp(o->subprotocols[i], v, (size_t)n) == 0;
        if (!ok)
            return VEGA_ERR_WS_HANDSHAKE;
        memcpy(proto, v, (size_t)n);
        *proto_len = (size_t)n;
    }
    return 0;
}

/* §4.1: the client's checks of the server's 101 ("If the response lacks ... the client MUST
 * _Fail the WebSocket Connection_"). Fills *params and the selected subprotocol. */
static int check_101(const vega_http_client_info *info, const char *accept,
                     const vega_websocket_opts *o, vega_ws_deflate_params *params, char *proto,
                     size_t *proto_len)
{
    char v[WS_MAX_VALUE];
    vega_ssize n = resp_field(info, "upgrade", v);
    if (n < 0 || !vega_ws_header_has_token(v, (size_t)n, "websocket"))
        return VEGA_ERR_WS_HANDSHAKE;
    n = resp_field(info, "connection", v);
    if (n < 0 || !vega_ws_header_has_token(v, (size_t)n, "upgrade"))
        return VEGA_ERR_WS_HANDSHAKE;
    /* Exactly one Sec-WebSocket-Accept, equal to ours. */
    const vega_http_field *f = vega_http_fields_get(info->fields, "sec-websocket-accept", 20);
    if (!f ||
        vega_http_fields_find(info->fields, "sec-websocket-accept", 20,
                              (size_t)(f - info->fields->items) + 1) >= 0 ||
        f->value.len != VEGA_WS_ACCEPT_LEN || memcmp(f->value.ptr, accept, VEGA_WS_ACCEPT_LEN))
        return VEGA_ERR_WS_HANDSHAKE;
    return check_negotiated(info, o, params, proto, proto_len);
}

/* RFC 8441 §5 (RFC 9220 §3 for HTTP/3): the answer on an HTTP/2 or HTTP/3 stream -- any 2xx
 * accepts (no Accept key) -- and the stream becomes *out's transport. r: taken. */
static int over_h2(vega_http_client_response *r, const vega_websocket_connect_opts *o,
                   vega_websocket **out)
{
    vega_ws_deflate_params params;
    char proto[64];
    size_t proto_len = 0;
    int rc = check_negotiated(&r->info, &o->ws, &params, proto, &proto_len);
    if (rc < 0) {
        vega_http_client_response_free(r); /* the stream is reset (CANCEL) */
        return rc;
    }
    vega_stream *s;
    if ((rc = r->h3 ? vega__hc_h3_tunnel_new(r, &s) : vega__hc_h2_tunnel_new(r, &s)) < 0) {
        vega_http_client_response_free(r);
        return rc;
    }
    rc = vega_websocket_new(out, s, true, VEGA_WS_CLIENT, &params, &o->ws, NULL, 0);
    if (rc < 0) {
        vega_stream_close(s, 0); /* frees r */
        return rc;
    }
    vega__websocket_set_subprotocol(*out, proto, proto_len);
    return 0;
}

/* One handshake: over HTTP/2 (h2), HTTP/3 (h3) or an HTTP/1.1 Upgrade. The options are
 * checked. */
static int attempt(vega_http_client *c, const char *url, const vega_websocket_connect_opts *o,
                   bool h2, bool h3, vega_websocket **out, vega_deadline dl)
{
    char protos[WS_MAX_PROTOS];
    size_t plen = 0;
    int rc = join_protos(&o->ws, protos, &plen);
    if (rc < 0)
        return rc;
    char ext[160] = "";
    vega_ssize elen = vega_ws_deflate_offer(&o->ws.deflate, ext, sizeof ext);
    if (elen < 0)
        return elen == VEGA_ERR_NOBUF ? VEGA_ERR_INTERNAL : (int)elen;
    /* §4.1: "a randomly selected 16-byte value", §10.3 from a strong source. */
    uint8_t nonce[16];
    rc = vega_crypto_random(nonce, sizeof nonce);
    if (rc < 0)
        return rc;
    char key[VEGA_WS_KEY_LEN + 1], accept[VEGA_WS_ACCEPT_LEN + 1];
    vega_ws_handshake_key(nonce, key);
    rc = vega_ws_handshake_accept(key, VEGA_WS_KEY_LEN, accept);
    if (rc < 0)
        return rc;

    const vega_mem *mem = c->o.mem;
    char *hurl = NULL;
    rc = http_url(mem, url, &hurl);
    if (rc < 0)
        return rc;
    size_t nf = 0;
    vega_http_field *f = vega__mem_calloc(mem, o->nfields + 6, sizeof *f);
    if (!f) {
        vega__mem_free(mem, hurl);
        return -ENOMEM;
    }
    for (size_t i = 0; i < o->nfields; i++)
        f[nf++] = o->fields[i];
#define ADD(n, v, vl) (f[nf++] = (vega_http_field){{(n), strlen(n)}, {(v), (vl)}})
    if (!h2 && !h3) {
        /* RFC 8441 §5, RFC 9220 §3: over HTTP/2 and HTTP/3 the :protocol says it, and there is
         * no key */
        ADD("Upgrade", "websocket", 9);
        ADD("Connection", "Upgrade", 7);
        ADD("Sec-WebSocket-Key", key, VEGA_WS_KEY_LEN);
    }
    ADD("Sec-WebSocket-Version", "13", 2);
    if (elen > 0)
        ADD("Sec-WebSocket-Extensions", ext, (size_t)elen);
    if (plen)
        ADD("Sec-WebSocket-Protocol", protos, plen);
#undef ADD
    vega_http_client_request req;
    vega_http_client_request_init(&req);
    req.method = "GET";
    req.url = hurl;
    req.fields = f;
    req.nfields = nf;
    /* HTTP/2: ALPN h2 on https, prior knowledge on http (no h2c Upgrade for a CONNECT); the
     * origin's pooled connection is shared */
    req.version = h3 ? VEGA_HTTP_CLIENT_V3 : h2 ? VEGA_HTTP_CLIENT_V2_PRIOR : VEGA_HTTP_CLIENT_V11;
    req.fresh_connection = !h2 && !h3;
    req.h3_fallback = h3 && o->h1_fallback;
    req.deadline = dl;
    req.trace = o->trace;
    req.trace_user = o->trace_user;
    vega_http_client_response *r = NULL;
    rc = vega__hc_send_ws(c, &req, &r);
    vega__mem_free(mem, f);
    vega__mem_free(mem, hurl);
    if (rc < 0)
        return rc;
    bool ok = r->h2 || r->h3 ? r->info.status >= 200 && r->info.status < 300 : r->upgraded;
    if (!ok) {
        /* §4.1: "If the status code received from the server is not 101, the client handles
         * the response per HTTP procedures" (here: the caller's, with the response); RFC 8441
         * §5: over HTTP/2 a 2xx is success. */
        if (o->refused)
            *o->refused = r;
        else
            vega_http_client_response_free(r);
        return VEGA_ERR_WS_STATUS;
    }
    if (r->h2 || r->h3)
        return over_h2(r, o, out);
    vega_ws_deflate_params params;
    char proto[64];
    size_t proto_len = 0;
    rc = check_101(&r->info, accept, &o->ws, &params, proto, &proto_len);
    if (rc < 0) {
        r->unusable = true; /* the connection closes with the response */
        vega_http_client_response_free(r);
        return rc;
    }
    /* The connection is the WebSocket's from here: bytes read past the 101 go to it first. */
    struct hc_conn *conn = r->conn;
    rc = vega_websocket_new(out, conn->s, true, VEGA_WS_CLIENT, &params, &o->ws, r->rbuf + r->rpos,
                            r->rend - r->rpos);
    if (rc < 0) {
        r->unusable = true;
        vega_http_client_response_free(r);
        return rc;
    }
    r->conn = NULL;
    vega__mem_free(conn->mem, conn); /* its stream now belongs to *out */
    vega__websocket_set_subprotocol(*out, proto, proto_len);
    vega_http_client_response_free(r);
    return 0;
}

int vega_websocket_connect_versioned(vega_http_client *c, const char *url,
                                     const vega_websocket_connect_opts *o, vega_websocket **out,
                                     vega_deadline dl, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_WEBSOCKET_CONNECT_OPTS_VERSION || !c || !url ||
        !out)
        return -EINVAL;
    *out = NULL;
    /* API rules: ABI: a caller of layout 1 gives its prefix; the rest keeps the defaults. */
    vega_websocket_connect_opts d;
    vega_websocket_connect_opts_init(&d);
    if (o)
        memcpy(&d, o, opts_size(opts_version));
    o = &d;
    if (o->refused)
        *o->refused = NULL;
    if (o->nfields && !o->fields)
        return -EINVAL;
    for (size_t i = 0; i < o->nfields; i++)
        if (reserved_field(&o->fields[i]))
            return -EINVAL;
    if (o->ws.nsubprotocols && !o->ws.subprotocols)
        return -EINVAL;
    bool h2 = o->version == VEGA_HTTP_CLIENT_V2 || o->version == VEGA_HTTP_CLIENT_V2_PRIOR;
    bool h3 = o->version == VEGA_HTTP_CLIENT_V3;
    if (!h2 && !h3 && o->version != 0 && o->version != VEGA_HTTP_CLIENT_V11)
        return -EINVAL;
    int rc = attempt(c, url, o, h2, h3, out, dl);
    /* the server does not do RFC 8441 (RFC 9220): the HTTP/1.1 Upgrade on a connection of its
     * own */
    if (rc == -ENOTSUP && (h2 || h3) && o->h1_fallback)
        rc = attempt(c, url, o, false, false, out, dl);
    return rc;
}
