/* SPDX-License-Identifier: MIT */
/* A connection's stream table: open addressing with linear probing and tombstones, keyed by
 * 62-bit stream ids (RFC 9000 §2.1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "qstream.h"
#include "quic_int.h"

#define MAP_MIN_CAP 16

static char tomb_marker;
#define TOMB ((void *)&tomb_marker)

/* Stream ids are 4 * n + type, mostly dense and small: a full 64-bit mix (the splitmix64
 * finalizer) spreads them over every bit before masking. */
static inline size_t hash_id(uint64_t id)
{
    id ^= id >> 30;
    id *= 0xbf58476d1ce4e5b9ull;
    id ^= id >> 27;
    id *= 0x94d049bb133111ebull;
    id ^= id >> 31;
    return (size_t)id;
}

void vega__quic_stream_map_init(struct vega__quic_stream_map *m, const vega_quic_mem *mem)
{
    memset(m, 0, sizeof *m);
    m->mem = mem;
}

void vega__quic_stream_map_fini(struct vega__quic_stream_map *m)
{
    const vega_quic_mem *mem = m->mem;
    vega__quic_free(mem, m->slots);
    memset(m, 0, sizeof *m);
    m->mem = mem;
}

static int rehash(struct vega__quic_stream_map *m, size_t ncap)
{
    struct vega__quic_stream_slot *ns = vega__quic_calloc(m->mem, ncap, sizeof *ns);
    if (!ns)
        return -ENOMEM;
    size_t mask = ncap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        void *s = m->slots[i].s;
        if (!s || s == TOMB)
            continue;
        size_t j = hash_id(m->slots[i].id) & mask;
        while (ns[j].s)
            j = (j + 1) & mask;
        ns[j] = m->slots[i];
    }
    vega__quic_free(m->mem, m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->tombs = 0;
    return 0;
}

/* The smallest table that holds n + 1 streams at most half full. */
static size_t cap_for(size_t n)
{
    size_t c = MAP_MIN_CAP;
    while (c / 2 < n + 1)
        c *= 2;
    return c;
}

int vega__quic_stream_map_put(struct vega__quic_stream_map *m, void *s)
{
    uint64_t id = *(const uint64_t *)s;
    /* Resize here only (never in del), so deleting during a walk never moves a stream. */
    if ((m->n + m->tombs + 1) * 8 > m->cap * 5 ||
        (m->cap > MAP_MIN_CAP && (m->n + 1) * 8 < m->cap)) {
        if (m->n >= SIZE_MAX / 32)
            return -ENOMEM;
        int rc = rehash(m, cap_for(m->n));
        if (rc < 0)
            return rc;
    }
    size_t mask = m->cap - 1;
    size_t i = hash_id(id) & mask, free_slot = SIZE_MAX;
    for (;; i = (i + 1) & mask) {
        void *cur = m->slots[i].s;
        if (!cur)
            break;
        if (cur == TOMB) {
            if (free_slot == SIZE_MAX)
                free_slot = i;
        } else if (m->slots[i].id == id) {
            return -EINVAL;
        }
    }
    if (free_slot == SIZE_MAX)
        free_slot = i;
    else
        m->tombs--;
    m->slots[free_slot].id = id;
    m->slots[free_slot].s = s;
    m->n++;
    return 0;
}

static size_t find_slot(const struct vega__quic_stream_map *m, uint64_t id)
{
    if (m->n == 0)
        return SIZE_MAX;
    size_t mask = m->cap - 1;
    for (size_t i = hash_id(id) & mask;; i = (i + 1) & mask) {
        void *cur = m->slots[i].s;
        if (!cur)
            return SIZE_MAX;
        if (cur != TOMB && m->slots[i].id == id)
            return i;
    }
}

void *vega__quic_stream_map_get(const struct vega__quic_stream_map *m, uint64_t id)
{
    size_t i = find_slot(m, id);
    return i == SIZE_MAX ? NULL : m->slots[i].s;
}

void *vega__quic_stream_map_del(struct vega__quic_stream_map *m, uint64_t id)
{
    size_t i = find_slot(m, id);
    if (i == SIZE_MAX)
        return NULL;
    void *s = m->slots[i].s;
    size_t mask = m->cap - 1;
    if (!m->slots[(i + 1) & mask].s) {
        /* The probe chain ends here: this slot and the tombstones just before it go back to
         * empty (only markers change: no stream moves, so walks stay valid). */
        m->slots[i].s = NULL;
        for (size_t j = (i - 1) & mask; m->slots[j].s == TOMB; j = (j - 1) & mask) {
            m->slots[j].s = NULL;
            m->tombs--;
        }
    } else {
        m->slots[i].s = TOMB;
        m->tombs++;
    }
    m->n--;
    return s;
}

void *vega__quic_stream_map_next(const struct vega__quic_stream_map *m, size_t *pos)
{
    for (size_t i = *pos; i < m->cap; i++) {
        void *s = m->slots[i].s;
        if (s && s != TOMB) {
            *pos = i + 1;
            return s;
        }
    }
    *pos = m->cap;
    return NULL;
}
