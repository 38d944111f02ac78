/* SPDX-License-Identifier: MIT */
/* Encoding one field section (RFC 9204 §4.5) in a single pass (Appendix C's shape): static
 * matches, dynamic matches within the blocked-stream budget (§2.1.2), inserts of fields likely
 * to repeat, never-indexed literals (N bit, §7.1.3) for sensitive ones; the references of each
 * section are counted so their entries are not evicted until it is acknowledged (§2.1.1). */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

/* Worst case per line: a literal with literal name, both raw: 1 + 9 + name + 10 + value. */
#define LINE_OVERHEAD 21
#define PREFIX_MAX    (2 * VEGA__HC_INT_MAX_LEN)

size_t vega_qpack_encode_bound(const vega_http_field *fields, size_t n)
{
    size_t total = PREFIX_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t a = fields[i].name.len, b = fields[i].value.len;
        if (a > SIZE_MAX / 4 || b > SIZE_MAX / 4 || total > SIZE_MAX / 2 - a - b - LINE_OVERHEAD)
            return SIZE_MAX;
        total += a + b + LINE_OVERHEAD;
    }
    return total;
}

static bool name_is(const uint8_t *n, size_t nl, const char *s)
{
    size_t sl = strlen(s);
    return nl == sl && memcmp(n, s, sl) == 0;
}

/* Values a probing attacker must not confirm through the table (§7.1.3): never indexed, and
 * marked so intermediaries keep them literal (nghttp2's rule for cookies: short ones only). */
static bool sensitive(const uint8_t *n, size_t nl, size_t vl)
{
    if (name_is(n, nl, "authorization") || name_is(n, nl, "proxy-authorization"))
        return true;
    return vl < 20 && (name_is(n, nl, "cookie") || name_is(n, nl, "set-cookie"));
}

/* Fields worth an insert: not sensitive, of a size that leaves room for others, and not of the
 * kinds whose values rarely repeat. */
static bool worth_inserting(const vega_qpack_encoder *e, const uint8_t *n, size_t nl, size_t vl)
{
    static const char *const unique[] = {
        "content-length", "date", "etag",   "last-modified", "if-none-match", "if-modified-since",
        "content-range",  "age",  "cookie", "set-cookie",    "location"};
    if ((uint64_t)nl + vl + VEGA__QP_ENTRY_OVERHEAD > e->use_capacity / 2)
        return false;
    for (size_t i = 0; i < VEGA__ARRAY_LEN(unique); i++)
        if (name_is(n, nl, unique[i]))
            return false;
    return vega__qp_buf_pending(&e->out) <= e->o.max_encoder_buffer;
}

struct enc {
    vega_qpack_encoder *e;
    uint8_t *out;
    size_t at, cap;
    uint64_t base;
    bool can_block; /* references to unacknowledged entries are allowed */
    uint64_t *refs;
    size_t nrefs;
    uint64_t max_ref;
};

/* An entry this section may reference: live, and acknowledged unless the stream may block. */
static bool usable(const struct enc *s, uint64_t abs)
{
    return abs != UINT64_MAX && vega__qp_table_get(&s->e->t, abs) &&
           (abs < s->e->known_received || s->can_block);
}

static void ref(struct enc *s, uint64_t abs)
{
    vega__qp_table_get(&s->e->t, abs)->refs++;
    s->refs[s->nrefs++] = abs;
    if (s->nrefs == 1 || abs > s->max_ref)
        s->max_ref = abs;
}

static void put_int(struct enc *s, uint8_t first, unsigned prefix, uint64_t v)
{
    s->at += vega__hc_int_encode(s->out + s->at, vega__room(s->at, s->cap), first, prefix, v);
}

static void put_str(struct enc *s, uint8_t first, unsigned prefix, const uint8_t *p, size_t n)
{
    s->at += vega__hc_str_encode(s->out + s->at, vega__room(s->at, s->cap), first, prefix, p, n,
                                 !s->e->o.no_huffman);
}

/* Indexed line for dynamic entry abs: relative below Base (§4.5.2), post-Base above (§4.5.3). */
static void put_dynamic(struct enc *s, uint64_t abs)
{
    ref(s, abs);
    if (abs < s->base)
        put_int(s, 0x80, 6, s->base - 1 - abs);
    else
        put_int(s, 0x10, 4, abs - s->base);
}

static void put_literal(struct enc *s, const vega_http_field *f, int sname, uint64_t name_abs,
                        bool never)
{
    const uint8_t *n = (const uint8_t *)f->name.ptr, *v = (const uint8_t *)f->value.ptr;
    if (sname >= 0) {
        /* §4.5.4 with a static name: 01 N T=1 index(4+). */
        put_int(s, (uint8_t)(0x50 | (never ? 0x20 : 0)), 4, (uint64_t)sname);
    } else if (usable(s, name_abs)) {
        ref(s, name_abs);
        if (name_abs < s->base)
            put_int(s, (uint8_t)(0x40 | (never ? 0x20 : 0)), 4, s->base - 1 - name_abs);
        else /* §4.5.5: 0000 N index(3+) */
            put_int(s, (uint8_t)(never ? 0x08 : 0), 3, name_abs - s->base);
    } else {
        /* §4.5.6: 001 N H length(3+) name, then the value. */
        put_str(s, (uint8_t)(0x20 | (never ? 0x10 : 0)), 3, n, f->name.len);
    }
    put_str(s, 0x00, 7, v, f->value.len);
}

