/* SPDX-License-Identifier: MIT */
/* Acknowledgement and loss bookkeeping of the QUIC connection (RFC 9000 §13): received packet
 * numbers and the ACK they call for, the records of what each sent packet carried, and what
 * becomes of those frames when recovery reports the packet acknowledged or lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "conn_int.h"

/* ---- received packets (RFC 9000 §13.2) ------------------------------------------------------ */

/* Records a received packet number and schedules the ACK (RFC 9000 §13.2). Returns 0 or
 * -ENOMEM (nothing recorded: the packet goes unacknowledged and the peer sends it again). */
int vega__quic_note_received(vega_quic_conn *c, int space, uint64_t pn, bool eliciting, uint8_t ecn)
{
    struct vega__quic_space *sp = &c->sp[space];
    if (sp->discarded)
        return 0; /* the packet's frames dropped its own space's keys (HANDSHAKE_DONE) */
    bool out_of_order = sp->largest_recvd >= 0 && pn < (uint64_t)sp->largest_recvd;
    bool gap = sp->largest_recvd >= 0 && pn > (uint64_t)sp->largest_recvd + 1;
    /* An ACK scheduled for a number the set does not hold would be due forever and never
     * written. */
    int rc = vega__quic_ranges_add(&sp->recvd, pn, pn + 1);
    if (rc < 0)
        return rc;
    /* A full set drops its lowest ranges: what they held must still count as received
     * (RFC 9000 §12.3: a replayed packet is discarded), so the duplicate floor follows. */
    if (sp->recvd.n >= VEGA__QUIC_ACK_RANGES && sp->recvd.r[0].start > sp->floor)
        sp->floor = sp->recvd.r[0].start;
    if ((int64_t)pn > sp->largest_recvd) {
        sp->largest_recvd = (int64_t)pn;
        sp->largest_recvd_time = c->now;
    }
    if (ecn >= 1 && ecn <= 3) {
        sp->ecn[ecn == VEGA_QUIC_ECN_ECT0 ? 0 : ecn == VEGA_QUIC_ECN_ECT1 ? 1 : 2]++;
        sp->ecn_seen = true;
    }
    if (!eliciting)
        return 0;
    sp->unacked_eliciting++;
    if (!sp->ack_pending) {
        sp->ack_pending = true;
        sp->ack_deadline = c->now + c->cfg.max_ack_delay_ms * VEGA__QUIC_NS_PER_MS;
    }
    /* Initial and Handshake packets, every second packet, reordering and CE marks are acked
     * at once. */
    if (space != VEGA__QUIC_SPACE_APP || sp->unacked_eliciting >= VEGA__QUIC_ACK_ELICIT_THRESH ||
        out_of_order || gap || ecn == VEGA_QUIC_ECN_CE || !c->hs.confirmed)
        sp->ack_deadline = c->now;
    return 0;
}

/* ---- packet records ------------------------------------------------------------------------- */

struct vega__quic_pktrec *vega__quic_rec_get(vega_quic_conn *c)
{
    struct vega__quic_pktrec *r = c->ack.free;
    if (r) {
        c->ack.free = r->next_free;
        c->ack.nfree--;
        /* The next packet's record: deep in a long list it is cold, so fetch it ahead. */
        if (c->ack.free)
            __builtin_prefetch(c->ack.free, 1);
    } else {
        r = vega__quic_malloc(c->cfg.mem, sizeof *r);
        if (!r)
            return NULL;
    }
    c->ack.live++;
    r->next_free = NULL;
    r->n = 0;
    r->pmtu = false;
    return r;
}

/* The free list keeps as many records as are in flight (plus a margin): a window of thousands
 * of packets then recycles its records instead of freeing and allocating one per packet, and
 * what is kept stays bounded by the largest window seen since it shrank. */
void vega__quic_rec_put(vega_quic_conn *c, struct vega__quic_pktrec *r)
{
    if (VEGA_NEVER(c->ack.live == 0))
        c->ack.live = 1;
    c->ack.live--;
    if (c->ack.nfree >= 1024 + c->ack.live) {
        vega__quic_free(c->cfg.mem, r);
        return;
    }
    r->next_free = c->ack.free;
    c->ack.free = r;
    c->ack.nfree++;
}

/* ---- acknowledged and lost packets ---------------------------------------------------------- */

