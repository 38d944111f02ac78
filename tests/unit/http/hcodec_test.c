/* SPDX-License-Identifier: MIT */
/* The shared header-codec primitives (lib/http/hcodec.c): prefixed integers (RFC 7541 §5.1 and
 * Appendix C.1), every code of the Huffman table (Appendix B) both ways, the decoding errors of
 * §5.2 (EOS, long padding, padding that is not EOS's prefix), the Huffman strings of Appendix C,
 * and string literals with the prefixes QPACK uses. */
#include "base.h"
#include "hcodec.h"
#include "vtest.h"

/* The code lengths of symbols 0..256, transcribed from the "len in bits" column of RFC 7541
 * Appendix B. The code is canonical, so the codes themselves follow from these (canon()); the
 * tests compare the encoder's table against that. */
static const uint8_t lens[257] = {
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6,  10, 10, 12, 13, 6,  8,  11, 10, 10, 8,  11, 8,  6,  6,  6,
    5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8,  15, 6,  12, 10, 13, 6,  7,  7,  7,  7,  7,  7,
    7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8,  13, 19, 13, 14, 6,
    15, 5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5,  6,  7,  6,  5,  5,  6,  7,  7,
    7,  7,  7,  15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21,
    23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24,
    21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30};

static uint32_t codes[257];

/* Canonical Huffman codes from the lengths: ordered by (length, symbol), each the previous
 * plus one, shifted left when the length grows. */
static void canon(void)
{
    uint32_t code = 0;
    unsigned prev = 0;
    bool first = true;
    for (unsigned len = 1; len <= 30; len++)
        for (unsigned s = 0; s < 257; s++) {
            if (lens[s] != len)
                continue;
            if (!first)
                code = (code + 1) << (len - prev);
            first = false;
            prev = len;
            codes[s] = code;
        }
}

/* ---- prefixed integers ------------------------------------------------------------------- */

VTEST(int_rfc7541_c1)
{
    uint8_t b[16];
    /* C.1.1: 10 on a 5-bit prefix; the three bits above keep the caller's flags. */
    VCHECK_EQ(vega__hc_int_encode(b, sizeof b, 0xe0, 5, 10), 1);
    VCHECK_EQ(b[0], 0xea);
    /* C.1.2: 1337 on a 5-bit prefix = 1f 9a 0a. */
    VCHECK_EQ(vega__hc_int_encode(b, sizeof b, 0x00, 5, 1337), 3);
    VCHECK(b[0] == 0x1f && b[1] == 0x9a && b[2] == 0x0a);
    VCHECK_EQ(vega__hc_int_len(1337, 5), 3);
    uint64_t v = 0;
    VCHECK_EQ(vega__hc_int_decode(b, 3, 5, &v), 3);
    VCHECK_EQ(v, 1337);
    /* C.1.3: 42 starting at an octet boundary (8-bit prefix). */
    VCHECK_EQ(vega__hc_int_encode(b, sizeof b, 0xff, 8, 42), 1);
    VCHECK_EQ(b[0], 42);
    VCHECK_EQ(vega__hc_int_decode(b, 1, 8, &v), 1);
    VCHECK_EQ(v, 42);
    /* The flags above the prefix never leak into the value. */
    b[0] = 0xea;
    VCHECK_EQ(vega__hc_int_decode(b, 1, 5, &v), 1);
    VCHECK_EQ(v, 10);
}

VTEST(int_roundtrip_every_prefix)
{
    uint64_t rng = 7;
    for (unsigned p = 1; p <= 8; p++) {
        uint64_t max = (1u << p) - 1;
        uint64_t vals[] = {0,
                           max - 1,
                           max,
                           max + 1,
                           max + 127,
                           max + 128,
                           16383,
                           1u << 21,
                           (1ull << 56) + 3,
                           VEGA__HC_INT_MAX,
                           VEGA__HC_INT_MAX - 1,
                           vega__rand_next(&rng) >> 2,
                           12345};
        for (size_t i = 0; i < VEGA__ARRAY_LEN(vals); i++) {
            uint8_t b[16];
            uint8_t flags = (uint8_t)(0xff << p);
            size_t n = vega__hc_int_encode(b, sizeof b, p == 8 ? 0 : flags, p, vals[i]);
            VCHECK(n >= 1 && n <= VEGA__HC_INT_MAX_LEN);
            VCHECK_EQ(n, vega__hc_int_len(vals[i], p));
            if (p < 8)
                VCHECK_EQ(b[0] & flags, flags);
            uint64_t v = ~0ull;
            VCHECK_EQ(vega__hc_int_decode(b, n, p, &v), (long long)n);
            VCHECK(v == vals[i]);
            /* Every truncation is "incomplete", never an error or a value. */
            for (size_t k = 0; k < n; k++)
                VCHECK_EQ(vega__hc_int_decode(b, k, p, &v), 0);
            /* A buffer one byte short writes nothing usable. */
            VCHECK_EQ(vega__hc_int_encode(b, n - 1, 0, p, vals[i]), 0);
        }
    }
}

