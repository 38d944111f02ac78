/* SPDX-License-Identifier: MIT */
/* Packet headers (RFC 9000 §17, RFC 8999, RFC 9369 §3.2): long headers of every type in v1 and
 * v2, short headers, connection ID limits, the fixed bit, coalesced packets (§12.2) and
 * Version Negotiation. */
#include <string.h>

#include <vega/quic_wire.h>

#include "vtest.h"

static const uint8_t CID20[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                  11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
static const uint8_t CID5[5] = {0xa, 0xb, 0xc, 0xd, 0xe};

/* Writes a long header packet of type t with a body of body_len bytes (pn included). */
static size_t write_long(uint8_t *out, size_t cap, uint32_t version, vega_quic_pkt_type t,
                         const uint8_t *token, size_t token_len, size_t body_len)
{
    vega_quic_hdr h = {.type = t,
                       .version = version,
                       .dcid = CID20,
                       .dcid_len = 20,
                       .scid = CID5,
                       .scid_len = 5,
                       .token = token,
                       .token_len = token_len,
                       .length = body_len};
    vega_ssize n = vega_quic_hdr_write(out, cap, &h, 2, 0x1234);
    VCHECK(n > 0);
    memset(out + n, 0x5a, body_len - 2);
    return (size_t)n + body_len - 2;
}

static void long_types(uint32_t version, const uint8_t first_bits[3])
{
    static const vega_quic_pkt_type types[3] = {VEGA_QUIC_PKT_INITIAL, VEGA_QUIC_PKT_0RTT,
                                                VEGA_QUIC_PKT_HANDSHAKE};
    for (int i = 0; i < 3; i++) {
        uint8_t pkt[256];
        const uint8_t tok[3] = {7, 8, 9};
        size_t tl = types[i] == VEGA_QUIC_PKT_INITIAL ? 3 : 0;
        size_t n = write_long(pkt, sizeof pkt, version, types[i], tl ? tok : NULL, tl, 50);
        /* §17.2: 1 1 TT RR PP, with TT from the version's table. */
        VCHECK_EQ(pkt[0], 0xc0 | first_bits[i] << 4 | 1);
        vega_quic_hdr h;
        VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, n, 0), 0);
        VCHECK_EQ(h.type, types[i]);
        VCHECK(h.version == version);
        VCHECK_EQ(h.dcid_len, 20);
        VCHECK(memcmp(h.dcid, CID20, 20) == 0);
        VCHECK_EQ(h.scid_len, 5);
        VCHECK(memcmp(h.scid, CID5, 5) == 0);
        VCHECK_EQ(h.token_len, tl);
        if (tl)
            VCHECK(memcmp(h.token, tok, 3) == 0);
        VCHECK_EQ(h.length, 50);
        VCHECK_EQ(h.pkt_len, n);
        VCHECK_EQ(h.pn_offset, n - 50);
        VCHECK_EQ(pkt[h.pn_offset], 0x12);
        /* Every truncation is malformed (the Length runs past the end). */
        for (size_t cut = 0; cut < n; cut++)
            VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, cut, 0), VEGA_ERR_PROTO);
        /* §17.2: a zero fixed bit is not a valid packet of this version. */
        pkt[0] &= (uint8_t)~0x40;
        VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, n, 0), VEGA_ERR_PROTO);
    }
}

VTEST(long_header_types_v1)
{
    const uint8_t bits[3] = {0, 1, 2};
    long_types(VEGA_QUIC_V1, bits);
}

/* RFC 9369 §3.2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00. */
VTEST(long_header_types_v2)
{
    const uint8_t bits[3] = {1, 2, 3};
    long_types(VEGA_QUIC_V2, bits);
}

/* RFC 9000 §17.2: v1/v2 CIDs longer than 20 bytes are dropped; RFC 8999 §5.1: other versions
 * may use up to 255, and their packets are still parsed for the invariants. */
