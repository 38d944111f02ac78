/* SPDX-License-Identifier: MIT */
/* The QUIC connection's write path (RFC 9000 §12.2, §14, §17; RFC 9002 §7): one datagram per
 * call, in three steps — gating (closed, closing, anti-amplification, the new path's budget,
 * congestion window and pacing), building a packet per encryption level (Initial, 0-RTT,
 * Handshake, 1-RTT, coalesced), and sealing them (padding, protection, recording) — plus GSO
 * batches. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn_int.h"

/* What the gates leave this call: the datagram's size and what may go in it. */
struct gate {
    size_t limit; /* bytes the datagram may take */
    bool probing; /* a PTO asked for probes: they leave whatever the window says */
    bool data_ok; /* the congestion window and the pacer let more than ACKs out */
};

/* The packets of one datagram, coalesced (RFC 9000 §12.2): Initial, Handshake, and 0-RTT or
 * 1-RTT (never both: 0-RTT stops once 1-RTT keys exist). */
struct dgram {
    struct vega__quic_pkt ks[3];
    size_t nk, pos; /* pos: bytes so far */
    bool has_initial, eliciting_initial;
};

/* ---- gating --------------------------------------------------------------------------------- */

/* Anti-amplification (RFC 9000 §8.1): a server sends at most three times what an unvalidated
 * client sent. Returns false when not even a full-size datagram fits. */
static bool amplification_ok(vega_quic_conn *c)
{
    if (!c->server || c->addr.validated)
        return true;
    uint64_t allowed = 3 * c->addr.bytes_recv;
    allowed = allowed > c->addr.bytes_sent ? allowed - c->addr.bytes_sent : 0;
    bool blocked = allowed < VEGA_QUIC_MIN_INITIAL_SIZE;
    /* A PTO that could not send its probe must not keep firing (RFC 9002 §6.2.2.1), nor an ACK
     * deadline that cannot be met (vega_quic_conn_expiry skips it). */
    vega__quic_recovery_set_amplification_blocked(c->rec, blocked);
    c->addr.send_blocked = blocked;
    return !blocked;
}

/* Closing: the CONNECTION_CLOSE, once per packet that arrived since (RFC 9000 §10.2.1);
 * draining: nothing. Returns the datagram length, 0, or an error. */
static vega_ssize write_closing(vega_quic_conn *c, uint8_t *out, size_t limit)
{
    if (c->state == VEGA__QUIC_ST_DRAINING || !c->closing.send)
        return 0;
    c->closing.send = false;
    vega_ssize n = vega__quic_write_close(c, out, limit);
    if (n > 0 && c->server && !c->addr.validated)
        c->addr.bytes_sent += (uint64_t)n;
    return n;
}

/* A server on a new peer address not validated yet sends at most 3x what came from it (§9.3):
 * smaller datagrams (a shorter padded challenge, §8.2.1) rather than none, or a small request
 * would leave its ACK and the challenge stuck. Returns false when under 64 bytes are left. */
static bool new_path_budget(vega_quic_conn *c, size_t *limit)
{
    if (!c->paths.migrating || !c->server)
        return true;
    uint64_t allowed = 3 * c->paths.bytes_recv;
    uint64_t left = allowed > c->paths.bytes_sent ? allowed - c->paths.bytes_sent : 0;
    c->addr.send_blocked = left < 64;
    if (c->addr.send_blocked)
        return false;
    if (left < *limit)
        *limit = (size_t)left;
    return true;
}

/* The congestion window and the pacer (RFC 9002 §7, §7.7): without room in both only ACKs may
 * leave; probes pass both. */
static void cc_gate(vega_quic_conn *c, struct gate *g, uint64_t now)
{
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    g->probing = vega__quic_probing(c);
    bool cwnd_ok = g->probing || vega__quic_cc_available(cc) >= g->limit;
    bool pace_ok = true;
    if (cwnd_ok && !g->probing) {
        uint64_t t = vega__quic_cc_pace(cc, g->limit, vega__quic_recovery_rtt(c->rec), now);
        if (t > now) {
            pace_ok = false;
            c->timers.pace_deadline = t;
        }
    }
    g->data_ok = cwnd_ok && pace_ok;
}

/* Decides what this call may send. Returns true to build packets under *g; false when the
 * call is over with *ret: nothing (0), a datagram of its own (the closing state's
 * CONNECTION_CLOSE, a PATH_RESPONSE for another path, a DPLPMTUD probe), or an error. */
