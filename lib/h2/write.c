/* SPDX-License-Identifier: MIT */
/* The HTTP/2 write path: the queue of control frames first, then header blocks encoded in the
 * order they go out (RFC 7541 §2.2: the peer's table follows ours block by block), then DATA
 * frames written straight from the caller's spans into the output, round robin over the
 * streams, within both flow-control windows (RFC 9113 §5.2, §6.9) and the peer's
 * SETTINGS_MAX_FRAME_SIZE (§4.2). */
#include <string.h>

#include "h2_int.h"

/* What a stream can send next. */
enum work {
    W_NONE,
    W_HEADERS,
    W_DATA,
    W_BLOCKED
};

static enum work next_work(const struct vega_h2_stream *s)
{
    if (s->closing)
        return W_NONE;
    if (s->hq && (!s->hq->trailers || !s->span_active))
        return W_HEADERS;
    if (!s->span_active)
        return W_NONE;
    if (s->span_off == s->span_len) /* an empty span: END_STREAM alone */
        return W_DATA;
    return s->send_window > 0 ? W_DATA : W_BLOCKED;
}

bool vega__h2_stream_has_work(const struct vega_h2_stream *s)
{
    enum work w = next_work(s);
    return w == W_HEADERS || w == W_DATA;
}

/* Round robin: a stream that did something goes to the back if it has more. */
static void requeue(vega_h2_conn *c, struct vega_h2_stream *s)
{
    vega__h2_sq_remove(c, s);
    vega__h2_stream_unblocked(c, s); /* back in line if it has work; a stall noted */
}

/* The span was written out: it is the caller's again; END_STREAM moves the stream on. */
static int span_done(vega_h2_conn *c, struct vega_h2_stream *s)
{
    bool end = s->span_end;
    int32_t sid = s->id;
    s->span_active = false;
    s->span = NULL;
    s->span_len = s->span_off = 0;
    s->span_end = false;
    s->stalled_since = VEGA_TSTAMP_MAX;
    if (c->cb->on_stream_writable && c->cb->on_stream_writable(c->ud, sid))
        return VEGA_ERR_CALLBACK;
    s = vega__h2_stream_find(c, sid);
    if (!s)
        return 0;
    requeue(c, s);
    return end ? vega__h2_stream_local_end(c, s) : 0;
}

static int send_headers(vega_h2_conn *c, struct vega_h2_stream *s)
{
    struct h2_hblock *b = s->hq;
    int rc = vega__h2_put_headers(c, s->id, b->f, b->n, b->end_stream);
    if (rc < 0)
        return rc;
    s->hq = b->next;
    if (!s->hq)
        s->hq_tail = NULL;
    s->hdr_sent = true;
    bool end = b->end_stream;
    vega__mem_free(c->o.mem, b);
    requeue(c, s);
    return end ? vega__h2_stream_local_end(c, s) : 0;
}

/* One DATA frame from s's span: straight into out at *at when it fits there with a useful
 * payload, else (a caller's buffer nearly full, or tiny) into the queue, to go out over the
 * next calls. Returns 1, or -ENOMEM. */
static int send_data(vega_h2_conn *c, struct vega_h2_stream *s, uint8_t *out, size_t cap,
                     size_t *at)
{
    size_t left = s->span_len - s->span_off;
    size_t k = VEGA__MIN(left, (size_t)c->peer.max_frame_size);
    if (left) {
        k = (size_t)VEGA__MIN((int64_t)k, s->send_window);
        k = (size_t)VEGA__MIN((int64_t)k, c->send_window);
    }
    size_t room = vega__room(*at, cap);
    uint8_t *p;
    if (room >= H2_HDR_LEN + VEGA__MIN(k, (size_t)1024)) {
        k = VEGA__MIN(k, room - H2_HDR_LEN);
        p = out + *at;
        *at += H2_HDR_LEN + k;
    } else {
        k = VEGA__MIN(k, (size_t)H2_MIN_FRAME_SIZE);
        p = vega__h2_q_push(&c->q, c->o.mem, H2_HDR_LEN + k);
        if (!p)
            return -ENOMEM;
    }
    bool end = s->span_end && k == left;
    vega__h2_frame_put(p, (uint32_t)k, H2_DATA, end ? H2_F_END_STREAM : 0, s->id);
    if (k)
        memcpy(p + H2_HDR_LEN, s->span + s->span_off, k);
    s->span_off += k;
    s->send_window -= (int64_t)k;
    c->send_window -= (int64_t)k;
    return 1;
}

