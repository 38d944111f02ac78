/* SPDX-License-Identifier: MIT */
/* Receiving the control frames of RFC 9113 §6: RST_STREAM, SETTINGS (and its ACK), PING,
 * GOAWAY, WINDOW_UPDATE, PRIORITY (parsed, checked, otherwise ignored: RFC 9218 replaces it),
 * and RFC 9218's PRIORITY_UPDATE. */
#include "h2_int.h"

static int rst_stream(vega_h2_conn *c)
{
    int32_t sid = c->rd.f.sid;
    uint32_t code = h2_get32(c->rd.small);
    struct vega_h2_stream *s;
    switch (vega__h2_id_state(c, sid, &s)) {
    case H2_ID_IDLE:
        /* §6.4: "If a RST_STREAM frame identifying an idle stream is received, the recipient
         * MUST treat this as a connection error of type PROTOCOL_ERROR." */
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "RST_STREAM on an idle stream");
    case H2_ID_CLOSED:
        /* §5.1 closed: "Endpoints MUST ignore WINDOW_UPDATE or RST_STREAM frames received in
         * this state". */
        return 0;
    case H2_ID_OPEN:
        break;
    }
    /* Rapid Reset (CVE-2023-44487): opening and resetting streams at once costs the peer
     * nothing and us a stream's work each; the rate is bounded. */
    int rc = vega__h2_count_reset(c);
    if (rc < 0)
        return rc;
    return vega__h2_stream_close(c, s, code, VEGA_H2_CLOSE_RESET_BY_PEER);
}

static int ping(vega_h2_conn *c)
{
    uint64_t opaque = (uint64_t)h2_get32(c->rd.small) << 32 | h2_get32(c->rd.small + 4);
    if (!(c->rd.f.flags & H2_F_ACK)) {
        /* §6.7: "Receivers of a PING frame that does not include an ACK flag MUST send a PING
         * frame with the ACK flag set in response, with an identical frame payload."
         * CVE-2019-9512: each costs an answer, so their rate is bounded too. */
        int rc = vega__h2_count_glitch(c, "PING flood");
        return rc < 0 ? rc : vega__h2_put_ping(c, opaque, true);
    }
    if (opaque == H2_SHUTDOWN_PING && c->shutdown == 1)
        return vega__h2_shutdown_final(c);
    for (size_t i = 0; i < c->npings; i++) {
        if (c->pings[i].opaque != opaque)
            continue;
        vega__h2_rtt_sample(c, c->pings[i].at);
        c->pings[i] = c->pings[--c->npings];
        if (c->cb->on_ping_ack && c->cb->on_ping_ack(c->ud, opaque))
            return VEGA_ERR_CALLBACK;
        return 0;
    }
    return vega__h2_count_glitch(c, "unexpected PING ACK");
}

static int goaway(vega_h2_conn *c)
{
    uint32_t last = h2_get32(c->rd.small) & 0x7fffffffu;
    uint32_t code = h2_get32(c->rd.small + 4);
    /* §6.8: "Endpoints MUST NOT increase the value they send in the last stream identifier":
     * keep the smallest seen. */
    if (last > c->goaway_last_recv)
        last = c->goaway_last_recv;
    c->goaway_received = true;
    c->goaway_last_recv = last;
    if (code != VEGA_H2_NO_ERROR && !c->has_err) {
        c->has_err = true;
        c->err = (vega_h2_error){
            .code = code, .remote = true, .last_stream_id = last, .reason = "GOAWAY from the peer"};
    }
    /* Our streams above last were not processed: safe to retry (§8.7). */
    int rc = 0;
    while (!c->server && c->nstreams && (uint32_t)c->streams[c->nstreams - 1]->id > last) {
        int r = vega__h2_stream_close(c, c->streams[c->nstreams - 1], VEGA_H2_REFUSED_STREAM,
                                      VEGA_H2_CLOSE_REFUSED);
        if (r < 0)
            rc = r;
    }
    if (rc < 0)
        return rc;
    size_t dl = c->rd.small_len - 8;
    if (c->cb->on_goaway && c->cb->on_goaway(c->ud, last, code, c->rd.small + 8, dl))
        return VEGA_ERR_CALLBACK;
    return 0;
}

