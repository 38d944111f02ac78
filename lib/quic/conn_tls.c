/* SPDX-License-Identifier: MIT */
/* The QUIC connection's side of its TLS 1.3 handshake (RFC 9001 §4): our transport parameters,
 * the handshake's callbacks (CRYPTO bytes to send, traffic secrets, the peer's transport
 * parameters checked against the connection IDs, sessions), and what completing and confirming
 * the handshake change. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

static int tls_send(void *ud, vega_quic_level level, const uint8_t *data, size_t len)
{
    vega_quic_conn *c = ud;
    struct vega__quic_space *sp = &c->sp[vega__quic_level_space((int)level)];
    vega_ssize n = vega__quic_sendbuf_write(&sp->crypto_tx, data, len);
    if (n < 0)
        return (int)n;
    return (size_t)n == len ? 0 : -ENOMEM;
}

static int tls_secret(void *ud, vega_quic_level level, bool write, vega_crypto_aead_alg aead,
                      vega_crypto_hash_alg hash, const uint8_t *secret, size_t len)
{
    (void)hash;
    vega_quic_conn *c = ud;
    vega_quic_keys *k;
    int rc = vega__quic_keys_new_mem(c->cfg.mem, &k, c->version, aead, secret, len);
    if (rc < 0)
        return rc;
    switch (level) {
    case VEGA_QUIC_LEVEL_EARLY:
        if (write)
            c->keys.early_tx = k;
        else
            c->keys.early_rx = k;
        break;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        if (write) {
            c->sp[VEGA__QUIC_SPACE_HANDSHAKE].tx = k;
            if (!c->server)
                vega__quic_recovery_set_has_handshake_keys(c->rec);
        } else {
            c->sp[VEGA__QUIC_SPACE_HANDSHAKE].rx = k;
        }
        break;
    case VEGA_QUIC_LEVEL_APP:
        c->keys.app_aead = aead;
        c->keys.app_secret_len = len;
        memcpy(write ? c->keys.app_tx_secret : c->keys.app_rx_secret, secret, len);
        if (write)
            c->sp[VEGA__QUIC_SPACE_APP].tx = k;
        else
            c->sp[VEGA__QUIC_SPACE_APP].rx = k;
        break;
    default:
        vega_quic_keys_free(k);
        return VEGA_ERR_INTERNAL;
    }
    return 0;
}

/* The peer's limits take effect once its transport parameters are known (RFC 9000 §7.4). */
static void apply_peer_tp(vega_quic_conn *c)
{
    const vega_quic_tp *tp = &c->hs.peer_tp;
    c->flow.max_send_data = tp->initial_max_data;
    c->streams.peer_max[0] = tp->initial_max_streams_bidi;
    c->streams.peer_max[1] = tp->initial_max_streams_uni;
    vega__quic_recovery_set_max_ack_delay(c->rec, tp->max_ack_delay * VEGA__QUIC_NS_PER_MS);
    uint64_t ours = c->cfg.idle_timeout_ms, theirs = tp->max_idle_timeout;
    uint64_t idle = ours && theirs ? (ours < theirs ? ours : theirs) : (ours ? ours : theirs);
    /* The peer may say up to 2^62 - 1 ms: clamp so deadlines never wrap. */
    uint64_t cap_ms = UINT64_MAX / VEGA__QUIC_NS_PER_MS / 4;
    c->timers.idle_timeout = (idle < cap_ms ? idle : cap_ms) * VEGA__QUIC_NS_PER_MS;
    if (tp->has_stateless_reset_token && c->cids.npeer) {
        memcpy(c->cids.peer[0].token, tp->stateless_reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
        c->cids.peer[0].has_token = true;
    }
    vega__quic_stream_apply_tp(c);
}

static int tls_peer_tp(void *ud, const uint8_t *tp, size_t len, uint64_t *wire_err)
{
    vega_quic_conn *c = ud;
    int rc = vega_quic_tp_decode(&c->hs.peer_tp, tp, len, !c->server, wire_err);
    if (rc < 0)
        return rc;
    const vega_quic_tp *p = &c->hs.peer_tp;
    bool bad = !vega__quic_cid_eq(p->initial_scid, p->initial_scid_len, c->cids.peer_scid,
                                  c->cids.peer_scid_len);
    if (!c->server) {
        bad |= !p->has_original_dcid || !vega__quic_cid_eq(p->original_dcid, p->original_dcid_len,
                                                           c->cids.odcid, c->cids.odcid_len);
        bad |= p->has_retry_scid != c->hs.retried;
        if (c->hs.retried)
            bad |= !vega__quic_cid_eq(p->retry_scid, p->retry_scid_len, c->cids.retry_scid,
                                      c->cids.retry_scid_len);
    }
    if (bad) {
        *wire_err = VEGA_QUIC_TRANSPORT_PARAMETER_ERROR;
        return VEGA_ERR_PROTO;
    }
    c->hs.peer_tp_ok = true;
    apply_peer_tp(c);
    return 0;
}

static void tls_session(void *ud, const uint8_t *blob, size_t len)
{
    vega_quic_conn *c = ud;
    vega__quic_ev_copy(c, VEGA_QUIC_EV_SESSION, blob, len);
}

static void tls_keylog(void *ud, const char *line)
{
    vega_quic_conn *c = ud;
    c->cfg.keylog(c->cfg.keylog_user, line);
}

static int tls_rand(void *ud, void *buf, size_t len)
{
    return vega__quic_rand(ud, buf, len);
}

/* Our transport parameters and the TLS handshake, once the CIDs are known. */
int vega__quic_tls_start(vega_quic_conn *c)
{
    const vega_quic_opts *cfg = &c->cfg;
    vega_quic_tp *tp = &c->hs.local_tp;
    vega_quic_tp_init(tp);
    tp->max_idle_timeout = cfg->idle_timeout_ms;
    tp->initial_max_data = cfg->max_data;
    tp->initial_max_stream_data_bidi_local = cfg->max_stream_data;
    tp->initial_max_stream_data_bidi_remote = cfg->max_stream_data;
    tp->initial_max_stream_data_uni = cfg->max_stream_data;
    tp->initial_max_streams_bidi = cfg->max_streams_bidi;
    tp->initial_max_streams_uni = cfg->max_streams_uni;
    tp->ack_delay_exponent = cfg->ack_delay_exponent;
    tp->max_ack_delay = cfg->max_ack_delay_ms;
    tp->disable_active_migration = cfg->disable_active_migration;
    tp->active_connection_id_limit = cfg->active_connection_id_limit;
    tp->max_udp_payload_size = 65527;
    if (cfg->max_datagram_frame_size) {
        tp->has_max_datagram_frame_size = true;
        tp->max_datagram_frame_size = cfg->max_datagram_frame_size;
    }
    tp->has_initial_scid = true;
    tp->initial_scid_len = c->cids.local[0].len;
    memcpy(tp->initial_scid, c->cids.local[0].id, c->cids.local[0].len);
    if (c->server) {
        tp->has_original_dcid = true;
        tp->original_dcid_len = c->cids.odcid_len;
        memcpy(tp->original_dcid, c->cids.odcid, c->cids.odcid_len);
        if (c->cids.retry_scid_len) {
            tp->has_retry_scid = true;
            tp->retry_scid_len = c->cids.retry_scid_len;
            memcpy(tp->retry_scid, c->cids.retry_scid, c->cids.retry_scid_len);
        }
        tp->has_stateless_reset_token = true;
        memcpy(tp->stateless_reset_token, c->cids.local[0].token, VEGA_QUIC_RESET_TOKEN_LEN);
    }
    uint8_t buf[512];
    vega_ssize n = vega_quic_tp_encode(tp, c->server, buf, sizeof buf);
    if (n < 0)
        return (int)n;
    struct vega__qtls_cbs cbs = {
        .ud = c,
        .send = tls_send,
        .secret = tls_secret,
        .peer_tp = tls_peer_tp,
        .session = tls_session,
        .keylog = cfg->keylog ? tls_keylog : NULL,
        .rand = tls_rand,
        .mem = cfg->mem,
        .pins = c->server ? NULL : cfg->pinned_keys,
        .npins = c->server ? 0 : cfg->n_pinned_keys,
    };
    int rc = vega__qtls_new(&c->hs.tls, c->server, &cfg->tls, buf, (size_t)n, cfg->wall_ms, &cbs);
    if (rc < 0)
        return rc;
    if (c->server) {
        /* 0-RTT stays acceptable while the limits a client remembers are the same; the
         * per-connection values (CIDs, reset token) do not count (RFC 9000 §7.4.1). */
        vega_quic_tp lim = *tp;
        lim.original_dcid_len = lim.initial_scid_len = 0;
        lim.has_retry_scid = lim.has_stateless_reset_token = false;
        n = vega_quic_tp_encode(&lim, true, buf, sizeof buf);
        if (n < 0)
            return (int)n;
        rc = vega__qtls_set_early_context(c->hs.tls, buf, (size_t)n);
        if (rc < 0)
            return rc;
    }
    rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].tx, c->version, c->cids.odcid,
                                         c->cids.odcid_len, c->server);
    if (rc == 0)
        rc = vega__quic_keys_new_initial_mem(cfg->mem, &c->sp[0].rx, c->version, c->cids.odcid,
                                             c->cids.odcid_len, !c->server);
    return rc;
}