VTEST(cid_lengths)
{
    uint8_t pkt[600] = {0xc0, 0, 0, 0, 1, 21};
    memset(pkt + 6, 0x11, 21);
    pkt[27] = 0;
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 100, 0), VEGA_ERR_PROTO);
    pkt[4] = 2; /* version 2: unknown here */
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 100, 0), 0);
    VCHECK_EQ(h.type, VEGA_QUIC_PKT_UNKNOWN);
    VCHECK_EQ(h.dcid_len, 21);
    VCHECK_EQ(h.scid_len, 0);
    VCHECK_EQ(h.pkt_len, 100);
    /* 255-byte CIDs in an unknown version. */
    pkt[5] = 255;
    pkt[6 + 255] = 255;
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 6 + 255 + 1 + 255, 0), 0);
    VCHECK_EQ(h.scid_len, 255);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 6 + 255 + 1 + 254, 0), VEGA_ERR_PROTO);
    /* Writing refuses them too. */
    uint8_t cid21[21] = {0};
    vega_quic_hdr w = {.type = VEGA_QUIC_PKT_HANDSHAKE,
                       .version = VEGA_QUIC_V1,
                       .dcid = cid21,
                       .dcid_len = 21,
                       .length = 10};
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &w, 1, 0), -EINVAL);
    w.dcid_len = 20;
    w.version = 0xff00001d;
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &w, 1, 0), -EINVAL);
    w.version = VEGA_QUIC_V1;
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &w, 5, 0), -EINVAL);
    VCHECK_EQ(vega_quic_hdr_write(pkt, 10, &w, 1, 0), VEGA_ERR_NOBUF);
    w.type = VEGA_QUIC_PKT_RETRY;
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &w, 1, 0), -EINVAL);
}

/* §17.3.1: short header with the caller's CID length; the fixed bit must be set. */
VTEST(short_header)
{
    uint8_t pkt[64];
    vega_quic_hdr w = {.type = VEGA_QUIC_PKT_1RTT, .dcid = CID5, .dcid_len = 5, .spin = true};
    VCHECK_EQ(vega_quic_hdr_write(pkt, sizeof pkt, &w, 4, 0xdeadbeef), 10);
    VCHECK_EQ(pkt[0], 0x63);
    VCHECK(pkt[6] == 0xde && pkt[9] == 0xef);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 40, 5), 0);
    VCHECK_EQ(h.type, VEGA_QUIC_PKT_1RTT);
    VCHECK(h.version == 0);
    VCHECK(h.dcid == pkt + 1 && h.dcid_len == 5);
    VCHECK_EQ(h.pn_offset, 6);
    VCHECK_EQ(h.pkt_len, 40);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 5, 5), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 40, 21), VEGA_ERR_PROTO);
    pkt[0] = 0x00;
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 40, 5), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 0, 5), VEGA_ERR_PROTO);
}

/* §12.2: Initial + Handshake + 1-RTT in one datagram, split by their Length fields. */
VTEST(coalesced)
{
    static uint8_t d[1500];
    size_t off = 0;
    const uint8_t tok[1] = {0xee};
    off += write_long(d + off, sizeof d - off, VEGA_QUIC_V2, VEGA_QUIC_PKT_INITIAL, tok, 1, 100);
    size_t second = off;
    off += write_long(d + off, sizeof d - off, VEGA_QUIC_V2, VEGA_QUIC_PKT_HANDSHAKE, NULL, 0, 30);
    size_t third = off;
    vega_quic_hdr s = {.type = VEGA_QUIC_PKT_1RTT, .dcid = CID20, .dcid_len = 20};
    VCHECK_EQ(vega_quic_hdr_write(d + off, sizeof d - off, &s, 1, 3), 22);
    off += 22 + 30;
    vega_quic_hdr hs[4];
    VCHECK_EQ(vega_quic_dgram_split(d, off, 20, hs, 4), 3);
    VCHECK_EQ(hs[0].type, VEGA_QUIC_PKT_INITIAL);
    VCHECK_EQ(hs[0].pkt_len, second);
    VCHECK_EQ(hs[1].type, VEGA_QUIC_PKT_HANDSHAKE);
    VCHECK(hs[1].dcid == d + second + 6);
    VCHECK_EQ(hs[1].pkt_len, third - second);
    VCHECK_EQ(hs[2].type, VEGA_QUIC_PKT_1RTT);
    VCHECK_EQ(hs[2].pkt_len, off - third);
    VCHECK_EQ(vega_quic_dgram_split(d, off, 20, hs, 2), 2);
    /* A packet with another DCID ends the datagram (§12.2). */
    vega_quic_hdr other = {.type = VEGA_QUIC_PKT_1RTT, .dcid = CID20 + 1, .dcid_len = 19};
    static uint8_t d2[1500];
    memcpy(d2, d, third);
    VCHECK_EQ(vega_quic_hdr_write(d2 + third, sizeof d2 - third, &other, 1, 3), 21);
    VCHECK_EQ(vega_quic_dgram_split(d2, third + 40, 19, hs, 4), 2);
    VCHECK_EQ(vega_quic_dgram_split(d2, third + 40, 20, hs, 4), 2);
    /* A damaged second packet stops the split after the first. */
    d[second] = 0x80; /* long header, fixed bit clear */
    VCHECK_EQ(vega_quic_dgram_split(d, off, 20, hs, 4), 1);
    VCHECK_EQ(vega_quic_dgram_split(d + second, off - second, 20, hs, 4), VEGA_ERR_PROTO);
}

