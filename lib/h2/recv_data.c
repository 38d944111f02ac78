/* SPDX-License-Identifier: MIT */
/* Receiving DATA (RFC 9113 §6.1): the stream state checks of §5.1, both flow-control windows
 * (§6.9), content-length against the sum of DATA (§8.1.1), and the body handed to the caller
 * in place, as it arrives. */
#include "h2_int.h"

int vega__h2_recv_data_start(vega_h2_conn *c)
{
    struct h2_frame *f = &c->rd.f;
    /* §6.1: "If a DATA frame is received whose Stream Identifier field is 0x00, the recipient
     * MUST respond with a connection error of type PROTOCOL_ERROR." */
    if (f->sid == 0)
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "DATA on stream 0");
    c->rd.body_start = (f->flags & H2_F_PADDED) ? 1 : 0;
    if (f->len < c->rd.body_start)
        return vega__h2_conn_error(c, VEGA_H2_FRAME_SIZE_ERROR, "DATA too short for its padding");
    /* §6.9: the whole payload counts against the connection's window, whatever becomes of
     * the stream ("Flow-controlled frames (i.e., DATA) received after sending RST_STREAM are
     * counted toward the connection flow-control window", §5.1). */
    if (!vega__h2_rwin_take(&c->rw, f->len))
        return vega__h2_conn_error(c, VEGA_H2_FLOW_CONTROL_ERROR,
                                   "DATA beyond the connection window");
    struct vega_h2_stream *s;
    switch (vega__h2_id_state(c, f->sid, &s)) {
    case H2_ID_IDLE:
        /* §5.1 idle: "Receiving any frame other than HEADERS or PRIORITY on a stream in this
         * state MUST be treated as a connection error of type PROTOCOL_ERROR." */
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "DATA on an idle stream");
    case H2_ID_CLOSED:
        c->rd.ignore = true;
        /* §5.1 closed: "An endpoint MUST ignore frames that it receives on closed streams
         * after it has sent a RST_STREAM frame"; the same after our final GOAWAY for streams
         * above its last id (§6.8). Otherwise "An endpoint that receives any frame other than
         * PRIORITY after receiving a RST_STREAM MUST treat that as a stream error (Section
         * 5.4.2) of type STREAM_CLOSED." */
        if (vega__h2_closed_has(c, f->sid) || (c->goaway_sent && f->sid > c->goaway_last_sent))
            return 0;
        return vega__h2_stream_error(c, NULL, f->sid, VEGA_H2_STREAM_CLOSED);
    case H2_ID_OPEN:
        break;
    }
    /* §5.1 half-closed (remote): "If an endpoint receives additional frames, other than
     * WINDOW_UPDATE, PRIORITY, or RST_STREAM, for a stream that is in this state, it MUST
     * respond with a stream error (Section 5.4.2) of type STREAM_CLOSED." */
    if (s->rx == H2_RX_DONE || s->state == VEGA_H2_STATE_HALF_CLOSED_REMOTE || s->closing) {
        c->rd.ignore = true;
        return vega__h2_stream_error(c, s, f->sid, VEGA_H2_STREAM_CLOSED);
    }
    /* §8.1: a message starts with its header section: DATA before (the final) one is
     * malformed. */
    if (s->rx == H2_RX_HEADERS) {
        c->rd.ignore = true;
        return vega__h2_stream_error(c, s, f->sid, VEGA_H2_PROTOCOL_ERROR);
    }
    /* §6.9.1: past the stream's window: "A receiver MAY respond with a stream error ... of
     * type FLOW_CONTROL_ERROR". */
    if (!vega__h2_rwin_take(&s->rw, f->len)) {
        c->rd.ignore = true;
        return vega__h2_stream_error(c, s, f->sid, VEGA_H2_FLOW_CONTROL_ERROR);
    }
    /* CVE-2019-9518: empty frames cost work and carry nothing. */
    if (f->len == 0 && !(f->flags & H2_F_END_STREAM)) {
        int rc = vega__h2_count_glitch(c, "empty DATA frames");
        if (rc < 0)
            return rc;
    }
    c->rd.data_sid = f->sid;
    return 0;
}

/* §8.1.1: "A request or response is also malformed if the value of a content-length header
 * field does not equal the sum of the DATA frame payload lengths that form the content";
 * content where none may be (HEAD, 204, 304) is malformed too. */
static bool body_ok(const struct vega_h2_stream *s, bool end)
{
    if (s->connect)
        return true;
    if (s->rx_no_body && s->rx_body)
        return false;
    if (s->rx_cl < 0 || s->rx_no_body)
        return true;
    return end ? s->rx_body == (uint64_t)s->rx_cl : s->rx_body <= (uint64_t)s->rx_cl;
}

int vega__h2_recv_data(vega_h2_conn *c, const uint8_t *p, size_t n, bool last)
{
    struct vega_h2_stream *s = c->rd.data_sid ? vega__h2_stream_find(c, c->rd.data_sid) : NULL;
    if (!s || s->closing) {
        c->rd.data_sid = 0; /* reset meanwhile: the rest is given back at the end */
        return 0;
    }
    struct h2_frame *f = &c->rd.f;
    bool end = last && (f->flags & H2_F_END_STREAM) && c->rd.body_end == f->len;
    s->rx_body += n;
    if (!body_ok(s, end)) {
        c->rd.data_sid = 0;
        return vega__h2_stream_error(c, s, s->id, VEGA_H2_PROTOCOL_ERROR);
    }
    s->unconsumed += n;
    c->unconsumed += n;
    c->rd.delivered += n;
    int32_t sid = s->id;
    if (c->cb->on_data &&
        c->cb->on_data(c->ud, sid, p, n, end ? VEGA_H2_FLAG_END_STREAM : VEGA_H2_FLAG_NONE))
        return VEGA_ERR_CALLBACK;
    if (!end)
        return 0;
    c->rd.end_done = true;
    s = vega__h2_stream_find(c, sid);
    return s ? vega__h2_stream_remote_end(c, s) : 0;
}

int vega__h2_recv_data_end(vega_h2_conn *c)
{
    struct h2_frame *f = &c->rd.f;
    int rc = 0;
    int32_t sid = c->rd.ignore ? 0 : c->rd.data_sid;
    struct vega_h2_stream *s = sid ? vega__h2_stream_find(c, sid) : NULL;
    if (s && (f->flags & H2_F_END_STREAM) && !c->rd.end_done) {
        /* END_STREAM after padding, or on an empty frame: its own event. */
        if (!body_ok(s, true))
            return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
        if (c->cb->on_data && c->cb->on_data(c->ud, sid, NULL, 0, VEGA_H2_FLAG_END_STREAM))
            return VEGA_ERR_CALLBACK;
        s = vega__h2_stream_find(c, sid);
        if (s)
            rc = vega__h2_stream_remote_end(c, s);
        s = vega__h2_stream_find(c, sid);
    }
    /* What nobody will consume -- padding, the frame of an ignored or reset stream -- goes
     * back to the windows at once. */
    size_t rest = f->len - c->rd.delivered;
    if (rc == 0 && rest && s && s->rx != H2_RX_DONE)
        (void)vega__h2_rwin_give(c, &s->rw, sid, rest);
    if (rc == 0 && rest)
        (void)vega__h2_conn_give(c, rest);
    return rc;
}
