/* SPDX-License-Identifier: MIT */
/* QUIC streams of a connection (RFC 9000 §2-4): opening within limits, the application's
 * read/write/reset/stop calls, and freeing a stream once both directions are done. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

static bool is_local(const vega_quic_conn *c, uint64_t id)
{
    return (id & 1) == (uint64_t)c->server;
}

static int type_of(uint64_t id)
{
    return (id & 2) ? 1 : 0; /* 0 bidi, 1 uni */
}

/* A bulk transfer looks up the same stream for every packet sent, received and acknowledged:
 * the last one found is tried before the map. */
struct vega__quic_stream *vega__quic_stream_get(vega_quic_conn *c, uint64_t id)
{
    struct vega__quic_stream *s = c->streams.last;
    if (s && s->id == id)
        return s;
    s = vega__quic_stream_map_get(&c->streams.map, id);
    if (s)
        c->streams.last = s;
    return s;
}

/* The peer's limit on what we may send on a stream (RFC 9000 §18.2). */
static uint64_t peer_stream_limit(const vega_quic_conn *c, uint64_t id)
{
    const vega_quic_tp *tp = &c->hs.peer_tp;
    if (type_of(id))
        return tp->initial_max_stream_data_uni;
    return is_local(c, id) ? tp->initial_max_stream_data_bidi_remote
                           : tp->initial_max_stream_data_bidi_local;
}

static struct vega__quic_stream *stream_new(vega_quic_conn *c, uint64_t id)
{
    struct vega__quic_stream *s = vega__quic_calloc(c->cfg.mem, 1, sizeof *s);
    if (!s)
        return NULL;
    s->id = id;
    bool local = is_local(c, id), uni = type_of(id);
    s->can_send = !uni || local;
    s->can_recv = !uni || !local;
    vega__quic_sendbuf_init(&s->sb, c->cfg.stream_send_buffer, c->cfg.mem);
    s->sb.pool = &c->streams.pool;
    vega__quic_recvbuf_init(&s->rb, c->cfg.max_stream_data_max, c->cfg.mem);
    vega__quic_fc_init(&s->fc, c->cfg.max_stream_data, c->cfg.max_stream_data_max);
    s->fc.limit = c->cfg.max_stream_data;
    s->max_send = peer_stream_limit(c, id);
    if (vega__quic_stream_map_put(&c->streams.map, s) < 0) {
        vega__quic_sendbuf_fini(&s->sb);
        vega__quic_recvbuf_fini(&s->rb);
        vega__quic_free(c->cfg.mem, s);
        return NULL;
    }
    return s;
}

static void stream_destroy(vega_quic_conn *c, struct vega__quic_stream *s)
{
    if (c->streams.last == s)
        c->streams.last = NULL;
    vega__quic_sendbuf_fini(&s->sb);
    vega__quic_recvbuf_fini(&s->rb);
    vega__quic_free(c->cfg.mem, s);
}

void vega__quic_streams_free(vega_quic_conn *c)
{
    size_t pos = 0;
    struct vega__quic_stream *s;
    while ((s = vega__quic_stream_map_next(&c->streams.map, &pos)))
        stream_destroy(c, s);
    vega__quic_stream_map_fini(&c->streams.map);
    c->streams.last = NULL;
    c->streams.sendq_head = c->streams.sendq_tail = NULL;
}

/* The peer's transport parameters arrived: streams opened before now get their limits. */
void vega__quic_stream_apply_tp(vega_quic_conn *c)
{
    size_t pos = 0;
    struct vega__quic_stream *s;
    while ((s = vega__quic_stream_map_next(&c->streams.map, &pos))) {
        uint64_t lim = peer_stream_limit(c, s->id);
        if (lim > s->max_send)
            s->max_send = lim;
        if (vega__quic_sendbuf_has_pending(&s->sb))
            vega__quic_sendq_push(c, s);
    }
}

void vega__quic_sendq_push(vega_quic_conn *c, struct vega__quic_stream *s)
{
    if (s->in_sendq)
        return;
    s->in_sendq = true;
    s->sendq_next = NULL;
    if (c->streams.sendq_tail)
        c->streams.sendq_tail->sendq_next = s;
    else
        c->streams.sendq_head = s;
    c->streams.sendq_tail = s;
}

static bool send_done(const struct vega__quic_stream *s)
{
    if (!s->can_send)
        return true;
    if (s->reset_queued)
        return s->reset_acked;
    return s->sb.fin && vega__quic_sendbuf_is_acked(&s->sb);
}

