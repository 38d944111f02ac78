/* SPDX-License-Identifier: MIT */
/* An HTTP/3 response read by its request's task: the stream's bytes peeked in QUIC's receive
 * buffer and fed to the HTTP/3 core no faster than the reader has room, so DATA lands straight
 * in the caller's buffer (RFC 9114 §4.1, §7.2.1); stream errors answered with RESET_STREAM and
 * STOP_SENDING (§4.1.2, §8.1); the stream cancelled when the response is dropped early (§4.1.1,
 * H3_REQUEST_CANCELLED). */
#include <errno.h>
#include <string.h>

#include "client_int.h"

/* A malformed response or a callback's failure: the stream is answered once with the code
 * (RFC 9114 §4.1.2: "treat as a stream error of type H3_MESSAGE_ERROR"). Lock held. */
static int stream_failed(struct hc_h3 *h, vega_http_client_response *r)
{
    uint64_t code = r->h3_stream_err ? r->h3_stream_err : VEGA_H3_INTERNAL_ERROR;
    if (!r->h3_err_acted) {
        r->h3_err_acted = true;
        if (h->qc) {
            (void)vega_quic_stream_stop(h->qc, r->h3_id, code);
            (void)vega_quic_stream_reset(h->qc, r->h3_id, code);
        }
        (void)vega_h3_conn_close_stream(h->h3, r->h3_id);
        r->werr.kind = VEGA_HTTP_CLIENT_WIRE_STREAM;
        r->werr.local = true;
        r->werr.code = code;
        r->werr.reason[0] = '\0';
    }
    return r->cb_err && r->cb_err != VEGA_ERR_PROTO ? r->cb_err : VEGA_ERR_PROTO;
}

/* The bytes of r's stream not fed yet: in QUIC's receive buffer, or in the tail kept when the
 * connection ended (h3_kept). Returns 0, or < 0 when the stream was reset. */
static int peek(struct hc_h3 *h, vega_http_client_response *r, const uint8_t **d, size_t *len,
                bool *fin)
{
    if (!r->h3_kept)
        return vega_quic_stream_peek(h->qc, r->h3_id, d, len, fin);
    *d = r->h3_tail + r->h3_tail_pos;
    *len = r->h3_tail_len - r->h3_tail_pos;
    *fin = r->h3_tail_fin;
    return 0;
}

static void consume(struct hc_h3 *h, vega_http_client_response *r, size_t n)
{
    if (r->h3_kept)
        r->h3_tail_pos += n;
    else
        (void)vega_quic_stream_consume(h->qc, r->h3_id, n);
}

/* Feeds r's stream to the core while the reader has room (h3_dst) and bytes wait, until the
 * head (want_head) or the end. *moved: some input was taken. Lock held (h->qc set), or for a
 * kept tail h->kept_mu (and the lock while the connection is not torn down: h->qc set). */
static int feed(struct hc_h3 *h, vega_http_client_response *r, bool want_head, bool *moved)
{
    *moved = false;
    while (!r->h3_stream_err && !r->cb_err && !r->h3_blocked && !r->h3_fin) {
        if (want_head && r->head_done)
            break;
        size_t room = vega__room(r->h3_dst_len, r->h3_dst_cap);
        if (room == 0)
            break;
        const uint8_t *d;
        size_t len;
        bool fin;
        int rc = peek(h, r, &d, &len, &fin);
        if (rc < 0) {
            /* Reset by the server (VEGA_ERR_PROTO), or reset and gone already (-EINVAL: our
             * side had ended too): the event with the code comes at the unlock. */
            return VEGA_ERR_QUIC_EP_RESET;
        }
        if (len == 0 && !fin)
            break;
        /* The core may give on_data at most what it is given: never more than the room. */
        size_t n = len < room ? len : room;
        bool f = fin && n == len;
        if (!r->info.t_first_byte)
            r->info.t_first_byte = vega_now();
        h->feeding = r;
        vega_ssize used = vega_h3_conn_read_stream(h->h3, r->h3_id, d, n, f);
        h->feeding = NULL;
        if (used < 0) {
            vega__hc_h3_core_failed(h, used);
            return h->err;
        }
        consume(h, r, (size_t)used);
        if (used > 0 || f)
            *moved = true;
        if ((size_t)used < n) {
            r->h3_blocked = true; /* QPACK: on_stream_unblocked wakes us */
            break;
        }
        if (f)
            r->h3_fin = true;
    }
    if (r->h3_stream_err || r->cb_err)
        return stream_failed(h, r);
    return 0;
}

/* The error of a request that cannot go on, after the unlock (the events are in). */
static int failed(vega_http_client_response *r, int rc)
{
    struct hc_h3 *h = r->h3;
    if (rc == VEGA_ERR_QUIC_EP_RESET && !r->h3_reset) /* the stream went without a reset */
        rc = h->dead && h->err ? h->err : VEGA_ERR_PROTO;
    if (rc == VEGA_ERR_QUIC_EP_RESET) {
        r->werr.kind = VEGA_HTTP_CLIENT_WIRE_STREAM;
        r->werr.local = false;
        r->werr.code = r->h3_reset_code;
        r->werr.reason[0] = '\0';
    } else if (r->werr.kind == VEGA_HTTP_CLIENT_WIRE_NONE && h->werr.kind) {
        r->werr = h->werr;
    }
    return rc;
}