VTEST(int_limits)
{
    uint64_t v;
    /* 2^62 - 1 is the largest value; 2^62 (31 + 0x3fffffffffffffe1 on a 5-bit prefix) is not. */
    uint8_t b[16];
    size_t n = vega__hc_int_encode(b, sizeof b, 0, 5, VEGA__HC_INT_MAX);
    VCHECK_EQ(vega__hc_int_decode(b, n, 5, &v), (long long)n);
    VCHECK(v == VEGA__HC_INT_MAX);
    /* The encoding of 2^62, built by hand. */
    uint64_t rest = (1ull << 62) - 31;
    size_t k = 0;
    b[k++] = 0x1f;
    for (; rest >= 128; rest >>= 7)
        b[k++] = (uint8_t)(0x80 | (rest & 0x7f));
    b[k++] = (uint8_t)rest;
    VCHECK_EQ(vega__hc_int_decode(b, k, 5, &v), VEGA_ERR_PROTO);
    /* The largest 10-byte encoding overflows 62 bits: an error, not a wrap. */
    uint8_t big[10] = {0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    VCHECK_EQ(vega__hc_int_decode(big, sizeof big, 5, &v), VEGA_ERR_PROTO);
    /* Leading zero groups are accepted up to ten bytes in all (value 31)... */
    uint8_t pad10[10] = {0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    VCHECK_EQ(vega__hc_int_decode(pad10, sizeof pad10, 5, &v), 10);
    VCHECK_EQ(v, 31);
    /* ...but an eleventh byte is malformed, even before it arrives. */
    uint8_t pad11[11] = {0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    VCHECK_EQ(vega__hc_int_decode(pad11, sizeof pad11, 5, &v), VEGA_ERR_PROTO);
    VCHECK_EQ(vega__hc_int_decode(pad11, 10, 5, &v), VEGA_ERR_PROTO);
    VCHECK_EQ(vega__hc_int_decode(pad11, 9, 5, &v), 0);
    VCHECK_EQ(vega__hc_int_decode(pad11, 0, 5, &v), 0);
}

/* ---- Huffman ----------------------------------------------------------------------------- */

/* Writes the code of symbol s followed by padding ones to a whole byte; returns the bytes. */
static size_t put_code(uint8_t *out, unsigned s, unsigned extra_ones)
{
    uint64_t acc = codes[s];
    unsigned n = lens[s];
    acc = acc << extra_ones | ((1ull << extra_ones) - 1);
    n += extra_ones;
    unsigned pad = (8 - n % 8) % 8;
    acc = acc << pad | ((1ull << pad) - 1);
    n += pad;
    for (unsigned i = 0; i < n / 8; i++)
        out[i] = (uint8_t)(acc >> (n - 8 * (i + 1)));
    return n / 8;
}

VTEST(huff_every_code)
{
    canon();
    /* Spot checks against the RFC's text: '/' is 011000 (0x18), EOS 30 ones. */
    VCHECK_EQ(codes['/'], 0x18);
    VCHECK_EQ(codes[256], 0x3fffffff);
    for (unsigned s = 0; s < 256; s++) {
        uint8_t sym = (uint8_t)s, enc[8], want[8], dec[8];
        size_t n = vega__hc_huff_encode(enc, &sym, 1);
        size_t w = put_code(want, s, 0);
        VCHECK_EQ(n, w);
        VCHECK_EQ(vega__hc_huff_len(&sym, 1), w);
        VCHECK(memcmp(enc, want, n) == 0);
        VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, enc, n), 1);
        VCHECK_EQ(dec[0], s);
        /* The code cut short is never a symbol: without its last byte it is either nothing
         * (a prefix of at most 7 ones) or an error. */
        vega_ssize r = vega__hc_huff_decode(dec, sizeof dec, enc, n - 1);
        VCHECK(r == 0 || r == VEGA_ERR_PROTO);
    }
}

VTEST(huff_every_pair_roundtrips)
{
    uint8_t in[2], enc[16], dec[8];
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            in[0] = (uint8_t)a, in[1] = (uint8_t)b;
            size_t n = vega__hc_huff_encode(enc, in, 2);
            VCHECK_EQ(n, vega__hc_huff_len(in, 2));
            VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, enc, n), 2);
            VCHECK(dec[0] == a && dec[1] == b);
        }
}

