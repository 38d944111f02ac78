/* SPDX-License-Identifier: MIT */
/* One request over HTTP/2 (RFC 9113 §8): a stream opened with the request's header section
 * (pseudo-header fields §8.3.1, lowercase names, no connection-specific fields §8.2.2), waiting
 * for a slot under the server's SETTINGS_MAX_CONCURRENT_STREAMS (§5.1.2), the body given to the
 * core a span at a time as flow control lets it out (§6.9), the response head awaited; requests
 * the server did not process sent again on a new connection (§8.7, §6.8); and the choice between
 * HTTP/2 and HTTP/1.1 that ALPN makes (§3.2). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"

/* ---- the header section ---------------------------------------------------------------------- */

struct h2_head {
    vega_hpack_field *f;
    size_t n;
    char *names; /* lowercased copies of the caller's names */
    char cl[HC_MUX_CL];
};

#define HF(nm, nl, v, vl) ((vega_hpack_field){{(nm), (nl)}, {(v), (vl)}, VEGA_HPACK_INDEX_AUTO})

static void add_field(void *u, const char *name, size_t name_len, const char *value,
                      size_t value_len)
{
    struct h2_head *hh = u;
    hh->f[hh->n++] = HF(name, name_len, value, value_len);
}

/* §8.3.1's pseudo-header fields first, then the regular ones (§8.2.2: lowercase, no
 * connection-specific ones) */
static int head_fields(vega_http_client *c, const struct hc_req *rq, struct h2_head *hh)
{
    const vega_http_client_request *req = rq->req;
    hh->f = vega__mem_calloc(c->o.mem, req->nfields + 9, sizeof *hh->f);
    hh->names = vega__hc_mux_names_new(c, req);
    if (!hh->f || !hh->names)
        return -ENOMEM;
    struct hc_mux_pseudo p;
    vega__hc_mux_pseudo(rq, rq->ws_h2, &p);
    add_field(hh, ":method", 7, p.method.ptr, p.method.len);
    add_field(hh, ":scheme", 7, p.scheme.ptr, p.scheme.len);
    add_field(hh, ":authority", 10, p.authority.ptr, p.authority.len);
    add_field(hh, ":path", 5, p.path.ptr, p.path.len);
    if (p.protocol.ptr)
        add_field(hh, ":protocol", 9, p.protocol.ptr, p.protocol.len);
    vega__hc_mux_fields(c, rq, rq->ws_h2, hh->names, hh->cl, add_field, hh);
    return 0;
}

/* The request as HTTP/1.1 would write it, for the trace hook ("GET /x HTTP/2", host first). */
static void trace_head(vega_http_client_response *r, const struct h2_head *hh)
{
    if (!r->trace)
        return;
    size_t total = 64;
    for (size_t i = 0; i < hh->n; i++)
        total += hh->f[i].name.len + hh->f[i].value.len + 4;
    char *t = vega__mem_malloc(r->c->o.mem, total);
    if (!t)
        return;
    const vega_hpack_field *f = hh->f; /* :method :scheme :authority :path */
    int n = snprintf(t, total, "%.*s %.*s HTTP/2\r\nhost: %.*s\r\n", (int)f[0].value.len,
                     f[0].value.ptr, (int)f[3].value.len, f[3].value.ptr, (int)f[2].value.len,
                     f[2].value.ptr);
    size_t o = n > 0 ? (size_t)n : 0;
    for (size_t i = 4; i < hh->n && o < total; i++)
        o += (size_t)snprintf(t + o, total - o, "%.*s: %.*s\r\n", (int)hh->f[i].name.len,
                              hh->f[i].name.ptr, (int)hh->f[i].value.len, hh->f[i].value.ptr);
    if (o + 2 < total) {
        memcpy(t + o, "\r\n", 2);
        o += 2;
    }
    vega__hc_trace_request(r, t, o);
    vega__mem_free(r->c->o.mem, t);
}

/* ---- the stream ------------------------------------------------------------------------------ */

