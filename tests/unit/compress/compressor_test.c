/* SPDX-License-Identifier: MIT */
/* Round trips through every codec with tiny input chunks and tiny output buffers, SYNC
 * flushes, and the compressor's argument and flush contract (lib/compress/compressor.c). */
#include <vega/compress.h>

#include "base.h"
#include "vtest.h"

static const vega_compress_kind all_kinds[] = {VEGA_COMPRESS_GZIP, VEGA_COMPRESS_DEFLATE,
                                               VEGA_COMPRESS_BROTLI, VEGA_COMPRESS_ZSTD,
                                               VEGA_COMPRESS_IDENTITY};

static uint8_t *random_bytes(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    VCHECK(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)vega__rand_next(&seed);
    return p;
}

static uint8_t *text_bytes(size_t n, uint64_t seed)
{
    static const char *const words[] = {
        "the",     "quick",   "brown",    "fox",      "jumps",
        "over",    "lazy",    "dog",      "stream",   "window",
        "Huffman", "literal", "distance", "HTTP/1.1", "content-encoding",
        "vega"};
    uint8_t *p = malloc(n ? n : 1);
    VCHECK(p);
    size_t i = 0;
    while (i < n) {
        const char *w = words[vega__rand_below(&seed, VEGA__ARRAY_LEN(words))];
        for (; *w && i < n; w++)
            p[i++] = (uint8_t)*w;
        if (i < n)
            p[i++] = vega__rand_below(&seed, 12) ? ' ' : '\n';
    }
    return p;
}

/* A growable output buffer. */
struct obuf {
    uint8_t *p;
    size_t len, cap;
};

static uint8_t *obuf_room(struct obuf *b, size_t need)
{
    if (b->cap - b->len < need) {
        size_t n = VEGA__MAX(b->cap * 2, b->len + need + 1024);
        b->p = realloc(b->p, n);
        VCHECK(b->p);
        b->cap = n;
    }
    return b->p + b->len;
}

static size_t pick(uint64_t *rng, size_t max)
{
    return 1 + vega__rand_below(rng, (uint32_t)max);
}

/* Compresses in, max_in bytes of input and max_out bytes of room per call at most. */
static struct obuf enc_all(vega_compress_kind k, int level, const uint8_t *in, size_t len,
                           size_t max_in, size_t max_out, uint64_t seed)
{
    vega_compressor *c;
    VCHECK_EQ(vega_compressor_new(&c, k, level, NULL), 0);
    struct obuf b = {0};
    size_t pos = 0;
    for (;;) {
        size_t want = pick(&seed, max_in), chunk = VEGA__MIN(want, len - pos);
        vega_compress_flush fl =
            pos + chunk == len ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t cap = pick(&seed, max_out), took = 99;
            vega_ssize n = vega_compressor_write(c, in + pos + off, chunk - off, &took,
                                                 obuf_room(&b, cap), cap, fl);
            VCHECK(n >= 0 && (size_t)n <= cap);
            VCHECK(took <= chunk - off);
            off += took;
            b.len += (size_t)n;
            if ((size_t)n < cap) {
                VCHECK_EQ(off, chunk);
                break;
            }
        }
        pos += chunk;
        if (fl == VEGA_COMPRESS_FLUSH_FINISH)
            break;
        VCHECK(!vega_compressor_is_done(c));
    }
    VCHECK(vega_compressor_is_done(c));
    vega_compressor_free(c);
    return b;
}

