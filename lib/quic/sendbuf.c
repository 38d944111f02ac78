/* SPDX-License-Identifier: MIT */
/* The send buffer of a stream or CRYPTO level: fresh and lost ranges handed out for
 * (re)transmission, acknowledgements freeing what they complete, and the FIN's state (RFC 9000
 * §3.1, §13.3); where the bytes are kept (a ring, or the application's memory) is sendstore.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

void vega__quic_sendbuf_init(struct vega__quic_sendbuf *b, uint64_t limit, const vega_quic_mem *mem)
{
    memset(b, 0, sizeof *b);
    b->limit = limit;
    b->mem = mem;
    vega__quic_ranges_init(&b->lost, 0, mem);
    vega__quic_ranges_init(&b->acked, 0, mem);
}

void vega__quic_sendbuf_fini(struct vega__quic_sendbuf *b)
{
    vega__quic_sendbuf_drop(b); /* releases what is still referenced, frees the ring */
    vega__quic_ranges_fini(&b->lost);
    vega__quic_ranges_fini(&b->acked);
    memset(b, 0, sizeof *b);
}

uint64_t vega__quic_sendbuf_room(const struct vega__quic_sendbuf *b)
{
    uint64_t held = b->written - b->acked_base;
    uint64_t room = UINT64_MAX;
    if (b->limit)
        room = b->limit > held ? b->limit - held : 0;
    const struct vega__quic_sendpool *p = b->pool;
    if (p && p->budget) {
        uint64_t left = p->budget > p->held ? p->budget - p->held : 0;
        if (held < VEGA_QUIC_SEND_BUDGET_FLOOR)
            left = VEGA__MAX(left, VEGA_QUIC_SEND_BUDGET_FLOOR - held);
        room = VEGA__MIN(room, left);
    }
    return room;
}

void vega__quic_sendbuf_finish(struct vega__quic_sendbuf *b)
{
    b->fin = true;
}

/* The FIN still has to go out: never sent, or declared lost since, and not acknowledged. */
static bool fin_pending(const struct vega__quic_sendbuf *b)
{
    return b->fin && !b->fin_acked && (!b->fin_sent || b->fin_lost);
}

/* Where the spill range starts above what is acknowledged (>= spill_end: it is empty). */
static uint64_t spill_from(const struct vega__quic_sendbuf *b)
{
    return VEGA__MAX(b->spill_start, b->acked_base);
}

/* Records [start, end) to send again without allocating (see spill_start in qstream.h). */
static void spill_add(struct vega__quic_sendbuf *b, uint64_t start, uint64_t end)
{
    if (spill_from(b) >= b->spill_end) {
        b->spill_start = start;
        b->spill_end = end;
        return;
    }
    b->spill_start = VEGA__MIN(b->spill_start, start);
    b->spill_end = VEGA__MAX(b->spill_end, end);
}

bool vega__quic_sendbuf_next(const struct vega__quic_sendbuf *b, uint64_t max_off, size_t max_len,
                             uint64_t *off, size_t *len, bool *fin, bool *blocked)
{
    if (blocked)
        *blocked = false;
    uint64_t sp = spill_from(b);
    if (sp < b->spill_end && max_len > 0 && (b->lost.n == 0 || sp < b->lost.r[0].start)) {
        uint64_t n = VEGA__MIN(b->spill_end - sp, (uint64_t)max_len);
        *off = sp;
        *len = (size_t)n;
        *fin = fin_pending(b) && sp + n == b->written;
        return true;
    }
    if (b->lost.n > 0 && max_len > 0) {
        const struct vega__quic_range *r = &b->lost.r[0];
        uint64_t n = VEGA__MIN(r->end - r->start, (uint64_t)max_len);
        *off = r->start;
        *len = (size_t)n;
        *fin = fin_pending(b) && r->start + n == b->written;
        return true;
    }
    if (b->next_off < b->written) {
        if (b->next_off >= max_off) {
            if (blocked)
                *blocked = true;
            return false;
        }
        uint64_t n = VEGA__MIN(b->written, max_off) - b->next_off;
        n = VEGA__MIN(n, (uint64_t)max_len);
        if (n == 0)
            return false;
        *off = b->next_off;
        *len = (size_t)n;
        *fin = fin_pending(b) && b->next_off + n == b->written;
        return true;
    }
    if (fin_pending(b)) { /* a lone FIN: everything else went out already */
        *off = b->written;
        *len = 0;
        *fin = true;
        return true;
    }
    return false;
}

int vega__quic_sendbuf_on_sent(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    uint64_t end = off + len;
    if (off <= spill_from(b) && end > spill_from(b))
        b->spill_start = end;
    if (b->lost.n > 0) {
        int rc = vega__quic_ranges_remove(&b->lost, off, end);
        if (rc < 0)
            return rc;
    }
    if (end > b->next_off)
        b->next_off = end;
    if (fin) {
        b->fin_sent = true;
        b->fin_lost = false;
    }
    return 0;
}

int vega__quic_sendbuf_on_acked(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    uint64_t end = off + len;
    if (VEGA_NEVER(end > b->next_off)) /* only what was sent can be acknowledged */
        end = b->next_off;
    if (fin) {
        b->fin_acked = true;
        b->fin_lost = false;
    }
    if (end <= b->acked_base)
        return 0;
    off = VEGA__MAX(off, b->acked_base);
    if (b->lost.n > 0) { /* a spurious loss: do not send it again */
        int rc = vega__quic_ranges_remove(&b->lost, off, end);
        if (rc < 0)
            return rc;
    }
    if (off > b->acked_base) {
        /* Unrecorded, these bytes would hold acked_base back for good: send them again, so
         * that a later acknowledgement records them. */
        if (vega__quic_ranges_add(&b->acked, off, end) < 0)
            spill_add(b, off, end);
        return 0;
    }
    if (b->acked.n > 0) {
        end = VEGA__MAX(end, vega__quic_ranges_covered_to(&b->acked, end));
        vega__quic_ranges_remove(&b->acked, 0, end); /* whole ranges only: cannot fail */
    }
    vega__quic_sendbuf_free_below(b, end);
    return 0;
}

int vega__quic_sendbuf_on_lost(struct vega__quic_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    if (fin && b->fin_sent && !b->fin_acked)
        b->fin_lost = true;
    uint64_t start = VEGA__MAX(off, b->acked_base);
    uint64_t end = VEGA__MIN(off + len, b->next_off);
    if (start >= end)
        return 0;
    const struct vega__quic_ranges *ak = &b->acked;
    /* Add the parts of [start, end) between the acknowledged ranges. */
    for (size_t i = vega__quic_ranges_find(ak, start + 1); start < end; i++) {
        uint64_t stop = i < ak->n ? VEGA__MIN(ak->r[i].start, end) : end;
        if (stop > start && vega__quic_ranges_add(&b->lost, start, stop) < 0) {
            spill_add(b, start, end); /* never sent again otherwise: the stream would stall */
            return 0;
        }
        if (i >= ak->n)
            break;
        start = VEGA__MAX(start, ak->r[i].end);
    }
    return 0;
}

bool vega__quic_sendbuf_has_pending(const struct vega__quic_sendbuf *b)
{
    return b->lost.n > 0 || b->next_off < b->written || fin_pending(b) ||
           spill_from(b) < b->spill_end;
}

bool vega__quic_sendbuf_is_acked(const struct vega__quic_sendbuf *b)
{
    return b->fin && b->fin_acked && b->acked_base == b->written;
}
