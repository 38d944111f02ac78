/* SPDX-License-Identifier: MIT */
/* The HPACK dynamic table (RFC 7541 §2.3.2, §4): entry sizes, eviction, the maximum size and its
 * changes, insertion of entries whose name may be evicted by the insertion itself (§4.4). */
#include <string.h>

#include "hpack_int.h"

uint32_t vega__hpack_hash(const uint8_t *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

void vega__hpack_table_init(struct vega__hpack_table *t, const vega_mem *mem, size_t max_size)
{
    memset(t, 0, sizeof *t);
    t->mem = mem;
    t->max_size = max_size;
}

void vega__hpack_table_fini(struct vega__hpack_table *t)
{
    vega__mem_free(t->mem, t->buf);
    vega__mem_free(t->mem, t->ents);
    t->buf = NULL;
    t->ents = NULL;
    t->buf_cap = t->ents_cap = t->len = t->size = 0;
}

static size_t entry_size(const struct vega__hpack_entry *e)
{
    /* §4.1: "The size of an entry is the sum of its name's length in octets (as defined in
     * Section 5.2), its value's length in octets, and 32." */
    return (size_t)e->name_len + e->value_len + VEGA_HPACK_ENTRY_OVERHEAD;
}

static void evict_oldest(struct vega__hpack_table *t)
{
    VEGA_ASSERT(t->len > 0);
    t->size -= entry_size(&t->ents[t->first]);
    t->first = (t->first + 1) & (t->ents_cap - 1);
    if (--t->len == 0)
        t->base = t->end; /* empty: the next entry starts at buf[0] */
}

void vega__hpack_table_set_max(struct vega__hpack_table *t, size_t max)
{
    /* §4.3: "Whenever the maximum size for the dynamic table is reduced, entries are evicted
     * from the end of the dynamic table until the size of the dynamic table is less than or
     * equal to the maximum size." */
    while (t->size > max)
        evict_oldest(t);
    t->max_size = max;
}

static int grow_ents(struct vega__hpack_table *t, size_t want)
{
    if (t->ents_cap >= want)
        return 0;
    size_t cap = t->ents_cap ? t->ents_cap : 8;
    while (cap < want)
        cap *= 2;
    struct vega__hpack_entry *n = vega__mem_malloc(t->mem, cap * sizeof *n);
    if (!n)
        return -ENOMEM;
    for (size_t i = 0; i < t->len; i++)
        n[i] = t->ents[(t->first + i) & (t->ents_cap - 1)];
    vega__mem_free(t->mem, t->ents);
    t->ents = n;
    t->ents_cap = cap;
    t->first = 0;
    return 0;
}

/* Room for need more bytes behind t->end: compact the live bytes to the front first, grow
 * when they still do not fit. */
static int room_for(struct vega__hpack_table *t, size_t need, size_t grow_to)
{
    size_t at = (size_t)(t->end - t->base);
    if (t->buf && vega__fits(at, need, t->buf_cap))
        return 0;
    uint64_t live_start = t->len ? t->ents[t->first].off : t->end;
    size_t live = (size_t)(t->end - live_start);
    if (live && live_start != t->base)
        memmove(t->buf, t->buf + (size_t)(live_start - t->base), live);
    t->base = live_start;
    if (t->buf && vega__fits(live, need, t->buf_cap))
        return 0;
    /* Doubling, but never past twice the maximum unless this entry needs it. */
    size_t cap =
        VEGA__MAX(live + need, VEGA__MIN(VEGA__MAX(t->buf_cap * 2, grow_to), 2 * t->max_size));
    uint8_t *n = vega__mem_realloc(t->mem, t->buf, cap);
    if (!n)
        return -ENOMEM;
    t->buf = n;
    t->buf_cap = cap;
    return 0;
}

int vega__hpack_table_reserve(struct vega__hpack_table *t, size_t bytes, size_t entries)
{
    if (t->max_size == 0 || entries == 0)
        return 0;
    /* The table never holds more than max_size / 32 entries. */
    size_t want = VEGA__MIN(t->len + entries, t->max_size / VEGA_HPACK_ENTRY_OVERHEAD + 1);
    int rc = grow_ents(t, want);
    if (rc < 0)
        return rc;
    /* An add moves the live bytes to the front when the tail has no room, so the buffer needs
     * what lives now plus what comes (evictions only shrink the first), never more than twice
     * the maximum. */
    size_t live = (size_t)(t->end - (t->len ? t->ents[t->first].off : t->end));
    size_t need = VEGA__MIN(vega__sat_add(live, bytes), 2 * t->max_size);
    if (t->buf && t->buf_cap >= need)
        return 0;
    uint8_t *n = vega__mem_realloc(t->mem, t->buf, VEGA__MAX(need, (size_t)64));
    if (!n)
        return -ENOMEM;
    t->buf = n;
    t->buf_cap = VEGA__MAX(need, (size_t)64);
    return 0;
}

int vega__hpack_table_add(struct vega__hpack_table *t, const uint8_t *name, size_t name_len,
                          const uint8_t *value, size_t value_len)
{
    VEGA_ASSERT(name_len <= VEGA__HPACK_MAX_SIZE && value_len <= VEGA__HPACK_MAX_SIZE);
    size_t esize = name_len + value_len + VEGA_HPACK_ENTRY_OVERHEAD;
    if (esize > t->max_size) {
        /* §4.4: "an attempt to add an entry larger than the maximum size causes the table to
         * be emptied of all existing entries and results in an empty table." */
        while (t->len)
            evict_oldest(t);
        return 0;
    }
    /* §4.4: "Before a new entry is added to the dynamic table, entries are evicted from the
     * end of the dynamic table until the size of the dynamic table is less than or equal to
     * (maximum size - new entry size) or until the table is empty." */
    while (t->size + esize > t->max_size)
        evict_oldest(t);
    int rc = grow_ents(t, t->len + 1);
    if (rc == 0)
        rc = room_for(t, name_len + value_len, 64);
    if (rc < 0)
        return rc;
    uint8_t *p = t->buf + (size_t)(t->end - t->base);
    if (name_len)
        memcpy(p, name, name_len);
    if (value_len)
        memcpy(p + name_len, value, value_len);
    struct vega__hpack_entry *e = &t->ents[(t->first + t->len) & (t->ents_cap - 1)];
    e->off = t->end;
    e->name_len = (uint32_t)name_len;
    e->value_len = (uint32_t)value_len;
    e->name_hash = vega__hpack_hash(name, name_len);
    e->value_hash = vega__hpack_hash(value, value_len);
    t->end += name_len + value_len;
    t->size += esize;
    t->len++;
    return 0;
}

const struct vega__hpack_entry *vega__hpack_table_at(const struct vega__hpack_table *t, size_t i)
{
    VEGA_ASSERT(i < t->len);
    return &t->ents[(t->first + t->len - 1 - i) & (t->ents_cap - 1)];
}

int vega__hpack_table_get(const struct vega__hpack_table *t, size_t i, vega_hpack_field *f)
{
    if (i >= t->len)
        return -ENOENT;
    const struct vega__hpack_entry *e = vega__hpack_table_at(t, i);
    f->name.ptr = (const char *)vega__hpack_entry_name(t, e);
    f->name.len = e->name_len;
    f->value.ptr = (const char *)vega__hpack_entry_value(t, e);
    f->value.len = e->value_len;
    f->index = VEGA_HPACK_INDEX_YES;
    return 0;
}
