/* SPDX-License-Identifier: MIT */
/* Where a send buffer keeps the bytes it holds until they are acknowledged (RFC 9000 §2.2,
 * §13.3): copied into a ring, or referenced in the application's memory (zero-copy), mixed in
 * any order; see struct vega__quic_sendbuf in qstream.h for the layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

#define RING_MIN 4096
#define SEGS_MIN 4

static struct vega__quic_sendseg *seg_at(const struct vega__quic_sendbuf *b, size_t i)
{
    return &b->segs[(b->sfirst + i) & (b->scap - 1)];
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
    size_t held = (size_t)(b->rtail - b->rbase), tail = b->cap - b->head;
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

/* The ring index of ring position r (rbase <= r <= rtail: rtail is where the next copy goes). */
static size_t ring_idx(const struct vega__quic_sendbuf *b, uint64_t r)
{
    return (b->head + (size_t)(r - b->rbase)) & (b->cap - 1);
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
    int rc = ring_reserve(b, b->rtail - b->rbase + take);
    if (rc < 0)
        return rc;
    size_t pos = ring_idx(b, b->rtail);
    size_t first = VEGA__MIN((size_t)take, b->cap - pos);
    memcpy(b->data + pos, data, first);
    memcpy(b->data, data + first, (size_t)take - first);
    b->rtail += take;
    b->written += take;
    if (b->pool)
        b->pool->held += take;
    return (vega_ssize)take;
}

vega_ssize vega__quic_sendbuf_write_ref(struct vega__quic_sendbuf *b, const uint8_t *data,
                                        size_t len, vega_quic_release_fn release, void *user)
{
    if (b->fin || b->nsegs >= VEGA__QUIC_SENDBUF_MAX_REFS)
        return 0;
    uint64_t take = VEGA__MIN((uint64_t)len, vega__quic_sendbuf_room(b));
    take = VEGA__MIN(take, VEGA_QUIC_MAX_VARINT - b->written); /* §4.5: final size < 2^62 */
    take = VEGA__MIN(take, (uint64_t)(SIZE_MAX / 4));          /* vega_ssize stays positive */
    if (take == 0)
        return 0;
    if (b->nsegs == b->scap) {
        size_t ncap = b->scap ? 2 * b->scap : SEGS_MIN;
        struct vega__quic_sendseg *ns = vega__quic_malloc(b->mem, ncap * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < b->nsegs; i++)
            ns[i] = *seg_at(b, i);
        vega__quic_free(b->mem, b->segs);
        b->segs = ns;
        b->scap = ncap;
        b->sfirst = 0;
    }
    struct vega__quic_sendseg *s = seg_at(b, b->nsegs++);
    *s = (struct vega__quic_sendseg){.off = b->written,
                                     .end = b->written + take,
                                     .rmark = b->rtail,
                                     .ext = data,
                                     .release = release,
                                     .user = user};
    b->written += take;
    if (b->pool)
        b->pool->held += take;
    return (vega_ssize)take;
}

/* Where the byte at off (held) lies: in a referenced piece (*ext, *n bytes of it from off), or
 * in the ring (*ext NULL, ring position *rpos, *n copied bytes in a row from off). */
static void locate(const struct vega__quic_sendbuf *b, uint64_t off, const uint8_t **ext,
                   uint64_t *rpos, uint64_t *n)
{
    /* The first segment ending after off (binary search: they are in stream order). */
    size_t lo = 0, hi = b->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg_at(b, mid)->end <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct vega__quic_sendseg *next = lo < b->nsegs ? seg_at(b, lo) : NULL;
    if (next && next->off <= off) {
        *ext = next->ext + (off - next->off);
        *n = next->end - off;
        return;
    }
    *ext = NULL;
    if (lo > 0) {
        const struct vega__quic_sendseg *prev = seg_at(b, lo - 1);
        *rpos = prev->rmark + (off - prev->end);
    } else {
        /* Before every segment: acked_base lies in the same run of copied bytes, at rbase. */
        *rpos = b->rbase + (off - b->acked_base);
    }
    *n = (next ? next->off : b->written) - off;
}

size_t vega__quic_sendbuf_peek(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                               const uint8_t **p)
{
    VEGA_ASSERT(off >= b->acked_base && off + len <= b->written && !b->dropped);
    if (len == 0) {
        *p = NULL;
        return 0;
    }
    const uint8_t *ext;
    uint64_t rpos = 0, n;
    locate(b, off, &ext, &rpos, &n);
    if (ext) {
        *p = ext;
        return (size_t)VEGA__MIN((uint64_t)len, n);
    }
    size_t pos = ring_idx(b, rpos);
    *p = b->data + pos;
    return (size_t)VEGA__MIN(VEGA__MIN((uint64_t)len, n), (uint64_t)(b->cap - pos));
}