/* §17.2.1: Version Negotiation written and parsed back; its first byte's low bits and fixed bit
 * are arbitrary; the version list must be whole. */
VTEST(version_negotiation)
{
    uint8_t pkt[128];
    const uint32_t vs[3] = {VEGA_QUIC_V2, VEGA_QUIC_V1, 0x1a2a3a4a};
    vega_ssize n = vega_quic_vn_write(pkt, sizeof pkt, 0x35, CID5, 5, CID20, 20, vs, 3);
    VCHECK_EQ(n, 7 + 5 + 20 + 12);
    VCHECK_EQ(pkt[0], 0xb5);
    vega_quic_hdr h;
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, (size_t)n, 0), 0);
    VCHECK_EQ(h.type, VEGA_QUIC_PKT_VN);
    VCHECK_EQ(h.nversions, 3);
    for (size_t i = 0; i < 3; i++)
        VCHECK(vega_quic_hdr_vn_version(&h, i) == vs[i]);
    VCHECK_EQ(vega_quic_hdr_vn_version(&h, 3), 0);
    VCHECK(h.dcid_len == 5 && memcmp(h.dcid, CID5, 5) == 0);
    VCHECK(h.scid_len == 20 && memcmp(h.scid, CID20, 20) == 0);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, (size_t)n - 1, 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_quic_hdr_parse(&h, pkt, 7 + 5 + 20, 0), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_quic_vn_write(pkt, (size_t)n - 1, 0, CID5, 5, CID20, 20, vs, 3), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_quic_vn_write(pkt, sizeof pkt, 0, CID5, 5, CID20, 20, vs, 0), -EINVAL);
}

/* The Length field: 2 bytes below 16384 (so it can be reserved early), 4 above; hdr_len agrees
 * with what write produces; Initial tokens of every size. */
VTEST(length_field_and_hdr_len)
{
    static uint8_t pkt[70000];
    static uint8_t tok[300];
    vega_quic_hdr h = {.type = VEGA_QUIC_PKT_INITIAL,
                       .version = VEGA_QUIC_V1,
                       .dcid = CID5,
                       .dcid_len = 5,
                       .token = tok,
                       .token_len = 300,
                       .length = 16384};
    vega_ssize n = vega_quic_hdr_write(pkt, sizeof pkt, &h, 3, 9);
    VCHECK_EQ(n, 7 + 5 + 2 + 300 + 4 + 3);
    VCHECK_EQ((size_t)n, vega_quic_hdr_len(&h, 3));
    memset(pkt + n, 0, 16384 - 3);
    vega_quic_hdr p;
    VCHECK_EQ(vega_quic_hdr_parse(&p, pkt, (size_t)n + 16384 - 3, 0), 0);
    VCHECK_EQ(p.length, 16384);
    VCHECK_EQ(p.token_len, 300);
    h.length = 5;
    h.token_len = 0;
    n = vega_quic_hdr_write(pkt, sizeof pkt, &h, 1, 9);
    VCHECK_EQ(n, 7 + 5 + 1 + 2 + 1);
    VCHECK_EQ(pkt[n - 3] & 0xc0, 0x40);
    h.length = VEGA_QUIC_MAX_VARINT + 1;
    VCHECK_EQ(vega_quic_hdr_len(&h, 1), 0);
}
