/* SPDX-License-Identifier: MIT */
/* HTTP/3 wire primitives: QUIC variable-length integers (RFC 9000 §16), the DATA frame header
 * (RFC 9114 §7.1, §7.2.1) and HTTP datagram prefixes (RFC 9297 §2.1). */
#include "h3_core_int.h"

size_t vega__h3_varint_len(uint64_t v)
{
    return v < 64 ? 1 : v < 16384 ? 2 : v < (1u << 30) ? 4 : 8;
}

size_t vega__h3_varint_put(uint8_t *out, size_t cap, uint64_t v)
{
    VEGA_ASSERT(v <= VEGA__H3_VARINT_MAX);
    size_t n = vega__h3_varint_len(v);
    if (n > cap)
        return 0;
    static const uint8_t tag[9] = {0, 0x00, 0x40, 0, 0x80, 0, 0, 0, 0xc0};
    for (size_t i = n; i > 0; i--, v >>= 8)
        out[i - 1] = (uint8_t)v;
    out[0] |= tag[n];
    return n;
}

size_t vega__h3_varint_get(const uint8_t *in, size_t len, uint64_t *v)
{
    if (len == 0)
        return 0;
    size_t n = (size_t)1 << (in[0] >> 6);
    if (n > len)
        return 0;
    uint64_t x = in[0] & 0x3f;
    for (size_t i = 1; i < n; i++)
        x = x << 8 | in[i];
    *v = x;
    return n;
}

vega_ssize vega_h3_write_data_header(uint8_t *out, size_t cap, uint64_t payload_len)
{
    if (payload_len > VEGA__H3_VARINT_MAX || (!out && cap))
        return -EINVAL;
    size_t need = 1 + vega__h3_varint_len(payload_len);
    if (need > cap)
        return VEGA_ERR_NOBUF;
    out[0] = VEGA__H3_FRAME_DATA;
    vega__h3_varint_put(out + 1, cap - 1, payload_len);
    return (vega_ssize)need;
}

vega_ssize vega_h3_datagram_write_prefix(uint8_t *out, size_t cap, uint64_t stream_id)
{
    /* RFC 9297 §2.1: "Quarter Stream ID: ... the stream ID ... divided by four (the division
     * remainder is always zero)" of a client-initiated bidirectional stream. */
    if (!vega__h3_id_client_bidi(stream_id) || stream_id > VEGA__H3_VARINT_MAX || (!out && cap))
        return -EINVAL;
    size_t n = vega__h3_varint_put(out, cap, stream_id / 4);
    return n ? (vega_ssize)n : VEGA_ERR_NOBUF;
}

vega_ssize vega_h3_datagram_parse(const uint8_t *in, size_t len, uint64_t *stream_id)
{
    uint64_t q;
    size_t n = in ? vega__h3_varint_get(in, len, &q) : 0;
    /* RFC 9297 §2.1: a Quarter Stream ID that cannot name a client-initiated bidirectional stream
     * (stream ids stop at 2^62 - 1) cannot be one. A truncated prefix is malformed too. */
    if (n == 0 || q > VEGA__H3_VARINT_MAX / 4)
        return VEGA_ERR_PROTO;
    *stream_id = q * 4;
    return (vega_ssize)n;
}