/* What keeps r from going on, with the lock held and nothing fed: 0 when it may wait. */
static int blocked_by(struct hc_h3 *h, vega_http_client_response *r)
{
    if (r->h3_reset)
        return VEGA_ERR_QUIC_EP_RESET;
    /* RFC 9114 §5.2: a stream at or above the GOAWAY id will not be answered. */
    if (h->goaway && r->h3_id >= h->goaway_id && !r->any_byte)
        return VEGA_ERR_H3_GOAWAY;
    if (h->dead)
        return h->err ? h->err : VEGA_ERR_QUIC_EP_CLOSED;
    return 0;
}

void vega__hc_h3_keep_tails(struct hc_h3 *h)
{
    const vega_mem *m = h->c->o.mem;
    for (vega_http_client_response *r = h->reqs; r; r = r->h3_next) {
        if (r->h3_kept || r->h3_fin || r->h3_reset)
            continue;
        /* what waits in QUIC's buffer, piece by piece (its ring), bounded by the stream's
         * receive window */
        for (;;) {
            const uint8_t *d;
            size_t len;
            bool fin;
            if (vega_quic_stream_peek(h->qc, r->h3_id, &d, &len, &fin) < 0)
                break; /* reset: the event says so */
            if (!vega__fits(r->h3_tail_len, len, SIZE_MAX / 2))
                break; /* (the receive window bounds it far below) */
            if (!vega__fits(r->h3_tail_len, len, r->h3_tail_cap)) {
                size_t cap = r->h3_tail_cap ? r->h3_tail_cap : 4096;
                while (cap < r->h3_tail_len + len)
                    cap *= 2;
                uint8_t *p = vega__mem_realloc(m, r->h3_tail, cap);
                if (!p)
                    break; /* the rest is lost: the read ends with the close's error */
                r->h3_tail = p;
                r->h3_tail_cap = cap;
            }
            if (len)
                memcpy(r->h3_tail + r->h3_tail_len, d, len);
            r->h3_tail_len += len;
            (void)vega_quic_stream_consume(h->qc, r->h3_id, len);
            if (fin)
                r->h3_tail_fin = true;
            if (len == 0 || fin)
                break;
        }
        r->h3_kept = true;
    }
}

/* One feed of r's stream into dst (cap bytes): got receives the bytes landed, moved whether
 * anything was consumed; a stream that could not move says why (blocked_by). h->qc is set by
 * the caller. */
static int feed_into(struct hc_h3 *h, vega_http_client_response *r, uint8_t *dst, size_t cap,
                     bool want_head, bool *moved, size_t *got)
{
    r->h3_dst = dst;
    r->h3_dst_len = 0;
    r->h3_dst_cap = cap;
    int rc = feed(h, r, want_head, moved);
    *got = r->h3_dst_len;
    r->h3_dst = NULL;
    if (*moved)
        r->any_byte = true;
    if (rc == 0 && !*moved && !r->msg_done && !(want_head && r->head_done))
        rc = blocked_by(h, r);
    return rc;
}

/* Reads r's kept tail (the connection ended) as pump reads its stream, with no waiting: every
 * byte there is decoded and delivered, then the end, or the error that cut the response short.
 * qc: the connection, locked, when it is not torn down yet (NULL after). */
static vega_ssize pump_kept(vega_http_client_response *r, vega_quic_conn *qc, uint8_t *dst,
                            size_t cap, bool want_head)
{
    struct hc_h3 *h = r->h3;
    for (;;) {
        pthread_mutex_lock(&h->kept_mu);
        vega_quic_conn *saved = h->qc;
        h->qc = qc;
        bool moved;
        size_t got;
        int rc = feed_into(h, r, dst, cap, want_head, &moved, &got);
        h->qc = saved;
        pthread_mutex_unlock(&h->kept_mu);
        if (got > 0)
            return (vega_ssize)got;
        if (rc < 0)
            return failed(r, rc);
        if (r->msg_done || (want_head && r->head_done))
            return 0;
        if (!moved) /* nothing left, no end: only the close's error (blocked_by gave it) */
            return failed(r, h->err ? h->err : VEGA_ERR_QUIC_EP_CLOSED);
    }
}

/* Reads r's stream into dst (cap bytes) until something landed there, the head arrived
 * (want_head) or the end; waits for the stream to move while nothing did. Returns the bytes
 * landed, or a code. */
