/* SPDX-License-Identifier: MIT */
/* One-shot compression and decompression into a malloc'd buffer of bounded size. */
#include <stdlib.h>
#include <string.h>

#include "compress_int.h"

/* Grows *buf (malloc'd, *cap bytes) towards max, at least doubling. Returns 0 or -ENOMEM. */
static int grow(uint8_t **buf, size_t *cap, size_t max)
{
    size_t n = *cap > max / 2 ? max : *cap * 2;
    if (n <= *cap)
        return 0;
    uint8_t *p = realloc(*buf, n);
    if (!p)
        return -ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

static size_t first_cap(size_t in_len, size_t max)
{
    size_t c = in_len < SIZE_MAX / 4 ? in_len * 4 : SIZE_MAX;
    c = VEGA__MAX(c, (size_t)4096);
    return VEGA__MIN(c, max);
}

int vega_compress_buffer(vega_compress_kind kind, int level, const void *in, size_t in_len,
                         size_t max_out, uint8_t **out, size_t *out_len)
{
    if (!out || !out_len)
        return -EINVAL;
    *out = NULL;
    *out_len = 0;
    if (!in && in_len)
        return -EINVAL;
    if (!in)
        in = "";
    vega_compressor *c;
    int r = vega_compressor_new(&c, kind, level, NULL);
    if (r < 0)
        return r;
    /* One byte beyond max_out tells "exactly max_out" from "more". */
    size_t max = max_out == 0 || max_out == SIZE_MAX ? SIZE_MAX : max_out + 1;
    size_t cap = in_len < SIZE_MAX / 2 ? in_len + in_len / 8 + 256 : SIZE_MAX, len = 0, pos = 0;
    cap = VEGA__MIN(cap, max);
    uint8_t *buf = malloc(cap);
    if (!buf) {
        vega_compressor_free(c);
        return -ENOMEM;
    }
    for (;;) {
        size_t took;
        vega_ssize n = vega_compressor_write(c, (const uint8_t *)in + pos, in_len - pos, &took,
                                             buf + len, cap - len, VEGA_COMPRESS_FLUSH_FINISH);
        if (n < 0) {
            r = (int)n;
            break;
        }
        pos += took;
        len += (size_t)n;
        if (max_out && len > max_out) {
            r = -EFBIG;
            break;
        }
        if (vega_compressor_is_done(c))
            break;
        if (len == cap && (r = grow(&buf, &cap, max)) < 0)
            break;
    }
    vega_compressor_free(c);
    if (r < 0) {
        free(buf);
        return r;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

int vega_decompress_buffer(vega_compress_kind kind, const void *in, size_t in_len, size_t max_out,
                           uint8_t **out, size_t *out_len)
{
    if (!out || !out_len)
        return -EINVAL;
    *out = NULL;
    *out_len = 0;
    if (!in && in_len)
        return -EINVAL;
    if (!in)
        in = "";
    if (max_out == 0)
        max_out = VEGA_DECOMPRESS_DEFAULT_LIMIT;
    vega_decompressor *d;
    int r = vega_decompressor_new(&d, kind, max_out, NULL);
    if (r < 0)
        return r;
    /* The decompressor stops at the limit; it needs at most one byte beyond it. */
    size_t max = max_out == SIZE_MAX ? SIZE_MAX : max_out + 1;
    size_t cap = first_cap(in_len, max), len = 0, pos = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        vega_decompressor_free(d);
        return -ENOMEM;
    }
    for (;;) {
        size_t took;
        vega_ssize n = vega_decompressor_write(d, (const uint8_t *)in + pos, in_len - pos, &took,
                                               buf + len, cap - len, VEGA_COMPRESS_FLUSH_FINISH);
        if (n < 0) {
            r = (int)n;
            break;
        }
        pos += took;
        len += (size_t)n;
        if (len < cap)
            break; /* FINISH below out_cap: the whole stream was read (or an error came) */
        if ((r = grow(&buf, &cap, max)) < 0)
            break;
        if (len == cap && VEGA_NEVER(true)) {
            r = VEGA_ERR_INTERNAL;
            break;
        }
    }
    vega_decompressor_free(d);
    if (r < 0) {
        free(buf);
        return r;
    }
    *out = buf;
    *out_len = len;
    return 0;
}
