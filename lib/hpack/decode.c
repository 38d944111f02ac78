/* SPDX-License-Identifier: MIT */
/* The HPACK decoder (RFC 7541 §3.2, §6): one complete header block at a time, every
 * representation, table size updates (§4.2, §6.3), and the limits that stop a decompression
 * bomb before memory grows (§7.3; RFC 9113 §6.5.2, §10.5.1). */
#include <string.h>

#include "hcodec.h"
#include "hpack_int.h"

/* One block's progress. */
struct blk {
    vega_hpack_decoder *d;
    const uint8_t *in;
    size_t len, pos;
    size_t list, fields; /* decoded size so far (names, values, 32 per field) and count */
    bool too_large;      /* a limit was passed: fields are no longer delivered */
    bool seen_field;     /* a field representation came: no table size update after it */
    unsigned updates;    /* table size updates at the start of this block */
    vega_hpack_on_field cb;
    void *ud;
};

static int fail(vega_hpack_decoder *d, int err)
{
    d->failed = err;
    return err;
}

static int scratch_reserve(vega_hpack_decoder *d, size_t need)
{
    if (d->scratch && need <= d->scratch_cap)
        return 0;
    size_t cap = VEGA__MAX(VEGA__MAX(d->scratch_cap * 2, need), (size_t)256);
    cap = VEGA__MIN(cap, 2 * d->o.max_string_len + 16);
    if (cap < need)
        return VEGA_ERR_INTERNAL;
    uint8_t *n = vega__mem_realloc(d->o.mem, d->scratch, cap);
    if (!n)
        return -ENOMEM;
    d->scratch = n;
    d->scratch_cap = cap;
    return 0;
}

static int read_int(struct blk *b, unsigned prefix, uint64_t *v)
{
    vega_ssize k = vega__hc_int_decode(b->in + b->pos, b->len - b->pos, prefix, v);
    /* A block is complete: an integer cut off by its end is malformed, as is one that
     * overflows (§5.1: "Integer encodings that exceed implementation limits -- in value or
     * octet length -- MUST be treated as decoding errors."). */
    if (k <= 0)
        return VEGA_ERR_HPACK_DECODE;
    b->pos += (size_t)k;
    return 0;
}

/* Reads a string literal (§5.2). A raw one stays in the input; a Huffman one is decoded into
 * the scratch at offset at. */
static int read_string(struct blk *b, size_t at, const uint8_t **s, size_t *len)
{
    vega_hpack_decoder *d = b->d;
    vega__hc_str str;
    vega_ssize k = vega__hc_str_decode(b->in + b->pos, b->len - b->pos, 7, &str);
    if (k < 0)
        return VEGA_ERR_HPACK_DECODE;
    /* The declared length is refused before anything else, even when the block ends first:
     * a string the decoder would not hold is an error whatever follows. */
    if (!str.huffman && str.len > d->o.max_string_len)
        return VEGA_ERR_HPACK_STRING_TOO_LONG;
    if (k == 0)
        return VEGA_ERR_HPACK_DECODE;
    b->pos += (size_t)k;
    if (!str.huffman) {
        *s = str.ptr;
        *len = str.len;
        return 0;
    }
    size_t cap = VEGA__MIN(VEGA__HC_HUFF_DECODED_MAX(str.len), d->o.max_string_len);
    int rc = scratch_reserve(d, at + cap);
    if (rc < 0)
        return rc;
    vega_ssize n = vega__hc_huff_decode(d->scratch + at, cap, str.ptr, str.len);
    if (n == VEGA_ERR_NOBUF)
        return VEGA_ERR_HPACK_STRING_TOO_LONG;
    if (n < 0)
        return VEGA_ERR_HPACK_DECODE;
    *s = d->scratch + at;
    *len = (size_t)n;
    return 0;
}

/* The field at index idx (§2.3.3) into name/value (borrowing a table). */
static int lookup(struct blk *b, uint64_t idx, vega_hpack_field *f, bool name_only)
{
    /* §6.1: "The index value of 0 is not used. It MUST be treated as a decoding error if found
     * in an indexed header field representation." §2.3.3: "Indices strictly greater than the
     * sum of the lengths of both tables MUST be treated as a decoding error." */
    const struct vega__hpack_table *t = &b->d->t;
    if (idx == 0)
        return VEGA_ERR_HPACK_DECODE;
    if (idx <= VEGA__HPACK_STATIC_LEN) {
        const struct vega__hpack_static *s = &vega__hpack_static_table[idx - 1];
        f->name = (vega_http_str){s->name, s->name_len};
        if (!name_only)
            f->value = (vega_http_str){s->value, s->value_len};
        return 0;
    }
    if (idx - VEGA__HPACK_STATIC_LEN - 1 >= t->len)
        return VEGA_ERR_HPACK_DECODE;
    const struct vega__hpack_entry *e = vega__hpack_table_at(t, idx - VEGA__HPACK_STATIC_LEN - 1);
    f->name = (vega_http_str){(const char *)vega__hpack_entry_name(t, e), e->name_len};
    if (!name_only)
        f->value = (vega_http_str){(const char *)vega__hpack_entry_value(t, e), e->value_len};
    return 0;
}

