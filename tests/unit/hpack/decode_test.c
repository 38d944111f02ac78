/* SPDX-License-Identifier: MIT */
/* HPACK decoder: malformed blocks (RFC 7541 §5, §6), table size updates (§4.2, §6.3), eviction
 * corner cases (§4.4), and the limits that bound a decompression bomb (§7.3) -- with the
 * memory it uses counted. */
#include <vega/hpack.h>

#include "tmem.h"
#include "vtest.h"

struct seen {
    size_t n, bytes;
    int fail_on;
    char last[128];
};

static int cb(void *ud, const vega_hpack_field *f)
{
    struct seen *s = ud;
    s->n++;
    s->bytes += f->name.len + f->value.len;
    snprintf(s->last, sizeof s->last, "%.*s: %.*s", (int)f->name.len, f->name.ptr,
             (int)f->value.len, f->value.ptr);
    return s->fail_on && (int)s->n == s->fail_on;
}

static vega_hpack_decoder *dec(const vega_hpack_decoder_opts *o)
{
    vega_hpack_decoder *d;
    VCHECK_EQ(vega_hpack_decoder_new(&d, o), 0);
    return d;
}

static int run(vega_hpack_decoder *d, const char *hex, struct seen *s)
{
    uint8_t in[4096];
    size_t n = vtest_unhex(hex, in, sizeof in);
    return vega_hpack_decode(d, in, n, cb, s);
}

/* One malformed block on a fresh decoder: the code, and that it sticks. */
static void bad(const char *hex, int code)
{
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {0};
    VCHECK_EQ(run(d, hex, &s), code);
    VCHECK_EQ(run(d, "82", &s), code);
    vega_hpack_decoder_free(d);
}

/* RFC 7541 §6.1: "The index value of 0 is not used. It MUST be treated as a decoding error". */
VTEST(s6_1_index_zero)
{
    bad("80", VEGA_ERR_HPACK_DECODE);
}

/* §2.3.3: "Indices strictly greater than the sum of the lengths of both tables MUST be treated
 * as a decoding error." 62 on an empty dynamic table; 63 with one entry; a literal name index. */
VTEST(s2_3_3_index_out_of_range)
{
    bad("be", VEGA_ERR_HPACK_DECODE);
    bad("400161016282bf", VEGA_ERR_HPACK_DECODE);
    bad("7f0001610162", VEGA_ERR_HPACK_DECODE);
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {0};
    VCHECK_EQ(run(d, "4001610162be", &s), 0); /* a: b added, then indexed as 62 */
    VCHECK_STR(s.last, "a: b");
    vega_hpack_decoder_free(d);
}

/* §5.1: "Integer encodings that exceed implementation limits -- in value or octet length --
 * MUST be treated as decoding errors." */
VTEST(s5_1_integer_overflow)
{
    bad("ffffffffffffffffffffff7f", VEGA_ERR_HPACK_DECODE);
    bad("ff80808080808080808080808000", VEGA_ERR_HPACK_DECODE);
}

/* §5.2: EOS inside a string, padding over 7 bits, padding that is not EOS's prefix. */
VTEST(s5_2_huffman_errors)
{
    bad("0082"
        "ffff"
        "0161",
        VEGA_ERR_HPACK_DECODE); /* name is all ones: EOS */
    bad("0082"
        "1fff"
        "0161",
        VEGA_ERR_HPACK_DECODE); /* 'a' then 11 bits of padding */
    bad("0081"
        "18"
        "0161",
        VEGA_ERR_HPACK_DECODE); /* 'a' (00011) then 000 padding */
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {0};
    VCHECK_EQ(run(d,
                  "0081"
                  "1f"
                  "0161",
                  &s),
              0); /* 'a' with 111 padding */
    VCHECK_STR(s.last, "a: a");
    vega_hpack_decoder_free(d);
}

/* A block that ends inside a representation. */
VTEST(truncated_representations)
{
    bad("40", VEGA_ERR_HPACK_DECODE);
    bad("4001", VEGA_ERR_HPACK_DECODE);
    bad("400161", VEGA_ERR_HPACK_DECODE);
    bad("40016101", VEGA_ERR_HPACK_DECODE);
    bad("ff", VEGA_ERR_HPACK_DECODE);
    bad("3f", VEGA_ERR_HPACK_DECODE);
}

/* §6.3 / §4.2: updates only at the start, at most two, never above the protocol's limit. */
VTEST(s6_3_size_update_rules)
{
    bad("8220", VEGA_ERR_HPACK_DECODE);   /* after a field */
    bad("202020", VEGA_ERR_HPACK_DECODE); /* a third one */
    bad("3fe21f", VEGA_ERR_HPACK_DECODE); /* 4097 > 4096 */
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {0};
    VCHECK_EQ(run(d, "3fe11f82", &s), 0); /* 4096, then a field */
    VCHECK_EQ(run(d,
                  "20"
                  "3fe11f",
                  &s),
              0); /* 0 then 4096: the table was emptied */
    VCHECK_EQ(run(d, "400161016220", &s), VEGA_ERR_HPACK_DECODE);
    vega_hpack_decoder_free(d);
}

