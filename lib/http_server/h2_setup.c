/* SPDX-License-Identifier: MIT */
/* How a server connection becomes HTTP/2: ALPN h2 over TLS (RFC 9113 §3.2), the preface over
 * cleartext with prior knowledge (§3.3), or an HTTP/1.1 request with "Upgrade: h2c" (RFC 7540
 * §3.2, which RFC 9113 §3.1 deprecates but curl and others still send); and the server's
 * HTTP/2 options. */
#include <stdlib.h>

#include <vega/base64.h>

#include "h2_srv_int.h"
#include "http1_int.h"

/* ---- options --------------------------------------------------------------------------------- */

/* Layout 1 ends where version 2's websocket starts. */
#define H2S_OPTS_V1_SIZE offsetof(vega_http_server_h2_opts, websocket)

static size_t opts_size(int opts_version)
{
    return opts_version == 1 ? H2S_OPTS_V1_SIZE : sizeof(vega_http_server_h2_opts);
}

void vega_http_server_h2_opts_init_versioned(vega_http_server_h2_opts *o, int opts_version)
{
    if (opts_version < 1 || opts_version > VEGA_HTTP_SERVER_H2_OPTS_VERSION)
        VEGA_PANIC("vega_http_server_h2_opts_init: unknown layout version %d", opts_version);
    memset(o, 0, opts_size(opts_version));
}

#define H2S_MAX_WINDOW 0x7fffffffu /* RFC 9113 §6.9.1: 2^31 - 1 */

void vega__h2s_core_opts(const vega_http_server *srv, vega_h2_opts *o)
{
    const vega_http_server_h2_opts *h = &srv->h2o;
    vega_h2_opts_init(o);
    if (h->max_concurrent_streams)
        o->max_concurrent_streams = h->max_concurrent_streams;
    if (h->initial_window_size)
        o->initial_window_size = h->initial_window_size;
    if (h->stream_window_max)
        o->stream_window_max = h->stream_window_max;
    if (h->conn_window_max) {
        o->conn_window_max = h->conn_window_max;
        o->conn_window = VEGA__MIN(o->conn_window, h->conn_window_max);
    }
    if (h->header_table_size)
        o->header_table_size = h->header_table_size;
    if (h->reset_burst)
        o->reset_burst = h->reset_burst;
    if (h->reset_rate)
        o->reset_rate = h->reset_rate;
    if (h->glitch_burst)
        o->glitch_burst = h->glitch_burst;
    if (h->glitch_rate)
        o->glitch_rate = h->glitch_rate;
    /* the same limits as an HTTP/1.1 head: a larger section is answered 431 by the core */
    o->max_header_list_size = (uint32_t)VEGA__MIN(srv->o.limits.max_field_section, UINT32_MAX);
    o->max_fields = (uint32_t)VEGA__MIN(srv->o.limits.max_fields, UINT32_MAX);
    /* RFC 8441 §3: only a server that will answer extended CONNECT says so */
    o->enable_connect_protocol = h->websocket;
    o->mem = srv->o.mem;
}

int vega__h2s_alpn(vega_http_server *srv)
{
    static const char *const both[] = {"h2", "http/1.1"};
    static const char *const h1[] = {"http/1.1"};
    /* RFC 9113 §3.2: "h2" identifies HTTP/2 over TLS; listed first, it is preferred */
    bool h2 = !srv->h2o.disable;
    return vega_tls_config_set_alpn(srv->o.tls, h2 ? both : h1, h2 ? 2 : 1);
}

int vega_http_server_set_h2_versioned(vega_http_server *srv, const vega_http_server_h2_opts *o,
                                      int opts_version)
{
    if (!srv || !o || opts_version < 1 || opts_version > VEGA_HTTP_SERVER_H2_OPTS_VERSION)
        return -EINVAL;
    vega_http_server_h2_opts latest;
    /* API rules: ABI: an older layout's prefix, the rest zero */
    if (opts_version < VEGA_HTTP_SERVER_H2_OPTS_VERSION) {
        memset(&latest, 0, sizeof latest);
        memcpy(&latest, o, opts_size(opts_version));
        o = &latest;
    }
    if (o->initial_window_size > H2S_MAX_WINDOW || o->stream_window_max > H2S_MAX_WINDOW ||
        o->conn_window_max > H2S_MAX_WINDOW || o->header_table_size > UINT32_MAX)
        return -EINVAL;
    pthread_mutex_lock(&srv->lock);
    bool busy = atomic_load(&srv->running);
    pthread_mutex_unlock(&srv->lock);
    if (busy)
        return -EBUSY;
    bool was_disabled = srv->h2o.disable;
    srv->h2o = *o;
    if (srv->o.tls && srv->alpn_own && was_disabled != o->disable) {
        int rc = vega__h2s_alpn(srv);
        if (rc < 0) {
            srv->h2o.disable = was_disabled;
            return rc;
        }
    }
    return 0;
}