/* Decompresses in the same way; returns the output, and the first error in *err. */
static struct obuf dec_all(vega_compress_kind k, const uint8_t *in, size_t len, size_t max_in,
                           size_t max_out, uint64_t seed, int *err)
{
    vega_decompressor *d;
    VCHECK_EQ(vega_decompressor_new(&d, k, VEGA_DECOMPRESS_NO_LIMIT, NULL), 0);
    struct obuf b = {0};
    size_t pos = 0;
    *err = 0;
    for (;;) {
        size_t want = pick(&seed, max_in), chunk = VEGA__MIN(want, len - pos);
        vega_compress_flush fl =
            pos + chunk == len ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t cap = pick(&seed, max_out), took = 99;
            vega_ssize n = vega_decompressor_write(d, in + pos + off, chunk - off, &took,
                                                   obuf_room(&b, cap), cap, fl);
            if (n < 0) {
                *err = (int)n;
                goto out;
            }
            VCHECK((size_t)n <= cap && took <= chunk - off);
            off += took;
            b.len += (size_t)n;
            if ((size_t)n < cap) {
                VCHECK_EQ(off, chunk);
                break;
            }
        }
        pos += chunk;
        if (fl == VEGA_COMPRESS_FLUSH_FINISH)
            break;
    }
    VCHECK(vega_decompressor_is_done(d));
    VCHECK_EQ(vega_decompressor_get_total_out(d), b.len);
out:
    vega_decompressor_free(d);
    return b;
}

static void roundtrip_one(vega_compress_kind k, const uint8_t *in, size_t len, uint64_t seed)
{
    /* Tiny everything, then big input and tiny output, then the reverse. */
    static const size_t shapes[][4] = {
        {7, 7, 7, 7}, {1 << 20, 7, 1 << 16, 7}, {7, 1 << 16, 7, 1 << 16}};
    for (size_t s = 0; s < VEGA__ARRAY_LEN(shapes); s++) {
        struct obuf z =
            enc_all(k, VEGA_COMPRESS_LEVEL_DEFAULT, in, len, shapes[s][0], shapes[s][1], seed + s);
        int err;
        struct obuf back = dec_all(k, z.p, z.len, shapes[s][2], shapes[s][3], seed + 7 * s, &err);
        if (err)
            vtest_fail(__FILE__, __LINE__, "%s shape %zu len %zu: %s", vega_compress_kind_name(k),
                       s, len, vega_err_name(err));
        VCHECK_EQ(back.len, len);
        VCHECK(len == 0 || memcmp(back.p, in, len) == 0);
        free(z.p);
        free(back.p);
    }
}

static void roundtrip_kind(vega_compress_kind k)
{
    roundtrip_one(k, (const uint8_t *)"", 0, 1);
    roundtrip_one(k, (const uint8_t *)"x", 1, 2);
    uint8_t *r = random_bytes(1 << 20, 3), *t = text_bytes(1 << 20, 4);
    roundtrip_one(k, r, 1 << 20, 5);
    roundtrip_one(k, t, 1 << 20, 6);
    free(r);
    free(t);
}

VTEST(roundtrip_gzip)
{
    roundtrip_kind(VEGA_COMPRESS_GZIP);
}

VTEST(roundtrip_deflate)
{
    roundtrip_kind(VEGA_COMPRESS_DEFLATE);
}

VTEST(roundtrip_brotli)
{
    roundtrip_kind(VEGA_COMPRESS_BROTLI);
}

VTEST(roundtrip_zstd)
{
    roundtrip_kind(VEGA_COMPRESS_ZSTD);
}

VTEST(roundtrip_identity)
{
    roundtrip_kind(VEGA_COMPRESS_IDENTITY);
}

