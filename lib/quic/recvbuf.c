/* SPDX-License-Identifier: MIT */
/* The receive buffer of a stream or CRYPTO level: out-of-order reassembly into a ring, final
 * size checks (RFC 9000 §4.5) and the receive window (§4.1). See qstream.h for the layout. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

#define RING_MIN 4096

void vega__quic_recvbuf_init(struct vega__quic_recvbuf *b, uint64_t limit, const vega_quic_mem *mem)
{
    memset(b, 0, sizeof *b);
    b->final_size = UINT64_MAX;
    b->limit = limit;
    b->mem = mem;
    vega__quic_ranges_init(&b->islands, 0, mem);
}

void vega__quic_recvbuf_fini(struct vega__quic_recvbuf *b)
{
    vega__quic_free(b->mem, b->ring);
    vega__quic_ranges_fini(&b->islands);
    memset(b, 0, sizeof *b);
}

/* Ensures the ring covers [read_off, read_off + need), growing it by doubling (amortized O(1)
 * per byte). The ring grows in place through realloc, which for a large block remaps its pages
 * (no copy, and the pages already touched stay mapped); of the two pieces of a wrapped ring the
 * shorter one then moves so the bytes read in order again: [head, old cap) to the end of the new
 * ring, or [0, head) just past the old end. */
static int ring_reserve(struct vega__quic_recvbuf *b, uint64_t need)
{
    if (need <= b->ring_cap)
        return 0;
    if (need > SIZE_MAX / 4)
        return -ENOMEM;
    uint64_t ncap = VEGA__MAX(need, VEGA__MAX((uint64_t)b->ring_cap * 2, (uint64_t)RING_MIN));
    if (b->limit && ncap > b->limit)
        ncap = VEGA__MAX(need, b->limit);
    uint8_t *nr = vega__quic_realloc(b->mem, b->ring, (size_t)ncap);
    if (!nr)
        return -ENOMEM;
    size_t old = b->ring_cap, tail = old - b->head, grown = (size_t)ncap - old;
    if (b->head == 0) {
        /* in order already */
    } else if (b->head <= tail && b->head <= grown) {
        memcpy(nr + old, nr, b->head); /* [0, head) follows [head, old) */
    } else {
        memmove(nr + (size_t)ncap - tail, nr + b->head, tail); /* [head, old) to the end */
        b->head = (size_t)ncap - tail;
    }
    b->ring = nr;
    b->ring_cap = (size_t)ncap;
    return 0;
}

/* Copies data for offsets [start, start + len) (inside the ring's span) into the ring. */
static void ring_put(struct vega__quic_recvbuf *b, uint64_t start, const uint8_t *data, size_t len)
{
    size_t pos = b->head + (size_t)(start - b->read_off);
    if (pos >= b->ring_cap)
        pos -= b->ring_cap;
    size_t first = VEGA__MIN(len, b->ring_cap - pos);
    memcpy(b->ring + pos, data, first);
    memcpy(b->ring, data + first, len - first);
}

static int fail(uint64_t *wire_err, uint64_t code)
{
    if (wire_err)
        *wire_err = code;
    return VEGA_ERR_PROTO;
}

/* The checks a STREAM frame ending at end (fin: with the FIN bit) or a RESET_STREAM (end = its
 * final size, fin) must pass before anything changes. Returns 0 or the wire error code. */
static uint64_t check_frame(const struct vega__quic_recvbuf *b, uint64_t end, bool fin)
{
    if (b->final_size != UINT64_MAX) {
        /* §4.5: "Once a final size for a stream is known, it cannot change. If a RESET_STREAM
         * or STREAM frame is received indicating a change in the final size for the stream, an
         * endpoint SHOULD respond with an error of type FINAL_SIZE_ERROR"; "A receiver SHOULD
         * treat receipt of data at or beyond the final size as an error of type
         * FINAL_SIZE_ERROR". */
        if (end > b->final_size || (fin && end != b->final_size))
            return VEGA_QUIC_FINAL_SIZE_ERROR;
    } else if (fin && end < b->highest) {
        /* §4.5: "... or if a final size is received that is lower than the highest offset of
         * any data received so far": FINAL_SIZE_ERROR. */
        return VEGA_QUIC_FINAL_SIZE_ERROR;
    }
    /* §4.1: "A receiver MUST close the connection with an error of type FLOW_CONTROL_ERROR if
     * the sender violates the advertised connection or stream data limits". */
    if (b->limit && !b->reset && end > vega__sat_add(b->read_off, b->limit))
        return VEGA_QUIC_FLOW_CONTROL_ERROR;
    return 0;
}

