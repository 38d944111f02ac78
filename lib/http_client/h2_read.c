/* SPDX-License-Identifier: MIT */
/* HTTP/2 responses of the client: the core's callbacks (run by the connection's tasks with its
 * lock held) fill a request's head, trailers and body buffer and wake its task (RFC 9113 §8.1);
 * the request's task reads the buffer and gives the bytes back to flow control as it reads
 * (§6.9: WINDOW_UPDATE only for what the application took); a response dropped early resets its
 * stream with CANCEL (§8.1, §6.4) while the connection serves on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"

static vega_http_client_response *req_of(struct hc_h2 *h, int32_t id)
{
    return vega_h2_stream_get_user_data(h->core, id);
}

/* Slots may have opened (a stream closed, new SETTINGS): requests waiting for one look again. */
static void wake_slot_waiters(struct hc_h2 *h)
{
    for (vega_http_client_response *r = h->reqs; r; r = r->h2_next)
        if (r->h2_slot)
            vega__hc_h2_wake(r);
}

/* A stream error of ours for r's malformed response or a failure of ours (mu held). */
static void stream_fail(struct hc_h2 *h, vega_http_client_response *r, int err, uint32_t code)
{
    if (!r->h2_err)
        r->h2_err = err;
    if (!r->h2_closed)
        (void)vega_h2_submit_rst_stream(h->core, r->h2_id, code);
    if (r->werr.kind == VEGA_HTTP_CLIENT_WIRE_NONE) {
        r->werr.kind = VEGA_HTTP_CLIENT_WIRE_H2_STREAM;
        r->werr.local = true;
        r->werr.code = code;
    }
}

static int add_fields(vega_http_client_response *r, vega_http_fields *f, const vega_h2_head *hd,
                      bool keep)
{
    for (size_t i = 0; i < hd->nfields; i++) {
        const vega_hpack_field *x = &hd->fields[i];
        if (vega__hc_trace_add(r, x->name.ptr, x->name.len, x->value.ptr, x->value.len, ": ") < 0)
            return -ENOMEM;
        if (!keep)
            continue;
        const char *n = vega__hc_arena_copy(r, x->name.ptr, x->name.len);
        const char *v = vega__hc_arena_copy(r, x->value.ptr ? x->value.ptr : "", x->value.len);
        if (!n || !v)
            return -ENOMEM;
        int rc = vega_http_fields_add(f, n, x->name.len, v, x->value.len);
        if (rc < 0)
            return rc == -E2BIG || rc == -EMSGSIZE ? VEGA_ERR_PROTO : rc;
    }
    return 0;
}

static int on_headers(void *ud, int32_t id, const vega_h2_head *hd)
{
    struct hc_h2 *h = ud;
    vega_http_client_response *r = req_of(h, id);
    if (!r)
        return 0;
    int rc = 0;
    bool final = hd->kind == VEGA_H2_HEAD_RESPONSE;
    if (hd->kind == VEGA_H2_HEAD_INFORMATIONAL && ++r->interim > HC_MAX_INTERIM) {
        stream_fail(h, r, VEGA_ERR_PROTO, VEGA_H2_PROTOCOL_ERROR);
        return 0;
    }
    if (hd->kind != VEGA_H2_HEAD_TRAILERS) {
        /* "HTTP/2 200 ": curl's status line, with the empty reason's space */
        char st[8];
        int n = snprintf(st, sizeof st, "%03d ", hd->status);
        rc = vega__hc_trace_add(r, "HTTP/2", 6, st, (size_t)n, " ");
    }
    if (rc == 0 && final) {
        r->info.status = hd->status;
        r->info.version = VEGA_HTTP_CLIENT_V2;
        r->info.reason = (vega_http_str){"", 0};
        r->info.content_length =
            hd->content_length >= 0 ? (uint64_t)hd->content_length : VEGA_HTTP_LENGTH_UNKNOWN;
    }
    if (rc == 0)
        rc = add_fields(r, hd->kind == VEGA_H2_HEAD_TRAILERS ? &r->trailers : &r->fields, hd,
                        hd->kind != VEGA_H2_HEAD_INFORMATIONAL);
    vega__hc_trace_flush(r);
    if (rc < 0) {
        stream_fail(h, r, rc, rc == -ENOMEM ? VEGA_H2_INTERNAL_ERROR : VEGA_H2_PROTOCOL_ERROR);
    } else {
        if (final)
            r->head_done = true;
        if (hd->end_stream || hd->kind == VEGA_H2_HEAD_TRAILERS) {
            r->h2_end = true;
            r->info.t_done = vega_now();
        }
    }
    r->any_byte = true;
    if (!r->info.t_first_byte)
        r->info.t_first_byte = vega_now();
    vega__hc_h2_wake(r);
    return 0;
}

