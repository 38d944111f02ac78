/* SPDX-License-Identifier: MIT */
/* Decoding one encoded field section (RFC 9204 §4.5): the prefix with the Required Insert Count
 * (§4.5.1.1) and Base (§4.5.1.2), then indexed, post-Base indexed, literal with name reference,
 * literal with post-Base name reference and literal with literal name lines (§4.5.2-§4.5.6),
 * within the decoded-size and line-count limits; a Section Acknowledgment (§4.4.1) after. */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

static int failed(vega_qpack_decoder *d, const char *reason)
{
    return vega__qp_decoder_fail(d, VEGA_QPACK_DECOMPRESSION_FAILED, reason);
}

vega_ssize vega__qp_decode_prefix(vega_qpack_decoder *d, const uint8_t *in, size_t len,
                                  uint64_t *ric, uint64_t *base)
{
    uint64_t enc, delta;
    vega_ssize k = vega__hc_int_decode(in, len, 8, &enc);
    if (k <= 0)
        return k < 0 ? failed(d, "bad Required Insert Count") : 0;
    vega_ssize k2 = vega__hc_int_decode(in + k, len - (size_t)k, 7, &delta);
    if (k2 <= 0)
        return k2 < 0 ? failed(d, "bad Delta Base") : 0;
    /* §4.5.1.1: "If the decoder encounters a value of EncodedInsertCount that could not have
     * been produced by a conformant encoder, it MUST treat this as a connection error of type
     * QPACK_DECOMPRESSION_FAILED." */
    if (enc == 0) {
        *ric = 0;
    } else {
        uint64_t full = 2 * d->max_entries;
        if (enc > full)
            return failed(d, "Required Insert Count out of range");
        uint64_t max_value = d->t.inserted + d->max_entries;
        uint64_t r = max_value / full * full + enc - 1;
        if (r > max_value) {
            if (r <= full)
                return failed(d, "Required Insert Count out of range");
            r -= full;
        }
        if (r == 0)
            return failed(d, "Required Insert Count of zero encoded as nonzero");
        *ric = r;
    }
    if (in[k] & 0x80) {
        /* §4.5.1.2: "An endpoint MUST treat a field block with a Sign bit of 1 as invalid if the
         * value of Required Insert Count is less than or equal to the value of Delta Base." */
        if (*ric <= delta)
            return failed(d, "negative Base");
        *base = *ric - delta - 1;
    } else {
        *base = *ric + delta; /* both below 2^62: no overflow */
    }
    return k + k2;
}

/* The section being decoded. */
struct sec {
    vega_qpack_decoder *d;
    uint64_t ric, base, size;
    size_t count;
    uint8_t *scratch;
    size_t scratch_len, scratch_cap;
};

/* A dynamic entry a field line references by absolute index (§2.2.3: "If the decoder
 * encounters a reference in a field line representation to a dynamic table entry that has
 * already been evicted or that has an absolute index greater than or equal to the declared
 * Required Insert Count (Section 4.5.1), it MUST treat this as a connection error of type
 * QPACK_DECOMPRESSION_FAILED."). */
static const struct vega__qp_entry *dyn(struct sec *s, uint64_t abs)
{
    if (abs >= s->ric)
        return NULL;
    return vega__qp_table_get(&s->d->t, abs);
}

static const struct vega__qp_entry *dyn_relative(struct sec *s, uint64_t rel)
{
    return rel < s->base ? dyn(s, s->base - 1 - rel) : NULL;
}

static const struct vega__qp_entry *dyn_post_base(struct sec *s, uint64_t idx)
{
    return dyn(s, s->base + idx); /* base <= 2^63, idx < 2^62 */
}