/* Moves contig over the islands it now reaches (they are all above it otherwise). */
static void absorb_islands(struct vega__quic_recvbuf *b)
{
    if (b->islands.n == 0 || b->islands.r[0].start > b->contig)
        return;
    b->contig = VEGA__MAX(b->contig, vega__quic_ranges_covered_to(&b->islands, b->contig));
    vega__quic_ranges_remove(&b->islands, 0, b->contig); /* removes whole ranges: no split */
}

int vega__quic_recvbuf_insert(struct vega__quic_recvbuf *b, uint64_t off, const uint8_t *data,
                              size_t len, bool fin, uint64_t *wire_err)
{
    if (off > VEGA_QUIC_MAX_VARINT || len > VEGA_QUIC_MAX_VARINT - off)
        return fail(wire_err, VEGA_QUIC_FRAME_ENCODING_ERROR); /* §19.8 */
    uint64_t end = off + len;
    uint64_t code = check_frame(b, end, fin);
    if (code)
        return fail(wire_err, code);

    /* Only bytes not yet contiguous need storing (bytes of islands are simply rewritten). */
    uint64_t start = VEGA__MAX(off, b->contig);
    if (!b->reset && end > start) {
        int rc = ring_reserve(b, end - b->read_off);
        if (rc < 0)
            return rc;
        if (start > b->contig) {
            struct vega__quic_ranges *is = &b->islands;
            if (is->n >= VEGA__QUIC_RECVBUF_MAX_ISLANDS) {
                size_t i = vega__quic_ranges_find(is, start);
                if (i == is->n || is->r[i].start > end) /* would be a new island */
                    return fail(wire_err, VEGA_QUIC_FLOW_CONTROL_ERROR);
            }
            rc = vega__quic_ranges_add(is, start, end);
            if (rc < 0)
                return rc;
        }
        ring_put(b, start, data + (start - off), (size_t)(end - start));
        if (start == b->contig) {
            b->contig = end;
            absorb_islands(b);
        }
    }
    if (fin)
        b->final_size = end;
    if (end > b->highest)
        b->highest = end;
    return 0;
}

uint64_t vega__quic_recvbuf_readable(const struct vega__quic_recvbuf *b)
{
    return b->contig - b->read_off;
}

size_t vega__quic_recvbuf_peek(const struct vega__quic_recvbuf *b, const uint8_t **p)
{
    uint64_t n = b->contig - b->read_off;
    if (n == 0) {
        *p = NULL;
        return 0;
    }
    *p = b->ring + b->head;
    return (size_t)VEGA__MIN(n, (uint64_t)(b->ring_cap - b->head));
}

void vega__quic_recvbuf_consume(struct vega__quic_recvbuf *b, size_t n)
{
    if (VEGA_NEVER(n > b->contig - b->read_off))
        n = (size_t)(b->contig - b->read_off);
    if (n == 0)
        return;
    b->read_off += n;
    if (b->read_off == b->contig && b->islands.n == 0) {
        b->head = 0; /* empty: start over at the front so the next data is one piece */
        return;
    }
    b->head += n;
    if (b->head >= b->ring_cap)
        b->head -= b->ring_cap;
}

size_t vega__quic_recvbuf_read(struct vega__quic_recvbuf *b, uint8_t *out, size_t cap, bool *fin)
{
    size_t got = 0;
    while (got < cap) {
        const uint8_t *p;
        size_t n = vega__quic_recvbuf_peek(b, &p);
        if (n == 0)
            break;
        n = VEGA__MIN(n, cap - got);
        memcpy(out + got, p, n);
        vega__quic_recvbuf_consume(b, n);
        got += n;
    }
    if (fin)
        *fin = !b->reset && b->read_off == b->final_size;
    return got;
}

int vega__quic_recvbuf_reset(struct vega__quic_recvbuf *b, uint64_t final_size, uint64_t *wire_err)
{
    if (final_size > VEGA_QUIC_MAX_VARINT)
        return fail(wire_err, VEGA_QUIC_FRAME_ENCODING_ERROR);
    uint64_t code = check_frame(b, final_size, true);
    if (code)
        return fail(wire_err, code);
    b->final_size = final_size;
    b->highest = final_size;
    b->reset = true;
    vega__quic_free(b->mem, b->ring);
    b->ring = NULL;
    b->ring_cap = 0;
    b->head = 0;
    b->contig = b->read_off;
    vega__quic_ranges_fini(&b->islands);
    return 0;
}

bool vega__quic_recvbuf_is_complete(const struct vega__quic_recvbuf *b)
{
    return !b->reset && b->final_size != UINT64_MAX && b->contig == b->final_size;
}

void vega__quic_recvbuf_trim(struct vega__quic_recvbuf *b)
{
    if (b->contig != b->read_off || b->islands.n > 0)
        return;
    vega__quic_free(b->mem, b->ring);
    b->ring = NULL;
    b->ring_cap = 0;
    b->head = 0;
}
