/* SPDX-License-Identifier: MIT */
/* The QUIC connection's receive path: datagrams split into packets, packets decrypted with the
 * right keys (or kept until those arrive), duplicates dropped, frames acted on (RFC 9000 §12,
 * §13, §19; RFC 9001 §5, §6). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

#define MAX_COALESCED 8

/* Returns 0 or -ENOMEM: the event could not be queued, so the packet goes unacknowledged and
 * its data, sent again, raises it then (marked before, it would never come). */
static int readable(vega_quic_conn *c, struct vega__quic_stream *s)
{
    if (s->readable_ev || s->fin_read)
        return 0;
    if (vega__quic_recvbuf_readable(&s->rb) == 0 && !vega__quic_recvbuf_is_complete(&s->rb))
        return 0;
    vega_quic_event ev = {.type = VEGA_QUIC_EV_STREAM_READABLE, .stream_id = s->id};
    int rc = vega__quic_ev_push(c, &ev);
    if (rc == 0)
        s->readable_ev = true;
    return rc;
}

static int on_crypto(vega_quic_conn *c, int level, const vega_quic_frame *f, uint64_t *wire_err)
{
    struct vega__quic_space *sp = &c->sp[vega__quic_level_space(level)];
    int rc = vega__quic_recvbuf_insert(&sp->crypto_rx, f->u.crypto.offset, f->u.crypto.data,
                                       f->u.crypto.len, false, wire_err);
    if (rc < 0) {
        if (rc == VEGA_ERR_PROTO && *wire_err == VEGA_QUIC_FLOW_CONTROL_ERROR)
            *wire_err = VEGA_QUIC_CRYPTO_BUFFER_EXCEEDED;
        return rc;
    }
    const uint8_t *p;
    size_t n;
    while ((n = vega__quic_recvbuf_peek(&sp->crypto_rx, &p)) > 0) {
        rc = vega__qtls_recv(c->hs.tls, (vega_quic_level)level, p, n, wire_err);
        vega__quic_recvbuf_consume(&sp->crypto_rx, n);
        if (rc < 0 && rc != VEGA_ERR_PROTO) {
            /* A local failure (no memory, libcrypto) mid-message leaves the handshake failed
             * for good, its bytes consumed: close now rather than linger half-open. */
            vega__quic_close_err(c, *wire_err ? *wire_err : VEGA_QUIC_INTERNAL_ERROR, 0,
                                 vega__qtls_reason(c->hs.tls));
        }
        if (rc < 0)
            return rc;
    }
    return vega__quic_tls_progress(c);
}

static int on_stream(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    struct vega__quic_stream *s;
    int rc = vega__quic_stream_peer(c, f->u.stream.stream_id, false, &s, wire_err);
    if (rc < 0 || !s)
        return rc;
    uint64_t end = f->u.stream.offset + f->u.stream.len;
    uint64_t old = s->rb.highest;
    uint64_t delta = end > old ? end - old : 0;
    if (end > s->fc.limit || c->flow.fc.highest + delta > c->flow.fc.limit) {
        *wire_err = VEGA_QUIC_FLOW_CONTROL_ERROR;
        return VEGA_ERR_PROTO;
    }
    if (s->peer_reset) {
        /* Data after a reset is dropped, but it may not go past the reset's final size
         * (RFC 9000 §4.5). */
        if (end > s->rb.final_size || (f->u.stream.fin && end != s->rb.final_size)) {
            *wire_err = VEGA_QUIC_FINAL_SIZE_ERROR;
            return VEGA_ERR_PROTO;
        }
        return 0;
    }
    rc = vega__quic_recvbuf_insert(&s->rb, f->u.stream.offset, f->u.stream.data, f->u.stream.len,
                                   f->u.stream.fin, wire_err);
    if (rc < 0)
        return rc;
    if (delta) {
        vega__quic_fc_on_recv(&s->fc, end);
        vega__quic_fc_on_recv(&c->flow.fc, c->flow.fc.highest + delta);
    }
    if (s->stop_queued) {
        /* We asked the peer to stop: what still arrives is dropped, but counted as read so the
         * connection window does not shrink for good. */
        uint8_t sink[512];
        bool fin;
        size_t n;
        do {
            fin = false;
            n = vega__quic_recvbuf_read(&s->rb, sink, sizeof sink, &fin);
            vega__quic_fc_on_consumed(&c->flow.fc, n);
        } while (n > 0 && !fin);
        if (vega__quic_fc_should_update(&c->flow.fc))
            c->flow.max_data_queued = true;
        if (fin) {
            s->fin_read = true;
            vega__quic_stream_maybe_free(c, s);
        }
        return 0;
    }
    return readable(c, s);
}

