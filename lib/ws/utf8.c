/* SPDX-License-Identifier: MIT */
/* Incremental UTF-8 validation for text messages (RFC 6455 §8.1, RFC 3629 §4) that fails on the
 * first byte that cannot continue a valid sequence, across fragments and chunks; and masking
 * (RFC 6455 §5.3). */
#include <string.h>

#include "ws_int.h"

/* The state packs the continuation bytes still needed (bits 0-7) and the range the next one
 * must fall in (lo: bits 8-15, hi: bits 16-23). RFC 3629 §4 restricts the second byte after
 * E0 (A0..BF: no overlong), ED (80..9F: no surrogates), F0 (90..BF: no overlong) and F4
 * (80..8F: nothing above U+10FFFF). */
static inline uint32_t need(uint32_t n, uint32_t lo, uint32_t hi)
{
    return n | lo << 8 | hi << 16;
}

bool vega__ws_utf8_check(uint32_t *state, const uint8_t *p, size_t len)
{
    uint32_t s = *state;
    size_t i = 0;
    while (i < len) {
        if (s == 0) {
            /* ASCII runs, eight bytes at a time. */
            while (i + 8 <= len) {
                uint64_t w;
                memcpy(&w, p + i, 8);
                if (w & 0x8080808080808080ull)
                    break;
                i += 8;
            }
            if (i == len)
                break;
            uint8_t b = p[i++];
            if (b < 0x80)
                continue;
            if (b >= 0xc2 && b <= 0xdf)
                s = need(1, 0x80, 0xbf);
            else if (b == 0xe0)
                s = need(2, 0xa0, 0xbf);
            else if (b == 0xed)
                s = need(2, 0x80, 0x9f);
            else if (b >= 0xe1 && b <= 0xef)
                s = need(2, 0x80, 0xbf);
            else if (b == 0xf0)
                s = need(3, 0x90, 0xbf);
            else if (b >= 0xf1 && b <= 0xf3)
                s = need(3, 0x80, 0xbf);
            else if (b == 0xf4)
                s = need(3, 0x80, 0x8f);
            else
                return false; /* 80..C1 (stray continuation, overlong lead), F5..FF */
            continue;
        }
        uint8_t b = p[i++];
        if (b < ((s >> 8) & 0xff) || b > ((s >> 16) & 0xff))
            return false;
        uint32_t n = (s & 0xff) - 1;
        s = n ? need(n, 0x80, 0xbf) : 0;
    }
    *state = s;
    return true;
}

void vega__ws_mask(uint8_t *p, size_t len, const uint8_t mask[4], size_t off)
{
    uint8_t m8[8];
    for (size_t k = 0; k < 8; k++)
        m8[k] = mask[(off + k) & 3];
    uint64_t m;
    memcpy(&m, m8, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        w ^= m;
        memcpy(p + i, &w, 8);
    }
    for (; i < len; i++)
        p[i] ^= m8[i & 7];
}
