/* SPDX-License-Identifier: MIT */
/* The QPACK dynamic table both sides keep (RFC 9204 §3.2): entries in insertion order, absolute
 * indexing (§3.2.4), size with 32 bytes of overhead per entry (§3.2.1), capacity and eviction
 * from the oldest (§3.2.2). */
#include <string.h>

#include "qpack_int.h"

void vega__qp_table_init(struct vega__qp_table *t, const vega_mem *mem, uint64_t max_capacity)
{
    memset(t, 0, sizeof *t);
    t->mem = mem;
    t->max_capacity = max_capacity;
    uint64_t slots = max_capacity / VEGA__QP_ENTRY_OVERHEAD;
    t->ring_cap = slots ? (size_t)slots : 1;
}

void vega__qp_table_fini(struct vega__qp_table *t)
{
    if (t->ring)
        for (uint64_t a = t->dropped; a < t->inserted; a++)
            vega__mem_free(t->mem, t->ring[a % t->ring_cap]);
    vega__mem_free(t->mem, t->ring);
    t->ring = NULL;
    t->dropped = t->inserted;
    t->size = 0;
}

struct vega__qp_entry *vega__qp_entry_new(const vega_mem *mem, const uint8_t *name, size_t name_len,
                                          const uint8_t *value, size_t value_len)
{
    /* Callers bounded both lengths by the table capacity (at most 1 MiB). */
    struct vega__qp_entry *e = vega__mem_malloc(mem, sizeof *e + name_len + value_len);
    if (!e)
        return NULL;
    e->name_len = name_len;
    e->value_len = value_len;
    e->refs = 0;
    if (name_len)
        memcpy(e->data, name, name_len);
    if (value_len)
        memcpy(e->data + name_len, value, value_len);
    return e;
}

static void evict_oldest(struct vega__qp_table *t)
{
    struct vega__qp_entry **slot = &t->ring[t->dropped % t->ring_cap];
    t->size -= vega__qp_entry_size(*slot);
    vega__mem_free(t->mem, *slot);
    *slot = NULL;
    t->dropped++;
}

bool vega__qp_table_has_room(const struct vega__qp_table *t, uint64_t size,
                             vega__qp_evictable_fn evictable, void *arg)
{
    if (size > t->capacity)
        return false;
    /* Free space grows as the oldest entries go, one by one, while each may go. */
    uint64_t used = t->size;
    for (uint64_t a = t->dropped; used + size > t->capacity; a++) {
        if (a >= t->inserted || (evictable && !evictable(t, a, arg)))
            return false;
        used -= vega__qp_entry_size(t->ring[a % t->ring_cap]);
    }
    return true;
}

int vega__qp_table_insert(struct vega__qp_table *t, struct vega__qp_entry *e)
{
    if (!t->ring) {
        t->ring = vega__mem_calloc(t->mem, t->ring_cap, sizeof *t->ring);
        if (!t->ring)
            return -ENOMEM;
    }
    uint64_t size = vega__qp_entry_size(e);
    VEGA_ASSERT(size <= t->capacity);
    /* RFC 9204 §3.2.2: "entries are evicted from the end of the dynamic table until the size of
     * the dynamic table is less than or equal to (table capacity - size of new entry)". */
    while (t->size + size > t->capacity)
        evict_oldest(t);
    VEGA_ASSERT(t->inserted - t->dropped < t->ring_cap);
    t->ring[t->inserted % t->ring_cap] = e;
    t->inserted++;
    t->size += size;
    return 0;
}

void vega__qp_table_set_capacity(struct vega__qp_table *t, uint64_t capacity)
{
    t->capacity = capacity;
    while (t->size > capacity)
        evict_oldest(t);
}

bool vega__qp_table_find(const struct vega__qp_table *t, const uint8_t *name, size_t name_len,
                         const uint8_t *value, size_t value_len, uint64_t *abs, uint64_t *name_abs)
{
    *abs = *name_abs = UINT64_MAX;
    for (uint64_t a = t->inserted; a > t->dropped; a--) {
        const struct vega__qp_entry *e = t->ring[(a - 1) % t->ring_cap];
        if (e->name_len != name_len || memcmp(e->data, name, name_len) != 0)
            continue;
        if (*name_abs == UINT64_MAX)
            *name_abs = a - 1;
        if (e->value_len == value_len && memcmp(e->data + name_len, value, value_len) == 0) {
            *abs = a - 1;
            return true;
        }
    }
    return false;
}
