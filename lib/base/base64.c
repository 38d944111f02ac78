/* SPDX-License-Identifier: MIT */
/* Base64 and base64url (RFC 4648 §4, §5). */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <vega/base64.h>

#define KNOWN_FLAGS (VEGA_BASE64_URL | VEGA_BASE64_NOPAD | VEGA_BASE64_SPACE)

static const char std_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t vega_base64_encoded_len(size_t len, unsigned flags)
{
    size_t groups = len / 3 + (len % 3 != 0);
    if (groups > SIZE_MAX / 4)
        return SIZE_MAX;
    if (!(flags & VEGA_BASE64_NOPAD))
        return groups * 4;
    return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
}

vega_ssize vega_base64_encode(const void *in, size_t len, char *out, size_t cap, unsigned flags)
{
    if ((flags & ~(unsigned)KNOWN_FLAGS) || (len && (!in || !out)))
        return -EINVAL;
    size_t need = vega_base64_encoded_len(len, flags);
    if (need == SIZE_MAX || need > cap || need > (size_t)SSIZE_MAX)
        return VEGA_ERR_NOBUF;
    const char *abc = flags & VEGA_BASE64_URL ? url_alphabet : std_alphabet;
    const uint8_t *p = in;
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = abc[v >> 18];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        out[o++] = abc[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        out[o++] = abc[v >> 18];
        out[o++] = abc[v >> 12 & 63];
        if (i + 1 < len)
            out[o++] = abc[v >> 6 & 63];
        else if (!(flags & VEGA_BASE64_NOPAD))
            out[o++] = '=';
        if (!(flags & VEGA_BASE64_NOPAD))
            out[o++] = '=';
    }
    return (vega_ssize)o;
}

/* The value of c in the alphabet, or -1. */
static int value(unsigned char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

static bool blank(unsigned char c)
{
    return c == '\r' || c == '\n' || c == ' ' || c == '\t';
}

vega_ssize vega_base64_decode(const char *in, size_t len, void *out, size_t cap, unsigned flags)
{
    if ((flags & ~(unsigned)KNOWN_FLAGS) || (len && !in) || (cap && !out))
        return -EINVAL;
    bool url = flags & VEGA_BASE64_URL, space = flags & VEGA_BASE64_SPACE;
    uint8_t *o = out;
    size_t used = 0, chars = 0, pad = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (space && blank(c))
            continue;
        if (c == '=') {
            /* padding: after two or three characters of a group, then nothing but more '=' */
            if (chars % 4 < 2 || pad >= 2)
                return -EINVAL;
            pad++;
            chars++;
            continue;
        }
        int v = value(c, url);
        if (v < 0 || pad)
            return -EINVAL;
        acc = acc << 6 | (uint32_t)v;
        chars++;
        if (chars % 4 == 0) {
            if (used + 3 > cap)
                return VEGA_ERR_NOBUF;
            o[used++] = (uint8_t)(acc >> 16);
            o[used++] = (uint8_t)(acc >> 8);
            o[used++] = (uint8_t)acc;
            acc = 0;
        }
    }
    size_t tail = (chars - pad) % 4; /* data characters of the last, partial group */
    if (pad && (chars % 4 != 0 || tail + pad != 4))
        return -EINVAL; /* '=' that does not end a group of four */
    if (!pad && !(flags & VEGA_BASE64_NOPAD) && chars % 4 != 0)
        return -EINVAL;
    if (tail == 1)
        return -EINVAL; /* one character holds 6 bits: no byte */
    if (tail) {
        size_t n = tail - 1;
        if (used + n > cap)
            return VEGA_ERR_NOBUF;
        acc <<= 6 * (4 - tail);
        o[used++] = (uint8_t)(acc >> 16);
        if (n > 1)
            o[used++] = (uint8_t)(acc >> 8);
    }
    if (used > (size_t)SSIZE_MAX)
        return VEGA_ERR_NOBUF;
    return (vega_ssize)used;
}
