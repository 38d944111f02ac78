/* SPDX-License-Identifier: MIT */
/* zstd (RFC 8878) over the reference library's streaming API, with a bounded window. */
#include <string.h>

#include <zstd_errors.h>

#include "compress_int.h"

/* Levels accepted: zstd's fast negative levels down to -7, its regular levels up to 22. */
#define ZS_MIN_LEVEL (-7)
/* RFC 9659 section 3: "the window size ... MUST be limited to ... 8 MB"; levels above 19 would
 * pick larger windows, so without an explicit window_log the window is capped at this. */
#define ZS_HTTP_WINDOW_LOG 23

/* Decoder errors: the data's fault (VEGA_ERR_PROTO) unless it is memory, the window limit, or a
 * misuse of the API (a bug here). */
static int map_zserr(size_t r)
{
    switch (ZSTD_getErrorCode(r)) {
    case ZSTD_error_memory_allocation:
        return -ENOMEM;
    case ZSTD_error_frameParameter_windowTooLarge:
        return -EFBIG;
    case ZSTD_error_parameter_unsupported:
    case ZSTD_error_parameter_combination_unsupported:
    case ZSTD_error_parameter_outOfBound:
    case ZSTD_error_stabilityCondition_notRespected:
    case ZSTD_error_stage_wrong:
    case ZSTD_error_init_missing:
    case ZSTD_error_workSpace_tooSmall:
    case ZSTD_error_dstBuffer_null:
    case ZSTD_error_noForwardProgress_destFull:
    case ZSTD_error_noForwardProgress_inputEmpty:
        return VEGA_ERR_INTERNAL;
    default:
        return VEGA_ERR_PROTO;
    }
}

/* ---- encoder ------------------------------------------------------------------------------- */

int vega__cz_zstd_enc_init(vega_compressor *c, int level, unsigned window_log)
{
    if (level == VEGA_COMPRESS_LEVEL_DEFAULT)
        level = ZSTD_CLEVEL_DEFAULT;
    if (level < ZS_MIN_LEVEL || level > ZSTD_maxCLevel())
        return -EINVAL;
    if (window_log && (window_log < ZSTD_WINDOWLOG_MIN || window_log > 27))
        return -EINVAL;
    if (!window_log && level > 19)
        window_log = ZS_HTTP_WINDOW_LOG;
    ZSTD_customMem cm = {vega__cz_lalloc, vega__cz_lfree, &c->mem};
    c->u.zs = ZSTD_createCCtx_advanced(cm);
    if (!c->u.zs)
        return -ENOMEM;
    size_t r = ZSTD_CCtx_setParameter(c->u.zs, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r))
        r = ZSTD_CCtx_setParameter(c->u.zs, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r) && window_log)
        r = ZSTD_CCtx_setParameter(c->u.zs, ZSTD_c_windowLog, (int)window_log);
    if (ZSTD_isError(r)) {
        ZSTD_freeCCtx(c->u.zs);
        c->u.zs = NULL;
        return -EINVAL;
    }
    return 0;
}

void vega__cz_zstd_enc_fini(vega_compressor *c)
{
    ZSTD_freeCCtx(c->u.zs);
}

vega_ssize vega__cz_zstd_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap,
                                  vega_compress_flush flush, bool *complete)
{
    ZSTD_EndDirective e = ZSTD_e_continue;
    if (flush == VEGA_COMPRESS_FLUSH_SYNC)
        e = ZSTD_e_flush;
    else if (flush == VEGA_COMPRESS_FLUSH_FINISH)
        e = ZSTD_e_end;
    ZSTD_inBuffer ib = {in, in_len, 0};
    ZSTD_outBuffer ob = {out, cap, 0};
    *complete = false;
    if (e == ZSTD_e_continue && in_len == 0) {
        *complete = true;
        *consumed = 0;
        return 0;
    }
    while (ob.pos < ob.size) {
        size_t ip = ib.pos, op = ob.pos;
        size_t r = ZSTD_compressStream2(c->u.zs, &ob, &ib, e);
        if (ZSTD_isError(r))
            return map_zserr(r) == -ENOMEM ? -ENOMEM : VEGA_ERR_INTERNAL;
        /* e_continue: done once the input is taken; flush/end: once nothing remains. */
        if (ib.pos == ib.size && (e == ZSTD_e_continue || r == 0)) {
            *complete = true;
            break;
        }
        if (ip == ib.pos && op == ob.pos && VEGA_NEVER(true))
            return VEGA_ERR_INTERNAL;
    }
    *consumed = ib.pos;
    return (vega_ssize)ob.pos;
}