static bool recv_done(const struct vega__quic_stream *s)
{
    /* After our STOP_SENDING the stream stays until its final size is known (the peer's FIN
     * or RESET_STREAM): what is still in flight must be counted into the connection window,
     * and a lost STOP_SENDING sent again. */
    return !s->can_recv || s->fin_read || s->peer_reset;
}

/* Frees a stream whose both directions are over; a peer's stream then makes room for another
 * (MAX_STREAMS, RFC 9000 §4.6). */
void vega__quic_stream_maybe_free(vega_quic_conn *c, struct vega__quic_stream *s)
{
    if (!send_done(s) || !recv_done(s) || s->in_sendq || s->max_data_queued)
        return;
    if (s->can_send && !s->done_ev && !s->reset_queued) {
        s->done_ev = true;
        vega_quic_event ev = {.type = VEGA_QUIC_EV_STREAM_DONE, .stream_id = s->id};
        vega__quic_ev_push(c, &ev);
    }
    if (!is_local(c, s->id)) {
        int t = type_of(s->id);
        c->streams.peer_closed[t]++;
        uint64_t cfg_max = t ? c->cfg.max_streams_uni : c->cfg.max_streams_bidi;
        uint64_t want = c->streams.peer_closed[t] + cfg_max;
        if (want > (1ull << 60))
            want = 1ull << 60;
        if (want - c->streams.local_max[t] >= (cfg_max + 1) / 2 ||
            want - c->streams.peer_opened[t] < 2) {
            c->streams.local_max[t] = want;
            c->streams.max_streams_queued[t] = true;
        }
    }
    vega__quic_stream_map_del(&c->streams.map, s->id);
    stream_destroy(c, s);
}

int vega__quic_stream_peer(vega_quic_conn *c, uint64_t id, bool for_send,
                           struct vega__quic_stream **out, uint64_t *wire_err)
{
    *out = NULL;
    bool local = is_local(c, id);
    int t = type_of(id);
    /* A frame about a direction the stream does not have (RFC 9000 §19.4-§19.13). */
    if (t == 1 && ((for_send && !local) || (!for_send && local))) {
        *wire_err = VEGA_QUIC_STREAM_STATE_ERROR;
        return VEGA_ERR_PROTO;
    }
    if (local) {
        if (id >= c->streams.next[t]) {
            *wire_err = VEGA_QUIC_STREAM_STATE_ERROR;
            return VEGA_ERR_PROTO;
        }
        *out = vega__quic_stream_get(c, id); /* NULL: closed already; ignore the frame */
        return 0;
    }
    uint64_t idx = id >> 2;
    if (idx >= c->streams.local_max[t]) {
        *wire_err = VEGA_QUIC_STREAM_LIMIT_ERROR;
        return VEGA_ERR_PROTO;
    }
    if (idx < c->streams.peer_opened[t]) {
        *out = vega__quic_stream_get(c, id);
        return 0;
    }
    /* Opening a stream opens every lower-numbered one of its type (RFC 9000 §3.2). */
    for (uint64_t i = c->streams.peer_opened[t]; i <= idx; i++) {
        uint64_t sid = i << 2 | (uint64_t)t << 1 | (uint64_t)!c->server;
        struct vega__quic_stream *s = stream_new(c, sid);
        if (!s)
            return -ENOMEM;
        c->streams.peer_opened[t] = i + 1;
        vega_quic_event ev = {.type = VEGA_QUIC_EV_STREAM_OPENED, .stream_id = sid};
        if (vega__quic_ev_push(c, &ev) < 0)
            return -ENOMEM;
        if (i == idx)
            *out = s;
    }
    return 0;
}

int vega_quic_stream_open(vega_quic_conn *c, bool bidi, uint64_t *id)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    int t = bidi ? 0 : 1;
    uint64_t next = c->streams.next[t];
    if ((next >> 2) >= c->streams.peer_max[t]) {
        c->streams.blocked_ev = true;
        return VEGA_ERR_FULL;
    }
    struct vega__quic_stream *s = stream_new(c, next);
    if (!s)
        return -ENOMEM;
    c->streams.next[t] = next + 4;
    *id = next;
    return 0;
}

static struct vega__quic_stream *app_stream(vega_quic_conn *c, uint64_t id)
{
    return vega__quic_stream_get(c, id);
}

/* The stream's room is what the connection's send budget left it, not its own limit. */
static bool pool_cut(const struct vega__quic_stream *s)
{
    const struct vega__quic_sendbuf *b = &s->sb;
    uint64_t held = b->written - b->acked_base;
    uint64_t own = b->limit ? (b->limit > held ? b->limit - held : 0) : UINT64_MAX;
    return b->pool && b->pool->budget && vega__quic_sendbuf_room(b) < own;
}

