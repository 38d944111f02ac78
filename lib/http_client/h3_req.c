/* SPDX-License-Identifier: MIT */
/* One request over HTTP/3: a client bidirectional stream (RFC 9114 §4.1, §6.1) opened within
 * the server's stream credit, the head as a QPACK-encoded HEADERS frame with the request
 * pseudo-header fields (§4.3.1) and lowercase fields without connection-specific ones (§4.2),
 * the body as DATA frames (§7.2.1) written as QUIC's flow control takes them, and the response
 * head awaited (interim ones skipped, h3_event.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"

/* ---- the head ------------------------------------------------------------------------------- */

struct h3_head {
    vega_http_field *f;
    size_t n;
    char *names; /* lowercased copies of the caller's names */
    char cl[HC_MUX_CL];
};

static void add_field(void *u, const char *name, size_t name_len, const char *value,
                      size_t value_len)
{
    struct h3_head *hh = u;
    hh->f[hh->n++] = (vega_http_field){{name, name_len}, {value, value_len}};
}

/* The regular fields (RFC 9114 §4.2: lowercase, no connection-specific ones); the
 * pseudo-header fields go apart (vega_h3_request). */
static int head_fields(vega_http_client *c, const struct hc_req *rq, struct h3_head *hh)
{
    const vega_http_client_request *req = rq->req;
    hh->f = vega__mem_calloc(c->o.mem, req->nfields + 5, sizeof *hh->f);
    hh->names = vega__hc_mux_names_new(c, req);
    if (!hh->f || !hh->names)
        return -ENOMEM;
    vega__hc_mux_fields(c, rq, rq->ws_h3, hh->names, hh->cl, add_field, hh);
    return 0;
}

