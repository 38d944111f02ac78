/* SPDX-License-Identifier: MIT */
/* The decompressor's limits and failure modes (lib/compress/decompressor.c): the output limit,
 * 10 GiB bombs in bounded memory, zstd windows, truncation, corruption, trailing garbage,
 * concatenated members and frames, raw deflate, and sticky errors. */
#include <libgen.h>
#include <zlib.h>

#include <vega/compress.h>

#include "base.h"
#include "vtest.h"

#define TEN_GIB (10ull << 30)

static const vega_compress_kind codecs[] = {VEGA_COMPRESS_GZIP, VEGA_COMPRESS_DEFLATE,
                                            VEGA_COMPRESS_BROTLI, VEGA_COMPRESS_ZSTD};

static uint8_t *text_bytes(size_t n, uint64_t seed)
{
    static const char *const words[] = {"alpha", "beta",   "gamma", "delta", "stream", "window",
                                        "frame", "member", "limit", "bomb",  "zeros",  "vega"};
    uint8_t *p = malloc(n ? n : 1);
    VCHECK(p);
    size_t i = 0;
    while (i < n) {
        const char *w = words[vega__rand_below(&seed, VEGA__ARRAY_LEN(words))];
        for (; *w && i < n; w++)
            p[i++] = (uint8_t)*w;
        if (i < n)
            p[i++] = ' ';
    }
    return p;
}

static uint8_t *pack(vega_compress_kind k, const uint8_t *in, size_t len, size_t *zl)
{
    uint8_t *z;
    VCHECK_EQ(vega_compress_buffer(k, VEGA_COMPRESS_LEVEL_DEFAULT, in, len, 0, &z, zl), 0);
    return z;
}

/* Decodes in (chunk bytes of input, cap bytes of room per call) into out (out_len bytes, may
 * be NULL to discard). Returns 0 or the first error; *made receives the bytes returned. */
static int decode(vega_decompressor *d, const uint8_t *in, size_t len, size_t chunk, size_t cap,
                  bool finish, uint8_t *out, size_t out_len, size_t *made)
{
    uint8_t scratch[65536];
    size_t pos = 0;
    *made = 0;
    VCHECK(cap <= sizeof scratch);
    for (;;) {
        size_t n_in = VEGA__MIN(chunk, len - pos);
        vega_compress_flush fl =
            finish && pos + n_in == len ? VEGA_COMPRESS_FLUSH_FINISH : VEGA_COMPRESS_FLUSH_NONE;
        size_t off = 0;
        for (;;) {
            size_t took;
            vega_ssize n =
                vega_decompressor_write(d, in + pos + off, n_in - off, &took, scratch, cap, fl);
            if (n < 0)
                return (int)n;
            if (out) {
                VCHECK(*made + (size_t)n <= out_len);
                memcpy(out + *made, scratch, (size_t)n);
            }
            *made += (size_t)n;
            off += took;
            if ((size_t)n < cap)
                break;
        }
        pos += n_in;
        if (pos == len)
            return 0;
    }
}

static int decode_all(vega_compress_kind k, const uint8_t *in, size_t len, uint64_t limit,
                      size_t chunk, size_t cap, size_t *made)
{
    vega_decompressor *d;
    VCHECK_EQ(vega_decompressor_new(&d, k, limit, NULL), 0);
    int r = decode(d, in, len, chunk, cap, true, NULL, 0, made);
    vega_decompressor_free(d);
    return r;
}

/* ---- the limit ----------------------------------------------------------------------------- */