void vega__quic_sendpool_wake(vega_quic_conn *c)
{
    struct vega__quic_sendpool *p = &c->streams.pool;
    if (!p->blocked || !p->freed)
        return; /* a peer that acknowledges nothing costs no walk */
    p->blocked = p->freed = false;
    size_t pos = 0;
    struct vega__quic_stream *s;
    while ((s = vega__quic_stream_map_next(&c->streams.map, &pos))) {
        if (!s->want_writable || !pool_cut(s))
            continue; /* its own limit: its acknowledgements wake it (conn_ack.c) */
        if (vega__quic_sendbuf_room(&s->sb) == 0 || s->sb.nsegs >= VEGA__QUIC_SENDBUF_MAX_REFS) {
            p->blocked = true;
            continue;
        }
        vega_quic_event ev = {.type = VEGA_QUIC_EV_STREAM_WRITABLE, .stream_id = s->id};
        if (vega__quic_ev_push(c, &ev) < 0) {
            p->blocked = p->freed = true; /* no memory for the event: the next read tries again */
            continue;
        }
        s->want_writable = false;
    }
}

int vega_quic_conn_set_send_budget(vega_quic_conn *c, uint64_t bytes)
{
    c->streams.pool.budget = bytes;
    return 0;
}

uint64_t vega_quic_conn_get_send_held(const vega_quic_conn *c)
{
    return c->streams.pool.held;
}

uint64_t vega_quic_stream_get_send_room(const vega_quic_conn *c, uint64_t id)
{
    const struct vega__quic_stream *s = vega__quic_stream_map_get(&c->streams.map, id);
    if (!s || !s->can_send || s->sb.fin || s->reset_queued || c->state >= VEGA__QUIC_ST_CLOSING)
        return 0;
    if (s->sb.nsegs >= VEGA__QUIC_SENDBUF_MAX_REFS)
        return 0;
    return vega__quic_sendbuf_room(&s->sb);
}

/* The write calls' common part: n bytes of len taken (or an error) by the send buffer. */
static vega_ssize after_write(vega_quic_conn *c, struct vega__quic_stream *s, vega_ssize n,
                              size_t len, bool fin)
{
    if (n < 0)
        return n;
    if ((size_t)n < len) {
        s->want_writable = true;
        if (pool_cut(s))
            c->streams.pool.blocked = true;
    } else if (fin)
        vega__quic_sendbuf_finish(&s->sb);
    if (vega__quic_sendbuf_has_pending(&s->sb))
        vega__quic_sendq_push(c, s);
    return n;
}

/* The stream the application may write to (NULL with *rc set otherwise). */
static struct vega__quic_stream *send_stream(vega_quic_conn *c, uint64_t id, vega_ssize *rc)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING) {
        *rc = VEGA_ERR_CLOSED;
        return NULL;
    }
    struct vega__quic_stream *s = app_stream(c, id);
    if (!s || !s->can_send || s->sb.fin || s->reset_queued) {
        *rc = -EINVAL;
        return NULL;
    }
    return s;
}

vega_ssize vega_quic_stream_write(vega_quic_conn *c, uint64_t id, const void *data, size_t len,
                                  bool fin)
{
    vega_ssize rc;
    struct vega__quic_stream *s = send_stream(c, id, &rc);
    if (!s)
        return rc;
    return after_write(c, s, len ? vega__quic_sendbuf_write(&s->sb, data, len) : 0, len, fin);
}

vega_ssize vega_quic_stream_write_ref(vega_quic_conn *c, uint64_t id, const void *data, size_t len,
                                      bool fin, vega_quic_release_fn release, void *user)
{
    vega_ssize rc;
    struct vega__quic_stream *s = send_stream(c, id, &rc);
    if (!s)
        return rc;
    vega_ssize n = len ? vega__quic_sendbuf_write_ref(&s->sb, data, len, release, user) : 0;
    return after_write(c, s, n, len, fin);
}

/* The application took n bytes (fin: it reached the end): open the windows when due, and end
 * the receive side at the final size. Shared by read and consume so both behave alike. */
static void on_consumed(vega_quic_conn *c, struct vega__quic_stream *s, size_t n, bool fin)
{
    if (n) {
        vega__quic_fc_on_consumed(&s->fc, n);
        vega__quic_fc_on_consumed(&c->flow.fc, n);
        if (!fin && s->rb.final_size == UINT64_MAX && vega__quic_fc_should_update(&s->fc)) {
            s->max_data_queued = true;
            vega__quic_sendq_push(c, s);
        }
        if (vega__quic_fc_should_update(&c->flow.fc))
            c->flow.max_data_queued = true;
    }
    if (fin) {
        s->fin_read = true;
        vega__quic_stream_maybe_free(c, s);
    }
}

