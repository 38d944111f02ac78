/* SPDX-License-Identifier: MIT */
/* libFuzzer target for HPACK (lib/hpack). Byte 0 picks the mode and limits.
 * Mode 0: the rest is a sequence of blocks (a length byte each) decoded in order by one
 * decoder with small limits: never a crash, fields within the limits, a fatal error sticks,
 * and the decoder's memory stays within its bound.
 * Mode 1: the rest describes header lists (names, values, index wishes, table size changes)
 * that an encoder encodes and a decoder decodes: every list must come back the same, with
 * both tables agreeing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/hpack.h>

#include "fuzz_target.h"
#include "tmem.h"

struct dec_st {
    const vega_hpack_decoder_opts *o;
    size_t n, list;
};

static int dec_cb(void *ud, const vega_hpack_field *f)
{
    struct dec_st *s = ud;
    s->n++;
    s->list += f->name.len + f->value.len + 32;
    if (f->name.len > s->o->max_string_len || f->value.len > s->o->max_string_len ||
        s->n > s->o->max_fields || s->list > s->o->max_list_size || (!f->name.ptr && f->name.len))
        abort();
    return 0;
}

static void decode_blocks(const uint8_t *d, size_t n, uint8_t flags)
{
    struct tmem m;
    tmem_init(&m);
    vega_hpack_decoder_opts o = {.max_table_size = flags & 2 ? 256 : 4096,
                                 .max_list_size = flags & 4 ? 512 : 65536,
                                 .max_fields = flags & 8 ? 8 : 256,
                                 .max_string_len = flags & 16 ? 64 : 65536,
                                 .mem = &m.mem};
    vega_hpack_decoder *dec;
    if (vega_hpack_decoder_new(&dec, &o) != 0)
        abort();
    int sticky = 0;
    size_t at = 0;
    while (at < n) {
        size_t len = d[at++];
        if (len == 255 && at < n) { /* a table size change instead of a block */
            vega_hpack_decoder_set_max_table_size(dec, (size_t)d[at++] * 32);
            continue;
        }
        len = len < n - at ? len : n - at;
        struct dec_st s = {.o = &o};
        int rc = vega_hpack_decode(dec, d + at, len, dec_cb, &s);
        at += len;
        if (sticky && rc != sticky)
            abort();
        if (rc != 0 && rc != VEGA_ERR_HPACK_TOO_LARGE && rc != VEGA_ERR_HPACK_DECODE &&
            rc != VEGA_ERR_HPACK_STRING_TOO_LONG)
            abort();
        if (rc == VEGA_ERR_HPACK_DECODE || rc == VEGA_ERR_HPACK_STRING_TOO_LONG)
            sticky = rc;
        if (vega_hpack_decoder_table_size(dec) > 8192)
            abort();
    }
    /* Table (twice its largest maximum, 8 KiB), entries, two strings of scratch, the object. */
    if (m.peak_bytes > 2 * 8192 + 8192 / 32 * 32 + 2 * o.max_string_len + 4096)
        abort();
    vega_hpack_decoder_free(dec);
    if (m.live_blocks)
        abort();
}

struct rt_st {
    const vega_hpack_field *want;
    size_t n, at;
};

static int rt_cb(void *ud, const vega_hpack_field *f)
{
    struct rt_st *s = ud;
    if (s->at >= s->n)
        abort();
    const vega_hpack_field *w = &s->want[s->at++];
    if (f->name.len != w->name.len || f->value.len != w->value.len ||
        (f->name.len && memcmp(f->name.ptr, w->name.ptr, f->name.len)) ||
        (f->value.len && memcmp(f->value.ptr, w->value.ptr, f->value.len)) ||
        (w->index == VEGA_HPACK_INDEX_NEVER && f->index != VEGA_HPACK_INDEX_NEVER))
        abort();
    return 0;
}

static void round_trip(const uint8_t *d, size_t n, uint8_t flags)
{
    vega_hpack_encoder_opts eo = {.max_table_size = flags & 2 ? 200 : 0,
                                  .huffman = (vega_hpack_huffman)((flags >> 2) % 3)};
    vega_hpack_encoder *e;
    vega_hpack_decoder *dec;
    if (vega_hpack_encoder_new(&e, &eo) != 0 || vega_hpack_decoder_new(&dec, NULL) != 0)
        abort();
    static uint8_t out[1 << 17];
    size_t at = 0;
    while (at < n) {
        /* A list: a count byte, then per field: name length, value length, index, bytes. */
        size_t cnt = d[at++] % 16;
        if (cnt == 15 && at < n) {
            size_t m = (size_t)d[at++] * 40;
            vega_hpack_encoder_set_max_table_size(e, m);
            vega_hpack_decoder_set_max_table_size(dec, m);
            continue;
        }
        vega_hpack_field f[16];
        size_t k = 0;
        for (; k < cnt && at + 3 <= n; k++) {
            size_t nl = d[at] % 32, vl = d[at + 1];
            vega_hpack_index ix = (vega_hpack_index)(d[at + 2] % 4);
            at += 3;
            nl = nl < n - at ? nl : n - at;
            const char *nm = (const char *)d + at;
            at += nl;
            vl = vl < n - at ? vl : n - at;
            f[k] = (vega_hpack_field){{nm, nl}, {(const char *)d + at, vl}, ix};
            at += vl;
        }
        vega_ssize len = vega_hpack_encode(e, out, sizeof out, f, k);
        if (len < 0)
            abort();
        struct rt_st s = {f, k, 0};
        if (vega_hpack_decode(dec, out, (size_t)len, rt_cb, &s) != 0 || s.at != k)
            abort();
        size_t tl = vega_hpack_encoder_table_len(e);
        if (vega_hpack_decoder_table_len(dec) < tl)
            abort();
        for (size_t i = 0; i < tl; i++) {
            vega_hpack_field a, b;
            vega_hpack_encoder_table_get(e, i, &a);
            vega_hpack_decoder_table_get(dec, i, &b);
            if (a.name.len != b.name.len || a.value.len != b.value.len ||
                memcmp(a.name.ptr, b.name.ptr, a.name.len) ||
                memcmp(a.value.ptr, b.value.ptr, a.value.len))
                abort();
        }
    }
    vega_hpack_encoder_free(e);
    vega_hpack_decoder_free(dec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        round_trip(data + 1, size - 1, data[0]);
    else
        decode_blocks(data + 1, size - 1, data[0]);
    return 0;
}
