/* SPDX-License-Identifier: MIT */
/* The QPACK decoder (RFC 9204 §2.2): its life and limits, the encoder stream's instructions
 * (§4.3: Set Dynamic Table Capacity, Insert With Name Reference, Insert With Literal Name,
 * Duplicate), blocked sections (§2.2.1) and the decoder stream (§4.4). Field sections are
 * decoded in decode_section.c. */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

void vega_qpack_decoder_opts_init_versioned(vega_qpack_decoder_opts *o, int opts_version)
{
    if (opts_version != VEGA_QPACK_DECODER_OPTS_VERSION)
        VEGA_PANIC("vega_qpack_decoder_opts_init: options of another libvega (version %d)",
                   opts_version);
    memset(o, 0, sizeof *o);
    o->max_table_capacity = 4096;
    o->max_blocked_streams = 16;
    o->max_field_section_size = 65536;
    o->max_fields = 256;
}

static uint64_t limit(uint64_t v, uint64_t def)
{
    return v == 0 ? def : v == VEGA_QPACK_ZERO ? 0 : v;
}

static bool mem_ok(const vega_mem *m)
{
    return !m || (m->malloc && m->calloc && m->realloc && m->free);
}

int vega_qpack_decoder_new_versioned(vega_qpack_decoder **out,
                                     const vega_qpack_decoder_callbacks *cb,
                                     const vega_qpack_decoder_opts *opts, void *user_data,
                                     int opts_version)
{
    if (opts_version != VEGA_QPACK_DECODER_OPTS_VERSION || !out)
        return -EINVAL;
    vega_qpack_decoder_opts o;
    vega_qpack_decoder_opts_init(&o);
    if (opts)
        o = *opts;
    uint64_t cap = limit(o.max_table_capacity, 4096);
    uint64_t blocked = limit(o.max_blocked_streams, 16);
    uint64_t section = limit(o.max_field_section_size, 65536);
    size_t fields = o.max_fields ? o.max_fields : 256;
    if (cap > VEGA_QPACK_MAX_TABLE_CAPACITY || blocked > VEGA_QPACK_MAX_BLOCKED || section == 0 ||
        section > VEGA__HC_INT_MAX || fields > SIZE_MAX / sizeof(vega_http_field) || !mem_ok(o.mem))
        return -EINVAL;
    vega_qpack_decoder *d = vega__mem_calloc(o.mem, 1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->mem = o.mem;
    if (cb)
        d->cb = *cb;
    d->ud = user_data;
    d->max_capacity = cap;
    d->max_entries = cap / VEGA__QP_ENTRY_OVERHEAD;
    d->max_blocked = blocked;
    d->max_section = section;
    d->max_fields = fields;
    vega__qp_table_init(&d->t, o.mem, cap);
    d->out.mem = o.mem;
    *out = d;
    return 0;
}

static void release_resumed(vega_qpack_decoder *d)
{
    vega__mem_free(d->mem, d->resumed);
    d->resumed = NULL;
}

void vega_qpack_decoder_free(vega_qpack_decoder *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nblocked; i++)
        vega__mem_free(d->mem, d->blocked[i].data);
    vega__mem_free(d->mem, d->blocked);
    release_resumed(d);
    vega__qp_table_fini(&d->t);
    vega__qp_buf_free(&d->out);
    vega__mem_free(d->mem, d->in);
    vega__mem_free(d->mem, d->fields);
    vega__mem_free(d->mem, d->never);
    vega__mem_free(d->mem, d->scratch);
    vega__mem_free(d->mem, d);
}

int vega__qp_decoder_fail(vega_qpack_decoder *d, uint64_t code, const char *reason)
{
    if (!d->failed) {
        d->failed = VEGA_ERR_PROTO;
        d->err = code;
        d->reason = reason;
    }
    return VEGA_ERR_PROTO;
}

static int enc_fail(vega_qpack_decoder *d, const char *reason)
{
    return vega__qp_decoder_fail(d, VEGA_QPACK_ENCODER_STREAM_ERROR, reason);
}

/* ---- encoder stream ------------------------------------------------------------------------ */

