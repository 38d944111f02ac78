/* SPDX-License-Identifier: MIT */
/* Field sections on the QPACK decoder's side (RFC 9204 §2.2.1, §2.2.2): decoded at once when
 * the dynamic table has what they need, else kept (bounded in number and size) until the
 * encoder stream brings it; Stream Cancellation for abandoned streams (§4.4.2). */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

static struct vega__qp_blocked *find_blocked(const vega_qpack_decoder *d, uint64_t stream_id)
{
    for (size_t i = 0; i < d->nblocked; i++)
        if (d->blocked[i].stream_id == stream_id)
            return &d->blocked[i];
    return NULL;
}

static void drop_blocked(vega_qpack_decoder *d, struct vega__qp_blocked *b, bool free_data)
{
    if (free_data)
        vega__mem_free(d->mem, b->data);
    size_t i = (size_t)(b - d->blocked);
    memmove(b, b + 1, (d->nblocked - i - 1) * sizeof *b);
    d->nblocked--;
}

static int keep(vega_qpack_decoder *d, uint64_t stream_id, uint64_t ric, const uint8_t *in,
                size_t len)
{
    /* RFC 9204 §2.1.2: "If a decoder encounters more blocked streams than it promised to
     * support, it MUST treat this as a connection error of type QPACK_DECOMPRESSION_FAILED." */
    if (d->nblocked >= d->max_blocked)
        return vega__qp_decoder_fail(d, VEGA_QPACK_DECOMPRESSION_FAILED,
                                     "more blocked streams than SETTINGS_QPACK_BLOCKED_STREAMS");
    if (len > d->max_section)
        return VEGA_ERR_QPACK_TOO_LARGE;
    if (d->nblocked == d->blocked_cap) {
        size_t cap = d->blocked_cap ? d->blocked_cap * 2 : 4;
        struct vega__qp_blocked *p = vega__mem_realloc(d->mem, d->blocked, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        d->blocked = p;
        d->blocked_cap = cap;
    }
    uint8_t *copy = vega__mem_malloc(d->mem, len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, in, len);
    d->blocked[d->nblocked++] = (struct vega__qp_blocked){stream_id, ric, copy, len, false};
    return VEGA_QPACK_BLOCKED;
}

int vega_qpack_decoder_decode(vega_qpack_decoder *d, uint64_t stream_id, const uint8_t *in,
                              size_t len, vega_qpack_section *out)
{
    if (d->failed)
        return d->failed;
    if (stream_id > VEGA__HC_INT_MAX || (!in && len) || !out || find_blocked(d, stream_id))
        return -EINVAL;
    vega__mem_free(d->mem, d->resumed);
    d->resumed = NULL;
    uint64_t ric, base;
    vega_ssize k = vega__qp_decode_prefix(d, in, len, &ric, &base);
    if (k == 0)
        return vega__qp_decoder_fail(d, VEGA_QPACK_DECOMPRESSION_FAILED,
                                     "field section prefix truncated");
    if (k < 0)
        return (int)k;
    /* §2.2.1: "When the Required Insert Count is less than or equal to the decoder's Insert
     * Count, the field section can be processed immediately. Otherwise, the stream on which the
     * field section was received becomes blocked." */
    if (ric > d->t.inserted)
        return keep(d, stream_id, ric, in, len);
    return vega__qp_decode_lines(d, stream_id, in, len, out);
}

bool vega_qpack_decoder_is_unblocked(const vega_qpack_decoder *d, uint64_t stream_id)
{
    const struct vega__qp_blocked *b = find_blocked(d, stream_id);
    return b && b->ric <= d->t.inserted;
}

int vega_qpack_decoder_resume(vega_qpack_decoder *d, uint64_t stream_id, vega_qpack_section *out)
{
    if (d->failed)
        return d->failed;
    struct vega__qp_blocked *b = find_blocked(d, stream_id);
    if (!b || b->ric > d->t.inserted || !out)
        return -EINVAL;
    vega__mem_free(d->mem, d->resumed);
    /* The fields may point into these bytes: they live until the next call on the decoder. */
    d->resumed = b->data;
    const uint8_t *data = b->data;
    size_t len = b->len;
    drop_blocked(d, b, false);
    return vega__qp_decode_lines(d, stream_id, data, len, out);
}

int vega_qpack_decoder_cancel_stream(vega_qpack_decoder *d, uint64_t stream_id)
{
    if (stream_id > VEGA__HC_INT_MAX)
        return -EINVAL;
    struct vega__qp_blocked *b = find_blocked(d, stream_id);
    if (b)
        drop_blocked(d, b, true);
    /* §2.2.2.2: "A decoder with a maximum dynamic table capacity equal to zero MAY omit sending
     * Stream Cancellations, because the encoder cannot have any dynamic table references." */
    if (d->max_capacity == 0 || d->failed)
        return 0;
    return vega__qp_buf_int(&d->out, 0x40, 6, stream_id);
}

size_t vega_qpack_decoder_blocked_count(const vega_qpack_decoder *d)
{
    return d->nblocked;
}