/* Room for n more bytes in r's body buffer: compacted, or grown (doubling, bounded). */
static int buf_room(struct hc_h2 *h, vega_http_client_response *r, size_t n)
{
    if (vega__fits(r->h2_off + r->h2_len, n, r->h2_cap))
        return 0;
    if (r->h2_off && vega__fits(r->h2_len, n, r->h2_cap)) {
        memmove(r->h2_buf, r->h2_buf + r->h2_off, r->h2_len);
        r->h2_off = 0;
        return 0;
    }
    if (!vega__fits(r->h2_len, n, HC_H2_BUF_MAX))
        return VEGA_ERR_PROTO; /* more than the window allows: the core never gives that */
    size_t cap = r->h2_cap ? r->h2_cap : 16384;
    while (cap < r->h2_len + n)
        cap *= 2;
    if (cap > HC_H2_BUF_MAX)
        cap = HC_H2_BUF_MAX;
    uint8_t *nb = vega__mem_malloc(h->c->o.mem, cap);
    if (!nb)
        return -ENOMEM;
    if (r->h2_len)
        memcpy(nb, r->h2_buf + r->h2_off, r->h2_len);
    vega__mem_free(h->c->o.mem, r->h2_buf);
    r->h2_buf = nb;
    r->h2_cap = cap;
    r->h2_off = 0;
    return 0;
}

static int on_data(void *ud, int32_t id, const uint8_t *data, size_t len, unsigned flags)
{
    struct hc_h2 *h = ud;
    vega_http_client_response *r = req_of(h, id);
    if (!r || r->h2_err) {
        /* nobody reads it (a response dropped whose reset found no memory, a failed one):
         * the windows stay open so the stream can end */
        (void)vega_h2_stream_consume(h->core, id, len);
        return 0;
    }
    if (len) {
        int rc = buf_room(h, r, len);
        if (rc < 0) {
            stream_fail(h, r, rc, VEGA_H2_INTERNAL_ERROR);
            return 0;
        }
        memcpy(r->h2_buf + r->h2_off + r->h2_len, data, len);
        r->h2_len += len;
        r->h3_raw += len;
    }
    if (flags & VEGA_H2_FLAG_END_STREAM) {
        r->h2_end = true;
        r->info.t_done = vega_now();
    }
    vega__hc_h2_wake(r);
    return 0;
}

