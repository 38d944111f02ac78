/* SPDX-License-Identifier: MIT */
/* The connection's qlog events (vega_quic_opts.qlog, <vega/quic_qlog.h>): packets where they
 * are sealed or opened, losses where recovery declares them, and the rest (transport
 * parameters, connection state, recovery metrics, congestion state, key updates, the close)
 * by comparing what the connection holds with what was logged last, once per call into it.
 * Every entry point is called only when the hook is set, so a connection without it pays one
 * test of a pointer per packet and per call. */
#include <string.h>

#include <vega/quic_qlog.h>

#include "conn_int.h"

static void emit(vega_quic_conn *c, vega_quic_qlog_event *ev)
{
    ev->time = c->now;
    ev->server = c->server;
    c->cfg.qlog(c->cfg.qlog_user, ev);
}

void vega__quic_qlog_started(vega_quic_conn *c)
{
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_CONNECTION_STARTED,
                               .version = c->version,
                               .odcid = c->cids.odcid,
                               .odcid_len = c->cids.odcid_len,
                               .scid = c->cids.local[0].id,
                               .scid_len = c->cids.local[0].len,
                               .dcid = c->cids.peer[0].id,
                               .dcid_len = c->cids.peer[0].len,
                               .path = &c->paths.cur};
    emit(c, &ev);
    ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_PARAMETERS_SET, .tp = &c->hs.local_tp};
    emit(c, &ev);
}

static vega_quic_pkt_type level_type(int level)
{
    switch (level) {
    case VEGA_QUIC_LEVEL_INITIAL:
        return VEGA_QUIC_PKT_INITIAL;
    case VEGA_QUIC_LEVEL_EARLY:
        return VEGA_QUIC_PKT_0RTT;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        return VEGA_QUIC_PKT_HANDSHAKE;
    default:
        return VEGA_QUIC_PKT_1RTT;
    }
}

void vega__quic_qlog_sent(vega_quic_conn *c, const struct vega__quic_pkt *k, const uint8_t *pkt)
{
    vega_quic_qlog_packet p = {.type = k->h.type,
                               .pn = k->pn,
                               .version = k->h.version,
                               .dcid = k->h.dcid,
                               .dcid_len = k->h.dcid_len,
                               .scid = k->h.scid,
                               .scid_len = k->h.scid_len,
                               .key_phase = k->h.key_phase,
                               .length = k->hdr_len + k->len + VEGA_CRYPTO_AEAD_TAG_LEN,
                               .frames = pkt + k->hdr_len,
                               .frames_len = k->len,
                               .token = k->h.token,
                               .token_len = k->h.token_len};
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_PACKET_SENT, .pkt = &p};
    emit(c, &ev);
}

void vega__quic_qlog_recv(vega_quic_conn *c, const vega_quic_hdr *h, uint64_t pn, bool key_phase,
                          const uint8_t *payload, size_t payload_len)
{
    vega_quic_qlog_packet p = {.type = h->type,
                               .pn = pn,
                               .version = h->version,
                               .dcid = h->dcid,
                               .dcid_len = h->dcid_len,
                               .scid = h->scid,
                               .scid_len = h->scid_len,
                               .key_phase = key_phase,
                               .length = h->pkt_len,
                               .frames = payload,
                               .frames_len = payload_len,
                               .token = h->token,
                               .token_len = h->token_len,
                               .versions = h->versions,
                               .nversions = h->nversions};
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_PACKET_RECEIVED, .pkt = &p};
    emit(c, &ev);
}

void vega__quic_qlog_dropped(vega_quic_conn *c, const vega_quic_hdr *h, const char *trigger)
{
    vega_quic_qlog_packet p = {.type = h->type,
                               .version = h->version,
                               .dcid = h->dcid,
                               .dcid_len = h->dcid_len,
                               .scid = h->scid,
                               .scid_len = h->scid_len,
                               .length = h->pkt_len};
    vega_quic_qlog_event ev = {
        .type = VEGA_QUIC_QLOG_PACKET_DROPPED, .pkt = &p, .trigger = trigger};
    emit(c, &ev);
}

void vega__quic_qlog_lost(vega_quic_conn *c, int level, uint64_t pn, const char *trigger)
{
    vega_quic_qlog_packet p = {.type = level_type(level), .pn = pn};
    vega_quic_qlog_event ev = {.type = VEGA_QUIC_QLOG_PACKET_LOST, .pkt = &p, .trigger = trigger};
    emit(c, &ev);
}

static vega_quic_qlog_cc_state cc_state(const struct vega__quic_cc *cc)
{
    if (cc->recovery)
        return VEGA_QUIC_QLOG_CC_RECOVERY;
    return cc->cwnd < cc->ssthresh ? VEGA_QUIC_QLOG_CC_SLOW_START : VEGA_QUIC_QLOG_CC_AVOIDANCE;
}

