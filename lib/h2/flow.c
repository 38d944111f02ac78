/* SPDX-License-Identifier: MIT */
/* HTTP/2 flow control (RFC 9113 §5.2, §6.9): receive windows that the application reopens by
 * consuming, WINDOW_UPDATE when half a window was used, windows that double when drained
 * within 4 round trips (up to a cap), and the RTT estimate that judges it. */
#include "h2_int.h"

void vega__h2_rwin_init(struct h2_rwin *w, uint32_t limit, uint32_t window, uint32_t max)
{
    w->limit = limit;
    w->received = w->consumed = 0;
    w->window = window;
    w->max = VEGA__MAX(window, max);
    w->last_update = VEGA_TSTAMP_MAX;
}

bool vega__h2_rwin_take(struct h2_rwin *w, size_t n)
{
    /* §6.9.1: "A sender MUST NOT send a flow-controlled frame with a length that exceeds the
     * space available in either of the flow-control windows advertised by the receiver." */
    int64_t room = w->limit - (int64_t)w->received;
    if (room < 0 || (uint64_t)n > (uint64_t)room)
        return false;
    w->received += n;
    return true;
}

int vega__h2_rwin_give(vega_h2_conn *c, struct h2_rwin *w, int32_t sid, size_t n)
{
    w->consumed += n;
    int64_t credit = (int64_t)w->consumed + w->window - w->limit;
    if (credit <= 0 || credit < (int64_t)(w->window / 2))
        return 0;
    /* Auto-tuning: half the window used within 4 round trips means the window, not the
     * application, limits the transfer: double it (up to the cap), as the QUIC core does. */
    if (w->last_update != VEGA_TSTAMP_MAX && c->srtt && w->window < w->max &&
        c->now >= w->last_update && c->now - w->last_update < 4 * c->srtt) {
        w->window = (uint32_t)VEGA__MIN((uint64_t)w->window * 2, (uint64_t)w->max);
        credit = (int64_t)w->consumed + w->window - w->limit;
    }
    int rc = vega__h2_put_window_update(c, sid, (uint32_t)credit);
    if (rc < 0) {
        c->wu_retry = true; /* the next vega_h2_conn_write tries again */
        return rc;
    }
    w->limit += credit;
    w->last_update = c->now;
    return 0;
}

int vega__h2_conn_give(vega_h2_conn *c, size_t n)
{
    return n ? vega__h2_rwin_give(c, &c->rw, 0, n) : 0;
}

void vega__h2_stream_unblocked(vega_h2_conn *c, struct vega_h2_stream *s)
{
    /* Data waiting on a closed stream window: a stall the driver may time out. */
    bool stalled = s->span_active && s->span_off < s->span_len && s->send_window <= 0;
    if (!stalled)
        s->stalled_since = VEGA_TSTAMP_MAX;
    else if (s->stalled_since == VEGA_TSTAMP_MAX)
        s->stalled_since = c->now;
    if (vega__h2_stream_has_work(s))
        vega__h2_sq_add(c, s);
}

void vega__h2_rtt_sample(vega_h2_conn *c, vega_tstamp sent_at)
{
    if (sent_at == VEGA_TSTAMP_MAX || c->now < sent_at)
        return;
    uint64_t r = c->now - sent_at;
    c->srtt = c->srtt ? (7 * c->srtt + r) / 8 : r;
}

int vega_h2_stream_consume(vega_h2_conn *c, int32_t stream_id, size_t n)
{
    if (!c)
        return -EINVAL;
    struct vega_h2_stream *s = vega__h2_stream_find(c, stream_id);
    if (!s)
        return 0; /* gone: its bytes went back when it closed */
    if (n > s->unconsumed)
        return -EINVAL;
    /* A WINDOW_UPDATE that cannot be queued (-ENOMEM) is retried by the next write: the
     * consumption itself is recorded either way. */
    s->unconsumed -= n;
    /* A stream whose peer side ended needs no more window. */
    if (s->rx != H2_RX_DONE && s->state != VEGA_H2_STATE_CLOSED)
        (void)vega__h2_rwin_give(c, &s->rw, s->id, n);
    else
        s->rw.consumed += n;
    c->unconsumed -= n;
    (void)vega__h2_conn_give(c, n);
    return 0;
}
