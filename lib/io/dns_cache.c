/* SPDX-License-Identifier: MIT */
/* The resolver's TTL cache: a bounded hash table of (name, type) answers with LRU eviction,
 * positive and negative (RFC 2308 §5) entries, behind a spin lock. */
#include <string.h>

#include "dns_int.h"

struct vega__dns_centry {
    struct vega__dns_centry *hnext; /* hash chain */
    struct vega__dns_centry *lru_prev, *lru_next;
    uint64_t hash;
    vega_tstamp expires;
    uint16_t qtype;
    struct vega__dns_cached ans;
    char name[VEGA__DNS_TEXT_MAX + 1];
};

/* FNV-1a over the type and the name, from a per-cache seed. */
static uint64_t key_hash(uint64_t seed, const char *name, uint16_t qtype)
{
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    h = (h ^ (qtype & 0xFF)) * 0x100000001b3ull;
    h = (h ^ (qtype >> 8)) * 0x100000001b3ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

int vega__dns_cache_init(struct vega__dns_cache *c, size_t cap, uint64_t seed)
{
    memset(c, 0, sizeof(*c));
    vega__spin_init(&c->lock);
    size_t nb = 16;
    while (nb < cap && nb < ((size_t)1 << 24))
        nb <<= 1;
    c->buckets = calloc(nb, sizeof(*c->buckets));
    if (!c->buckets)
        return -ENOMEM;
    c->nbuckets = nb;
    c->cap = cap ? cap : 1;
    c->seed = seed;
    return 0;
}

static struct vega__dns_centry **bucket(struct vega__dns_cache *c, uint64_t h)
{
    return &c->buckets[h & (c->nbuckets - 1)];
}

static void lru_unlink(struct vega__dns_cache *c, struct vega__dns_centry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(struct vega__dns_cache *c, struct vega__dns_centry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

/* Unlinks e from its chain and the LRU list (lock held); the caller frees it. */
static void remove_entry(struct vega__dns_cache *c, struct vega__dns_centry *e)
{
    for (struct vega__dns_centry **pp = bucket(c, e->hash); *pp; pp = &(*pp)->hnext) {
        if (*pp == e) {
            *pp = e->hnext;
            break;
        }
    }
    lru_unlink(c, e);
    c->n--;
}

static struct vega__dns_centry *find(struct vega__dns_cache *c, uint64_t h, const char *name,
                                     uint16_t qtype)
{
    for (struct vega__dns_centry *e = *bucket(c, h); e; e = e->hnext)
        if (e->hash == h && e->qtype == qtype && strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

bool vega__dns_cache_get(struct vega__dns_cache *c, const char *name, uint16_t qtype,
                         vega_tstamp now, struct vega__dns_cached *out)
{
    uint64_t h = key_hash(c->seed, name, qtype);
    struct vega__dns_centry *dead = NULL;
    bool hit = false;
    vega__spin_lock(&c->lock);
    struct vega__dns_centry *e = find(c, h, name, qtype);
    if (e && now >= e->expires) {
        remove_entry(c, e);
        dead = e;
    } else if (e) {
        lru_unlink(c, e);
        lru_push_front(c, e);
        out->rcode = e->ans.rcode;
        out->naddr = e->ans.naddr;
        memcpy(out->addr, e->ans.addr, e->ans.naddr * sizeof(out->addr[0]));
        hit = true;
    }
    vega__spin_unlock(&c->lock);
    free(dead);
    return hit;
}

int vega__dns_cache_put(struct vega__dns_cache *c, const char *name, uint16_t qtype,
                        const struct vega__dns_cached *ans, uint32_t ttl_s, vega_tstamp now)
{
    if (ttl_s == 0 || strlen(name) > VEGA__DNS_TEXT_MAX)
        return 0;
    /* Allocate (and free) outside the lock. */
    struct vega__dns_centry *e = malloc(sizeof(*e));
    if (!e)
        return -ENOMEM;
    memset(e, 0, offsetof(struct vega__dns_centry, ans));
    e->hash = key_hash(c->seed, name, qtype);
    e->expires = vega__sat_add(now, (uint64_t)ttl_s * VEGA_NS_PER_S);
    e->qtype = qtype;
    e->ans.rcode = ans->rcode;
    e->ans.naddr = ans->naddr > VEGA__DNS_MAX_ADDRS ? VEGA__DNS_MAX_ADDRS : ans->naddr;
    memcpy(e->ans.addr, ans->addr, e->ans.naddr * sizeof(e->ans.addr[0]));
    strcpy(e->name, name);

    struct vega__dns_centry *old, *evicted = NULL;
    vega__spin_lock(&c->lock);
    old = find(c, e->hash, name, qtype);
    if (old)
        remove_entry(c, old);
    else if (c->n >= c->cap && c->lru_tail) {
        evicted = c->lru_tail;
        remove_entry(c, evicted);
    }
    struct vega__dns_centry **b = bucket(c, e->hash);
    e->hnext = *b;
    *b = e;
    lru_push_front(c, e);
    c->n++;
    vega__spin_unlock(&c->lock);
    free(old);
    free(evicted);
    return 0;
}

/* Detaches every entry (lock held) and returns them as a list through lru_next. */
static struct vega__dns_centry *detach_all(struct vega__dns_cache *c)
{
    struct vega__dns_centry *all = c->lru_head;
    memset(c->buckets, 0, c->nbuckets * sizeof(*c->buckets));
    c->lru_head = c->lru_tail = NULL;
    c->n = 0;
    return all;
}

void vega__dns_cache_clear(struct vega__dns_cache *c)
{
    vega__spin_lock(&c->lock);
    struct vega__dns_centry *e = detach_all(c);
    vega__spin_unlock(&c->lock);
    while (e) {
        struct vega__dns_centry *next = e->lru_next;
        free(e);
        e = next;
    }
}

size_t vega__dns_cache_size(struct vega__dns_cache *c)
{
    vega__spin_lock(&c->lock);
    size_t n = c->n;
    vega__spin_unlock(&c->lock);
    return n;
}

void vega__dns_cache_fini(struct vega__dns_cache *c)
{
    if (!c->buckets)
        return;
    vega__dns_cache_clear(c);
    free(c->buckets);
    c->buckets = NULL;
}
