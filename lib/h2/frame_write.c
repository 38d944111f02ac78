/* SPDX-License-Identifier: MIT */
/* HTTP/2 frames into the output queue (RFC 9113 §6): SETTINGS and its ACK, WINDOW_UPDATE,
 * RST_STREAM, PING, PRIORITY_UPDATE (RFC 9218 §7.1), and header blocks split into HEADERS and
 * CONTINUATION frames (§4.3, §6.2, §6.10). */
#include <string.h>

#include "h2_int.h"

static uint8_t *frame(vega_h2_conn *c, uint32_t len, uint8_t type, uint8_t flags, int32_t sid)
{
    uint8_t *p = vega__h2_q_push(&c->q, c->o.mem, H2_HDR_LEN + len);
    if (p)
        vega__h2_frame_put(p, len, type, flags, sid);
    return p ? p + H2_HDR_LEN : NULL;
}

/* An answer the peer's frame forced: counted, and refused past max_queued_control. */
static int forced(vega_h2_conn *c)
{
    /* §10.5: "An endpoint that doesn't monitor use of SETTINGS, PING, ... or RST_STREAM
     * frames ... can be exposed to a denial of service": a peer that sends them without
     * reading our answers must not make the queue grow. */
    if (c->q.mlen >= c->o.max_queued_control)
        return vega__h2_conn_error(c, VEGA_H2_ENHANCE_YOUR_CALM,
                                   "too many answers queued: the peer does not read");
    return 0;
}

int vega__h2_put_settings(vega_h2_conn *c)
{
    uint8_t e[8 * 6];
    size_t n = 0;
    const vega_h2_settings *l = &c->local;
#define PUT(id, v)                                                                                 \
    do {                                                                                           \
        e[n] = 0;                                                                                  \
        e[n + 1] = (uint8_t)(id);                                                                  \
        h2_put32(e + n + 2, (v));                                                                  \
        n += 6;                                                                                    \
    } while (0)
    if (l->header_table_size != VEGA_HPACK_DEFAULT_TABLE_SIZE)
        PUT(H2_S_HEADER_TABLE_SIZE, l->header_table_size);
    if (!c->server)
        PUT(H2_S_ENABLE_PUSH, 0); /* §8.4: we refuse server push */
    PUT(H2_S_MAX_CONCURRENT_STREAMS, l->max_concurrent_streams);
    if (l->initial_window_size != H2_DEFAULT_WINDOW)
        PUT(H2_S_INITIAL_WINDOW_SIZE, l->initial_window_size);
    if (l->max_frame_size != H2_MIN_FRAME_SIZE)
        PUT(H2_S_MAX_FRAME_SIZE, l->max_frame_size);
    PUT(H2_S_MAX_HEADER_LIST_SIZE, l->max_header_list_size);
    if (c->server && l->enable_connect_protocol)
        PUT(H2_S_ENABLE_CONNECT_PROTOCOL, 1);
    /* RFC 9218 §2.1: we do not use RFC 7540 priorities. */
    PUT(H2_S_NO_RFC7540_PRIORITIES, 1);
#undef PUT
    uint8_t *p = frame(c, (uint32_t)n, H2_SETTINGS, 0, 0);
    if (!p)
        return -ENOMEM;
    memcpy(p, e, n);
    return 0;
}

int vega__h2_put_settings_ack(vega_h2_conn *c)
{
    int rc = forced(c);
    if (rc < 0)
        return rc;
    /* §6.5.3: "Upon receiving a SETTINGS frame with the ACK flag clear, the recipient MUST
     * immediately emit a SETTINGS frame with the ACK flag set" */
    if (!frame(c, 0, H2_SETTINGS, H2_F_ACK, 0))
        return -ENOMEM;
    return vega__h2_q_mark(&c->q, c->o.mem);
}

int vega__h2_put_window_update(vega_h2_conn *c, int32_t sid, uint32_t inc)
{
    VEGA_ASSERT(inc > 0 && inc <= H2_MAX_WINDOW);
    uint8_t *p = frame(c, 4, H2_WINDOW_UPDATE, 0, sid);
    if (!p)
        return -ENOMEM;
    h2_put32(p, inc);
    return 0;
}

int vega__h2_put_rst_stream(vega_h2_conn *c, int32_t sid, uint32_t code, bool answer)
{
    int rc = answer ? forced(c) : 0;
    if (rc < 0)
        return rc;
    uint8_t *p = frame(c, 4, H2_RST_STREAM, 0, sid);
    if (!p)
        return -ENOMEM;
    h2_put32(p, code);
    return answer ? vega__h2_q_mark(&c->q, c->o.mem) : 0;
}

int vega__h2_put_ping(vega_h2_conn *c, uint64_t opaque, bool ack)
{
    int rc = ack ? forced(c) : 0;
    if (rc < 0)
        return rc;
    uint8_t *p = frame(c, 8, H2_PING, ack ? H2_F_ACK : 0, 0);
    if (!p)
        return -ENOMEM;
    h2_put32(p, (uint32_t)(opaque >> 32));
    h2_put32(p + 4, (uint32_t)opaque);
    return ack ? vega__h2_q_mark(&c->q, c->o.mem) : 0;
}

int vega__h2_put_priority_update(vega_h2_conn *c, int32_t sid, const char *v, size_t len)
{
    uint8_t *p = frame(c, (uint32_t)(4 + len), H2_PRIORITY_UPDATE, 0, 0);
    if (!p)
        return -ENOMEM;
    h2_put32(p, (uint32_t)sid);
    if (len)
        memcpy(p + 4, v, len);
    return 0;
}

/* Drops the last n bytes pushed (what an encoding did not use). */
static void q_unpush(struct h2_q *q, size_t n)
{
    q->len -= n;
    q->in -= n;
}

int vega__h2_put_headers(vega_h2_conn *c, int32_t sid, const vega_hpack_field *f, size_t n,
                         bool end_stream)
{
    size_t bound = vega_hpack_encode_bound(c->enc, f, n);
    size_t fsz = c->peer.max_frame_size;
    size_t frames = bound / fsz + 1;
    if (bound > SIZE_MAX / 2 || frames > SIZE_MAX / 2 / H2_HDR_LEN)
        return -EINVAL;
    size_t hdrs = frames * H2_HDR_LEN;
    uint8_t *p = vega__h2_q_push(&c->q, c->o.mem, hdrs + bound);
    if (!p)
        return -ENOMEM;
    /* The block is encoded behind room for every frame header, then each chunk moves down
     * in front of its header: chunk i goes from hdrs + i*fsz to 9(i+1) + i*fsz, never past
     * where chunk i+1 still lies. */
    vega_ssize k = vega_hpack_encode(c->enc, p + hdrs, bound, f, n);
    if (k < 0) {
        q_unpush(&c->q, hdrs + bound);
        return (int)k;
    }
    size_t blk = (size_t)k, used = 0, at = 0;
    for (size_t i = 0; i == 0 || used < blk; i++) {
        size_t chunk = VEGA__MIN(fsz, blk - used);
        bool last = used + chunk == blk;
        uint8_t flags = last ? H2_F_END_HEADERS : 0;
        if (i == 0 && end_stream)
            flags |= H2_F_END_STREAM;
        memmove(p + at + H2_HDR_LEN, p + hdrs + used, chunk);
        vega__h2_frame_put(p + at, (uint32_t)chunk, i == 0 ? H2_HEADERS : H2_CONTINUATION, flags,
                           sid);
        at += H2_HDR_LEN + chunk;
        used += chunk;
    }
    q_unpush(&c->q, hdrs + bound - at);
    return 0;
}
