/* SPDX-License-Identifier: MIT */
/* gzip (RFC 1952) and deflate (zlib RFC 1950, raw RFC 1951) over zlib's streaming API. */
#include <limits.h>
#include <string.h>

#include "compress_int.h"

#define ZCHUNK(n) ((uInt)VEGA__MIN((size_t)(n), (size_t)UINT_MAX))

static int map_zerr(int zr)
{
    switch (zr) {
    case Z_MEM_ERROR:
        return -ENOMEM;
    case Z_DATA_ERROR:
    case Z_NEED_DICT:
        return VEGA_ERR_PROTO;
    default:
        return VEGA_ERR_INTERNAL;
    }
}

/* ---- encoder ------------------------------------------------------------------------------- */

int vega__cz_zlib_enc_init(vega_compressor *c, int level, unsigned window_log)
{
    if (level == VEGA_COMPRESS_LEVEL_DEFAULT)
        level = 6;
    if (level < 0 || level > 9)
        return -EINVAL;
    if (window_log == 0)
        window_log = 15;
    if (window_log < 9 || window_log > 15)
        return -EINVAL;
    z_stream *z = &c->u.zl.z;
    z->zalloc = vega__cz_zalloc;
    z->zfree = vega__cz_zfree;
    z->opaque = &c->mem;
    int bits = (int)window_log + (c->kind == VEGA_COMPRESS_GZIP ? 16 : 0);
    int zr = deflateInit2(z, level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY);
    return zr == Z_OK ? 0 : map_zerr(zr);
}

void vega__cz_zlib_enc_fini(vega_compressor *c)
{
    deflateEnd(&c->u.zl.z);
}

vega_ssize vega__cz_zlib_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap,
                                  vega_compress_flush flush, bool *complete)
{
    z_stream *z = &c->u.zl.z;
    size_t o = 0, ci = 0;
    bool flushed = false; /* a SYNC: deflate returned with room to spare after all input */
    *complete = false;
    for (;;) {
        /* Drain the staging buffer first: its bytes come before anything deflate makes. */
        if (c->u.zl.st_off < c->u.zl.st_len) {
            size_t k = VEGA__MIN(c->u.zl.st_len - c->u.zl.st_off, cap - o);
            memcpy(out + o, c->u.zl.stage + c->u.zl.st_off, k);
            c->u.zl.st_off += k;
            o += k;
            if (c->u.zl.st_off < c->u.zl.st_len)
                break;
        }
        if (c->u.zl.ended || (ci == in_len && (flush == VEGA_COMPRESS_FLUSH_NONE ||
                                               (flush == VEGA_COMPRESS_FLUSH_SYNC && flushed)))) {
            *complete = true;
            break;
        }
        if (o == cap)
            break;
        size_t room = cap - o;
        bool direct = room >= VEGA__CZ_STAGE;
        uint8_t *dst = direct ? out + o : c->u.zl.stage;
        uInt dcap = direct ? ZCHUNK(room) : VEGA__CZ_STAGE;
        uInt feed = ZCHUNK(in_len - ci);
        bool last = feed == in_len - ci;
        int zf = Z_NO_FLUSH;
        if (last && flush == VEGA_COMPRESS_FLUSH_SYNC)
            zf = Z_SYNC_FLUSH;
        else if (last && flush == VEGA_COMPRESS_FLUSH_FINISH)
            zf = Z_FINISH;
        z->next_in = (Bytef *)(uintptr_t)(in + ci);
        z->avail_in = feed;
        z->next_out = dst;
        z->avail_out = dcap;
        int zr = deflate(z, zf);
        size_t took = feed - z->avail_in, made = dcap - z->avail_out;
        ci += took;
        if (direct) {
            o += made;
        } else {
            c->u.zl.st_off = 0;
            c->u.zl.st_len = made;
        }
        if (zr == Z_STREAM_END) {
            c->u.zl.ended = true;
        } else if (zr == Z_BUF_ERROR) {
            /* No progress possible: only a repeated SYNC with nothing new to flush. */
            if (ci == in_len && zf == Z_SYNC_FLUSH)
                flushed = true;
            else if (VEGA_NEVER(true))
                return VEGA_ERR_INTERNAL;
        } else if (zr != Z_OK) {
            return map_zerr(zr);
        } else if (z->avail_out > 0 && ci == in_len && zf == Z_SYNC_FLUSH) {
            /* zlib: a flush is complete when deflate returns with output room left. */
            flushed = true;
        } else if (took == 0 && made == 0 && VEGA_NEVER(true)) {
            return VEGA_ERR_INTERNAL;
        }
    }
    *consumed = ci;
    return (vega_ssize)o;
}

/* ---- decoder ------------------------------------------------------------------------------- */