/* Opens r's stream with the head (fin: no body), waiting for a slot while the server's
 * concurrent-stream limit is reached. */
static int open_stream(vega_http_client_response *r, const struct h2_head *hh, bool fin,
                       vega_deadline dl)
{
    struct hc_h2 *h = r->h2;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        if (!r->h2_listed) {
            r->h2_next = h->reqs;
            h->reqs = r;
            r->h2_listed = true;
        }
        int rc;
        int32_t id = 0;
        if (h->goaway) /* even when the connection ended since: never sent */
            rc = VEGA_ERR_H2_GOING_AWAY;
        else if (h->dead)
            rc = h->err ? h->err : -ECONNRESET;
        else
            rc = vega_h2_submit_request(h->core, hh->f, hh->n, fin ? VEGA_H2_FLAG_END_STREAM : 0, r,
                                        &id);
        /* a :protocol request waits for the server's SETTINGS too (RFC 8441 §4: only after
         * SETTINGS_ENABLE_CONNECT_PROTOCOL = 1; on_settings wakes slot waiters) */
        r->h2_slot = rc == VEGA_ERR_H2_STREAM_LIMIT || rc == -EAGAIN;
        if (rc == 0) {
            r->h2_id = id;
            r->info.stream_id = (uint64_t)id;
        }
        if (rc == VEGA_ERR_CLOSED)
            rc = h->err ? h->err : -ECONNRESET;
        if (rc == VEGA_ERR_H2_GOING_AWAY)
            r->h2_refused = true; /* never sent: safe to send elsewhere */
        pthread_mutex_unlock(&h->mu);
        if (rc == 0) {
            vega_notify_one(&h->wake);
            return 0;
        }
        if (rc == -EOPNOTSUPP) /* the server did not enable extended CONNECT */
            return -ENOTSUP;
        if (rc != VEGA_ERR_H2_STREAM_LIMIT && rc != -EAGAIN)
            return rc;
        /* §5.1.2: wait for one of our streams to close (or more allowed) */
        if ((rc = vega_notify_wait(&r->h3_wake, dl)) < 0)
            return rc;
    }
}

/* Gives len bytes (fin: the last) to the core and waits until they are written out, the
 * stream ended, or the server's answer is complete (§8.1: it may answer before the body ends;
 * then the rest is not sent). Returns 0, 1 when the body should stop, or a code. */
static int body_span(vega_http_client_response *r, const void *p, size_t len, bool fin,
                     vega_deadline dl)
{
    struct hc_h2 *h = r->h2;
    bool given = false;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        int rc = 0;
        if (r->h2_closed || r->h2_end)
            rc = r->h2_err && !r->head_done ? r->h2_err : 1;
        else if (h->dead)
            rc = h->err ? h->err : -ECONNRESET;
        else if (!given) {
            vega_ssize w =
                vega_h2_stream_write(h->core, r->h2_id, p, len, fin ? VEGA_H2_FLAG_END_STREAM : 0);
            if (w < 0)
                rc = w == VEGA_ERR_H2_STREAM_CLOSED ? 1 : (int)w;
            else if ((size_t)w == len) {
                given = true;
                r->h2_span = true;
            }
        }
        bool done = given && !r->h2_span;
        pthread_mutex_unlock(&h->mu);
        if (given && !done && rc == 0)
            vega_notify_one(&h->wake);
        if (rc != 0 || done)
            return rc;
        if ((rc = vega_notify_wait(&r->h3_wake, dl)) < 0)
            return rc;
    }
}

/* A span the core still holds when the body stops early (an answer before its end, a failure,
 * a deadline) must not outlive its buffer: the stream is reset (CANCEL), which releases it; a
 * response already whole stays readable. */
static void drop_span(vega_http_client_response *r)
{
    struct hc_h2 *h = r->h2;
    pthread_mutex_lock(&h->mu);
    bool kick = false;
    if (r->h2_span && r->h2_id && !r->h2_closed && !h->dead) {
        (void)vega_h2_submit_rst_stream(h->core, r->h2_id, VEGA_H2_CANCEL);
        kick = true;
    }
    r->h2_span = false;
    pthread_mutex_unlock(&h->mu);
    if (kick)
        vega_notify_one(&h->wake);
}

