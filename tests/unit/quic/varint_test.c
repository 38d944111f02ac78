/* SPDX-License-Identifier: MIT */
/* Variable-length integers (RFC 9000 §16, Appendix A.1) and packet number encoding and
 * recovery (§17.1, Appendix A.2, A.3). */
#include <string.h>

#include <vega/quic_wire.h>

#include "vtest.h"

/* RFC 9000 A.1: the four example encodings, and a two-byte encoding of a one-byte value. */
VTEST(rfc9000_a1_examples)
{
    static const struct {
        uint8_t b[8];
        size_t n;
        uint64_t v;
    } ex[] = {
        {{0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c}, 8, 151288809941952652ull},
        {{0x9d, 0x7f, 0x3e, 0x7d}, 4, 494878333},
        {{0x7b, 0xbd}, 2, 15293},
        {{0x25}, 1, 37},
        {{0x40, 0x25}, 2, 37},
    };
    for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
        uint64_t v = 0;
        VCHECK_EQ(vega_quic_varint_read(ex[i].b, ex[i].n, &v), (long long)ex[i].n);
        VCHECK(v == ex[i].v);
        /* Truncated input fails whatever is missing. */
        for (size_t cut = 0; cut < ex[i].n; cut++)
            VCHECK_EQ(vega_quic_varint_read(ex[i].b, cut, &v), VEGA_ERR_PROTO);
        if (i < 4) { /* the minimal ones re-encode byte for byte */
            uint8_t out[8];
            VCHECK_EQ(vega_quic_varint_write(out, sizeof out, ex[i].v), (long long)ex[i].n);
            VCHECK(memcmp(out, ex[i].b, ex[i].n) == 0);
        }
    }
}

/* Boundaries of each length, the maximum, and values past it. */
VTEST(lengths_and_limits)
{
    static const uint64_t vals[] = {
        0, 63, 64, 16383, 16384, (1ull << 30) - 1, 1ull << 30, VEGA_QUIC_MAX_VARINT};
    static const size_t lens[] = {1, 1, 2, 2, 4, 4, 8, 8};
    for (size_t i = 0; i < 8; i++) {
        uint8_t out[8];
        uint64_t v;
        VCHECK_EQ(vega_quic_varint_len(vals[i]), lens[i]);
        VCHECK_EQ(vega_quic_varint_write(out, sizeof out, vals[i]), (long long)lens[i]);
        VCHECK_EQ(vega_quic_varint_read(out, sizeof out, &v), (long long)lens[i]);
        VCHECK(v == vals[i]);
        VCHECK_EQ(vega_quic_varint_write(out, lens[i] - 1, vals[i]), VEGA_ERR_NOBUF);
        /* And every longer encoding reads back the same value. */
        for (size_t n = lens[i]; n <= 8; n *= 2) {
            VCHECK_EQ(vega_quic_varint_write_n(out, sizeof out, vals[i], n), (long long)n);
            VCHECK_EQ(vega_quic_varint_read(out, n, &v), (long long)n);
            VCHECK(v == vals[i]);
        }
    }
    uint8_t out[8];
    VCHECK_EQ(vega_quic_varint_len(VEGA_QUIC_MAX_VARINT + 1), 0);
    VCHECK_EQ(vega_quic_varint_write(out, sizeof out, VEGA_QUIC_MAX_VARINT + 1), -EINVAL);
    VCHECK_EQ(vega_quic_varint_write_n(out, sizeof out, 64, 1), -EINVAL);
    VCHECK_EQ(vega_quic_varint_write_n(out, sizeof out, 1, 3), -EINVAL);
    VCHECK_EQ(vega_quic_varint_write_n(out, 1, 1, 2), VEGA_ERR_NOBUF);
}

/* RFC 9000 A.2: 0xac5c02 with 0xabe8b3 acknowledged needs 16 bits, 0xace8fe needs 18 (3
 * bytes); and the edges: nothing acknowledged, too far ahead, not ahead. */
VTEST(rfc9000_a2_pn_encoding)
{
    VCHECK_EQ(vega_quic_pn_len(0xac5c02, 0xabe8b3), 2);
    VCHECK_EQ(vega_quic_pn_len(0xace8fe, 0xabe8b3), 3);
    /* min_bits = log2(unacked) + 1: 1 byte covers up to 128 unacknowledged packets. */
    VCHECK_EQ(vega_quic_pn_len(0, -1), 1);
    VCHECK_EQ(vega_quic_pn_len(127, -1), 1);
    VCHECK_EQ(vega_quic_pn_len(128, -1), 2);
    VCHECK_EQ(vega_quic_pn_len(10 + 128, 10), 1);
    VCHECK_EQ(vega_quic_pn_len(10 + 129, 10), 2);
    VCHECK_EQ(vega_quic_pn_len(10 + (1ull << 31), 10), 4);
    VCHECK_EQ(vega_quic_pn_len(10 + (1ull << 31) + 1, 10), 0);
    VCHECK_EQ(vega_quic_pn_len(10, 10), 0);
    VCHECK_EQ(vega_quic_pn_len(VEGA_QUIC_MAX_PN + 1, -1), 0);
}

/* RFC 9000 A.3: largest 0xa82f30ea, 16-bit 0x9b32 decodes to 0xa82f9b32; then wrap-around in
 * both directions, the first packet, and no result past 2^62 - 1. */
VTEST(rfc9000_a3_pn_decoding)
{
    VCHECK(vega_quic_pn_decode(0x9b32, 2, 0xa82f30ea) == 0xa82f9b32ull);
    VCHECK(vega_quic_pn_decode(0x00, 1, 0xff) == 0x100); /* next after a byte wrap */
    VCHECK(vega_quic_pn_decode(0xff, 1, 0x100) == 0xff); /* a late one before the wrap */
    VCHECK(vega_quic_pn_decode(0x02, 4, -1) == 2);
    VCHECK(vega_quic_pn_decode(0xfe, 1, 0) == 0xfe); /* cannot go below 0 */
    VCHECK(vega_quic_pn_decode(0x00, 1, (int64_t)VEGA_QUIC_MAX_PN - 1) <= VEGA_QUIC_MAX_PN);
    /* Every encodable (pn, largest acked) round-trips when the receiver has seen largest. */
    for (uint64_t pn = 0; pn < 70000; pn += 7)
        for (int64_t la = -1; la < (int64_t)pn; la += 1 + (int64_t)(pn / 5)) {
            size_t n = vega_quic_pn_len(pn, la);
            VCHECK(n >= 1 && n <= 4);
            uint64_t t = pn & ((1ull << (8 * n)) - 1);
            VCHECK(vega_quic_pn_decode(t, n, la) == pn);
        }
}

VTEST(error_names)
{
    VCHECK_STR(vega_quic_transport_error_name(0x7), "FRAME_ENCODING_ERROR");
    VCHECK_STR(vega_quic_transport_error_name(0x0), "NO_ERROR");
    VCHECK_STR(vega_quic_transport_error_name(0x128), "CRYPTO_ERROR");
    VCHECK_STR(vega_quic_transport_error_name(0x11), "VERSION_NEGOTIATION_ERROR");
    VCHECK_STR(vega_quic_transport_error_name(0x200), "unknown");
    VCHECK(vega_quic_version_is_supported(VEGA_QUIC_V1));
    VCHECK(vega_quic_version_is_supported(VEGA_QUIC_V2));
    VCHECK(!vega_quic_version_is_supported(0xff00001d));
}
