/* SPDX-License-Identifier: MIT */
/* The decompressor: the output limit, end-of-stream and truncation rules, concatenated gzip
 * members and zstd frames, and sticky errors around the codec backends. */
#include <limits.h>
#include <string.h>

#include "compress_int.h"

int vega_decompressor_new_versioned(vega_decompressor **out, vega_compress_kind kind,
                                    uint64_t limit, const vega_compress_opts *opts,
                                    int opts_version)
{
    if (opts_version != VEGA_COMPRESS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out)
        return -EINVAL;
    *out = NULL;
    struct vega__cz_mem mem;
    if (kind < VEGA_COMPRESS_GZIP || kind > VEGA_COMPRESS_IDENTITY ||
        vega__cz_mem_init(&mem, opts) < 0)
        return -EINVAL;
    unsigned wlog = opts ? opts->window_log : 0;
    vega_decompressor *d = vega__cz_alloc(&mem, sizeof(*d));
    if (!d)
        return -ENOMEM;
    memset(d, 0, sizeof(*d));
    d->mem = mem;
    d->kind = kind;
    d->limit = limit ? limit : VEGA_DECOMPRESS_DEFAULT_LIMIT;
    d->at_start = true;
    int r = 0;
    switch (kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        r = vega__cz_zlib_dec_init(d);
        break;
    case VEGA_COMPRESS_BROTLI:
        r = vega__cz_brotli_dec_init(d);
        break;
    case VEGA_COMPRESS_ZSTD:
        r = vega__cz_zstd_dec_init(d, wlog);
        break;
    case VEGA_COMPRESS_IDENTITY:
        break;
    }
    if (r < 0) {
        vega__cz_free(&mem, d);
        return r;
    }
    *out = d;
    return 0;
}

void vega_decompressor_free(vega_decompressor *d)
{
    if (!d)
        return;
    switch (d->kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        vega__cz_zlib_dec_fini(d);
        break;
    case VEGA_COMPRESS_BROTLI:
        vega__cz_brotli_dec_fini(d);
        break;
    case VEGA_COMPRESS_ZSTD:
        vega__cz_zstd_dec_fini(d);
        break;
    case VEGA_COMPRESS_IDENTITY:
        break;
    }
    struct vega__cz_mem mem = d->mem;
    vega__cz_free(&mem, d);
}

static vega_ssize step(vega_decompressor *d, const uint8_t *in, size_t in_len, size_t *consumed,
                       uint8_t *out, size_t cap, bool *ended)
{
    switch (d->kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        return vega__cz_zlib_dec_step(d, in, in_len, consumed, out, cap, ended);
    case VEGA_COMPRESS_BROTLI:
        return vega__cz_brotli_dec_step(d, in, in_len, consumed, out, cap, ended);
    case VEGA_COMPRESS_ZSTD:
        return vega__cz_zstd_dec_step(d, in, in_len, consumed, out, cap, ended);
    case VEGA_COMPRESS_IDENTITY:
        break;
    }
    size_t n = VEGA__MIN(in_len, cap);
    if (n)
        memcpy(out, in, n);
    *consumed = n;
    *ended = false;
    return (vega_ssize)n;
}

/* Whether b can start a gzip member (RFC 1952 section 2.3.1: ID1 = 31) or a zstd frame
 * (RFC 8878 section 3.1: magic 0xFD2FB528, or a skippable frame's 0x184D2A5?, both little
 * endian). Checked on the first byte so that one byte of garbage after the end is reported as
 * such, not as a truncated member. Other kinds: always. */
static bool can_start(vega_compress_kind kind, uint8_t b)
{
    if (kind == VEGA_COMPRESS_GZIP)
        return b == 0x1f;
    if (kind == VEGA_COMPRESS_ZSTD)
        return b == 0x28 || (b & 0xf0) == 0x50;
    return true;
}

/* The codec loop of one call. Returns the bytes made or a negative code; *ci is set. */
static vega_ssize run(vega_decompressor *d, const uint8_t *in, size_t in_len, size_t *ci,
                      uint8_t *out, size_t room)
{
    size_t o = 0;
    *ci = 0;
    while (o < room) {
        if (d->done && *ci == in_len)
            break;
        if (d->at_start && *ci < in_len) {
            if (!can_start(d->kind, in[*ci]))
                return VEGA_ERR_PROTO;
            d->at_start = false;
        }
        if (d->done) {
            /* Input after the end: another gzip member or zstd frame, or trailing garbage.
             * RFC 1952 section 2.2: "A gzip file consists of a series of members". */
            if (d->kind == VEGA_COMPRESS_GZIP) {
                int r = vega__cz_zlib_dec_restart(d);
                if (r < 0)
                    return r;
            } else if (d->kind != VEGA_COMPRESS_ZSTD) {
                return VEGA_ERR_PROTO;
            }
            d->done = false;
        }
        size_t took = 0;
        bool ended = false;
        vega_ssize n = step(d, in + *ci, in_len - *ci, &took, out + o, room - o, &ended);
        if (n < 0)
            return n;
        *ci += took;
        o += (size_t)n;
        if (ended) {
            d->done = true;
            d->at_start = true;
            continue;
        }
        if (*ci == in_len || (took == 0 && n == 0))
            break;
    }
    return (vega_ssize)o;
}

vega_ssize vega_decompressor_write(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                   size_t *consumed, uint8_t *out, size_t out_cap,
                                   vega_compress_flush flush)
{
    size_t dummy;
    if (!consumed)
        consumed = &dummy;
    *consumed = 0;
    if (!d || (!in && in_len) || (!out && out_cap) || flush < VEGA_COMPRESS_FLUSH_NONE ||
        flush > VEGA_COMPRESS_FLUSH_FINISH)
        return -EINVAL;
    if (d->err)
        return d->err;
    if (out_cap == 0)
        return VEGA_ERR_NOBUF;
    if (out_cap > SSIZE_MAX)
        out_cap = SSIZE_MAX;
    if (!in)
        in = (const uint8_t *)"";

    /* Room for one byte beyond the limit, so that exceeding it is seen at once. */
    uint64_t left = d->limit - d->total; /* total <= limit always */
    size_t room = out_cap;
    if (left < (uint64_t)room - 1)
        room = (size_t)left + 1;

    size_t ci = 0;
    vega_ssize n = run(d, in, in_len, &ci, out, room);
    int err = 0;
    if (n < 0)
        err = (int)n;
    else if ((uint64_t)n > left)
        err = -EFBIG;
    else if ((size_t)n < room && ci < in_len && VEGA_NEVER(true))
        err = VEGA_ERR_INTERNAL; /* the loop rule promises all input below out_cap */
    else if (flush == VEGA_COMPRESS_FLUSH_FINISH && ci == in_len && (size_t)n < room) {
        /* The input ended; is the stream complete? */
        if (d->kind == VEGA_COMPRESS_IDENTITY)
            d->done = true;
        else if (!d->done)
            err = -ENODATA;
    }
    if (err) {
        d->err = err;
        return err;
    }
    d->total += (uint64_t)n;
    *consumed = ci;
    return n;
}

bool vega_decompressor_is_done(const vega_decompressor *d)
{
    return d && d->done;
}

uint64_t vega_decompressor_get_total_out(const vega_decompressor *d)
{
    return d ? d->total : 0;
}