VTEST(limit_boundary)
{
    size_t len = 10000;
    uint8_t *t = text_bytes(len, 1);
    vega_compress_kind kinds[] = {VEGA_COMPRESS_GZIP, VEGA_COMPRESS_DEFLATE, VEGA_COMPRESS_BROTLI,
                                  VEGA_COMPRESS_ZSTD, VEGA_COMPRESS_IDENTITY};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(kinds); i++) {
        size_t zl, made;
        uint8_t *z = pack(kinds[i], t, len, &zl);
        const size_t caps[] = {1, 7, 4096, 65536};
        for (size_t c = 0; c < VEGA__ARRAY_LEN(caps); c++) {
            VCHECK_EQ(decode_all(kinds[i], z, zl, len, 13, caps[c], &made), 0);
            VCHECK_EQ(made, len);
            VCHECK_EQ(decode_all(kinds[i], z, zl, len - 1, 13, caps[c], &made), -EFBIG);
            /* What came out before the error stays within the limit. */
            VCHECK(made <= len - 1 && made + caps[c] >= len - 1);
            VCHECK_EQ(decode_all(kinds[i], z, zl, 1, zl, caps[c], &made), -EFBIG);
            VCHECK(made <= 1);
        }
        VCHECK_EQ(decode_all(kinds[i], z, zl, VEGA_DECOMPRESS_NO_LIMIT, zl, 4096, &made), 0);
        VCHECK_EQ(decode_all(kinds[i], z, zl, 0, zl, 4096, &made), 0);
        /* The one-shot form: max_out is the limit. */
        uint8_t *back;
        size_t bl;
        VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, len, &back, &bl), 0);
        VCHECK(bl == len && memcmp(back, t, len) == 0);
        free(back);
        VCHECK_EQ(vega_decompress_buffer(kinds[i], z, zl, len - 1, &back, &bl), -EFBIG);
        VCHECK(back == NULL && bl == 0);
        free(z);
    }
    free(t);
}

/* ---- bombs: 10 GiB of zeros, fed lazily, must stop at the limit in bounded memory ---------- */

/* An allocator that tracks the peak of live bytes. */
struct track {
    size_t live, peak;
};

static void *track_alloc(void *ud, size_t size)
{
    struct track *t = ud;
    size_t *p = malloc(size + 16);
    if (!p)
        return NULL;
    p[0] = size;
    t->live += size;
    t->peak = VEGA__MAX(t->peak, t->live);
    return (uint8_t *)p + 16;
}

static void track_free(void *ud, void *ptr)
{
    struct track *t = ud;
    size_t *p = (size_t *)(void *)((uint8_t *)ptr - 16);
    t->live -= p[0];
    free(p);
}

/* Feeds the bomb made by gen (which fills buf and returns its length, 0 at the end) to a
 * decompressor with the default limit; expects -EFBIG at 64 MiB, with the codec's memory
 * below max_mem. */
typedef size_t (*bomb_gen)(void *state, uint8_t *buf, size_t cap);

static void bomb(vega_compress_kind k, bomb_gen gen, void *state, size_t max_mem)
{
    struct track tr = {0};
    vega_compress_opts o = {.alloc = track_alloc, .free = track_free, .user_data = &tr};
    vega_decompressor *d;
    VCHECK_EQ(vega_decompressor_new(&d, k, 0, &o), 0);
    static uint8_t in[16384], out[65536];
    uint64_t fed = 0, made = 0;
    int r = 0;
    while (r == 0) {
        size_t n = gen(state, in, sizeof in);
        VCHECK(n > 0); /* the bomb must not run out before the limit */
        fed += n;
        for (size_t off = 0; off < n && r == 0;) {
            size_t took;
            vega_ssize m = vega_decompressor_write(d, in + off, n - off, &took, out, sizeof out,
                                                   VEGA_COMPRESS_FLUSH_NONE);
            if (m < 0) {
                r = (int)m;
                break;
            }
            made += (uint64_t)m;
            off += took;
        }
    }
    VCHECK_EQ(r, -EFBIG);
    VCHECK(made <= VEGA_DECOMPRESS_DEFAULT_LIMIT);
    VCHECK(made + sizeof out >= VEGA_DECOMPRESS_DEFAULT_LIMIT);
    VCHECK_EQ(vega_decompressor_get_total_out(d), made);
    /* Sticky. */
    size_t took;
    VCHECK_EQ(vega_decompressor_write(d, in, 1, &took, out, 1, VEGA_COMPRESS_FLUSH_NONE), -EFBIG);
    if (tr.peak > max_mem)
        vtest_fail(__FILE__, __LINE__, "%s: peak codec memory %zu > %zu",
                   vega_compress_kind_name(k), tr.peak, max_mem);
    fprintf(stderr, "%s: fed %" PRIu64 " bytes, peak codec memory %zu\n",
            vega_compress_kind_name(k), fed, tr.peak);
    vega_decompressor_free(d);
    VCHECK_EQ(tr.live, 0);
}