static void trace_head(vega_http_client_response *r, const vega_h3_request *hr,
                       const struct h3_head *hh)
{
    if (!r->trace)
        return;
    size_t total = hr->method.len + hr->path.len + hr->authority.len + hr->protocol.len + 48;
    for (size_t i = 0; i < hh->n; i++)
        total += hh->f[i].name.len + hh->f[i].value.len + 4;
    char *t = vega__mem_malloc(r->c->o.mem, total);
    if (!t)
        return;
    int n = snprintf(t, total, "%.*s %.*s HTTP/3\r\nhost: %.*s\r\n", (int)hr->method.len,
                     hr->method.ptr, (int)hr->path.len, hr->path.ptr, (int)hr->authority.len,
                     hr->authority.ptr);
    size_t o = n > 0 ? (size_t)n : 0;
    if (hr->protocol.ptr && o < total) /* RFC 9220: shown as the HTTP/2 trace shows it */
        o += (size_t)snprintf(t + o, total - o, ":protocol: %.*s\r\n", (int)hr->protocol.len,
                              hr->protocol.ptr);
    for (size_t i = 0; i < hh->n && o < total; i++)
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

/* The head, QPACK-encoded for stream id (lock held) into *buf, grown until it fits. */
static vega_ssize encode_head(struct hc_h3 *h, uint64_t id, const vega_h3_request *hr,
                              const struct h3_head *hh, uint8_t **buf, size_t *cap)
{
    for (;;) {
        vega_ssize n = vega_h3_conn_write_request_head(h->h3, id, hr, hh->f, hh->n, *buf, *cap);
        if (n != VEGA_ERR_NOBUF || *cap > (1u << 24))
            return n;
        uint8_t *nb = vega__mem_realloc(h->c->o.mem, *buf, *cap * 2);
        if (!nb)
            return -ENOMEM;
        *buf = nb;
        *cap *= 2;
    }
}

/* r joins h's requests (woken by STREAMS_AVAILABLE while it waits for credit), opens its
 * stream and writes its head in one hold of the lock. fin: no body follows. */
static int open_and_head(vega_http_client_response *r, const vega_h3_request *hr,
                         const struct h3_head *hh, bool fin, vega_deadline dl)
{
    struct hc_h3 *h = r->h3;
    size_t cap = 256 + hr->path.len + hr->authority.len;
    for (size_t i = 0; i < hh->n; i++)
        cap += hh->f[i].name.len + hh->f[i].value.len + 8;
    uint8_t *buf = vega__mem_malloc(h->c->o.mem, cap);
    if (!buf)
        return -ENOMEM;
    int rc;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
        if (!qc) {
            rc = VEGA_ERR_QUIC_EP_CLOSED;
            break;
        }
        h->qc = qc;
        rc = 0;
        if (!r->h3_listed) {
            r->h3_id = UINT64_MAX; /* no stream yet: no event names it */
            r->h3_next = h->reqs;
            h->reqs = r;
            r->h3_listed = true;
        }
        if (h->dead)
            rc = h->err ? h->err : VEGA_ERR_QUIC_EP_CLOSED;
        else if (h->goaway)
            rc = VEGA_ERR_H3_GOAWAY;
        vega_h3_settings ps;
        if (rc == 0 && hr->protocol.ptr) {
            /* RFC 9220 §3 (RFC 8441 §4): an extended CONNECT only once the server's SETTINGS
             * said ENABLE_CONNECT_PROTOCOL = 1; on_settings wakes us */
            if (!vega_h3_conn_get_peer_settings(h->h3, &ps))
                rc = VEGA_ERR_FULL;
            else if (!ps.enable_connect_protocol)
                rc = -ENOTSUP;
        }
        uint64_t id = 0;
        if (rc == 0)
            rc = vega_quic_stream_open(qc, true, &id);
        if (rc == 0) {
            r->h3_id = id;
            r->info.stream_id = id;
            vega_ssize n = encode_head(h, id, hr, hh, &buf, &cap);
            vega_ssize w = n < 0 ? n : vega_quic_stream_write(qc, id, buf, (size_t)n, fin);
            /* The send buffer (1 MiB) takes any head whole; refuse rather than half-send. */
            rc = n < 0 ? (int)n : w == n ? 0 : w < 0 ? (int)w : VEGA_ERR_INTERNAL;
            if (n < 0) { /* the stream carries nothing: give it back */
                (void)vega_quic_stream_reset(qc, id, VEGA_H3_REQUEST_CANCELLED);
                (void)vega_h3_conn_close_stream(h->h3, id);
                r->h3_err_acted = true;
            }
            if (rc == 0 && fin)
                r->h3_sent_fin = true;
        }
        vega__hc_h3_flush_uni(h); /* QPACK encoder instructions the head needed */
        h->qc = NULL;
        vega_quic_ep_conn_unlock(h->qe);
        if (rc != VEGA_ERR_FULL)
            break;
        /* The server's stream limit: wait for its MAX_STREAMS (RFC 9000 §4.6), or for its
         * SETTINGS. */
        if ((rc = vega_notify_wait(&r->h3_wake, dl)) < 0)
            break;
    }
    vega__mem_free(h->c->o.mem, buf);
    return rc == VEGA_ERR_CLOSED ? VEGA_ERR_QUIC_EP_CLOSED : rc;
}

/* Writes len bytes (fin: then ends our side) as QUIC takes them; waits for room. Returns 0,
 * 1 when the server stopped our sending side (it answers without the rest), or a code. */
static int stream_write(vega_http_client_response *r, const void *p, size_t len, bool fin,
                        vega_deadline dl)
{
    struct hc_h3 *h = r->h3;
    size_t off = 0;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
        if (!qc)
            return VEGA_ERR_QUIC_EP_CLOSED;
        int rc = 0;
        if (r->h3_stopped || r->h3_reset)
            rc = 1;
        else if (h->dead)
            rc = h->err ? h->err : VEGA_ERR_QUIC_EP_CLOSED;
        if (rc == 0) {
            vega_ssize w =
                vega_quic_stream_write(qc, r->h3_id, (const uint8_t *)p + off, len - off, fin);
            if (w < 0)
                rc = r->h3_stopped ? 1 : w == VEGA_ERR_CLOSED ? VEGA_ERR_QUIC_EP_CLOSED : (int)w;
            else
                off += (size_t)w;
            if (rc == 0 && off == len && fin)
                r->h3_sent_fin = true;
        }
        vega_quic_ep_conn_unlock(h->qe);
        if (rc != 0 || off == len)
            return rc;
        if ((rc = vega_notify_wait(r->h3_tunnel ? &r->h2_wwake : &r->h3_wake, dl)) < 0)
            return rc;
    }
}

