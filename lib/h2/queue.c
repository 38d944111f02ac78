/* SPDX-License-Identifier: MIT */
/* The HTTP/2 output queue: serialized frames waiting for room in the caller's buffer, with
 * marks that count the answers the peer forced on us (RFC 9113 §10.5: a peer that never reads
 * must not make the queue grow without bound). */
#include <string.h>

#include "h2_int.h"

void vega__h2_q_free(struct h2_q *q, const vega_mem *mem)
{
    vega__mem_free(mem, q->p);
    vega__mem_free(mem, q->marks);
    memset(q, 0, sizeof *q);
}

uint8_t *vega__h2_q_push(struct h2_q *q, const vega_mem *mem, size_t n)
{
    if (q->off == q->len)
        q->off = q->len = 0;
    if (!vega__fits(q->len, n, q->cap)) {
        /* Move the unsent bytes to the front first; grow only when they still do not fit. */
        if (q->off) {
            memmove(q->p, q->p + q->off, q->len - q->off);
            q->len -= q->off;
            q->off = 0;
        }
        if (!vega__fits(q->len, n, q->cap)) {
            size_t cap = VEGA__MAX(VEGA__MAX(q->cap * 2, q->len + n), (size_t)256);
            uint8_t *p = vega__mem_realloc(mem, q->p, cap);
            if (!p)
                return NULL;
            q->p = p;
            q->cap = cap;
        }
    }
    uint8_t *at = q->p + q->len;
    q->len += n;
    q->in += n;
    return at;
}

int vega__h2_q_mark(struct h2_q *q, const vega_mem *mem)
{
    if (q->mlen == q->mcap) {
        size_t cap = q->mcap ? q->mcap * 2 : 16;
        uint64_t *m = vega__mem_malloc(mem, cap * sizeof *m);
        if (!m)
            return -ENOMEM;
        for (size_t i = 0; i < q->mlen; i++)
            m[i] = q->marks[(q->mfirst + i) % q->mcap];
        vega__mem_free(mem, q->marks);
        q->marks = m;
        q->mcap = cap;
        q->mfirst = 0;
    }
    q->marks[(q->mfirst + q->mlen) % q->mcap] = q->in;
    q->mlen++;
    return 0;
}

size_t vega__h2_q_drain(struct h2_q *q, uint8_t *out, size_t cap)
{
    size_t n = VEGA__MIN(cap, q->len - q->off);
    if (n) {
        memcpy(out, q->p + q->off, n);
        q->off += n;
        q->out += n;
    }
    while (q->mlen && q->marks[q->mfirst] <= q->out) {
        q->mfirst = (q->mfirst + 1) % q->mcap;
        q->mlen--;
    }
    if (q->off == q->len)
        q->off = q->len = 0;
    return n;
}
