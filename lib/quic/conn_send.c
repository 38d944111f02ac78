/* SPDX-License-Identifier: MIT */
/* The QUIC connection's send path: one datagram per call, coalescing Initial, Handshake and
 * 1-RTT (or 0-RTT) packets; ACKs, CRYPTO, control frames, STREAM data round-robin and
 * DATAGRAMs; padding, anti-amplification, congestion window and pacing (RFC 9000 §12-14,
 * §17; RFC 9002 §7). Also what happens to a packet's frames when it is acknowledged or lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "conn_int.h"

#define TAG_LEN VEGA_CRYPTO_AEAD_TAG_LEN

/* ---- packet records -------------------------------------------------------------------------- */

static struct vega__quic_pktrec *rec_get(vega_quic_conn *c)
{
    struct vega__quic_pktrec *r = c->rec_free;
    if (r) {
        c->rec_free = r->next_free;
        c->rec_free_n--;
        /* The next packet's record: deep in a long list it is cold, so fetch it ahead. */
        if (c->rec_free)
            __builtin_prefetch(c->rec_free, 1);
    } else {
        r = vega__quic_malloc(c->cfg.mem, sizeof *r);
        if (!r)
            return NULL;
    }
    c->rec_live++;
    r->next_free = NULL;
    r->n = 0;
    r->pmtu = false;
    return r;
}

/* The free list keeps as many records as are in flight (plus a margin): a window of thousands
 * of packets then recycles its records instead of freeing and allocating one per packet, and
 * what is kept stays bounded by the largest window seen since it shrank. */
static void rec_put(vega_quic_conn *c, struct vega__quic_pktrec *r)
{
    if (VEGA_NEVER(c->rec_live == 0))
        c->rec_live = 1;
    c->rec_live--;
    if (c->rec_free_n >= 1024 + c->rec_live) {
        vega__quic_free(c->cfg.mem, r);
        return;
    }
    r->next_free = c->rec_free;
    c->rec_free = r;
    c->rec_free_n++;
}

static struct vega__quic_sf *rec_add(struct vega__quic_pktrec *r, uint8_t type)
{
    struct vega__quic_sf *f = &r->f[r->n++];
    memset(f, 0, sizeof *f);
    f->type = type;
    return f;
}

static struct vega__quic_cid *find_cid(struct vega__quic_cid *v, size_t n, uint64_t seq)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].seq == seq)
            return &v[i];
    return NULL;
}

void vega__quic_on_acked(void *ud, int space, struct vega__quic_sent *p)
{
    vega_quic_conn *c = ud;
    struct vega__quic_pktrec *r = p->frames;
    if (!r)
        return;
    if (space == VEGA__QUIC_SPACE_APP && c->ku_pending && p->pn >= c->ku_first_pn) {
        c->ku_pending = false;
        c->ku_allowed_at = c->now + 3 * vega__quic_pto(c);
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
            if (s->want_writable && vega__quic_sendbuf_room(&s->sb) > 0) {
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
            if (c->new_token && f->off == c->new_token_gen) {
                vega__quic_free(c->cfg.mem, c->new_token);
                c->new_token = NULL;
                c->new_token_len = 0;
            }
            break;
        case VEGA__QUIC_SF_RETIRE_CID: {
            struct vega__quic_cid *id = find_cid(c->peer, c->npeer, f->off);
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
    rec_put(c, r);
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
            c->max_data_queued = true;
            break;
        case VEGA__QUIC_SF_MAX_STREAM_DATA:
            s = vega__quic_stream_get(c, f->id);
            if (s && !s->fin_read && !s->peer_reset && s->rb.final_size == UINT64_MAX) {
                s->max_data_queued = true;
                vega__quic_sendq_push(c, s);
            }
            break;
        case VEGA__QUIC_SF_MAX_STREAMS_BIDI:
            c->max_streams_queued[0] = true;
            break;
        case VEGA__QUIC_SF_MAX_STREAMS_UNI:
            c->max_streams_queued[1] = true;
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
            struct vega__quic_cid *id = find_cid(c->local, c->nlocal, f->off);
            if (id && !id->retired)
                id->queued = true;
            break;
        }
        case VEGA__QUIC_SF_RETIRE_CID: {
            struct vega__quic_cid *id = find_cid(c->peer, c->npeer, f->off);
            if (id && id->retired)
                id->queued = true;
            break;
        }
        case VEGA__QUIC_SF_HANDSHAKE_DONE:
            c->handshake_done_queued = true;
            break;
        case VEGA__QUIC_SF_NEW_TOKEN:
            if (c->new_token && f->off == c->new_token_gen)
                c->new_token_queued = true;
            break;
        default:
            break;
        }
    }
    p->frames = NULL;
    rec_put(c, r);
}

/* ---- building packets ------------------------------------------------------------------------ */

/* One packet being built inside the datagram. */
struct pkt {
    int space, level;
    vega_quic_hdr h;
    vega_quic_keys *keys;
    size_t start, hdr_len, pn_len, len; /* len: payload bytes so far */
    size_t cap;                        /* payload room (tag excluded) */
    uint64_t pn;
    bool eliciting, has_ack;
    bool path_probe; /* carries PATH_CHALLENGE/RESPONSE: the datagram is padded (§8.2) */
    struct vega__quic_pktrec *rec;
};

static uint8_t *pay(uint8_t *out, struct pkt *k)
{
    return out + k->start + k->hdr_len + k->len;
}

