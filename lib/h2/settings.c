/* SPDX-License-Identifier: MIT */
/* HTTP/2 settings (RFC 9113 §6.5): the peer's, applied entry by entry with the ranges each
 * must respect, and ours, in force once acknowledged (§6.5.3), plus RFC 8441 §3's
 * SETTINGS_ENABLE_CONNECT_PROTOCOL and RFC 9218 §2.1's SETTINGS_NO_RFC7540_PRIORITIES. */
#include "h2_int.h"

void vega__h2_settings_defaults(vega_h2_settings *s)
{
    /* §6.5.2: the initial values. */
    s->header_table_size = VEGA_HPACK_DEFAULT_TABLE_SIZE;
    s->enable_push = 1;
    s->max_concurrent_streams = UINT32_MAX;
    s->initial_window_size = H2_DEFAULT_WINDOW;
    s->max_frame_size = H2_MIN_FRAME_SIZE;
    s->max_header_list_size = UINT32_MAX;
    s->enable_connect_protocol = 0;
    s->no_rfc7540_priorities = 0;
}

/* §6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE moves every stream's send window by the
 * difference. */
static int move_send_windows(vega_h2_conn *c, uint32_t v)
{
    int64_t delta = (int64_t)v - (int64_t)c->peer.initial_window_size;
    for (size_t i = 0; i < c->nstreams; i++) {
        struct vega_h2_stream *s = c->streams[i];
        /* "An endpoint MUST treat a change to SETTINGS_INITIAL_WINDOW_SIZE that causes any
         * flow-control window to exceed the maximum size as a connection error of type
         * FLOW_CONTROL_ERROR." */
        if (s->send_window + delta > (int64_t)H2_MAX_WINDOW)
            return vega__h2_conn_error(c, VEGA_H2_FLOW_CONTROL_ERROR,
                                       "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window");
    }
    c->peer.initial_window_size = v;
    for (size_t i = 0; i < c->nstreams; i++) {
        struct vega_h2_stream *s = c->streams[i];
        bool was = s->send_window <= 0;
        s->send_window += delta;
        if (was && s->send_window > 0)
            vega__h2_stream_unblocked(c, s);
    }
    return 0;
}

int vega__h2_settings_apply(vega_h2_conn *c, uint16_t id, uint32_t v)
{
    switch (id) {
    case H2_S_HEADER_TABLE_SIZE:
        c->peer.header_table_size = v;
        return vega_hpack_encoder_set_max_table_size(c->enc, v);
    case H2_S_ENABLE_PUSH:
        /* "Any value other than 0 or 1 MUST be treated as a connection error of type
         * PROTOCOL_ERROR." ... "A client MUST treat receipt of a SETTINGS frame with
         * SETTINGS_ENABLE_PUSH set to 1 as a connection error of type PROTOCOL_ERROR." */
        if (v > 1 || (!c->server && v == 1))
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "bad SETTINGS_ENABLE_PUSH");
        c->peer.enable_push = v;
        return 0;
    case H2_S_MAX_CONCURRENT_STREAMS:
        c->peer.max_concurrent_streams = v;
        return 0;
    case H2_S_INITIAL_WINDOW_SIZE:
        /* "Values above the maximum flow-control window size of 2^31-1 MUST be treated as a
         * connection error of type FLOW_CONTROL_ERROR." */
        if (v > H2_MAX_WINDOW)
            return vega__h2_conn_error(c, VEGA_H2_FLOW_CONTROL_ERROR,
                                       "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1");
        return move_send_windows(c, v);
    case H2_S_MAX_FRAME_SIZE:
        /* "Values outside this range MUST be treated as a connection error of type
         * PROTOCOL_ERROR." (2^14 .. 2^24-1) */
        if (v < H2_MIN_FRAME_SIZE || v > H2_MAX_FRAME_SIZE)
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR,
                                       "SETTINGS_MAX_FRAME_SIZE out of range");
        c->peer.max_frame_size = v;
        return 0;
    case H2_S_MAX_HEADER_LIST_SIZE:
        c->peer.max_header_list_size = v;
        return 0;
    case H2_S_ENABLE_CONNECT_PROTOCOL:
        /* RFC 8441 §3: 0 or 1, and "A sender MUST NOT send a SETTINGS_ENABLE_CONNECT_PROTOCOL
         * parameter with the value of 0 after previously sending a value of 1." */
        if (v > 1 || (c->peer.enable_connect_protocol == 1 && v == 0))
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR,
                                       "bad SETTINGS_ENABLE_CONNECT_PROTOCOL");
        c->peer.enable_connect_protocol = v;
        return 0;
    case H2_S_NO_RFC7540_PRIORITIES:
        /* RFC 9218 §2.1: "A value other than 0 or 1 MUST be treated as a connection error of
         * type PROTOCOL_ERROR." */
        if (v > 1)
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR,
                                       "bad SETTINGS_NO_RFC7540_PRIORITIES");
        c->peer.no_rfc7540_priorities = v;
        return 0;
    default:
        /* "An endpoint that receives a SETTINGS frame with any unknown or unsupported
         * identifier MUST ignore that setting." */
        return 0;
    }
}

int vega__h2_settings_acked(vega_h2_conn *c)
{
    c->local_acked = true;
    c->settings_deadline = VEGA_TSTAMP_MAX;
    vega__h2_rtt_sample(c, c->settings_sent_at);
    /* Our decoder's table limit is now the one we advertised; a smaller one makes the peer's
     * next block start with a size update (RFC 7541 §4.2). */
    int rc = vega_hpack_decoder_set_max_table_size(c->dec, c->local.header_table_size);
    if (rc < 0)
        return vega__h2_conn_error(c, VEGA_H2_COMPRESSION_ERROR, "decoder refused the table size");
    /* Streams opened before the ACK allowed 65535; a smaller initial window applies now,
     * moving their limits by the difference (§6.9.2). */
    if (c->local.initial_window_size < H2_DEFAULT_WINDOW) {
        int64_t delta = (int64_t)c->local.initial_window_size - H2_DEFAULT_WINDOW;
        for (size_t i = 0; i < c->nstreams; i++)
            c->streams[i]->rw.limit += delta;
    }
    return 0;
}