static int on_stream_close(void *ud, int32_t id, uint32_t code, vega_h2_close how)
{
    struct hc_h2 *h = ud;
    vega_http_client_response *r = req_of(h, id);
    if (r) {
        r->h2_closed = true;
        r->h2_span = false;
        if (how == VEGA_H2_CLOSE_REFUSED || (how == VEGA_H2_CLOSE_RESET_BY_PEER &&
                                             code == VEGA_H2_REFUSED_STREAM && !r->any_byte)) {
            /* §8.7: not processed, safe to send again */
            r->h2_refused = true;
            if (!r->h2_err)
                r->h2_err = VEGA_ERR_H2_GOING_AWAY;
        } else if (how == VEGA_H2_CLOSE_RESET_BY_PEER && !r->h2_end) {
            /* §8.1: a reset with NO_ERROR after a whole response only stops our body */
            if (!r->h2_err)
                r->h2_err = -ECONNRESET;
            r->werr.kind = VEGA_HTTP_CLIENT_WIRE_H2_STREAM;
            r->werr.local = false;
            r->werr.code = code;
            r->werr.reason[0] = '\0';
        } else if (how == VEGA_H2_CLOSE_RESET_LOCAL && !r->h2_err && !r->h2_end) {
            /* the core's stream error for the server's malformed response */
            r->h2_err = VEGA_ERR_PROTO;
            r->werr.kind = VEGA_HTTP_CLIENT_WIRE_H2_STREAM;
            r->werr.local = true;
            r->werr.code = code;
            r->werr.reason[0] = '\0';
        } else if (how == VEGA_H2_CLOSE_CONNECTION && !r->h2_end && !r->h2_err) {
            r->h2_err = VEGA_ERR_PROTO;
        }
        vega__hc_h2_wake(r);
    }
    wake_slot_waiters(h);
    return 0;
}

static int on_stream_writable(void *ud, int32_t id)
{
    struct hc_h2 *h = ud;
    vega_http_client_response *r = req_of(h, id);
    if (r) {
        r->h2_span = false;
        vega__hc_h2_wake(r);
    }
    return 0;
}

static int on_settings(void *ud, const vega_h2_settings *peer)
{
    (void)peer;
    wake_slot_waiters(ud);
    return 0;
}

static int on_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *debug, size_t len)
{
    struct hc_h2 *h = ud;
    h->goaway = true;
    h->goaway_last = last;
    atomic_store(&h->mux.usable, false);
    if (code != VEGA_H2_NO_ERROR && !h->werr.kind) {
        h->werr.kind = VEGA_HTTP_CLIENT_WIRE_H2;
        h->werr.local = false;
        h->werr.code = code;
        size_t n = 0;
        for (; n < len && n + 1 < sizeof h->werr.reason; n++)
            h->werr.reason[n] = debug[n] >= 0x20 && debug[n] < 0x7f ? (char)debug[n] : '?';
        h->werr.reason[n] = '\0';
    }
    for (vega_http_client_response *r = h->reqs; r; r = r->h2_next)
        vega__hc_h2_wake(r);
    return 0;
}

const vega_h2_callbacks vega__hc_h2_callbacks = {
    .on_headers = on_headers,
    .on_data = on_data,
    .on_stream_close = on_stream_close,
    .on_stream_writable = on_stream_writable,
    .on_settings = on_settings,
    .on_goaway = on_goaway,
};

/* ---- the request's task ---------------------------------------------------------------------- */

/* Why r cannot go on (mu held), 0 when it may wait. */
static int blocked_by(struct hc_h2 *h, vega_http_client_response *r)
{
    if (r->h2_err)
        return r->h2_err;
    if (r->h2_end)
        return 0;
    if (h->dead || r->h2_closed)
        return h->err ? h->err : VEGA_ERR_PROTO;
    return 0;
}

/* The wire error for r's failure: the stream's, else the connection's. */
static int failed(vega_http_client_response *r, int rc)
{
    struct hc_h2 *h = r->h2;
    pthread_mutex_lock(&h->mu); /* the reader writes these under it */
    if (r->werr.kind == VEGA_HTTP_CLIENT_WIRE_NONE && h->werr.kind)
        r->werr = h->werr;
    if (rc == -ECONNRESET && !r->head_done && !r->any_byte && !h->werr.kind && !r->werr.kind)
        rc = VEGA_ERR_HTTP_EMPTY_REPLY; /* the connection ended before any answer */
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int vega__hc_h2_read_head(vega_http_client_response *r, vega_deadline dl)
{
    struct hc_h2 *h = r->h2;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        bool done = r->head_done; /* the reader sets it under mu */
        int rc = done ? 0 : blocked_by(h, r);
        if (rc == 0 && !done && r->h2_end)
            rc = VEGA_ERR_PROTO; /* trailers without a head: the core refuses that */
        pthread_mutex_unlock(&h->mu);
        if (rc < 0)
            return failed(r, rc);
        if (done)
            return 0;
        rc = vega_notify_wait(&r->h3_wake, hc_dl_min(dl, r->dl));
        if (rc < 0)
            return rc;
    }
}