/* The stream the application may read from (NULL with *rc set otherwise). */
static struct vega__quic_stream *recv_stream(vega_quic_conn *c, uint64_t id, int *rc)
{
    struct vega__quic_stream *s = app_stream(c, id);
    if (!s || !s->can_recv) {
        *rc = -EINVAL;
        return NULL;
    }
    if (s->peer_reset) {
        *rc = VEGA_ERR_PROTO;
        return NULL;
    }
    return s;
}

vega_ssize vega_quic_stream_read(vega_quic_conn *c, uint64_t id, void *buf, size_t cap, bool *fin)
{
    *fin = false;
    int rc;
    struct vega__quic_stream *s = recv_stream(c, id, &rc);
    if (!s)
        return rc;
    size_t n = vega__quic_recvbuf_read(&s->rb, buf, cap, fin);
    on_consumed(c, s, n, *fin);
    return (vega_ssize)n;
}

int vega_quic_stream_peek(vega_quic_conn *c, uint64_t id, const uint8_t **data, size_t *len,
                          bool *fin)
{
    *data = NULL;
    *len = 0;
    *fin = false;
    int rc;
    struct vega__quic_stream *s = recv_stream(c, id, &rc);
    if (!s)
        return rc;
    *len = vega__quic_recvbuf_peek(&s->rb, data);
    *fin = !s->rb.reset && s->rb.read_off + *len == s->rb.final_size;
    return 0;
}

int vega_quic_stream_consume(vega_quic_conn *c, uint64_t id, size_t n)
{
    int rc;
    struct vega__quic_stream *s = recv_stream(c, id, &rc);
    if (!s)
        return rc;
    if (n > vega__quic_recvbuf_readable(&s->rb))
        return -EINVAL;
    vega__quic_recvbuf_consume(&s->rb, n);
    on_consumed(c, s, n, !s->rb.reset && s->rb.read_off == s->rb.final_size);
    return 0;
}

int vega_quic_stream_reset(vega_quic_conn *c, uint64_t id, uint64_t app_error)
{
    struct vega__quic_stream *s = app_stream(c, id);
    if (!s || !s->can_send || app_error > VEGA_QUIC_MAX_VARINT)
        return -EINVAL;
    if (s->reset_queued || (s->sb.fin && vega__quic_sendbuf_is_acked(&s->sb)))
        return 0;
    s->reset_queued = true;
    s->reset_code = app_error;
    vega__quic_sendbuf_drop(&s->sb); /* nothing is sent again: referenced bytes go back now */
    vega__quic_sendq_push(c, s);     /* the send queue carries control frames too */
    vega__quic_sendpool_wake(c);     /* what it held is the budget's again */
    return 0;
}

int vega_quic_stream_stop(vega_quic_conn *c, uint64_t id, uint64_t app_error)
{
    struct vega__quic_stream *s = app_stream(c, id);
    if (!s || !s->can_recv || app_error > VEGA_QUIC_MAX_VARINT)
        return -EINVAL;
    if (s->stop_queued || s->fin_read || s->peer_reset)
        return 0;
    s->stop_queued = true;
    s->stop_code = app_error;
    vega__quic_sendq_push(c, s);
    return 0;
}

int vega_quic_datagram_send(vega_quic_conn *c, const void *data, size_t len)
{
    if (c->state >= VEGA__QUIC_ST_CLOSING)
        return VEGA_ERR_CLOSED;
    uint64_t max = c->hs.peer_tp.max_datagram_frame_size;
    /* A DATAGRAM frame must fit in one packet: 1200 bytes less the short header, packet number,
     * AEAD tag and the frame's own type and length. */
    size_t room = VEGA__QUIC_MAX_PACKET - 1 - VEGA_QUIC_MAX_CID_LEN - 4 - 16 - 1 - 2;
    if (!c->hs.peer_tp_ok || max == 0 || len + 3 > max || len > room)
        return -EINVAL;
    if (c->dgram.send_n == VEGA__QUIC_DGRAM_SEND_QUEUE)
        return VEGA_ERR_FULL;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len ? len : 1);
    if (!copy)
        return -ENOMEM;
    if (len)
        memcpy(copy, data, len);
    struct vega__quic_dgram *d =
        &c->dgram.send[(c->dgram.send_head + c->dgram.send_n) % VEGA__QUIC_DGRAM_SEND_QUEUE];
    d->data = copy;
    d->len = len;
    c->dgram.send_n++;
    return 0;
}