/* The next piece of body_fn into buf (an unknown length: 0 is its end). */
static vega_ssize next_piece(const vega_http_client_request *req, uint8_t *buf, size_t want)
{
    vega_ssize n = req->body_fn(req->body_user, buf, want);
    return n >= 0 && (size_t)n > want ? VEGA_ERR_CALLBACK : n; /* more than asked */
}

/* body_fn of an unknown length: one piece is read ahead, so that the last one carries
 * END_STREAM and no empty DATA frame follows it (only an empty body needs one). */
static int send_unknown(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                        vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    const vega_mem *m = r->c->o.mem;
    uint8_t *buf[2] = {vega__mem_malloc(m, HC_WBUF), vega__mem_malloc(m, HC_WBUF)};
    int rc = buf[0] && buf[1] ? 0 : -ENOMEM;
    *used = rc == 0;
    vega_ssize n = rc == 0 ? next_piece(req, buf[0], HC_WBUF) : 0;
    if (n < 0)
        rc = (int)n;
    else if (rc == 0 && n == 0)
        rc = body_span(r, "", 0, true, dl);
    for (int cur = 0; rc == 0 && n > 0; cur = !cur) {
        vega_ssize ahead = next_piece(req, buf[!cur], HC_WBUF);
        if (ahead < 0) {
            rc = (int)ahead;
            break;
        }
        rc = body_span(r, buf[cur], (size_t)n, ahead == 0, dl);
        n = ahead;
    }
    drop_span(r);
    vega__mem_free(m, buf[0]);
    vega__mem_free(m, buf[1]);
    return rc;
}

/* The body: the caller's memory as one span, or body_fn / a file in pieces of up to HC_WBUF.
 * *used: body_fn was called. */
static int send_body(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                     vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    int rc = 0;
    if (req->body)
        rc = body_span(r, req->body, req->body_len, true, dl);
    uint64_t left = rq->chunked ? UINT64_MAX : req->body_length;
    if (!req->body && left == 0)
        rc = body_span(r, "", 0, true, dl);
    if (req->body || left == 0) {
        drop_span(r);
        return rc;
    }
    if (rq->chunked)
        return send_unknown(r, rq, used, dl);
    const vega_mem *m = r->c->o.mem;
    size_t cap = left < HC_WBUF ? (size_t)left : HC_WBUF;
    uint8_t *buf = vega__mem_malloc(m, cap);
    if (!buf)
        return -ENOMEM;
    uint64_t off = req->body_offset;
    while (rc == 0 && left > 0) {
        size_t want = left < cap ? (size_t)left : cap;
        vega_ssize n = vega__hc_body_piece(rq, buf, want, &off, used);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        if (n == 0) { /* body_fn's end of an unknown length */
            rc = body_span(r, "", 0, true, dl);
            break;
        }
        if (!rq->chunked)
            left -= (uint64_t)n;
        rc = body_span(r, buf, (size_t)n, left == 0, dl);
    }
    drop_span(r);
    vega__mem_free(m, buf);
    return rc;
}

/* ---- one attempt ----------------------------------------------------------------------------- */

static void note_conn(vega_http_client_response *r, struct hc_h2 *h, bool reused)
{
    r->info.version = VEGA_HTTP_CLIENT_V2;
    r->info.alpn = h->alpn[0] ? h->alpn : NULL;
    r->info.tls_version = h->tls_version;
    r->info.peer = h->peer;
    r->info.reused = reused;
    if (!reused) {
        r->info.t_dns = h->t_dns;
        r->info.t_connect = h->t_connect;
        r->info.t_tls = h->t_tls;
    }
}

