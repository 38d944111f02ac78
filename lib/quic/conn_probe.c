/* SPDX-License-Identifier: MIT */
/* Probes of the QUIC connection: PTO probes, which carry unacknowledged handshake data again
 * (RFC 9002 §6.2.4), and DPLPMTUD (RFC 9000 §14.3, RFC 8899), a binary search of the datagram
 * size with PING packets alone in their datagram. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

/* ---- PTO probes (RFC 9002 §6.2.4) ----------------------------------------------------------- */

/* True while a PTO asked for probes in some space: they leave whatever the window says. */
bool vega__quic_probing(const vega_quic_conn *c)
{
    bool probing = false;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
        probing |= c->sp[i].probe;
    return probing;
}

/* Recovery's timer fired: loss detection ran, or the PTO asks for two probes in a space. */
void vega__quic_probe_on_timeout(vega_quic_conn *c, uint64_t now)
{
    int space = vega__quic_recovery_on_timeout(c->rec, now);
    if (space >= 0 && !c->sp[space].discarded) {
        c->sp[space].probe = true;
        c->sp[space].probes = 2;
    }
}

/* A handshake probe carries the unacknowledged CRYPTO data again, not just a PING: if the
 * flight was lost, the probe replaces it. */
void vega__quic_probe_resend_crypto(struct vega__quic_space *sp, int level)
{
    if (sp->probe && level != VEGA_QUIC_LEVEL_APP && level != VEGA_QUIC_LEVEL_EARLY &&
        !vega__quic_sendbuf_has_pending(&sp->crypto_tx) &&
        sp->crypto_tx.next_off > sp->crypto_tx.acked_base)
        vega__quic_sendbuf_on_lost(&sp->crypto_tx, sp->crypto_tx.acked_base,
                                   sp->crypto_tx.next_off - sp->crypto_tx.acked_base, false);
}

/* An ack-eliciting packet left in a probing space: one probe fewer owed. */
void vega__quic_probe_sent(struct vega__quic_space *sp, bool eliciting)
{
    if (eliciting && sp->probe && --sp->probes == 0)
        sp->probe = false;
}

/* ---- DPLPMTUD (RFC 9000 §14.3, RFC 8899) ---------------------------------------------------- */

/* The largest datagram worth probing: our setting, the peer's max_udp_payload_size, and what
 * the driver's buffers take. */
static size_t pmtu_ceiling(const vega_quic_conn *c)
{
    uint64_t hi = c->cfg.pmtu_max;
    if (c->hs.peer_tp.max_udp_payload_size < hi)
        hi = c->hs.peer_tp.max_udp_payload_size;
    if (c->pmtu.last_cap && c->pmtu.last_cap < hi)
        hi = c->pmtu.last_cap;
    return (size_t)hi;
}

void vega__quic_pmtu_result(vega_quic_conn *c, bool acked)
{
    if (!c->pmtu.in_flight)
        return;
    c->pmtu.in_flight = false;
    if (acked) {
        c->pmtu.mtu = c->pmtu.probe;
        c->pmtu.fails = 0;
    } else if (++c->pmtu.fails < 3) {
        return; /* one loss may be chance: the same size again (RFC 8899 MAX_PROBES = 3) */
    } else {
        c->pmtu.hi = c->pmtu.probe - 1;
        c->pmtu.fails = 0;
    }
    /* Binary search between what works and what failed, to within 16 bytes. */
    if (c->pmtu.hi < c->pmtu.mtu + 16)
        c->pmtu.done = true;
    else
        c->pmtu.probe = (c->pmtu.mtu + c->pmtu.hi + 1) / 2;
}

/* A probe may go now: the search is on, none is in flight, and the connection is established
 * on a validated path with 1-RTT keys. */
bool vega__quic_pmtu_due(const vega_quic_conn *c)
{
    return !c->pmtu.done && !c->pmtu.in_flight && c->hs.confirmed && c->paths.validated &&
           c->state == VEGA__QUIC_ST_ESTABLISHED && c->sp[VEGA__QUIC_SPACE_APP].tx;
}

/* A probe: one 1-RTT packet of exactly pmtu_probe bytes (PING and PADDING) alone in its
 * datagram, sent once the handshake is confirmed and the path validated, one at a time. The
 * first tries the ceiling itself: on most paths that is the answer. */
vega_ssize vega__quic_pmtu_write_probe(vega_quic_conn *c, uint8_t *out, size_t cap)
{
    if (!c->pmtu.hi) {
        c->pmtu.hi = pmtu_ceiling(c);
        if (c->pmtu.hi < c->pmtu.mtu + 16) {
            c->pmtu.done = true;
            return 0;
        }
        c->pmtu.probe = c->pmtu.hi;
    }
    size_t size = c->pmtu.probe;
    if (size > cap)
        return 0;
    struct vega__quic_pkt k;
    if (!vega__quic_pkt_begin(c, &k, VEGA_QUIC_LEVEL_APP, 0, size))
        return 0;
    k.rec = vega__quic_rec_get(c);
    if (!k.rec)
        return -ENOMEM;
    k.rec->level = VEGA_QUIC_LEVEL_APP;
    k.rec->pmtu = true;
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PING};
    vega__quic_put_frame(out, &k, &f);
    vega__quic_pkt_finish(out, &k, k.cap);
    if (VEGA__QLOG(c))
        vega__quic_qlog_sent(c, &k, out);
    vega_ssize n = vega_quic_packet_protect(k.keys, out, cap, k.hdr_len, k.pn, k.len);
    if (n < 0) {
        vega__quic_rec_put(c, k.rec);
        return n;
    }
    struct vega__quic_sent s = {.pn = k.pn,
                                .time_sent = c->now,
                                .bytes = (uint32_t)n,
                                .ack_eliciting = true,
                                .in_flight = true,
                                .pmtu_probe = true,
                                .frames = k.rec};
    c->sp[VEGA__QUIC_SPACE_APP].next_pn++;
    if (vega__quic_recovery_on_sent(c->rec, VEGA__QUIC_SPACE_APP, &s) < 0) {
        vega__quic_rec_put(c, k.rec);
        return 0;
    }
    c->pmtu.in_flight = true;
    c->stats.pkts_sent++;
    c->stats.bytes_sent += (uint64_t)n;
    return n;
}