/* ---- handshake progress --------------------------------------------------------------------- */

/* Called after CRYPTO data was handed to TLS: reacts to the handshake completing. */
int vega__quic_tls_progress(vega_quic_conn *c)
{
    if (c->hs.done || !vega__qtls_is_done(c->hs.tls))
        return 0;
    c->hs.done = true;
    size_t alen = 0;
    const uint8_t *alpn = vega__qtls_alpn(c->hs.tls, &alen);
    if (alpn && alen < sizeof c->stats.alpn) {
        memcpy(c->stats.alpn, alpn, alen);
        c->stats.alpn[alen] = 0;
    }
    c->stats.resumed = vega__qtls_is_resumed(c->hs.tls);
    c->stats.early_data = (vega_quic_early_data)vega__qtls_early_status(c->hs.tls);
    if (!c->server && c->stats.early_data == VEGA_QUIC_EARLY_REJECTED)
        vega__quic_ev_simple(c, VEGA_QUIC_EV_EARLY_REJECTED, 0, 0);
    /* Lost, the event would leave the application waiting for good: it is owed instead. */
    c->hs.ev_owed = vega__quic_ev_simple(c, VEGA_QUIC_EV_HANDSHAKE_DONE, 0, 0) < 0;
    if (c->server) {
        /* The server's handshake is confirmed as it completes (RFC 9001 §4.1.2). */
        c->hs.done_queued = true;
        c->addr.validated = true;
        vega__quic_confirm(c);
        if (!c->hs.ticket_sent) {
            c->hs.ticket_sent = true;
            int t = vega__qtls_send_ticket(c->hs.tls);
            if (t < 0)
                return t;
        }
    }
    return 0;
}

/* The handshake is confirmed (RFC 9001 §4.1.2): Handshake keys go, 1-RTT PTOs may run. */
void vega__quic_confirm(vega_quic_conn *c)
{
    if (c->hs.confirmed)
        return;
    c->hs.confirmed = true;
    c->state = VEGA__QUIC_ST_ESTABLISHED;
    vega__quic_recovery_set_handshake_confirmed(c->rec);
    vega__quic_discard_space(c, VEGA__QUIC_SPACE_HANDSHAKE);
    vega_quic_keys_free(c->keys.early_tx);
    vega_quic_keys_free(c->keys.early_rx);
    c->keys.early_tx = c->keys.early_rx = NULL;
    vega__quic_issue_cids(c);
}
