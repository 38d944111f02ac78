/* SPDX-License-Identifier: MIT */
/* A counting vega_mem for the attack tests: live bytes and blocks, and the peak of live bytes,
 * thread-safe (a server's workers allocate at once), every block checked on free. Memory is
 * judged by what the library holds through its allocator, never by RSS. */
#ifndef VEGA_TEST_COUNT_MEM_H
#define VEGA_TEST_COUNT_MEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <vega/mem.h>
#include <vega/rt.h>

#include "ep_int.h"
#include "vtest.h"

#define CMEM_QUARANTINE 4096

struct cmem {
    atomic_size_t live;   /* bytes asked for and not freed */
    atomic_size_t blocks; /* blocks not freed */
    atomic_size_t peak;   /* the most live bytes seen (reset with cmem_reset_peak) */
    vega_mem mem;
    /* With quarantine on, a freed block is zeroed and kept: cmem_quarantine_check
     * finds blocks written after their free (a use after free, also without ASan). */
    bool quarantine;
    pthread_mutex_t qlock;
    void **q; /* CMEM_QUARANTINE of them, a ring: the oldest is checked and freed for room */
    size_t qn, qhead, qbad;
};

/* 16 bytes before each block: its size and a mark (keeps malloc's 16-byte alignment). */
struct cmem_hdr {
    size_t n;
    uint64_t mark;
};
#define CMEM_MARK 0xa77ac4ed0b10c5ull

static inline void cmem_grow(struct cmem *m, size_t n)
{
    size_t now = atomic_fetch_add(&m->live, n) + n;
    size_t p = atomic_load(&m->peak);
    while (now > p && !atomic_compare_exchange_weak(&m->peak, &p, now))
        ;
}

static inline void *cmem_malloc(void *ud, size_t n)
{
    struct cmem *m = ud;
    struct cmem_hdr *h = malloc(sizeof *h + n);
    if (!h)
        return NULL;
    h->n = n;
    h->mark = CMEM_MARK;
    atomic_fetch_add(&m->blocks, 1);
    cmem_grow(m, n);
    return h + 1;
}

static inline void *cmem_calloc(void *ud, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = cmem_malloc(ud, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

/* How many bytes of a quarantined block changed since its free. */
static inline size_t cmem_dirty(const struct cmem_hdr *h)
{
    const uint8_t *b = (const uint8_t *)(h + 1);
    size_t bad = 0;
    for (size_t i = 0; i < h->n; i++)
        bad += b[i] != 0;
    return bad;
}

static inline void cmem_free(void *ud, void *p)
{
    struct cmem *m = ud;
    VCHECK(p != NULL); /* the contract: never called with NULL */
    struct cmem_hdr *h = (struct cmem_hdr *)p - 1;
    VCHECK(h->mark == CMEM_MARK); /* a block of this allocator, freed once */
    h->mark = 0;
    atomic_fetch_sub(&m->live, h->n);
    atomic_fetch_sub(&m->blocks, 1);
    if (m->quarantine) {
        memset(p, 0, h->n);
        pthread_mutex_lock(&m->qlock);
        struct cmem_hdr *old = NULL;
        if (m->qn == CMEM_QUARANTINE) {
            old = m->q[m->qhead];
            m->qbad += cmem_dirty(old);
        } else {
            m->qn++;
        }
        m->q[m->qhead] = h;
        m->qhead = (m->qhead + 1) % CMEM_QUARANTINE;
        pthread_mutex_unlock(&m->qlock);
        free(old);
        return;
    }
    free(h);
}

/* Keeps freed blocks from now on (see struct cmem). */
static inline void cmem_quarantine_on(struct cmem *m)
{
    m->q = calloc(CMEM_QUARANTINE, sizeof *m->q);
    VCHECK(m->q != NULL);
    m->quarantine = true;
}

/* Checks and frees the quarantined blocks (and turns quarantine off). Returns the bytes
 * written after their free. */
static inline size_t cmem_quarantine_check(struct cmem *m)
{
    pthread_mutex_lock(&m->qlock);
    size_t bad = m->qbad;
    for (size_t i = 0; i < m->qn; i++) {
        bad += cmem_dirty(m->q[i]);
        free(m->q[i]);
    }
    m->qn = m->qhead = m->qbad = 0;
    m->quarantine = false;
    free(m->q);
    m->q = NULL;
    pthread_mutex_unlock(&m->qlock);
    return bad;
}

static inline void *cmem_realloc(void *ud, void *p, size_t n)
{
    struct cmem *m = ud;
    VCHECK(p != NULL);
    struct cmem_hdr *h = (struct cmem_hdr *)p - 1;
    VCHECK(h->mark == CMEM_MARK);
    size_t old = h->n;
    struct cmem_hdr *g = realloc(h, sizeof *g + n);
    if (!g)
        return NULL;
    g->n = n;
    if (n > old)
        cmem_grow(m, n - old);
    else
        atomic_fetch_sub(&m->live, old - n);
    return g + 1;
}

static inline void cmem_init(struct cmem *m)
{
    atomic_init(&m->live, 0);
    atomic_init(&m->blocks, 0);
    atomic_init(&m->peak, 0);
    m->mem = (vega_mem){cmem_malloc, cmem_calloc, cmem_realloc, cmem_free, m};
    m->quarantine = false;
    pthread_mutex_init(&m->qlock, NULL);
    m->q = NULL;
    m->qn = m->qhead = m->qbad = 0;
}

static inline size_t cmem_live(struct cmem *m)
{
    return atomic_load(&m->live);
}

static inline void cmem_reset_peak(struct cmem *m)
{
    atomic_store(&m->peak, atomic_load(&m->live));
}

/* Waits (polling, up to ms of wall time) until the live bytes are at most cap. Returns them. */
static inline size_t cmem_wait_below(struct cmem *m, size_t cap, uint64_t ms)
{
    vega_deadline dl = vega_deadline_in_ms(ms);
    while (cmem_live(m) > cap && vega_now() < dl)
        vega_sleep_ms(5);
    return cmem_live(m);
}

/* Waits (polling, up to ms of wall time) until the live bytes are back to base. Returns the
 * live bytes at the end: base when they came back. */
static inline size_t cmem_wait_live(struct cmem *m, size_t base, uint64_t ms)
{
    vega_deadline dl = vega_deadline_in_ms(ms);
    while (cmem_live(m) != base && vega_now() < dl)
        vega_sleep_ms(5);
    return cmem_live(m);
}

/* The bytes of an endpoint's sockets' timer heaps (lib/quic_ep/send.c): allocated at a
 * socket's first connection (64 entries), grown by a flood and halved again as it drains
 * (*grown: one is still above 64 entries; docs/h3-attack-findings.md, finding 1). Read once
 * the endpoint is quiet. */
static inline size_t ep_heap_bytes(struct vega_quic_endpoint *ep, bool *grown)
{
    size_t n = 0;
    *grown = false;
    for (size_t i = 0; i < ep->nsocks; i++) {
        n += ep->socks[i]->heap_cap * sizeof(void *);
        *grown |= ep->socks[i]->heap_cap > 64;
    }
    return n;
}

/* Loop counts and sizes are divided by $VEGA_TEST_SCALE (sanitizer runs set it), never
 * below min. */
static inline long test_scaled(long n, long min)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > min ? n / div : min;
}

#endif