static bool gate_datagram(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn, uint8_t *out,
                          size_t cap, struct gate *g, vega_ssize *ret)
{
    g->limit = c->pmtu.mtu < cap ? c->pmtu.mtu : cap;
    *ret = 0;
    if (!amplification_ok(c))
        return false;
    if (c->state >= VEGA__QUIC_ST_CLOSING) {
        *ret = write_closing(c, out, g->limit);
        return false;
    }
    if (c->paths.response_queued && c->paths.response_elsewhere && c->sp[VEGA__QUIC_SPACE_APP].tx) {
        *ret = vega__quic_write_path_response(c, path, out, g->limit);
        return false;
    }
    if (!new_path_budget(c, &g->limit))
        return false;
    cc_gate(c, g, c->now);
    if (g->data_ok && !g->probing && vega__quic_pmtu_due(c)) {
        vega_ssize n = vega__quic_pmtu_write_probe(c, out, cap);
        if (n != 0) {
            if (ecn)
                *ecn =
                    vega__quic_recovery_ecn_ok(c->rec) ? VEGA_QUIC_ECN_ECT0 : VEGA_QUIC_ECN_NOT_ECT;
            *ret = n;
            return false;
        }
    }
    return true;
}

/* ---- building a packet per encryption level ------------------------------------------------- */

/* Whether level has something for this datagram: an ACK due, a probe, or, when the gates let
 * data out, CRYPTO data, 1-RTT frames or 0-RTT stream data. Levels without keys have none. */
static bool level_wants(vega_quic_conn *c, int level, const struct gate *g, uint64_t now)
{
    struct vega__quic_space *sp = &c->sp[vega__quic_level_space(level)];
    if (sp->discarded)
        return false;
    if (level == VEGA_QUIC_LEVEL_EARLY) {
        /* 0-RTT: a client with early keys and no 1-RTT keys yet sends stream data. */
        if (c->server || !c->keys.early_tx || sp->tx || !g->data_ok || !c->streams.sendq_head)
            return false;
    } else if (!sp->tx) {
        return false;
    }
    vega__quic_probe_resend_crypto(sp, level);
    bool want = (sp->ack_pending && now >= sp->ack_deadline) || sp->probe;
    if (!g->data_ok)
        return want;
    if (level == VEGA_QUIC_LEVEL_EARLY)
        return true;
    if (level == VEGA_QUIC_LEVEL_APP && vega__quic_app_has_data(c))
        return true;
    return want || vega__quic_sendbuf_has_pending(&sp->crypto_tx);
}

/* Starts the packet of level at the end of d, with its record: room for both is taken first,
 * as a packet that left unrecorded could not be acknowledged nor its frames sent again.
 * Returns 1, 0 when the datagram is full or a record cannot be had (it ends with what it
 * has), -ENOMEM when that happens to its first packet. */
static int start_packet(vega_quic_conn *c, struct dgram *d, int level, size_t limit)
{
    struct vega__quic_pkt *k = &d->ks[d->nk];
    if (!vega__quic_pkt_begin(c, k, level, d->pos, limit))
        return 0;
    size_t same_space = 1;
    for (size_t j = 0; j < d->nk; j++)
        same_space += d->ks[j].space == k->space;
    k->rec = NULL;
    if (vega__quic_recovery_reserve(c->rec, k->space, same_space) == 0)
        k->rec = vega__quic_rec_get(c);
    if (!k->rec)
        return d->nk == 0 ? -ENOMEM : 0;
    k->rec->level = (uint8_t)level;
    return 1;
}

/* The frames of one packet: a pending ACK, then what the gates let out (CRYPTO; 1-RTT: control
 * frames, streams, datagrams; 0-RTT: streams), and a PING when a probe has nothing else that
 * elicits an ACK. */
static void fill_packet(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k,
                        const struct gate *g)
{
    struct vega__quic_space *sp = &c->sp[k->space];
    int level = k->level;
    if (level != VEGA_QUIC_LEVEL_EARLY && sp->ack_pending)
        vega__quic_put_ack(c, out, k);
    if (g->data_ok || sp->probe) {
        if (level != VEGA_QUIC_LEVEL_EARLY)
            vega__quic_put_crypto(c, out, k);
        if (level == VEGA_QUIC_LEVEL_APP) {
            vega__quic_put_control(c, out, k);
            vega__quic_put_streams(c, out, k, false);
            vega__quic_put_datagrams(c, out, k);
        } else if (level == VEGA_QUIC_LEVEL_EARLY) {
            vega__quic_put_streams(c, out, k, true);
        }
    }
    if (sp->probe && !k->eliciting && k->len < k->cap) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_PING};
        vega__quic_put_frame(out, k, &f);
    }
}

