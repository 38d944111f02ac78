/* SPDX-License-Identifier: MIT */
/* The QPACK encoder (RFC 9204 §2.1): its life and the peer's limits (§3.2.3), inserts on the
 * encoder stream (§4.3) under the eviction rule of §2.1.1, the decoder stream's Section
 * Acknowledgment, Stream Cancellation and Insert Count Increment (§4.4), and the Known Received
 * Count (§2.1.4). Field sections are encoded in encode_section.c. */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

void vega_qpack_encoder_opts_init_versioned(vega_qpack_encoder_opts *o, int opts_version)
{
    if (opts_version != VEGA_QPACK_ENCODER_OPTS_VERSION)
        VEGA_PANIC("vega_qpack_encoder_opts_init: options of another libvega (version %d)",
                   opts_version);
    memset(o, 0, sizeof *o);
    o->max_table_capacity = 4096;
    o->max_blocked_streams = 16;
    o->max_unacked_sections = 256;
    o->max_encoder_buffer = 16384;
}

static uint64_t limit(uint64_t v, uint64_t def)
{
    return v == 0 ? def : v == VEGA_QPACK_ZERO ? 0 : v;
}

int vega_qpack_encoder_new_versioned(vega_qpack_encoder **out, const vega_qpack_encoder_opts *opts,
                                     int opts_version)
{
    if (opts_version != VEGA_QPACK_ENCODER_OPTS_VERSION || !out)
        return -EINVAL;
    vega_qpack_encoder_opts o;
    vega_qpack_encoder_opts_init(&o);
    if (opts)
        o = *opts;
    o.max_table_capacity = limit(o.max_table_capacity, 4096);
    o.max_blocked_streams = limit(o.max_blocked_streams, 16);
    if (!o.max_unacked_sections)
        o.max_unacked_sections = 256;
    if (!o.max_encoder_buffer)
        o.max_encoder_buffer = 16384;
    const vega_mem *m = o.mem;
    if (o.max_table_capacity > VEGA_QPACK_MAX_TABLE_CAPACITY ||
        o.max_blocked_streams > VEGA_QPACK_MAX_BLOCKED ||
        o.max_unacked_sections > SIZE_MAX / sizeof(struct vega__qp_section) ||
        (m && (!m->malloc || !m->calloc || !m->realloc || !m->free)))
        return -EINVAL;
    vega_qpack_encoder *e = vega__mem_calloc(m, 1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->mem = m;
    e->o = o;
    e->out.mem = m;
    vega__qp_table_init(&e->t, m, 0);
    *out = e;
    return 0;
}

void vega_qpack_encoder_free(vega_qpack_encoder *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nsecs; i++)
        vega__mem_free(e->mem, e->secs[i].refs);
    vega__mem_free(e->mem, e->secs);
    vega__qp_table_fini(&e->t);
    vega__qp_buf_free(&e->out);
    vega__mem_free(e->mem, e);
}

int vega_qpack_encoder_set_peer_settings(vega_qpack_encoder *e, uint64_t max_table_capacity,
                                         uint64_t blocked_streams)
{
    if (e->peer_set || max_table_capacity > VEGA__HC_INT_MAX || blocked_streams > VEGA__HC_INT_MAX)
        return -EINVAL;
    e->peer_set = true;
    e->peer_max_capacity = max_table_capacity;
    e->peer_blocked = blocked_streams;
    /* §4.5.1.1: MaxEntries comes from the decoder's maximum, whatever capacity we choose. */
    e->max_entries = max_table_capacity / VEGA__QP_ENTRY_OVERHEAD;
    e->use_capacity = VEGA__MIN(max_table_capacity, e->o.max_table_capacity);
    e->blocked_limit = VEGA__MIN(blocked_streams, e->o.max_blocked_streams);
    vega__qp_table_init(&e->t, e->mem, e->use_capacity);
    return 0;
}

vega_ssize vega_qpack_encoder_write(vega_qpack_encoder *e, uint8_t *out, size_t cap)
{
    if (!out && cap)
        return -EINVAL;
    return (vega_ssize)vega__qp_buf_take(&e->out, out, cap);
}

bool vega_qpack_encoder_want_write(const vega_qpack_encoder *e)
{
    return vega__qp_buf_pending(&e->out) > 0;
}

uint64_t vega_qpack_encoder_get_error(const vega_qpack_encoder *e, const char **reason)
{
    if (reason)
        *reason = e->err ? e->reason : NULL;
    return e->err;
}

/* ---- inserts ------------------------------------------------------------------------------- */

bool vega__qp_enc_evictable(const struct vega__qp_table *t, uint64_t abs, void *arg)
{
    const vega_qpack_encoder *e = arg;
    /* §2.1.1: "Once the insertion of a dynamic table entry has been acknowledged and there are
     * no outstanding references to the entry in unacknowledged representations, the entry
     * becomes evictable." */
    const struct vega__qp_entry *x = vega__qp_table_get(t, abs);
    return abs < e->known_received && x && x->refs == 0;
}