/* A deflate stream that never ends: one fixed-Huffman block (RFC 1951 section 3.2.6) of a
 * literal 0 then matches of length 258 at distance 1: 13 bits per 258 zeros, so after two
 * bytes the bytes repeat with a period of 13. */
struct deflate_bomb {
    uint8_t head[32];
    size_t head_len;
    uint8_t period[13];
    uint64_t sent, total;
};

static void bits_put(uint8_t *buf, size_t *bitpos, uint32_t v, int n, bool msb_first)
{
    for (int i = 0; i < n; i++) {
        int bit = msb_first ? (v >> (n - 1 - i)) & 1 : (v >> i) & 1;
        if (bit)
            buf[*bitpos / 8] |= (uint8_t)(1u << (*bitpos % 8));
        (*bitpos)++;
    }
}

static void deflate_bomb_init(struct deflate_bomb *b, const uint8_t *wrap, size_t wrap_len)
{
    uint8_t bits[64] = {0};
    size_t bp = 0;
    bits_put(bits, &bp, 0, 1, false);   /* BFINAL = 0 */
    bits_put(bits, &bp, 1, 2, false);   /* BTYPE = 01, fixed Huffman */
    bits_put(bits, &bp, 0x30, 8, true); /* literal 0: 00110000 */
    for (int i = 0; i < 24; i++) {
        bits_put(bits, &bp, 0xc5, 8, true); /* length 258: code 285 = 11000101 */
        bits_put(bits, &bp, 0, 5, true);    /* distance 1: code 0 = 00000 */
    }
    memcpy(b->head, wrap, wrap_len);
    memcpy(b->head + wrap_len, bits, 2);
    b->head_len = wrap_len + 2;
    memcpy(b->period, bits + 2, 13);
    VCHECK(memcmp(bits + 2, bits + 15, 13) == 0);
    b->sent = 0;
    b->total = TEN_GIB / (258 * 8) * 13; /* the input of 10 GiB of output */
}

static size_t deflate_bomb_gen(void *state, uint8_t *buf, size_t cap)
{
    struct deflate_bomb *b = state;
    size_t n = 0;
    if (b->sent == 0) {
        memcpy(buf, b->head, b->head_len);
        n = b->head_len;
    }
    while (n + 13 <= cap && b->sent < b->total) {
        memcpy(buf + n, b->period, 13);
        n += 13;
        b->sent += 13;
    }
    return n;
}

VTEST(bomb_deflate)
{
    static const uint8_t zlib_hdr[] = {0x78, 0x01};
    static const uint8_t gzip_hdr[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    struct deflate_bomb b;
    deflate_bomb_init(&b, zlib_hdr, sizeof zlib_hdr);
    bomb(VEGA_COMPRESS_DEFLATE, deflate_bomb_gen, &b, 64 << 10);
    deflate_bomb_init(&b, (const uint8_t *)"", 0); /* raw deflate */
    bomb(VEGA_COMPRESS_DEFLATE, deflate_bomb_gen, &b, 64 << 10);
    deflate_bomb_init(&b, gzip_hdr, sizeof gzip_hdr);
    bomb(VEGA_COMPRESS_GZIP, deflate_bomb_gen, &b, 64 << 10);
}

/* 10240 gzip members of 1 MiB of zeros each, made by the library. */
struct member_bomb {
    uint8_t *member;
    size_t len, pos;
    unsigned left;
};

static size_t member_bomb_gen(void *state, uint8_t *buf, size_t cap)
{
    struct member_bomb *b = state;
    size_t n = 0;
    while (n < cap && b->left) {
        size_t k = VEGA__MIN(cap - n, b->len - b->pos);
        memcpy(buf + n, b->member + b->pos, k);
        n += k;
        b->pos += k;
        if (b->pos == b->len) {
            b->pos = 0;
            b->left--;
        }
    }
    return n;
}

VTEST(bomb_gzip_members)
{
    uint8_t *zeros = calloc(1, 1 << 20);
    struct member_bomb b = {.left = 10240};
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_GZIP, 9, zeros, 1 << 20, 0, &b.member, &b.len), 0);
    VCHECK(b.len < 2048);
    bomb(VEGA_COMPRESS_GZIP, member_bomb_gen, &b, 64 << 10);
    free(b.member);
    /* The same with zstd frames. */
    b = (struct member_bomb){.left = 10240};
    VCHECK_EQ(vega_compress_buffer(VEGA_COMPRESS_ZSTD, 19, zeros, 1 << 20, 0, &b.member, &b.len),
              0);
    bomb(VEGA_COMPRESS_ZSTD, member_bomb_gen, &b, 4 << 20);
    free(b.member);
    free(zeros);
}