int vega__hc_attempt_h2(vega_http_client *c, const struct hc_req *rq, struct hc_h2 *h, bool reused,
                        vega_tstamp start, vega_deadline dl, bool *used, bool *retry,
                        vega_http_client_wire_error *werr, vega_http_client_response **out)
{
    const vega_http_client_request *req = rq->req;
    *retry = false;
    vega_http_client_response *r;
    int rc = vega__hc_response_new(c, &r, req);
    if (rc < 0) {
        pthread_mutex_lock(&c->mu);
        h->mux.active--;
        pthread_mutex_unlock(&c->mu);
        vega__hc_h2_release(h);
        return rc;
    }
    r->h2 = h; /* r holds the request's reference and its count in h->active */
    r->dl = dl;
    r->info.t_start = start;
    r->is_head = strcmp(rq->method, "HEAD") == 0;
    strcpy(r->method, rq->method);
    note_conn(r, h, reused);
    struct h2_head hh = {0};
    rc = head_fields(c, rq, &hh);
    /* an extended CONNECT may wait for the server's SETTINGS and be refused without going
     * out (RFC 8441 §4): its head is shown once its stream opened */
    if (rc == 0 && !rq->ws_h2)
        trace_head(r, &hh);
    if (rc == 0)
        rc = open_stream(r, &hh, !rq->has_body && !rq->ws_h2, dl);
    if (rc == 0 && rq->ws_h2)
        trace_head(r, &hh);
    vega__mem_free(c->o.mem, hh.f);
    vega__mem_free(c->o.mem, hh.names);
    if (rc == 0 && rq->has_body) {
        rc = send_body(r, rq, used, dl);
        if (rc == 1)
            rc = 0; /* the server answered or ended the stream: its answer says why */
    }
    if (rc == 0) {
        r->info.t_sent = vega_now();
        rc = vega__hc_h2_read_head(r, dl);
    }
    if (rc == 0 && req->decompress)
        rc = vega__hc_set_decoder(r);
    if (rc == 0 && c->o.alt_svc && rq->key.tls)
        vega__hc_altsvc_learn(c, &rq->key, "h2", &r->fields);
    if (rc < 0) {
        /* §8.7, §6.8: not processed (REFUSED_STREAM, above GOAWAY's last stream id, or never
         * sent); or an idempotent request on a pooled connection that ended before any answer */
        pthread_mutex_lock(&h->mu);
        bool refused = r->h2_refused;
        pthread_mutex_unlock(&h->mu);
        *retry =
            refused || (reused && !r->any_byte && rq->idempotent &&
                        (rc == -ECONNRESET || rc == VEGA_ERR_HTTP_EMPTY_REPLY || rc == -EPIPE));
        if (werr)
            *werr = r->werr.kind ? r->werr : h->werr;
        vega_http_client_response_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---- HTTP/2 or, as ALPN says, HTTP/1.1 ------------------------------------------------------- */

/* The request went with "Upgrade: h2c" and the server switched (101): the connection becomes
 * an HTTP/2 one whose stream 1 is r's response. */
static int upgraded(vega_http_client *c, const struct hc_req *rq, vega_http_client_response *r)
{
    struct h2_head hh = {0};
    int rc = head_fields(c, rq, &hh);
    struct hc_conn *conn = r->conn;
    struct hc_h2 *h = NULL;
    if (rc == 0)
        rc =
            vega__hc_h2_adopt(c, rq, conn, hh.f, hh.n, r, r->rbuf + r->rpos, r->rend - r->rpos, &h);
    vega__mem_free(c->o.mem, hh.f);
    vega__mem_free(c->o.mem, hh.names);
    if (rc < 0 && r->conn) /* not adopted: the HTTP/1.1 side has nothing more to say */
        r->unusable = true;
    r->rpos = r->rend = 0;
    if (rc == 0) {
        r->info.version = VEGA_HTTP_CLIENT_V2;
        rc = vega__hc_h2_read_head(r, r->dl);
    }
    if (rc == 0 && rq->req->decompress)
        rc = vega__hc_set_decoder(r);
    return rc;
}

/* An HTTP/1.1 exchange on conn (a pooled one, or a new one ALPN gave to HTTP/1.1); with
 * rq->h2_upgrade it asks for h2c and follows a 101. */
static int over_h1(vega_http_client *c, const struct hc_req *rq, struct hc_conn *conn,
                   const vega_http_client_info *tinfo, bool reused, vega_tstamp start,
                   vega_deadline dl, bool *used, bool *got_bytes, vega_http_client_response **out)
{
    vega_http_client_response *r;
    int rc = vega__hc_response_new(c, &r, rq->req);
    if (rc < 0) {
        vega__hc_conn_close(conn);
        return rc;
    }
    r->upgrade_asked = rq->h2_upgrade;
    r->dl = dl;
    r->info.t_start = start;
    r->info.reused = reused;
    if (!reused) {
        r->info.t_dns = tinfo->t_dns;
        r->info.t_connect = tinfo->t_connect;
        r->info.t_tls = tinfo->t_tls;
    }
    rc = vega__hc_exchange_h1(c, rq, r, conn, used, got_bytes);
    if (rc == 0 && r->upgraded)
        rc = upgraded(c, rq, r);
    if (rc < 0) {
        vega_http_client_response_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int vega__hc_send_h2(vega_http_client *c, const struct hc_req *rq, vega_tstamp start,
                     vega_deadline dl, vega_http_client_response **out)
{
    const vega_http_client_request *req = rq->req;
    bool fresh = req->fresh_connection, used = false;
    for (int attempt = 0;; attempt++) {
        struct hc_h2 *h = NULL;
        struct hc_conn *conn = NULL;
        bool reused = false;
        vega_http_client_info tinfo;
        memset(&tinfo, 0, sizeof tinfo);
        int rc;
        if (!fresh) {
            rc = vega__hc_h2_pool_take(c, &rq->key, dl, &h);
            if (rc < 0)
                return rc;
            reused = rc > 0;
        }
        /* an origin that spoke HTTP/1.1 before left its connections in the HTTP/1.1 pool */
        if (!h && !fresh && !rq->h2_prior && !rq->ws_h2 &&
            vega__hc_pool_take(c, &rq->key, &conn) > 0)
            reused = true;
        if (!h && !conn && rq->h2_upgrade) {
            /* h2c Upgrade: an HTTP/1.1 connection that asks */
            vega_deadline cdl = hc_dl_min(dl, vega_deadline_in_ns(c->o.connect_timeout_ns));
            rc = vega__hc_connect(c, &rq->key, rq->host_for_tls, true, &tinfo, cdl, &conn);
            if (rc < 0)
                return rc;
        } else if (!h && !conn) {
            vega_deadline cdl = hc_dl_min(dl, vega_deadline_in_ns(c->o.connect_timeout_ns));
            rc = vega__hc_h2_connect(c, rq, fresh, &tinfo, cdl, &h, &conn);
            if (rc < 0)
                return rc;
            reused = rc == 2; /* joined one another request made */
        }
        if (conn && rq->ws_h2) {
            /* ALPN chose HTTP/1.1: no WebSocket over HTTP/2 here (the caller may fall back
             * to the HTTP/1.1 Upgrade on a connection of its own) */
            vega__hc_conn_close(conn);
            return -ENOTSUP;
        }
        if (conn) {
            bool got_bytes = false;
            rc = over_h1(c, rq, conn, &tinfo, reused, start, dl, &used, &got_bytes, out);
            /* RFC 9112 §9.3.1: a pooled connection the server had closed */
            if (rc < 0 && reused && vega__hc_retryable(rc) && !used && !got_bytes && attempt == 0) {
                fresh = true;
                continue;
            }
            return rc;
        }
        bool retry = false;
        rc = vega__hc_attempt_h2(c, rq, h, reused, start, dl, &used, &retry, req->wire_error, out);
        if (rc < 0 && retry && !used && attempt == 0) {
            fresh = true;
            continue;
        }
        return rc;
    }
}
