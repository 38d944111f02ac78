/* SPDX-License-Identifier: MIT */
/* brotli (RFC 7932) over the reference library's streaming API. */
#include "compress_int.h"

/* ---- encoder ------------------------------------------------------------------------------- */

int vega__cz_brotli_enc_init(vega_compressor *c, int level, unsigned window_log)
{
    if (level == VEGA_COMPRESS_LEVEL_DEFAULT)
        level = 5;
    if (level < BROTLI_MIN_QUALITY || level > BROTLI_MAX_QUALITY)
        return -EINVAL;
    if (window_log == 0)
        window_log = BROTLI_DEFAULT_WINDOW;
    if (window_log < BROTLI_MIN_WINDOW_BITS || window_log > BROTLI_MAX_WINDOW_BITS)
        return -EINVAL;
    c->u.br = BrotliEncoderCreateInstance(vega__cz_lalloc, vega__cz_lfree, &c->mem);
    if (!c->u.br)
        return -ENOMEM;
    if (!BrotliEncoderSetParameter(c->u.br, BROTLI_PARAM_QUALITY, (uint32_t)level) ||
        !BrotliEncoderSetParameter(c->u.br, BROTLI_PARAM_LGWIN, window_log)) {
        BrotliEncoderDestroyInstance(c->u.br);
        c->u.br = NULL;
        return -EINVAL;
    }
    return 0;
}

void vega__cz_brotli_enc_fini(vega_compressor *c)
{
    if (c->u.br)
        BrotliEncoderDestroyInstance(c->u.br);
}

static bool enc_complete(BrotliEncoderState *br, BrotliEncoderOperation op, size_t in_left)
{
    if (op == BROTLI_OPERATION_FINISH)
        return BrotliEncoderIsFinished(br);
    return in_left == 0 && !BrotliEncoderHasMoreOutput(br);
}

vega_ssize vega__cz_brotli_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                    size_t *consumed, uint8_t *out, size_t cap,
                                    vega_compress_flush flush, bool *complete)
{
    BrotliEncoderOperation op = BROTLI_OPERATION_PROCESS;
    if (flush == VEGA_COMPRESS_FLUSH_SYNC)
        op = BROTLI_OPERATION_FLUSH;
    else if (flush == VEGA_COMPRESS_FLUSH_FINISH)
        op = BROTLI_OPERATION_FINISH;
    size_t avail_in = in_len, avail_out = cap;
    const uint8_t *next_in = in;
    uint8_t *next_out = out;
    /* A flush must reach the encoder at least once, even with no new input. */
    bool called = op == BROTLI_OPERATION_PROCESS;
    *complete = false;
    for (;;) {
        if (called && enc_complete(c->u.br, op, avail_in)) {
            *complete = true;
            break;
        }
        if (avail_out == 0)
            break;
        size_t ai = avail_in, ao = avail_out;
        if (!BrotliEncoderCompressStream(c->u.br, op, &avail_in, &next_in, &avail_out, &next_out,
                                         NULL))
            return VEGA_ERR_INTERNAL;
        if (called && ai == avail_in && ao == avail_out && VEGA_NEVER(true))
            return VEGA_ERR_INTERNAL;
        called = true;
    }
    *consumed = in_len - avail_in;
    return (vega_ssize)(cap - avail_out);
}

/* ---- decoder ------------------------------------------------------------------------------- */

int vega__cz_brotli_dec_init(vega_decompressor *d)
{
    d->u.br = BrotliDecoderCreateInstance(vega__cz_lalloc, vega__cz_lfree, &d->mem);
    return d->u.br ? 0 : -ENOMEM;
}

void vega__cz_brotli_dec_fini(vega_decompressor *d)
{
    if (d->u.br)
        BrotliDecoderDestroyInstance(d->u.br);
}

vega_ssize vega__cz_brotli_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                    size_t *consumed, uint8_t *out, size_t cap, bool *ended)
{
    size_t avail_in = in_len, avail_out = cap;
    const uint8_t *next_in = in;
    uint8_t *next_out = out;
    *ended = false;
    for (;;) {
        size_t ai = avail_in, ao = avail_out;
        BrotliDecoderResult r = BrotliDecoderDecompressStream(d->u.br, &avail_in, &next_in,
                                                              &avail_out, &next_out, NULL);
        if (r == BROTLI_DECODER_RESULT_SUCCESS) {
            *ended = true;
            break;
        }
        if (r == BROTLI_DECODER_RESULT_ERROR) {
            BrotliDecoderErrorCode e = BrotliDecoderGetErrorCode(d->u.br);
            if (e <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
                e >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES)
                return -ENOMEM;
            if (e == BROTLI_DECODER_ERROR_UNREACHABLE ||
                e == BROTLI_DECODER_ERROR_INVALID_ARGUMENTS)
                return VEGA_ERR_INTERNAL;
            return VEGA_ERR_PROTO;
        }
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT)
            break; /* all input taken */
        /* NEEDS_MORE_OUTPUT */
        if (avail_out == 0 || (ai == avail_in && ao == avail_out))
            break;
    }
    *consumed = in_len - avail_in;
    return (vega_ssize)(cap - avail_out);
}