/* One zstd frame (RFC 8878 section 3.1.1) of 81920 RLE blocks of 128 KiB zeros: 4 bytes per
 * block. */
struct zstd_bomb {
    uint64_t blocks_left;
    bool header_sent;
    uint8_t window_desc;
};

static size_t zstd_bomb_gen(void *state, uint8_t *buf, size_t cap)
{
    struct zstd_bomb *b = state;
    size_t n = 0;
    if (!b->header_sent) {
        /* Magic, Frame_Header_Descriptor 0 (no content size, not single-segment), and the
         * Window_Descriptor. */
        const uint8_t h[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, b->window_desc};
        memcpy(buf, h, sizeof h);
        n = sizeof h;
        b->header_sent = true;
    }
    while (n + 4 <= cap && b->blocks_left) {
        /* Block_Header: Last_Block, Block_Type 1 (RLE), Block_Size 131072; then the byte. */
        uint32_t bh = (131072u << 3) | (1u << 1) | (b->blocks_left == 1);
        buf[n++] = (uint8_t)bh;
        buf[n++] = (uint8_t)(bh >> 8);
        buf[n++] = (uint8_t)(bh >> 16);
        buf[n++] = 0;
        b->blocks_left--;
    }
    return n;
}

VTEST(bomb_zstd_rle)
{
    /* Window_Descriptor 0x38: Exponent 7, Mantissa 0: 2^(10 + 7) = 128 KiB. */
    struct zstd_bomb b = {.blocks_left = TEN_GIB / 131072, .window_desc = 0x38};
    bomb(VEGA_COMPRESS_ZSTD, zstd_bomb_gen, &b, 1 << 20);
}

static size_t file_gen(void *state, uint8_t *buf, size_t cap)
{
    return fread(buf, 1, cap, state);
}

static FILE *open_data(const char *name)
{
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    snprintf(path, sizeof path, "%s/data/%s", dirname(dir), name);
    FILE *f = fopen(path, "rb");
    if (!f)
        vtest_fail(__FILE__, __LINE__, "cannot open %s", path);
    return f;
}

VTEST(bomb_brotli)
{
    /* data/zeros-10g.br: 10 GiB of zeros in 8 KB (window 16 MiB). */
    FILE *f = open_data("zeros-10g.br");
    bomb(VEGA_COMPRESS_BROTLI, file_gen, f, 17 << 20);
    fclose(f);
}

/* ---- zstd windows ------------------------------------------------------------------------- */

VTEST(zstd_window_limit)
{
    /* Window_Descriptor 0xa8: 2^31 (2 GiB); 0x70: 2^24 (16 MiB); 0x68: 2^23 (8 MiB). */
    const struct {
        uint8_t desc;
        unsigned opt_log;
        int want;
    } cases[] = {{0xa8, 0, -EFBIG}, {0x70, 0, -EFBIG},  {0x68, 0, 0},
                 {0x70, 24, 0},     {0xa8, 30, -EFBIG}, {0x68, 22, -EFBIG}};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(cases); i++) {
        struct zstd_bomb b = {.blocks_left = 3, .window_desc = cases[i].desc};
        uint8_t in[64];
        size_t n = zstd_bomb_gen(&b, in, sizeof in);
        struct track tr = {0};
        vega_compress_opts o = {.alloc = track_alloc,
                                .free = track_free,
                                .user_data = &tr,
                                .window_log = cases[i].opt_log};
        vega_decompressor *d;
        VCHECK_EQ(vega_decompressor_new(&d, VEGA_COMPRESS_ZSTD, 0, &o), 0);
        size_t made;
        int r = decode(d, in, n, n, 65536, true, NULL, 0, &made);
        VCHECK_EQ(r, cases[i].want);
        VCHECK(r < 0 || made == 3 * 131072);
        VCHECK(tr.peak < (20u << 20));
        vega_decompressor_free(d);
    }
    vega_compress_opts bad = {.window_log = 9};
    vega_decompressor *d = (vega_decompressor *)1;
    VCHECK_EQ(vega_decompressor_new(&d, VEGA_COMPRESS_ZSTD, 0, &bad), -EINVAL);
    VCHECK(d == NULL);
    bad.window_log = 32;
    VCHECK_EQ(vega_decompressor_new(&d, VEGA_COMPRESS_ZSTD, 0, &bad), -EINVAL);
}

