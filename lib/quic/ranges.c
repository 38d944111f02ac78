/* SPDX-License-Identifier: MIT */
/* Sorted sets of disjoint [start, end) ranges: received packet numbers for ACK frames (RFC 9000
 * §13.2), acknowledged and lost stream bytes, received islands of a receive buffer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

#define RANGES_MIN_CAP 8

void vega__quic_ranges_init(struct vega__quic_ranges *s, size_t max, const vega_quic_mem *mem)
{
    memset(s, 0, sizeof *s);
    s->max = max;
    s->mem = mem;
}

void vega__quic_ranges_fini(struct vega__quic_ranges *s)
{
    const vega_quic_mem *mem = s->mem;
    if (s->r)
        vega__quic_free(mem, s->r - s->front);
    memset(s, 0, sizeof *s);
    s->mem = mem; /* a set emptied by fini may grow again with the same allocator */
}

void vega__quic_ranges_clear(struct vega__quic_ranges *s)
{
    if (s->r) {
        s->r -= s->front;
        s->front = 0;
    }
    s->n = 0;
}

size_t vega__quic_ranges_find(const struct vega__quic_ranges *s, uint64_t v)
{
    size_t lo = 0, hi = s->n;
    if (hi == 0 || s->r[hi - 1].end < v)
        return hi;
    while (lo < hi) { /* the first i with r[i].end >= v */
        size_t mid = lo + (hi - lo) / 2;
        if (s->r[mid].end < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first index whose end is > v (n when none). */
static size_t find_above(const struct vega__quic_ranges *s, uint64_t v)
{
    return v == UINT64_MAX ? s->n : vega__quic_ranges_find(s, v + 1);
}

/* Makes room for one more range after r[n - 1]: slides the ranges back to the start of the
 * allocation when a quarter of it lies unused in front (what dropping the lowest leaves), else
 * doubles the allocation. Amortized O(1) per range added. */
static int room_at_end(struct vega__quic_ranges *s)
{
    if (s->front + s->n < s->cap)
        return 0;
    struct vega__quic_range *base = s->r ? s->r - s->front : NULL;
    if (s->front > 0 && s->front >= s->cap / 4) {
        memmove(base, s->r, s->n * sizeof *s->r);
        s->r = base;
        s->front = 0;
        return 0;
    }
    size_t ncap = s->cap ? s->cap * 2 : RANGES_MIN_CAP;
    if (ncap > SIZE_MAX / sizeof *s->r)
        return -ENOMEM;
    struct vega__quic_range *nb = vega__quic_realloc(s->mem, base, ncap * sizeof *nb);
    if (!nb)
        return -ENOMEM;
    s->r = nb + s->front;
    s->cap = ncap;
    return 0;
}

static void drop_lowest(struct vega__quic_ranges *s, size_t k)
{
    s->r += k;
    s->front += k;
    s->n -= k;
}

static void enforce_max(struct vega__quic_ranges *s)
{
    if (s->max && s->n > s->max)
        drop_lowest(s, s->n - s->max);
}

/* Opens a hole at index i, moving whichever side is shorter (the front side only when there is
 * a free slot in front). */
static int insert_at(struct vega__quic_ranges *s, size_t i, uint64_t start, uint64_t end)
{
    if (s->front > 0 && i < s->n / 2) {
        s->r--;
        s->front--;
        memmove(s->r, s->r + 1, i * sizeof *s->r);
    } else {
        int rc = room_at_end(s);
        if (rc < 0)
            return rc;
        memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof *s->r);
    }
    s->r[i].start = start;
    s->r[i].end = end;
    s->n++;
    enforce_max(s);
    return 0;
}

/* Removes r[i .. i + k), moving whichever side is shorter. */
static void erase(struct vega__quic_ranges *s, size_t i, size_t k)
{
    if (k == 0)
        return;
    size_t after = s->n - i - k;
    if (i < after) {
        memmove(s->r + k, s->r, i * sizeof *s->r);
        s->r += k;
        s->front += k;
    } else {
        memmove(s->r + i, s->r + i + k, after * sizeof *s->r);
    }
    s->n -= k;
}

int vega__quic_ranges_add(struct vega__quic_ranges *s, uint64_t start, uint64_t end)
{
    if (start >= end)
        return 0;
    size_t n = s->n;
    /* The common case: the next packet number, or in-order data, at or after the last range. */
    if (n == 0 || start >= s->r[n - 1].start) {
        if (n > 0 && start <= s->r[n - 1].end) {
            if (end > s->r[n - 1].end)
                s->r[n - 1].end = end;
            return 0;
        }
        int rc = room_at_end(s);
        if (rc < 0)
            return rc;
        s->r[n].start = start;
        s->r[n].end = end;
        s->n++;
        enforce_max(s);
        return 0;
    }
    size_t i = vega__quic_ranges_find(s, start); /* < n: the last range ends above start */
    if (s->r[i].start > end)
        return insert_at(s, i, start, end);
    /* [start, end) touches r[i] and maybe more: j is the last range starting at or below end. */
    size_t j = find_above(s, end);
    if (j == n || s->r[j].start > end)
        j--;
    if (start < s->r[i].start)
        s->r[i].start = start;
    s->r[i].end = VEGA__MAX(end, s->r[j].end);
    erase(s, i + 1, j - i);
    return 0;
}

int vega__quic_ranges_remove(struct vega__quic_ranges *s, uint64_t start, uint64_t end)
{
    if (start >= end || s->n == 0)
        return 0;
    size_t i = find_above(s, start);
    if (i == s->n || s->r[i].start >= end)
        return 0;
    if (s->r[i].start < start && s->r[i].end > end) { /* a hole in the middle of one range */
        uint64_t tail = s->r[i].end;
        s->r[i].end = start;
        int rc = insert_at(s, i + 1, end, tail);
        if (rc < 0)
            s->r[i].end = tail;
        return rc;
    }
    if (s->r[i].start < start) { /* keep the head of r[i] */
        s->r[i].end = start;
        i++;
    }
    size_t j = find_above(s, end); /* ranges [i, j) lie inside [start, end) */
    if (j < s->n && s->r[j].start < end)
        s->r[j].start = end;
    erase(s, i, j - i);
    return 0;
}

bool vega__quic_ranges_contains(const struct vega__quic_ranges *s, uint64_t v)
{
    size_t i = find_above(s, v);
    return i < s->n && s->r[i].start <= v;
}

uint64_t vega__quic_ranges_covered_to(const struct vega__quic_ranges *s, uint64_t from)
{
    size_t i = find_above(s, from);
    return i < s->n && s->r[i].start <= from ? s->r[i].end : from;
}