/* One unit of work from the send queue. Returns 1 (did something), 0 (nothing to do now), or
 * an error. */
static int produce(vega_h2_conn *c, uint8_t *out, size_t cap, size_t *at)
{
    for (struct vega_h2_stream *s = c->sq_head, *next; s; s = next) {
        next = s->sq_next;
        switch (next_work(s)) {
        case W_HEADERS: {
            int rc = send_headers(c, s);
            return rc < 0 ? rc : 1;
        }
        case W_DATA: {
            bool empty = s->span_off == s->span_len;
            if (!empty && c->send_window <= 0) {
                /* Stalled on the connection's window: headers of other streams may still go. */
                if (c->stalled_since == VEGA_TSTAMP_MAX)
                    c->stalled_since = c->now;
                continue;
            }
            int rc = send_data(c, s, out, cap, at);
            if (rc < 0)
                return rc;
            if (s->span_off == s->span_len) {
                rc = span_done(c, s);
                return rc < 0 ? rc : 1;
            }
            requeue(c, s);
            return 1;
        }
        case W_BLOCKED:
            if (s->stalled_since == VEGA_TSTAMP_MAX)
                s->stalled_since = c->now;
            vega__h2_sq_remove(c, s); /* back with the peer's WINDOW_UPDATE */
            continue;
        case W_NONE:
            vega__h2_sq_remove(c, s);
            continue;
        }
    }
    return 0;
}

/* WINDOW_UPDATEs that could not be queued before (-ENOMEM) are tried again. */
static void retry_window_updates(vega_h2_conn *c)
{
    c->wu_retry = false;
    (void)vega__h2_rwin_give(c, &c->rw, 0, 0);
    for (size_t i = 0; i < c->nstreams && !c->wu_retry; i++) {
        struct vega_h2_stream *s = c->streams[i];
        if (s->rx != H2_RX_DONE)
            (void)vega__h2_rwin_give(c, &s->rw, s->id, 0);
    }
}

vega_ssize vega_h2_conn_write(vega_h2_conn *c, uint8_t *out, size_t cap, vega_tstamp now)
{
    if (!c || (!out && cap))
        return -EINVAL;
    c->now = now;
    /* Our SETTINGS go out with the first write: its ACK is timed from here (§6.5.3). */
    if (!c->settings_out) {
        c->settings_out = true;
        c->settings_sent_at = now;
        c->settings_deadline = vega__sat_add(now, c->o.settings_timeout_ms * VEGA_NS_PER_MS);
    }
    if (c->wu_retry && !c->dead_rc)
        retry_window_updates(c);
    size_t at = 0;
    int rc = 0;
    for (;;) {
        at += vega__h2_q_drain(&c->q, out + at, cap - at);
        if (vega__h2_q_pending(&c->q) || at == cap)
            break;
        if (c->dead_rc) {
            size_t k = VEGA__MIN(cap - at, c->fatal_goaway_len - c->fatal_goaway_off);
            memcpy(out + at, c->fatal_goaway + c->fatal_goaway_off, k);
            c->fatal_goaway_off += k;
            at += k;
            break;
        }
        rc = produce(c, out, cap, &at);
        if (rc != 1)
            break;
    }
    c->bytes_out += at;
    /* An empty queue that grew for a large header block is not kept. */
    if (!vega__h2_q_pending(&c->q) && c->q.cap > 16384 && !c->q.mlen) {
        vega__mem_free(c->o.mem, c->q.p);
        c->q.p = NULL;
        c->q.cap = c->q.off = c->q.len = 0;
    }
    if (rc == VEGA_ERR_CALLBACK) {
        vega__h2_conn_fail(c, rc);
        return rc;
    }
    /* -ENOMEM: what was written stands; the block that needed memory waits for the next
     * call (nothing changed in the encoder or the stream). */
    if (rc == -ENOMEM && at == 0)
        return -ENOMEM;
    return (vega_ssize)at;
}

bool vega_h2_conn_want_write(const vega_h2_conn *c)
{
    if (!c)
        return false;
    if (vega__h2_q_pending(&c->q))
        return true;
    if (c->dead_rc)
        return c->fatal_goaway_off < c->fatal_goaway_len;
    for (const struct vega_h2_stream *s = c->sq_head; s; s = s->sq_next) {
        enum work w = next_work(s);
        if (w == W_HEADERS || (w == W_DATA && (c->send_window > 0 || s->span_off == s->span_len)))
            return true;
    }
    return false;
}
