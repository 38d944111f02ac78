/* SPDX-License-Identifier: MIT */
/* A byte queue for the QPACK instruction streams (RFC 9204 §4.2): appended to by the codec,
 * drained by the caller in pieces of any size. */
#include <string.h>

#include "hcodec.h"
#include "qpack_int.h"

int vega__qp_buf_reserve(struct vega__qp_buf *b, size_t n)
{
    if (b->off == b->len)
        b->off = b->len = 0;
    if (vega__fits(b->len, n, b->cap))
        return 0;
    /* Drop what was sent before growing. */
    if (b->off) {
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (vega__fits(b->len, n, b->cap))
            return 0;
    }
    if (n > SIZE_MAX / 2 - b->len)
        return -ENOMEM;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *p = vega__mem_realloc(b->mem, b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int vega__qp_buf_append(struct vega__qp_buf *b, const uint8_t *p, size_t n)
{
    int rc = vega__qp_buf_reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

int vega__qp_buf_int(struct vega__qp_buf *b, uint8_t first, unsigned prefix, uint64_t v)
{
    int rc = vega__qp_buf_reserve(b, VEGA__HC_INT_MAX_LEN);
    if (rc < 0)
        return rc;
    b->len += vega__hc_int_encode(b->p + b->len, vega__room(b->len, b->cap), first, prefix, v);
    return 0;
}

size_t vega__qp_buf_take(struct vega__qp_buf *b, uint8_t *out, size_t cap)
{
    size_t n = VEGA__MIN(cap, b->len - b->off);
    if (n)
        memcpy(out, b->p + b->off, n);
    b->off += n;
    if (b->off == b->len)
        b->off = b->len = 0;
    return n;
}

void vega__qp_buf_free(struct vega__qp_buf *b)
{
    vega__mem_free(b->mem, b->p);
    b->p = NULL;
    b->off = b->len = b->cap = 0;
}
