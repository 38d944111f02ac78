/* SPDX-License-Identifier: MIT */
/* HTTP/2 streams: the map by id, the states of RFC 9113 §5.1 and their transitions, stream
 * errors (§5.4.2), the memory of streams we reset (§5.1 "closed"), and the send queue. */
#include <string.h>

#include "h2_int.h"

/* Binary search in the sorted array: the index of id, or where it would go. */
static size_t lower_bound(const vega_h2_conn *c, int32_t id)
{
    size_t lo = 0, hi = c->nstreams;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->streams[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct vega_h2_stream *vega__h2_stream_find(const vega_h2_conn *c, int32_t id)
{
    size_t i = lower_bound(c, id);
    return i < c->nstreams && c->streams[i]->id == id ? c->streams[i] : NULL;
}

struct vega_h2_stream *vega__h2_stream_new(vega_h2_conn *c, int32_t id)
{
    /* Stream ids only grow (§5.1.1), so a new stream goes at the end. */
    VEGA_ASSERT(!c->nstreams || c->streams[c->nstreams - 1]->id < id);
    if (c->nstreams == c->streams_cap) {
        size_t cap = c->streams_cap ? c->streams_cap * 2 : 8;
        struct vega_h2_stream **a = vega__mem_realloc(c->o.mem, c->streams, cap * sizeof *a);
        if (!a)
            return NULL;
        c->streams = a;
        c->streams_cap = cap;
    }
    struct vega_h2_stream *s = vega__mem_calloc(c->o.mem, 1, sizeof *s);
    if (!s)
        return NULL;
    s->id = id;
    s->state = VEGA_H2_STATE_OPEN;
    s->rx_cl = -1;
    s->stalled_since = VEGA_TSTAMP_MAX;
    s->send_window = c->peer.initial_window_size;
    /* Until the peer acknowledges our SETTINGS it may still count on 65535 (§6.9.2: "the
     * receiver MUST be prepared to receive data that exceeds this window size"). */
    uint32_t init = c->local.initial_window_size;
    if (!c->local_acked && init < H2_DEFAULT_WINDOW)
        init = H2_DEFAULT_WINDOW;
    vega__h2_rwin_init(&s->rw, init, c->local.initial_window_size, c->o.stream_window_max);
    c->streams[c->nstreams++] = s;
    return s;
}

void vega__h2_hblocks_free(vega_h2_conn *c, struct vega_h2_stream *s)
{
    while (s->hq) {
        struct h2_hblock *b = s->hq;
        s->hq = b->next;
        vega__mem_free(c->o.mem, b);
    }
    s->hq_tail = NULL;
}

static void stream_free(vega_h2_conn *c, struct vega_h2_stream *s)
{
    size_t i = lower_bound(c, s->id);
    VEGA_ASSERT(i < c->nstreams && c->streams[i] == s);
    memmove(&c->streams[i], &c->streams[i + 1], (c->nstreams - i - 1) * sizeof *c->streams);
    c->nstreams--;
    vega__h2_sq_remove(c, s);
    vega__h2_hblocks_free(c, s);
    vega__mem_free(c->o.mem, s);
}

int vega__h2_stream_close(vega_h2_conn *c, struct vega_h2_stream *s, uint32_t code,
                          vega_h2_close how)
{
    if (s->closing)
        return 0;
    s->closing = true;
    s->state = VEGA_H2_STATE_CLOSED;
    vega__h2_sq_remove(c, s);
    int rc = 0;
    if (c->cb->on_stream_close && c->cb->on_stream_close(c->ud, s->id, code, how))
        rc = VEGA_ERR_CALLBACK;
    /* Body bytes handed out and not consumed by now go back to the connection's window: an
     * application that drops a closed stream's buffer cannot starve the connection. */
    size_t held = s->unconsumed;
    c->unconsumed -= held;
    stream_free(c, s);
    if (held && !c->dead_rc)
        (void)vega__h2_conn_give(c, held);
    return rc;
}

int vega__h2_stream_local_end(vega_h2_conn *c, struct vega_h2_stream *s)
{
    if (s->state == VEGA_H2_STATE_OPEN) {
        s->state = VEGA_H2_STATE_HALF_CLOSED_LOCAL;
        return 0;
    }
    if (s->state == VEGA_H2_STATE_HALF_CLOSED_REMOTE)
        return vega__h2_stream_close(c, s, VEGA_H2_NO_ERROR, VEGA_H2_CLOSE_DONE);
    return 0;
}

int vega__h2_stream_remote_end(vega_h2_conn *c, struct vega_h2_stream *s)
{
    s->rx = H2_RX_DONE;
    if (s->state == VEGA_H2_STATE_OPEN) {
        s->state = VEGA_H2_STATE_HALF_CLOSED_REMOTE;
        return 0;
    }
    if (s->state == VEGA_H2_STATE_HALF_CLOSED_LOCAL)
        return vega__h2_stream_close(c, s, VEGA_H2_NO_ERROR, VEGA_H2_CLOSE_DONE);
    return 0;
}

int vega__h2_stream_error(vega_h2_conn *c, struct vega_h2_stream *s, int32_t sid, uint32_t code)
{
    /* MadeYouReset (2025): a reset the peer's frame forces on us frees the stream slot just
     * as its own RST_STREAM would, so it counts against the same budget. */
    int rc = vega__h2_count_reset(c);
    if (rc < 0)
        return rc;
    rc = vega__h2_put_rst_stream(c, sid, code, true);
    if (rc < 0)
        return rc == -ENOMEM ? vega__h2_conn_fail(c, rc) : rc;
    vega__h2_closed_add(c, sid);
    if (s)
        rc = vega__h2_stream_close(c, s, code, VEGA_H2_CLOSE_RESET_LOCAL);
    return rc;
}

void vega__h2_closed_add(vega_h2_conn *c, int32_t id)
{
    c->closed[c->closed_pos].id = id;
    c->closed_pos = (c->closed_pos + 1) % H2_CLOSED_RING;
}

bool vega__h2_closed_has(const vega_h2_conn *c, int32_t id)
{
    for (size_t i = 0; i < H2_CLOSED_RING; i++)
        if (c->closed[i].id == id)
            return true;
    return false;
}

enum h2_idstate vega__h2_id_state(const vega_h2_conn *c, int32_t id, struct vega_h2_stream **s)
{
    *s = vega__h2_stream_find(c, id);
    if (*s)
        return H2_ID_OPEN;
    /* Every stream is client-initiated (odd): push is refused, so an even id is one the
     * server never opened. */
    if (!(id & 1))
        return H2_ID_IDLE;
    int64_t last = c->server ? c->last_peer_id : c->next_id - 2;
    return id <= last ? H2_ID_CLOSED : H2_ID_IDLE;
}

void vega__h2_sq_add(vega_h2_conn *c, struct vega_h2_stream *s)
{
    if (s->in_sq)
        return;
    s->in_sq = true;
    s->sq_next = NULL;
    s->sq_prev = c->sq_tail;
    if (c->sq_tail)
        c->sq_tail->sq_next = s;
    else
        c->sq_head = s;
    c->sq_tail = s;
}

void vega__h2_sq_remove(vega_h2_conn *c, struct vega_h2_stream *s)
{
    if (!s->in_sq)
        return;
    if (s->sq_prev)
        s->sq_prev->sq_next = s->sq_next;
    else
        c->sq_head = s->sq_next;
    if (s->sq_next)
        s->sq_next->sq_prev = s->sq_prev;
    else
        c->sq_tail = s->sq_prev;
    s->sq_prev = s->sq_next = NULL;
    s->in_sq = false;
}

int vega__h2_streams_close_all(vega_h2_conn *c, uint32_t code, vega_h2_close how)
{
    int rc = 0;
    while (c->nstreams) {
        struct vega_h2_stream *s = c->streams[c->nstreams - 1];
        int r = vega__h2_stream_close(c, s, code, how);
        if (r < 0 && rc == 0)
            rc = r;
    }
    return rc;
}