/* Queues the instruction for an insert of name/value (its bytes reserved by the caller or
 * appended here), using a static or dynamic name reference or a Duplicate when it can. */
static int queue_insert(vega_qpack_encoder *e, const uint8_t *name, size_t nl, const uint8_t *value,
                        size_t vl)
{
    bool huff = !e->o.no_huffman;
    size_t need = 2 * VEGA__HC_INT_MAX_LEN + 1 + vega__hc_str_len(name, nl, 5, huff) +
                  vega__hc_str_len(value, vl, 7, huff);
    int rc = vega__qp_buf_reserve(&e->out, need);
    if (rc < 0)
        return rc;
    struct vega__qp_buf *b = &e->out;
    size_t room = vega__room(b->len, b->cap);
    uint64_t abs, name_abs;
    bool exact = vega__qp_table_find(&e->t, name, nl, value, vl, &abs, &name_abs);
    int sname = -1;
    int sidx = vega__qp_static_find(name, nl, value, vl, &sname);
    (void)sidx;
    size_t k;
    if (exact) {
        /* Duplicate (§4.3.4): relative index, 0 = the newest entry. */
        k = vega__hc_int_encode(b->p + b->len, room, 0x00, 5, e->t.inserted - 1 - abs);
        b->len += k;
        return 0;
    }
    if (sname >= 0) {
        k = vega__hc_int_encode(b->p + b->len, room, 0xc0, 6, (uint64_t)sname);
    } else if (name_abs != UINT64_MAX) {
        k = vega__hc_int_encode(b->p + b->len, room, 0x80, 6, e->t.inserted - 1 - name_abs);
    } else {
        k = vega__hc_str_encode(b->p + b->len, room, 0x40, 5, name, nl, huff);
    }
    b->len += k;
    room = vega__room(b->len, b->cap);
    b->len += vega__hc_str_encode(b->p + b->len, room, 0x00, 7, value, vl, huff);
    return 0;
}

int vega__qp_enc_insert(vega_qpack_encoder *e, const uint8_t *name, size_t nl, const uint8_t *value,
                        size_t vl)
{
    /* §3.2.3: "When the maximum table capacity is zero, the encoder MUST NOT insert entries
     * into the dynamic table and MUST NOT send any encoder instructions on the encoder stream." */
    if (!e->peer_set || e->use_capacity == 0)
        return VEGA_ERR_FULL;
    uint64_t size = (uint64_t)nl + vl + VEGA__QP_ENTRY_OVERHEAD;
    if (!e->capacity_sent)
        e->t.capacity = e->use_capacity;
    /* §2.1.1: "If the dynamic table does not contain enough room for a new entry without
     * evicting other entries, and the entries that would be evicted are not evictable, the
     * encoder MUST NOT insert that entry into the dynamic table (including duplicates of existing
     * entries)." */
    if (!vega__qp_table_has_room(&e->t, size, vega__qp_enc_evictable, e))
        return VEGA_ERR_FULL;
    struct vega__qp_entry *x = vega__qp_entry_new(e->mem, name, nl, value, vl);
    if (!x)
        return -ENOMEM;
    size_t mark = e->out.len;
    int rc = 0;
    if (!e->capacity_sent) {
        /* §3.2.2: "The encoder sends a Set Dynamic Table Capacity instruction (Section 4.3.1)
         * with a non-zero capacity to begin using the dynamic table." */
        rc = vega__qp_buf_int(&e->out, 0x20, 5, e->use_capacity);
    }
    if (rc == 0)
        rc = queue_insert(e, name, nl, value, vl);
    if (rc == 0)
        rc = vega__qp_table_insert(&e->t, x);
    if (rc < 0) {
        e->out.len = mark; /* nothing of it goes out */
        vega__mem_free(e->mem, x);
        return rc;
    }
    e->capacity_sent = true;
    return 0;
}

int vega_qpack_encoder_insert(vega_qpack_encoder *e, vega_http_str name, vega_http_str value)
{
    if ((!name.ptr && name.len) || (!value.ptr && value.len))
        return -EINVAL;
    if (vega__qp_buf_pending(&e->out) > e->o.max_encoder_buffer)
        return VEGA_ERR_FULL;
    return vega__qp_enc_insert(e, (const uint8_t *)name.ptr, name.len, (const uint8_t *)value.ptr,
                               value.len);
}

/* ---- decoder stream ------------------------------------------------------------------------ */

static int dec_fail(vega_qpack_encoder *e, const char *reason)
{
    if (!e->failed) {
        e->failed = VEGA_ERR_PROTO;
        e->err = VEGA_QPACK_DECODER_STREAM_ERROR;
        e->reason = reason;
    }
    return VEGA_ERR_PROTO;
}

