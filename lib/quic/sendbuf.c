/* SPDX-License-Identifier: MIT */
/* The send buffer of a stream or CRYPTO level: written bytes kept in a ring until acknowledged,
 * fresh and lost ranges handed out for (re)transmission, and the FIN's state (RFC 9000 §3.1,
 * §13.3). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

#define RING_MIN 4096

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
    vega__quic_free(b->mem, b->data);
    vega__quic_ranges_fini(&b->lost);
    vega__quic_ranges_fini(&b->acked);
    memset(b, 0, sizeof *b);
}

uint64_t vega__quic_sendbuf_room(const struct vega__quic_sendbuf *b)
{
    if (b->limit == 0)
        return UINT64_MAX;
    uint64_t held = b->written - b->acked_base;
    return b->limit > held ? b->limit - held : 0;
}

/* Grows the ring (a power of two) to hold need bytes. It grows in place through realloc, which
 * for a large block remaps its pages (no copy, and the pages already touched stay mapped); of the
 * two pieces of a wrapped ring the shorter one then moves so the bytes read in order again. */
static int ring_reserve(struct vega__quic_sendbuf *b, uint64_t need)
{
    if (need <= b->cap)
        return 0;
    if (need > SIZE_MAX / 4)
        return -ENOMEM;
    size_t ncap = b->cap ? b->cap : (b->limit && b->limit < RING_MIN ? 64 : RING_MIN);
    while (ncap < need)
        ncap *= 2;
    uint8_t *nd = vega__quic_realloc(b->mem, b->data, ncap);
    if (!nd)
        return -ENOMEM;
    size_t held = (size_t)(b->written - b->acked_base), tail = b->cap - b->head;
    if (held > tail) { /* wrapped: [head, cap) then [0, held - tail) */
        size_t wrapped = held - tail;
        if (wrapped <= tail) {
            memcpy(nd + b->cap, nd, wrapped); /* ncap >= 2 * cap: it fits past the old end */
        } else {
            memmove(nd + ncap - tail, nd + b->head, tail);
            b->head = ncap - tail;
        }
    } else if (held == 0) {
        b->head = 0;
    }
    b->data = nd;
    b->cap = ncap;
    return 0;
}

static size_t ring_pos(const struct vega__quic_sendbuf *b, uint64_t off)
{
    return (b->head + (size_t)(off - b->acked_base)) & (b->cap - 1);
}

vega_ssize vega__quic_sendbuf_write(struct vega__quic_sendbuf *b, const uint8_t *data, size_t len)
{
    if (b->fin)
        return 0;
    uint64_t take = VEGA__MIN((uint64_t)len, vega__quic_sendbuf_room(b));
    take = VEGA__MIN(take, VEGA_QUIC_MAX_VARINT - b->written); /* §4.5: final size < 2^62 */
    take = VEGA__MIN(take, (uint64_t)(SIZE_MAX / 4));          /* vega_ssize stays positive */
    if (take == 0)
        return 0;
    int rc = ring_reserve(b, b->written - b->acked_base + take);
    if (rc < 0)
        return rc;
    size_t pos = ring_pos(b, b->written);
    size_t first = VEGA__MIN((size_t)take, b->cap - pos);
    memcpy(b->data + pos, data, first);
    memcpy(b->data, data + first, (size_t)take - first);
    b->written += take;
    return (vega_ssize)take;
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

void vega__quic_sendbuf_copy(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                             uint8_t *out)
{
    VEGA_ASSERT(off >= b->acked_base && off + len <= b->written);
    if (len == 0)
        return;
    size_t pos = ring_pos(b, off);
    size_t first = VEGA__MIN(len, b->cap - pos);
    memcpy(out, b->data + pos, first);
    memcpy(out + first, b->data, len - first);
}

size_t vega__quic_sendbuf_peek(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                               const uint8_t **p)
{
    VEGA_ASSERT(off >= b->acked_base && off + len <= b->written);
    if (len == 0) {
        *p = NULL;
        return 0;
    }
    size_t pos = ring_pos(b, off);
    *p = b->data + pos;
    return VEGA__MIN(len, b->cap - pos);
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

/* Frees everything below base (all of it acknowledged). */
static void advance_base(struct vega__quic_sendbuf *b, uint64_t base)
{
    if (base == b->written)
        b->head = 0; /* empty: restart at the front so later bytes stay in one piece */
    else
        b->head = (b->head + (size_t)(base - b->acked_base)) & (b->cap - 1);
    b->acked_base = base;
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
    advance_base(b, end);
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

void vega__quic_sendbuf_trim(struct vega__quic_sendbuf *b)
{
    if (b->written != b->acked_base)
        return;
    vega__quic_free(b->mem, b->data);
    b->data = NULL;
    b->cap = 0;
    b->head = 0;
}