VTEST(huff_eos_rejected)
{
    canon();
    uint8_t b[16], dec[16];
    /* EOS alone (30 ones + 2 padding ones). */
    size_t n = put_code(b, 256, 0);
    VCHECK_EQ(n, 4);
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, b, n), VEGA_ERR_PROTO);
    /* EOS after a symbol: 'a' 00011, then 30 ones, then padding. */
    uint8_t a_eos[5] = {0x1f, 0xff, 0xff, 0xff, 0xff};
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, a_eos, sizeof a_eos), VEGA_ERR_PROTO);
    /* EOS in the middle, followed by a real symbol. */
    uint8_t mid[8];
    size_t k = 0;
    uint64_t acc = 0x3fffffffull << 5 | codes['0'];
    unsigned bits = 35 + 5; /* pad 5 ones to 40 */
    acc = acc << 5 | 0x1f;
    for (; k < bits / 8; k++)
        mid[k] = (uint8_t)(acc >> (bits - 8 * (k + 1)));
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, mid, k), VEGA_ERR_PROTO);
}

VTEST(huff_padding_longer_than_7_bits)
{
    uint8_t dec[16];
    /* Eight ones alone: a padding of 8 bits. */
    uint8_t ff[1] = {0xff};
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, ff, 1), VEGA_ERR_PROTO);
    /* 'a' (00011) then 11 ones. */
    uint8_t a11[2] = {0x1f, 0xff};
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, a11, 2), VEGA_ERR_PROTO);
    /* A padding of exactly 7 bits is fine: "0" SP SP is 5 + 6 + 6 = 17 bits, then 7 ones;
     * one byte more of ones makes it 15. */
    uint8_t s[3] = {'0', ' ', ' '}, enc[8];
    size_t n = vega__hc_huff_encode(enc, s, 3);
    VCHECK_EQ(n, 3);
    VCHECK_EQ(enc[2] & 0x7f, 0x7f);
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, enc, n), 3);
    VCHECK(memcmp(dec, s, 3) == 0);
    enc[3] = 0xff;
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, enc, 4), VEGA_ERR_PROTO);
}

VTEST(huff_padding_not_eos_prefix)
{
    uint8_t dec[16];
    /* 'a' 00011 then 000 / 110 / 011 instead of 111. */
    uint8_t bad[] = {0x18, 0x1e, 0x1b};
    for (size_t i = 0; i < sizeof bad; i++)
        VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, &bad[i], 1), VEGA_ERR_PROTO);
    uint8_t good = 0x1f;
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, &good, 1), 1);
    VCHECK_EQ(dec[0], 'a');
    /* The empty string is a valid Huffman string. */
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, &good, 0), 0);
}

/* RFC 7541 Appendix C.4 and C.6: every Huffman-coded literal of the examples. */
static const struct {
    const char *text, *hex;
} rfc_strings[] = {
    {"www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"},
    {"no-cache", "a8eb 1064 9cbf"},
    {"custom-key", "25a8 49e9 5ba9 7d7f"},
    {"custom-value", "25a8 49e9 5bb8 e8b4 bf"},
    {"302", "6402"},
    {"private", "aec3 771a 4b"},
    {"Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"},
    {"https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"},
    {"307", "640e ff"},
    {"Mon, 21 Oct 2013 20:13:22 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff"},
    {"gzip", "9bd9 ab"},
    {"foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
     "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 "
     "03ed 4ee5 b106 3d50 07"},
};

VTEST(huff_rfc7541_appendix_c)
{
    for (size_t i = 0; i < VEGA__ARRAY_LEN(rfc_strings); i++) {
        uint8_t want[64], enc[64], dec[128];
        size_t w = vtest_unhex(rfc_strings[i].hex, want, sizeof want);
        const uint8_t *t = (const uint8_t *)rfc_strings[i].text;
        size_t tl = strlen(rfc_strings[i].text);
        VCHECK_EQ(vega__hc_huff_len(t, tl), w);
        VCHECK_EQ(vega__hc_huff_encode(enc, t, tl), w);
        VCHECK(memcmp(enc, want, w) == 0);
        VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, want, w), (long long)tl);
        VCHECK(memcmp(dec, t, tl) == 0);
        /* One byte short of room: NOBUF, never a write past cap. */
        VCHECK_EQ(vega__hc_huff_decode(dec, tl - 1, want, w), VEGA_ERR_NOBUF);
    }
}

