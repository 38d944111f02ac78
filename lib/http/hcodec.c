/* SPDX-License-Identifier: MIT */
/* The primitives HPACK and QPACK share: prefixed integers (RFC 7541 §5.1, RFC 9204 §4.1.1), the
 * canonical Huffman code of RFC 7541 Appendix B (decoded a whole code at a time from a 64-bit
 * window, not bit by bit) and string literals (RFC 7541 §5.2, RFC 9204 §4.1.2). */
#include <string.h>

#include "base.h"
#include "hcodec.h"

/* ---- prefixed integers (RFC 7541 §5.1) --------------------------------------------------- */

size_t vega__hc_int_len(uint64_t v, unsigned prefix_bits)
{
    uint64_t max = (1u << prefix_bits) - 1;
    if (v < max)
        return 1;
    size_t n = 2;
    for (v -= max; v >= 128; v >>= 7)
        n++;
    return n;
}

size_t vega__hc_int_encode(uint8_t *out, size_t cap, uint8_t first, unsigned prefix_bits,
                           uint64_t v)
{
    VEGA_ASSERT(prefix_bits >= 1 && prefix_bits <= 8 && v <= VEGA__HC_INT_MAX);
    size_t n = vega__hc_int_len(v, prefix_bits);
    if (n > cap)
        return 0;
    uint8_t max = (uint8_t)((1u << prefix_bits) - 1);
    uint8_t flags = prefix_bits == 8 ? 0 : (uint8_t)(first & ~max);
    if (v < max) {
        out[0] = (uint8_t)(flags | v);
        return 1;
    }
    out[0] = (uint8_t)(flags | max);
    v -= max;
    size_t i = 1;
    for (; v >= 128; v >>= 7)
        out[i++] = (uint8_t)(0x80 | (v & 0x7f));
    out[i++] = (uint8_t)v;
    return i;
}

vega_ssize vega__hc_int_decode(const uint8_t *in, size_t len, unsigned prefix_bits, uint64_t *v)
{
    VEGA_ASSERT(prefix_bits >= 1 && prefix_bits <= 8);
    if (len == 0)
        return 0;
    uint64_t max = (1u << prefix_bits) - 1;
    uint64_t x = in[0] & max;
    if (x < max) {
        *v = x;
        return 1;
    }
    /* Continuation bytes carry 7 bits each, least significant group first. With at most
     * VEGA__HC_INT_MAX_LEN - 1 of them the shift stays <= 56, so nothing overflows before the
     * range check. */
    uint64_t acc = 0;
    for (size_t i = 1; i < VEGA__HC_INT_MAX_LEN; i++) {
        if (i >= len)
            return 0;
        acc |= (uint64_t)(in[i] & 0x7f) << (7 * (i - 1));
        if (!(in[i] & 0x80)) {
            if (acc > VEGA__HC_INT_MAX - max)
                return VEGA_ERR_PROTO;
            *v = acc + max;
            return (vega_ssize)(i + 1);
        }
    }
    return VEGA_ERR_PROTO; /* longer than VEGA__HC_INT_MAX_LEN bytes */
}

/* ---- Huffman code (RFC 7541 Appendix B) --------------------------------------------------- */

struct huff_code {
    uint32_t code;
    uint8_t bits;
};

struct huff_len {
    uint64_t limit;
    uint32_t first;
    uint16_t index;
    uint8_t bits;
};

