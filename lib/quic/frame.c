/* SPDX-License-Identifier: MIT */
/* Frame decoding (RFC 9000 §12.4, §19; RFC 9221 §4): strict validation of every field, the
 * packet types each frame may travel in (Table 3), and ACK range walking. */
#include "quic_int.h"

#define MAX_STREAMS_LIMIT (1ull << 60)

/* Table 3 columns: I(nitial), 0(-RTT), H(andshake), 1(-RTT). */
enum {
    PK_I = 1,
    PK_0 = 2,
    PK_H = 4,
    PK_1 = 8
};

static unsigned allowed_mask(vega_quic_frame_type t)
{
    switch (t) {
    case VEGA_QUIC_FT_PADDING:
    case VEGA_QUIC_FT_PING:
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
        return PK_I | PK_0 | PK_H | PK_1;
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN:
    case VEGA_QUIC_FT_CRYPTO:
        return PK_I | PK_H | PK_1;
    case VEGA_QUIC_FT_NEW_TOKEN:
    case VEGA_QUIC_FT_PATH_RESPONSE:
    case VEGA_QUIC_FT_HANDSHAKE_DONE:
        return PK_1;
    case VEGA_QUIC_FT_RESET_STREAM:
    case VEGA_QUIC_FT_STOP_SENDING:
    case VEGA_QUIC_FT_STREAM:
    case VEGA_QUIC_FT_MAX_DATA:
    case VEGA_QUIC_FT_MAX_STREAM_DATA:
    case VEGA_QUIC_FT_MAX_STREAMS_BIDI:
    case VEGA_QUIC_FT_MAX_STREAMS_UNI:
    case VEGA_QUIC_FT_DATA_BLOCKED:
    case VEGA_QUIC_FT_STREAM_DATA_BLOCKED:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_UNI:
    case VEGA_QUIC_FT_NEW_CONNECTION_ID:
    case VEGA_QUIC_FT_RETIRE_CONNECTION_ID:
    case VEGA_QUIC_FT_PATH_CHALLENGE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
    case VEGA_QUIC_FT_DATAGRAM:
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        return PK_0 | PK_1;
    }
    return 0;
}

bool vega_quic_frame_allowed(vega_quic_frame_type t, vega_quic_pkt_type p)
{
    unsigned m = allowed_mask(t);
    switch (p) {
    case VEGA_QUIC_PKT_INITIAL:
        return m & PK_I;
    case VEGA_QUIC_PKT_0RTT:
        return m & PK_0;
    case VEGA_QUIC_PKT_HANDSHAKE:
        return m & PK_H;
    case VEGA_QUIC_PKT_1RTT:
        return m & PK_1;
    default:
        return false;
    }
}

bool vega_quic_frame_is_ack_eliciting(vega_quic_frame_type t)
{
    return t != VEGA_QUIC_FT_PADDING && t != VEGA_QUIC_FT_ACK && t != VEGA_QUIC_FT_ACK_ECN &&
           t != VEGA_QUIC_FT_CONNECTION_CLOSE && t != VEGA_QUIC_FT_CONNECTION_CLOSE_APP;
}

vega_ssize vega__quic_ack_gaps_check(const uint8_t *p, size_t len, uint64_t smallest,
                                     uint64_t range_count)
{
    struct vega__quic_rd r = {p, p + len};
    /* Each pair takes at least 2 bytes: an impossible count fails before any loop. */
    if (range_count > len / 2)
        return -1;
    for (uint64_t i = 0; i < range_count; i++) {
        uint64_t gap, rlen;
        if (!vega__quic_rd_varint(&r, &gap) || !vega__quic_rd_varint(&r, &rlen))
            return -1;
        /* largest = smallest - gap - 2; smallest' = largest - rlen: neither may go below 0. */
        if (smallest < 2 || gap > smallest - 2)
            return -1;
        uint64_t largest = smallest - gap - 2;
        if (rlen > largest)
            return -1;
        smallest = largest - rlen;
    }
    return (vega_ssize)(r.p - p);
}

