/* SPDX-License-Identifier: MIT */
/* The HPACK encoder (RFC 7541 §3.1, §6): representation choice with an indexing policy that
 * keeps secrets out of the table (§7.1), Huffman when shorter (§5.2), and the table size
 * updates a change of the peer's limit asks for (§4.2, §6.3). */
#include <string.h>

#include "hcodec.h"
#include "hpack_int.h"

static bool name_is(const vega_hpack_field *f, const char *s)
{
    size_t n = strlen(s);
    return f->name.len == n && memcmp(f->name.ptr, s, n) == 0;
}

/* INDEX_AUTO's choice (documented at vega_hpack_encode). */
static vega_hpack_index policy(const vega_hpack_encoder *e, const vega_hpack_field *f)
{
    /* §7.1.3: "an encoder might also choose not to index values for header fields that are
     * considered highly valuable or sensitive to recovery, such as the Cookie or Authorization
     * header fields" -- as never-indexed literals, so that intermediaries keep them out of
     * their tables too. Short cookies are guessable; long ones are left to compression. */
    if (name_is(f, "authorization") || name_is(f, "proxy-authorization") ||
        name_is(f, "set-cookie") || (name_is(f, "cookie") && f->value.len < 20))
        return VEGA_HPACK_INDEX_NEVER;
    static const char *const volatile_names[] = {
        ":path",         "content-length", "age",      "etag", "if-modified-since",
        "if-none-match", "last-modified",  "location",
    };
    for (size_t i = 0; i < VEGA__ARRAY_LEN(volatile_names); i++)
        if (name_is(f, volatile_names[i]))
            return VEGA_HPACK_INDEX_NO;
    size_t size = f->name.len + f->value.len + VEGA_HPACK_ENTRY_OVERHEAD;
    if (size > e->t.max_size / 4 * 3)
        return VEGA_HPACK_INDEX_NO;
    return VEGA_HPACK_INDEX_YES;
}

/* The longest a string literal of len bytes can be encoded (prefix included). */
static size_t str_bound(const vega_hpack_encoder *e, size_t len)
{
    /* The longest Huffman code is 30 bits: at most 4 bytes per byte, plus padding. */
    size_t body = len;
    if (e->o.huffman == VEGA_HPACK_HUFFMAN_ALWAYS)
        body = len > SIZE_MAX / 4 ? SIZE_MAX : vega__sat_add(len * 4, 1);
    return vega__sat_add(body, VEGA__HC_INT_MAX_LEN);
}

size_t vega_hpack_encode_bound(const vega_hpack_encoder *e, const vega_hpack_field *fields,
                               size_t n)
{
    size_t total = 2 * VEGA__HC_INT_MAX_LEN; /* two table size updates */
    for (size_t i = 0; i < n; i++) {
        total = vega__sat_add(total, VEGA__HC_INT_MAX_LEN); /* representation and index */
        total = vega__sat_add(total, str_bound(e, fields[i].name.len));
        total = vega__sat_add(total, str_bound(e, fields[i].value.len));
    }
    return total;
}

static size_t put_int(uint8_t *out, size_t cap, size_t *at, uint8_t first, unsigned prefix,
                      uint64_t v)
{
    size_t k = vega__hc_int_encode(out + *at, cap - *at, first, prefix, v);
    *at += k;
    return k;
}

static void put_str(const vega_hpack_encoder *e, uint8_t *out, size_t cap, size_t *at,
                    vega_http_str s)
{
    const uint8_t *p = (const uint8_t *)s.ptr;
    size_t h = e->o.huffman == VEGA_HPACK_HUFFMAN_NEVER ? s.len : vega__hc_huff_len(p, s.len);
    bool huff = e->o.huffman == VEGA_HPACK_HUFFMAN_ALWAYS ||
                (e->o.huffman == VEGA_HPACK_HUFFMAN_AUTO && h < s.len);
    size_t n = huff ? h : s.len;
    put_int(out, cap, at, huff ? 0x80 : 0, 7, n);
    VEGA_ASSERT(vega__fits(*at, n, cap));
    if (huff)
        vega__hc_huff_encode(out + *at, p, s.len);
    else if (n)
        memcpy(out + *at, p, n);
    *at += n;
}

/* The dynamic entry i with f's name (and, when *full, its value), the newest first. */
static void dyn_find(const vega_hpack_encoder *e, const vega_hpack_field *f, size_t *name_i,
                     size_t *full_i)
{
    *name_i = *full_i = SIZE_MAX;
    if (!e->t.len)
        return;
    const uint8_t *n = (const uint8_t *)f->name.ptr, *v = (const uint8_t *)f->value.ptr;
    uint32_t nh = vega__hpack_hash(n, f->name.len), vh = vega__hpack_hash(v, f->value.len);
    for (size_t i = 0; i < e->t.len; i++) {
        const struct vega__hpack_entry *x = vega__hpack_table_at(&e->t, i);
        if (x->name_hash != nh || x->name_len != f->name.len ||
            (f->name.len && memcmp(vega__hpack_entry_name(&e->t, x), n, f->name.len)))
            continue;
        if (*name_i == SIZE_MAX)
            *name_i = i;
        if (x->value_hash == vh && x->value_len == f->value.len &&
            (!f->value.len || !memcmp(vega__hpack_entry_value(&e->t, x), v, f->value.len))) {
            *full_i = i;
            return;
        }
    }
}

