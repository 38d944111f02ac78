/* SPDX-License-Identifier: MIT */
/* Private to lib/compress: the compressor and decompressor objects and the per-codec backends
 * (zlib.c, brotli.c, zstd.c) that compressor.c and decompressor.c drive. */
#ifndef VEGA_COMPRESS_INT_H
#define VEGA_COMPRESS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_create[CD]Ctx_advanced: custom allocators */
#include <zstd.h>

#include <vega/compress.h>

#include "base.h"

/* The allocator every object of this module uses (opts->alloc/free, or malloc/free). */
struct vega__cz_mem {
    void *(*alloc)(void *user_data, size_t size);
    void (*free)(void *user_data, void *ptr);
    void *user_data;
    const vega_mem *vm; /* when set, used instead of alloc/free */
};

int vega__cz_mem_init(struct vega__cz_mem *m, const vega_compress_opts *o);
void *vega__cz_alloc(const struct vega__cz_mem *m, size_t size);
void vega__cz_free(const struct vega__cz_mem *m, void *p);
/* Adapters with the codec libraries' allocator signatures; opaque is a struct vega__cz_mem. */
void *vega__cz_zalloc(void *opaque, unsigned items, unsigned size);
void vega__cz_zfree(void *opaque, void *p);
void *vega__cz_lalloc(void *opaque, size_t size);
void vega__cz_lfree(void *opaque, void *p);

/* zlib's deflate emits a new flush marker whenever a flush ends with avail_out == 0, so with a
 * tiny output buffer a SYNC flush never ends. Below this much room it deflates into a staging
 * buffer instead (zlib asks for more than 6 bytes). */
#define VEGA__CZ_STAGE 256

struct vega_compressor {
    struct vega__cz_mem mem;
    vega_compress_kind kind;
    int err;                     /* sticky fatal error, 0 if none */
    bool done;                   /* a FINISH completed */
    vega_compress_flush pending; /* a SYNC/FINISH returned out_cap and is not complete */
    size_t pending_in;           /* the input it left unconsumed */
    union {
        struct {
            z_stream z;
            bool ended; /* deflate returned Z_STREAM_END */
            size_t st_off, st_len;
            uint8_t stage[VEGA__CZ_STAGE];
        } zl;
        BrotliEncoderState *br;
        ZSTD_CCtx *zs;
    } u;
};

/* How the DEFLATE decoder reads the stream, decided from its first two bytes. */
enum {
    VEGA__CZ_DEFLATE_UNKNOWN,
    VEGA__CZ_DEFLATE_ZLIB,
    VEGA__CZ_DEFLATE_RAW
};

struct vega_decompressor {
    struct vega__cz_mem mem;
    vega_compress_kind kind;
    int err;       /* sticky fatal error, 0 if none */
    bool done;     /* the input so far ends at the end of a stream (member, frame) */
    bool at_start; /* the next input byte starts a stream (member, frame) */
    uint64_t limit, total;
    union {
        struct {
            z_stream z;
            int mode;       /* VEGA__CZ_DEFLATE_*, DEFLATE only */
            uint8_t hdr[2]; /* DEFLATE: first bytes held until the mode is known */
            unsigned hdr_len, hdr_fed;
        } zl;
        BrotliDecoderState *br;
        struct {
            ZSTD_DCtx *dctx;
            /* The frame header as it goes by, to check Frame_Content_Size ourselves. */
            uint8_t fh[ZSTD_FRAMEHEADERSIZE_MAX];
            size_t fh_len;
            bool fh_done;
            unsigned long long fcs; /* ZSTD_CONTENTSIZE_UNKNOWN if not given */
            uint64_t frame_out;     /* bytes out of this frame so far */
        } zs;
    } u;
};

/*
 * Backends. Each step function consumes from in, writes at most cap (> 0) bytes to out and
 * returns the count or a negative code; *consumed is set.
 *  - Encoder steps return early only when out is full; otherwise all input is consumed and
 *    *complete says the flush asked for is done (always for NONE).
 *  - Decoder steps return when out is full, all input is consumed, or the end of a stream was
 *    reached (*ended; input may remain).
 */
int vega__cz_zlib_enc_init(vega_compressor *c, int level, unsigned window_log);
vega_ssize vega__cz_zlib_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap,
                                  vega_compress_flush flush, bool *complete);
void vega__cz_zlib_enc_fini(vega_compressor *c);
int vega__cz_zlib_dec_init(vega_decompressor *d);
vega_ssize vega__cz_zlib_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap, bool *ended);
int vega__cz_zlib_dec_restart(vega_decompressor *d); /* gzip: the next member */
void vega__cz_zlib_dec_fini(vega_decompressor *d);

int vega__cz_brotli_enc_init(vega_compressor *c, int level, unsigned window_log);
vega_ssize vega__cz_brotli_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                    size_t *consumed, uint8_t *out, size_t cap,
                                    vega_compress_flush flush, bool *complete);
void vega__cz_brotli_enc_fini(vega_compressor *c);
int vega__cz_brotli_dec_init(vega_decompressor *d);
vega_ssize vega__cz_brotli_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                    size_t *consumed, uint8_t *out, size_t cap, bool *ended);
void vega__cz_brotli_dec_fini(vega_decompressor *d);

int vega__cz_zstd_enc_init(vega_compressor *c, int level, unsigned window_log);
vega_ssize vega__cz_zstd_enc_step(vega_compressor *c, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap,
                                  vega_compress_flush flush, bool *complete);
void vega__cz_zstd_enc_fini(vega_compressor *c);
int vega__cz_zstd_dec_init(vega_decompressor *d, unsigned window_log);
vega_ssize vega__cz_zstd_dec_step(vega_decompressor *d, const uint8_t *in, size_t in_len,
                                  size_t *consumed, uint8_t *out, size_t cap, bool *ended);
void vega__cz_zstd_dec_fini(vega_decompressor *d);

#endif