/* ---- decoder ------------------------------------------------------------------------------- */

int vega__cz_zstd_dec_init(vega_decompressor *d, unsigned window_log)
{
    if (window_log == 0)
        window_log = VEGA_DECOMPRESS_DEFAULT_ZSTD_WINDOW_LOG;
    if (window_log < ZSTD_WINDOWLOG_MIN || window_log > 31)
        return -EINVAL;
    ZSTD_customMem cm = {vega__cz_lalloc, vega__cz_lfree, &d->mem};
    d->u.zs.dctx = ZSTD_createDCtx_advanced(cm);
    if (!d->u.zs.dctx)
        return -ENOMEM;
    size_t r = ZSTD_DCtx_setParameter(d->u.zs.dctx, ZSTD_d_windowLogMax, (int)window_log);
    if (ZSTD_isError(r)) {
        ZSTD_freeDCtx(d->u.zs.dctx);
        d->u.zs.dctx = NULL;
        return -EINVAL;
    }
    return 0;
}

void vega__cz_zstd_dec_fini(vega_decompressor *d)
{
    ZSTD_freeDCtx(d->u.zs.dctx);
}

/* Keeps the first bytes of the frame being read, and reads its Frame_Content_Size once the
 * header is complete (RFC 8878 section 3.1.1.1). */
static void frame_header_track(vega_decompressor *d, const uint8_t *p, size_t n)
{
    if (d->u.zs.fh_done)
        return;
    size_t k = VEGA__MIN(n, sizeof d->u.zs.fh - d->u.zs.fh_len);
    memcpy(d->u.zs.fh + d->u.zs.fh_len, p, k);
    d->u.zs.fh_len += k;
    if (d->u.zs.fh_len < ZSTD_FRAMEHEADERSIZE_PREFIX(ZSTD_f_zstd1))
        return;
    size_t hs = ZSTD_frameHeaderSize(d->u.zs.fh, d->u.zs.fh_len);
    if (ZSTD_isError(hs) || hs > sizeof d->u.zs.fh) {
        d->u.zs.fh_done = true; /* the decoder reports what is wrong */
        return;
    }
    if (d->u.zs.fh_len < hs)
        return;
    unsigned long long fcs = ZSTD_getFrameContentSize(d->u.zs.fh, hs);
    d->u.zs.fcs = fcs == ZSTD_CONTENTSIZE_ERROR ? ZSTD_CONTENTSIZE_UNKNOWN : fcs;
    d->u.zs.fh_done = true;
}

vega_ssize vega__cz_zstd_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap, bool *ended)
{
    ZSTD_inBuffer ib = {in, in_len, 0};
    ZSTD_outBuffer ob = {out, cap, 0};
    *ended = false;
    for (;;) {
        size_t ip = ib.pos, op = ob.pos;
        size_t r = ZSTD_decompressStream(d->u.zs.dctx, &ob, &ib);
        if (ZSTD_isError(r))
            return map_zserr(r);
        frame_header_track(d, in + ip, ib.pos - ip);
        d->u.zs.frame_out += ob.pos - op;
        if (r == 0) {
            /* A frame was decoded and flushed; the next bytes start a new one. RFC 8878
             * 3.1.1.1.4: Frame_Content_Size is "the original (uncompressed) size"; libzstd's
             * streaming decoder misses a mismatch when the last block is empty. */
            bool bad = d->u.zs.fh_done && d->u.zs.fcs != ZSTD_CONTENTSIZE_UNKNOWN &&
                       d->u.zs.fcs != d->u.zs.frame_out;
            d->u.zs.fh_len = 0;
            d->u.zs.fh_done = false;
            d->u.zs.frame_out = 0;
            if (bad)
                return VEGA_ERR_PROTO;
            *ended = true;
            break;
        }
        if (ob.pos == ob.size || ib.pos == ib.size || (ip == ib.pos && op == ob.pos))
            break;
    }
    *consumed = ib.pos;
    return (vega_ssize)ob.pos;
}
