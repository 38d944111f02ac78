/* SPDX-License-Identifier: MIT */
/* HPACK encoder: the indexing policy (RFC 7541 §7.1), Huffman only when shorter (§5.2), the
 * table size updates a settings change asks for (§4.2, §6.3), and random header lists that go
 * through the encoder and the decoder and come back the same, with both tables equal. */
#include <vega/hpack.h>

#include "base.h"
#include "tmem.h"
#include "vtest.h"

#define FLD(n, v, i)                                                                               \
    (vega_hpack_field)                                                                             \
    {                                                                                              \
        {n, strlen(n)}, {v, strlen(v)}, i                                                          \
    }

static vega_hpack_encoder *enc(size_t table, vega_hpack_huffman h)
{
    vega_hpack_encoder_opts o = {.max_table_size = table, .huffman = h};
    vega_hpack_encoder *e;
    VCHECK_EQ(vega_hpack_encoder_new(&e, &o), 0);
    return e;
}

/* Encodes f alone; the first 512 bytes of the block into out. */
static size_t one(vega_hpack_encoder *e, vega_hpack_field f, uint8_t *out)
{
    static uint8_t buf[32768];
    vega_ssize k = vega_hpack_encode(e, buf, sizeof buf, &f, 1);
    VCHECK(k > 0);
    memcpy(out, buf, (size_t)k < 512 ? (size_t)k : 512);
    return (size_t)k;
}

/* §7.1.3: secrets go as never-indexed literals (first byte 0001xxxx), even when sent twice;
 * long cookies are indexed; volatile fields go without indexing (0000xxxx). */
VTEST(s7_1_policy)
{
    vega_hpack_encoder *e = enc(0, VEGA_HPACK_HUFFMAN_NEVER);
    uint8_t out[512];
    const char *never[][2] = {{"authorization", "Bearer abc"},
                              {"proxy-authorization", "Basic eA=="},
                              {"set-cookie", "id=1; Secure"},
                              {"cookie", "short=1"}};
    for (size_t i = 0; i < 4; i++)
        for (int twice = 0; twice < 2; twice++) {
            one(e, FLD(never[i][0], never[i][1], VEGA_HPACK_INDEX_AUTO), out);
            VCHECK_EQ(out[0] & 0xf0, 0x10);
        }
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 0);
    const char *no[] = {":path", "content-length", "etag", "location", "if-none-match", "age"};
    for (size_t i = 0; i < 6; i++) {
        one(e, FLD(no[i], "/x", VEGA_HPACK_INDEX_AUTO), out);
        VCHECK_EQ(out[0] & 0xf0, 0x00);
    }
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 0);
    one(e, FLD("cookie", "session=0123456789abcdef0123", VEGA_HPACK_INDEX_AUTO), out);
    VCHECK_EQ(out[0] & 0xc0, 0x40);
    one(e, FLD("user-agent", "vega", VEGA_HPACK_INDEX_AUTO), out);
    VCHECK_EQ(out[0], 0x40 | 58);
    VCHECK_EQ(one(e, FLD("user-agent", "vega", VEGA_HPACK_INDEX_AUTO), out), 1);
    VCHECK_EQ(out[0], 0x80 | 62); /* the newest entry */
    /* A static whole match is an index whatever the wish -- except NEVER. */
    VCHECK_EQ(one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_NO), out), 1);
    VCHECK_EQ(out[0], 0x82);
    one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_NEVER), out);
    VCHECK_EQ(out[0], 0x12);
    /* Larger than three quarters of the table: not indexed. */
    char big[3200];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = 0;
    one(e, FLD("x-big", big, VEGA_HPACK_INDEX_AUTO), out);
    VCHECK_EQ(out[0], 0x00);
    /* YES for a field the table cannot hold at all is sent without indexing. */
    char huge[4100];
    memset(huge, 'h', sizeof huge - 1);
    huge[sizeof huge - 1] = 0;
    size_t before = vega_hpack_encoder_table_len(e);
    one(e, FLD("x-huge", huge, VEGA_HPACK_INDEX_YES), out);
    VCHECK_EQ(out[0], 0x00);
    VCHECK_EQ(vega_hpack_encoder_table_len(e), before);
    vega_hpack_encoder_free(e);
}