/* Builds the datagram's packets, Initial to 1-RTT, each finished (header written) but not yet
 * protected. Returns 0 (d->nk may be 0: nothing to send) or -ENOMEM. */
static int build_dgram(vega_quic_conn *c, uint8_t *out, const struct gate *g, struct dgram *d,
                       uint64_t now)
{
    d->nk = d->pos = 0;
    d->has_initial = d->eliciting_initial = false;
    for (int level = VEGA_QUIC_LEVEL_INITIAL; level <= VEGA_QUIC_LEVEL_APP; level++) {
        if (!level_wants(c, level, g, now))
            continue;
        int rc = start_packet(c, d, level, g->limit);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
        struct vega__quic_pkt *k = &d->ks[d->nk];
        fill_packet(c, out, k, g);
        if (k->len == 0) {
            vega__quic_rec_put(c, k->rec);
            continue;
        }
        vega__quic_probe_sent(&c->sp[k->space], k->eliciting);
        if (level == VEGA_QUIC_LEVEL_INITIAL) {
            d->has_initial = true;
            d->eliciting_initial |= k->eliciting;
        }
        d->pos += vega__quic_pkt_finish(out, k, 0);
        d->nk++;
    }
    return 0;
}

/* ---- sealing -------------------------------------------------------------------------------- */

/* Datagrams with a client's Initial, or a server's ack-eliciting one, are padded to 1200 bytes
 * (RFC 9000 §14.1), inside the last packet; so are path probes (§8.2.1). */
static void pad_dgram(const vega_quic_conn *c, uint8_t *out, struct dgram *d)
{
    bool path_probe = false;
    for (size_t i = 0; i < d->nk; i++)
        path_probe |= d->ks[i].path_probe;
    bool initial = d->has_initial && (!c->server || d->eliciting_initial);
    if ((initial || path_probe) && d->pos < VEGA_QUIC_MIN_INITIAL_SIZE) {
        struct vega__quic_pkt *k = &d->ks[d->nk - 1];
        d->pos = k->start +
                 vega__quic_pkt_finish(out, k, k->len + (VEGA_QUIC_MIN_INITIAL_SIZE - d->pos));
    }
}

/* Hands a protected packet of n bytes to recovery with its record. Each packet counts its own
 * bytes for congestion control; the last of a datagram with an Initial carries its padding, so
 * it is in flight even when it elicits nothing. */
static void record_sent(vega_quic_conn *c, struct vega__quic_pkt *k, vega_ssize n, bool in_flight,
                        bool ect, uint64_t now)
{
    struct vega__quic_sent s = {
        .pn = k->pn,
        .time_sent = now,
        .bytes = (uint32_t)n,
        .ack_eliciting = k->eliciting,
        .in_flight = k->eliciting || in_flight,
        .ecn = ect,
        .frames = k->rec,
    };
    c->sp[k->space].next_pn++;
    if (vega__quic_recovery_on_sent(c->rec, k->space, &s) < 0)
        vega__quic_on_lost(c, k->space, &s, true);
    c->stats.pkts_sent++;
    if (k->eliciting && !c->timers.eliciting_since_rx) {
        c->timers.eliciting_since_rx = true;
        vega__quic_idle_restart(c);
    }
}

/* What a datagram of len bytes that left changes: a client's first Handshake packet ends its
 * use of Initial keys (RFC 9001 §4.9.1); the anti-amplification and new-path budgets; whether
 * the application had less to send than the window allowed. */
static void after_send(vega_quic_conn *c, size_t len, bool sent_handshake)
{
    if (sent_handshake && !c->server)
        vega__quic_discard_space(c, VEGA__QUIC_SPACE_INITIAL);
    if (c->server && !c->addr.validated)
        c->addr.bytes_sent += len;
    if (c->paths.migrating)
        c->paths.bytes_sent += len;
    c->stats.bytes_sent += len;
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    cc->app_limited = !vega__quic_app_has_data(c) && !c->streams.sendq_head;
}

