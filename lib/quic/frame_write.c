/* SPDX-License-Identifier: MIT */
/* Frame encoding (RFC 9000 §19, RFC 9221 §4): the inverse of frame.c, refusing to write
 * anything frame.c would reject. */
#include "quic_int.h"

static bool ranges_ok(const vega_quic_ack_range *r, size_t n)
{
    if (n == 0 || r[0].smallest > r[0].largest || r[0].largest > VEGA_QUIC_MAX_PN)
        return false;
    for (size_t i = 1; i < n; i++)
        /* Descending, disjoint and not adjacent: a gap of at least one missing packet. */
        if (r[i].smallest > r[i].largest || r[i - 1].smallest < 2 ||
            r[i].largest > r[i - 1].smallest - 2)
            return false;
    return true;
}

static vega_ssize encode_ack(const vega_quic_frame *f, struct vega__quic_wr *w)
{
    const vega_quic_frame_ack *a = &f->u.ack;
    if (a->ranges) {
        const vega_quic_ack_range *r = a->ranges;
        if (!ranges_ok(r, a->nranges) || vega_quic_varint_len(a->ack_delay) == 0)
            return -EINVAL;
        vega__quic_wr_varint(w, r[0].largest);
        vega__quic_wr_varint(w, a->ack_delay);
        vega__quic_wr_varint(w, a->nranges - 1);
        vega__quic_wr_varint(w, r[0].largest - r[0].smallest);
        for (size_t i = 1; i < a->nranges; i++) {
            vega__quic_wr_varint(w, r[i - 1].smallest - r[i].largest - 2);
            vega__quic_wr_varint(w, r[i].largest - r[i].smallest);
        }
    } else {
        if (vega_quic_varint_len(a->largest) == 0 || vega_quic_varint_len(a->ack_delay) == 0 ||
            vega_quic_varint_len(a->range_count) == 0 || a->first_range > a->largest ||
            (a->gaps_len && !a->gaps) ||
            vega__quic_ack_gaps_check(a->gaps, a->gaps_len, a->largest - a->first_range,
                                      a->range_count) != (vega_ssize)a->gaps_len)
            return -EINVAL;
        vega__quic_wr_varint(w, a->largest);
        vega__quic_wr_varint(w, a->ack_delay);
        vega__quic_wr_varint(w, a->range_count);
        vega__quic_wr_varint(w, a->first_range);
        vega__quic_wr_bytes(w, a->gaps, a->gaps_len);
    }
    if (f->type == VEGA_QUIC_FT_ACK_ECN) {
        if (vega_quic_varint_len(a->ect0) == 0 || vega_quic_varint_len(a->ect1) == 0 ||
            vega_quic_varint_len(a->ce) == 0)
            return -EINVAL;
        vega__quic_wr_varint(w, a->ect0);
        vega__quic_wr_varint(w, a->ect1);
        vega__quic_wr_varint(w, a->ce);
    }
    return 0;
}

/* A length-prefixed byte field. */
static void wr_lenbytes(struct vega__quic_wr *w, const uint8_t *p, size_t n)
{
    vega__quic_wr_varint(w, n);
    vega__quic_wr_bytes(w, p, n);
}

static bool v62(uint64_t v)
{
    return v <= VEGA_QUIC_MAX_VARINT;
}

