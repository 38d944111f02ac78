/* SPDX-License-Identifier: MIT */
/* Task stacks: carved from large MAP_NORESERVE regions, pooled per worker, committed on touch,
 * with a guard page (MADV_GUARD_INSTALL where the kernel has it, mprotect on request) or, where
 * neither is there, an overflow canary checked at every switch-out. A stack with a guard has no
 * canary: the canary's write would commit the stack's lowest page, a second page for every live
 * task, and the guard already stops an overflow at that page. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sched_int.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

#define STACKS_PER_REGION 16u
#define CANARY            0x5ca1ab1ef00dfaceull

/*
 * Where a free stack is:
 * - in its worker's cache (VEGA__STACK_CACHE, pages kept: the next spawn reuses them warm);
 * - on the shared warm list (VEGA__STACK_WARM, pages kept): what one worker's full cache gives
 *   back while another worker's is empty (work stealing makes stacks end on another worker
 *   than the one that took them), so that hand-over costs no page fault;
 * - on the shared cold list: its pages given back with MADV_DONTNEED but the descriptor's
 *   (the top page), canary included (written again when it is taken);
 * - gone: once every stack of a region is cold and the cold list holds more than
 *   VEGA__STACK_COLD_KEEP, the region is unmapped, so a burst of tasks does not keep even one
 *   page per stack or its mapping for ever.
 * Each list has its bound, so what is held is bounded by the peak of live stacks, and beyond
 * the caches and the warm list every stack costs at most its top page.
 */
struct vega__region {
    struct vega__region *next, *prev;
    void *base;
    size_t len;
    unsigned ncold; /* its stacks on the cold list */
};

static inline size_t slot_size(const struct vega_rt *rt)
{
    return rt->stack_size + rt->page;
}

static struct vega__stack *slot_stack(const struct vega_rt *rt, struct vega__region *r, unsigned i)
{
    char *guard = (char *)r->base + i * slot_size(rt);
    return (struct vega__stack *)(guard + slot_size(rt) - sizeof(struct vega__stack));
}

int vega__stack_pool_init(struct vega_rt *rt)
{
    rt->page = (size_t)sysconf(_SC_PAGESIZE);
    size_t sz = rt->opts.stack_size ? rt->opts.stack_size : VEGA__DEFAULT_STACK;
#if defined(VEGA_ASAN) || defined(VEGA_TSAN)
    sz *= 4; /* sanitizers grow frames a lot */
#endif
    sz = (sz + rt->page - 1) & ~(rt->page - 1);
    if (sz < 4 * rt->page)
        sz = 4 * rt->page;
    rt->stack_size = sz;
    rt->stack_warm = rt->stack_cold = NULL;
    rt->stack_nwarm = rt->stack_ncold = rt->stack_nregions = 0;
    rt->regions = NULL;
    pthread_mutex_init(&rt->stack_mu, NULL);

    /* Probe MADV_GUARD_INSTALL once on a scratch mapping. */
    void *p = mmap(NULL, 2 * rt->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    rt->guard_madvise = madvise(p, rt->page, MADV_GUARD_INSTALL) == 0;
    munmap(p, 2 * rt->page);
    return 0;
}

void vega__stack_pool_fini(struct vega_rt *rt)
{
    struct vega__region *r = rt->regions;
    while (r) {
        struct vega__region *next = r->next;
        munmap(r->base, r->len);
        free(r);
        r = next;
    }
    rt->regions = NULL;
    rt->stack_warm = rt->stack_cold = NULL;
    rt->stack_nwarm = rt->stack_ncold = rt->stack_nregions = 0;
    pthread_mutex_destroy(&rt->stack_mu);
}

/* ---- the shared lists (stack_mu held) ------------------------------------------------------- */

static void cold_push(struct vega_rt *rt, struct vega__stack *s)
{
    s->cold = true;
    s->prev = NULL;
    s->next = rt->stack_cold;
    if (rt->stack_cold)
        rt->stack_cold->prev = s;
    rt->stack_cold = s;
    rt->stack_ncold++;
    s->region->ncold++;
}

static void cold_unlink(struct vega_rt *rt, struct vega__stack *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        rt->stack_cold = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->cold = false;
    rt->stack_ncold--;
    s->region->ncold--;
}

static void region_unmap(struct vega_rt *rt, struct vega__region *r)
{
    for (unsigned i = 0; i < STACKS_PER_REGION; i++)
        cold_unlink(rt, slot_stack(rt, r, i));
    if (r->prev)
        r->prev->next = r->next;
    else
        rt->regions = r->next;
    if (r->next)
        r->next->prev = r->prev;
    rt->stack_nregions--;
    munmap(r->base, r->len);
    free(r);
}

/* Maps a region of STACKS_PER_REGION stacks onto the warm list. */
static bool grow(struct vega_rt *rt)
{
    /* Each slot: [guard page][usable stack .... descriptor]. */
    size_t slot = slot_size(rt);
    size_t len = slot * STACKS_PER_REGION;
    struct vega__region *r = malloc(sizeof *r);
    if (!r)
        return false;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) {
        free(r);
        return false;
    }
#ifdef MADV_NOHUGEPAGE
    madvise(base, len, MADV_NOHUGEPAGE); /* a THP-backed stack would cost 2 MiB */
#endif
    r->base = base;
    r->len = len;
    r->ncold = 0;
    r->prev = NULL;
    r->next = rt->regions;
    if (rt->regions)
        rt->regions->prev = r;
    rt->regions = r;
    rt->stack_nregions++;

    for (unsigned i = 0; i < STACKS_PER_REGION; i++) {
        char *guard = base + i * slot;
        bool guarded = false;
        if (rt->guard_madvise)
            guarded = madvise(guard, rt->page, MADV_GUARD_INSTALL) == 0;
        else if (rt->opts.stack_guard) /* splits the VMA: see ARCHITECTURE.md */
            guarded = mprotect(guard, rt->page, PROT_NONE) == 0;
        struct vega__stack *s = slot_stack(rt, r, i);
        s->base = guard + rt->page;
        /* Usable bytes end below the descriptor; vary the start by up to 7 cache lines so that
         * the stacks do not all alias in the same L1 sets. */
        s->size = ((size_t)((char *)s - (char *)s->base) - 64 * (i % 8)) & ~(size_t)15;
        s->region = r;
        s->cold = false;
        s->canary = !guarded;
        if (s->canary)
            *(volatile uint64_t *)s->base = CANARY;
        s->next = rt->stack_warm;
        rt->stack_warm = s;
        rt->stack_nwarm++;
    }
    return true;
}