/* Protects each packet (in place, its stream bytes from their send buffers) and records it, marking
 * the datagram ECT(0) while the path passes ECN validation (RFC 9000 §13.4.2). Returns the datagram
 * length, or an error (the records of the packets not sent go back). */
static vega_ssize seal_dgram(vega_quic_conn *c, uint8_t *out, size_t cap, struct dgram *d,
                             uint8_t *ecn, uint64_t now)
{
    bool ect = vega__quic_recovery_ecn_ok(c->rec);
    if (ecn)
        *ecn = ect ? VEGA_QUIC_ECN_ECT0 : VEGA_QUIC_ECN_NOT_ECT;
    bool sent_handshake = false;
    for (size_t i = 0; i < d->nk; i++) {
        struct vega__quic_pkt *k = &d->ks[i];
        if (VEGA__QLOG(c))
            vega__quic_qlog_sent(c, k, out + k->start);
        vega_ssize n = vega__quic_packet_protect_ext(k->keys, out + k->start, cap - k->start,
                                                     k->hdr_len, k->pn, k->len, k->ext, k->next);
        if (n < 0) {
            for (size_t j = i; j < d->nk; j++)
                vega__quic_rec_put(c, d->ks[j].rec);
            return n;
        }
        record_sent(c, k, n, d->has_initial && i == d->nk - 1, ect, now);
        sent_handshake |= k->level == VEGA_QUIC_LEVEL_HANDSHAKE;
    }
    after_send(c, d->pos, sent_handshake);
    return (vega_ssize)d->pos;
}

/* ---- the write calls ------------------------------------------------------------------------ */

static vega_ssize conn_write(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn, uint8_t *out,
                             size_t cap, uint64_t now)
{
    if (now > c->now)
        c->now = now;
    now = c->now;
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA_ERR_CLOSED;
    if (cap < VEGA_QUIC_MIN_INITIAL_SIZE)
        return -EINVAL;
    if (path)
        *path = c->paths.cur;
    if (ecn)
        *ecn = VEGA_QUIC_ECN_NOT_ECT;
    c->pmtu.last_cap = cap;
    c->addr.send_blocked = false;
    struct gate g;
    vega_ssize ret;
    if (!gate_datagram(c, path, ecn, out, cap, &g, &ret))
        return ret;
    struct dgram d;
    int rc = build_dgram(c, out, &g, &d, now);
    if (rc < 0)
        return rc;
    if (d.nk == 0) {
        vega__quic_recovery_cc(c->rec)->app_limited = g.data_ok;
        return 0;
    }
    pad_dgram(c, out, &d);
    return seal_dgram(c, out, cap, &d, ecn, now);
}

vega_ssize vega_quic_conn_write(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn, uint8_t *out,
                                size_t cap, uint64_t now)
{
    vega_ssize n = conn_write(c, path, ecn, out, cap, now);
    if (VEGA__QLOG(c))
        vega__quic_qlog_poll(c, false);
    return n;
}

vega_ssize vega_quic_conn_write_gso(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                    uint8_t *out, size_t cap, size_t max_dgrams, size_t *seg,
                                    uint64_t now)
{
    *seg = 0;
    vega_quic_path p0;
    uint8_t e0;
    vega_ssize first = vega_quic_conn_write(c, &p0, &e0, out, cap, now);
    if (first <= 0)
        return first;
    if (path)
        *path = p0;
    if (ecn)
        *ecn = e0;
    size_t total = (size_t)first, sz = (size_t)first;
    *seg = sz;
    /* More of the same size, to the same path and mark: a shorter one ends the batch. The
     * next write is capped at the segment size, so it can only be equal or shorter. */
    for (size_t i = 1; i < max_dgrams && cap - total >= sz && sz >= VEGA_QUIC_MIN_INITIAL_SIZE;
         i++) {
        if (c->paths.response_queued && c->paths.response_elsewhere)
            break; /* goes to another address */
        vega_quic_path p;
        uint8_t e;
        vega_ssize n = vega_quic_conn_write(c, &p, &e, out + total, sz, now);
        if (n <= 0)
            break;
        /* Path and ECN state change only when a datagram is read or on migrate, never between
         * these writes, so the batch shares p0 and e0. */
        total += (size_t)n;
        if ((size_t)n < sz)
            break;
    }
    return (vega_ssize)total;
}