/* ---- truncation and corruption ------------------------------------------------------------- */

static uint8_t *gzip_to_raw(const uint8_t *gz, size_t len, size_t *raw_len)
{
    /* Our gzip header has no optional fields: 10 bytes; the trailer is 8 (RFC 1952 2.3). */
    VCHECK(len > 18 && gz[3] == 0);
    *raw_len = len - 18;
    uint8_t *raw = malloc(*raw_len);
    memcpy(raw, gz + 10, *raw_len);
    return raw;
}

/* Every proper prefix of a stream is reported as truncated, whatever the chunking. */
VTEST(truncated)
{
    uint8_t *t = text_bytes(3000, 3);
    for (size_t i = 0; i <= VEGA__ARRAY_LEN(codecs); i++) {
        vega_compress_kind k = i < VEGA__ARRAY_LEN(codecs) ? codecs[i] : VEGA_COMPRESS_DEFLATE;
        size_t zl, made;
        uint8_t *z = pack(i < VEGA__ARRAY_LEN(codecs) ? k : VEGA_COMPRESS_GZIP, t, 3000, &zl);
        if (i == VEGA__ARRAY_LEN(codecs)) { /* raw deflate */
            uint8_t *raw = gzip_to_raw(z, zl, &zl);
            free(z);
            z = raw;
        }
        for (size_t cut = 0; cut < zl; cut++) {
            int r = decode_all(k, z, cut, 0, cut ? cut : 1, 65536, &made);
            if (r != -ENODATA)
                vtest_fail(__FILE__, __LINE__, "%s cut at %zu of %zu: %s",
                           vega_compress_kind_name(k), cut, zl, vega_err_name(r));
            VCHECK_EQ(decode_all(k, z, cut, 0, 5, 3, &made), -ENODATA);
        }
        VCHECK_EQ(decode_all(k, z, zl, 0, 5, 3, &made), 0);
        VCHECK_EQ(made, 3000);
        free(z);
    }
    free(t);
    /* Identity has no framing: an empty input is an empty body. */
    size_t made;
    VCHECK_EQ(decode_all(VEGA_COMPRESS_IDENTITY, (const uint8_t *)"", 0, 0, 1, 16, &made), 0);
}

static bool has_checksum(vega_compress_kind k)
{
    return k != VEGA_COMPRESS_BROTLI;
}

/* Flipped bits and overwritten bytes: a documented code, never a crash; where the format has a
 * checksum, success means the original data. */
VTEST(corrupt)
{
    uint8_t *t = text_bytes(2000, 4);
    uint64_t rng = 5;
    uint8_t *out = malloc(1 << 20);
    for (size_t i = 0; i < VEGA__ARRAY_LEN(codecs); i++) {
        vega_compress_kind k = codecs[i];
        size_t zl;
        uint8_t *z = pack(k, t, 2000, &zl);
        uint8_t *bad = malloc(zl);
        for (size_t trial = 0; trial < 8 * zl; trial++) {
            memcpy(bad, z, zl);
            if (trial < zl * 8 / 2)
                bad[trial / 4 % zl] ^= (uint8_t)(1u << (trial % 8));
            else
                bad[vega__rand_below(&rng, (uint32_t)zl)] = (uint8_t)vega__rand_next(&rng);
            vega_decompressor *d;
            VCHECK_EQ(vega_decompressor_new(&d, k, 1 << 20, NULL), 0);
            size_t made;
            size_t chunk = trial % 2 ? zl : 1 + trial % 7;
            int r = decode(d, bad, zl, chunk, 1 + trial % 300, true, out, 1 << 20, &made);
            vega_decompressor_free(d);
            if (r != 0 && r != VEGA_ERR_PROTO && r != -ENODATA && r != -EFBIG)
                vtest_fail(__FILE__, __LINE__, "%s trial %zu: %s", vega_compress_kind_name(k),
                           trial, vega_err_name(r));
            if (r == 0 && has_checksum(k) && (made != 2000 || memcmp(out, t, 2000) != 0))
                vtest_fail(__FILE__, __LINE__, "%s trial %zu: corrupt data accepted",
                           vega_compress_kind_name(k), trial);
        }
        free(bad);
        free(z);
    }
    free(out);
    free(t);
}

