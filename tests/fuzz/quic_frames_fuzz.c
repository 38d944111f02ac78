/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the QUIC frame decoder and encoder (lib/quic/frame.c, frame_write.c).
 * Byte 0 picks the packet type for vega_quic_payload_check, the rest is a decrypted payload.
 * Every frame that decodes must lie within the input, re-encode, and decode back equal (ACK
 * ranges walked both ways); a failure must name FRAME_ENCODING_ERROR or PROTOCOL_VIOLATION;
 * payload_check must agree with the frame-by-frame walk. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/quic_wire.h>

#include "fuzz_target.h"

#define MAX_RANGES 64

static void in_input(const uint8_t *p, size_t n, const uint8_t *in, size_t len)
{
    if (n && (!p || p < in || p + n > in + len))
        abort();
}

static bool span_eq(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Walks an ACK's ranges into r (up to MAX_RANGES), checking they descend without overlap. */
static size_t walk_ack(const vega_quic_frame_ack *a, vega_quic_ack_range *r)
{
    vega_quic_ack_iter it;
    vega_quic_ack_range x;
    size_t n = 0;
    uint64_t prev = 0;
    vega_quic_ack_iter_init(&it, a);
    while (vega_quic_ack_iter_next(&it, &x)) {
        if (x.smallest > x.largest || (n && x.largest + 2 > prev))
            abort();
        prev = x.smallest;
        if (n < MAX_RANGES)
            r[n] = x;
        n++;
    }
    if (n != a->range_count + 1)
        abort();
    return n;
}

static bool frame_eq(const vega_quic_frame *a, const vega_quic_frame *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case VEGA_QUIC_FT_ACK:
    case VEGA_QUIC_FT_ACK_ECN: {
        const vega_quic_frame_ack *x = &a->u.ack, *y = &b->u.ack;
        return x->largest == y->largest && x->ack_delay == y->ack_delay &&
               x->first_range == y->first_range && x->range_count == y->range_count &&
               span_eq(x->gaps, x->gaps_len, y->gaps, y->gaps_len) && x->ect0 == y->ect0 &&
               x->ect1 == y->ect1 && x->ce == y->ce;
    }
    case VEGA_QUIC_FT_PADDING:
        return a->u.padding.len == b->u.padding.len;
    case VEGA_QUIC_FT_CRYPTO:
        return a->u.crypto.offset == b->u.crypto.offset &&
               span_eq(a->u.crypto.data, a->u.crypto.len, b->u.crypto.data, b->u.crypto.len);
    case VEGA_QUIC_FT_NEW_TOKEN:
        return span_eq(a->u.new_token.token, a->u.new_token.len, b->u.new_token.token,
                       b->u.new_token.len);
    case VEGA_QUIC_FT_STREAM:
        return a->u.stream.stream_id == b->u.stream.stream_id &&
               a->u.stream.offset == b->u.stream.offset && a->u.stream.fin == b->u.stream.fin &&
               a->u.stream.has_len == b->u.stream.has_len &&
               span_eq(a->u.stream.data, a->u.stream.len, b->u.stream.data, b->u.stream.len);
    case VEGA_QUIC_FT_CONNECTION_CLOSE:
    case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
        return a->u.close.error_code == b->u.close.error_code &&
               a->u.close.frame_type == b->u.close.frame_type &&
               span_eq(a->u.close.reason, a->u.close.reason_len, b->u.close.reason,
                       b->u.close.reason_len);
    case VEGA_QUIC_FT_DATAGRAM:
    case VEGA_QUIC_FT_DATAGRAM_LEN:
        return span_eq(a->u.datagram.data, a->u.datagram.len, b->u.datagram.data,
                       b->u.datagram.len);
    default:
        return memcmp(&a->u, &b->u, sizeof(a->u)) == 0;
    }
}

static uint8_t out[70000];

static void reencode(const vega_quic_frame *f)
{
    vega_ssize n = vega_quic_frame_encode(f, out, sizeof out);
    if (n <= 0)
        abort();
    vega_quic_frame g;
    if (vega_quic_frame_decode(&g, out, (size_t)n, NULL) != n || !frame_eq(f, &g))
        abort();
    if (f->type != VEGA_QUIC_FT_ACK && f->type != VEGA_QUIC_FT_ACK_ECN)
        return;
    /* The list form of the same ranges encodes to a frame with the same ranges. */
    vega_quic_ack_range r[MAX_RANGES], r2[MAX_RANGES];
    size_t nr = walk_ack(&f->u.ack, r);
    if (nr > MAX_RANGES)
        return;
    vega_quic_frame h = *f;
    h.u.ack.ranges = r;
    h.u.ack.nranges = nr;
    n = vega_quic_frame_encode(&h, out, sizeof out);
    if (n <= 0 || vega_quic_frame_decode(&g, out, (size_t)n, NULL) != n)
        abort();
    if (walk_ack(&g.u.ack, r2) != nr || memcmp(r, r2, nr * sizeof(r[0])) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const vega_quic_pkt_type types[4] = {VEGA_QUIC_PKT_INITIAL, VEGA_QUIC_PKT_0RTT,
                                                VEGA_QUIC_PKT_HANDSHAKE, VEGA_QUIC_PKT_1RTT};
    vega_quic_pkt_type pt = types[data[0] & 3];
    const uint8_t *in = data + 1;
    size_t len = size - 1, off = 0;
    bool ok = len > 0;
    uint64_t walk_err = 0;
    while (off < len) {
        vega_quic_frame f;
        uint64_t err = 0;
        vega_ssize n = vega_quic_frame_decode(&f, in + off, len - off, &err);
        if (n < 0) {
            if (n != VEGA_ERR_PROTO ||
                (err != VEGA_QUIC_FRAME_ENCODING_ERROR && err != VEGA_QUIC_PROTOCOL_VIOLATION))
                abort();
            if (ok)
                walk_err = err;
            ok = false;
            break;
        }
        if (n == 0 || (size_t)n > len - off)
            abort();
        switch (f.type) {
        case VEGA_QUIC_FT_CRYPTO:
            in_input(f.u.crypto.data, f.u.crypto.len, in + off, (size_t)n);
            break;
        case VEGA_QUIC_FT_STREAM:
            in_input(f.u.stream.data, f.u.stream.len, in + off, (size_t)n);
            break;
        case VEGA_QUIC_FT_NEW_TOKEN:
            in_input(f.u.new_token.token, f.u.new_token.len, in + off, (size_t)n);
            break;
        case VEGA_QUIC_FT_CONNECTION_CLOSE:
        case VEGA_QUIC_FT_CONNECTION_CLOSE_APP:
            in_input(f.u.close.reason, f.u.close.reason_len, in + off, (size_t)n);
            break;
        case VEGA_QUIC_FT_DATAGRAM:
        case VEGA_QUIC_FT_DATAGRAM_LEN:
            in_input(f.u.datagram.data, f.u.datagram.len, in + off, (size_t)n);
            break;
        case VEGA_QUIC_FT_ACK:
        case VEGA_QUIC_FT_ACK_ECN:
            in_input(f.u.ack.gaps, f.u.ack.gaps_len, in + off, (size_t)n);
            break;
        default:
            break;
        }
        reencode(&f);
        if (!vega_quic_frame_allowed(f.type, pt) && ok) {
            ok = false;
            walk_err = VEGA_QUIC_PROTOCOL_VIOLATION;
        }
        off += (size_t)n;
    }
    uint64_t err = 0;
    int rc = vega_quic_payload_check(in, len, pt, &err);
    if ((rc == 0) != ok || (!ok && len && err != walk_err))
        abort();
    return 0;
}
