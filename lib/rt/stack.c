/* SPDX-License-Identifier: MIT */
/* Task stacks: carved from large MAP_NORESERVE regions, pooled per worker, committed on touch,
 * with a guard page (MADV_GUARD_INSTALL where the kernel has it, mprotect on request) and an
 * overflow canary checked at every switch-out. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sched_int.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif

#define STACKS_PER_REGION 16u
#define CANARY 0x5ca1ab1ef00dfaceull

struct vega__region {
    struct vega__region *next;
    void *base;
    size_t len;
};

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
    rt->stack_free = NULL;
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
    rt->stack_free = NULL;
    pthread_mutex_destroy(&rt->stack_mu);
}

/* Maps a region of STACKS_PER_REGION stacks and returns them as a list. Caller holds stack_mu. */
static struct vega__stack *grow(struct vega_rt *rt)
{
    /* Each slot: [guard page][usable stack .... descriptor]. */
    size_t slot = rt->stack_size + rt->page;
    size_t len = slot * STACKS_PER_REGION;
    struct vega__region *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    char *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) {
        free(r);
        return NULL;
    }
#ifdef MADV_NOHUGEPAGE
    madvise(base, len, MADV_NOHUGEPAGE); /* a THP-backed stack would cost 2 MiB */
#endif
    r->base = base;
    r->len = len;
    r->next = rt->regions;
    rt->regions = r;

    struct vega__stack *list = NULL;
    for (unsigned i = 0; i < STACKS_PER_REGION; i++) {
        char *guard = base + i * slot;
        if (rt->guard_madvise)
            madvise(guard, rt->page, MADV_GUARD_INSTALL);
        else if (rt->opts.stack_guard)
            mprotect(guard, rt->page, PROT_NONE); /* splits the VMA: see ARCHITECTURE.md */
        struct vega__stack *s = (struct vega__stack *)(guard + slot - sizeof(struct vega__stack));
        s->base = guard + rt->page;
        /* Usable bytes end below the descriptor; vary the start by up to 7 cache lines so that
         * the stacks do not all alias in the same L1 sets. */
        s->size = ((char *)s - (char *)s->base - 64 * (i % 8)) & ~(size_t)15;
        *(volatile uint64_t *)s->base = CANARY;
        s->next = list;
        list = s;
    }
    return list;
}

struct vega__stack *vega__stack_get(struct vega__worker *w)
{
    struct vega__stack *s = w->stack_cache;
    if (vega__likely(s)) {
        w->stack_cache = s->next;
        w->stack_cache_len--;
        return s;
    }
    struct vega_rt *rt = w->rt;
    pthread_mutex_lock(&rt->stack_mu);
    if (!rt->stack_free)
        rt->stack_free = grow(rt);
    /* Take up to half a cache's worth at once. */
    unsigned n = 0;
    while (rt->stack_free && n < VEGA__STACK_CACHE / 2) {
        struct vega__stack *x = rt->stack_free;
        rt->stack_free = x->next;
        x->next = w->stack_cache;
        w->stack_cache = x;
        n++;
    }
    pthread_mutex_unlock(&rt->stack_mu);
    w->stack_cache_len += n;
    s = w->stack_cache;
    if (s) {
        w->stack_cache = s->next;
        w->stack_cache_len--;
    }
    return s;
}

void vega__stack_put(struct vega__worker *w, struct vega__stack *s)
{
    if (vega__likely(w->stack_cache_len < VEGA__STACK_CACHE)) {
        s->next = w->stack_cache;
        w->stack_cache = s;
        w->stack_cache_len++;
        return;
    }
    /* Beyond the cache: give the pages back to the kernel, keep the address range. The
     * descriptor sits on the top page, so keep that one. */
    struct vega_rt *rt = w->rt;
    size_t drop = ((char *)s - (char *)s->base) & ~(rt->page - 1);
    if (drop > rt->page) {
        madvise((char *)s->base + rt->page, drop - rt->page, MADV_DONTNEED);
    }
    pthread_mutex_lock(&rt->stack_mu);
    s->next = rt->stack_free;
    rt->stack_free = s;
    pthread_mutex_unlock(&rt->stack_mu);
}

bool vega__stack_canary_ok(const struct vega__stack *s)
{
    return *(const volatile uint64_t *)s->base == CANARY;
}