/* §4.2: once the limit drops below the table's maximum, the next block must start with an
 * update within it; a rise needs none. */
VTEST(s4_2_required_update_after_settings)
{
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {0};
    VCHECK_EQ(run(d, "4001610162", &s), 0);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 8192), 0);
    VCHECK_EQ(run(d, "be", &s), 0); /* no update needed for a rise */
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 100), 0);
    VCHECK_EQ(run(d, "3f45be", &s), 0); /* 100 keeps a: b (34 bytes) */
    VCHECK_EQ(vega_hpack_decoder_table_len(d), 1);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 0), 0);
    VCHECK_EQ(run(d, "82", &s), VEGA_ERR_HPACK_DECODE); /* missing */
    vega_hpack_decoder_free(d);

    d = dec(NULL);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 10), 0);
    VCHECK_EQ(run(d, "2b", &s), VEGA_ERR_HPACK_DECODE); /* 11 > 10 */
    vega_hpack_decoder_free(d);
    d = dec(NULL);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 10), 0);
    VCHECK_EQ(run(d, "", &s), VEGA_ERR_HPACK_DECODE); /* an empty block owes it too */
    vega_hpack_decoder_free(d);
    d = dec(NULL);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 10), 0);
    VCHECK_EQ(run(d, "2a", &s), 0);
    VCHECK_EQ(vega_hpack_decoder_set_max_table_size(d, 1u << 25), -EINVAL);
    vega_hpack_decoder_free(d);
}

/* §4.4: an entry larger than the table empties it; a new entry may name an entry its own
 * insertion evicts. */
VTEST(s4_4_eviction_corners)
{
    vega_hpack_decoder_opts o = {.max_table_size = 70};
    vega_hpack_decoder *d = dec(&o);
    struct seen s = {0};
    VCHECK_EQ(run(d, "4004616161610462626262", &s), 0); /* aaaa: bbbb, 40 bytes */
    /* A literal naming entry 62 (aaaa) with a 30-byte value: 66 bytes, so aaaa: bbbb is evicted
     * before the insertion, yet the new entry keeps the name. */
    VCHECK_EQ(run(d,
                  "7e1e"
                  "303132333435363738393031323334353637383930313233343536373839",
                  &s),
              0);
    VCHECK_EQ(vega_hpack_decoder_table_len(d), 1);
    vega_hpack_field f;
    VCHECK_EQ(vega_hpack_decoder_table_get(d, 0, &f), 0);
    VCHECK(f.name.len == 4 && memcmp(f.name.ptr, "aaaa", 4) == 0);
    VCHECK_EQ(vega_hpack_decoder_table_size(d), 66);
    /* 39 + 32 = 71 > 70: the table empties, nothing is added, the field still comes out. */
    VCHECK_EQ(run(d,
                  "40016126"
                  "303132333435363738393031323334353637383930313233343536373839"
                  "3031323334353637",
                  &s),
              0);
    VCHECK_EQ(vega_hpack_decoder_table_len(d), 0);
    VCHECK_EQ(vega_hpack_decoder_table_size(d), 0);
    vega_hpack_decoder_free(d);
}

/* A string declared longer than max_string_len is refused before its bytes arrive; a Huffman
 * one is refused as it decodes past the limit. */
VTEST(string_limit)
{
    vega_hpack_decoder_opts o = {.max_string_len = 4};
    vega_hpack_decoder *d = dec(&o);
    struct seen s = {0};
    VCHECK_EQ(run(d, "0004616161610162", &s), 0);
    VCHECK_EQ(run(d, "00056161616161", &s), VEGA_ERR_HPACK_STRING_TOO_LONG);
    vega_hpack_decoder_free(d);
    d = dec(&o);
    VCHECK_EQ(run(d, "007fffffff0f", &s), VEGA_ERR_HPACK_STRING_TOO_LONG); /* declared only */
    vega_hpack_decoder_free(d);
    d = dec(&o);
    /* "aaaaa" in Huffman (5 x 00011 = 25 bits, 4 bytes): shorter on the wire than the limit,
     * longer decoded. */
    VCHECK_EQ(run(d,
                  "0084"
                  "18c631ff"
                  "0161",
                  &s),
              VEGA_ERR_HPACK_STRING_TOO_LONG);
    vega_hpack_decoder_free(d);
}

/* The bomb (§7.3): one 4000-byte entry, then a 16 KiB block that indexes it 16384 times --
 * 65 MB of headers. The list limit stops the fields at 64 KiB, the block is still processed
 * to its end (the table stays in step), and the decoder's memory stays near its table. */