/* ---- the first bytes ------------------------------------------------------------------------- */

enum h2s_detect vega__h2s_detect(const struct srv_conn *c, const uint8_t *p, size_t len)
{
    const vega_http_server *srv = c->srv;
    if (srv->h2o.disable)
        return H2S_NOT_H2;
    if (c->tls) {
        /* the handshake is done once bytes were read: ALPN decided */
        const char *alpn = vega_tls_get_alpn(c->stream);
        return alpn && strcmp(alpn, "h2") == 0 ? H2S_IS_H2 : H2S_NOT_H2;
    }
    if (!srv->h2o.h2c)
        return H2S_NOT_H2;
    /* §3.3: prior knowledge; the preface is detected before the HTTP/1.1 parser would answer
     * "PRI * HTTP/2.0" with 505 */
    size_t n = VEGA__MIN(len, (size_t)H2S_PREFACE_LEN);
    if (memcmp(p, H2S_PREFACE, n) != 0)
        return H2S_NOT_H2;
    return n == H2S_PREFACE_LEN ? H2S_IS_H2 : H2S_NEED_MORE;
}

/* ---- Upgrade: h2c ---------------------------------------------------------------------------- */

/* True when the comma-separated list v holds tok (ASCII case-insensitive, OWS trimmed). */
static bool list_has(vega_http_str v, const char *tok)
{
    const char *s = v.ptr, *e = v.ptr + v.len;
    while (s < e) {
        while (s < e && (*s == ' ' || *s == '\t' || *s == ','))
            s++;
        const char *b = s;
        while (s < e && *s != ',')
            s++;
        const char *t = s;
        while (t > b && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if (vega__http1_ieq(b, (size_t)(t - b), tok))
            return true;
    }
    return false;
}

/* RFC 7540 §3.2.1: HTTP2-Settings is a SETTINGS payload in base64url without padding. Returns
 * true when v decodes to whole settings (6 bytes each). The values themselves come again in the
 * client's SETTINGS frame, which must open its preface (§3.5), so that frame is what applies. */
static bool settings_ok(vega_http_str v)
{
    uint8_t raw[3072]; /* 512 settings: more than any client sends */
    vega_ssize n =
        vega_base64_decode(v.ptr, v.len, raw, sizeof raw, VEGA_BASE64_URL | VEGA_BASE64_NOPAD);
    return n >= 0 && n % 6 == 0;
}

/* HPACK literal without indexing, new name (RFC 7541 §6.2.2), raw strings: it adds nothing to
 * the decoder's table, so the core's table stays in step with the client's encoder. */
static size_t put_int7(uint8_t *w, size_t v)
{
    size_t n = 0;
    if (v < 127) {
        w[n++] = (uint8_t)v;
        return n;
    }
    w[n++] = 127;
    v -= 127;
    while (v >= 128) {
        w[n++] = (uint8_t)(v % 128 + 128);
        v /= 128;
    }
    w[n++] = (uint8_t)v;
    return n;
}

struct hblock {
    uint8_t *p;
    size_t len, cap;
    bool full;
};

static void put_field(struct hblock *b, const char *name, size_t nl, const char *val, size_t vl)
{
    /* 1 + two 5-byte integers at most for lengths below 2^28 */
    if (b->full || !vega__fits(b->len, 11 + nl + vl, b->cap)) {
        b->full = true;
        return;
    }
    uint8_t *w = b->p + b->len;
    *w++ = 0x00;
    w += put_int7(w, nl);
    for (size_t i = 0; i < nl; i++)
        *w++ = (uint8_t)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    w += put_int7(w, vl);
    if (vl)
        memcpy(w, val, vl);
    w += vl;
    b->len = (size_t)(w - b->p);
}

/* §8.2.2: connection-specific fields never travel in HTTP/2; Host becomes :authority. */
static bool dropped(const vega_http_field *f)
{
    static const char *const names[] = {"connection", "keep-alive",        "proxy-connection",
                                        "upgrade",    "transfer-encoding", "http2-settings",
                                        "host"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(names); i++)
        if (vega__http1_ieq(f->name.ptr, f->name.len, names[i]))
            return true;
    return vega__http1_ieq(f->name.ptr, f->name.len, "te") &&
           !vega__http1_ieq(f->value.ptr, f->value.len, "trailers");
}

/* The request of x as a HEADERS frame for stream 1 with END_STREAM, in *out (allocated).
 * Returns 0, 1 (it does not fit one frame of the default size: no upgrade), -ENOMEM. */
static int build_frame(const vega_http_server *srv, const struct vega_http_exchange *x,
                       uint8_t **out, size_t *len)
{
    const vega_http_request *q = &x->req;
    struct hblock b = {vega__mem_malloc(srv->o.mem, 9 + 16384), 9, 9 + 16384, false};
    if (!b.p)
        return -ENOMEM;
    put_field(&b, ":method", 7, q->method_name.ptr, q->method_name.len);
    put_field(&b, ":scheme", 7, "http", 4);
    if (q->authority.ptr)
        put_field(&b, ":authority", 10, q->authority.ptr, q->authority.len);
    if (q->target.len && q->target.ptr[0] != '/' && q->target.ptr[0] != '*') {
        /* absolute-form: the path and query of the URL (an empty path is "/"), put together in
         * the frame's unused tail (the frame is at most 16 KiB either way) */
        size_t ql = q->query.ptr ? 1 + q->query.len : 0, pl = q->path.len ? q->path.len : 1;
        if (!vega__fits(b.len + 11 + 5, pl + ql, b.cap) ||
            !vega__fits(b.len + 11 + 5 + pl + ql, pl + ql, b.cap)) {
            b.full = true;
        } else {
            char *path = (char *)b.p + b.cap - (pl + ql);
            if (q->path.len)
                memcpy(path, q->path.ptr, q->path.len);
            else
                path[0] = '/';
            if (q->query.ptr) {
                path[pl] = '?';
                memcpy(path + pl + 1, q->query.ptr, q->query.len);
            }
            put_field(&b, ":path", 5, path, pl + ql);
        }
    } else {
        put_field(&b, ":path", 5, q->target.ptr, q->target.len);
    }
    for (size_t i = 0; i < q->fields->count; i++) {
        const vega_http_field *f = &q->fields->items[i];
        if (!dropped(f))
            put_field(&b, f->name.ptr, f->name.len, f->value.ptr, f->value.len);
    }
    if (b.full) {
        vega__mem_free(srv->o.mem, b.p);
        return 1;
    }
    size_t pl = b.len - 9;
    /* §6.2: HEADERS, END_STREAM | END_HEADERS, stream 1 */
    b.p[0] = (uint8_t)(pl >> 16);
    b.p[1] = (uint8_t)(pl >> 8);
    b.p[2] = (uint8_t)pl;
    b.p[3] = 0x1;
    b.p[4] = 0x1 | 0x4;
    b.p[5] = b.p[6] = b.p[7] = 0;
    b.p[8] = 1;
    *out = b.p;
    *len = b.len;
    return 0;
}

/* The one field named name, or false when there is none or more than one. */
static bool one_field(const vega_http_request *q, const char *name, vega_http_str *v)
{
    int n = 0;
    for (size_t i = 0; i < q->fields->count; i++) {
        const vega_http_field *f = &q->fields->items[i];
        if (vega__http1_ieq(f->name.ptr, f->name.len, name)) {
            *v = f->value;
            n++;
        }
    }
    return n == 1;
}

int vega__h2s_upgrade(struct srv_conn *c, uint8_t **frame, size_t *len)
{
    vega_http_server *srv = c->srv;
    struct srv_active *a = c->a;
    const struct vega_http_exchange *x = &a->x;
    const vega_http_request *q = &x->req;
    if (!srv->h2o.h2c || srv->h2o.disable || c->tls || q->version != 11 ||
        q->method == VEGA_HTTP_METHOD_CONNECT)
        return 0;
    vega_http_str up, conn, settings;
    /* RFC 7540 §3.2: a body would have to be read as HTTP/1.1 first: such a request is simply
     * served as HTTP/1.1 (the server may ignore the Upgrade, RFC 9110 §7.8) */
    if (!one_field(q, "upgrade", &up) || !list_has(up, "h2c") || !x->body.done)
        return 0;
    /* §3.2.1: "A server MUST NOT upgrade the connection to HTTP/2 if this header field is not
     * present or if more than one is present." */
    if (!one_field(q, "http2-settings", &settings) || !settings_ok(settings))
        return 0;
    /* RFC 9110 §7.8: the Upgrade must be named as a connection option */
    if (!one_field(q, "connection", &conn) || !list_has(conn, "upgrade"))
        return 0;
    if (atomic_load_explicit(&srv->stopping, memory_order_relaxed))
        return 0;
    int rc = build_frame(srv, x, frame, len);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    static const char resp[] = "HTTP/1.1 101 Switching Protocols\r\n"
                               "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    if (a->out_len && vega__srv_flush(c, VEGA_DEADLINE_NEVER) < 0)
        rc = -EPIPE;
    if (rc == 0) {
        vega_ssize w = vega_stream_write(c->stream, resp, sizeof resp - 1, NULL,
                                         vega_deadline_in_ns(srv->o.write_timeout_ns));
        rc = w < 0 ? (int)w : 0;
    }
    if (rc < 0) {
        vega__mem_free(srv->o.mem, *frame);
        *frame = NULL;
        return rc;
    }
    return 1;
}