static int on_reset(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    struct vega__quic_stream *s;
    int rc = vega__quic_stream_peer(c, f->u.reset_stream.stream_id, false, &s, wire_err);
    if (rc < 0 || !s || s->peer_reset)
        return rc;
    uint64_t fs = f->u.reset_stream.final_size;
    uint64_t old = s->rb.highest;
    uint64_t delta = fs > old ? fs - old : 0;
    if (fs > s->fc.limit || c->flow.fc.highest + delta > c->flow.fc.limit) {
        *wire_err = VEGA_QUIC_FLOW_CONTROL_ERROR;
        return VEGA_ERR_PROTO;
    }
    uint64_t unread = s->rb.read_off;
    rc = vega__quic_recvbuf_reset(&s->rb, fs, wire_err);
    if (rc < 0)
        return rc;
    if (delta)
        vega__quic_fc_on_recv(&c->flow.fc, c->flow.fc.highest + delta);
    /* Everything up to the final size counts against the connection window; give back what
     * the application will now never read (RFC 9000 §4.5). */
    vega__quic_fc_on_consumed(&c->flow.fc, fs - unread);
    if (vega__quic_fc_should_update(&c->flow.fc))
        c->flow.max_data_queued = true;
    s->peer_reset = true;
    s->peer_reset_code = f->u.reset_stream.error_code;
    vega__quic_ev_simple(c, VEGA_QUIC_EV_STREAM_RESET, s->id, s->peer_reset_code);
    vega__quic_stream_maybe_free(c, s);
    return 0;
}

static int on_datagram(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    /* RFC 9221 §3: a DATAGRAM we did not allow, or larger than allowed, is a violation. */
    size_t frame_len = 1 + vega_quic_varint_len(f->u.datagram.len) + f->u.datagram.len;
    if (!c->cfg.max_datagram_frame_size || frame_len > c->cfg.max_datagram_frame_size) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    if (c->dgram.recv_n == c->cfg.max_datagram_queue)
        return 0; /* unreliable by design: the application is behind, drop it */
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, f->u.datagram.len ? f->u.datagram.len : 1);
    if (!copy)
        return -ENOMEM;
    if (f->u.datagram.len)
        memcpy(copy, f->u.datagram.data, f->u.datagram.len);
    struct vega__quic_dgram *d =
        &c->dgram.recv[(c->dgram.recv_head + c->dgram.recv_n) % c->cfg.max_datagram_queue];
    d->data = copy;
    d->len = f->u.datagram.len;
    c->dgram.recv_n++;
    vega__quic_ev_simple(c, VEGA_QUIC_EV_DATAGRAM, 0, 0);
    return 0;
}

static int on_ack(vega_quic_conn *c, int space, const vega_quic_frame *f, uint64_t *wire_err)
{
    uint64_t exponent = space == VEGA__QUIC_SPACE_APP ? c->hs.peer_tp.ack_delay_exponent : 3;
    int rc = vega__quic_recovery_on_ack_frame(c->rec, space, f, exponent, c->now, wire_err);
    if (rc == 0 && !c->server && space == VEGA__QUIC_SPACE_HANDSHAKE)
        vega__quic_recovery_set_peer_validated(c->rec, true);
    return rc;
}

static int on_stop_sending(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    struct vega__quic_stream *s;
    int rc = vega__quic_stream_peer(c, f->u.stop_sending.stream_id, true, &s, wire_err);
    if (rc == 0 && s && !s->reset_queued) {
        s->reset_queued = true;
        s->reset_code = f->u.stop_sending.error_code;
        vega__quic_sendbuf_drop(&s->sb); /* nothing is sent again: referenced bytes go back */
        vega__quic_sendq_push(c, s);
        vega__quic_ev_simple(c, VEGA_QUIC_EV_STREAM_STOP, s->id, f->u.stop_sending.error_code);
    }
    return rc;
}

