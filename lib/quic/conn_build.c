/* SPDX-License-Identifier: MIT */
/* Building one QUIC packet inside a datagram: its header and packet number, then the frames a
 * level carries — ACK, CRYPTO, control frames, STREAM data round-robin and DATAGRAMs — each
 * recorded for loss recovery, and the padding (RFC 9000 §12.4, §13, §17, §19). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "conn_int.h"

#define TAG_LEN VEGA_CRYPTO_AEAD_TAG_LEN

static struct vega__quic_sf *rec_add(struct vega__quic_pktrec *r, uint8_t type)
{
    struct vega__quic_sf *f = &r->f[r->n++];
    memset(f, 0, sizeof *f);
    f->type = type;
    return f;
}

static uint8_t *pay(uint8_t *out, struct vega__quic_pkt *k)
{
    return out + k->start + k->hdr_len + k->len;
}

static size_t left(const struct vega__quic_pkt *k)
{
    VEGA_ASSERT(k->len <= k->cap); /* every put checked its room first */
    return k->cap - k->len;
}

static bool rec_full(const struct vega__quic_pkt *k)
{
    return k->rec->n >= VEGA__QUIC_PKT_FRAMES;
}

static void put_varint(uint8_t *out, struct vega__quic_pkt *k, uint64_t v)
{
    vega_ssize n = vega_quic_varint_write(pay(out, k), left(k), v);
    VEGA_ASSERT(n > 0); /* callers checked the room */
    k->len += (size_t)n;
}

/* Encodes a frame through the generic encoder (control frames: small, rare). */
bool vega__quic_put_frame(uint8_t *out, struct vega__quic_pkt *k, const vega_quic_frame *f)
{
    vega_ssize n = vega_quic_frame_encode(f, pay(out, k), left(k));
    if (n < 0)
        return false;
    k->len += (size_t)n;
    if (vega_quic_frame_is_ack_eliciting(f->type))
        k->eliciting = true;
    return true;
}

void vega__quic_put_ack(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k)
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
        if (vega__quic_put_frame(out, k, &f))
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
void vega__quic_put_crypto(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k)
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
/* The stream bytes [off, off + len) into the packet: as spans sealed from the send buffer
 * (vega__quic_packet_protect_ext), or copied when the packet has no span left, qlog reads the
 * packet before it is sealed, or the suite seals faster in place (ChaCha20-Poly1305). */
static void put_stream_data(const vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k,
                            const struct vega__quic_sendbuf *b, uint64_t off, size_t len)
{
    while (len > 0) {
        if (k->next == VEGA__QUIC_EXT_MAX || VEGA__QLOG(c) ||
            !vega__quic_keys_seal_from_source(k->keys)) {
            vega__quic_sendbuf_copy(b, off, len, pay(out, k));
            k->len += len;
            return;
        }
        const uint8_t *p;
        size_t n = vega__quic_sendbuf_peek(b, off, len, &p);
        k->ext[k->next++] = (struct vega__quic_ext){p, (uint32_t)k->len, (uint32_t)n};
        k->len += n;
        off += n;
        len -= n;
    }
}