/* One DATA frame (RFC 9114 §7.2.1): its header, then the payload from the caller's buffer. */
static int data_frame(vega_http_client_response *r, const void *p, size_t n, bool fin,
                      vega_deadline dl)
{
    uint8_t hdr[VEGA_H3_DATA_HEADER_MAX];
    vega_ssize hl = vega_h3_write_data_header(hdr, sizeof hdr, n);
    if (hl < 0)
        return (int)hl;
    int rc = stream_write(r, hdr, (size_t)hl, fin && n == 0, dl);
    if (rc == 0 && n)
        rc = stream_write(r, p, n, fin, dl);
    return rc;
}

int vega__hc_h3_send_data(vega_http_client_response *r, const void *p, size_t n, bool fin,
                          vega_deadline dl)
{
    int rc;
    if (n == 0)
        rc = fin && r->h3_sent_fin ? 0 : stream_write(r, "", 0, fin, dl);
    else
        rc = data_frame(r, p, n, fin, dl);
    if (rc == 1)
        return -ECONNRESET; /* the server stopped our side (STOP_SENDING) or reset the stream */
    if (rc < 0 && n && !r->h3_reset && !r->h3_stopped) {
        /* a frame cut short cannot be followed by another: the stream is over */
        struct hc_h3 *h = r->h3;
        vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
        if (qc) {
            (void)vega_quic_stream_reset(qc, r->h3_id, VEGA_H3_REQUEST_CANCELLED);
            r->h3_sent_fin = true; /* nothing more goes on our side */
            vega_quic_ep_conn_unlock(h->qe);
        }
    }
    return rc;
}