/* Room an entry's name and value may take in the current capacity. */
static uint64_t entry_room(const vega_qpack_decoder *d)
{
    return d->t.capacity > VEGA__QP_ENTRY_OVERHEAD ? d->t.capacity - VEGA__QP_ENTRY_OVERHEAD : 0;
}

/* Reads a string literal of an insert instruction, refusing one that cannot fit the table as
 * soon as its length is known (so an incomplete instruction never waits for more than the
 * capacity allows: a Huffman string of n bytes decodes to at least (8n - 7) / 30 bytes). */
static vega_ssize read_str(vega_qpack_decoder *d, const uint8_t *in, size_t len, unsigned prefix,
                           vega__hc_str *s)
{
    vega_ssize k = vega__hc_str_decode(in, len, prefix, s);
    if (k < 0)
        return enc_fail(d, "bad string length on the encoder stream");
    uint64_t room = entry_room(d);
    bool fits =
        s->huffman ? s->len <= room * 4 + 8 && s->len * 8 <= room * 30 + 37 : s->len <= room;
    if ((k > 0 || s->len) && !fits)
        return enc_fail(d, "entry larger than the dynamic table capacity");
    return k;
}

/* Writes s (decoded) at dst[0..cap); returns its length, or -1 when it does not fit. */
static vega_ssize put_str(uint8_t *dst, size_t cap, const vega__hc_str *s)
{
    if (s->huffman) {
        vega_ssize n = vega__hc_huff_decode(dst, cap, s->ptr, s->len);
        return n == VEGA_ERR_NOBUF ? -1 : n;
    }
    if (s->len > cap)
        return -1;
    if (s->len)
        memcpy(dst, s->ptr, s->len);
    return (vega_ssize)s->len;
}

static int add_entry(vega_qpack_decoder *d, struct vega__qp_entry *e)
{
    if (vega__qp_entry_size(e) > d->t.capacity) {
        vega__mem_free(d->mem, e);
        /* RFC 9204 §3.2.2: "It is an error if the encoder attempts to add an entry that is
         * larger than the dynamic table capacity; the decoder MUST treat this as a connection
         * error of type QPACK_ENCODER_STREAM_ERROR." */
        return enc_fail(d, "entry larger than the dynamic table capacity");
    }
    int rc = vega__qp_table_insert(&d->t, e);
    if (rc < 0)
        vega__mem_free(d->mem, e);
    return rc;
}

/* Insert with a name (from a table, or NULL with a literal) and a value string. */
static int insert(vega_qpack_decoder *d, const uint8_t *name, size_t name_len,
                  const vega__hc_str *lit_name, const vega__hc_str *value)
{
    uint64_t room = entry_room(d);
    if (!d->scratch || d->scratch_cap < room) {
        uint8_t *p = vega__mem_realloc(d->mem, d->scratch, (size_t)room ? (size_t)room : 1);
        if (!p)
            return -ENOMEM;
        d->scratch = p;
        d->scratch_cap = (size_t)room;
    }
    size_t nl = name_len;
    if (lit_name) {
        vega_ssize n = put_str(d->scratch, (size_t)room, lit_name);
        if (n == VEGA_ERR_PROTO)
            return enc_fail(d, "bad Huffman string on the encoder stream");
        if (n < 0)
            return enc_fail(d, "entry larger than the dynamic table capacity");
        nl = (size_t)n;
        name = d->scratch;
    } else if (nl > room) {
        return enc_fail(d, "entry larger than the dynamic table capacity");
    }
    uint8_t *vdst = lit_name ? d->scratch + nl : d->scratch;
    vega_ssize vl = put_str(vdst, (size_t)room - nl, value);
    if (vl == VEGA_ERR_PROTO)
        return enc_fail(d, "bad Huffman string on the encoder stream");
    if (vl < 0)
        return enc_fail(d, "entry larger than the dynamic table capacity");
    /* The name is copied before anything is evicted: it may belong to the oldest entry
     * (RFC 9204 §3.2.2). */
    struct vega__qp_entry *e = vega__qp_entry_new(d->mem, name, nl, vdst, (size_t)vl);
    if (!e)
        return -ENOMEM;
    return add_entry(d, e);
}