/* One stack off the shared lists, warm first, or NULL. */
static struct vega__stack *shared_take(struct vega_rt *rt)
{
    struct vega__stack *s = rt->stack_warm;
    if (s) {
        rt->stack_warm = s->next;
        rt->stack_nwarm--;
        return s;
    }
    s = rt->stack_cold;
    if (s) {
        cold_unlink(rt, s);
        if (s->canary)
            *(volatile uint64_t *)s->base = CANARY; /* its page was given back */
    }
    return s;
}

/* ---- per worker ----------------------------------------------------------------------------- */

static unsigned cache_len(struct vega__worker *w)
{
    return atomic_load_explicit(&w->stack_cache_len, memory_order_relaxed);
}

static void set_cache_len(struct vega__worker *w, unsigned n)
{
    atomic_store_explicit(&w->stack_cache_len, n, memory_order_relaxed); /* metrics read it */
}

struct vega__stack *vega__stack_get(struct vega__worker *w)
{
    struct vega__stack *s = w->stack_cache;
    if (vega__likely(s)) {
        w->stack_cache = s->next;
        set_cache_len(w, cache_len(w) - 1);
        return s;
    }
    struct vega_rt *rt = w->rt;
    pthread_mutex_lock(&rt->stack_mu);
    if (!rt->stack_warm && !rt->stack_cold && !grow(rt)) {
        pthread_mutex_unlock(&rt->stack_mu);
        return NULL;
    }
    s = shared_take(rt);
    /* Take up to a quarter of a cache's worth more of the warm ones (cold ones are taken one
     * at a time: each costs faults when used). */
    unsigned n = 0;
    while (rt->stack_warm && n < VEGA__STACK_CACHE / 4) {
        struct vega__stack *x = rt->stack_warm;
        rt->stack_warm = x->next;
        rt->stack_nwarm--;
        x->next = w->stack_cache;
        w->stack_cache = x;
        n++;
    }
    pthread_mutex_unlock(&rt->stack_mu);
    set_cache_len(w, n);
    return s;
}

/* Gives a stack's pages back but for the top one, which holds the descriptor. */
static void drop_pages(struct vega_rt *rt, struct vega__stack *s)
{
    size_t drop = (size_t)((char *)s - (char *)s->base) & ~(rt->page - 1);
    if (drop)
        madvise(s->base, drop, MADV_DONTNEED);
}