/* The code of every symbol, as RFC 7541 Appendix B lists it: {code (LSB-aligned), bits}. */
/* clang-format off */
static const struct huff_code huff_codes[257] = {
    /*   0 */ {0x1ff8, 13}, {0x7fffd8, 23}, {0xfffffe2, 28}, {0xfffffe3, 28}, {0xfffffe4, 28},
    /*   5 */ {0xfffffe5, 28}, {0xfffffe6, 28}, {0xfffffe7, 28}, {0xfffffe8, 28}, {0xffffea, 24},
    /*  10 */ {0x3ffffffc, 30}, {0xfffffe9, 28}, {0xfffffea, 28}, {0x3ffffffd, 30}, {0xfffffeb, 28},
    /*  15 */ {0xfffffec, 28}, {0xfffffed, 28}, {0xfffffee, 28}, {0xfffffef, 28}, {0xffffff0, 28},
    /*  20 */ {0xffffff1, 28}, {0xffffff2, 28}, {0x3ffffffe, 30}, {0xffffff3, 28}, {0xffffff4, 28},
    /*  25 */ {0xffffff5, 28}, {0xffffff6, 28}, {0xffffff7, 28}, {0xffffff8, 28}, {0xffffff9, 28},
    /*  30 */ {0xffffffa, 28}, {0xffffffb, 28}, {0x14, 6}, {0x3f8, 10}, {0x3f9, 10},
    /*  35 */ {0xffa, 12}, {0x1ff9, 13}, {0x15, 6}, {0xf8, 8}, {0x7fa, 11},
    /*  40 */ {0x3fa, 10}, {0x3fb, 10}, {0xf9, 8}, {0x7fb, 11}, {0xfa, 8},
    /*  45 */ {0x16, 6}, {0x17, 6}, {0x18, 6}, {0x0, 5}, {0x1, 5},
    /*  50 */ {0x2, 5}, {0x19, 6}, {0x1a, 6}, {0x1b, 6}, {0x1c, 6},
    /*  55 */ {0x1d, 6}, {0x1e, 6}, {0x1f, 6}, {0x5c, 7}, {0xfb, 8},
    /*  60 */ {0x7ffc, 15}, {0x20, 6}, {0xffb, 12}, {0x3fc, 10}, {0x1ffa, 13},
    /*  65 */ {0x21, 6}, {0x5d, 7}, {0x5e, 7}, {0x5f, 7}, {0x60, 7},
    /*  70 */ {0x61, 7}, {0x62, 7}, {0x63, 7}, {0x64, 7}, {0x65, 7},
    /*  75 */ {0x66, 7}, {0x67, 7}, {0x68, 7}, {0x69, 7}, {0x6a, 7},
    /*  80 */ {0x6b, 7}, {0x6c, 7}, {0x6d, 7}, {0x6e, 7}, {0x6f, 7},
    /*  85 */ {0x70, 7}, {0x71, 7}, {0x72, 7}, {0xfc, 8}, {0x73, 7},
    /*  90 */ {0xfd, 8}, {0x1ffb, 13}, {0x7fff0, 19}, {0x1ffc, 13}, {0x3ffc, 14},
    /*  95 */ {0x22, 6}, {0x7ffd, 15}, {0x3, 5}, {0x23, 6}, {0x4, 5},
    /* 100 */ {0x24, 6}, {0x5, 5}, {0x25, 6}, {0x26, 6}, {0x27, 6},
    /* 105 */ {0x6, 5}, {0x74, 7}, {0x75, 7}, {0x28, 6}, {0x29, 6},
    /* 110 */ {0x2a, 6}, {0x7, 5}, {0x2b, 6}, {0x76, 7}, {0x2c, 6},
    /* 115 */ {0x8, 5}, {0x9, 5}, {0x2d, 6}, {0x77, 7}, {0x78, 7},
    /* 120 */ {0x79, 7}, {0x7a, 7}, {0x7b, 7}, {0x7ffe, 15}, {0x7fc, 11},
    /* 125 */ {0x3ffd, 14}, {0x1ffd, 13}, {0xffffffc, 28}, {0xfffe6, 20}, {0x3fffd2, 22},
    /* 130 */ {0xfffe7, 20}, {0xfffe8, 20}, {0x3fffd3, 22}, {0x3fffd4, 22}, {0x3fffd5, 22},
    /* 135 */ {0x7fffd9, 23}, {0x3fffd6, 22}, {0x7fffda, 23}, {0x7fffdb, 23}, {0x7fffdc, 23},
    /* 140 */ {0x7fffdd, 23}, {0x7fffde, 23}, {0xffffeb, 24}, {0x7fffdf, 23}, {0xffffec, 24},
    /* 145 */ {0xffffed, 24}, {0x3fffd7, 22}, {0x7fffe0, 23}, {0xffffee, 24}, {0x7fffe1, 23},
    /* 150 */ {0x7fffe2, 23}, {0x7fffe3, 23}, {0x7fffe4, 23}, {0x1fffdc, 21}, {0x3fffd8, 22},
    /* 155 */ {0x7fffe5, 23}, {0x3fffd9, 22}, {0x7fffe6, 23}, {0x7fffe7, 23}, {0xffffef, 24},
    /* 160 */ {0x3fffda, 22}, {0x1fffdd, 21}, {0xfffe9, 20}, {0x3fffdb, 22}, {0x3fffdc, 22},
    /* 165 */ {0x7fffe8, 23}, {0x7fffe9, 23}, {0x1fffde, 21}, {0x7fffea, 23}, {0x3fffdd, 22},
    /* 170 */ {0x3fffde, 22}, {0xfffff0, 24}, {0x1fffdf, 21}, {0x3fffdf, 22}, {0x7fffeb, 23},
    /* 175 */ {0x7fffec, 23}, {0x1fffe0, 21}, {0x1fffe1, 21}, {0x3fffe0, 22}, {0x1fffe2, 21},
    /* 180 */ {0x7fffed, 23}, {0x3fffe1, 22}, {0x7fffee, 23}, {0x7fffef, 23}, {0xfffea, 20},
    /* 185 */ {0x3fffe2, 22}, {0x3fffe3, 22}, {0x3fffe4, 22}, {0x7ffff0, 23}, {0x3fffe5, 22},
    /* 190 */ {0x3fffe6, 22}, {0x7ffff1, 23}, {0x3ffffe0, 26}, {0x3ffffe1, 26}, {0xfffeb, 20},
    /* 195 */ {0x7fff1, 19}, {0x3fffe7, 22}, {0x7ffff2, 23}, {0x3fffe8, 22}, {0x1ffffec, 25},
    /* 200 */ {0x3ffffe2, 26}, {0x3ffffe3, 26}, {0x3ffffe4, 26}, {0x7ffffde, 27}, {0x7ffffdf, 27},
    /* 205 */ {0x3ffffe5, 26}, {0xfffff1, 24}, {0x1ffffed, 25}, {0x7fff2, 19}, {0x1fffe3, 21},
    /* 210 */ {0x3ffffe6, 26}, {0x7ffffe0, 27}, {0x7ffffe1, 27}, {0x3ffffe7, 26}, {0x7ffffe2, 27},
    /* 215 */ {0xfffff2, 24}, {0x1fffe4, 21}, {0x1fffe5, 21}, {0x3ffffe8, 26}, {0x3ffffe9, 26},
    /* 220 */ {0xffffffd, 28}, {0x7ffffe3, 27}, {0x7ffffe4, 27}, {0x7ffffe5, 27}, {0xfffec, 20},
    /* 225 */ {0xfffff3, 24}, {0xfffed, 20}, {0x1fffe6, 21}, {0x3fffe9, 22}, {0x1fffe7, 21},
    /* 230 */ {0x1fffe8, 21}, {0x7ffff3, 23}, {0x3fffea, 22}, {0x3fffeb, 22}, {0x1ffffee, 25},
    /* 235 */ {0x1ffffef, 25}, {0xfffff4, 24}, {0xfffff5, 24}, {0x3ffffea, 26}, {0x7ffff4, 23},
    /* 240 */ {0x3ffffeb, 26}, {0x7ffffe6, 27}, {0x3ffffec, 26}, {0x3ffffed, 26}, {0x7ffffe7, 27},
    /* 245 */ {0x7ffffe8, 27}, {0x7ffffe9, 27}, {0x7ffffea, 27}, {0x7ffffeb, 27}, {0xffffffe, 28},
    /* 250 */ {0x7ffffec, 27}, {0x7ffffed, 27}, {0x7ffffee, 27}, {0x7ffffef, 27}, {0x7fffff0, 27},
    /* 255 */ {0x3ffffee, 26}, {0x3fffffff, 30},
};