static int put_stream(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k,
                      struct vega__quic_stream *s, bool early)
{
    if (s->reset_queued && !s->reset_sent && !early) {
        if (rec_full(k))
            return -1;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_RESET_STREAM};
        f.u.reset_stream.stream_id = s->id;
        f.u.reset_stream.error_code = s->reset_code;
        f.u.reset_stream.final_size = s->sb.next_off;
        if (!vega__quic_put_frame(out, k, &f))
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
        if (!vega__quic_put_frame(out, k, &f))
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
        if (!vega__quic_put_frame(out, k, &f)) {
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
        uint64_t credit = c->flow.max_send_data > c->flow.data_sent
                              ? c->flow.max_send_data - c->flow.data_sent
                              : 0;
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
                    if (vega__quic_put_frame(out, k, &f))
                        s->blocked_at = s->max_send;
                }
                return 0;
            }
            if (c->flow.data_blocked_at != c->flow.max_send_data) {
                c->flow.data_blocked_at = c->flow.max_send_data;
                c->flow.data_blocked_queued = true;
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
        put_stream_data(c, out, k, &s->sb, off, len);
        k->eliciting = true;
        if (off + len > s->sb.next_off)
            c->flow.data_sent += off + len - s->sb.next_off;
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

void vega__quic_put_streams(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k, bool early)
{
    /* Each stream gets one frame per turn, then goes to the back of the queue: streams share
     * the connection fairly. A bounded number of turns per packet keeps this linear. */
    size_t turns = 64;
    while (c->streams.sendq_head && turns--) {
        struct vega__quic_stream *s = c->streams.sendq_head;
        int rc = put_stream(c, out, k, s, early);
        if (rc < 0)
            return; /* full, or the connection window is closed */
        c->streams.sendq_head = s->sendq_next;
        if (!c->streams.sendq_head)
            c->streams.sendq_tail = NULL;
        s->in_sendq = false;
        s->sendq_next = NULL;
        if (rc == 1)
            vega__quic_sendq_push(c, s);
        else
            vega__quic_stream_maybe_free(c, s);
    }
}

void vega__quic_put_control(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k)
{
    const struct vega__quic_rtt *rtt = vega__quic_recovery_rtt(c->rec);
    if (c->addr.new_token_queued && c->hs.confirmed && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_NEW_TOKEN};
        f.u.new_token.token = c->addr.new_token;
        f.u.new_token.len = c->addr.new_token_len;
        if (vega__quic_put_frame(out, k, &f)) {
            c->addr.new_token_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_NEW_TOKEN)->off = c->addr.new_token_gen;
        }
    }
    if (c->hs.done_queued && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_HANDSHAKE_DONE};
        if (vega__quic_put_frame(out, k, &f)) {
            c->hs.done_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_HANDSHAKE_DONE);
        }
    }
    if (c->paths.response_queued && !c->paths.response_elsewhere) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_RESPONSE};
        memcpy(f.u.path.data, c->paths.response, 8);
        if (vega__quic_put_frame(out, k, &f)) {
            c->paths.response_queued = false;
            k->path_probe = true;
        }
    }
    if (c->paths.challenge_queued) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_PATH_CHALLENGE};
        memcpy(f.u.path.data, c->paths.challenge, 8);
        if (vega__quic_put_frame(out, k, &f)) {
            c->paths.challenge_queued = false;
            k->path_probe = true;
        }
    }
    if (c->flow.max_data_queued && !rec_full(k)) {
        struct vega__quic_fc save = c->flow.fc;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_MAX_DATA};
        f.u.limit.max = vega__quic_fc_update(&c->flow.fc, rtt->smoothed, c->now);
        if (vega__quic_put_frame(out, k, &f)) {
            c->flow.max_data_queued = false;
            rec_add(k->rec, VEGA__QUIC_SF_MAX_DATA);
        } else {
            c->flow.fc = save;
        }
    }
    for (int t = 0; t < 2; t++)
        if (c->streams.max_streams_queued[t] && !rec_full(k)) {
            vega_quic_frame f = {.type = t ? VEGA_QUIC_FT_MAX_STREAMS_UNI
                                           : VEGA_QUIC_FT_MAX_STREAMS_BIDI};
            f.u.limit.max = c->streams.local_max[t];
            if (vega__quic_put_frame(out, k, &f)) {
                c->streams.max_streams_queued[t] = false;
                rec_add(k->rec, t ? VEGA__QUIC_SF_MAX_STREAMS_UNI : VEGA__QUIC_SF_MAX_STREAMS_BIDI);
            }
        }
    if (c->flow.data_blocked_queued && !rec_full(k)) {
        vega_quic_frame f = {.type = VEGA_QUIC_FT_DATA_BLOCKED};
        f.u.limit.max = c->flow.data_blocked_at;
        if (vega__quic_put_frame(out, k, &f))
            c->flow.data_blocked_queued = false;
    }
    for (size_t i = 0; i < c->cids.nlocal; i++) {
        struct vega__quic_cid *id = &c->cids.local[i];
        if (!id->queued || id->retired || rec_full(k))
            continue;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_NEW_CONNECTION_ID};
        f.u.new_cid.seq = id->seq;
        f.u.new_cid.cid_len = id->len;
        memcpy(f.u.new_cid.cid, id->id, id->len);
        memcpy(f.u.new_cid.reset_token, id->token, VEGA_QUIC_RESET_TOKEN_LEN);
        if (!vega__quic_put_frame(out, k, &f))
            break;
        id->queued = false;
        rec_add(k->rec, VEGA__QUIC_SF_NEW_CID)->off = id->seq;
    }
    for (size_t i = 0; i < c->cids.npeer; i++) {
        struct vega__quic_cid *id = &c->cids.peer[i];
        if (!id->queued || !id->retired || rec_full(k))
            continue;
        vega_quic_frame f = {.type = VEGA_QUIC_FT_RETIRE_CONNECTION_ID};
        f.u.retire_cid.seq = id->seq;
        if (!vega__quic_put_frame(out, k, &f))
            break;
        id->queued = false;
        rec_add(k->rec, VEGA__QUIC_SF_RETIRE_CID)->off = id->seq;
    }
}