/* §5.2 with AUTO: the Huffman form only when strictly shorter. */
VTEST(s5_2_huffman_when_shorter)
{
    vega_hpack_encoder *e = enc(0, VEGA_HPACK_HUFFMAN_AUTO);
    uint8_t out[512];
    /* "www.example.com": 12 bytes in Huffman (C.4.1). */
    size_t k = one(e, FLD(":authority", "www.example.com", VEGA_HPACK_INDEX_NO), out);
    VCHECK_EQ(k, 14);
    VCHECK_EQ(out[1], 0x80 | 12);
    /* "{}" has 15-bit codes: longer in Huffman, so raw. */
    k = one(e, FLD("x", "{}{}", VEGA_HPACK_INDEX_NO), out);
    VCHECK_EQ(out[3], 4);
    vega_hpack_encoder_free(e);
    e = enc(0, VEGA_HPACK_HUFFMAN_ALWAYS);
    k = one(e, FLD("x", "{}{}", VEGA_HPACK_INDEX_NO), out);
    VCHECK_EQ(out[3], 0x80 | 8); /* 2 x (15 + 14) bits = 58 bits = 8 bytes */
    vega_hpack_encoder_free(e);
}

/* §4.2: a lowered limit makes the next block start with the smallest size since the last
 * block, then the final one; a rise the decoder does not need is not announced; the decoder
 * accepts what the encoder sends. */
VTEST(s4_2_size_updates)
{
    vega_hpack_encoder *e = enc(0, VEGA_HPACK_HUFFMAN_NEVER);
    vega_hpack_decoder *d;
    VCHECK_EQ(vega_hpack_decoder_new(&d, NULL), 0);
    uint8_t out[512];
    vega_hpack_field f = FLD("x-a", "1", VEGA_HPACK_INDEX_YES);
    VCHECK(vega_hpack_decode(d, out, one(e, f, out), NULL, NULL) == 0);
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 1);
    /* 4096 -> 0 -> 4096 between two blocks: 0 then 4096. */
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, 0), 0);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 0), 0);
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, 4096), 0);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 4096), 0);
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 0);
    size_t k = one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_AUTO), out);
    VCHECK_EQ(k, 5);
    VCHECK(memcmp(out, "\x20\x3f\xe1\x1f\x82", 5) == 0);
    VCHECK_EQ(vega_hpack_decode(d, out, k, NULL, NULL), 0);
    /* Only once. */
    VCHECK_EQ(one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_AUTO), out), 1);
    /* A rise above what the decoder knows is not used until announced: with the encoder's
     * cap at 4096 a peer limit of 65536 changes nothing. */
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, 65536), 0);
    VCHECK_EQ(one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_AUTO), out), 1);
    /* Down to 100: announced. */
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, 100), 0);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 100), 0);
    k = one(e, FLD(":method", "GET", VEGA_HPACK_INDEX_AUTO), out);
    VCHECK(k == 3 && out[0] == 0x3f && out[1] == 69 && out[2] == 0x82);
    VCHECK_EQ(vega_hpack_decode(d, out, k, NULL, NULL), 0);
    VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, (size_t)1 << 33), -EINVAL);
    vega_hpack_encoder_free(e);
    vega_hpack_decoder_free(d);

    /* A cap under 4096 is used silently, and the decoder keeps its 4096 without harm. */
    e = enc(64, VEGA_HPACK_HUFFMAN_NEVER);
    VCHECK_EQ(vega_hpack_decoder_new(&d, NULL), 0);
    for (int i = 0; i < 5; i++) {
        char v[8];
        snprintf(v, sizeof v, "%d", i);
        vega_hpack_field g[2] = {FLD("x-n", v, VEGA_HPACK_INDEX_YES),
                                 FLD("x-n", v, VEGA_HPACK_INDEX_YES)};
        vega_ssize n = vega_hpack_encode(e, out, sizeof out, g, 2);
        VCHECK(n > 0 && out[0] != 0x20);
        VCHECK_EQ(vega_hpack_decode(d, out, (size_t)n, NULL, NULL), 0);
    }
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 1);
    VCHECK_EQ(vega_hpack_decoder_table_len(d), 5);
    vega_hpack_encoder_free(e);
    vega_hpack_decoder_free(d);
}