/* Adds a line; the size check comes before any byte of it is produced. */
static int emit(struct sec *s, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl,
                bool never)
{
    vega_qpack_decoder *d = s->d;
    if (s->count >= d->max_fields)
        return VEGA_ERR_QPACK_TOO_LARGE;
    s->size += (uint64_t)nl + vl + 32;
    if (s->size > d->max_section)
        return VEGA_ERR_QPACK_TOO_LARGE;
    if (s->count == d->fields_cap) {
        size_t cap = d->fields_cap ? d->fields_cap * 2 : 16;
        cap = VEGA__MIN(cap, d->max_fields);
        vega_http_field *f = vega__mem_realloc(d->mem, d->fields, cap * sizeof *f);
        if (!f)
            return -ENOMEM;
        d->fields = f;
        bool *n = vega__mem_realloc(d->mem, d->never, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        d->never = n;
        d->fields_cap = cap;
    }
    d->fields[s->count].name = (vega_http_str){(const char *)name, nl};
    d->fields[s->count].value = (vega_http_str){(const char *)value, vl};
    d->never[s->count] = never;
    s->count++;
    return 0;
}

/* A string of the section: in place when raw, else Huffman-decoded into the scratch space,
 * never past what the size limit leaves (RFC 9204 §7.3: a bomb stops before memory grows). */
static int string(struct sec *s, const vega__hc_str *h, uint64_t other, const uint8_t **p,
                  size_t *n)
{
    uint64_t budget = s->d->max_section - VEGA__MIN(s->d->max_section, s->size + other + 32);
    if (!h->huffman) {
        if (h->len > budget)
            return VEGA_ERR_QPACK_TOO_LARGE;
        *p = h->ptr;
        *n = h->len;
        return 0;
    }
    size_t room = vega__room(s->scratch_len, s->scratch_cap);
    size_t cap = (size_t)VEGA__MIN((uint64_t)room, budget);
    vega_ssize r = vega__hc_huff_decode(s->scratch + s->scratch_len, cap, h->ptr, h->len);
    if (r == VEGA_ERR_NOBUF)
        return VEGA_ERR_QPACK_TOO_LARGE;
    if (r < 0)
        return failed(s->d, "bad Huffman string in a field section");
    *p = s->scratch + s->scratch_len;
    *n = (size_t)r;
    s->scratch_len += (size_t)r;
    return 0;
}

static vega_ssize read_str(struct sec *s, const uint8_t *in, size_t len, unsigned prefix,
                           vega__hc_str *h)
{
    vega_ssize k = vega__hc_str_decode(in, len, prefix, h);
    if (k <= 0)
        return failed(s->d, k < 0 ? "bad string length" : "field line truncated");
    return k;
}

static vega_ssize indexed(struct sec *s, const uint8_t *in, size_t len)
{
    uint64_t idx;
    vega_ssize k = vega__hc_int_decode(in, len, 6, &idx);
    if (k <= 0)
        return failed(s->d, "bad index");
    if (in[0] & 0x40) {
        /* §3.1: "When the decoder encounters an invalid static table index in a field line
         * representation, it MUST treat this as a connection error of type
         * QPACK_DECOMPRESSION_FAILED." */
        if (idx >= VEGA_QPACK_STATIC_COUNT)
            return failed(s->d, "static table index out of range");
        const struct vega__qp_static *e = &vega__qp_static[idx];
        int rc = emit(s, (const uint8_t *)e->name, e->name_len, (const uint8_t *)e->value,
                      e->value_len, false);
        return rc < 0 ? rc : k;
    }
    const struct vega__qp_entry *e = dyn_relative(s, idx);
    if (!e)
        return failed(s->d, "dynamic table reference out of range");
    int rc = emit(s, e->data, e->name_len, e->data + e->name_len, e->value_len, false);
    return rc < 0 ? rc : k;
}

static vega_ssize indexed_post_base(struct sec *s, const uint8_t *in, size_t len)
{
    uint64_t idx;
    vega_ssize k = vega__hc_int_decode(in, len, 4, &idx);
    if (k <= 0)
        return failed(s->d, "bad post-Base index");
    const struct vega__qp_entry *e = dyn_post_base(s, idx);
    if (!e)
        return failed(s->d, "dynamic table reference out of range");
    int rc = emit(s, e->data, e->name_len, e->data + e->name_len, e->value_len, false);
    return rc < 0 ? rc : k;
}

/* Literal with a name from a table (§4.5.4 with 4-bit prefix, §4.5.5 post-Base with 3). */
static vega_ssize literal_name_ref(struct sec *s, const uint8_t *in, size_t len, bool post_base)
{
    uint64_t idx;
    vega_ssize k = vega__hc_int_decode(in, len, post_base ? 3 : 4, &idx);
    if (k <= 0)
        return failed(s->d, "bad name index");
    bool never = post_base ? in[0] & 0x08 : in[0] & 0x20;
    const uint8_t *name;
    size_t nl;
    if (!post_base && (in[0] & 0x10)) {
        if (idx >= VEGA_QPACK_STATIC_COUNT)
            return failed(s->d, "static table index out of range");
        name = (const uint8_t *)vega__qp_static[idx].name;
        nl = vega__qp_static[idx].name_len;
    } else {
        const struct vega__qp_entry *e = post_base ? dyn_post_base(s, idx) : dyn_relative(s, idx);
        if (!e)
            return failed(s->d, "dynamic table reference out of range");
        name = e->data;
        nl = e->name_len;
    }
    vega__hc_str h;
    vega_ssize k2 = read_str(s, in + k, len - (size_t)k, 7, &h);
    if (k2 < 0)
        return k2;
    const uint8_t *v;
    size_t vl;
    int rc = string(s, &h, nl, &v, &vl);
    if (rc == 0)
        rc = emit(s, name, nl, v, vl, never);
    return rc < 0 ? rc : k + k2;
}

static vega_ssize literal_literal(struct sec *s, const uint8_t *in, size_t len)
{
    bool never = in[0] & 0x10;
    vega__hc_str hn, hv;
    vega_ssize k = read_str(s, in, len, 3, &hn);
    if (k < 0)
        return k;
    vega_ssize k2 = read_str(s, in + k, len - (size_t)k, 7, &hv);
    if (k2 < 0)
        return k2;
    const uint8_t *n, *v;
    size_t nl, vl;
    int rc = string(s, &hn, 0, &n, &nl);
    if (rc == 0)
        rc = string(s, &hv, nl, &v, &vl);
    if (rc == 0)
        rc = emit(s, n, nl, v, vl, never);
    return rc < 0 ? rc : k + k2;
}

static vega_ssize line(struct sec *s, const uint8_t *in, size_t len)
{
    uint8_t b = in[0];
    if (b & 0x80)
        return indexed(s, in, len);
    if (b & 0x40)
        return literal_name_ref(s, in, len, false);
    if (b & 0x20)
        return literal_literal(s, in, len);
    if (b & 0x10)
        return indexed_post_base(s, in, len);
    return literal_name_ref(s, in, len, true);
}

/* The scratch space holds every Huffman-decoded string of one section: sized once, so the
 * strings never move while the section is decoded. */
static int scratch_for(vega_qpack_decoder *d, size_t len, size_t *cap)
{
    uint64_t want = VEGA__MIN((uint64_t)VEGA__HC_HUFF_DECODED_MAX(len), d->max_section);
    if (d->scratch_cap < want) {
        uint8_t *p = vega__mem_realloc(d->mem, d->scratch, (size_t)want);
        if (!p)
            return -ENOMEM;
        d->scratch = p;
        d->scratch_cap = (size_t)want;
    }
    *cap = d->scratch_cap;
    return 0;
}

int vega__qp_decode_lines(vega_qpack_decoder *d, uint64_t stream_id, const uint8_t *in, size_t len,
                          vega_qpack_section *out)
{
    struct sec s = {.d = d};
    vega_ssize k = vega__qp_decode_prefix(d, in, len, &s.ric, &s.base);
    if (k <= 0)
        return k < 0 ? (int)k : failed(d, "field section prefix truncated");
    int rc = scratch_for(d, len, &s.scratch_cap);
    if (rc < 0)
        return rc;
    s.scratch = d->scratch;
    for (size_t at = (size_t)k; at < len;) {
        vega_ssize n = line(&s, in + at, len - at);
        if (n < 0)
            return (int)n;
        at += (size_t)n;
    }
    /* §2.2.2.1: "After the decoder finishes decoding a field section encoded using
     * representations containing dynamic table references, it MUST emit a Section
     * Acknowledgment instruction." */
    if (s.ric > 0) {
        rc = vega__qp_buf_int(&d->out, 0x80, 7, stream_id);
        if (rc < 0)
            return rc;
        if (s.ric > d->known_received)
            d->known_received = s.ric;
    }
    out->fields = d->fields;
    out->never_indexed = d->never;
    out->count = s.count;
    out->size = s.size;
    return 0;
}