static size_t left(const struct pkt *k)
{
    VEGA_ASSERT(k->len <= k->cap); /* every put checked its room first */
    return k->cap - k->len;
}

static bool rec_full(const struct pkt *k)
{
    return k->rec->n >= VEGA__QUIC_PKT_FRAMES;
}

static void put_varint(uint8_t *out, struct pkt *k, uint64_t v)
{
    vega_ssize n = vega_quic_varint_write(pay(out, k), left(k), v);
    VEGA_ASSERT(n > 0); /* callers checked the room */
    k->len += (size_t)n;
}

/* Encodes a frame through the generic encoder (control frames: small, rare). */
static bool put_frame(uint8_t *out, struct pkt *k, const vega_quic_frame *f)
{
    vega_ssize n = vega_quic_frame_encode(f, pay(out, k), left(k));
    if (n < 0)
        return false;
    k->len += (size_t)n;
    if (vega_quic_frame_is_ack_eliciting(f->type))
        k->eliciting = true;
    return true;
}

static void put_ack(vega_quic_conn *c, uint8_t *out, struct pkt *k)
{
    struct vega__quic_space *sp = &c->sp[k->space];
    if (sp->recvd.n == 0 || rec_full(k))
        return;
    vega_quic_ack_range ranges[VEGA__QUIC_ACK_RANGES];
    size_t n = 0;
    for (size_t i = sp->recvd.n; i-- > 0 && n < VEGA__QUIC_ACK_RANGES;)
        ranges[n++] = (vega_quic_ack_range){sp->recvd.r[i].start, sp->recvd.r[i].end - 1};
    uint64_t delay = 0;
    if (k->space == VEGA__QUIC_SPACE_APP && c->now > sp->largest_recvd_time)
        delay = ((c->now - sp->largest_recvd_time) / 1000) >> c->cfg.ack_delay_exponent;
    vega_quic_frame f = {.type = sp->ecn_seen ? VEGA_QUIC_FT_ACK_ECN : VEGA_QUIC_FT_ACK};
    f.u.ack.ack_delay = delay;
    f.u.ack.ect0 = sp->ecn[0];
    f.u.ack.ect1 = sp->ecn[1];
    f.u.ack.ce = sp->ecn[2];
    /* Fewer ranges when the packet is short of room. */
    for (; n > 0; n = n > 8 ? n / 2 : n - 1) {
        f.u.ack.ranges = ranges;
        f.u.ack.nranges = n;
        if (put_frame(out, k, &f))
            break;
    }
    if (n == 0)
        return;
    k->has_ack = true;
    rec_add(k->rec, VEGA__QUIC_SF_ACK)->off = ranges[0].largest;
    sp->ack_pending = false;
    sp->unacked_eliciting = 0;
    sp->ack_deadline = VEGA__QUIC_TIME_INF;
}

/* CRYPTO or STREAM data frames straight from a send buffer into the packet. */
static void put_crypto(vega_quic_conn *c, uint8_t *out, struct pkt *k)
{
    struct vega__quic_sendbuf *b = &c->sp[k->space].crypto_tx;
    while (!rec_full(k)) {
        uint64_t off;
        size_t len;
        bool fin;
        if (!vega__quic_sendbuf_next(b, UINT64_MAX, SIZE_MAX, &off, &len, &fin, NULL))
            return;
        size_t hdr = 1 + vega_quic_varint_len(off) + 2;
        if (left(k) <= hdr)
            return;
        if (len > left(k) - hdr)
            len = left(k) - hdr;
        if (len > 16383)
            len = 16383; /* the 2-byte Length field */
        pay(out, k)[0] = VEGA_QUIC_FT_CRYPTO;
        k->len++;
        put_varint(out, k, off);
        vega_quic_varint_write_n(pay(out, k), left(k), len, 2);
        k->len += 2;
        vega__quic_sendbuf_copy(b, off, len, pay(out, k));
        k->len += len;
        k->eliciting = true;
        vega__quic_sendbuf_on_sent(b, off, len, false);
        struct vega__quic_sf *f = rec_add(k->rec, VEGA__QUIC_SF_CRYPTO);
        f->off = off;
        f->len = (uint32_t)len;
    }
}

/* Control frames of a stream, then its data. Returns 1 when it sent data and has more, 0 when
 * nothing is left to send (or blocked on its own limit), -1 when the packet is full, -2 when
 * blocked by the connection's limit. */