void vega__quic_on_acked(void *ud, int space, struct vega__quic_sent *p)
{
    vega_quic_conn *c = ud;
    struct vega__quic_pktrec *r = p->frames;
    if (!r)
        return;
    if (space == VEGA__QUIC_SPACE_APP && c->keys.ku_pending && p->pn >= c->keys.ku_first_pn) {
        c->keys.ku_pending = false;
        c->keys.ku_allowed_at = c->now + 3 * vega__quic_pto(c);
    }
    if (r->pmtu)
        vega__quic_pmtu_result(c, true);
    for (unsigned i = 0; i < r->n; i++) {
        struct vega__quic_sf *f = &r->f[i];
        switch (f->type) {
        case VEGA__QUIC_SF_STREAM: {
            struct vega__quic_stream *s = vega__quic_stream_get(c, f->id);
            if (!s)
                break;
            vega__quic_sendbuf_on_acked(&s->sb, f->off, f->len, f->fin);
            if (s->want_writable && vega__quic_sendbuf_room(&s->sb) > 0 &&
                s->sb.nsegs < VEGA__QUIC_SENDBUF_MAX_REFS) {
                vega_quic_event ev = {.type = VEGA_QUIC_EV_STREAM_WRITABLE, .stream_id = s->id};
                /* Not queued (no memory): the next acknowledgement tries again. */
                s->want_writable = vega__quic_ev_push(c, &ev) < 0;
            }
            vega__quic_stream_maybe_free(c, s);
            break;
        }
        case VEGA__QUIC_SF_CRYPTO: {
            struct vega__quic_space *sp = &c->sp[vega__quic_level_space(r->level)];
            if (!sp->discarded)
                vega__quic_sendbuf_on_acked(&sp->crypto_tx, f->off, f->len, false);
            break;
        }
        case VEGA__QUIC_SF_ACK: {
            /* The peer has our ACK up to f->off: stop reporting what lies below it
             * (RFC 9000 §13.2.4); older packets count as duplicates from now on. */
            struct vega__quic_space *sp = &c->sp[space];
            if (f->off > sp->floor) {
                vega__quic_ranges_remove(&sp->recvd, 0, f->off);
                sp->floor = f->off;
            }
            break;
        }
        case VEGA__QUIC_SF_NEW_TOKEN:
            if (c->addr.new_token && f->off == c->addr.new_token_gen) {
                vega__quic_free(c->cfg.mem, c->addr.new_token);
                c->addr.new_token = NULL;
                c->addr.new_token_len = 0;
            }
            break;
        case VEGA__QUIC_SF_RETIRE_CID: {
            struct vega__quic_cid *id = vega__quic_cid_find(c->cids.peer, c->cids.npeer, f->off);
            if (id && id->retired)
                id->retire_acked = true;
            break;
        }
        case VEGA__QUIC_SF_RESET_STREAM: {
            struct vega__quic_stream *s = vega__quic_stream_get(c, f->id);
            if (s) {
                s->reset_acked = true;
                vega__quic_stream_maybe_free(c, s);
            }
            break;
        }
        default:
            break;
        }
    }
    p->frames = NULL;
    vega__quic_rec_put(c, r);
}

void vega__quic_on_lost(void *ud, int space, struct vega__quic_sent *p, bool discarded)
{
    (void)space;
    vega_quic_conn *c = ud;
    struct vega__quic_pktrec *r = p->frames;
    if (!r)
        return;
    if (r->pmtu && !discarded)
        vega__quic_pmtu_result(c, false);
    if (!discarded && VEGA__QLOG(c))
        vega__quic_qlog_lost(c, r->level, p->pn, r->pmtu ? "pmtu_probe" : NULL);
    for (unsigned i = 0; i < r->n && !discarded && c->state < VEGA__QUIC_ST_CLOSING; i++) {
        struct vega__quic_sf *f = &r->f[i];
        struct vega__quic_stream *s = NULL;
        switch (f->type) {
        case VEGA__QUIC_SF_STREAM:
            s = vega__quic_stream_get(c, f->id);
            if (s && !s->reset_queued) {
                vega__quic_sendbuf_on_lost(&s->sb, f->off, f->len, f->fin);
                vega__quic_sendq_push(c, s);
            }
            break;
        case VEGA__QUIC_SF_CRYPTO: {
            struct vega__quic_space *sp = &c->sp[vega__quic_level_space(r->level)];
            if (!sp->discarded)
                vega__quic_sendbuf_on_lost(&sp->crypto_tx, f->off, f->len, false);
            break;
        }
        case VEGA__QUIC_SF_MAX_DATA:
            c->flow.max_data_queued = true;
            break;
        case VEGA__QUIC_SF_MAX_STREAM_DATA:
            s = vega__quic_stream_get(c, f->id);
            if (s && !s->fin_read && !s->peer_reset && s->rb.final_size == UINT64_MAX) {
                s->max_data_queued = true;
                vega__quic_sendq_push(c, s);
            }
            break;
        case VEGA__QUIC_SF_MAX_STREAMS_BIDI:
            c->streams.max_streams_queued[0] = true;
            break;
        case VEGA__QUIC_SF_MAX_STREAMS_UNI:
            c->streams.max_streams_queued[1] = true;
            break;
        case VEGA__QUIC_SF_RESET_STREAM:
            s = vega__quic_stream_get(c, f->id);
            if (s) {
                s->reset_sent = false;
                vega__quic_sendq_push(c, s);
            }
            break;
        case VEGA__QUIC_SF_STOP_SENDING:
            s = vega__quic_stream_get(c, f->id);
            if (s && !s->fin_read && !s->peer_reset) {
                s->stop_sent = false;
                vega__quic_sendq_push(c, s);
            }
            break;
        case VEGA__QUIC_SF_NEW_CID: {
            struct vega__quic_cid *id = vega__quic_cid_find(c->cids.local, c->cids.nlocal, f->off);
            if (id && !id->retired)
                id->queued = true;
            break;
        }
        case VEGA__QUIC_SF_RETIRE_CID: {
            struct vega__quic_cid *id = vega__quic_cid_find(c->cids.peer, c->cids.npeer, f->off);
            if (id && id->retired)
                id->queued = true;
            break;
        }
        case VEGA__QUIC_SF_HANDSHAKE_DONE:
            c->hs.done_queued = true;
            break;
        case VEGA__QUIC_SF_NEW_TOKEN:
            if (c->addr.new_token && f->off == c->addr.new_token_gen)
                c->addr.new_token_queued = true;
            break;
        default:
            break;
        }
    }
    p->frames = NULL;
    vega__quic_rec_put(c, r);
}
