/* SPDX-License-Identifier: MIT */
/* What an HTTP/3 connection does with the QUIC connection locked: the endpoint's events (peer
 * streams, room, resets, stream credit, tickets, the end), our unidirectional streams' bytes,
 * the peer's control and QPACK streams fed to the HTTP/3 core (RFC 9114 §6.2, RFC 9204 §4.2),
 * and the core's callbacks turned into response state (heads, interim responses skipped,
 * trailers, DATA into the reader's buffer, §4.1), with connection errors closing it (§8). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"

/* Client-initiated bidirectional, server-initiated unidirectional (RFC 9000 §2.1). */
#define IS_REQUEST(id)  (((id)&3) == 0)
#define IS_PEER_UNI(id) (((id)&3) == 3)
#define IS_OUR_UNI(id)  (((id)&3) == 2)

vega_http_client_response *vega__hc_h3_find(struct hc_h3 *h, uint64_t id)
{
    if (h->feeding && h->feeding->h3_id == id)
        return h->feeding;
    for (vega_http_client_response *r = h->reqs; r; r = r->h3_next)
        if (r->h3_id == id)
            return r;
    return NULL;
}

/* Wakes r's task and, for a WebSocket's tunnel (RFC 9220: one task reads while another
 * writes), its writer, which waits on h2_wwake so that a wake meant for the reader is never
 * taken by the writer (the writer's permit is harmless where nobody waits on it). */
static void wake(vega_http_client_response *r)
{
    vega_notify_one(&r->h3_wake);
    vega_notify_one(&r->h2_wwake);
}

static void wake_all(struct hc_h3 *h)
{
    for (vega_http_client_response *r = h->reqs; r; r = r->h3_next)
        wake(r);
}

void vega__hc_h3_kill(struct hc_h3 *h, int err)
{
    if (!h->dead) {
        h->dead = true;
        h->err = err;
    }
    atomic_store(&h->mux.usable, false);
    wake_all(h);
}

void vega__hc_h3_conn_error(struct hc_h3 *h, uint64_t code, const char *reason)
{
    if (h->dead)
        return;
    if (h->qc)
        (void)vega_quic_conn_close(h->qc, VEGA_QUIC_CLOSE_APPLICATION, code, reason);
    h->werr.kind = VEGA_HTTP_CLIENT_WIRE_H3;
    h->werr.local = true;
    h->werr.code = code;
    snprintf(h->werr.reason, sizeof h->werr.reason, "%s", reason ? reason : "");
    vega__hc_h3_kill(h, VEGA_ERR_PROTO);
}

void vega__hc_h3_core_failed(struct hc_h3 *h, vega_ssize rc)
{
    const char *reason = NULL;
    uint64_t code = vega_h3_conn_get_error(h->h3, &reason);
    if (rc != VEGA_ERR_PROTO || code == 0)
        code = VEGA_H3_INTERNAL_ERROR;
    vega__hc_h3_conn_error(h, code, reason ? reason : "HTTP/3 connection error");
    if (rc == -ENOMEM)
        h->err = -ENOMEM;
}

/* ---- our unidirectional streams ------------------------------------------------------------- */