/* ---- trailing data, members, frames -------------------------------------------------------- */

VTEST(trailing_garbage)
{
    uint8_t *t = text_bytes(500, 6);
    const char *tails[] = {"x", "\0", "\0\0\0\0\0\0\0\0", "garbage after the end"};
    for (size_t i = 0; i < VEGA__ARRAY_LEN(codecs); i++) {
        size_t zl, made;
        uint8_t *z = pack(codecs[i], t, 500, &zl);
        for (size_t j = 0; j < VEGA__ARRAY_LEN(tails); j++) {
            size_t tl = j == 1 ? 1 : j == 2 ? 8 : strlen(tails[j]);
            uint8_t *zz = malloc(zl + tl);
            memcpy(zz, z, zl);
            memcpy(zz + zl, tails[j], tl);
            VCHECK_EQ(decode_all(codecs[i], zz, zl + tl, 0, zl + tl, 4096, &made), VEGA_ERR_PROTO);
            VCHECK_EQ(decode_all(codecs[i], zz, zl + tl, 0, 1, 1, &made), VEGA_ERR_PROTO);
            free(zz);
        }
        /* The stream complete, then more input in a later call. */
        vega_decompressor *d;
        VCHECK_EQ(vega_decompressor_new(&d, codecs[i], 0, NULL), 0);
        VCHECK_EQ(decode(d, z, zl, 64, 64, false, NULL, 0, &made), 0);
        VCHECK(vega_decompressor_is_done(d));
        uint8_t out[16];
        size_t took;
        VCHECK_EQ(vega_decompressor_write(d, (const uint8_t *)"?", 1, &took, out, sizeof out,
                                          VEGA_COMPRESS_FLUSH_NONE),
                  VEGA_ERR_PROTO);
        /* Errors are sticky. */
        VCHECK_EQ(
            vega_decompressor_write(d, NULL, 0, &took, out, sizeof out, VEGA_COMPRESS_FLUSH_FINISH),
            VEGA_ERR_PROTO);
        vega_decompressor_free(d);
        free(z);
    }
    free(t);
}

/* gzip members and zstd frames may follow each other (RFC 1952 2.2, RFC 8878 3.1); brotli and
 * deflate streams may not. */
VTEST(concatenated)
{
    uint8_t *a = text_bytes(3000, 7), *b = text_bytes(5000, 8);
    for (size_t i = 0; i < VEGA__ARRAY_LEN(codecs); i++) {
        vega_compress_kind k = codecs[i];
        size_t al, bl, el;
        uint8_t *za = pack(k, a, 3000, &al), *zb = pack(k, b, 5000, &bl);
        uint8_t *ze = pack(k, NULL, 0, &el);
        size_t cl = al + el + bl;
        uint8_t *cat = malloc(cl), *out = malloc(8001);
        memcpy(cat, za, al);
        memcpy(cat + al, ze, el);
        memcpy(cat + al + el, zb, bl);
        bool multi = k == VEGA_COMPRESS_GZIP || k == VEGA_COMPRESS_ZSTD;
        vega_decompressor *d;
        VCHECK_EQ(vega_decompressor_new(&d, k, 0, NULL), 0);
        size_t made;
        /* is_done at the end of the first stream, not before. */
        VCHECK_EQ(decode(d, cat, al - 1, 7, 100, false, out, 8001, &made), 0);
        VCHECK(!vega_decompressor_is_done(d));
        size_t m2;
        VCHECK_EQ(decode(d, cat + al - 1, 1, 1, 100, false, out + made, 8001 - made, &m2), 0);
        VCHECK(vega_decompressor_is_done(d));
        made += m2;
        VCHECK_EQ(made, 3000);
        int r = decode(d, cat + al, cl - al, 11, 100, true, out + made, 8001 - made, &m2);
        vega_decompressor_free(d);
        if (multi) {
            VCHECK_EQ(r, 0);
            VCHECK_EQ(made + m2, 8000);
            VCHECK(memcmp(out, a, 3000) == 0 && memcmp(out + 3000, b, 5000) == 0);
        } else {
            VCHECK_EQ(r, VEGA_ERR_PROTO);
        }
        free(za);
        free(zb);
        free(ze);
        free(cat);
        free(out);
    }
    free(a);
    free(b);
}