static vega_ssize fail(uint64_t *wire_err, uint64_t code)
{
    if (wire_err)
        *wire_err = code;
    return VEGA_ERR_PROTO;
}

#define NEED(x)                                                                                    \
    do {                                                                                           \
        if (!(x))                                                                                  \
            return fail(wire_err, VEGA_QUIC_FRAME_ENCODING_ERROR);                                 \
    } while (0)

static vega_ssize decode_ack(vega_quic_frame *f, struct vega__quic_rd *r, uint64_t *wire_err)
{
    vega_quic_frame_ack *a = &f->u.ack;
    NEED(vega__quic_rd_varint(r, &a->largest) && vega__quic_rd_varint(r, &a->ack_delay) &&
         vega__quic_rd_varint(r, &a->range_count) && vega__quic_rd_varint(r, &a->first_range));
    /* §19.3.1: "If any computed packet number is negative, an endpoint MUST generate a
     * connection error of type FRAME_ENCODING_ERROR." */
    NEED(a->first_range <= a->largest);
    vega_ssize n = vega__quic_ack_gaps_check(r->p, vega__quic_rd_left(r),
                                             a->largest - a->first_range, a->range_count);
    NEED(n >= 0);
    a->gaps = r->p;
    a->gaps_len = (size_t)n;
    r->p += n;
    if (f->type == VEGA_QUIC_FT_ACK_ECN)
        NEED(vega__quic_rd_varint(r, &a->ect0) && vega__quic_rd_varint(r, &a->ect1) &&
             vega__quic_rd_varint(r, &a->ce));
    return 0;
}

/* A length-prefixed byte field that must fit in what is left. */
static bool rd_lenbytes(struct vega__quic_rd *r, const uint8_t **p, size_t *len)
{
    uint64_t n;
    if (!vega__quic_rd_varint(r, &n) || n > vega__quic_rd_left(r))
        return false;
    *len = (size_t)n;
    return vega__quic_rd_bytes(r, *len, p);
}