static void line(struct enc *s, const vega_http_field *f, bool dyn)
{
    vega_qpack_encoder *e = s->e;
    const uint8_t *n = (const uint8_t *)f->name.ptr, *v = (const uint8_t *)f->value.ptr;
    size_t nl = f->name.len, vl = f->value.len;
    int sname;
    int sidx = vega__qp_static_find(n, nl, v, vl, &sname);
    if (sidx >= 0) {
        put_int(s, 0xc0, 6, (uint64_t)sidx); /* §4.5.2, T=1 */
        return;
    }
    bool never = sensitive(n, nl, vl);
    uint64_t abs = UINT64_MAX, name_abs = UINT64_MAX;
    if (dyn && !never) {
        bool exact = vega__qp_table_find(&e->t, n, nl, v, vl, &abs, &name_abs);
        if (exact && usable(s, abs)) {
            put_dynamic(s, abs);
            return;
        }
        if (worth_inserting(e, n, nl, vl) && vega__qp_enc_insert(e, n, nl, v, vl) == 0) {
            /* A reference to the new entry lets the stream block until the encoder stream
             * arrives; without that budget the line stays literal. */
            if (s->can_block) {
                put_dynamic(s, e->t.inserted - 1);
                return;
            }
        }
    }
    put_literal(s, f, sname, name_abs, never);
}

/* Room for the section's record before anything changes, so that -ENOMEM leaves the encoder
 * as it was. */
static int prepare(vega_qpack_encoder *e, size_t n, uint64_t **refs)
{
    *refs = NULL;
    if (e->nsecs == e->secs_cap) {
        size_t cap = e->secs_cap ? e->secs_cap * 2 : 8;
        struct vega__qp_section *p = vega__mem_realloc(e->mem, e->secs, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        e->secs = p;
        e->secs_cap = cap;
    }
    if (n > SIZE_MAX / sizeof **refs)
        return -ENOMEM;
    *refs = vega__mem_malloc(e->mem, n * sizeof **refs);
    return *refs ? 0 : -ENOMEM;
}

vega_ssize vega_qpack_encoder_encode(vega_qpack_encoder *e, uint64_t stream_id,
                                     const vega_http_field *fields, size_t n, uint8_t *out,
                                     size_t cap)
{
    if (stream_id > VEGA__HC_INT_MAX || (!fields && n) || (!out && cap))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((!fields[i].name.ptr && fields[i].name.len) ||
            (!fields[i].value.ptr && fields[i].value.len))
            return -EINVAL;
    size_t bound = vega_qpack_encode_bound(fields, n);
    if (bound == SIZE_MAX || cap < bound)
        return VEGA_ERR_NOBUF;
    /* After a decoder-stream error the connection is closing: static table and literals only. */
    bool dyn = !e->failed && e->peer_set && e->use_capacity > 0 && n > 0 &&
               e->nsecs < e->o.max_unacked_sections;
    struct enc s = {.e = e, .out = out, .at = PREFIX_MAX, .cap = cap, .base = e->t.inserted};
    if (dyn && prepare(e, n, &s.refs) < 0)
        return -ENOMEM;
    bool this_one;
    size_t blocking = vega__qp_enc_blocking_streams(e, stream_id, &this_one);
    s.can_block = this_one || blocking < e->blocked_limit;
    for (size_t i = 0; i < n; i++)
        line(&s, &fields[i], dyn);
    /* The prefix (§4.5.1), then the lines moved up behind it. */
    uint64_t ric = s.nrefs ? s.max_ref + 1 : 0;
    size_t p = vega__hc_int_encode(out, cap, 0x00, 8, vega__qp_ric_encode(ric, e->max_entries));
    if (ric == 0 || s.base >= ric)
        p += vega__hc_int_encode(out + p, vega__room(p, cap), 0x00, 7, ric ? s.base - ric : 0);
    else
        p += vega__hc_int_encode(out + p, vega__room(p, cap), 0x80, 7, ric - s.base - 1);
    memmove(out + p, out + PREFIX_MAX, s.at - PREFIX_MAX);
    if (s.nrefs) {
        e->secs[e->nsecs++] = (struct vega__qp_section){stream_id, ric, s.refs, s.nrefs};
    } else {
        vega__mem_free(e->mem, s.refs);
    }
    return (vega_ssize)(p + s.at - PREFIX_MAX);
}