/* zstd skippable frames (RFC 8878 section 3.1.2) are skipped, before and between frames. */
VTEST(zstd_skippable)
{
    const uint8_t skip[] = {0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'};
    size_t zl;
    uint8_t *z = pack(VEGA_COMPRESS_ZSTD, (const uint8_t *)"hello", 5, &zl);
    uint8_t buf[256];
    memcpy(buf, skip, sizeof skip);
    memcpy(buf + sizeof skip, z, zl);
    memcpy(buf + sizeof skip + zl, skip, sizeof skip);
    uint8_t *out;
    size_t ol;
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_ZSTD, buf, sizeof skip * 2 + zl, 0, &out, &ol),
              0);
    VCHECK(ol == 5 && memcmp(out, "hello", 5) == 0);
    free(out);
    free(z);
}

/* RFC 8878 3.1.1.1.4: a frame whose blocks do not add up to its Frame_Content_Size is
 * corrupt, also when its last block is empty (libzstd's streaming decoder misses that case). */
VTEST(zstd_content_size)
{
    const struct {
        const char *bytes;
        size_t len;
        int want;
    } cases[] = {
        /* Single_Segment, FCS 95, an empty last raw block, and the checksum of nothing. */
        {"\x28\xb5\x2f\xfd\x24\x5f\x01\x00\x00\x99\xe9\xd8\x51", 13, VEGA_ERR_PROTO},
        /* The same without a checksum, FCS 5. */
        {"\x28\xb5\x2f\xfd\x20\x05\x01\x00\x00", 9, VEGA_ERR_PROTO},
        /* FCS 0: right. */
        {"\x28\xb5\x2f\xfd\x20\x00\x01\x00\x00", 9, 0},
        /* FCS 3 and a raw block of 3 bytes: right. */
        {"\x28\xb5\x2f\xfd\x20\x03\x19\x00\x00"
         "abc",
         12, 0},
        /* FCS 4 and a raw block of 3 bytes. */
        {"\x28\xb5\x2f\xfd\x20\x04\x19\x00\x00"
         "abc",
         12, VEGA_ERR_PROTO},
    };
    for (size_t i = 0; i < VEGA__ARRAY_LEN(cases); i++) {
        const uint8_t *in = (const uint8_t *)cases[i].bytes;
        size_t made;
        for (size_t chunk = 1; chunk <= cases[i].len; chunk++) {
            int r =
                decode_all(VEGA_COMPRESS_ZSTD, in, cases[i].len, 0, chunk, 1 + chunk % 4, &made);
            if (r != cases[i].want)
                vtest_fail(__FILE__, __LINE__, "case %zu chunk %zu: %s", i, chunk,
                           vega_err_name(r));
        }
    }
}

/* ---- deflate: zlib-wrapped and raw ---------------------------------------------------------- */