static vega_ssize decode_body(vega_quic_frame *f, uint64_t type, struct vega__quic_rd *r,
                              uint64_t *wire_err)
{
    const uint8_t *p;
    switch (type) {
    case VEGA_QUIC_FT_PING:
    case VEGA_QUIC_FT_HANDSHAKE_DONE:
        return 0;
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN:
        return decode_ack(f, r, wire_err);
    case VEGA_QUIC_FT_RESET_STREAM:
        NEED(vega__quic_rd_varint(r, &f->u.reset_stream.stream_id) &&
             vega__quic_rd_varint(r, &f->u.reset_stream.error_code) &&
             vega__quic_rd_varint(r, &f->u.reset_stream.final_size));
        return 0;
    case VEGA_QUIC_FT_STOP_SENDING:
        NEED(vega__quic_rd_varint(r, &f->u.stop_sending.stream_id) &&
             vega__quic_rd_varint(r, &f->u.stop_sending.error_code));
        return 0;
    case VEGA_QUIC_FT_CRYPTO:
        NEED(vega__quic_rd_varint(r, &f->u.crypto.offset) &&
             rd_lenbytes(r, &f->u.crypto.data, &f->u.crypto.len));
        /* §19.6: offset + length may not exceed 2^62 - 1. */
        NEED(f->u.crypto.len <= VEGA_QUIC_MAX_VARINT - f->u.crypto.offset);
        return 0;
    case VEGA_QUIC_FT_NEW_TOKEN:
        NEED(rd_lenbytes(r, &f->u.new_token.token, &f->u.new_token.len));
        /* §19.7: "A client MUST treat receipt of a NEW_TOKEN frame with an empty Token field
         * as a connection error of type FRAME_ENCODING_ERROR." */
        NEED(f->u.new_token.len > 0);
        return 0;
    case VEGA_QUIC_FT_MAX_DATA:
    case VEGA_QUIC_FT_DATA_BLOCKED:
        NEED(vega__quic_rd_varint(r, &f->u.limit.max));
        return 0;
    case VEGA_QUIC_FT_MAX_STREAMS_BIDI:
    case VEGA_QUIC_FT_MAX_STREAMS_UNI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_UNI:
        /* §19.11, §19.14: a count above 2^60 is a FRAME_ENCODING_ERROR. */
        NEED(vega__quic_rd_varint(r, &f->u.limit.max) && f->u.limit.max <= MAX_STREAMS_LIMIT);
        return 0;
    case VEGA_QUIC_FT_MAX_STREAM_DATA:
    case VEGA_QUIC_FT_STREAM_DATA_BLOCKED:
        NEED(vega__quic_rd_varint(r, &f->u.stream_limit.stream_id) &&
             vega__quic_rd_varint(r, &f->u.stream_limit.max));
        return 0;
    case VEGA_QUIC_FT_NEW_CONNECTION_ID: {
        uint8_t n;
        NEED(vega__quic_rd_varint(r, &f->u.new_cid.seq) &&
             vega__quic_rd_varint(r, &f->u.new_cid.retire_prior_to) && vega__quic_rd_u8(r, &n));
        /* §19.15: length 1..20, and Retire Prior To above Sequence Number, are both
         * FRAME_ENCODING_ERROR. */
        NEED(n >= 1 && n <= VEGA_QUIC_MAX_CID_LEN &&
             f->u.new_cid.retire_prior_to <= f->u.new_cid.seq);
        NEED(vega__quic_rd_bytes(r, n, &p));
        f->u.new_cid.cid_len = n;
        memcpy(f->u.new_cid.cid, p, n);
        NEED(vega__quic_rd_bytes(r, VEGA_QUIC_RESET_TOKEN_LEN, &p));
        memcpy(f->u.new_cid.reset_token, p, VEGA_QUIC_RESET_TOKEN_LEN);
        return 0;
    }
    case VEGA_QUIC_FT_RETIRE_CONNECTION_ID:
        NEED(vega__quic_rd_varint(r, &f->u.retire_cid.seq));
        return 0;
    case VEGA_QUIC_FT_PATH_CHALLENGE:
    case VEGA_QUIC_FT_PATH_RESPONSE:
        NEED(vega__quic_rd_bytes(r, 8, &p));
        memcpy(f->u.path.data, p, 8);
        return 0;
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
        NEED(vega__quic_rd_varint(r, &f->u.close.error_code));
        if (type == VEGA_QUIC_FT_CONNECTION_CLOSE)
            NEED(vega__quic_rd_varint(r, &f->u.close.frame_type));
        NEED(rd_lenbytes(r, &f->u.close.reason, &f->u.close.reason_len));
        return 0;
    case VEGA_QUIC_FT_DATAGRAM:
        f->u.datagram.len = vega__quic_rd_left(r);
        f->u.datagram.data = r->p;
        r->p = r->end;
        return 0;
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        NEED(rd_lenbytes(r, &f->u.datagram.data, &f->u.datagram.len));
        return 0;
    }
    if (type >= 0x08 && type <= 0x0f) {
        f->type = VEGA_QUIC_FT_STREAM;
        f->u.stream.has_offset = type & 0x04;
        f->u.stream.has_len = type & 0x02;
        f->u.stream.fin = type & 0x01;
        NEED(vega__quic_rd_varint(r, &f->u.stream.stream_id));
        if (f->u.stream.has_offset)
            NEED(vega__quic_rd_varint(r, &f->u.stream.offset));
        if (f->u.stream.has_len) {
            NEED(rd_lenbytes(r, &f->u.stream.data, &f->u.stream.len));
        } else {
            f->u.stream.len = vega__quic_rd_left(r);
            f->u.stream.data = r->p;
            r->p = r->end;
        }
        /* §19.8: offset + length above 2^62 - 1 is a FRAME_ENCODING_ERROR (or flow
         * control error). */
        NEED(f->u.stream.len <= VEGA_QUIC_MAX_VARINT - f->u.stream.offset);
        return 0;
    }
    /* §12.4: "An endpoint MUST treat the receipt of a frame of unknown type as a connection
     * error of type FRAME_ENCODING_ERROR." */
    return fail(wire_err, VEGA_QUIC_FRAME_ENCODING_ERROR);
}