static void release(vega_qpack_encoder *e, size_t i)
{
    struct vega__qp_section *s = &e->secs[i];
    for (size_t r = 0; r < s->nrefs; r++) {
        struct vega__qp_entry *x = vega__qp_table_get(&e->t, s->refs[r]);
        if (VEGA_ALWAYS(x && x->refs > 0))
            x->refs--;
    }
    vega__mem_free(e->mem, s->refs);
    memmove(s, s + 1, (e->nsecs - i - 1) * sizeof *s);
    e->nsecs--;
}

static int section_ack(vega_qpack_encoder *e, uint64_t stream_id)
{
    /* §2.2.2.1: each acknowledgment covers "the earliest unacknowledged field section containing
     * dynamic table references sent on the given stream". */
    for (size_t i = 0; i < e->nsecs; i++) {
        if (e->secs[i].stream_id != stream_id)
            continue;
        /* §2.1.4: "If the Required Insert Count of the acknowledged field section is greater
         * than the current Known Received Count, the Known Received Count is updated to that
         * Required Insert Count value." */
        if (e->secs[i].ric > e->known_received)
            e->known_received = e->secs[i].ric;
        release(e, i);
        return 0;
    }
    /* §4.4.1: "If an encoder receives a Section Acknowledgment instruction referring to a stream
     * on which every encoded field section with a non-zero Required Insert Count has already been
     * acknowledged, this MUST be treated as a connection error of type
     * QPACK_DECODER_STREAM_ERROR." */
    return dec_fail(e, "Section Acknowledgment with nothing to acknowledge");
}

static void stream_cancel(vega_qpack_encoder *e, uint64_t stream_id)
{
    for (size_t i = e->nsecs; i > 0; i--)
        if (e->secs[i - 1].stream_id == stream_id)
            release(e, i - 1);
}

static int increment(vega_qpack_encoder *e, uint64_t inc)
{
    /* §4.4.3: "An encoder that receives an Increment field equal to zero, or one that increases
     * the Known Received Count beyond what the encoder has sent, MUST treat this as a connection
     * error of type QPACK_DECODER_STREAM_ERROR." */
    if (inc == 0 || inc > e->t.inserted - e->known_received)
        return dec_fail(e, "bad Insert Count Increment");
    e->known_received += inc;
    return 0;
}

static vega_ssize dec_instruction(vega_qpack_encoder *e, const uint8_t *in, size_t len)
{
    uint64_t v;
    unsigned prefix = (in[0] & 0x80) ? 7 : 6;
    vega_ssize k = vega__hc_int_decode(in, len, prefix, &v);
    if (k <= 0)
        return k < 0 ? dec_fail(e, "bad integer on the decoder stream") : 0;
    int rc;
    if (in[0] & 0x80)
        rc = section_ack(e, v);
    else if (in[0] & 0x40)
        stream_cancel(e, v), rc = 0;
    else
        rc = increment(e, v);
    return rc < 0 ? rc : k;
}

int vega_qpack_encoder_read_decoder(vega_qpack_encoder *e, const uint8_t *in, size_t len)
{
    if (e->failed)
        return e->failed;
    if (!in && len)
        return -EINVAL;
    size_t at = 0;
    /* An incomplete instruction is at most a prefixed integer: fewer than 10 bytes kept. */
    while (e->in_len && at < len) {
        e->in[e->in_len++] = in[at++];
        vega_ssize k = dec_instruction(e, e->in, e->in_len);
        if (k < 0)
            return (int)k;
        if (k > 0)
            e->in_len = 0;
    }
    while (at < len) {
        vega_ssize k = dec_instruction(e, in + at, len - at);
        if (k < 0)
            return (int)k;
        if (k == 0) {
            VEGA_ASSERT(len - at < VEGA__HC_INT_MAX_LEN);
            memcpy(e->in, in + at, len - at);
            e->in_len = len - at;
            break;
        }
        at += (size_t)k;
    }
    return 0;
}

size_t vega__qp_enc_blocking_streams(const vega_qpack_encoder *e, uint64_t stream_id,
                                     bool *this_one)
{
    /* A stream "could become blocked" while it has an unacknowledged section whose Required
     * Insert Count is above the Known Received Count (§2.1.2). Counted without duplicates. */
    size_t n = 0;
    *this_one = false;
    for (size_t i = 0; i < e->nsecs; i++) {
        const struct vega__qp_section *s = &e->secs[i];
        if (s->ric <= e->known_received)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = e->secs[j].stream_id == s->stream_id && e->secs[j].ric > e->known_received;
        if (seen)
            continue;
        n++;
        if (s->stream_id == stream_id)
            *this_one = true;
    }
    return n;
}