/*
 * A free stack keeps at most its top VEGA__STACK_KEEP bytes committed. A task that went deeper
 * (a TLS handshake, a deep parser) leaves pages that no later shallow task would use: kept,
 * they would make the pool's memory creep up to (stacks pooled) x (stack size) as, one by one,
 * pooled stacks meet a deep task. Telling is cheap: the page just below the kept top reads as
 * zeros until a task writes there (an untouched page maps the shared zero page, which is not
 * resident memory) and reads as zeros again once given back, so a few word reads say whether
 * the task that just ended went that deep; only then is there a madvise. A deep frame that
 * writes none of the probed words is missed, which only means its pages stay until the next
 * check sees them. Under ASan the probe would read poisoned stack memory: no trimming there.
 */
static void trim_deep(struct vega_rt *rt, struct vega__stack *s)
{
#if defined(VEGA_ASAN)
    (void)rt;
    (void)s;
#else
    uintptr_t top = (uintptr_t)s->base + s->size;
    if (s->size < VEGA__STACK_KEEP + 3 * rt->page)
        return;
    uintptr_t keep = (top - VEGA__STACK_KEEP) & ~(uintptr_t)(rt->page - 1);
    const volatile uint64_t *probe = (const volatile uint64_t *)(keep - rt->page);
    uint64_t any = 0;
    for (size_t i = 0; i < rt->page / sizeof *probe; i += 32) /* every 256 bytes */
        any |= probe[i];
    if (!any)
        return;
    /* The canary's page (the lowest), if any, stays; everything above it to the kept top goes. */
    char *from = (char *)s->base + (s->canary ? rt->page : 0);
    if ((uintptr_t)from < keep)
        madvise(from, keep - (uintptr_t)from, MADV_DONTNEED);
#endif
}

void vega__stack_put(struct vega__worker *w, struct vega__stack *s)
{
    trim_deep(w->rt, s);
    unsigned n = cache_len(w);
    s->next = w->stack_cache;
    w->stack_cache = s;
    if (vega__likely(n < VEGA__STACK_CACHE)) {
        set_cache_len(w, n + 1);
        return;
    }
    /* Full: keep the newest half, hand the rest to the shared lists in one go. */
    struct vega__stack *last = s;
    for (unsigned i = 1; i < VEGA__STACK_CACHE / 2; i++)
        last = last->next;
    struct vega__stack *give = last->next;
    last->next = NULL;
    set_cache_len(w, VEGA__STACK_CACHE / 2);

    struct vega_rt *rt = w->rt;
    struct vega__stack *cold = NULL;
    pthread_mutex_lock(&rt->stack_mu);
    while (give && rt->stack_nwarm < VEGA__STACK_WARM) {
        struct vega__stack *x = give;
        give = x->next;
        x->next = rt->stack_warm;
        rt->stack_warm = x;
        rt->stack_nwarm++;
    }
    pthread_mutex_unlock(&rt->stack_mu);
    if (!give)
        return;
    /* The rest goes cold: the madvise calls are made outside the lock. */
    for (struct vega__stack *x = give; x; x = x->next)
        drop_pages(rt, x);
    cold = give;
    pthread_mutex_lock(&rt->stack_mu);
    while (cold) {
        struct vega__stack *x = cold;
        cold = x->next;
        cold_push(rt, x);
        struct vega__region *r = x->region;
        if (r->ncold == STACKS_PER_REGION && rt->stack_ncold > VEGA__STACK_COLD_KEEP)
            region_unmap(rt, r);
    }
    pthread_mutex_unlock(&rt->stack_mu);
}

void vega__stack_pool_stats(struct vega_rt *rt, uint64_t *regions, uint64_t *warm, uint64_t *cold,
                            uint64_t *cached)
{
    pthread_mutex_lock(&rt->stack_mu);
    *regions = rt->stack_nregions;
    *warm = rt->stack_nwarm;
    *cold = rt->stack_ncold;
    pthread_mutex_unlock(&rt->stack_mu);
    uint64_t c = 0;
    for (unsigned i = 0; i < rt->nworkers; i++)
        c += cache_len(&rt->workers[i]);
    *cached = c;
}

size_t vega__stack_region_bytes(const struct vega_rt *rt)
{
    return slot_size(rt) * STACKS_PER_REGION;
}

bool vega__stack_canary_ok(const struct vega__stack *s)
{
    return !s->canary || *(const volatile uint64_t *)s->base == CANARY;
}
