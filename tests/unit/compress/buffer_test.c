/* SPDX-License-Identifier: MIT */
/* One-shot compression and decompression with size limits (lib/compress/buffer.c). */
#include <vega/compress.h>

#include "base.h"
#include "vtest.h"

static const vega_compress_kind kinds[] = {VEGA_COMPRESS_GZIP, VEGA_COMPRESS_DEFLATE,
                                           VEGA_COMPRESS_BROTLI, VEGA_COMPRESS_ZSTD,
                                           VEGA_COMPRESS_IDENTITY};

static uint8_t *data(size_t n, bool text)
{
    uint64_t s = n + text;
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = text ? (uint8_t)("abcdefgh \n"[vega__rand_below(&s, 10)])
                    : (uint8_t)vega__rand_next(&s);
    return p;
}

VTEST(round_trip)
{
    const size_t sizes[] = {0, 1, 100, 70000, 1 << 20};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(kinds); i++) {
        for (size_t j = 0; j < VEGA__ARRAY_LEN(sizes); j++) {
            for (int text = 0; text < 2; text++) {
                uint8_t *in = data(sizes[j], text), *z = NULL, *back = NULL;
                size_t zl = 1, bl = 1;
                VCHECK_EQ(vega_compress_buffer(kinds[i], VEGA_COMPRESS_LEVEL_DEFAULT, in, sizes[j],
                                               0, &z, &zl),
                          0);
                VCHECK(z != NULL);
                VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, 0, &back, &bl), 0);
                VCHECK(back != NULL);
                VCHECK_EQ(bl, sizes[j]);
                VCHECK(bl == 0 || memcmp(back, in, bl) == 0);
                free(in);
                free(z);
                free(back);
            }
        }
    }
}

VTEST(max_out)
{
    uint8_t *in = data(50000, false);
    for (size_t i = 0; i < VEGA__ARRAY_LEN(kinds); i++) {
        uint8_t *z, *back;
        size_t zl, bl;
        VCHECK_EQ(vega_compress_buffer(kinds[i], 1, in, 50000, 0, &z, &zl), 0);
        free(z);
        /* Exactly enough room, then one byte less. */
        VCHECK_EQ(vega_compress_buffer(kinds[i], 1, in, 50000, zl, &z, &bl), 0);
        VCHECK_EQ(bl, zl);
        VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, 50000, &back, &bl), 0);
        VCHECK(bl == 50000 && memcmp(back, in, bl) == 0);
        free(back);
        back = (uint8_t *)1;
        VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, 49999, &back, &bl), -EFBIG);
        VCHECK(back == NULL && bl == 0);
        VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, 1, &back, &bl), -EFBIG);
        free(z);
        VCHECK_EQ(vega_compress_buffer(kinds[i], 1, in, 50000, zl - 1, &z, &bl), -EFBIG);
        VCHECK(z == NULL);
        VCHECK_EQ(vega_compress_buffer(kinds[i], 1, in, 50000, 1, &z, &bl), -EFBIG);
    }
    free(in);
}

VTEST(errors)
{
    uint8_t *z, *back;
    size_t zl, bl;
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, "hello", 5, 0, &z, &zl), 0);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_GZIP, z, zl - 1, 0, &back, &bl), -ENODATA);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_ZSTD, z, zl, 0, &back, &bl), VEGA_ERR_PROTO);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_GZIP, z, 0, 0, &back, &bl), -ENODATA);
    VCHECK(back == NULL);
    free(z);
    VCHECK_EQ(vega_compress_buffer(0, 6, "x", 1, 0, &z, &zl), -EINVAL);
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 10, "x", 1, 0, &z, &zl), -EINVAL);
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, NULL, 1, 0, &z, &zl), -EINVAL);
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, "x", 1, 0, NULL, &zl), -EINVAL);
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 6, "x", 1, 0, &z, NULL), -EINVAL);
    VCHECK_EQ(vega_decompress_buffer(9, "x", 1, 0, &back, &bl), -EINVAL);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_GZIP, NULL, 1, 0, &back, &bl), -EINVAL);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_GZIP, "x", 1, 0, NULL, &bl), -EINVAL);
}