/* The symbols in canonical order (by code length, then value): the codes of one length are
 * consecutive integers, the first of each length given in huff_lens. */
static const uint16_t huff_syms[257] = {
    48, 49, 50, 97, 99, 101, 105, 111, 115, 116, 32, 37, 45, 46, 47, 51, 52, 53, 54, 55, 56, 57,
    61, 65, 95, 98, 100, 102, 103, 104, 108, 109, 110, 112, 114, 117, 58, 66, 67, 68, 69, 70,
    71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 89, 106, 107, 113, 118,
    119, 120, 121, 122, 38, 42, 44, 59, 88, 90, 33, 34, 40, 41, 63, 39, 43, 124, 35, 62, 0, 36,
    64, 91, 93, 126, 94, 125, 60, 96, 123, 92, 195, 208, 128, 130, 131, 162, 184, 194, 224, 226,
    153, 161, 167, 172, 176, 177, 179, 209, 216, 217, 227, 229, 230, 129, 132, 133, 134, 136,
    146, 154, 156, 160, 163, 164, 169, 170, 173, 178, 181, 185, 186, 187, 189, 190, 196, 198,
    228, 232, 233, 1, 135, 137, 138, 139, 140, 141, 143, 147, 149, 150, 151, 152, 155, 157, 158,
    165, 166, 168, 174, 175, 180, 182, 183, 188, 191, 197, 231, 239, 9, 142, 144, 145, 148, 159,
    171, 206, 215, 225, 236, 237, 199, 207, 234, 235, 192, 193, 200, 201, 202, 205, 210, 213,
    218, 219, 238, 240, 242, 243, 255, 203, 204, 211, 212, 214, 221, 222, 223, 241, 244, 245,
    246, 247, 248, 250, 251, 252, 253, 254, 2, 3, 4, 5, 6, 7, 8, 11, 12, 14, 15, 16, 17, 18, 19,
    20, 21, 23, 24, 25, 26, 27, 28, 29, 30, 31, 127, 220, 249, 10, 13, 22, 256,
};