static int put_stream(vega_quic_conn *c, uint8_t *out, struct pkt *k, struct vega__quic_stream *s,
                      bool early)
{
    if (s->reset_queued && !s->reset_sent && !early) {
        if (rec_full(k))
            return -1;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_RESET_STREAM};
        f.u.reset_stream.stream_id = s->id;
        f.u.reset_stream.error_code = s->reset_code;
        f.u.reset_stream.final_size = s->sb.next_off;
        if (!put_frame(out, k, &f))
            return -1;
        s->reset_sent = true;
        rec_add(k->rec, VEGA__QUIC_SF_RESET_STREAM)->id = s->id;
    }
    if (s->stop_queued && !s->stop_sent && !early) {
        if (rec_full(k))
            return -1;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_STOP_SENDING};
        f.u.stop_sending.stream_id = s->id;
        f.u.stop_sending.error_code = s->stop_code;
        if (!put_frame(out, k, &f))
            return -1;
        s->stop_sent = true;
        rec_add(k->rec, VEGA__QUIC_SF_STOP_SENDING)->id = s->id;
    }
    if (s->max_data_queued && !early) {
        if (rec_full(k))
            return -1;
        const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(c->rec);
        struct vega__quic_fc save = s->fc;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_MAX_STREAM_DATA};
        f.u.stream_limit.stream_id = s->id;
        f.u.stream_limit.max = vega__quic_fc_update(&s->fc, rtt->smoothed, c->now);
        if (!put_frame(out, k, &f)) {
            s->fc = save;
            return -1;
        }
        s->max_data_queued = false;
        rec_add(k->rec, VEGA__QUIC_SF_MAX_STREAM_DATA)->id = s->id;
    }
    if (s->reset_queued)
        return 0;
    for (;;) {
        if (rec_full(k))
            return -1;
        /* Saturating: a server that refused 0-RTT may allow less than 0-RTT already used. */
        uint64_t credit = c->max_send_data > c->data_sent ? c->max_send_data - c->data_sent : 0;
        uint64_t max_off = s->max_send;
        if (s->sb.next_off + credit < max_off)
            max_off = s->sb.next_off + credit;
        size_t hdr = 1 + vega_quic_varint_len(s->id) + 8 + 2;
        if (left(k) <= hdr)
            return -1;
        uint64_t off;
        size_t len;
        bool fin, blocked = false;
        /* The Length field is written in 2 bytes: at most 16383 per frame. */
        size_t room = left(k) - hdr < 16383 ? left(k) - hdr : 16383;
        bool more = vega__quic_sendbuf_next(&s->sb, max_off, room, &off, &len, &fin, &blocked);
        /* The offset's real size is known now: a chunk cut short by the worst-case header
         * estimate may take the bytes it left, so full packets are exactly full. */
        size_t real = 1 + vega_quic_varint_len(s->id) + (off ? vega_quic_varint_len(off) : 0) + 2;
        if (more && len == room && real < hdr && room < 16383)
            vega__quic_sendbuf_next(&s->sb, max_off,
                                    left(k) - real < 16383 ? left(k) - real : 16383, &off, &len,
                                    &fin, &blocked);
        if (!more) {
            if (!blocked)
                return 0;
            if (max_off == s->max_send) {
                /* Blocked by the stream's own limit: say so once per limit (RFC 9000 §4.1);
                 * MAX_STREAM_DATA puts the stream back in the queue. */
                if (s->blocked_at != s->max_send && !early) {
                    vega_quic_frame f = {.type = VEGA_QUIC_FT_STREAM_DATA_BLOCKED};
                    f.u.stream_limit.stream_id = s->id;
                    f.u.stream_limit.max = s->max_send;
                    if (put_frame(out, k, &f))
                        s->blocked_at = s->max_send;
                }
                return 0;
            }
            if (c->data_blocked_at != c->max_send_data) {
                c->data_blocked_at = c->max_send_data;
                c->data_blocked_queued = true;
            }
            return -2;
        }
        uint8_t type = VEGA_QUIC_FT_STREAM | 0x02 | (off ? 0x04 : 0) | (fin ? 0x01 : 0);
        pay(out, k)[0] = type;
        k->len++;
        put_varint(out, k, s->id);
        if (off)
            put_varint(out, k, off);
        vega_quic_varint_write_n(pay(out, k), left(k), len, 2);
        k->len += 2;
        vega__quic_sendbuf_copy(&s->sb, off, len, pay(out, k));
        k->len += len;
        k->eliciting = true;
        if (off + len > s->sb.next_off)
            c->data_sent += off + len - s->sb.next_off;
        vega__quic_sendbuf_on_sent(&s->sb, off, len, fin);
        struct vega__quic_sf *f = rec_add(k->rec, VEGA__QUIC_SF_STREAM);
        f->id = s->id;
        f->off = off;
        f->len = (uint32_t)len;
        f->fin = fin;
        if (!vega__quic_sendbuf_has_pending(&s->sb))
            return 0;
        return 1;
    }
}

static void put_streams(vega_quic_conn *c, uint8_t *out, struct pkt *k, bool early)
{
    /* Each stream gets one frame per turn, then goes to the back of the queue: streams share
     * the connection fairly. A bounded number of turns per packet keeps this linear. */
    size_t turns = 64;
    while (c->sendq_head && turns--) {
        struct vega__quic_stream *s = c->sendq_head;
        int rc = put_stream(c, out, k, s, early);
        if (rc < 0)
            return; /* full, or the connection window is closed */
        c->sendq_head = s->sendq_next;
        if (!c->sendq_head)
            c->sendq_tail = NULL;
        s->in_sendq = false;
        s->sendq_next = NULL;
        if (rc == 1)
            vega__quic_sendq_push(c, s);
        else
            vega__quic_stream_maybe_free(c, s);
    }
}