static vega_quic_qlog_conn_state conn_state(const vega_quic_conn *c)
{
    switch (c->state) {
    case VEGA__QUIC_ST_CLOSING:
        return VEGA_QUIC_QLOG_ST_CLOSING;
    case VEGA__QUIC_ST_DRAINING:
        return VEGA_QUIC_QLOG_ST_DRAINING;
    case VEGA__QUIC_ST_CLOSED:
        return VEGA_QUIC_QLOG_ST_CLOSED;
    default:
        return c->hs.confirmed ? VEGA_QUIC_QLOG_ST_HANDSHAKE_CONFIRMED
                               : VEGA_QUIC_QLOG_ST_HANDSHAKE_COMPLETE;
    }
}

static bool metrics_eq(const vega_quic_qlog_metrics *a, const vega_quic_qlog_metrics *b)
{
    return a->min_rtt == b->min_rtt && a->smoothed_rtt == b->smoothed_rtt &&
           a->latest_rtt == b->latest_rtt && a->rtt_variance == b->rtt_variance &&
           a->cwnd == b->cwnd && a->bytes_in_flight == b->bytes_in_flight &&
           a->ssthresh == b->ssthresh && a->pto_count == b->pto_count;
}

void vega__quic_qlog_poll(vega_quic_conn *c, bool metrics)
{
    struct vega__quic_conn_qlog *q = &c->qlog;
    vega_quic_qlog_event ev;
    if (c->hs.peer_tp_ok && !q->peer_tp) {
        q->peer_tp = true;
        ev = (vega_quic_qlog_event){
            .type = VEGA_QUIC_QLOG_PARAMETERS_SET, .remote = true, .tp = &c->hs.peer_tp};
        emit(c, &ev);
    }
    /* Connection state: each step once, in order (one call may pass several). */
    if (c->hs.done && !q->complete) {
        q->complete = true;
        ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_CONNECTION_STATE,
                                    .state = VEGA_QUIC_QLOG_ST_HANDSHAKE_COMPLETE};
        emit(c, &ev);
    }
    if (c->hs.confirmed && !q->confirmed) {
        q->confirmed = true;
        ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_CONNECTION_STATE,
                                    .state = VEGA_QUIC_QLOG_ST_HANDSHAKE_CONFIRMED};
        emit(c, &ev);
    }
    if (c->state >= VEGA__QUIC_ST_CLOSING) {
        vega_quic_qlog_conn_state st = conn_state(c);
        if (!q->closed_logged) {
            q->closed_logged = true;
            ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_CONNECTION_CLOSED,
                                        .remote = c->state == VEGA__QUIC_ST_DRAINING,
                                        .close_code = c->closing.code,
                                        .close_app = c->closing.app,
                                        .reason = c->closing.reason,
                                        .reason_len = strlen(c->closing.reason)};
            emit(c, &ev);
        }
        if (!q->state_logged || q->state != st) {
            q->state_logged = true;
            q->state = st;
            ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_CONNECTION_STATE, .state = st};
            emit(c, &ev);
        }
    }
    if (c->keys.key_updates != q->key_updates) {
        q->key_updates = c->keys.key_updates;
        ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_KEY_UPDATED,
                                    .remote = c->keys.ku_pending ? false : true,
                                    .key_generation = c->keys.key_updates};
        emit(c, &ev);
    }
    if (!metrics)
        return; /* after a write: what it changed (bytes in flight) shows with the next ACK */
    const struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(c->rec);
    vega_quic_qlog_metrics m = {.min_rtt = rtt->has_sample ? rtt->min : 0,
                                .smoothed_rtt = rtt->smoothed,
                                .latest_rtt = rtt->latest,
                                .rtt_variance = rtt->var,
                                .cwnd = cc->cwnd,
                                .bytes_in_flight = cc->in_flight,
                                .ssthresh = cc->ssthresh,
                                .pto_count = vega__quic_recovery_pto_count(c->rec)};
    if (!q->metrics_logged || !metrics_eq(&m, &q->metrics)) {
        q->metrics_logged = true;
        q->metrics = m;
        ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_METRICS_UPDATED, .metrics = &m};
        emit(c, &ev);
    }
    vega_quic_qlog_cc_state cs = cc_state(cc);
    if (!q->cc_logged || cs != q->cc) {
        q->cc_logged = true;
        q->cc = cs;
        ev = (vega_quic_qlog_event){.type = VEGA_QUIC_QLOG_CONGESTION_STATE, .cc_state = cs};
        emit(c, &ev);
    }
}