/* Per code length: the first code past this length's codes, left-aligned to 32 bits (a
 * 32-bit window below it holds a code of this length or shorter), the first code, the index
 * of its symbol in huff_syms, and the length. */
static const struct huff_len huff_lens[] = {
    {0x50000000ull, 0x0, 0, 5},
    {0xb8000000ull, 0x14, 10, 6},
    {0xf8000000ull, 0x5c, 36, 7},
    {0xfe000000ull, 0xf8, 68, 8},
    {0xff400000ull, 0x3f8, 74, 10},
    {0xffa00000ull, 0x7fa, 79, 11},
    {0xffc00000ull, 0xffa, 82, 12},
    {0xfff00000ull, 0x1ff8, 84, 13},
    {0xfff80000ull, 0x3ffc, 90, 14},
    {0xfffe0000ull, 0x7ffc, 92, 15},
    {0xfffe6000ull, 0x7fff0, 95, 19},
    {0xfffee000ull, 0xfffe6, 98, 20},
    {0xffff4800ull, 0x1fffdc, 106, 21},
    {0xffffb000ull, 0x3fffd2, 119, 22},
    {0xffffea00ull, 0x7fffd8, 145, 23},
    {0xfffff600ull, 0xffffea, 174, 24},
    {0xfffff800ull, 0x1ffffec, 186, 25},
    {0xfffffbc0ull, 0x3ffffe0, 190, 26},
    {0xfffffe20ull, 0x7ffffde, 205, 27},
    {0xfffffff0ull, 0xfffffe2, 224, 28},
    {0x100000000ull, 0x3ffffffc, 253, 30},
};
/* clang-format on */

#define HUFF_EOS 256

size_t vega__hc_huff_len(const uint8_t *s, size_t len)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < len; i++)
        bits += huff_codes[s[i]].bits;
    return (size_t)((bits + 7) / 8);
}

size_t vega__hc_huff_encode(uint8_t *out, const uint8_t *s, size_t len)
{
    /* acc keeps fewer than 8 pending bits between symbols, so at most 37 bits matter. */
    uint64_t acc = 0;
    unsigned n = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const struct huff_code *c = &huff_codes[s[i]];
        acc = acc << c->bits | c->code;
        n += c->bits;
        while (n >= 8) {
            n -= 8;
            out[o++] = (uint8_t)(acc >> n);
        }
    }
    /* RFC 7541 §5.2: padding "corresponding to the most significant bits of the code for the
     * EOS symbol" (ones). */
    if (n)
        out[o++] = (uint8_t)(acc << (8 - n) | (0xffu >> n));
    return o;
}