/* Every level of every codec, and the window sizes at both ends, on a small input. */
VTEST(levels_and_windows)
{
    uint8_t *t = text_bytes(20000, 9);
    const struct {
        vega_compress_kind k;
        int lo, hi;
        unsigned wlo, whi;
    } r[] = {{VEGA_COMPRESS_GZIP, 0, 9, 9, 15},
             {VEGA_COMPRESS_DEFLATE, 0, 9, 9, 15},
             {VEGA_COMPRESS_BROTLI, 0, 11, 10, 24},
             {VEGA_COMPRESS_ZSTD, -7, 22, 10, 27}};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(r); i++) {
        for (int lv = r[i].lo; lv <= r[i].hi; lv++) {
            uint8_t *z, *back;
            size_t zl, bl;
            VCHECK_EQ(vega_compress_buffer(r[i].k, lv, t, 20000, 0, &z, &zl), 0);
            VCHECK_EQ(vega_decompress_buffer(r[i].k, z, zl, 0, &back, &bl), 0);
            VCHECK(bl == 20000 && memcmp(back, t, bl) == 0);
            free(z);
            free(back);
        }
        unsigned w[2] = {r[i].wlo, r[i].whi};
        for (int j = 0; j < 2; j++) {
            vega_compress_opts o = {.window_log = w[j]};
            vega_compressor *c;
            VCHECK_EQ(vega_compressor_new(&c, r[i].k, VEGA_COMPRESS_LEVEL_DEFAULT, &o), 0);
            uint8_t out[30000];
            size_t took;
            vega_ssize n = vega_compressor_write(c, t, 20000, &took, out, sizeof out,
                                                 VEGA_COMPRESS_FLUSH_FINISH);
            VCHECK(n > 0 && (size_t)n < sizeof out && took == 20000);
            vega_compressor_free(c);
            /* zstd windows above 2^23 need a decoder that allows them. */
            vega_decompressor *d;
            vega_compress_opts dopt = {.window_log = 27};
            VCHECK_EQ(vega_decompressor_new(&d, r[i].k, 0, &dopt), 0);
            uint8_t back[20001];
            vega_ssize m = vega_decompressor_write(d, out, (size_t)n, &took, back, sizeof back,
                                                   VEGA_COMPRESS_FLUSH_FINISH);
            VCHECK_EQ(m, 20000);
            VCHECK(memcmp(back, t, 20000) == 0);
            vega_decompressor_free(d);
        }
    }
    free(t);
}

/* After each SYNC flush, the decoder gives back every byte written so far. */
static void sync_kind(vega_compress_kind k, size_t max_out)
{
    size_t len = 200000;
    uint8_t *t = text_bytes(len, 11);
    uint64_t rng = 12;
    vega_compressor *c;
    vega_decompressor *d;
    VCHECK_EQ(vega_compressor_new(&c, k, VEGA_COMPRESS_LEVEL_DEFAULT, NULL), 0);
    VCHECK_EQ(vega_decompressor_new(&d, k, 0, NULL), 0);
    uint8_t *back = malloc(len + 1);
    size_t pos = 0, blen = 0;
    int flushes = 0;
    while (pos < len || !vega_compressor_is_done(c)) {
        size_t want = pick(&rng, 5000), chunk = VEGA__MIN(want, len - pos);
        vega_compress_flush fl =
            pos + chunk == len ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_SYNC;
        size_t off = 0;
        for (;;) {
            uint8_t z[64];
            size_t cap = pick(&rng, max_out), took;
            vega_ssize n = vega_compressor_write(c, t + pos + off, chunk - off, &took, z, cap, fl);
            VCHECK(n >= 0);
            off += took;
            /* Feed what came out straight into the decoder. */
            for (size_t zo = 0; zo < (size_t)n;) {
                size_t dt;
                vega_ssize m = vega_decompressor_write(d, z + zo, (size_t)n - zo, &dt, back + blen,
                                                       len + 1 - blen, VEGA_COMPRESS_FLUSH_NONE);
                VCHECK(m >= 0);
                zo += dt;
                blen += (size_t)m;
            }
            if ((size_t)n < cap)
                break;
        }
        pos += chunk;
        flushes++;
        VCHECK_EQ(blen, pos);
        VCHECK(memcmp(back, t, blen) == 0);
    }
    VCHECK(flushes > 10);
    size_t dt;
    VCHECK_EQ(vega_decompressor_write(d, NULL, 0, &dt, back, 1, VEGA_COMPRESS_FLUSH_FINISH), 0);
    VCHECK(vega_decompressor_is_done(d));
    vega_compressor_free(c);
    vega_decompressor_free(d);
    free(back);
    free(t);
}