/* A body of body_fn or a file, in DATA frames of up to HC_WBUF. *used: body_fn was called. */
static int send_pieces(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                       vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    const vega_mem *m = r->c->o.mem;
    uint64_t left = rq->chunked ? UINT64_MAX : req->body_length;
    size_t cap = left < HC_WBUF ? (size_t)left : HC_WBUF;
    uint8_t *buf = vega__mem_malloc(m, cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    uint64_t off = req->body_offset;
    int rc = 0;
    while (rc == 0 && left > 0) {
        size_t want = left < cap ? (size_t)left : cap;
        vega_ssize n = vega__hc_body_piece(rq, buf, want, &off, used);
        if (n < 0) {
            rc = (int)n;
            break;
        }
        if (n == 0)
            break; /* body_fn's end of an unknown length */
        if (!rq->chunked)
            left -= (uint64_t)n;
        rc = data_frame(r, buf, (size_t)n, left == 0, dl);
    }
    if (rc == 0 && rq->chunked)
        rc = stream_write(r, "", 0, true, dl);
    vega__mem_free(m, buf);
    return rc;
}

static int send_body(vega_http_client_response *r, const struct hc_req *rq, bool *used,
                     vega_deadline dl)
{
    const vega_http_client_request *req = rq->req;
    if (req->body)
        return req->body_len ? data_frame(r, req->body, req->body_len, true, dl)
                             : stream_write(r, "", 0, true, dl);
    if (req->body_length == 0 && !rq->chunked)
        return stream_write(r, "", 0, true, dl);
    return send_pieces(r, rq, used, dl);
}

/* The response's facts from its connection (fresh: its connect times too). */
static void note_conn(vega_http_client_response *r, struct hc_h3 *h, bool reused)
{
    r->info.version = VEGA_HTTP_CLIENT_V3;
    r->info.alpn = "h3";
    r->info.tls_version = "TLSv1.3";
    r->info.peer = h->peer;
    r->info.reused = reused;
    r->info.quic_version = h->quic_version;
    r->info.tls_suite = h->suite;
    r->info.tls_resumed = h->resumed;
    r->info.early_data = h->early;
    if (!reused) {
        r->info.t_dns = h->t_dns;
        r->info.t_connect = r->info.t_tls = h->t_connect;
    }
}

/* Whether a failed request may go again on another connection: the server provably did not
 * process it (RFC 9114 §4.1.1 H3_REQUEST_REJECTED; §5.2: a stream at or above the GOAWAY id,
 * also when the connection closed before the stream's first byte; RFC 9000 §20.1: the server
 * closed the connection with CONNECTION_REFUSED, as one shutting down does after the
 * handshake), or a pooled connection had ended before any answer and the request is
 * idempotent. The caller retries once (refusals: up to HC_H3_MAX_REFUSED in a row), and never a
 * body already given (used). */
static bool may_retry(const vega_http_client_response *r, const struct hc_req *rq, bool reused,
                      int rc)
{
    if (r->any_byte && rc != VEGA_ERR_H3_GOAWAY)
        return false;
    if (rc == VEGA_ERR_H3_GOAWAY)
        return true;
    if (rc == VEGA_ERR_QUIC_EP_RESET && r->h3_reset_code == VEGA_H3_REQUEST_REJECTED)
        return true;
    if (rc != VEGA_ERR_QUIC_EP_CLOSED)
        return false;
    /* The connection is over: no event changes these any more. */
    const struct hc_h3 *h = r->h3;
    if (h->werr.kind == VEGA_HTTP_CLIENT_WIRE_QUIC && !h->werr.local &&
        h->werr.code == VEGA_QUIC_CONNECTION_REFUSED)
        return true;
    if (h->goaway && r->h3_id >= h->goaway_id) /* UINT64_MAX: no stream was opened */
        return true;
    return reused && rq->idempotent;
}

int vega__hc_attempt_h3(vega_http_client *c, const struct hc_req *rq, struct hc_h3 *h, bool reused,
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
        vega__hc_h3_release(h);
        return rc;
    }
    r->h3 = h; /* r now holds the request's reference and its count in h->active */
    r->dl = dl;
    r->info.t_start = start;
    r->is_head = strcmp(rq->method, "HEAD") == 0;
    strcpy(r->method, rq->method);
    note_conn(r, h, reused);
    /* RFC 9220 §3: a WebSocket's stream stays open for its bytes */
    struct hc_mux_pseudo p;
    vega__hc_mux_pseudo(rq, rq->ws_h3, &p);
    vega_h3_request hr = {
        .method = p.method,
        .scheme = {"https", 5}, /* RFC 9114 §3.1: HTTP/3 is for "https" URIs */
        .authority = p.authority,
        .path = p.path,
        .protocol = p.protocol,
    };
    struct h3_head hh = {0};
    rc = head_fields(c, rq, &hh);
    if (rc == 0) {
        /* an extended CONNECT may not go at all (the server's SETTINGS): traced once sent */
        if (!rq->ws_h3)
            trace_head(r, &hr, &hh);
        rc = open_and_head(r, &hr, &hh, !rq->has_body && !rq->ws_h3, dl);
        if (rc == 0 && rq->ws_h3)
            trace_head(r, &hr, &hh);
    }
    vega__mem_free(c->o.mem, hh.f);
    vega__mem_free(c->o.mem, hh.names);
    if (rc == 0 && rq->has_body && !rq->ws_h3) {
        rc = send_body(r, rq, used, dl);
        if (rc == 1)
            rc = 0; /* stopped by the server: its answer says why */
    }
    if (rc == 0) {
        r->info.t_sent = vega_now();
        rc = vega__hc_h3_read_head(r, dl);
    }
    if (rc == 0 && req->decompress)
        rc = vega__hc_set_decoder(r);
    if (rc < 0) {
        *retry = may_retry(r, rq, reused, rc);
        if (werr)
            *werr = r->werr.kind ? r->werr : h->werr;
        vega_http_client_response_free(r);
        return rc;
    }
    *out = r;
    return 0;
}