vega_ssize vega__hc_huff_decode(uint8_t *out, size_t cap, const uint8_t *in, size_t len)
{
    /* win holds n unread bits, left-aligned; it is refilled a byte at a time to at least 57 bits
     * while input remains, so a whole code (<= 30 bits) is always in view but at the end. */
    uint64_t win = 0;
    unsigned n = 0;
    size_t i = 0, o = 0;
    for (;;) {
        while (n <= 56 && i < len) {
            win |= (uint64_t)in[i++] << (56 - n);
            n += 8;
        }
        if (n == 0)
            break;
        uint32_t x = (uint32_t)(win >> 32);
        size_t k = 0;
        while (x >= huff_lens[k].limit)
            k++;
        unsigned bits = huff_lens[k].bits;
        if (bits > n) {
            /* The end: what is left must be padding. RFC 7541 §5.2: "A padding strictly longer
             * than 7 bits MUST be treated as a decoding error. A padding not corresponding to
             * the most significant bits of the code for the EOS symbol MUST be treated as a
             * decoding error." */
            uint64_t mask = ~0ull << (64 - n);
            if (n > 7 || (win & mask) != mask)
                return VEGA_ERR_PROTO;
            break;
        }
        unsigned sym = huff_syms[huff_lens[k].index + ((x >> (32 - bits)) - huff_lens[k].first)];
        /* "A Huffman-encoded string literal containing the EOS symbol MUST be treated as a
         * decoding error." */
        if (sym == HUFF_EOS)
            return VEGA_ERR_PROTO;
        if (o >= cap)
            return VEGA_ERR_NOBUF;
        out[o++] = (uint8_t)sym;
        win <<= bits;
        n -= bits;
    }
    return (vega_ssize)o;
}

/* ---- string literals (RFC 7541 §5.2) ------------------------------------------------------ */

vega_ssize vega__hc_str_decode(const uint8_t *in, size_t len, unsigned prefix_bits, vega__hc_str *s)
{
    VEGA_ASSERT(prefix_bits >= 1 && prefix_bits <= 7);
    uint64_t n;
    s->ptr = NULL;
    s->len = 0;
    s->huffman = false;
    vega_ssize k = vega__hc_int_decode(in, len, prefix_bits, &n);
    if (k <= 0)
        return k;
    if (n > SIZE_MAX)
        return VEGA_ERR_PROTO;
    s->len = (size_t)n;
    s->huffman = (in[0] >> prefix_bits) & 1;
    if (!vega__fits((size_t)k, s->len, len))
        return 0;
    s->ptr = in + k;
    return (vega_ssize)((size_t)k + s->len);
}

size_t vega__hc_str_len(const uint8_t *s, size_t len, unsigned prefix_bits, bool huffman)
{
    size_t h = huffman ? vega__hc_huff_len(s, len) : len;
    size_t n = h < len ? h : len;
    return vega__hc_int_len(n, prefix_bits) + n;
}

size_t vega__hc_str_encode(uint8_t *out, size_t cap, uint8_t first, unsigned prefix_bits,
                           const uint8_t *s, size_t len, bool huffman)
{
    VEGA_ASSERT(prefix_bits >= 1 && prefix_bits <= 7);
    size_t h = huffman ? vega__hc_huff_len(s, len) : len;
    bool use_h = h < len;
    size_t n = use_h ? h : len;
    uint8_t hbit = (uint8_t)(1u << prefix_bits);
    uint8_t f = (uint8_t)((first & ~(hbit | (hbit - 1))) | (use_h ? hbit : 0));
    size_t k = vega__hc_int_encode(out, cap, f, prefix_bits, n);
    if (k == 0 || !vega__fits(k, n, cap))
        return 0;
    if (use_h)
        vega__hc_huff_encode(out + k, s, len);
    else if (len)
        memcpy(out + k, s, len);
    return k + n;
}