VTEST(s7_3_bomb_is_bounded)
{
    struct tmem m;
    tmem_init(&m);
    vega_hpack_decoder_opts o = {.mem = &m.mem};
    vega_hpack_decoder *d = dec(&o);
    static uint8_t blk[16384 + 8];
    size_t n = 0;
    blk[n++] = 0x40;
    blk[n++] = 0x01;
    blk[n++] = 'x';
    blk[n++] = 0x7f; /* value length 4000 = 127 + 3873 */
    blk[n++] = 0xa1;
    blk[n++] = 0x1e;
    static uint8_t big[4000 + 16];
    memcpy(big, blk, n);
    memset(big + n, 'v', 4000);
    struct seen s = {0};
    VCHECK_EQ(vega_hpack_decode(d, big, n + 4000, cb, &s), 0);
    memset(blk, 0xbe, 16384); /* index 62, 16384 times */
    s = (struct seen){0};
    VCHECK_EQ(vega_hpack_decode(d, blk, 16384, cb, &s), VEGA_ERR_HPACK_TOO_LARGE);
    /* 4001 + 32 per field: 16 fit in 65536. */
    VCHECK_EQ(s.n, 16);
    VCHECK(s.bytes <= 65536);
    VCHECK(m.peak_bytes < 3 * 4096 + 2048);
    /* Not fatal: the next block decodes. */
    s = (struct seen){0};
    VCHECK_EQ(vega_hpack_decode(d, blk, 1, cb, &s), 0);
    VCHECK_EQ(s.n, 1);
    vega_hpack_decoder_free(d);
    VCHECK_EQ(m.live_blocks, 0);
}

VTEST(field_count_limit)
{
    vega_hpack_decoder_opts o = {.max_fields = 3};
    vega_hpack_decoder *d = dec(&o);
    struct seen s = {0};
    VCHECK_EQ(run(d, "828282", &s), 0);
    s = (struct seen){0};
    VCHECK_EQ(run(d, "82828282", &s), VEGA_ERR_HPACK_TOO_LARGE);
    VCHECK_EQ(s.n, 3);
    vega_hpack_decoder_free(d);
}

/* A callback that fails stops the block and the decoder (its table is half updated). */
VTEST(callback_failure_is_sticky)
{
    vega_hpack_decoder *d = dec(NULL);
    struct seen s = {.fail_on = 2};
    VCHECK_EQ(run(d, "828684", &s), VEGA_ERR_CALLBACK);
    VCHECK_EQ(s.n, 2);
    VCHECK_EQ(run(d, "82", &s), VEGA_ERR_CALLBACK);
    vega_hpack_decoder_free(d);
}

VTEST(bad_arguments)
{
    vega_hpack_decoder *d;
    VCHECK_EQ(vega_hpack_decoder_new(NULL, NULL), -EINVAL);
    vega_hpack_decoder_opts o = {.max_table_size = (size_t)1 << 25};
    VCHECK_EQ(vega_hpack_decoder_new(&d, &o), -EINVAL);
    vega_mem half = {0};
    o = (vega_hpack_decoder_opts){.mem = &half};
    VCHECK_EQ(vega_hpack_decoder_new(&d, &o), -EINVAL);
    VCHECK_EQ(vega_hpack_decoder_new_versioned(&d, NULL, 99), -EINVAL);
    VCHECK_EQ(vega_hpack_decode(NULL, NULL, 0, NULL, NULL), -EINVAL);
    d = dec(NULL);
    VCHECK_EQ(vega_hpack_decode(d, NULL, 1, NULL, NULL), -EINVAL);
    VCHECK_EQ(vega_hpack_decode(d, NULL, 0, NULL, NULL), 0);
    vega_hpack_decoder_free(d);
    vega_hpack_decoder_free(NULL);
    o = (vega_hpack_decoder_opts){.max_table_size = VEGA_HPACK_TABLE_OFF};
    d = dec(&o);
    struct seen s = {0};
    VCHECK_EQ(run(d, "4001610162be", &s), VEGA_ERR_HPACK_DECODE); /* nothing was added */
    vega_hpack_decoder_free(d);
}

/* Every allocation of a decoding session fails in turn: -ENOMEM, nothing leaks. */
VTEST(allocation_failures)
{
    static const char *blocks[] = {
        "828684410f7777772e6578616d706c652e636f6d",
        "828684418cf1e3c2e5f23a6ba0ab90f4ff",
        "40016101627e0178",
    };
    for (size_t fail = 1;; fail++) {
        struct tmem m;
        tmem_init(&m);
        m.fail_at = fail;
        vega_hpack_decoder_opts o = {.mem = &m.mem};
        vega_hpack_decoder *d;
        int rc = vega_hpack_decoder_new(&d, &o);
        if (rc == 0) {
            for (size_t i = 0; i < 3 && rc == 0; i++) {
                struct seen s = {0};
                rc = run(d, blocks[i], &s);
            }
            vega_hpack_decoder_free(d);
        }
        VCHECK(rc == 0 || rc == -ENOMEM);
        VCHECK_EQ(m.live_blocks, 0);
        if (!m.failed)
            break;
    }
}
