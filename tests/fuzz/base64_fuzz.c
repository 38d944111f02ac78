/* SPDX-License-Identifier: MIT */
/* libFuzzer target for lib/base/base64.c. The first byte picks the flags; the rest is decoded
 * with them, and what decodes must encode back to a text that decodes to the same bytes (the
 * same text when it was canonical: padded as the flags write it, no blanks, zero spare bits).
 * The input itself, encoded, must decode back to itself. Output never passes cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/base64.h>

#include "fuzz_target.h"

#define MAXN 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > MAXN)
        return 0;
    unsigned flags = data[0] & 7;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    static uint8_t dec[MAXN + 8], dec2[MAXN + 8];
    static char enc[MAXN * 2];
    size_t cap = (data[0] >> 3) & 1 ? n / 2 : sizeof dec - 8; /* a short buffer half the time */
    memset(dec + cap, 0xA5, 8);
    vega_ssize d = vega_base64_decode(in, n, dec, cap, flags);
    for (size_t i = 0; i < 8; i++)
        if (dec[cap + i] != 0xA5)
            abort(); /* wrote past cap */
    if (d >= 0) {
        if ((size_t)d > cap)
            abort();
        unsigned ef = flags & ~(unsigned)VEGA_BASE64_SPACE;
        vega_ssize e = vega_base64_encode(dec, (size_t)d, enc, sizeof enc, ef);
        if (e < 0 || (size_t)e != vega_base64_encoded_len((size_t)d, ef))
            abort();
        vega_ssize d2 = vega_base64_decode(enc, (size_t)e, dec2, sizeof dec2, ef);
        if (d2 != d || memcmp(dec, dec2, (size_t)d) != 0)
            abort();
    } else if (d != -22 /* -EINVAL */ && d != VEGA_ERR_NOBUF) {
        abort();
    }
    vega_ssize e = vega_base64_encode(in, n, enc, sizeof enc, flags & 3);
    if (e < 0)
        abort();
    vega_ssize d3 = vega_base64_decode(enc, (size_t)e, dec2, sizeof dec2, flags & 3);
    if (d3 != (vega_ssize)n || memcmp(dec2, in, n) != 0)
        abort();
    return 0;
}