void vega__quic_put_datagrams(vega_quic_conn *c, uint8_t *out, struct vega__quic_pkt *k)
{
    while (c->dgram.send_n) {
        struct vega__quic_dgram *d = &c->dgram.send[c->dgram.send_head];
        size_t need = 1 + vega_quic_varint_len(d->len) + d->len;
        if (need > left(k))
            return; /* waits for the next packet */
        vega_quic_frame f = {.type = VEGA_QUIC_FT_DATAGRAM_LEN};
        f.u.datagram.data = d->data;
        f.u.datagram.len = d->len;
        vega__quic_put_frame(out, k, &f);
        vega__quic_free(c->cfg.mem, d->data);
        c->dgram.send_head = (c->dgram.send_head + 1) % VEGA__QUIC_DGRAM_SEND_QUEUE;
        c->dgram.send_n--;
    }
}

bool vega__quic_app_has_data(const vega_quic_conn *c)
{
    if (c->hs.done_queued || c->paths.response_queued || c->paths.challenge_queued ||
        (c->addr.new_token_queued && c->hs.confirmed) || c->flow.max_data_queued ||
        c->streams.max_streams_queued[0] || c->streams.max_streams_queued[1] ||
        c->flow.data_blocked_queued || c->streams.sendq_head || c->dgram.send_n)
        return true;
    for (size_t i = 0; i < c->cids.nlocal; i++)
        if (c->cids.local[i].queued && !c->cids.local[i].retired)
            return true;
    for (size_t i = 0; i < c->cids.npeer; i++)
        if (c->cids.peer[i].queued && c->cids.peer[i].retired)
            return true;
    return false;
}

/* Starts a packet for space at *pos. Returns false when it does not fit. */
bool vega__quic_pkt_begin(vega_quic_conn *c, struct vega__quic_pkt *k, int level, size_t pos,
                          size_t limit)
{
    memset(k, 0, sizeof *k);
    k->level = level;
    k->space = vega__quic_level_space(level);
    struct vega__quic_space *sp = &c->sp[k->space];
    k->keys = level == VEGA_QUIC_LEVEL_EARLY ? c->keys.early_tx : sp->tx;
    const struct vega__quic_cid *d = &c->cids.peer[c->cids.dcid_idx];
    vega_quic_hdr *h = &k->h;
    h->version = c->version;
    h->dcid = d->id;
    h->dcid_len = d->len;
    h->scid = c->cids.local[0].id;
    h->scid_len = c->cids.local[0].len;
    switch (level) {
    case VEGA_QUIC_LEVEL_INITIAL:
        h->type = VEGA_QUIC_PKT_INITIAL;
        if (!c->server) {
            h->token = c->addr.token;
            h->token_len = c->addr.token_len;
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
        h->key_phase = c->keys.key_phase;
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
size_t vega__quic_pkt_finish(uint8_t *out, struct vega__quic_pkt *k, size_t pad_to)
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