VTEST(huff_decoded_max_bound)
{
    /* '0' has a 5-bit code, the shortest: n of them are the densest string there is. */
    uint8_t s[200], enc[200], dec[400];
    memset(s, '0', sizeof s);
    for (size_t n = 0; n <= sizeof s; n++) {
        size_t e = vega__hc_huff_encode(enc, s, n);
        VCHECK(VEGA__HC_HUFF_DECODED_MAX(e) >= n);
        VCHECK_EQ(vega__hc_huff_decode(dec, VEGA__HC_HUFF_DECODED_MAX(e), enc, e), (long long)n);
    }
}

VTEST(huff_random_roundtrip)
{
    uint64_t rng = 42;
    static uint8_t s[4096], enc[4096 * 4], dec[4096];
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = vega__rand_below(&rng, sizeof s);
        bool text = iter & 1;
        for (size_t i = 0; i < n; i++)
            s[i] =
                text ? (uint8_t)(' ' + vega__rand_below(&rng, 95)) : (uint8_t)vega__rand_next(&rng);
        size_t e = vega__hc_huff_encode(enc, s, n);
        VCHECK_EQ(e, vega__hc_huff_len(s, n));
        VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, enc, e), (long long)n);
        VCHECK(memcmp(dec, s, n) == 0);
    }
}

/* ---- string literals --------------------------------------------------------------------- */

VTEST(str_prefixes_and_flags)
{
    const uint8_t *v = (const uint8_t *)"custom-value";
    uint8_t b[64];
    /* Raw on a 7-bit prefix (RFC 9204 B.2 style: H = 0). */
    size_t n = vega__hc_str_encode(b, sizeof b, 0x00, 7, v, 12, false);
    VCHECK_EQ(n, 13);
    VCHECK_EQ(b[0], 0x0c);
    VCHECK_EQ(vega__hc_str_len(v, 12, 7, false), 13);
    vega__hc_str s;
    VCHECK_EQ(vega__hc_str_decode(b, n, 7, &s), 13);
    VCHECK(!s.huffman && s.len == 12 && s.ptr == b + 1);
    /* Huffman on a 3-bit prefix with the representation's bits above H kept (0x20 | N). */
    n = vega__hc_str_encode(b, sizeof b, 0x20 | 0x10, 3, v, 12, true);
    VCHECK_EQ(n, 1 + 1 + 9); /* 9 Huffman bytes: 7 on the prefix, 2 in a second byte */
    VCHECK_EQ(b[0], 0x20 | 0x10 | 0x08 | 0x07);
    VCHECK_EQ(b[1], 9 - 7);
    VCHECK_EQ(vega__hc_str_len(v, 12, 3, true), n);
    VCHECK_EQ(vega__hc_str_decode(b, n, 3, &s), (long long)n);
    VCHECK(s.huffman && s.len == 9 && s.ptr == b + 2);
    uint8_t dec[32];
    VCHECK_EQ(vega__hc_huff_decode(dec, sizeof dec, s.ptr, s.len), 12);
    VCHECK(memcmp(dec, v, 12) == 0);
    /* Huffman is used only when strictly shorter: "\x01" has a 23-bit code. */
    n = vega__hc_str_encode(b, sizeof b, 0, 7, (const uint8_t *)"\x01", 1, true);
    VCHECK_EQ(n, 2);
    VCHECK_EQ(b[0], 0x01);
    /* Truncated: 0, with the declared length known once the prefix is in. */
    n = vega__hc_str_encode(b, sizeof b, 0, 5, v, 12, false);
    for (size_t k = 0; k < n; k++) {
        VCHECK_EQ(vega__hc_str_decode(b, k, 5, &s), 0);
        VCHECK(s.ptr == NULL);
        VCHECK_EQ(s.len, k ? 12 : 0);
    }
    /* cap too small: 0. */
    VCHECK_EQ(vega__hc_str_encode(b, 12, 0, 7, v, 12, false), 0);
    /* An empty string. */
    VCHECK_EQ(vega__hc_str_encode(b, sizeof b, 0x80, 7, v, 0, true), 1);
    VCHECK_EQ(b[0], 0x00);
    VCHECK_EQ(vega__hc_str_decode(b, 1, 7, &s), 1);
    VCHECK(s.len == 0 && s.ptr == b + 1);
    /* A length beyond 2^62 - 1 is malformed. */
    uint8_t huge[11] = {0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    VCHECK_EQ(vega__hc_str_decode(huge, sizeof huge, 7, &s), VEGA_ERR_PROTO);
}