void vega__quic_sendbuf_copy(const struct vega__quic_sendbuf *b, uint64_t off, size_t len,
                             uint8_t *out)
{
    VEGA_ASSERT(off >= b->acked_base && off + len <= b->written && !b->dropped);
    while (len > 0) {
        const uint8_t *p;
        size_t n = vega__quic_sendbuf_peek(b, off, len, &p);
        memcpy(out, p, n);
        out += n;
        off += n;
        len -= n;
    }
}

/* Under a connection's send budget a ring much larger than what it holds gives memory back: the
 * budget counts bytes held, and a stream that once held much must not keep that memory while
 * holding little (a peer acknowledging each stream in turn would grow every ring to
 * stream_send_buffer). The ring then stays within 4 x held, or RING_KEEP; the new size is at
 * least twice what it holds, so it does not shrink and grow back at every write. */
#define RING_KEEP (32u * 1024u)
static void ring_shrink(struct vega__quic_sendbuf *b)
{
    size_t held = (size_t)(b->rtail - b->rbase);
    if (!b->pool || !b->pool->budget || b->cap <= RING_KEEP || held > b->cap / 4)
        return;
    if (held == 0) {
        vega__quic_free(b->mem, b->data);
        b->data = NULL;
        b->cap = b->head = 0;
        return;
    }
    size_t ncap = b->cap;
    while (ncap / 2 >= 2 * held && ncap / 2 >= RING_MIN)
        ncap /= 2;
    uint8_t *nd = vega__quic_malloc(b->mem, ncap);
    if (!nd)
        return; /* the old ring still serves */
    size_t first = VEGA__MIN(held, b->cap - b->head);
    memcpy(nd, b->data + b->head, first);
    memcpy(nd + first, b->data, held - first);
    vega__quic_free(b->mem, b->data);
    b->data = nd;
    b->cap = ncap;
    b->head = 0;
}

/* Calls a referenced piece's release, once. */
static void release(struct vega__quic_sendseg *s)
{
    if (s->release)
        s->release(s->user, s->ext, (size_t)(s->end - s->off));
}

void vega__quic_sendbuf_free_below(struct vega__quic_sendbuf *b, uint64_t base)
{
    if (b->dropped) {
        b->acked_base = base; /* the pool was given these bytes back at the drop */
        return;
    }
    if (b->pool && base > b->acked_base) {
        b->pool->held -= base - b->acked_base;
        b->pool->freed = true;
    }
    /* The first ring position still held: that of base, or of the first copied byte after the
     * referenced piece base lies in. */
    uint64_t rnew = b->rbase + (base - b->acked_base);
    while (b->nsegs && seg_at(b, 0)->end <= base) {
        struct vega__quic_sendseg *s = seg_at(b, 0);
        rnew = s->rmark + (base - s->end);
        release(s);
        b->sfirst = (b->sfirst + 1) & (b->scap - 1);
        b->nsegs--;
    }
    if (b->nsegs && seg_at(b, 0)->off <= base)
        rnew = seg_at(b, 0)->rmark;
    if (rnew == b->rtail)
        b->head = 0; /* empty: restart at the front so later bytes stay in one piece */
    else
        b->head = ring_idx(b, rnew);
    b->rbase = rnew;
    b->acked_base = base;
    ring_shrink(b);
}

void vega__quic_sendbuf_drop(struct vega__quic_sendbuf *b)
{
    if (b->pool && !b->dropped && b->written > b->acked_base) {
        b->pool->held -= b->written - b->acked_base;
        b->pool->freed = true;
    }
    while (b->nsegs) {
        release(seg_at(b, 0));
        b->sfirst = (b->sfirst + 1) & (b->scap - 1);
        b->nsegs--;
    }
    vega__quic_free(b->mem, b->segs);
    vega__quic_free(b->mem, b->data);
    b->segs = NULL;
    b->scap = b->sfirst = 0;
    b->data = NULL;
    b->cap = b->head = 0;
    b->dropped = true;
}

void vega__quic_sendbuf_trim(struct vega__quic_sendbuf *b)
{
    if (b->written != b->acked_base || b->dropped)
        return;
    VEGA_ASSERT(b->nsegs == 0 && b->rbase == b->rtail);
    vega__quic_free(b->mem, b->data);
    vega__quic_free(b->mem, b->segs);
    b->data = NULL;
    b->cap = 0;
    b->head = 0;
    b->segs = NULL;
    b->scap = b->sfirst = 0;
}