static void put_control(vega_quic_conn *c, uint8_t *out, struct pkt *k)
{
    const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(c->rec);
    if (c->new_token_queued && c->handshake_confirmed && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_NEW_TOKEN};
        f.u.new_token.token = c->new_token;
        f.u.new_token.len = c->new_token_len;
        if (put_frame(out, k, &f)) {
            c->new_token_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_NEW_TOKEN)->off = c->new_token_gen;
        }
    }
    if (c->handshake_done_queued && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_HANDSHAKE_DONE};
        if (put_frame(out, k, &f)) {
            c->handshake_done_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_HANDSHAKE_DONE);
        }
    }
    if (c->path_response_queued && !c->path_response_elsewhere) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_RESPONSE};
        memcpy(f.u.path.data, c->path_response, 8);
        if (put_frame(out, k, &f)) {
            c->path_response_queued = false;
            k->path_probe = true;
        }
    }
    if (c->challenge_queued) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_CHALLENGE};
        memcpy(f.u.path.data, c->challenge, 8);
        if (put_frame(out, k, &f)) {
            c->challenge_queued = false;
            k->path_probe = true;
        }
    }
    if (c->max_data_queued && !rec_full(k)) {
        struct vega__quic_fc save = c->fc;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_MAX_DATA};
        f.u.limit.max = vega__quic_fc_update(&c->fc, rtt->smoothed, c->now);
        if (put_frame(out, k, &f)) {
            c->max_data_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_MAX_DATA);
        } else {
            c->fc = save;
        }
    }
    for (int t = 0; t < 2; t++)
        if (c->max_streams_queued[t] && !rec_full(k)) {
            vega_quic_frame f = {.type = t ? VEGA_QUIC_FT_MAX_STREAMS_UNI
                                           : VEGA_QUIC_FT_MAX_STREAMS_BIDI};
            f.u.limit.max = c->local_max_streams[t];
            if (put_frame(out, k, &f)) {
                c->max_streams_queued[t] = false;
                rec_add(k->rec, t ? VEGA__QUIC_SF_MAX_STREAMS_UNI : VEGA__QUIC_SF_MAX_STREAMS_BIDI);
            }
        }
    if (c->data_blocked_queued && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_DATA_BLOCKED};
        f.u.limit.max = c->data_blocked_at;
        if (put_frame(out, k, &f))
            c->data_blocked_queued = false;
    }
    for (size_t i = 0; i < c->nlocal; i++) {
        struct vega__quic_cid *id = &c->local[i];
        if (!id->queued || id->retired || rec_full(k))
            continue;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_NEW_CONNECTION_ID};
        f.u.new_cid.seq = id->seq;
        f.u.new_cid.cid_len = id->len;
        memcpy(f.u.new_cid.cid, id->id, id->len);
        memcpy(f.u.new_cid.reset_token, id->token, VEGA_QUIC_RESET_TOKEN_LEN);
        if (!put_frame(out, k, &f))
            break;
        id->queued = false;
        rec_add(k->rec, VEGA__QUIC_SF_NEW_CID)->off = id->seq;
    }
    for (size_t i = 0; i < c->npeer; i++) {
        struct vega__quic_cid *id = &c->peer[i];
        if (!id->queued || !id->retired || rec_full(k))
            continue;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_RETIRE_CONNECTION_ID};
        f.u.retire_cid.seq = id->seq;
        if (!put_frame(out, k, &f))
            break;
        id->queued = false;
        rec_add(k->rec, VEGA__QUIC_SF_RETIRE_CID)->off = id->seq;
    }
}

static void put_datagrams(vega_quic_conn *c, uint8_t *out, struct pkt *k)
{
    while (c->dsend_n) {
        struct vega__quic_dgram *d = &c->dsend[c->dsend_head];
        size_t need = 1 + vega_quic_varint_len(d->len) + d->len;
        if (need > left(k))
            return; /* waits for the next packet */
        vega_quic_frame f = {.type = VEGA_QUIC_FT_DATAGRAM_LEN};
        f.u.datagram.data = d->data;
        f.u.datagram.len = d->len;
        put_frame(out, k, &f);
        vega__quic_free(c->cfg.mem, d->data);
        c->dsend_head = (c->dsend_head + 1) % VEGA__QUIC_DGRAM_SEND_QUEUE;
        c->dsend_n--;
    }
}

static bool app_has_data(const vega_quic_conn *c)
{
    if (c->handshake_done_queued || c->path_response_queued || c->challenge_queued ||
        (c->new_token_queued && c->handshake_confirmed) ||
        c->max_data_queued ||
        c->max_streams_queued[0] || c->max_streams_queued[1] || c->data_blocked_queued ||
        c->sendq_head || c->dsend_n || c->ping_queued)
        return true;
    for (size_t i = 0; i < c->nlocal; i++)
        if (c->local[i].queued && !c->local[i].retired)
            return true;
    for (size_t i = 0; i < c->npeer; i++)
        if (c->peer[i].queued && c->peer[i].retired)
            return true;
    return false;
}

/* Starts a packet for space at *pos. Returns false when it does not fit. */
static bool pkt_begin(vega_quic_conn *c, struct pkt *k, int level, size_t pos, size_t limit)
{
    memset(k, 0, sizeof *k);
    k->level = level;
    k->space = vega__quic_level_space(level);
    struct vega__quic_space *sp = &c->sp[k->space];
    k->keys = level == VEGA_QUIC_LEVEL_EARLY ? c->early_tx : sp->tx;
    const struct vega__quic_cid *d = &c->peer[c->dcid_idx];
    vega_quic_hdr *h = &k->h;
    h->version = c->version;
    h->dcid = d->id;
    h->dcid_len = d->len;
    h->scid = c->local[0].id;
    h->scid_len = c->local[0].len;
    switch (level) {
    case VEGA_QUIC_LEVEL_INITIAL:
        h->type = VEGA_QUIC_PKT_INITIAL;
        if (!c->server) {
            h->token = c->token;
            h->token_len = c->token_len;
        }
        break;
    case VEGA_QUIC_LEVEL_EARLY:
        h->type = VEGA_QUIC_PKT_0RTT;
        break;
    case VEGA_QUIC_LEVEL_HANDSHAKE:
        h->type = VEGA_QUIC_PKT_HANDSHAKE;
        break;
    default:
        h->type = VEGA_QUIC_PKT_1RTT;
        h->key_phase = c->key_phase;
        break;
    }
    h->length = 1000; /* a placeholder of the final encoding's size (2 bytes below 16384) */
    k->pn = sp->next_pn;
    k->pn_len = vega_quic_pn_len(k->pn, vega__quic_recovery_largest_acked(c->rec, k->space));
    if (k->pn_len == 0)
        k->pn_len = 4;
    k->hdr_len = vega_quic_hdr_len(h, k->pn_len);
    k->start = pos;
    if (k->hdr_len == 0 || pos + k->hdr_len + TAG_LEN + 8 > limit)
        return false;
    k->cap = limit - pos - k->hdr_len - TAG_LEN;
    return true;
}

