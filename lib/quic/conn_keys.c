/* SPDX-License-Identifier: MIT */
/* The QUIC connection's keys beyond the handshake's: discarding a packet number space with its
 * keys (RFC 9001 §4.9), and the 1-RTT key update, ours and the peer's (RFC 9001 §6). */
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

void vega__quic_discard_space(vega_quic_conn *c, int space)
{
    struct vega__quic_space *sp = &c->sp[space];
    if (sp->discarded)
        return;
    sp->discarded = true;
    vega__quic_recovery_discard_space(c->rec, space);
    vega_quic_keys_free(sp->rx);
    vega_quic_keys_free(sp->tx);
    sp->rx = sp->tx = NULL;
    sp->ack_pending = false;
    sp->ack_deadline = VEGA__QUIC_TIME_INF;
    sp->probe = false;
    vega__quic_sendbuf_fini(&sp->crypto_tx);
    vega__quic_sendbuf_init(&sp->crypto_tx, 0, c->cfg.mem);
    vega__quic_recvbuf_fini(&sp->crypto_rx);
    vega__quic_recvbuf_init(&sp->crypto_rx, VEGA__QUIC_CRYPTO_RX_LIMIT, c->cfg.mem);
}

/* ---- key update (RFC 9001 §6) --------------------------------------------------------------- */

/* Derives the next generation's keys after cur from a secret (updated in place). */
int vega__quic_next_keys(vega_quic_conn *c, const vega_quic_keys *cur, uint8_t *secret,
                         vega_quic_keys **out)
{
    int rc = vega_quic_secret_update(c->version, c->keys.app_aead, secret, c->keys.app_secret_len,
                                     secret);
    if (rc < 0)
        return rc;
    return vega__quic_keys_next(cur, c->version, secret, c->keys.app_secret_len, out);
}

int vega_quic_conn_key_update(vega_quic_conn *c)
{
    if (!c->hs.confirmed || c->keys.ku_pending || c->state != VEGA__QUIC_ST_ESTABLISHED ||
        c->now < c->keys.ku_allowed_at)
        return -EAGAIN;
    vega_quic_keys *tx;
    int rc = vega__quic_next_keys(c, c->sp[VEGA__QUIC_SPACE_APP].tx, c->keys.app_tx_secret, &tx);
    if (rc < 0)
        return rc;
    /* The receive side moves with the first packet the peer sends in the new phase; prepare
     * its keys now so that packet decrypts. */
    if (!c->keys.rx_next) {
        rc = vega__quic_next_keys(c, c->sp[VEGA__QUIC_SPACE_APP].rx, c->keys.app_rx_secret,
                                  &c->keys.rx_next);
        if (rc < 0) {
            vega_quic_keys_free(tx);
            return rc;
        }
    }
    vega_quic_keys_free(c->sp[VEGA__QUIC_SPACE_APP].tx);
    c->sp[VEGA__QUIC_SPACE_APP].tx = tx;
    c->keys.key_phase = !c->keys.key_phase;
    c->keys.ku_pending = true;
    c->keys.ku_first_pn = c->sp[VEGA__QUIC_SPACE_APP].next_pn;
    c->keys.key_updates++;
    return 0;
}

/* Picks the 1-RTT keys for a packet by its key phase (RFC 9001 §6.3). *which: 0 current,
 * 1 next, 2 previous. */
vega_quic_keys *vega__quic_app_rx_keys(vega_quic_conn *c, bool phase, int *which)
{
    vega_quic_keys *cur = c->sp[VEGA__QUIC_SPACE_APP].rx;
    *which = 0;
    if (phase == c->keys.rx_phase)
        return cur;
    if (c->keys.rx_prev) {
        *which = 2;
        return c->keys.rx_prev;
    }
    if (!c->hs.confirmed)
        return NULL; /* no key update before confirmation: the packet will not open */
    if (!c->keys.rx_next &&
        vega__quic_next_keys(c, cur, c->keys.app_rx_secret, &c->keys.rx_next) < 0)
        return NULL;
    *which = 1;
    return c->keys.rx_next;
}

/* The peer moved to the next key phase: rotate receive keys, and follow with ours unless we
 * initiated it. */
int vega__quic_rx_key_update(vega_quic_conn *c, bool phase, uint64_t pn)
{
    vega_quic_keys_free(c->keys.rx_prev);
    c->keys.rx_prev = c->sp[VEGA__QUIC_SPACE_APP].rx;
    c->sp[VEGA__QUIC_SPACE_APP].rx = c->keys.rx_next;
    c->keys.rx_next = NULL;
    c->keys.rx_phase = phase;
    c->keys.rx_prev_until = c->now + 3 * vega__quic_pto(c);
    if (c->keys.key_phase == phase) {
        c->keys.ku_pending = false; /* the peer answered our update */
        c->keys.ku_allowed_at = c->now + 3 * vega__quic_pto(c);
        return 0;
    }
    vega_quic_keys *tx;
    int rc = vega__quic_next_keys(c, c->sp[VEGA__QUIC_SPACE_APP].tx, c->keys.app_tx_secret, &tx);
    if (rc < 0)
        return rc;
    vega_quic_keys_free(c->sp[VEGA__QUIC_SPACE_APP].tx);
    c->sp[VEGA__QUIC_SPACE_APP].tx = tx;
    c->keys.key_phase = phase;
    c->keys.ku_first_pn = c->sp[VEGA__QUIC_SPACE_APP].next_pn;
    c->keys.ku_allowed_at = c->now + 3 * vega__quic_pto(c);
    c->keys.key_updates++;
    return 0;
}