static int window_update(vega_h2_conn *c)
{
    int32_t sid = c->rd.f.sid;
    /* §6.9: "The meaning of the reserved bit is undefined ... MUST be ignored". */
    uint32_t inc = h2_get32(c->rd.small) & 0x7fffffffu;
    if (sid == 0) {
        /* "A receiver MUST treat the receipt of a WINDOW_UPDATE frame with a flow-control
         * window increment of 0 as a stream error ...; errors on the connection flow-control
         * window MUST be treated as a connection error". §6.9.1: "If a sender receives a
         * WINDOW_UPDATE that causes a flow-control window to exceed this maximum, it MUST
         * terminate either the stream or the connection, as appropriate." */
        if (inc == 0)
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
        if (c->send_window + inc > (int64_t)H2_MAX_WINDOW)
            return vega__h2_conn_error(c, VEGA_H2_FLOW_CONTROL_ERROR,
                                       "connection window above 2^31-1");
        c->send_window += inc;
        if (c->send_window > 0)
            c->stalled_since = VEGA_TSTAMP_MAX;
        return 0;
    }
    struct vega_h2_stream *s;
    switch (vega__h2_id_state(c, sid, &s)) {
    case H2_ID_IDLE:
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
    case H2_ID_CLOSED:
        return 0; /* §5.1 closed: MUST be ignored */
    case H2_ID_OPEN:
        break;
    }
    if (inc == 0)
        return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    if (s->send_window + inc > (int64_t)H2_MAX_WINDOW)
        return vega__h2_stream_error(c, s, sid, VEGA_H2_FLOW_CONTROL_ERROR);
    bool was = s->send_window <= 0;
    s->send_window += inc;
    if (was && s->send_window > 0)
        vega__h2_stream_unblocked(c, s);
    return 0;
}

static int priority(vega_h2_conn *c)
{
    int32_t sid = c->rd.f.sid;
    uint32_t dep = h2_get32(c->rd.small) & 0x7fffffffu;
    /* §5.3.1: "A stream cannot depend on itself. An endpoint MUST treat this as a stream error
     * (Section 5.4.2) of type PROTOCOL_ERROR." (On an idle stream, where RST_STREAM may not
     * go, the connection's.) Otherwise the RFC 7540 scheme is ignored (§5.3.2, RFC 9218),
     * but a flood of them still costs parsing. */
    if (dep == (uint32_t)sid) {
        struct vega_h2_stream *s;
        enum h2_idstate st = vega__h2_id_state(c, sid, &s);
        if (st == H2_ID_IDLE)
            return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "PRIORITY depends on itself");
        if (st == H2_ID_CLOSED && vega__h2_closed_has(c, sid))
            return 0;
        return vega__h2_stream_error(c, s, sid, VEGA_H2_PROTOCOL_ERROR);
    }
    return vega__h2_count_glitch(c, "PRIORITY flood");
}

static int priority_update(vega_h2_conn *c)
{
    uint32_t id = h2_get32(c->rd.small) & 0x7fffffffu;
    /* RFC 9218 §7.1: "If a PRIORITY_UPDATE frame is received with a Prioritized Stream ID of
     * 0x0, the recipient MUST respond with a connection error of type PROTOCOL_ERROR." A
     * server-initiated id could only name a push stream, and there are none: "the server MUST
     * respond with a connection error of type PROTOCOL_ERROR". */
    if (id == 0 || !(id & 1))
        return vega__h2_conn_error(c, VEGA_H2_PROTOCOL_ERROR, "bad PRIORITY_UPDATE stream");
    if (c->rd.f.len > 4 + H2_PRIO_VALUE_MAX)
        return vega__h2_count_glitch(c, "oversized PRIORITY_UPDATE");
    if (c->cb->on_priority_update &&
        c->cb->on_priority_update(c->ud, (int32_t)id, (const char *)c->rd.small + 4,
                                  c->rd.small_len - 4))
        return VEGA_ERR_CALLBACK;
    return 0;
}

int vega__h2_recv_small(vega_h2_conn *c)
{
    switch (c->rd.f.type) {
    case H2_RST_STREAM:
        return rst_stream(c);
    case H2_PING:
        return ping(c);
    case H2_GOAWAY:
        return goaway(c);
    case H2_WINDOW_UPDATE:
        return window_update(c);
    case H2_PRIORITY:
        return priority(c);
    case H2_PRIORITY_UPDATE:
        return priority_update(c);
    default:
        return 0;
    }
}

int vega__h2_recv_settings_entry(vega_h2_conn *c, const uint8_t *e)
{
    if (c->rd.f.flags & H2_F_ACK)
        return 0; /* cannot happen: an ACK has no payload */
    return vega__h2_settings_apply(c, (uint16_t)(e[0] << 8 | e[1]), h2_get32(e + 2));
}

int vega__h2_recv_settings_end(vega_h2_conn *c)
{
    if (c->rd.f.flags & H2_F_ACK) {
        /* We send one SETTINGS frame; an ACK for nothing costs a little and means nothing. */
        if (c->local_acked)
            return vega__h2_count_glitch(c, "unexpected SETTINGS ACK");
        return vega__h2_settings_acked(c);
    }
    /* CVE-2019-9515: every SETTINGS costs an ACK and a pass over the streams. */
    if (c->peer_settings_seen) {
        int rc = vega__h2_count_glitch(c, "SETTINGS flood");
        if (rc < 0)
            return rc;
    }
    c->peer_settings_seen = true;
    int rc = vega__h2_put_settings_ack(c);
    if (rc < 0)
        return rc;
    if (c->cb->on_settings && c->cb->on_settings(c->ud, &c->peer))
        return VEGA_ERR_CALLBACK;
    return 0;
}