/* Writes the header for the final length; pads so the header protection sample exists. */
static size_t pkt_finish(uint8_t *out, struct pkt *k, size_t pad_to)
{
    size_t min = 4 > k->pn_len ? 4 - k->pn_len : 0;
    if (k->len < min)
        pad_to = pad_to > min ? pad_to : min;
    if (k->len < pad_to) {
        size_t room = k->cap > pad_to ? pad_to : k->cap;
        memset(pay(out, k), 0, room - k->len);
        k->len = room;
    }
    k->h.length = k->pn_len + k->len + TAG_LEN;
    vega_quic_hdr_write(out + k->start, k->hdr_len, &k->h, k->pn_len, k->pn);
    return k->hdr_len + k->len + TAG_LEN;
}

/* The CONNECTION_CLOSE datagram of the closing state (RFC 9000 §10.2.1). */
static vega_ssize write_close(vega_quic_conn *c, uint8_t *out, size_t limit)
{
    struct pkt ks[3];
    size_t nk = 0, pos = 0;
    bool initial = false;
    for (int level = VEGA_QUIC_LEVEL_INITIAL; level <= VEGA_QUIC_LEVEL_APP; level++) {
        if (level == VEGA_QUIC_LEVEL_EARLY)
            continue;
        struct vega__quic_space *sp = &c->sp[vega__quic_level_space(level)];
        if (!sp->tx || sp->discarded)
            continue;
        /* Once 1-RTT is confirmed the peer has every key: only 1-RTT. */
        if (c->handshake_confirmed && level != VEGA_QUIC_LEVEL_APP)
            continue;
        struct pkt *k = &ks[nk];
        if (!pkt_begin(c, k, level, pos, limit))
            break;
        struct vega__quic_pktrec dummy;
        k->rec = &dummy;
        dummy.n = 0;
        bool app = c->close_app && level == VEGA_QUIC_LEVEL_APP;
        vega_quic_frame f = {.type = app ? VEGA_QUIC_FT_CONNECTION_CLOSE_APP
                                         : VEGA_QUIC_FT_CONNECTION_CLOSE};
        /* An application close before 1-RTT becomes APPLICATION_ERROR without a reason, which
         * could otherwise leak to an unauthenticated peer (RFC 9000 §10.2.3). */
        bool masked = c->close_app && level != VEGA_QUIC_LEVEL_APP;
        f.u.close.error_code = masked ? VEGA_QUIC_APPLICATION_ERROR : c->close_code;
        f.u.close.frame_type = c->close_frame_type;
        if (!masked) {
            f.u.close.reason = (const uint8_t *)c->close_reason;
            f.u.close.reason_len = strlen(c->close_reason);
        }
        if (!put_frame(out, k, &f)) {
            f.u.close.reason_len = 0;
            if (!put_frame(out, k, &f))
                break;
        }
        initial |= level == VEGA_QUIC_LEVEL_INITIAL;
        pos += pkt_finish(out, k, 0);
        k->rec = NULL;
        nk++;
    }
    if (!nk)
        return 0;
    if (initial && !c->server && pos < VEGA_QUIC_MIN_INITIAL_SIZE) {
        struct pkt *k = &ks[nk - 1];
        pos = k->start + pkt_finish(out, k, k->len + (VEGA_QUIC_MIN_INITIAL_SIZE - pos));
    }
    for (size_t i = 0; i < nk; i++) {
        vega_ssize n = vega_quic_packet_protect(ks[i].keys, out + ks[i].start, limit - ks[i].start,
                                                ks[i].hdr_len, ks[i].pn, ks[i].len);
        if (n < 0)
            return n;
        c->sp[ks[i].space].next_pn++;
    }
    return (vega_ssize)pos;
}

/* PATH_RESPONSE to a challenge that came on another path than ours, alone in a datagram sent
 * there (RFC 9000 §8.2.2), padded to 1200 bytes (the challenge's datagram was, so this stays
 * within 3x of what that path sent). Not ack-eliciting for recovery purposes: a lost response
 * is answered by the peer's next challenge. */