static int on_max_stream_data(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    struct vega__quic_stream *s;
    int rc = vega__quic_stream_peer(c, f->u.stream_limit.stream_id, true, &s, wire_err);
    if (rc == 0 && s && f->u.stream_limit.max > s->max_send) {
        s->max_send = f->u.stream_limit.max;
        if (vega__quic_sendbuf_has_pending(&s->sb))
            vega__quic_sendq_push(c, s);
    }
    return rc;
}

static void on_max_streams(vega_quic_conn *c, const vega_quic_frame *f)
{
    int t = f->type == VEGA_QUIC_FT_MAX_STREAMS_UNI;
    if (f->u.limit.max <= c->streams.peer_max[t])
        return;
    c->streams.peer_max[t] = f->u.limit.max;
    if (c->streams.blocked_ev) {
        c->streams.blocked_ev = false;
        vega__quic_ev_simple(c, VEGA_QUIC_EV_STREAMS_AVAILABLE, 0, 0);
    }
}

static int on_handshake_done(vega_quic_conn *c, uint64_t *wire_err)
{
    if (c->server) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    vega__quic_confirm(c);
    return 0;
}

static int on_new_token(vega_quic_conn *c, const vega_quic_frame *f, uint64_t *wire_err)
{
    if (c->server) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, f->u.new_token.len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, f->u.new_token.token, f->u.new_token.len);
    vega_quic_event ev = {.type = VEGA_QUIC_EV_NEW_TOKEN, .data = copy, .len = f->u.new_token.len};
    if (vega__quic_ev_push_latest(c, &ev) < 0)
        vega__quic_free(c->cfg.mem, copy);
    return 0;
}

/* Acts on one frame of a packet at level. A peer violation reports the frame's type with the
 * close, except for the frames a client alone may receive and CONNECTION_CLOSE. */