int vega__cz_zlib_dec_init(vega_decompressor *d)
{
    z_stream *z = &d->u.zl.z;
    z->zalloc = vega__cz_zalloc;
    z->zfree = vega__cz_zfree;
    z->opaque = &d->mem;
    /* gzip only (not zlib's auto-detection), so that anything after a member must be another
     * member; DEFLATE starts as zlib and may switch to raw once the header is seen. */
    int bits = d->kind == VEGA_COMPRESS_GZIP ? 16 + 15 : 15;
    int zr = inflateInit2(z, bits);
    return zr == Z_OK ? 0 : map_zerr(zr);
}

void vega__cz_zlib_dec_fini(vega_decompressor *d)
{
    inflateEnd(&d->u.zl.z);
}

int vega__cz_zlib_dec_restart(vega_decompressor *d)
{
    int zr = inflateReset(&d->u.zl.z);
    return zr == Z_OK ? 0 : map_zerr(zr);
}

/* RFC 1950 section 2.2: CM = 8, CINFO <= 7, and "the FCHECK value must be such that CMF and
 * FLG, when viewed as a 16-bit unsigned integer stored in MSB order (CMF*256 + FLG), is a
 * multiple of 31". Anything else is taken as raw deflate. */
static bool is_zlib_header(uint8_t cmf, uint8_t flg)
{
    return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((unsigned)cmf << 8 | flg) % 31 == 0;
}

/* DEFLATE: holds the first two bytes until the stream's wrapper is known. Returns how many
 * bytes of in it took, or a negative code. */
static vega_ssize deflate_sniff(vega_decompressor *d, const uint8_t *in, size_t in_len)
{
    size_t took = 0;
    while (d->u.zl.hdr_len < 2 && took < in_len)
        d->u.zl.hdr[d->u.zl.hdr_len++] = in[took++];
    if (d->u.zl.hdr_len < 2)
        return (vega_ssize)took;
    if (is_zlib_header(d->u.zl.hdr[0], d->u.zl.hdr[1])) {
        d->u.zl.mode = VEGA__CZ_DEFLATE_ZLIB;
    } else {
        d->u.zl.mode = VEGA__CZ_DEFLATE_RAW;
        int zr = inflateReset2(&d->u.zl.z, -15);
        if (zr != Z_OK)
            return map_zerr(zr);
    }
    return (vega_ssize)took;
}

/* One inflate run over src; updates *o and *ci. Returns 1 at the end of the stream, 0 when
 * it stopped (out full, input used up, no progress), or a negative code. */
static int inflate_run(z_stream *z, const uint8_t *src, size_t len, size_t *ci, uint8_t *out,
                       size_t cap, size_t *o)
{
    for (;;) {
        uInt feed = ZCHUNK(len - *ci), room = ZCHUNK(cap - *o);
        z->next_in = (Bytef *)(uintptr_t)(src + *ci);
        z->avail_in = feed;
        z->next_out = out + *o;
        z->avail_out = room;
        int zr = inflate(z, Z_NO_FLUSH);
        size_t took = feed - z->avail_in, made = room - z->avail_out;
        *ci += took;
        *o += made;
        if (zr == Z_STREAM_END)
            return 1;
        if (zr == Z_BUF_ERROR)
            return 0;
        if (zr != Z_OK)
            return map_zerr(zr);
        if (*o == cap || *ci == len || (took == 0 && made == 0))
            return 0;
    }
}

vega_ssize vega__cz_zlib_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap, bool *ended)
{
    size_t ci = 0, o = 0;
    *ended = false;
    if (d->kind == VEGA_COMPRESS_DEFLATE && d->u.zl.mode == VEGA__CZ_DEFLATE_UNKNOWN) {
        vega_ssize t = deflate_sniff(d, in, in_len);
        if (t < 0)
            return t;
        ci = (size_t)t;
        if (d->u.zl.mode == VEGA__CZ_DEFLATE_UNKNOWN) {
            *consumed = ci;
            return 0;
        }
    }
    if (d->u.zl.hdr_fed < d->u.zl.hdr_len) {
        /* Feed the held header bytes, then the rest of the input. */
        size_t hi = d->u.zl.hdr_fed;
        int r = inflate_run(&d->u.zl.z, d->u.zl.hdr, d->u.zl.hdr_len, &hi, out, cap, &o);
        d->u.zl.hdr_fed = (unsigned)hi;
        if (r < 0)
            return r;
        if (r == 1) {
            /* Two bytes can be a whole raw stream: 03 00 is an empty final fixed block. */
            if (d->u.zl.hdr_fed < d->u.zl.hdr_len)
                return VEGA_ERR_PROTO; /* a held byte after the end */
            *ended = true;
            *consumed = ci;
            return (vega_ssize)o;
        }
        if (d->u.zl.hdr_fed < d->u.zl.hdr_len) {
            *consumed = ci; /* out is full */
            return (vega_ssize)o;
        }
    }
    if (o < cap) {
        int r = inflate_run(&d->u.zl.z, in, in_len, &ci, out, cap, &o);
        if (r < 0)
            return r;
        *ended = r == 1;
    }
    *consumed = ci;
    return (vega_ssize)o;
}