VTEST(sync_flush)
{
    for (size_t i = 0; i < VEGA__ARRAY_LEN(all_kinds); i++) {
        sync_kind(all_kinds[i], 7);
        sync_kind(all_kinds[i], 64);
    }
}

/* A SYNC with nothing new to flush adds (almost) nothing; repeated ones do not pile up. */
VTEST(sync_repeated)
{
    for (size_t i = 0; i < VEGA__ARRAY_LEN(all_kinds); i++) {
        vega_compressor *c;
        VCHECK_EQ(vega_compressor_new(&c, all_kinds[i], VEGA_COMPRESS_LEVEL_DEFAULT, NULL), 0);
        uint8_t out[256];
        size_t took;
        VCHECK(vega_compressor_write(c, (const uint8_t *)"hello", 5, &took, out, sizeof out,
                                     VEGA_COMPRESS_FLUSH_SYNC) > 0);
        vega_ssize total = 0;
        for (int j = 0; j < 100; j++) {
            vega_ssize n =
                vega_compressor_write(c, NULL, 0, &took, out, 1, VEGA_COMPRESS_FLUSH_SYNC);
            VCHECK(n == 0 || n == 1);
            total += n;
        }
        VCHECK(total <= 8);
        vega_compressor_free(c);
    }
}

static void fake_free(void *ud, void *p)
{
    (void)ud;
    free(p);
}

static void *fake_alloc(void *ud, size_t n)
{
    (void)ud;
    return malloc(n);
}

VTEST(new_rejects_bad_arguments)
{
    vega_compressor *c = (vega_compressor *)1;
    VCHECK_EQ(vega_compressor_new(&c, 0, VEGA_COMPRESS_LEVEL_DEFAULT, NULL), -EINVAL);
    VCHECK(c == NULL);
    VCHECK_EQ(vega_compressor_new(&c, 99, VEGA_COMPRESS_LEVEL_DEFAULT, NULL), -EINVAL);
    VCHECK_EQ(vega_compressor_new(NULL, VEGA_COMPRESS_GZIP, 1, NULL), -EINVAL);
    const struct {
        vega_compress_kind k;
        int level;
        unsigned wlog;
    } bad[] = {{VEGA_COMPRESS_GZIP, 10, 0},   {VEGA_COMPRESS_GZIP, -1, 0},
               {VEGA_COMPRESS_DEFLATE, 1, 8}, {VEGA_COMPRESS_DEFLATE, 1, 16},
               {VEGA_COMPRESS_BROTLI, 12, 0}, {VEGA_COMPRESS_BROTLI, 1, 9},
               {VEGA_COMPRESS_BROTLI, 1, 25}, {VEGA_COMPRESS_ZSTD, 23, 0},
               {VEGA_COMPRESS_ZSTD, -8, 0},   {VEGA_COMPRESS_ZSTD, 1, 9},
               {VEGA_COMPRESS_ZSTD, 1, 28}};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(bad); i++) {
        vega_compress_opts o = {.window_log = bad[i].wlog};
        c = (vega_compressor *)1;
        VCHECK_EQ(vega_compressor_new(&c, bad[i].k, bad[i].level, &o), -EINVAL);
        VCHECK(c == NULL);
    }
    vega_compress_opts half = {.alloc = NULL, .free = fake_free};
    VCHECK_EQ(vega_compressor_new(&c, VEGA_COMPRESS_GZIP, 1, &half), -EINVAL);
    /* vega_mem and the deprecated pair at once: which one would be meant is unclear. */
    static const vega_mem libc_like = {0};
    vega_compress_opts both = {.alloc = fake_alloc, .free = fake_free, .mem = &libc_like};
    VCHECK_EQ(vega_compressor_new(&c, VEGA_COMPRESS_GZIP, 1, &both), -EINVAL);
    VCHECK_EQ(vega_compressor_new(&c, VEGA_COMPRESS_IDENTITY, 12345, NULL), 0);
    vega_compressor_free(c);
    vega_compressor_free(NULL);
}

