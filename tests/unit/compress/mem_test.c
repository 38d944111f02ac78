/* SPDX-License-Identifier: MIT */
/* The allocator hook (lib/compress/mem.c): every allocation goes through it, every one is
 * released, and a failure at any point is -ENOMEM, sticky, and leaks nothing. */
#include <vega/compress.h>

#include "base.h"
#include "vtest.h"

struct failing {
    long fail_at, count;
    long live;
    bool failed;
};

static void *f_alloc(void *ud, size_t size)
{
    struct failing *f = ud;
    if (f->count++ == f->fail_at) {
        f->failed = true;
        return NULL;
    }
    f->live++;
    return malloc(size);
}

static void f_free(void *ud, void *p)
{
    struct failing *f = ud;
    f->live--;
    free(p);
}

/* The codecs allocate through malloc and free only; calloc and realloc count the same way. */
static void *f_calloc(void *ud, size_t n, size_t size)
{
    void *p = n && size <= SIZE_MAX / n ? f_alloc(ud, n * size) : NULL;
    if (p)
        memset(p, 0, n * size);
    return p;
}

static void *f_realloc(void *ud, void *old, size_t n)
{
    struct failing *f = ud;
    if (f->count++ == f->fail_at) {
        f->failed = true;
        return NULL;
    }
    return realloc(old, n);
}

/* The sweeps go through vega_mem (the one allocator type); decompressor_test keeps the
 * deprecated alloc/free pair covered. */
#define FAILING_OPTS(f)                                                                            \
    vega_mem vm = {f_alloc, f_calloc, f_realloc, f_free, (f)};                                     \
    vega_compress_opts o = {.mem = &vm}

static uint8_t *text(size_t n)
{
    uint64_t s = 99;
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)("the quick brown fox \n"[vega__rand_below(&s, 21)]);
    return p;
}

/* Compresses (SYNC every 4 KiB, then FINISH) with allocation number fail_at failing. Returns
 * 0 or -ENOMEM; the output goes to z. */
static int try_compress(vega_compress_kind k, struct failing *f, const uint8_t *in, size_t len,
                        uint8_t *z, size_t zcap, size_t *zl)
{
    FAILING_OPTS(f);
    vega_compressor *c;
    int r = vega_compressor_new(&c, k, VEGA_COMPRESS_LEVEL_DEFAULT, &o);
    if (r < 0)
        return r;
    size_t pos = 0;
    *zl = 0;
    while (r == 0 && !vega_compressor_is_done(c)) {
        size_t chunk = VEGA__MIN((size_t)4096, len - pos), took;
        vega_compress_flush fl =
            pos + chunk == len ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_SYNC;
        vega_ssize n = vega_compressor_write(c, in + pos, chunk, &took, z + *zl, zcap - *zl, fl);
        if (n < 0) {
            r = (int)n;
            /* Sticky. */
            VCHECK_EQ(vega_compressor_write(c, in, 0, &took, z, 1, fl), r);
            break;
        }
        VCHECK((size_t)n < zcap - *zl && took == chunk);
        *zl += (size_t)n;
        pos += chunk;
    }
    vega_compressor_free(c);
    return r;
}

static int try_decompress(vega_compress_kind k, struct failing *f, const uint8_t *z, size_t zl,
                          const uint8_t *want, size_t len)
{
    FAILING_OPTS(f);
    vega_decompressor *d;
    int r = vega_decompressor_new(&d, k, 0, &o);
    if (r < 0)
        return r;
    uint8_t *out = malloc(len + 1);
    size_t made = 0, pos = 0;
    while (pos < zl) {
        size_t chunk = VEGA__MIN((size_t)1000, zl - pos), took;
        vega_compress_flush fl =
            pos + chunk == zl ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        vega_ssize n =
            vega_decompressor_write(d, z + pos, chunk, &took, out + made, len + 1 - made, fl);
        if (n < 0) {
            r = (int)n;
            VCHECK_EQ(vega_decompressor_write(d, z, 0, &took, out, 1, fl), r);
            break;
        }
        VCHECK(took == chunk);
        made += (size_t)n;
        pos += chunk;
    }
    if (r == 0)
        VCHECK(made == len && memcmp(out, want, len) == 0);
    free(out);
    vega_decompressor_free(d);
    return r;
}

static void sweep(vega_compress_kind k, long max_enc_fail)
{
    size_t len = 100000, zcap = 2 * len, zl = 0;
    uint8_t *in = text(len), *z = malloc(zcap);
    /* Compression, failing each allocation in turn. brotli's encoder library exits the
     * process when an allocation inside a stream fails (its build default), so for it only
     * the allocations of vega_compressor_new are failed. */
    for (long at = 0;; at++) {
        struct failing f = {.fail_at = at};
        int r = try_compress(k, &f, in, len, z, zcap, &zl);
        VCHECK_EQ(f.live, 0);
        if (!f.failed) {
            VCHECK_EQ(r, 0);
            break;
        }
        VCHECK_EQ(r, -ENOMEM);
        if (at >= max_enc_fail) {
            struct failing ok = {.fail_at = -1};
            VCHECK_EQ(try_compress(k, &ok, in, len, z, zcap, &zl), 0);
            break;
        }
    }
    for (long at = 0;; at++) {
        struct failing f = {.fail_at = at};
        int r = try_decompress(k, &f, z, zl, in, len);
        VCHECK_EQ(f.live, 0);
        if (!f.failed) {
            VCHECK_EQ(r, 0);
            break;
        }
        VCHECK_EQ(r, -ENOMEM);
    }
    free(in);
    free(z);
}

VTEST(fail_gzip)
{
    sweep(VEGA_COMPRESS_GZIP, 1000);
}

VTEST(fail_deflate)
{
    sweep(VEGA_COMPRESS_DEFLATE, 1000);
}

VTEST(fail_brotli)
{
    sweep(VEGA_COMPRESS_BROTLI, 1);
}

VTEST(fail_zstd)
{
    sweep(VEGA_COMPRESS_ZSTD, 1000);
}

VTEST(fail_identity)
{
    sweep(VEGA_COMPRESS_IDENTITY, 1000);
}