static int recv_frame(vega_quic_conn *c, int level, const vega_quic_frame *f, uint64_t *wire_err)
{
    int rc = 0;
    struct vega__quic_stream *s;
    switch (f->type) {
    case VEGA_QUIC_FT_PADDING:
    case VEGA_QUIC_FT_PING:
        break;
    case VEGA_QUIC_FT_DATA_BLOCKED:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_UNI:
        break; /* our limits are raised as the application reads, not on demand */
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN:
        rc = on_ack(c, vega__quic_level_space(level), f, wire_err);
        break;
    case VEGA_QUIC_FT_CRYPTO:
        rc = on_crypto(c, level, f, wire_err);
        break;
    case VEGA_QUIC_FT_STREAM:
        rc = on_stream(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_RESET_STREAM:
        rc = on_reset(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_STOP_SENDING:
        rc = on_stop_sending(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_MAX_DATA:
        if (f->u.limit.max > c->flow.max_send_data)
            c->flow.max_send_data = f->u.limit.max;
        break;
    case VEGA_QUIC_FT_MAX_STREAM_DATA:
        rc = on_max_stream_data(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_MAX_STREAMS_BIDI:
    case VEGA_QUIC_FT_MAX_STREAMS_UNI:
        on_max_streams(c, f);
        break;
    case VEGA_QUIC_FT_STREAM_DATA_BLOCKED:
        rc = vega__quic_stream_peer(c, f->u.stream_limit.stream_id, false, &s, wire_err);
        break;
    case VEGA_QUIC_FT_NEW_CONNECTION_ID:
        rc = vega__quic_on_new_cid(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_RETIRE_CONNECTION_ID:
        rc = vega__quic_on_retire_cid(c, f, wire_err);
        break;
    case VEGA_QUIC_FT_PATH_CHALLENGE:
        vega__quic_on_path_challenge(c, f);
        break;
    case VEGA_QUIC_FT_PATH_RESPONSE:
        vega__quic_on_path_response(c, f);
        break;
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
        return vega__quic_on_close(c, f);
    case VEGA_QUIC_FT_HANDSHAKE_DONE:
        return on_handshake_done(c, wire_err);
    case VEGA_QUIC_FT_NEW_TOKEN:
        return on_new_token(c, f, wire_err);
    case VEGA_QUIC_FT_DATAGRAM:
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        rc = on_datagram(c, f, wire_err);
        break;
    }
    if (rc == VEGA_ERR_PROTO)
        c->closing.frame_type = f->type;
    return rc;
}

int vega__quic_recv_frames(vega_quic_conn *c, int level, vega_quic_pkt_type ptype, const uint8_t *p,
                           size_t len, bool *ack_eliciting, bool *probing, uint64_t *wire_err)
{
    *probing = true;
    /* §12.4: "An endpoint MUST treat receipt of a packet containing no frames as a connection
     * error of type PROTOCOL_VIOLATION." */
    if (len == 0) {
        *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        return VEGA_ERR_PROTO;
    }
    /* Each frame is checked as it is decoded (what vega_quic_payload_check does for a whole
     * payload, without a second pass): a malformed or misplaced one closes the connection,
     * whatever the frames before it did. */
    while (len) {
        vega_quic_frame f;
        vega_ssize n = vega_quic_frame_decode(&f, p, len, wire_err);
        if (n < 0)
            return (int)n;
        /* §12.4: a frame in a packet type it is not allowed in is a PROTOCOL_VIOLATION. */
        if (!vega_quic_frame_allowed(f.type, ptype)) {
            *wire_err = VEGA_QUIC_PROTOCOL_VIOLATION;
            if (c->state < VEGA__QUIC_ST_CLOSING)
                c->closing.frame_type = f.type; /* the close names it (§19.19) */
            return VEGA_ERR_PROTO;
        }
        p += n;
        len -= (size_t)n;
        if (vega_quic_frame_is_ack_eliciting(f.type))
            *ack_eliciting = true;
        /* §9.1: only these may probe a path without moving the connection to it. */
        if (f.type != VEGA_QUIC_FT_PATH_CHALLENGE && f.type != VEGA_QUIC_FT_PATH_RESPONSE &&
            f.type != VEGA_QUIC_FT_NEW_CONNECTION_ID && f.type != VEGA_QUIC_FT_PADDING)
            *probing = false;
        int rc = recv_frame(c, level, &f, wire_err);
        if (rc < 0)
            return rc;
        if (c->state >= VEGA__QUIC_ST_DRAINING)
            return 0;
    }
    return 0;
}

/* ---- packets -------------------------------------------------------------------------------- */

static int pkt_level(vega_quic_pkt_type t)
{
    switch (t) {
    case VEGA_QUIC_PKT_INITIAL:
        return VEGA_QUIC_LEVEL_INITIAL;
    case VEGA_QUIC_PKT_0RTT:
        return VEGA_QUIC_LEVEL_EARLY;
    case VEGA_QUIC_PKT_HANDSHAKE:
        return VEGA_QUIC_LEVEL_HANDSHAKE;
    case VEGA_QUIC_PKT_1RTT:
        return VEGA_QUIC_LEVEL_APP;
    default:
        return -1;
    }
}

static void keep_pending(vega_quic_conn *c, const uint8_t *pkt, size_t len, uint8_t ecn)
{
    if (c->rx.npending == VEGA__QUIC_MAX_PENDING_PKTS)
        return;
    uint8_t *copy = vega__quic_malloc(c->cfg.mem, len);
    if (!copy)
        return;
    memcpy(copy, pkt, len);
    c->rx.pending[c->rx.npending++] = (struct vega__quic_pending){copy, len, ecn};
}

static int on_retry(vega_quic_conn *c, const vega_quic_hdr *h, const uint8_t *pkt)
{
    if (c->server || c->hs.retried || c->hs.got_server_packet || h->token_len == 0 ||
        h->version != c->version ||
        (h->scid_len == c->cids.odcid_len &&
         memcmp(h->scid, c->cids.odcid, c->cids.odcid_len) == 0))
        return 0; /* §17.2.5.1: a Retry with our own DCID as its SCID is discarded */
    if (vega_quic_retry_verify(h, pkt, c->cids.odcid, c->cids.odcid_len) != 0)
        return 0;
    uint8_t *tok = vega__quic_malloc(c->cfg.mem, h->token_len);
    if (!tok)
        return -ENOMEM;
    memcpy(tok, h->token, h->token_len);
    vega__quic_free(c->cfg.mem, c->addr.token);
    c->addr.token = tok;
    c->addr.token_len = h->token_len;
    c->hs.retried = true;
    c->cids.retry_scid_len = (uint8_t)h->scid_len;
    memcpy(c->cids.retry_scid, h->scid, h->scid_len);
    c->cids.peer[0].len = (uint8_t)h->scid_len;
    memcpy(c->cids.peer[0].id, h->scid, h->scid_len);
    /* New Initial keys from the Retry's CID; the ClientHello goes again (RFC 9000 §17.2.5.2). */
    struct vega__quic_space *sp = &c->sp[VEGA__QUIC_SPACE_INITIAL];
    vega_quic_keys_free(sp->tx);
    vega_quic_keys_free(sp->rx);
    sp->tx = sp->rx = NULL;
    int rc = vega__quic_keys_new_initial_mem(c->cfg.mem, &sp->tx, c->version, h->scid, h->scid_len,
                                             false);
    if (rc == 0)
        rc = vega__quic_keys_new_initial_mem(c->cfg.mem, &sp->rx, c->version, h->scid, h->scid_len,
                                             true);
    if (rc < 0)
        return rc;
    vega__quic_recovery_reset_space(c->rec, VEGA__QUIC_SPACE_INITIAL);
    return vega__quic_sendbuf_on_lost(&sp->crypto_tx, 0, sp->crypto_tx.next_off, false);
}

static int on_vn(vega_quic_conn *c, const vega_quic_hdr *h)
{
    if (c->server || c->hs.got_server_packet || c->hs.retried)
        return 0;
    /* §6.2: it must echo our Initial's connection IDs, or anyone could end the attempt. */
    if (!vega__quic_cid_eq(h->dcid, h->dcid_len, c->cids.local[0].id, c->cids.local[0].len) ||
        !vega__quic_cid_eq(h->scid, h->scid_len, c->cids.peer[0].id, c->cids.peer[0].len))
        return 0;
    for (size_t i = 0; i < h->nversions; i++)
        if (vega_quic_hdr_vn_version(h, i) == c->version)
            return 0; /* a VN listing our own version is forged or stale: ignore (§6.2) */
    /* The reason lists what the server offers (a few), so a driver can start over with a
     * version both speak ("server offers 0x00000001 0x6b3343cf"). */
    char why[128];
    size_t o = (size_t)snprintf(why, sizeof why, "server offers");
    for (size_t i = 0; i < h->nversions && i < 8 && o + 12 < sizeof why; i++)
        o += (size_t)snprintf(why + o, sizeof why - o, " 0x%08x", vega_quic_hdr_vn_version(h, i));
    vega__quic_close_err(c, VEGA_QUIC_VERSION_NEGOTIATION_ERROR, 0, why);
    c->state = VEGA__QUIC_ST_CLOSED;
    return 0;
}

/* One packet of a datagram. Returns 0 (processed or dropped) or a fatal library code. */
static int recv_packet(vega_quic_conn *c, const vega_quic_hdr *h, uint8_t *pkt, size_t dgram_len,
                       uint8_t ecn, bool *processed, const vega_quic_path *path)
{
    if (VEGA__QLOG(c) && (h->type == VEGA_QUIC_PKT_VN || h->type == VEGA_QUIC_PKT_RETRY))
        vega__quic_qlog_recv(c, h, 0, false, NULL, 0);
    if (h->type == VEGA_QUIC_PKT_VN)
        return on_vn(c, h);
    if (h->type == VEGA_QUIC_PKT_RETRY)
        return on_retry(c, h, pkt);
    int level = pkt_level(h->type);
    if (level < 0 || (h->type != VEGA_QUIC_PKT_1RTT && h->version != c->version))
        return 0;
    /* §14.1: a server drops Initials in datagrams below 1200 bytes. */
    if (c->server && h->type == VEGA_QUIC_PKT_INITIAL && dgram_len < VEGA_QUIC_MIN_INITIAL_SIZE)
        return 0;
    int space = vega__quic_level_space(level);
    struct vega__quic_space *sp = &c->sp[space];
    if (sp->discarded)
        return 0;
    vega_quic_keys *keys;
    int which = 0;
    bool phase = false;
    if (level == VEGA_QUIC_LEVEL_EARLY)
        keys = c->server ? c->keys.early_rx : NULL;
    else
        keys = sp->rx;
    if (!keys) {
        /* Keep what may still become readable: Handshake and 1-RTT, and 0-RTT only on a
         * server before its handshake is done (clients never read 0-RTT). */
        bool early_hope = level == VEGA_QUIC_LEVEL_EARLY && c->server && !c->hs.done;
        if (level == VEGA_QUIC_LEVEL_HANDSHAKE || level == VEGA_QUIC_LEVEL_APP || early_hope)
            keep_pending(c, pkt, h->pkt_len, ecn);
        else if (VEGA__QLOG(c))
            vega__quic_qlog_dropped(c, h, "key_unavailable");
        return 0;
    }
    uint8_t mask[VEGA_CRYPTO_HP_MASK_LEN];
    if (level == VEGA_QUIC_LEVEL_APP) {
        uint8_t first;
        if (vega__quic_hp_first(keys, pkt, h->pkt_len, h->pn_offset, &first, mask) < 0)
            return 0;
        phase = (first & 0x04) != 0;
        keys = vega__quic_app_rx_keys(c, phase, &which);
        if (!keys)
            return 0;
    }
    vega_quic_unprotected u;
    uint64_t werr = 0;
    /* Every 1-RTT generation keeps the header protection key (RFC 9001 §6): the mask taken to
     * read the key phase serves whichever keys decrypt. */
    int rc = level == VEGA_QUIC_LEVEL_APP
                 ? vega__quic_packet_unprotect_mask(keys, pkt, h->pkt_len, h->pn_offset,
                                                    sp->largest_recvd, mask, &u, &werr)
                 : vega_quic_packet_unprotect(keys, pkt, h->pkt_len, h->pn_offset,
                                              sp->largest_recvd, &u, &werr);
    if (rc == VEGA_ERR_PROTO && werr) {
        vega__quic_close_err(c, werr, 0, "reserved header bits set");
        return 0;
    }
    if (rc == VEGA_ERR_CRYPTO_LIBCRYPTO)
        return rc;
    if (rc < 0) {
        if (VEGA__QLOG(c))
            vega__quic_qlog_dropped(c, h, "decryption_failure");
        return 0; /* does not authenticate, or too short: not for us (§12.2) */
    }
    *processed = true;
    if (u.pn < sp->floor || vega__quic_ranges_contains(&sp->recvd, u.pn)) {
        if (VEGA__QLOG(c))
            vega__quic_qlog_dropped(c, h, "duplicate");
        return 0; /* a duplicate */
    }
    if (which == 1) {
        rc = vega__quic_rx_key_update(c, phase, u.pn);
        if (rc < 0)
            return rc;
    }
    /* The first server packet fixes our destination CID (RFC 9000 §7.2). */
    if (!c->server && !c->hs.got_server_packet && h->type != VEGA_QUIC_PKT_1RTT) {
        c->hs.got_server_packet = true;
        c->cids.peer[0].len = (uint8_t)h->scid_len;
        memcpy(c->cids.peer[0].id, h->scid, h->scid_len);
        c->cids.peer_scid_len = (uint8_t)h->scid_len;
        memcpy(c->cids.peer_scid, h->scid, h->scid_len);
    }
    c->stats.pkts_recv++;
    const uint8_t *payload = pkt + u.payload_off;
    if (VEGA__QLOG(c))
        vega__quic_qlog_recv(c, h, u.pn, phase, payload, u.payload_len);
    bool eliciting = false, probing = true;
    c->rx.path = path;
    rc = vega__quic_recv_frames(c, level, h->type, payload, u.payload_len, &eliciting, &probing,
                                &werr);
    c->rx.path = NULL;
    if (rc == VEGA_ERR_PROTO) {
        const char *why = c->hs.tls ? vega__qtls_reason(c->hs.tls) : "";
        vega__quic_close_err(c, werr, c->closing.frame_type,
                             werr >= VEGA_QUIC_CRYPTO_ERROR && why[0] ? why : NULL);
        return 0;
    }
    if (rc < 0)
        return rc;
    rc = vega__quic_note_received(c, space, u.pn, eliciting, ecn);
    if (rc < 0)
        return rc;
    /* Server: a new peer address on the newest non-probing 1-RTT packet is a migration or a
     * NAT rebinding (§9.3); packets that are older or only probe do not move us. */
    if (level == VEGA_QUIC_LEVEL_APP && (int64_t)u.pn == sp->largest_recvd &&
        c->state == VEGA__QUIC_ST_ESTABLISHED) {
        bool new_dcid = c->cids.rx_dcid_len && (h->dcid_len != c->cids.rx_dcid_len ||
                                                memcmp(h->dcid, c->cids.rx_dcid, h->dcid_len));
        if (!probing) {
            c->cids.rx_dcid_len = (uint8_t)h->dcid_len;
            memcpy(c->cids.rx_dcid, h->dcid, h->dcid_len);
            if (c->server && path && c->hs.confirmed)
                vega__quic_peer_moved(c, path, new_dcid);
        }
    }
    /* A server that gets a Handshake packet knows the client's address and drops Initial keys
     * (RFC 9001 §4.9.1). */
    if (c->server && level == VEGA_QUIC_LEVEL_HANDSHAKE) {
        c->addr.validated = true;
        vega__quic_discard_space(c, VEGA__QUIC_SPACE_INITIAL);
    }
    vega__quic_idle_restart(c);
    c->timers.eliciting_since_rx = false;
    return 0;
}

/* Packets that came before their keys: try them again now (keys may have arrived). */
void vega__quic_retry_pending(vega_quic_conn *c)
{
    size_t n = c->rx.npending;
    if (!n)
        return;
    struct vega__quic_pending list[VEGA__QUIC_MAX_PENDING_PKTS];
    memcpy(list, c->rx.pending, n * sizeof list[0]);
    c->rx.npending = 0;
    for (size_t i = 0; i < n; i++) {
        vega_quic_hdr h;
        bool processed = false;
        if (c->state < VEGA__QUIC_ST_CLOSING &&
            vega_quic_hdr_parse(&h, list[i].data, list[i].len, c->cfg.scid_len) == 0) {
            h.pkt_len = list[i].len < h.pkt_len ? list[i].len : h.pkt_len;
            /* A packet still without keys goes back to the list. */
            recv_packet(c, &h, list[i].data, VEGA_QUIC_MIN_INITIAL_SIZE, list[i].ecn, &processed,
                        NULL);
        }
        vega__quic_free(c->cfg.mem, list[i].data);
    }
}

static int conn_read(vega_quic_conn *c, const vega_quic_path *path, uint8_t ecn, uint8_t *dgram,
                     size_t len, uint64_t now)
{
    if (now > c->now)
        c->now = now;
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA_ERR_CLOSED;
    if (c->state == VEGA__QUIC_ST_DRAINING)
        return 0;
    c->stats.bytes_recv += len;
    c->rx.dgram_len = len;
    c->addr.send_blocked = false; /* new budget, maybe */
    if (c->server && !c->addr.validated) {
        c->addr.bytes_recv += len;
        vega__quic_recovery_set_amplification_blocked(c->rec, false);
    }
    vega_quic_hdr hs[MAX_COALESCED];
    vega_ssize n = vega_quic_dgram_split(dgram, len, c->cfg.scid_len, hs, MAX_COALESCED);
    if (n <= 0)
        return 0;
    size_t off = 0;
    bool any = false;
    for (vega_ssize i = 0; i < n && c->state < VEGA__QUIC_ST_DRAINING; i++) {
        bool processed = false;
        int rc = recv_packet(c, &hs[i], dgram + off, len, ecn, &processed, path);
        if (rc < 0)
            return rc;
        any |= processed;
        off += hs[i].pkt_len;
    }
    if (!any && c->state < VEGA__QUIC_ST_CLOSING && vega__quic_is_stateless_reset(c, dgram, len)) {
        /* The event owns a copy of its reason: vega_quic_conn_next_event frees a CLOSED
         * event's data on the next call. */
        vega__quic_ev_closed(c, VEGA_QUIC_NO_ERROR, false, false, "stateless reset");
        c->state = VEGA__QUIC_ST_CLOSED; /* §10.3.1: no more packets */
        return 0;
    }
    if (any && c->paths.migrating && path &&
        vega__quic_addr_cmp(&path->remote, path->remote_len, &c->paths.cur.remote,
                            c->paths.cur.remote_len) == 0)
        c->paths.bytes_recv += len; /* the new path's anti-amplification budget (§9.3) */
    if (any && c->state < VEGA__QUIC_ST_CLOSING)
        vega__quic_retry_pending(c);
    if (any && c->state == VEGA__QUIC_ST_CLOSING)
        c->closing.send = true;
    return 0;
}

int vega_quic_conn_read(vega_quic_conn *c, const vega_quic_path *path, uint8_t ecn, uint8_t *dgram,
                        size_t len, uint64_t now)
{
    int rc = conn_read(c, path, ecn, dgram, len, now);
    vega__quic_sendpool_wake(c); /* acknowledgements and STOP_SENDING gave room back */
    if (VEGA__QLOG(c))
        vega__quic_qlog_poll(c, true);
    return rc;
}