static int encode_field(vega_hpack_encoder *e, uint8_t *out, size_t cap, size_t *at,
                        const vega_hpack_field *f)
{
    vega_hpack_index kind = f->index == VEGA_HPACK_INDEX_AUTO ? policy(e, f) : f->index;
    const uint8_t *n = (const uint8_t *)f->name.ptr, *v = (const uint8_t *)f->value.ptr;
    unsigned s_name = 0;
    unsigned s_full = vega__hpack_static_find(n, f->name.len, v, f->value.len, &s_name);
    size_t d_name, d_full;
    dyn_find(e, f, &d_name, &d_full);
    /* A whole match goes as an index (§6.1), but never for a sensitive field: its value stays
     * a never-indexed literal so intermediaries know (§6.2.3). */
    if (kind != VEGA_HPACK_INDEX_NEVER && (s_full || d_full != SIZE_MAX)) {
        uint64_t idx = s_full ? s_full : VEGA__HPACK_STATIC_LEN + 1 + (uint64_t)d_full;
        put_int(out, cap, at, 0x80, 7, idx);
        return 0;
    }
    size_t size = f->name.len + f->value.len + VEGA_HPACK_ENTRY_OVERHEAD;
    if (kind == VEGA_HPACK_INDEX_YES && size > e->t.max_size)
        kind = VEGA_HPACK_INDEX_NO; /* it would only empty the table (§4.4) */
    uint64_t name_idx = s_name               ? s_name
                        : d_name != SIZE_MAX ? VEGA__HPACK_STATIC_LEN + 1 + (uint64_t)d_name
                                             : 0;
    if (kind == VEGA_HPACK_INDEX_YES)
        put_int(out, cap, at, 0x40, 6, name_idx);
    else
        put_int(out, cap, at, kind == VEGA_HPACK_INDEX_NEVER ? 0x10 : 0x00, 4, name_idx);
    if (!name_idx)
        put_str(e, out, cap, at, f->name);
    put_str(e, out, cap, at, f->value);
    if (kind == VEGA_HPACK_INDEX_YES)
        return vega__hpack_table_add(&e->t, n, f->name.len, v, f->value.len);
    return 0;
}

vega_ssize vega_hpack_encode(vega_hpack_encoder *e, uint8_t *out, size_t cap,
                             const vega_hpack_field *fields, size_t n)
{
    if (!e || (!fields && n) || (!out && cap))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        const vega_hpack_field *f = &fields[i];
        if ((unsigned)f->index > VEGA_HPACK_INDEX_NEVER || (!f->name.ptr && f->name.len) ||
            (!f->value.ptr && f->value.len) || f->name.len > VEGA__HPACK_MAX_SIZE ||
            f->value.len > VEGA__HPACK_MAX_SIZE)
            return -EINVAL;
    }
    if (cap < vega_hpack_encode_bound(e, fields, n))
        return VEGA_ERR_NOBUF;
    /* Adds must not fail midway: the table would then hold entries the peer never saw. Room
     * is made first for every field that may be added. */
    size_t bytes = 0, entries = 0;
    for (size_t i = 0; i < n; i++) {
        const vega_hpack_field *f = &fields[i];
        size_t len = f->name.len + f->value.len;
        if (f->index != VEGA_HPACK_INDEX_NO && f->index != VEGA_HPACK_INDEX_NEVER &&
            len + VEGA_HPACK_ENTRY_OVERHEAD <= e->t.max_size) {
            bytes = vega__sat_add(bytes, len);
            entries++;
        }
    }
    if (vega__hpack_table_reserve(&e->t, bytes, entries) < 0)
        return -ENOMEM;
    size_t at = 0;
    if (e->update_pending) {
        /* §4.2: "If the maximum size is changed multiple times between two header blocks, the
         * smallest maximum size that occurs in that interval MUST be signaled in a dynamic
         * table size update. The final maximum size is also signaled." */
        if (e->pending_min < e->t.max_size)
            put_int(out, cap, &at, 0x20, 5, e->pending_min);
        put_int(out, cap, &at, 0x20, 5, e->t.max_size);
        e->decoder_max = e->t.max_size;
        e->update_pending = false;
    }
    for (size_t i = 0; i < n; i++) {
        int rc = encode_field(e, out, cap, &at, &fields[i]);
        if (rc < 0)
            return VEGA_ERR_INTERNAL; /* reserved above: cannot happen */
    }
    return (vega_ssize)at;
}

int vega_hpack_encoder_set_max_table_size(vega_hpack_encoder *e, size_t peer_max)
{
    if (!e || peer_max > UINT32_MAX)
        return -EINVAL;
    size_t eff = VEGA__MIN(peer_max, e->cap);
    e->peer_max = peer_max;
    vega__hpack_table_set_max(&e->t, eff);
    e->pending_min = e->update_pending ? VEGA__MIN(e->pending_min, eff) : eff;
    /* The peer's decoder demands an update when its limit drops below the maximum it knows
     * (§4.2), and the table may only grow past that maximum by announcing it (§6.3). When
     * neither holds, a smaller table is used silently: the peer's then keeps a few older
     * entries, which nothing ever references. */
    if (peer_max < e->decoder_max || eff > e->decoder_max)
        e->update_pending = true;
    return 0;
}