VTEST(write_contract)
{
    for (size_t i = 0; i < VEGA__ARRAY_LEN(all_kinds); i++) {
        vega_compressor *c;
        VCHECK_EQ(vega_compressor_new(&c, all_kinds[i], VEGA_COMPRESS_LEVEL_DEFAULT, NULL), 0);
        uint8_t out[16];
        size_t took = 99;
        VCHECK_EQ(vega_compressor_write(c, NULL, 1, &took, out, 16, VEGA_COMPRESS_FLUSH_NONE),
                  -EINVAL);
        VCHECK_EQ(took, 0);
        VCHECK_EQ(vega_compressor_write(c, out, 1, &took, NULL, 16, VEGA_COMPRESS_FLUSH_NONE),
                  -EINVAL);
        VCHECK_EQ(vega_compressor_write(c, out, 1, &took, out, 16, 7), -EINVAL);
        VCHECK_EQ(vega_compressor_write(c, out, 1, &took, out, 0, VEGA_COMPRESS_FLUSH_NONE),
                  VEGA_ERR_NOBUF);
        /* None of these was fatal. */
        uint8_t *r = random_bytes(5000, 21);
        uint8_t big[6000];
        /* A FINISH that fills the buffer must be continued as it was. */
        vega_ssize n =
            vega_compressor_write(c, r, 5000, &took, big, 10, VEGA_COMPRESS_FLUSH_FINISH);
        VCHECK_EQ(n, 10);
        size_t rest = 5000 - took, len = 10;
        VCHECK_EQ(vega_compressor_write(c, r + took, rest, &took, big + len, 100,
                                        VEGA_COMPRESS_FLUSH_NONE),
                  -EINVAL);
        if (rest)
            VCHECK_EQ(vega_compressor_write(c, r + 5000 - rest, rest - 1, &took, big + len, 100,
                                            VEGA_COMPRESS_FLUSH_FINISH),
                      -EINVAL);
        for (;;) {
            size_t cap = sizeof big - len;
            n = vega_compressor_write(c, r + 5000 - rest, rest, &took, big + len, cap,
                                      VEGA_COMPRESS_FLUSH_FINISH);
            VCHECK(n >= 0);
            len += (size_t)n;
            rest -= took;
            if ((size_t)n < cap)
                break;
        }
        VCHECK(vega_compressor_is_done(c));
        VCHECK_EQ(vega_compressor_write(c, r, 1, &took, out, 16, VEGA_COMPRESS_FLUSH_NONE),
                  VEGA_ERR_CLOSED);
        VCHECK_EQ(vega_compressor_write(c, NULL, 0, &took, out, 16, VEGA_COMPRESS_FLUSH_FINISH), 0);
        uint8_t *back;
        size_t bl;
        VCHECK_EQ(vega_decompress_buffer(all_kinds[i], big, len, 0, &back, &bl), 0);
        VCHECK(bl == 5000 && memcmp(back, r, 5000) == 0);
        free(back);
        free(r);
        vega_compressor_free(c);
    }
}

/* A gzip stream that was flushed with SYNC but never finished is a truncated stream. */
VTEST(unfinished_is_truncated)
{
    for (size_t i = 0; i < 4; i++) {
        vega_compressor *c;
        VCHECK_EQ(vega_compressor_new(&c, all_kinds[i], VEGA_COMPRESS_LEVEL_DEFAULT, NULL), 0);
        uint8_t z[256];
        size_t took;
        vega_ssize n = vega_compressor_write(c, (const uint8_t *)"hello world", 11, &took, z,
                                             sizeof z, VEGA_COMPRESS_FLUSH_SYNC);
        VCHECK(n > 0);
        uint8_t *back;
        size_t bl;
        VCHECK_EQ(vega_decompress_buffer(all_kinds[i], z, (size_t)n, 0, &back, &bl), -ENODATA);
        VCHECK(back == NULL);
        vega_compressor_free(c);
    }
}
