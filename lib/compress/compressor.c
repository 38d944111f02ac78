/* SPDX-License-Identifier: MIT */
/* The compressor: argument checks, the flush contract and sticky errors around the codec
 * backends; identity is a bounded copy. */
#include <limits.h>
#include <string.h>

#include "compress_int.h"

static bool kind_ok(vega_compress_kind kind)
{
    return kind >= VEGA_COMPRESS_GZIP && kind <= VEGA_COMPRESS_IDENTITY;
}

int vega_compressor_new_versioned(vega_compressor **out, vega_compress_kind kind, int level,
                                  const vega_compress_opts *opts, int opts_version)
{
    if (opts_version != VEGA_COMPRESS_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    if (!out)
        return -EINVAL;
    *out = NULL;
    struct vega__cz_mem mem;
    if (!kind_ok(kind) || vega__cz_mem_init(&mem, opts) < 0)
        return -EINVAL;
    unsigned wlog = opts ? opts->window_log : 0;
    vega_compressor *c = vega__cz_alloc(&mem, sizeof(*c));
    if (!c)
        return -ENOMEM;
    memset(c, 0, sizeof(*c));
    c->mem = mem;
    c->kind = kind;
    int r = 0;
    switch (kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        r = vega__cz_zlib_enc_init(c, level, wlog);
        break;
    case VEGA_COMPRESS_BROTLI:
        r = vega__cz_brotli_enc_init(c, level, wlog);
        break;
    case VEGA_COMPRESS_ZSTD:
        r = vega__cz_zstd_enc_init(c, level, wlog);
        break;
    case VEGA_COMPRESS_IDENTITY:
        break;
    }
    if (r < 0) {
        vega__cz_free(&mem, c);
        return r;
    }
    *out = c;
    return 0;
}

void vega_compressor_free(vega_compressor *c)
{
    if (!c)
        return;
    switch (c->kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        vega__cz_zlib_enc_fini(c);
        break;
    case VEGA_COMPRESS_BROTLI:
        vega__cz_brotli_enc_fini(c);
        break;
    case VEGA_COMPRESS_ZSTD:
        vega__cz_zstd_enc_fini(c);
        break;
    case VEGA_COMPRESS_IDENTITY:
        break;
    }
    struct vega__cz_mem mem = c->mem;
    vega__cz_free(&mem, c);
}

static vega_ssize identity_step(const uint8_t *in, size_t in_len, size_t *consumed, uint8_t *out,
                                size_t cap, bool *complete)
{
    size_t n = VEGA__MIN(in_len, cap);
    if (n)
        memcpy(out, in, n);
    *consumed = n;
    *complete = n == in_len;
    return (vega_ssize)n;
}

vega_ssize vega_compressor_write(vega_compressor *c, const uint8_t *in, size_t in_len,
                                 size_t *consumed, uint8_t *out, size_t out_cap,
                                 vega_compress_flush flush)
{
    size_t dummy;
    if (!consumed)
        consumed = &dummy;
    *consumed = 0;
    if (!c || (!in && in_len) || (!out && out_cap) || flush < VEGA_COMPRESS_FLUSH_NONE ||
        flush > VEGA_COMPRESS_FLUSH_FINISH)
        return -EINVAL;
    if (c->err)
        return c->err;
    if (out_cap == 0)
        return VEGA_ERR_NOBUF;
    if (c->done)
        return in_len ? VEGA_ERR_CLOSED : 0;
    /* A flush that filled the buffer continues with the same flush and the same input. */
    if (c->pending != VEGA_COMPRESS_FLUSH_NONE && (flush != c->pending || in_len != c->pending_in))
        return -EINVAL;
    if (out_cap > SSIZE_MAX)
        out_cap = SSIZE_MAX;
    if (!in)
        in = (const uint8_t *)""; /* no arithmetic on NULL below */

    bool complete = false;
    vega_ssize n = 0;
    switch (c->kind) {
    case VEGA_COMPRESS_GZIP:
    case VEGA_COMPRESS_DEFLATE:
        n = vega__cz_zlib_enc_step(c, in, in_len, consumed, out, out_cap, flush, &complete);
        break;
    case VEGA_COMPRESS_BROTLI:
        n = vega__cz_brotli_enc_step(c, in, in_len, consumed, out, out_cap, flush, &complete);
        break;
    case VEGA_COMPRESS_ZSTD:
        n = vega__cz_zstd_enc_step(c, in, in_len, consumed, out, out_cap, flush, &complete);
        break;
    case VEGA_COMPRESS_IDENTITY:
        n = identity_step(in, in_len, consumed, out, out_cap, &complete);
        break;
    }
    if (n >= 0 && (size_t)n < out_cap && VEGA_NEVER(!complete))
        n = VEGA_ERR_INTERNAL; /* the loop rule promises completion below out_cap */
    if (n < 0) {
        *consumed = 0;
        c->err = n == -EINVAL ? VEGA_ERR_INTERNAL : (int)n;
        return c->err;
    }
    if (complete) {
        c->pending = VEGA_COMPRESS_FLUSH_NONE;
        if (flush == VEGA_COMPRESS_FLUSH_FINISH)
            c->done = true;
    } else if (flush != VEGA_COMPRESS_FLUSH_NONE) {
        c->pending = flush;
        c->pending_in = in_len - *consumed;
    }
    return n;
}

bool vega_compressor_is_done(const vega_compressor *c)
{
    return c && c->done;
}
