/* SPDX-License-Identifier: MIT */
/* Stateless reset tokens (HMAC-SHA256 of the CID under a static key, checked against Python's
 * hmac) and the reset packet's shape and size rules (RFC 9000 §10.3). */
#include <string.h>

#include <vega/quic.h>

#include "vtest.h"

static const uint8_t key[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

VTEST(token_is_hmac_of_cid)
{
    static const uint8_t cid[8] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    static const uint8_t want[16] = {0x9b, 0x46, 0x21, 0xd6, 0x7e, 0x4f, 0x37, 0x9d,
                                     0x31, 0x41, 0x14, 0xf4, 0xc3, 0xea, 0x7e, 0x79};
    static const uint8_t want_empty[16] = {0xd3, 0x8b, 0x42, 0x09, 0x6d, 0x80, 0xf4, 0x5f,
                                           0x82, 0x6b, 0x44, 0xa9, 0xd5, 0x60, 0x7d, 0xe7};
    uint8_t tok[16];
    VCHECK_EQ(vega_quic_reset_token(key, cid, sizeof cid, tok), 0);
    VCHECK(memcmp(tok, want, 16) == 0);
    VCHECK_EQ(vega_quic_reset_token(key, NULL, 0, tok), 0);
    VCHECK(memcmp(tok, want_empty, 16) == 0);
    uint8_t long_cid[21] = {0};
    VCHECK_EQ(vega_quic_reset_token(key, long_cid, 21, tok), -EINVAL);
}

VTEST(reset_packet_shape_and_size)
{
    uint8_t tok[16], out[1500];
    memset(tok, 0xab, sizeof tok);
    /* One byte shorter than the trigger, the token last, a short-header first byte. */
    long n = vega_quic_reset_write(out, sizeof out, 100, tok);
    VCHECK_EQ(n, 99);
    VCHECK_EQ(out[0] & 0xc0, 0x40);
    VCHECK(memcmp(out + n - 16, tok, 16) == 0);
    /* Capped at 1200 and at the buffer. */
    VCHECK_EQ(vega_quic_reset_write(out, sizeof out, 1500, tok), 1200);
    VCHECK_EQ(vega_quic_reset_write(out, 50, 1500, tok), 50);
    /* Too small a trigger: nothing (a reset below 21 bytes would be recognisable). */
    VCHECK_EQ(vega_quic_reset_write(out, sizeof out, 21, tok), 0);
    VCHECK_EQ(vega_quic_reset_write(out, sizeof out, 22, tok), 21);
    VCHECK_EQ(vega_quic_reset_write(out, 20, 100, tok), VEGA_ERR_NOBUF);
    /* The unpredictable part differs between two resets. */
    uint8_t a[64], b[64];
    VCHECK_EQ(vega_quic_reset_write(a, sizeof a, 65, tok), 64);
    VCHECK_EQ(vega_quic_reset_write(b, sizeof b, 65, tok), 64);
    VCHECK(memcmp(a + 1, b + 1, 47) != 0);
}