/* Counts the field against the limits and hands it out while they hold. */
static int emit(struct blk *b, const vega_hpack_field *f)
{
    vega_hpack_decoder *d = b->d;
    b->seen_field = true;
    b->fields++;
    b->list = vega__sat_add(b->list, f->name.len + f->value.len + VEGA_HPACK_ENTRY_OVERHEAD);
    if (b->list > d->o.max_list_size || b->fields > d->o.max_fields)
        b->too_large = true;
    if (b->too_large || !b->cb)
        return 0;
    return b->cb(b->ud, f) ? VEGA_ERR_CALLBACK : 0;
}

/* §6.3: a dynamic table size update. */
static int size_update(struct blk *b)
{
    vega_hpack_decoder *d = b->d;
    uint64_t v;
    int rc = read_int(b, 5, &v);
    if (rc < 0)
        return rc;
    /* §4.2: the update "MUST occur at the beginning of the first header block following the
     * change"; a block carries at most the smallest size since the last block and the final
     * one, so an update after a field, or a third one, is malformed. §6.3: "The new maximum
     * size MUST be lower than or equal to the limit determined by the protocol using HPACK. A
     * value that exceeds this limit MUST be treated as a decoding error." */
    if (b->seen_field || ++b->updates > 2 || v > d->protocol_max)
        return VEGA_ERR_HPACK_DECODE;
    vega__hpack_table_set_max(&d->t, (size_t)v);
    d->need_update = false;
    return 0;
}

/* §6.2: a literal field; prefix 6 (incremental indexing) or 4 (without / never indexed). */
static int literal(struct blk *b, unsigned prefix, vega_hpack_index kind)
{
    vega_hpack_decoder *d = b->d;
    uint64_t idx;
    int rc = read_int(b, prefix, &idx);
    if (rc < 0)
        return rc;
    vega_hpack_field f = {.index = kind};
    size_t at = 0;
    bool name_in_scratch = false;
    if (idx) {
        rc = lookup(b, idx, &f, true);
        /* §4.4: the name may belong to an entry the insertion evicts: copy it out first. */
        if (rc == 0 && kind == VEGA_HPACK_INDEX_YES && idx > VEGA__HPACK_STATIC_LEN) {
            rc = scratch_reserve(d, f.name.len);
            if (rc == 0 && f.name.len)
                memcpy(d->scratch, f.name.ptr, f.name.len);
            name_in_scratch = true;
            at = f.name.len;
        }
    } else {
        const uint8_t *s = NULL;
        rc = read_string(b, 0, &s, &f.name.len);
        f.name.ptr = (const char *)s;
        if (rc == 0 && s == d->scratch) {
            name_in_scratch = true;
            at = f.name.len;
        }
    }
    if (rc < 0)
        return rc;
    const uint8_t *v = NULL;
    rc = read_string(b, at, &v, &f.value.len);
    if (rc < 0)
        return rc;
    f.value.ptr = (const char *)v;
    if (name_in_scratch) /* the value's decoding may have moved the scratch */
        f.name.ptr = (const char *)d->scratch;
    if (kind == VEGA_HPACK_INDEX_YES) {
        rc = vega__hpack_table_add(&d->t, (const uint8_t *)f.name.ptr, f.name.len,
                                   (const uint8_t *)f.value.ptr, f.value.len);
        if (rc < 0)
            return rc;
    }
    return emit(b, &f);
}

static int representation(struct blk *b)
{
    uint8_t c = b->in[b->pos];
    if (b->d->need_update && !(c >= 0x20 && c < 0x40))
        return VEGA_ERR_HPACK_DECODE; /* §4.2: the required update did not come first */
    if (c & 0x80) {                   /* §6.1 indexed */
        uint64_t idx;
        int rc = read_int(b, 7, &idx);
        vega_hpack_field f = {.index = VEGA_HPACK_INDEX_YES};
        if (rc == 0)
            rc = lookup(b, idx, &f, false);
        return rc < 0 ? rc : emit(b, &f);
    }
    if (c & 0x40) /* §6.2.1 with incremental indexing */
        return literal(b, 6, VEGA_HPACK_INDEX_YES);
    if (c & 0x20) /* §6.3 dynamic table size update */
        return size_update(b);
    if (c & 0x10) /* §6.2.3 never indexed */
        return literal(b, 4, VEGA_HPACK_INDEX_NEVER);
    return literal(b, 4, VEGA_HPACK_INDEX_NO); /* §6.2.2 without indexing */
}

int vega_hpack_decode(vega_hpack_decoder *d, const uint8_t *in, size_t len,
                      vega_hpack_on_field on_field, void *ud)
{
    if (!d)
        return -EINVAL;
    if (d->failed)
        return d->failed;
    if (!in && len)
        return -EINVAL;
    struct blk b = {.d = d, .in = in, .len = len, .cb = on_field, .ud = ud};
    while (b.pos < b.len) {
        int rc = representation(&b);
        if (rc < 0)
            return fail(d, rc);
    }
    /* §4.2: an empty block does not discharge a required update either. */
    if (d->need_update)
        return fail(d, VEGA_ERR_HPACK_DECODE);
    /* A large scratch (long Huffman strings) is not kept between blocks. */
    if (d->scratch_cap > 16384) {
        vega__mem_free(d->o.mem, d->scratch);
        d->scratch = NULL;
        d->scratch_cap = 0;
    }
    return b.too_large ? VEGA_ERR_HPACK_TOO_LARGE : 0;
}