/* Takes up to cap body bytes into dst: their count, 0 at the end, or a code. Gives them back to
 * flow control (the writer sends the WINDOW_UPDATE when one is due). */
static vega_ssize take(vega_http_client_response *r, uint8_t *dst, size_t cap, vega_deadline dl)
{
    struct hc_h2 *h = r->h2;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        size_t n = r->h2_len < cap ? r->h2_len : cap;
        int rc = 0;
        bool kick = false;
        if (n) {
            memcpy(dst, r->h2_buf + r->h2_off, n);
            r->h2_off += n;
            r->h2_len -= n;
            if (!r->h2_len)
                r->h2_off = 0;
            if (!r->h2_closed && r->h2_id) {
                (void)vega_h2_stream_consume(h->core, r->h2_id, n);
                kick = vega_h2_conn_want_write(h->core);
            }
        } else if (r->h2_end && !r->h2_err) {
            r->msg_done = true;
        } else {
            rc = blocked_by(h, r);
        }
        pthread_mutex_unlock(&h->mu);
        if (kick)
            vega_notify_one(&h->wake);
        if (n)
            return (vega_ssize)n;
        if (rc < 0)
            return failed(r, rc);
        if (r->msg_done)
            return 0;
        rc = vega_notify_wait(&r->h3_wake, hc_dl_min(dl, r->dl));
        if (rc < 0)
            return rc;
    }
}

vega_ssize vega__hc_h2_read(vega_http_client_response *r, uint8_t *buf, size_t len,
                            vega_deadline dl)
{
    if (r->bpos < r->blen)
        return vega__hc_take_queued(r, buf, len);
    if (r->msg_done)
        return 0;
    vega_ssize n = take(r, buf, len, dl);
    return n > 0 ? vega__hc_deliver(r, n) : n;
}

int vega__hc_h2_next_body(vega_http_client_response *r, vega_deadline dl)
{
    while (r->bpos == r->blen) {
        if (r->msg_done)
            return 0;
        r->bpos = r->blen = 0;
        vega_ssize n = take(r, r->bq, sizeof r->bq, dl);
        if (n < 0)
            return (int)n;
        r->blen = (size_t)n;
    }
    return 1;
}

void vega__hc_h2_response_done(vega_http_client_response *r)
{
    struct hc_h2 *h = r->h2;
    vega_http_client *c = h->c;
    pthread_mutex_lock(&h->mu);
    for (vega_http_client_response **pp = &h->reqs; *pp; pp = &(*pp)->h2_next)
        if (*pp == r) {
            *pp = r->h2_next;
            break;
        }
    r->h2_listed = false;
    bool kick = false;
    if (r->h2_id && !r->h2_closed && !h->dead) {
        /* §8.1: a response we no longer want (or a request body we stop sending) ends the
         * stream: CANCEL; the connection serves on */
        (void)vega_h2_submit_rst_stream(h->core, r->h2_id, VEGA_H2_CANCEL);
        kick = true;
    }
    if (r->h2_id)
        (void)vega_h2_stream_set_user_data(h->core, r->h2_id, NULL);
    pthread_mutex_unlock(&h->mu);
    if (kick)
        vega_notify_one(&h->wake);
    vega__mem_free(c->o.mem, r->h2_buf);
    r->h2_buf = NULL;
    vega__hc_mux_done(c, &h->mux);
    r->h2 = NULL;
    vega__hc_h2_release(h);
}