static vega_ssize encode_body(const vega_quic_frame *f, struct vega__quic_wr *w)
{
    switch (f->type) {
    case VEGA_QUIC_FT_PADDING:
        return VEGA_ERR_INTERNAL; /* handled by the caller */
    case VEGA_QUIC_FT_PING:
    case VEGA_QUIC_FT_HANDSHAKE_DONE:
        return 0;
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN:
        return encode_ack(f, w);
    case VEGA_QUIC_FT_RESET_STREAM:
        if (!v62(f->u.reset_stream.stream_id) || !v62(f->u.reset_stream.error_code) ||
            !v62(f->u.reset_stream.final_size))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.reset_stream.stream_id);
        vega__quic_wr_varint(w, f->u.reset_stream.error_code);
        vega__quic_wr_varint(w, f->u.reset_stream.final_size);
        return 0;
    case VEGA_QUIC_FT_STOP_SENDING:
        if (!v62(f->u.stop_sending.stream_id) || !v62(f->u.stop_sending.error_code))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.stop_sending.stream_id);
        vega__quic_wr_varint(w, f->u.stop_sending.error_code);
        return 0;
    case VEGA_QUIC_FT_CRYPTO:
        if (!v62(f->u.crypto.offset) || f->u.crypto.len > VEGA_QUIC_MAX_VARINT - f->u.crypto.offset)
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.crypto.offset);
        wr_lenbytes(w, f->u.crypto.data, f->u.crypto.len);
        return 0;
    case VEGA_QUIC_FT_NEW_TOKEN:
        if (f->u.new_token.len == 0)
            return -EINVAL;
        wr_lenbytes(w, f->u.new_token.token, f->u.new_token.len);
        return 0;
    case VEGA_QUIC_FT_STREAM:
        if (!v62(f->u.stream.stream_id) || !v62(f->u.stream.offset) ||
            f->u.stream.len > VEGA_QUIC_MAX_VARINT - f->u.stream.offset)
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.stream.stream_id);
        if (f->u.stream.has_offset || f->u.stream.offset)
            vega__quic_wr_varint(w, f->u.stream.offset);
        if (f->u.stream.has_len)
            vega__quic_wr_varint(w, f->u.stream.len);
        vega__quic_wr_bytes(w, f->u.stream.data, f->u.stream.len);
        return 0;
    case VEGA_QUIC_FT_MAX_STREAMS_BIDI:
    case VEGA_QUIC_FT_MAX_STREAMS_UNI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_BIDI:
    case VEGA_QUIC_FT_STREAMS_BLOCKED_UNI:
        if (f->u.limit.max > (1ull << 60))
            return -EINVAL;
        /* fall through */
    case VEGA_QUIC_FT_MAX_DATA:
    case VEGA_QUIC_FT_DATA_BLOCKED:
        if (!v62(f->u.limit.max))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.limit.max);
        return 0;
    case VEGA_QUIC_FT_MAX_STREAM_DATA:
    case VEGA_QUIC_FT_STREAM_DATA_BLOCKED:
        if (!v62(f->u.stream_limit.stream_id) || !v62(f->u.stream_limit.max))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.stream_limit.stream_id);
        vega__quic_wr_varint(w, f->u.stream_limit.max);
        return 0;
    case VEGA_QUIC_FT_NEW_CONNECTION_ID:
        if (!v62(f->u.new_cid.seq) || f->u.new_cid.retire_prior_to > f->u.new_cid.seq ||
            f->u.new_cid.cid_len < 1 || f->u.new_cid.cid_len > VEGA_QUIC_MAX_CID_LEN)
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.new_cid.seq);
        vega__quic_wr_varint(w, f->u.new_cid.retire_prior_to);
        vega__quic_wr_u8(w, f->u.new_cid.cid_len);
        vega__quic_wr_bytes(w, f->u.new_cid.cid, f->u.new_cid.cid_len);
        vega__quic_wr_bytes(w, f->u.new_cid.reset_token, VEGA_QUIC_RESET_TOKEN_LEN);
        return 0;
    case VEGA_QUIC_FT_RETIRE_CONNECTION_ID:
        if (!v62(f->u.retire_cid.seq))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.retire_cid.seq);
        return 0;
    case VEGA_QUIC_FT_PATH_CHALLENGE:
    case VEGA_QUIC_FT_PATH_RESPONSE:
        vega__quic_wr_bytes(w, f->u.path.data, 8);
        return 0;
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
        if (!v62(f->u.close.error_code) || !v62(f->u.close.frame_type))
            return -EINVAL;
        vega__quic_wr_varint(w, f->u.close.error_code);
        if (f->type == VEGA_QUIC_FT_CONNECTION_CLOSE)
            vega__quic_wr_varint(w, f->u.close.frame_type);
        wr_lenbytes(w, f->u.close.reason, f->u.close.reason_len);
        return 0;
    case VEGA_QUIC_FT_DATAGRAM:
        vega__quic_wr_bytes(w, f->u.datagram.data, f->u.datagram.len);
        return 0;
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        wr_lenbytes(w, f->u.datagram.data, f->u.datagram.len);
        return 0;
    }
    return -EINVAL;
}

vega_ssize vega_quic_frame_encode(const vega_quic_frame *f, uint8_t *out, size_t cap)
{
    if (f->type == VEGA_QUIC_FT_PADDING) {
        if (f->u.padding.len == 0)
            return -EINVAL;
        if (cap < f->u.padding.len)
            return VEGA_ERR_NOBUF;
        memset(out, 0, f->u.padding.len);
        return (vega_ssize)f->u.padding.len;
    }
    struct vega__quic_wr w = {out, out + cap, false};
    uint64_t type = f->type;
    if (f->type == VEGA_QUIC_FT_STREAM)
        type |= (f->u.stream.has_offset || f->u.stream.offset ? 0x04u : 0) |
                (f->u.stream.has_len ? 0x02u : 0) | (f->u.stream.fin ? 0x01u : 0);
    vega__quic_wr_varint(&w, type);
    vega_ssize rc = encode_body(f, &w);
    if (rc < 0)
        return rc;
    if (w.overflow)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)(w.p - out);
}