static int buf_append(const vega_mem *m, struct hc_buf *b, const uint8_t *p, size_t n)
{
    if (!vega__fits(b->len, n, b->cap)) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *nb = vega__mem_realloc(m, b->p, cap);
        if (!nb)
            return -ENOMEM;
        b->p = nb;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* Writes what waits for stream i; returns false when some still waits (or on an error). */
static bool pend_flush(struct hc_h3 *h, int i)
{
    struct hc_buf *b = &h->pend[i];
    if (!b->len)
        return true;
    vega_ssize w = vega_quic_stream_write(h->qc, h->uni[i], b->p, b->len, false);
    if (w < 0) {
        /* RFC 9114 §6.2.1: our critical streams may not close (STOP_SENDING did it). */
        vega__hc_h3_conn_error(h, VEGA_H3_CLOSED_CRITICAL_STREAM, "critical stream stopped");
        return false;
    }
    memmove(b->p, b->p + w, b->len - (size_t)w);
    b->len -= (size_t)w;
    return b->len == 0;
}

void vega__hc_h3_flush_uni(struct hc_h3 *h)
{
    if (!h->h3 || !h->qc || h->dead)
        return;
    for (int i = 0; i < 3; i++)
        (void)pend_flush(h, i);
    for (;;) {
        uint8_t buf[HC_H3_UNI_CHUNK];
        uint64_t sid;
        vega_ssize n = vega_h3_conn_write_uni(h->h3, &sid, buf, sizeof buf);
        if (n <= 0 || h->dead)
            break;
        int i = sid == h->uni[0] ? 0 : sid == h->uni[1] ? 1 : 2;
        size_t off = 0;
        if (!h->pend[i].len) {
            vega_ssize w = vega_quic_stream_write(h->qc, sid, buf, (size_t)n, false);
            if (w < 0) {
                vega__hc_h3_conn_error(h, VEGA_H3_CLOSED_CRITICAL_STREAM,
                                       "critical stream stopped");
                return;
            }
            off = (size_t)w;
        }
        if (off < (size_t)n &&
            buf_append(h->c->o.mem, &h->pend[i], buf + off, (size_t)n - off) < 0) {
            vega__hc_h3_conn_error(h, VEGA_H3_INTERNAL_ERROR, "out of memory");
            return;
        }
    }
}

/* ---- the peer's unidirectional streams --------------------------------------------------------
 */

void vega__hc_h3_drain_uni(struct hc_h3 *h, uint64_t id)
{
    while (!h->dead) {
        const uint8_t *d;
        size_t len;
        bool fin;
        int rc = vega_quic_stream_peek(h->qc, id, &d, &len, &fin);
        if (rc < 0) {
            /* Reset by the peer: a critical stream may not close (the core says so). */
            vega_ssize cr = vega_h3_conn_close_stream(h->h3, id);
            if (cr < 0)
                vega__hc_h3_core_failed(h, cr);
            return;
        }
        if (len == 0 && !fin)
            return;
        vega_ssize used = vega_h3_conn_read_stream(h->h3, id, d, len, fin);
        if (used < 0) {
            vega__hc_h3_core_failed(h, used);
            return;
        }
        (void)vega_quic_stream_consume(h->qc, id, (size_t)used);
        if ((size_t)used < len || fin)
            return;
    }
}

/* ---- QUIC events --------------------------------------------------------------------------------
 */

static void on_reset(struct hc_h3 *h, const vega_quic_event *ev)
{
    vega_http_client_response *r =
        IS_REQUEST(ev->stream_id) ? vega__hc_h3_find(h, ev->stream_id) : NULL;
    if (r) {
        r->h3_reset = true;
        r->h3_reset_code = ev->error_code;
        wake(r);
        return;
    }
    /* A stream nobody reads any more, or a peer unidirectional one (critical ones may not
     * close: the core answers VEGA_ERR_PROTO, H3_CLOSED_CRITICAL_STREAM). */
    int rc = vega_h3_conn_close_stream(h->h3, ev->stream_id);
    if (rc < 0)
        vega__hc_h3_core_failed(h, rc);
}

static void on_stop(struct hc_h3 *h, const vega_quic_event *ev)
{
    if (IS_OUR_UNI(ev->stream_id)) {
        vega__hc_h3_conn_error(h, VEGA_H3_CLOSED_CRITICAL_STREAM, "critical stream stopped");
        return;
    }
    vega_http_client_response *r = vega__hc_h3_find(h, ev->stream_id);
    if (r) {
        /* RFC 9114 §4.1: the server needs no more of the body (it may have answered). */
        r->h3_stopped = true;
        r->h3_stop_code = ev->error_code;
        wake(r);
    }
}

static void on_closed_ev(struct hc_h3 *h, const vega_quic_event *ev)
{
    if (!h->dead) {
        h->werr.kind = ev->app ? VEGA_HTTP_CLIENT_WIRE_H3 : VEGA_HTTP_CLIENT_WIRE_QUIC;
        h->werr.local = ev->local;
        h->werr.code = ev->error_code;
        size_t n = 0;
        for (size_t i = 0; i < ev->len && n + 1 < sizeof h->werr.reason; i++) {
            uint8_t b = ev->data[i];
            h->werr.reason[n++] = (char)(b >= 0x20 && b < 0x7f ? b : '?');
        }
        h->werr.reason[n] = '\0';
        /* Not our own connection error: what the responses received stays theirs (a server
         * that closes gracefully after its answers did nothing wrong, RFC 9114 §5.2). */
        vega__hc_h3_keep_tails(h);
    }
    vega__hc_h3_kill(h, VEGA_ERR_QUIC_EP_CLOSED);
}

/* Data for a request stream: wake its reader; nobody's (cancelled): drop it. */
static void on_readable(struct hc_h3 *h, uint64_t id)
{
    if (IS_PEER_UNI(id)) {
        vega__hc_h3_drain_uni(h, id);
        return;
    }
    vega_http_client_response *r = IS_REQUEST(id) ? vega__hc_h3_find(h, id) : NULL;
    if (r) {
        wake(r);
        return;
    }
    const uint8_t *d;
    size_t len;
    bool fin;
    if (vega_quic_stream_peek(h->qc, id, &d, &len, &fin) == 0 && (len || fin))
        (void)vega_quic_stream_consume(h->qc, id, len);
}

/* opts.quic_key_update: one key update, started at the first event after the handshake is
 * confirmed (the core refuses one before, and one while the last is unacknowledged). */
static void maybe_key_update(struct hc_h3 *h, vega_quic_conn *qc)
{
    vega_quic_conn_info qi;
    vega_quic_conn_get_info(qc, &qi);
    if (qi.handshake_confirmed && vega_quic_conn_key_update(qc) == 0)
        h->key_updated = true;
}

/* opts.quic_migrate: one migration to a new local port, at the first event after the delay
 * once the handshake is confirmed; a missing spare connection ID of the server's (VEGA_ERR_FULL)
 * is waited for, any other refusal ends the attempt. */
static void maybe_migrate(struct hc_h3 *h, vega_quic_ep_conn *qe, vega_quic_conn *qc)
{
    vega_quic_conn_info qi;
    vega_quic_conn_get_info(qc, &qi);
    if (!qi.handshake_confirmed || !h->t_hs || vega_now() < h->t_hs + h->c->o.quic_migrate_after_ns)
        return;
    int rc = vega_quic_ep_conn_migrate(qe, NULL);
    if (rc == 0) {
        h->migration = 1;
    } else if (rc != VEGA_ERR_FULL) {
        h->migration = -2;
        h->migration_err = rc;
    }
}

void vega__hc_h3_on_event(void *user, vega_quic_ep_conn *qe, vega_quic_conn *qc,
                          const vega_quic_event *ev)
{
    struct hc_h3 *h = user;
    if (!h)
        return; /* a raced attempt that lost, or a connection the pool let go */
    vega_quic_conn *saved = h->qc;
    h->qc = qc;
    switch (ev->type) {
    case VEGA_QUIC_EV_STREAM_OPENED:
        /* RFC 9114 §6.1: a server-initiated bidirectional stream is a connection error. */
        if ((ev->stream_id & 3) == 1)
            vega__hc_h3_conn_error(h, VEGA_H3_STREAM_CREATION_ERROR,
                                   "server-initiated bidirectional stream");
        break;
    case VEGA_QUIC_EV_STREAM_READABLE:
        on_readable(h, ev->stream_id);
        break;
    case VEGA_QUIC_EV_STREAM_WRITABLE:
        if (IS_OUR_UNI(ev->stream_id)) {
            vega__hc_h3_flush_uni(h);
        } else {
            vega_http_client_response *r = vega__hc_h3_find(h, ev->stream_id);
            if (r)
                wake(r);
        }
        break;
    case VEGA_QUIC_EV_STREAM_RESET:
        on_reset(h, ev);
        break;
    case VEGA_QUIC_EV_STREAM_STOP:
        on_stop(h, ev);
        break;
    case VEGA_QUIC_EV_STREAMS_AVAILABLE:
        wake_all(h);
        break;
    case VEGA_QUIC_EV_SESSION:
    case VEGA_QUIC_EV_NEW_TOKEN:
        vega__hc_sess_put(h->c, h->sni, h->dst_port, ev->type == VEGA_QUIC_EV_NEW_TOKEN, ev->data,
                          ev->len);
        break;
    case VEGA_QUIC_EV_HANDSHAKE_DONE:
    case VEGA_QUIC_EV_EARLY_REJECTED: {
        if (ev->type == VEGA_QUIC_EV_HANDSHAKE_DONE && !h->t_hs)
            h->t_hs = vega_now();
        vega_quic_conn_info qi;
        vega_quic_conn_get_info(qc, &qi);
        h->early = qi.early_data;
        h->resumed = qi.resumed;
        h->suite = qi.suite;
        h->quic_version = qi.version;
        wake_all(h);
        break;
    }
    case VEGA_QUIC_EV_PATH_CHANGED:
        if (h->migration == 1)
            h->migration = ev->error_code ? 2 : -1;
        break;
    case VEGA_QUIC_EV_CLOSED:
        on_closed_ev(h, ev);
        break;
    default:
        break;
    }
    if (h->c->o.quic_key_update && !h->key_updated && !h->dead)
        maybe_key_update(h, qc);
    if (h->c->o.quic_migrate && h->migration == 0 && !h->dead && qe)
        maybe_migrate(h, qe, qc);
    vega__hc_h3_flush_uni(h);
    h->qc = saved;
}

void vega__hc_h3_on_closed(void *user, vega_quic_ep_conn *qe)
{
    (void)qe;
    struct hc_h3 *h = user;
    if (h)
        vega__hc_h3_kill(h, VEGA_ERR_QUIC_EP_CLOSED);
}

/* ---- the HTTP/3 core's callbacks ------------------------------------------------------------- */

/* A stream error of ours to act on after the read (RFC 9114 §4.1.2: malformed). */
static void stream_error(vega_http_client_response *r, uint64_t code)
{
    if (!r->h3_stream_err)
        r->h3_stream_err = code;
}

static int head_fields(vega_http_client_response *r, vega_http_fields *dst, const vega_h3_head *hd)
{
    for (size_t i = 0; i < hd->nfields; i++) {
        const vega_http_field *f = &hd->fields[i];
        if (vega__hc_trace_add(r, f->name.ptr, f->name.len, f->value.ptr, f->value.len, ": ") < 0)
            return -ENOMEM;
        if (!dst)
            continue;
        const char *n = vega__hc_arena_copy(r, f->name.ptr, f->name.len);
        const char *v = vega__hc_arena_copy(r, f->value.ptr ? f->value.ptr : "", f->value.len);
        if (!n || !v)
            return -ENOMEM;
        int rc = vega_http_fields_add(dst, n, f->name.len, v, f->value.len);
        if (rc < 0)
            return rc == -E2BIG || rc == -EMSGSIZE ? VEGA_ERR_PROTO : rc;
    }
    return 0;
}

static int on_headers(void *ud, uint64_t sid, const vega_h3_head *hd)
{
    struct hc_h3 *h = ud;
    vega_http_client_response *r = vega__hc_h3_find(h, sid);
    if (!r || r->h3_stream_err)
        return 0;
    char line[32];
    int rc = 0;
    if (hd->kind == VEGA_H3_HEAD_TRAILERS) {
        rc = head_fields(r, &r->trailers, hd);
    } else {
        bool interim = hd->kind == VEGA_H3_HEAD_INFORMATIONAL;
        if (interim && ++r->interim > HC_MAX_INTERIM) {
            stream_error(r, VEGA_H3_EXCESSIVE_LOAD);
            r->cb_err = VEGA_ERR_PROTO;
            return 0;
        }
        if (interim && hd->status == 100)
            r->got_100 = true;
        int n = snprintf(line, sizeof line, "HTTP/3 %03d", hd->status);
        rc = vega__hc_trace_add(r, line, (size_t)n, "", 0, "");
        if (rc == 0)
            rc = head_fields(r, interim ? NULL : &r->fields, hd);
        if (rc == 0 && !interim) {
            const char *reason = vega_http_status_reason(hd->status);
            r->info.status = hd->status;
            r->info.reason = (vega_http_str){reason, strlen(reason)};
            r->h3_has_cl = hd->has_content_length;
            r->info.content_length =
                hd->has_content_length ? hd->content_length : VEGA_HTTP_LENGTH_UNKNOWN;
            r->head_done = true;
        }
    }
    vega__hc_trace_flush(r);
    if (rc < 0) {
        r->cb_err = rc;
        stream_error(r, rc == VEGA_ERR_PROTO ? VEGA_H3_EXCESSIVE_LOAD : VEGA_H3_INTERNAL_ERROR);
    }
    wake(r);
    return 0;
}

static int on_data(void *ud, uint64_t sid, const uint8_t *data, size_t len)
{
    struct hc_h3 *h = ud;
    vega_http_client_response *r = vega__hc_h3_find(h, sid);
    if (!r || r->h3_stream_err)
        return 0;
    /* RFC 9114 §4.1.2: DATA beyond the content-length makes the response malformed. */
    if (r->h3_has_cl && r->h3_raw + (uint64_t)len > r->info.content_length) {
        stream_error(r, VEGA_H3_MESSAGE_ERROR);
        return 0;
    }
    r->h3_raw += len;
    /* A feed never gives the core more input than the reader's room. */
    if (!r->h3_dst || !vega__fits(r->h3_dst_len, len, r->h3_dst_cap))
        return 1;
    memcpy(r->h3_dst + r->h3_dst_len, data, len);
    r->h3_dst_len += len;
    return 0;
}

static int on_end_stream(void *ud, uint64_t sid)
{
    struct hc_h3 *h = ud;
    vega_http_client_response *r = vega__hc_h3_find(h, sid);
    if (!r)
        return 0;
    /* §4.1.2: fewer DATA bytes than the content-length is malformed too (HEAD, 204 and 304
     * carry the length of a body they do not have, RFC 9110 §8.6). */
    bool no_body =
        r->is_head || r->info.status == 204 || r->info.status == 304 || r->info.status < 200;
    if (r->h3_has_cl && !no_body && r->h3_raw != r->info.content_length) {
        stream_error(r, VEGA_H3_MESSAGE_ERROR);
        return 0;
    }
    if (!r->head_done) {
        stream_error(r, VEGA_H3_MESSAGE_ERROR); /* a stream that ended without a final head */
        return 0;
    }
    r->msg_done = true;
    r->info.t_done = vega_now();
    wake(r);
    return 0;
}

static int on_stream_error(void *ud, uint64_t sid, uint64_t code)
{
    vega_http_client_response *r = vega__hc_h3_find(ud, sid);
    if (r) {
        stream_error(r, code);
        wake(r);
    }
    return 0;
}

static int on_stream_unblocked(void *ud, uint64_t sid)
{
    vega_http_client_response *r = vega__hc_h3_find(ud, sid);
    if (r) {
        r->h3_blocked = false;
        wake(r);
    }
    return 0;
}

static int on_goaway(void *ud, uint64_t id)
{
    struct hc_h3 *h = ud;
    /* RFC 9114 §5.2: requests on streams at or above id were not processed and may be sent
     * again elsewhere; no new ones go on this connection. */
    if (!h->goaway || id < h->goaway_id)
        h->goaway_id = id;
    h->goaway = true;
    atomic_store(&h->mux.usable, false);
    wake_all(h);
    return 0;
}

static int on_stop_sending(void *ud, uint64_t sid, uint64_t code)
{
    struct hc_h3 *h = ud;
    if (h->qc)
        (void)vega_quic_stream_stop(h->qc, sid, code);
    return 0;
}

/* RFC 9220 §3: an extended CONNECT waits for the server's SETTINGS (open_and_head). */
static int on_settings(void *ud, const vega_h3_settings *peer)
{
    (void)peer;
    wake_all(ud);
    return 0;
}

const vega_h3_callbacks vega__hc_h3_callbacks = {
    .on_headers = on_headers,
    .on_data = on_data,
    .on_end_stream = on_end_stream,
    .on_stream_error = on_stream_error,
    .on_stream_unblocked = on_stream_unblocked,
    .on_goaway = on_goaway,
    .on_stop_sending = on_stop_sending,
    .on_settings = on_settings,
};