static vega_ssize write_path_response(vega_quic_conn *c, vega_quic_path *path, uint8_t *out,
                                      size_t limit)
{
    /* Padded to 1200 bytes only if that stays within 3x what the challenge's datagram
     * brought: an address nobody validated must not become a reflection target. */
    if (c->path_response_budget < limit)
        limit = c->path_response_budget < 64 ? 64 : c->path_response_budget;
    struct pkt k;
    if (!pkt_begin(c, &k, VEGA_QUIC_LEVEL_APP, 0, limit))
        return 0;
    /* The packet number must be known to recovery, or the peer's ACK of it would look like an
     * ACK of a packet never sent (found against ngtcp2's gtlsclient migrating). */
    int rc = vega__quic_recovery_reserve(c->rec, VEGA__QUIC_SPACE_APP, 1);
    if (rc < 0)
        return rc;
    struct vega__quic_pktrec dummy;
    dummy.n = 0;
    k.rec = &dummy;
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_RESPONSE};
    memcpy(f.u.path.data, c->path_response, 8);
    put_frame(out, &k, &f);
    pkt_finish(out, &k, limit - k.hdr_len - TAG_LEN);
    vega_ssize n = vega_quic_packet_protect(k.keys, out, limit, k.hdr_len, k.pn, k.len);
    if (n < 0)
        return n;
    /* Recorded without frames and outside the congestion window: it went to another path, and
     * a lost response is answered by the peer's next challenge. */
    struct vega__quic_sent sent = {.pn = k.pn, .time_sent = c->now, .bytes = (uint32_t)n};
    c->sp[VEGA__QUIC_SPACE_APP].next_pn++;
    if (vega__quic_recovery_on_sent(c->rec, VEGA__QUIC_SPACE_APP, &sent) < 0)
        return VEGA_ERR_INTERNAL; /* reserved above: cannot fail */
    c->stats.pkts_sent++;
    c->path_response_queued = false;
    c->path_response_elsewhere = false;
    if (path)
        *path = c->path_response_path;
    c->stats.bytes_sent += (uint64_t)n;
    return n;
}

/* ---- DPLPMTUD (RFC 9000 §14.3, RFC 8899) ------------------------------------------------------- */

/* The largest datagram worth probing: our setting, the peer's max_udp_payload_size, and what
 * the driver's buffers take. */
static size_t pmtu_ceiling(const vega_quic_conn *c)
{
    uint64_t hi = c->cfg.pmtu_max;
    if (c->peer_tp.max_udp_payload_size < hi)
        hi = c->peer_tp.max_udp_payload_size;
    if (c->last_cap && c->last_cap < hi)
        hi = c->last_cap;
    return (size_t)hi;
}

void vega__quic_pmtu_result(vega_quic_conn *c, bool acked)
{
    if (!c->pmtu_in_flight)
        return;
    c->pmtu_in_flight = false;
    if (acked) {
        c->mtu = c->pmtu_probe;
        c->pmtu_fails = 0;
    } else if (++c->pmtu_fails < 3) {
        return; /* one loss may be chance: the same size again (RFC 8899 MAX_PROBES = 3) */
    } else {
        c->pmtu_hi = c->pmtu_probe - 1;
        c->pmtu_fails = 0;
    }
    /* Binary search between what works and what failed, to within 16 bytes. */
    if (c->pmtu_hi < c->mtu + 16)
        c->pmtu_done = true;
    else
        c->pmtu_probe = (c->mtu + c->pmtu_hi + 1) / 2;
}

/* A probe: one 1-RTT packet of exactly pmtu_probe bytes (PING and PADDING) alone in its
 * datagram, sent once the handshake is confirmed and the path validated, one at a time. The
 * first tries the ceiling itself: on most paths that is the answer. */
static vega_ssize write_pmtu_probe(vega_quic_conn *c, uint8_t *out, size_t cap)
{
    if (!c->pmtu_hi) {
        c->pmtu_hi = pmtu_ceiling(c);
        if (c->pmtu_hi < c->mtu + 16) {
            c->pmtu_done = true;
            return 0;
        }
        c->pmtu_probe = c->pmtu_hi;
    }
    size_t size = c->pmtu_probe;
    if (size > cap)
        return 0;
    struct pkt k;
    if (!pkt_begin(c, &k, VEGA_QUIC_LEVEL_APP, 0, size))
        return 0;
    k.rec = rec_get(c);
    if (!k.rec)
        return -ENOMEM;
    k.rec->level = VEGA_QUIC_LEVEL_APP;
    k.rec->pmtu = true;
    vega_quic_frame f = {.type = VEGA_QUIC_FT_PING};
    put_frame(out, &k, &f);
    pkt_finish(out, &k, k.cap);
    vega_ssize n = vega_quic_packet_protect(k.keys, out, cap, k.hdr_len, k.pn, k.len);
    if (n < 0) {
        rec_put(c, k.rec);
        return n;
    }
    struct vega__quic_sent s = {.pn = k.pn, .time_sent = c->now, .bytes = (uint32_t)n,
                                .ack_eliciting = true, .in_flight = true, .pmtu_probe = true,
                                .frames = k.rec};
    c->sp[VEGA__QUIC_SPACE_APP].next_pn++;
    if (vega__quic_recovery_on_sent(c->rec, VEGA__QUIC_SPACE_APP, &s) < 0) {
        rec_put(c, k.rec);
        return 0;
    }
    c->pmtu_in_flight = true;
    c->stats.pkts_sent++;
    c->stats.bytes_sent += (uint64_t)n;
    return n;
}