VTEST(deflate_zlib_and_raw)
{
    /* zlib.pack(b"hello") */
    const uint8_t zl[] = {0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9,
                          0x07, 0x00, 0x06, 0x2c, 0x02, 0x15};
    uint8_t *out;
    size_t ol, made;
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_DEFLATE, zl, sizeof zl, 0, &out, &ol), 0);
    VCHECK(ol == 5 && memcmp(out, "hello", 5) == 0);
    free(out);
    /* The same deflate data without the zlib wrapper, byte by byte. */
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, zl + 2, sizeof zl - 6, 0, 1, 1, &made), 0);
    VCHECK_EQ(made, 5);
    /* The empty raw stream is two bytes (an empty final fixed block); more is garbage. */
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, (const uint8_t *)"\x03\x00", 2, 0, 2, 8, &made), 0);
    VCHECK_EQ(made, 0);
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, (const uint8_t *)"\x03\x00", 2, 0, 1, 1, &made), 0);
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, (const uint8_t *)"\x03\x00\x00", 3, 0, 3, 8, &made),
              VEGA_ERR_PROTO);
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, (const uint8_t *)"\x03\x00\x00\x00\x00\x01", 6, 0,
                         6, 8, &made),
              VEGA_ERR_PROTO);
    /* A raw stream is not a gzip stream. */
    VCHECK_EQ(decode_all(VEGA_COMPRESS_GZIP, zl + 2, sizeof zl - 6, 0, 1, 1, &made),
              VEGA_ERR_PROTO);
    /* A wrong adler32 is caught. */
    uint8_t bad[sizeof zl];
    memcpy(bad, zl, sizeof zl);
    bad[sizeof zl - 1] ^= 1;
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, bad, sizeof bad, 0, 3, 3, &made), VEGA_ERR_PROTO);
    /* Raw deflate of a larger body, from our gzip output. */
    uint8_t *t = text_bytes(100000, 9);
    size_t gl, rl;
    uint8_t *gz = pack(VEGA_COMPRESS_GZIP, t, 100000, &gl);
    uint8_t *raw = gzip_to_raw(gz, gl, &rl);
    VCHECK_EQ(vega_decompress_buffer(VEGA_COMPRESS_DEFLATE, raw, rl, 0, &out, &ol), 0);
    VCHECK(ol == 100000 && memcmp(out, t, ol) == 0);
    free(out);
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, raw, rl, 0, 1, 7, &made), 0);
    VCHECK_EQ(made, 100000);
    free(raw);
    free(gz);
    free(t);
}

/* RFC 1950 section 2.2: FDICT streams need a dictionary HTTP never provides. */
VTEST(deflate_preset_dictionary)
{
    z_stream z = {0};
    VCHECK_EQ(deflateInit(&z, 6), Z_OK);
    VCHECK_EQ(deflateSetDictionary(&z, (const Bytef *)"hello world", 11), Z_OK);
    uint8_t out[128];
    z.next_in = (Bytef *)"hello world hello";
    z.avail_in = 17;
    z.next_out = out;
    z.avail_out = sizeof out;
    VCHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n = sizeof out - z.avail_out, made;
    deflateEnd(&z);
    VCHECK(out[1] & 0x20);
    VCHECK_EQ(decode_all(VEGA_COMPRESS_DEFLATE, out, n, 0, n, 64, &made), VEGA_ERR_PROTO);
}

VTEST(write_contract)
{
    vega_decompressor *d = (vega_decompressor *)1;
    VCHECK_EQ(vega_decompressor_new(&d, 0, 0, NULL), -EINVAL);
    VCHECK(d == NULL);
    VCHECK_EQ(vega_decompressor_new(&d, 6, 0, NULL), -EINVAL);
    VCHECK_EQ(vega_decompressor_new(NULL, VEGA_COMPRESS_GZIP, 0, NULL), -EINVAL);
    VCHECK_EQ(vega_decompressor_new(&d, VEGA_COMPRESS_GZIP, 0, NULL), 0);
    uint8_t out[8];
    size_t took = 99;
    VCHECK_EQ(vega_decompressor_write(d, NULL, 1, &took, out, 8, VEGA_COMPRESS_FLUSH_NONE),
              -EINVAL);
    VCHECK_EQ(took, 0);
    VCHECK_EQ(vega_decompressor_write(d, out, 1, &took, NULL, 8, VEGA_COMPRESS_FLUSH_NONE),
              -EINVAL);
    VCHECK_EQ(vega_decompressor_write(d, out, 1, &took, out, 0, VEGA_COMPRESS_FLUSH_NONE),
              VEGA_ERR_NOBUF);
    /* Not fatal: the stream still decodes. */
    size_t zl, made;
    uint8_t *z = pack(VEGA_COMPRESS_GZIP, (const uint8_t *)"abc", 3, &zl);
    VCHECK_EQ(decode(d, z, zl, 2, 2, true, NULL, 0, &made), 0);
    VCHECK_EQ(made, 3);
    VCHECK(vega_decompressor_is_done(d));
    VCHECK_EQ(vega_decompressor_get_total_out(d), 3);
    vega_decompressor_free(d);
    vega_decompressor_free(NULL);
    VCHECK(!vega_decompressor_is_done(NULL));
    free(z);
}
