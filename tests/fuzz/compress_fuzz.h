/* SPDX-License-Identifier: MIT */
/* The body shared by the decompressor fuzz targets (gzip_fuzz.c, deflate_fuzz.c, ...): each
 * defines KIND and includes this. Any bytes are decoded in one piece and again in tiny pieces
 * into tiny buffers, under a small limit. Both must agree on success and output, stay within
 * the limit and return only documented codes. The input is also compressed in pieces, with
 * SYNC flushes, and decoded back. */
#ifndef VEGA_COMPRESS_FUZZ_H
#define VEGA_COMPRESS_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include <vega/compress.h>

#ifndef KIND
#error "define KIND (a vega_compress_kind) before including compress_fuzz.h"
#endif
#define LIMIT (64u * 1024)

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint8_t out_whole[LIMIT], out_tiny[LIMIT];

/* Decodes data; seed 0 means in one piece with a big buffer, else pieces of 1..64 bytes into
 * buffers of 1..32. wlog: the largest zstd window (0: the default). Returns 0 or the error;
 * *len receives the output length. */
static int decode(const uint8_t *data, size_t size, uint64_t seed, unsigned wlog, uint8_t *out,
                  size_t *len)
{
    vega_compress_opts o = {.window_log = wlog};
    vega_decompressor *d;
    if (vega_decompressor_new(&d, KIND, LIMIT, &o) != 0)
        abort();
    size_t pos = 0, made = 0;
    int r = 0;
    uint8_t buf[65536];
    for (;;) {
        size_t chunk = seed ? 1 + next(&seed) % 64 : size;
        if (chunk > size - pos)
            chunk = size - pos;
        vega_compress_flush fl =
            pos + chunk == size ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t cap = seed ? 1 + next(&seed) % 32 : sizeof buf, took = 0;
            vega_ssize n =
                vega_decompressor_write(d, data + pos + off, chunk - off, &took, buf, cap, fl);
            if (n < 0) {
                r = (int)n;
                if (r != VEGA_ERR_PROTO && r != -ENODATA && r != -EFBIG)
                    abort();
                if (vega_decompressor_write(d, data, 0, &took, buf, 1, fl) != r)
                    abort(); /* sticky */
                goto out;
            }
            if ((size_t)n > cap || took > chunk - off || made + (size_t)n > LIMIT)
                abort();
            memcpy(out + made, buf, (size_t)n);
            made += (size_t)n;
            off += took;
            if ((size_t)n < cap) {
                if (off != chunk)
                    abort(); /* below out_cap, all input must be taken */
                break;
            }
        }
        pos += chunk;
        if (pos == size)
            break;
    }
    if (!vega_decompressor_is_done(d) && KIND != VEGA_COMPRESS_IDENTITY)
        abort(); /* FINISH succeeded: the stream must be complete */
out:
    if (vega_decompressor_get_total_out(d) != made)
        abort();
    vega_decompressor_free(d);
    *len = made;
    return r;
}

/* Compresses data (level from its first byte) in small pieces and decodes it back. */
static void roundtrip(const uint8_t *data, size_t size)
{
    /* Low levels: zstd's higher ones set up megabytes of tables per stream. */
    static const int levels[] = {0, 1, 2, 3, 9};
    int level = size ? levels[data[0] % 5] : 1;
    if (KIND == VEGA_COMPRESS_ZSTD)
        level = level == 0 ? -1 : level == 9 ? 4 : level;
    /* Small windows keep the encoders' tables (and the time to set them up) small. */
    vega_compress_opts o = {.window_log = KIND == VEGA_COMPRESS_ZSTD ? 12 : 10};
    vega_compressor *c;
    if (vega_compressor_new(&c, KIND, level, &o) != 0)
        abort();
    static uint8_t z[2 * LIMIT];
    size_t zl = 0, pos = 0;
    uint64_t seed = size + 1;
    while (!vega_compressor_is_done(c)) {
        size_t chunk = 1 + next(&seed) % 512;
        if (chunk > size - pos)
            chunk = size - pos;
        vega_compress_flush fl = pos + chunk == size    ? VEGA_COMPRESS_FLUSH_FINISH
                                 : next(&seed) % 4 == 0 ? VEGA_COMPRESS_FLUSH_SYNC
                                                        : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t cap = 1 + next(&seed) % 300, took;
            if (zl + cap > sizeof z)
                abort();
            vega_ssize n =
                vega_compressor_write(c, data + pos + off, chunk - off, &took, z + zl, cap, fl);
            if (n < 0)
                abort();
            zl += (size_t)n;
            off += took;
            if ((size_t)n < cap)
                break;
        }
        pos += chunk;
    }
    vega_compressor_free(c);
    size_t len;
    if (decode(z, zl, 7, 0, out_tiny, &len) != 0 || len != size || memcmp(out_tiny, data, size))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t lw, lt;
    int rw = decode(data, size, 0, 20, out_whole, &lw);
    int rt = decode(data, size, size * 2654435761u + 1, 20, out_tiny, &lt);
    /* Which error a broken stream gets may depend on the piece sizes (zstd decodes a whole
     * frame in one go when it can, and stops early in pieces), but success may not. */
    if ((rw == 0) != (rt == 0) || (rw == 0 && (lw != lt || memcmp(out_whole, out_tiny, lw) != 0)))
        abort();
    if (size <= 4096)
        roundtrip(data, size);
    return 0;
}

#endif