vega_ssize vega_quic_conn_write(vega_quic_conn *c, vega_quic_path *path, uint8_t *ecn,
                                uint8_t *out, size_t cap, uint64_t now)
{
    if (now > c->now)
        c->now = now;
    now = c->now;
    if (c->state == VEGA__QUIC_ST_CLOSED)
        return VEGA_ERR_CLOSED;
    if (cap < VEGA_QUIC_MIN_INITIAL_SIZE)
        return VEGA_ERR_INVALID_ARG;
    if (path)
        *path = c->path;
    if (ecn)
        *ecn = VEGA_QUIC_ECN_NOT_ECT;
    c->last_cap = cap;
    c->send_blocked = false;
    size_t limit = c->mtu < cap ? c->mtu : cap;
    if (c->server && !c->addr_validated) {
        /* Anti-amplification (RFC 9000 §8.1): three times what the client sent. */
        uint64_t allowed = 3 * c->bytes_recv_unvalidated;
        allowed = allowed > c->bytes_sent_unvalidated ? allowed - c->bytes_sent_unvalidated : 0;
        bool blocked = allowed < VEGA_QUIC_MIN_INITIAL_SIZE;
        /* A PTO that could not send its probe must not keep firing (RFC 9002 §6.2.2.1), nor
         * an ACK deadline that cannot be met (vega_quic_conn_expiry skips it). */
        vega__quic_recovery_set_amplification_blocked(c->rec, blocked);
        c->send_blocked = blocked;
        if (blocked)
            return 0;
    }
    if (c->state == VEGA__QUIC_ST_DRAINING)
        return 0;
    if (c->state == VEGA__QUIC_ST_CLOSING) {
        if (!c->close_send)
            return 0;
        c->close_send = false;
        vega_ssize n = write_close(c, out, limit);
        if (n > 0 && c->server && !c->addr_validated)
            c->bytes_sent_unvalidated += (uint64_t)n;
        return n;
    }

    if (c->path_response_queued && c->path_response_elsewhere && c->sp[VEGA__QUIC_SPACE_APP].tx)
        return write_path_response(c, path, out, limit);
    if (c->migrating && c->server) {
        /* The new peer address is not validated: 3x what came from it (§9.3). Smaller
         * datagrams (a shorter padded challenge, §8.2.1) rather than none, or a small request
         * would leave its ACK and the challenge stuck. */
        uint64_t allowed = 3 * c->path_bytes_recv;
        uint64_t left = allowed > c->path_bytes_sent ? allowed - c->path_bytes_sent : 0;
        c->send_blocked = left < 64;
        if (c->send_blocked)
            return 0;
        if (left < limit)
            limit = (size_t)left;
    }
    struct vega__quic_cc *cc = vega__quic_recovery_cc(c->rec);
    const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(c->rec);
    bool probing = false;
    for (int i = 0; i < VEGA__QUIC_NSPACES; i++)
        probing |= c->sp[i].probe;
    bool cwnd_ok = probing || vega__quic_cc_available(cc) >= limit;
    bool pace_ok = true;
    if (cwnd_ok && !probing) {
        uint64_t t = vega__quic_cc_pace(cc, limit, rtt, now);
        if (t > now) {
            pace_ok = false;
            c->pace_deadline = t;
        }
    }
    /* Without window or pacing room only ACKs may leave. */
    bool data_ok = cwnd_ok && pace_ok;
    if (data_ok && !c->pmtu_done && !c->pmtu_in_flight && c->handshake_confirmed &&
        c->path_validated && !probing && c->state == VEGA__QUIC_ST_ESTABLISHED &&
        c->sp[VEGA__QUIC_SPACE_APP].tx) {
        vega_ssize n = write_pmtu_probe(c, out, cap);
        if (n != 0) {
            if (ecn)
                *ecn = vega__quic_recovery_ecn_ok(c->rec) ? VEGA_QUIC_ECN_ECT0
                                                         : VEGA_QUIC_ECN_NOT_ECT;
            return n;
        }
    }

    struct pkt ks[3];
    struct vega__quic_pktrec *recs[3] = {NULL, NULL, NULL};
    size_t nk = 0, pos = 0;
    bool has_initial = false, eliciting_initial = false;
    for (int level = VEGA_QUIC_LEVEL_INITIAL; level <= VEGA_QUIC_LEVEL_APP; level++) {
        int space = vega__quic_level_space(level);
        struct vega__quic_space *sp = &c->sp[space];
        if (sp->discarded)
            continue;
        if (level == VEGA_QUIC_LEVEL_EARLY) {
            /* 0-RTT: a client with early keys and no 1-RTT keys yet sends stream data. */
            if (c->server || !c->early_tx || sp->tx || !data_ok || !c->sendq_head)
                continue;
        } else if (!sp->tx) {
            continue;
        }
        /* A handshake probe carries the unacknowledged CRYPTO data again, not just a PING
         * (RFC 9002 §6.2.4): if the flight was lost, the probe replaces it. */
        if (sp->probe && level != VEGA_QUIC_LEVEL_APP && level != VEGA_QUIC_LEVEL_EARLY &&
            !vega__quic_sendbuf_has_pending(&sp->crypto_tx) &&
            sp->crypto_tx.next_off > sp->crypto_tx.acked_base)
            vega__quic_sendbuf_on_lost(&sp->crypto_tx, sp->crypto_tx.acked_base,
                                       sp->crypto_tx.next_off - sp->crypto_tx.acked_base, false);
        bool ack_due = sp->ack_pending && now >= sp->ack_deadline;
        bool want = ack_due || sp->probe;
        if (data_ok) {
            if (level != VEGA_QUIC_LEVEL_APP && level != VEGA_QUIC_LEVEL_EARLY)
                want |= vega__quic_sendbuf_has_pending(&sp->crypto_tx);
            else
                want |= level == VEGA_QUIC_LEVEL_EARLY ? true
                                                       : app_has_data(c) ||
                                                             vega__quic_sendbuf_has_pending(
                                                                 &sp->crypto_tx);
        }
        if (!want)
            continue;
        struct pkt *k = &ks[nk];
        if (!pkt_begin(c, k, level, pos, limit))
            break;
        /* Room for its record and its frames' first: a packet that left unrecorded could not
         * be acknowledged, nor its frames sent again. On failure, what is built goes. */
        size_t same_space = 1;
        for (size_t j = 0; j < nk; j++)
            same_space += ks[j].space == k->space;
        k->rec = recs[nk] = NULL;
        if (vega__quic_recovery_reserve(c->rec, k->space, same_space) == 0)
            k->rec = recs[nk] = rec_get(c);
        if (!k->rec) {
            if (nk == 0)
                return -ENOMEM;
            break;
        }
        k->rec->level = (uint8_t)level;
        if (level != VEGA_QUIC_LEVEL_EARLY && sp->ack_pending)
            put_ack(c, out, k);
        if (data_ok || sp->probe) {
            if (level != VEGA_QUIC_LEVEL_EARLY)
                put_crypto(c, out, k);
            if (level == VEGA_QUIC_LEVEL_APP) {
                put_control(c, out, k);
                put_streams(c, out, k, false);
                put_datagrams(c, out, k);
            } else if (level == VEGA_QUIC_LEVEL_EARLY) {
                put_streams(c, out, k, true);
            }
        }
        if ((sp->probe || c->ping_queued) && !k->eliciting && left(k) >= 1) {
            vega_quic_frame f = {.type = VEGA_QUIC_FT_PING};
            put_frame(out, k, &f);
            if (level == VEGA_QUIC_LEVEL_APP)
                c->ping_queued = false;
        }
        if (k->len == 0) {
            rec_put(c, k->rec);
            recs[nk] = NULL;
            continue;
        }
        if (k->eliciting && sp->probe && --sp->probes == 0)
            sp->probe = false;
        if (level == VEGA_QUIC_LEVEL_INITIAL) {
            has_initial = true;
            eliciting_initial |= k->eliciting;
        }
        pos += pkt_finish(out, k, 0);
        nk++;
        /* A client's first Handshake packet ends its use of Initial keys (RFC 9001 §4.9.1). */
    }
    if (nk == 0) {
        cc->app_limited = data_ok;
        return 0;
    }
    /* Datagrams with a client's Initial, or a server's ack-eliciting one, are padded to 1200
     * bytes (RFC 9000 §14.1), inside the last packet; so are path probes (§8.2.1). */
    bool path_probe = false;
    for (size_t i = 0; i < nk; i++)
        path_probe |= ks[i].path_probe;
    if (((has_initial && (!c->server || eliciting_initial)) || path_probe) &&
        pos < VEGA_QUIC_MIN_INITIAL_SIZE) {
        struct pkt *k = &ks[nk - 1];
        pos = k->start + pkt_finish(out, k, k->len + (VEGA_QUIC_MIN_INITIAL_SIZE - pos));
    }
    /* ECT(0) on everything while the path passes ECN validation (RFC 9000 §13.4.2). */
    bool ect = vega__quic_recovery_ecn_ok(c->rec);
    if (ecn)
        *ecn = ect ? VEGA_QUIC_ECN_ECT0 : VEGA_QUIC_ECN_NOT_ECT;
    bool sent_handshake = false;
    for (size_t i = 0; i < nk; i++) {
        struct pkt *k = &ks[i];
        vega_ssize n = vega_quic_packet_protect(k->keys, out + k->start, cap - k->start,
                                                k->hdr_len, k->pn, k->len);
        if (n < 0) {
            for (size_t j = i; j < nk; j++)
                rec_put(c, recs[j]);
            return n;
        }
        /* The last packet of the datagram carries the padding; each packet counts its own
         * bytes for congestion control. */
        struct vega__quic_sent s = {
            .pn = k->pn,
            .time_sent = now,
            .bytes = (uint32_t)n,
            .ack_eliciting = k->eliciting,
            .in_flight = k->eliciting || (has_initial && i == nk - 1),
            .ecn = ect,
            .frames = recs[i],
        };
        c->sp[k->space].next_pn++;
        if (vega__quic_recovery_on_sent(c->rec, k->space, &s) < 0)
            vega__quic_on_lost(c, k->space, &s, true);
        sent_handshake |= k->level == VEGA_QUIC_LEVEL_HANDSHAKE;
        c->stats.pkts_sent++;
        if (k->eliciting && !c->eliciting_since_rx) {
            c->eliciting_since_rx = true;
            vega__quic_idle_restart(c);
        }
    }
    if (sent_handshake && !c->server)
        vega__quic_discard_space(c, VEGA__QUIC_SPACE_INITIAL);
    if (c->server && !c->addr_validated)
        c->bytes_sent_unvalidated += pos;
    if (c->migrating)
        c->path_bytes_sent += pos;
    c->stats.bytes_sent += pos;
    cc->app_limited = !app_has_data(c) && !c->sendq_head;
    return (vega_ssize)pos;
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
        if (c->path_response_queued && c->path_response_elsewhere)
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