vega_ssize vega_quic_frame_decode(vega_quic_frame *f, const uint8_t *in, size_t len,
                                  uint64_t *wire_err)
{
    memset(f, 0, sizeof(*f));
    struct vega__quic_rd r = {in, in + len};
    uint64_t type;
    NEED(vega__quic_rd_varint(&r, &type));
    /* §12.4: frame types use the shortest encoding; a longer one MAY be a
     * PROTOCOL_VIOLATION, and is here. */
    if ((size_t)(r.p - in) != vega_quic_varint_len(type))
        return fail(wire_err, VEGA_QUIC_PROTOCOL_VIOLATION);
    if (type == VEGA_QUIC_FT_PADDING) {
        while (r.p < r.end && *r.p == 0)
            r.p++;
        f->type = VEGA_QUIC_FT_PADDING;
        f->u.padding.len = (size_t)(r.p - in);
        return (vega_ssize)(r.p - in);
    }
    f->type = (vega_quic_frame_type)type;
    vega_ssize rc = decode_body(f, type, &r, wire_err);
    if (rc < 0) {
        memset(f, 0, sizeof(*f));
        return rc;
    }
    return (vega_ssize)(r.p - in);
}

int vega_quic_payload_check(const uint8_t *payload, size_t len, vega_quic_pkt_type p,
                            uint64_t *wire_err)
{
    /* §12.4: "An endpoint MUST treat receipt of a packet containing no frames as a connection
     * error of type PROTOCOL_VIOLATION." */
    if (len == 0)
        return (int)fail(wire_err, VEGA_QUIC_PROTOCOL_VIOLATION);
    size_t off = 0;
    while (off < len) {
        vega_quic_frame f;
        vega_ssize n = vega_quic_frame_decode(&f, payload + off, len - off, wire_err);
        if (n < 0)
            return (int)n;
        /* §12.4: a frame in a packet type it is not allowed in is a PROTOCOL_VIOLATION. */
        if (!vega_quic_frame_allowed(f.type, p))
            return (int)fail(wire_err, VEGA_QUIC_PROTOCOL_VIOLATION);
        off += (size_t)n;
    }
    return 0;
}

void vega_quic_ack_iter_init(vega_quic_ack_iter *it, const vega_quic_frame_ack *ack)
{
    it->ack = ack;
    it->p = ack->gaps;
    it->end = ack->gaps ? ack->gaps + ack->gaps_len : NULL; /* no arithmetic on NULL */
    it->left = ack->range_count;
    it->first = true;
    it->prev_smallest = 0;
}

bool vega_quic_ack_iter_next(vega_quic_ack_iter *it, vega_quic_ack_range *out)
{
    if (it->first) {
        it->first = false;
        /* Validated at decode; a frame filled by hand with first_range > largest would give a
         * smallest that wrapped below 0: no ranges at all then, as for a bad gap below. */
        if (it->ack->first_range > it->ack->largest) {
            it->left = 0;
            return false;
        }
        out->largest = it->ack->largest;
        out->smallest = it->ack->largest - it->ack->first_range;
        it->prev_smallest = out->smallest;
        return true;
    }
    if (it->left == 0)
        return false;
    struct vega__quic_rd r = {it->p, it->end};
    uint64_t gap, len;
    /* Validated at decode; stay defensive in case the frame was filled by hand. */
    if (!vega__quic_rd_varint(&r, &gap) || !vega__quic_rd_varint(&r, &len) ||
        it->prev_smallest < 2 || gap > it->prev_smallest - 2 || len > it->prev_smallest - gap - 2) {
        it->left = 0;
        return false;
    }
    it->p = r.p;
    it->left--;
    out->largest = it->prev_smallest - gap - 2;
    out->smallest = out->largest - len;
    it->prev_smallest = out->smallest;
    return true;
}