/* The entry a relative index names on the encoder stream (§3.2.5: 0 is the newest). */
static struct vega__qp_entry *relative(vega_qpack_decoder *d, uint64_t rel)
{
    if (rel >= d->t.inserted)
        return NULL;
    return vega__qp_table_get(&d->t, d->t.inserted - 1 - rel);
}

static vega_ssize insert_name_ref(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    uint64_t idx;
    vega_ssize k = vega__hc_int_decode(in, len, 6, &idx);
    if (k <= 0)
        return k < 0 ? enc_fail(d, "bad name index") : 0;
    vega__hc_str v;
    vega_ssize k2 = read_str(d, in + k, (size_t)(len - (size_t)k), 7, &v);
    if (k2 <= 0)
        return k2;
    const uint8_t *name;
    size_t nl;
    if (in[0] & 0x40) {
        /* §3.1: an invalid static index "received on the encoder stream ... MUST be treated as
         * a connection error of type QPACK_ENCODER_STREAM_ERROR". */
        if (idx >= VEGA_QPACK_STATIC_COUNT)
            return enc_fail(d, "static table index out of range");
        name = (const uint8_t *)vega__qp_static[idx].name;
        nl = vega__qp_static[idx].name_len;
    } else {
        /* §2.2.3: a reference "to a dynamic table entry that has already been evicted" on the
         * encoder stream is QPACK_ENCODER_STREAM_ERROR. */
        struct vega__qp_entry *e = relative(d, idx);
        if (!e)
            return enc_fail(d, "dynamic table index out of range");
        name = e->data;
        nl = e->name_len;
    }
    int rc = insert(d, name, nl, NULL, &v);
    return rc < 0 ? rc : k + k2;
}

static vega_ssize insert_literal(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    vega__hc_str n, v;
    vega_ssize k = read_str(d, in, len, 5, &n);
    if (k <= 0)
        return k;
    vega_ssize k2 = read_str(d, in + k, len - (size_t)k, 7, &v);
    if (k2 <= 0)
        return k2;
    int rc = insert(d, NULL, 0, &n, &v);
    return rc < 0 ? rc : k + k2;
}

static vega_ssize set_capacity(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    uint64_t cap;
    vega_ssize k = vega__hc_int_decode(in, len, 5, &cap);
    if (k <= 0)
        return k < 0 ? enc_fail(d, "bad capacity") : 0;
    /* §4.3.1: "The decoder MUST treat a new dynamic table capacity value that exceeds this
     * limit as a connection error of type QPACK_ENCODER_STREAM_ERROR." */
    if (cap > d->max_capacity)
        return enc_fail(d, "dynamic table capacity above our SETTINGS_QPACK_MAX_TABLE_CAPACITY");
    vega__qp_table_set_capacity(&d->t, cap);
    return k;
}

static vega_ssize duplicate(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    uint64_t idx;
    vega_ssize k = vega__hc_int_decode(in, len, 5, &idx);
    if (k <= 0)
        return k < 0 ? enc_fail(d, "bad duplicate index") : 0;
    struct vega__qp_entry *old = relative(d, idx);
    if (!old)
        return enc_fail(d, "dynamic table index out of range");
    struct vega__qp_entry *e = vega__qp_entry_new(d->mem, old->data, old->name_len,
                                                  old->data + old->name_len, old->value_len);
    if (!e)
        return -ENOMEM;
    int rc = add_entry(d, e);
    return rc < 0 ? rc : k;
}

/* One instruction: returns its length when it was whole and applied, 0 when incomplete
 * (nothing applied), or a negative error. */
static vega_ssize instruction(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    if (in[0] & 0x80)
        return insert_name_ref(d, in, len);
    if (in[0] & 0x40)
        return insert_literal(d, in, len);
    if (in[0] & 0x20)
        return set_capacity(d, in, len);
    return duplicate(d, in, len);
}

/* Applies every whole instruction of in[0..len); returns the bytes they took. */
static vega_ssize instructions(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    size_t at = 0;
    while (at < len) {
        vega_ssize k = instruction(d, in + at, len - at);
        if (k < 0)
            return k;
        if (k == 0)
            break;
        at += (size_t)k;
    }
    return (vega_ssize)at;
}

