/* SPDX-License-Identifier: MIT */
/* The endpoint's connection table: connection ID -> connection (RFC 9000 §5.2), sharded open
 * addressing under spin locks, hashed with a key of the endpoint's so a client choosing its
 * Destination CIDs cannot aim at one slot. */
#include <string.h>

#include "ep_int.h"

#define SHARD_INIT_CAP 64

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t cid_hash(const struct vega_quic_endpoint *ep, const uint8_t *cid, size_t len)
{
    uint64_t k0, k1;
    memcpy(&k0, ep->token_key + 16, 8);
    memcpy(&k1, ep->token_key + 24, 8);
    uint64_t h = k0 ^ (uint64_t)len;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, cid + i, len - i < 8 ? len - i : 8);
        h = mix(h ^ w ^ k1);
    }
    return mix(h);
}

int vega__ep_table_init(struct vega_quic_endpoint *ep)
{
    for (size_t i = 0; i < EP_TABLE_SHARDS; i++) {
        struct ep_table_shard *s = &ep->table[i];
        vega__spin_init(&s->lock);
        s->slots = vega__mem_calloc(ep->mem, SHARD_INIT_CAP, sizeof *s->slots);
        if (!s->slots) {
            vega__ep_table_fini(ep);
            return -ENOMEM;
        }
        s->cap = SHARD_INIT_CAP;
    }
    return 0;
}

void vega__ep_table_fini(struct vega_quic_endpoint *ep)
{
    for (size_t i = 0; i < EP_TABLE_SHARDS; i++) {
        if (ep->table[i].slots)
            vega__mem_free(ep->mem, ep->table[i].slots);
        ep->table[i].slots = NULL;
    }
}

/* Slot states: len 0 and c NULL = empty; len 0 and c non-NULL = tombstone. */
#define TOMB ((struct vega_quic_ep_conn *)1)

static bool slot_is(const struct ep_table_entry *e, const uint8_t *cid, size_t len)
{
    return e->len == len && e->c != TOMB && memcmp(e->cid, cid, len) == 0;
}

static struct ep_table_entry *find(struct ep_table_shard *s, uint64_t h, const uint8_t *cid,
                                   size_t len)
{
    size_t mask = s->cap - 1;
    for (size_t i = 0, p = (size_t)h & mask; i < s->cap; i++, p = (p + 1) & mask) {
        struct ep_table_entry *e = &s->slots[p];
        if (!e->c)
            return NULL;
        if (slot_is(e, cid, len))
            return e;
    }
    return NULL;
}

struct vega_quic_ep_conn *vega__ep_table_get(struct vega_quic_endpoint *ep, const uint8_t *cid,
                                             size_t len)
{
    if (len == 0 || len > VEGA_QUIC_MAX_CID_LEN)
        return NULL;
    uint64_t h = cid_hash(ep, cid, len);
    struct ep_table_shard *s = &ep->table[h >> 60];
    vega__spin_lock(&s->lock);
    struct ep_table_entry *e = find(s, h >> 4, cid, len);
    struct vega_quic_ep_conn *c = e ? e->c : NULL;
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    vega__spin_unlock(&s->lock);
    return c;
}

/* Rebuilds the shard into new_cap slots (dropping tombstones). */
static int rehash(const struct vega_quic_endpoint *ep, struct ep_table_shard *s, size_t new_cap)
{
    struct ep_table_entry *old = s->slots;
    size_t old_cap = s->cap;
    struct ep_table_entry *slots = vega__mem_calloc(ep->mem, new_cap, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    size_t mask = new_cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        struct ep_table_entry *e = &old[i];
        if (!e->c || e->c == TOMB)
            continue;
        size_t p = (size_t)(cid_hash(ep, e->cid, e->len) >> 4) & mask;
        while (slots[p].c)
            p = (p + 1) & mask;
        slots[p] = *e;
    }
    vega__mem_free(ep->mem, old);
    s->slots = slots;
    s->cap = new_cap;
    s->tombs = 0;
    return 0;
}

int vega__ep_table_add(struct vega_quic_endpoint *ep, const uint8_t *cid, size_t len,
                       struct vega_quic_ep_conn *c)
{
    if (len == 0 || len > VEGA_QUIC_MAX_CID_LEN)
        return -EINVAL;
    uint64_t h = cid_hash(ep, cid, len);
    struct ep_table_shard *s = &ep->table[h >> 60];
    int rc = 0;
    vega__spin_lock(&s->lock);
    struct ep_table_entry *e = find(s, h >> 4, cid, len);
    if (e) {
        rc = e->c == c ? 0 : -EEXIST;
        goto out;
    }
    /* Keep the load (entries and tombstones) under 3/4. */
    if ((s->used + s->tombs + 1) * 4 > s->cap * 3) {
        size_t cap = (s->used + 1) * 4 > s->cap * 2 ? s->cap * 2 : s->cap;
        rc = rehash(ep, s, cap);
        if (rc < 0)
            goto out;
    }
    size_t mask = s->cap - 1;
    size_t p = (size_t)(h >> 4) & mask;
    while (s->slots[p].c && s->slots[p].c != TOMB)
        p = (p + 1) & mask;
    if (s->slots[p].c == TOMB)
        s->tombs--;
    s->slots[p].len = (uint8_t)len;
    memcpy(s->slots[p].cid, cid, len);
    s->slots[p].c = c;
    s->used++;
out:
    vega__spin_unlock(&s->lock);
    return rc;
}

void vega__ep_table_del(struct vega_quic_endpoint *ep, const uint8_t *cid, size_t len,
                        const struct vega_quic_ep_conn *c)
{
    if (len == 0 || len > VEGA_QUIC_MAX_CID_LEN)
        return;
    uint64_t h = cid_hash(ep, cid, len);
    struct ep_table_shard *s = &ep->table[h >> 60];
    vega__spin_lock(&s->lock);
    struct ep_table_entry *e = find(s, h >> 4, cid, len);
    if (e && e->c == c) {
        e->len = 0;
        e->c = TOMB;
        s->used--;
        s->tombs++;
        /* A shard that emptied out goes back to a small array (bounded memory after a flood). */
        if (s->used * 8 < s->cap && s->cap > SHARD_INIT_CAP)
            (void)rehash(ep, s, s->cap / 2);
    }
    vega__spin_unlock(&s->lock);
}