VTEST(nobuf_and_bad_arguments)
{
    vega_hpack_encoder *e = enc(0, VEGA_HPACK_HUFFMAN_AUTO);
    uint8_t out[64];
    vega_hpack_field f = FLD("x-a", "1", VEGA_HPACK_INDEX_YES);
    VCHECK_EQ(vega_hpack_encode(e, out, 8, &f, 1), VEGA_ERR_NOBUF);
    VCHECK_EQ(vega_hpack_encoder_table_len(e), 0);
    f.index = (vega_hpack_index)7;
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, &f, 1), -EINVAL);
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, NULL, 1), -EINVAL);
    VCHECK_EQ(vega_hpack_encode(NULL, out, sizeof out, NULL, 0), -EINVAL);
    vega_hpack_field g = {{NULL, 3}, {"1", 1}, VEGA_HPACK_INDEX_AUTO};
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, &g, 1), -EINVAL);
    VCHECK_EQ(vega_hpack_encode(e, out, sizeof out, NULL, 0), 0);
    vega_hpack_encoder_free(e);
    vega_hpack_encoder_free(NULL);
    vega_hpack_encoder_opts o = {.huffman = (vega_hpack_huffman)9};
    VCHECK_EQ(vega_hpack_encoder_new(&e, &o), -EINVAL);
    VCHECK_EQ(vega_hpack_encoder_new(NULL, NULL), -EINVAL);
    VCHECK_EQ(vega_hpack_encoder_new_versioned(&e, NULL, 2), -EINVAL);
}

/* ---- random round trips ---- */

struct rt_log {
    vega_hpack_field *want;
    size_t n, at;
};

static int rt_cb(void *ud, const vega_hpack_field *f)
{
    struct rt_log *l = ud;
    VCHECK(l->at < l->n);
    const vega_hpack_field *w = &l->want[l->at++];
    VCHECK_EQ(f->name.len, w->name.len);
    VCHECK_EQ(f->value.len, w->value.len);
    VCHECK(f->name.len == 0 || memcmp(f->name.ptr, w->name.ptr, f->name.len) == 0);
    VCHECK(f->value.len == 0 || memcmp(f->value.ptr, w->value.ptr, f->value.len) == 0);
    if (w->index == VEGA_HPACK_INDEX_NEVER)
        VCHECK_EQ(f->index, VEGA_HPACK_INDEX_NEVER);
    return 0;
}

static void tables_equal(const vega_hpack_encoder *e, const vega_hpack_decoder *d)
{
    /* The decoder may keep older entries (a silent smaller encoder table); the newest ones
     * agree. */
    size_t n = vega_hpack_encoder_table_len(e);
    VCHECK(vega_hpack_decoder_table_len(d) >= n);
    for (size_t i = 0; i < n; i++) {
        vega_hpack_field a, b;
        VCHECK_EQ(vega_hpack_encoder_table_get(e, i, &a), 0);
        VCHECK_EQ(vega_hpack_decoder_table_get(d, i, &b), 0);
        VCHECK(a.name.len == b.name.len && a.value.len == b.value.len);
        VCHECK(memcmp(a.name.ptr, b.name.ptr, a.name.len) == 0);
        VCHECK(memcmp(a.value.ptr, b.value.ptr, a.value.len) == 0);
    }
}