static vega_ssize pump(vega_http_client_response *r, uint8_t *dst, size_t cap, bool want_head,
                       vega_deadline dl)
{
    struct hc_h3 *h = r->h3;
    for (;;) {
        vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
        if (r->h3_kept) {
            /* kept by the lock holder that saw the end, before the teardown: seen once the
             * lock was taken (also when it then said the connection is gone) */
            vega_ssize n = pump_kept(r, qc, dst, cap, want_head);
            if (qc)
                vega_quic_ep_conn_unlock(h->qe);
            return n;
        }
        if (!qc)
            return failed(r, h->dead && h->err ? h->err : VEGA_ERR_QUIC_EP_CLOSED);
        h->qc = qc;
        bool moved;
        size_t got;
        int rc = feed_into(h, r, dst, cap, want_head, &moved, &got);
        if (want_head) { /* what the handshake settled since the request went (0-RTT) */
            r->info.tls_suite = h->suite;
            r->info.tls_resumed = h->resumed;
            r->info.early_data = h->early;
            r->info.quic_version = h->quic_version;
        }
        if (h->c->o.quic_migrate) {
            vega_quic_path p;
            vega_quic_conn_get_path(qc, &p);
            memcpy(&r->info.quic_local.ss, &p.local, p.local_len);
            r->info.quic_local.len = p.local_len;
            r->info.quic_migration = h->migration;
            r->info.quic_migration_err = h->migration_err;
        }
        vega__hc_h3_flush_uni(h);
        h->qc = NULL;
        vega_quic_ep_conn_unlock(h->qe);
        if (got > 0)
            return (vega_ssize)got; /* an error, if any, comes with the next call */
        if (rc < 0)
            return failed(r, rc);
        if (r->msg_done || (want_head && r->head_done))
            return 0;
        if (moved)
            continue; /* frame bytes went in, no content yet: look again before waiting */
        rc = vega_notify_wait(&r->h3_wake, hc_dl_min(dl, r->dl));
        if (rc < 0)
            return rc;
    }
}

int vega__hc_h3_read_head(vega_http_client_response *r, vega_deadline dl)
{
    while (!r->head_done) {
        /* DATA that follows the head in the same input lands in the body queue. */
        size_t room = vega__room(r->blen, sizeof r->bq);
        if (room == 0)
            return VEGA_ERR_INTERNAL; /* DATA before a final head: the core refuses it */
        vega_ssize n = pump(r, r->bq + r->blen, room, true, dl);
        if (n < 0)
            return (int)n;
        r->blen += (size_t)n;
        if (r->msg_done && !r->head_done)
            return VEGA_ERR_PROTO;
    }
    return 0;
}

vega_ssize vega__hc_h3_read(vega_http_client_response *r, uint8_t *buf, size_t len,
                            vega_deadline dl)
{
    if (r->bpos < r->blen)
        return vega__hc_take_queued(r, buf, len);
    for (;;) {
        if (r->msg_done)
            return 0;
        vega_ssize n = pump(r, buf, len, false, dl);
        if (n != 0)
            return n < 0 ? n : vega__hc_deliver(r, n);
    }
}

int vega__hc_h3_next_body(vega_http_client_response *r, vega_deadline dl)
{
    while (r->bpos == r->blen) {
        if (r->msg_done)
            return 0;
        r->bpos = r->blen = 0;
        vega_ssize n = pump(r, r->bq, sizeof r->bq, false, dl);
        if (n < 0)
            return (int)n;
        r->blen = (size_t)n;
    }
    return 1;
}

void vega__hc_h3_response_done(vega_http_client_response *r)
{
    struct hc_h3 *h = r->h3;
    vega_http_client *c = h->c;
    vega_quic_conn *qc = vega_quic_ep_conn_lock(h->qe);
    if (qc) {
        h->qc = qc;
        for (vega_http_client_response **pp = &h->reqs; *pp; pp = &(*pp)->h3_next)
            if (*pp == r) {
                *pp = r->h3_next;
                break;
            }
        if (r->h3_listed && !h->dead && !r->h3_err_acted) {
            /* RFC 9114 §4.1.1: a response we no longer want is cancelled with
             * H3_REQUEST_CANCELLED on both sides; a finished one needs nothing. */
            if (!r->h3_fin)
                (void)vega_quic_stream_stop(qc, r->h3_id, VEGA_H3_REQUEST_CANCELLED);
            if (!r->h3_sent_fin && !r->h3_stopped)
                (void)vega_quic_stream_reset(qc, r->h3_id, VEGA_H3_REQUEST_CANCELLED);
            if (!r->msg_done)
                (void)vega_h3_conn_close_stream(h->h3, r->h3_id);
        }
        r->h3_listed = false;
        vega__hc_h3_flush_uni(h);
        h->qc = NULL;
        vega_quic_ep_conn_unlock(h->qe);
    }
    pthread_mutex_lock(&c->mu);
    if (!qc) {
        /* The connection is gone: no lock holder or callback walks h->reqs any more, only
         * other responses going the same way, which the client's mutex orders. */
        for (vega_http_client_response **pp = &h->reqs; *pp; pp = &(*pp)->h3_next)
            if (*pp == r) {
                *pp = r->h3_next;
                break;
            }
    }
    if (h->mux.active)
        h->mux.active--;
    h->mux.idle_since = vega_now();
    pthread_mutex_unlock(&c->mu);
    vega__mem_free(c->o.mem, r->h3_tail);
    r->h3_tail = NULL;
    r->h3 = NULL;
    vega__hc_h3_release(h);
}