static int keep_partial(vega_qpack_decoder *d, const uint8_t *p, size_t n)
{
    if (!vega__fits(d->in_len, n, d->in_cap)) {
        size_t cap = d->in_cap ? d->in_cap : 64;
        while (cap < d->in_len + n)
            cap *= 2;
        uint8_t *q = vega__mem_realloc(d->mem, d->in, cap);
        if (!q)
            return -ENOMEM;
        d->in = q;
        d->in_cap = cap;
    }
    memcpy(d->in + d->in_len, p, n);
    d->in_len += n;
    return 0;
}

static int report_unblocked(vega_qpack_decoder *d)
{
    for (size_t i = 0; i < d->nblocked; i++) {
        struct vega__qp_blocked *b = &d->blocked[i];
        if (b->reported || b->ric > d->t.inserted)
            continue;
        b->reported = true;
        if (d->cb.on_unblocked && d->cb.on_unblocked(d->ud, b->stream_id) != 0) {
            d->failed = VEGA_ERR_CALLBACK;
            return VEGA_ERR_CALLBACK;
        }
    }
    return 0;
}

/* Feeds an incomplete instruction kept from before: input goes in a piece at a time until it
 * is whole (read_str bounds how long that can be). Once it is, the bytes of that piece past the
 * whole instructions are given back, so the rest is read in place. Returns the input used. */
static vega_ssize feed_partial(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    size_t used = 0;
    while (d->in_len && used < len) {
        size_t piece = VEGA__MIN(len - used, (size_t)4096), old = d->in_len;
        int rc = keep_partial(d, in + used, piece);
        if (rc < 0)
            return rc;
        vega_ssize k = instructions(d, d->in, d->in_len);
        if (k < 0)
            return k;
        if (k == 0) {
            used += piece;
            continue;
        }
        /* The kept bytes were one incomplete instruction, so the first whole one ends past
         * them: what is left in the buffer came from this piece. */
        VEGA_ASSERT((size_t)k > old);
        used += (size_t)k - old;
        d->in_len = 0;
    }
    return (vega_ssize)used;
}

int vega_qpack_decoder_read_encoder(vega_qpack_decoder *d, const uint8_t *in, size_t len)
{
    if (d->failed)
        return d->failed;
    if (!in && len)
        return -EINVAL;
    release_resumed(d);
    vega_ssize k = feed_partial(d, in, len);
    if (k >= 0 && (size_t)k < len) {
        in += k;
        len -= (size_t)k;
        k = instructions(d, in, len);
        if (k >= 0 && (size_t)k < len)
            k = keep_partial(d, in + k, len - (size_t)k);
    }
    if (k == -ENOMEM || k == VEGA_ERR_PROTO || k == VEGA_ERR_CALLBACK) {
        if (!d->failed)
            d->failed = (int)k;
        return (int)k;
    }
    return report_unblocked(d);
}

/* ---- decoder stream ------------------------------------------------------------------------ */

vega_ssize vega_qpack_decoder_write(vega_qpack_decoder *d, uint8_t *out, size_t cap)
{
    if (!out && cap)
        return -EINVAL;
    /* RFC 9204 §4.4.3: "The decoder should send an Increment value that increases the Known
     * Received Count to the total number of dynamic table insertions and duplications processed
     * so far." Sent when the caller asks for bytes, so increments coalesce. */
    if (d->t.inserted > d->known_received && cap) {
        if (vega__qp_buf_int(&d->out, 0x00, 6, d->t.inserted - d->known_received) == 0)
            d->known_received = d->t.inserted;
    }
    return (vega_ssize)vega__qp_buf_take(&d->out, out, cap);
}

bool vega_qpack_decoder_want_write(const vega_qpack_decoder *d)
{
    return vega__qp_buf_pending(&d->out) > 0 || d->t.inserted > d->known_received;
}

uint64_t vega_qpack_decoder_get_error(const vega_qpack_decoder *d, const char **reason)
{
    if (reason)
        *reason = d->err ? d->reason : NULL;
    return d->err;
}

uint64_t vega_qpack_decoder_insert_count(const vega_qpack_decoder *d)
{
    return d->t.inserted;
}