VTEST(random_round_trips)
{
    static const char *names[] = {":method",      ":path", "accept",        "cookie",
                                  "x-a",          "x-b",   "authorization", "set-cookie",
                                  "content-type", "x-long"};
    static char pool[64][80];
    uint64_t seed = 42;
    for (int i = 0; i < 64; i++) {
        size_t len = vega__rand_next(&seed) % 79;
        for (size_t k = 0; k < len; k++)
            pool[i][k] = (char)(vega__rand_next(&seed) % 256);
        pool[i][len] = 0;
        if (i % 4 == 0)
            snprintf(pool[i], sizeof pool[i], "v%d", i % 7);
    }
    for (int round = 0; round < 40; round++) {
        size_t caps[] = {0, 64, 256, VEGA_HPACK_TABLE_OFF};
        vega_hpack_huffman hs[] = {VEGA_HPACK_HUFFMAN_AUTO, VEGA_HPACK_HUFFMAN_NEVER,
                                   VEGA_HPACK_HUFFMAN_ALWAYS};
        vega_hpack_encoder *e = enc(caps[round % 4], hs[round % 3]);
        vega_hpack_decoder *d;
        VCHECK_EQ(vega_hpack_decoder_new(&d, NULL), 0);
        for (int blk = 0; blk < 30; blk++) {
            if (vega__rand_next(&seed) % 8 == 0) {
                size_t m = vega__rand_next(&seed) % 5000;
                VCHECK_EQ(vega_hpack_encoder_set_max_table_size(e, m), 0);
                VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, m), 0);
            }
            vega_hpack_field f[12];
            size_t n = vega__rand_next(&seed) % 12;
            for (size_t i = 0; i < n; i++) {
                const char *nm = names[vega__rand_next(&seed) % 10];
                const char *v = pool[vega__rand_next(&seed) % 64];
                f[i] = (vega_hpack_field){{nm, strlen(nm)},
                                          {v, strlen(v)},
                                          (vega_hpack_index)(vega__rand_next(&seed) % 4)};
            }
            static uint8_t out[8192];
            vega_ssize k = vega_hpack_encode(e, out, sizeof out, f, n);
            VCHECK(k >= 0);
            struct rt_log l = {f, n, 0};
            VCHECK_EQ(vega_hpack_decode(d, out, (size_t)k, rt_cb, &l), 0);
            VCHECK_EQ(l.at, n);
            tables_equal(e, d);
        }
        vega_hpack_encoder_free(e);
        vega_hpack_decoder_free(d);
    }
}

/* Each allocation fails in turn: encode returns -ENOMEM with the table unchanged, so a retry
 * with memory produces a block the decoder accepts. */
VTEST(allocation_failures)
{
    for (size_t fail = 1;; fail++) {
        struct tmem m;
        tmem_init(&m);
        m.fail_at = fail;
        vega_hpack_encoder_opts o = {.mem = &m.mem};
        vega_hpack_encoder *e;
        int rc = vega_hpack_encoder_new(&e, &o);
        if (rc == 0) {
            vega_hpack_decoder *d;
            VCHECK_EQ(vega_hpack_decoder_new(&d, NULL), 0);
            for (int i = 0; i < 3; i++) {
                vega_hpack_field f[2] = {FLD("x-a", "1", VEGA_HPACK_INDEX_YES),
                                         FLD("x-b", "2", VEGA_HPACK_INDEX_YES)};
                uint8_t out[256];
                vega_ssize k = vega_hpack_encode(e, out, sizeof out, f, 2);
                if (k == -ENOMEM) {
                    VCHECK_EQ(vega_hpack_encoder_table_len(e), 0);
                    m.fail_at = 0;
                    k = vega_hpack_encode(e, out, sizeof out, f, 2);
                }
                VCHECK(k > 0);
                VCHECK_EQ(vega_hpack_decode(d, out, (size_t)k, NULL, NULL), 0);
            }
            tables_equal(e, d);
            vega_hpack_encoder_free(e);
            vega_hpack_decoder_free(d);
        } else {
            VCHECK_EQ(rc, -ENOMEM);
        }
        VCHECK_EQ(m.live_blocks, 0);
        if (!m.failed)
            break;
    }
}
