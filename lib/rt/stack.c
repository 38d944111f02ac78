/* SPDX-License-Identifier: MIT */
/* Task stacks: carved from large MAP_NORESERVE regions, pooled per worker, committed on touch,
 * with a guard page (MADV_GUARD_INSTALL where the kernel has it, mprotect on request) or, where
 * neither is there, an overflow canary checked at every switch-out. A stack with a guard has no
 * canary: the canary's write would commit the stack's lowest page, a second page for every live
 * task, and the guard already stops an overflow at that page. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(VEGA_ASAN)
#include <sanitizer/asan_interface.h>
#endif

#include "sched_int.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#define PIDFD_SELF_THREAD_ (-10000) /* Linux 6.15: process_madvise on our own address space */

#define STACKS_PER_REGION 16u
#define MADV_BATCH        64u /* ranges per vectored madvise */
#define CANARY            0x5ca1ab1ef00dfaceull

/*
 * Where a free stack is:
 * - in its worker's cache (VEGA__STACK_CACHE, pages kept: the next spawn reuses them warm);
 * - on the shared warm list (pages kept): what one worker's full cache gives back while another
 *   worker's is empty (work stealing makes stacks end on another worker than the one that took
 *   them), and what a burst leaves, so that the next burst costs no page fault and no madvise.
 *   Its bound follows demand (see warm_bound): VEGA__STACK_WARM, or as many stacks as were in
 *   use at the peak of the last window or two (VEGA__STACK_DECAY_NS each) beyond those in use
 *   now, at most VEGA__STACK_WARM_MAX. Under churn (tasks ending while as many start) the
 *   stacks go round warm instead of being given back and faulted in again, which cost most of
 *   the time of 100,000 sleepers on this project's VM, where installing a page table entry is
 *   expensive; the warm list keeps about what was in use at the recent peak and is not in use
 *   now (stacks are only ever carved for use, so it never passes the peak). Once demand drops, the
 * bound follows within two windows (the workers turn the window in their maintenance and park no
 * longer than its end), and the rest goes cold;
 * - on the shared cold list: its pages given back with MADV_DONTNEED (all of them: descriptors
 *   live in the region's header, not in the stacks) — when the warm list overflows, its older
 *   half goes cold in one vectored madvise, so a burst's unwinding costs a call per
 *   VEGA__STACK_WARM / 2 stacks, not one per stack (each call is a TLB flush, and an IPI for
 *   every other CPU the process ran on);
 * - gone: once every stack of a region is cold and the cold list holds more than
 *   VEGA__STACK_COLD_KEEP, the region is unmapped, so a burst of tasks does not keep even its
 *   mappings for ever.
 * Each list has its bound, so what is held is bounded by the peak of live stacks, and beyond
 * the caches and the warm list a free stack costs no memory at all.
 */

/* Stacks carved and not on a shared list: running, parked, or in a worker's cache. */
static size_t in_use(const struct vega_rt *rt)
{
    return rt->stack_nregions * STACKS_PER_REGION - rt->stack_nwarm - rt->stack_ncold;
}

/* What the warm list may hold now (stack_mu held): the recent peak's excess over the stacks in
 * use, so that in use + warm stays within the peak, between VEGA__STACK_WARM and _MAX. */
static size_t warm_bound(const struct vega_rt *rt)
{
    size_t peak = rt->stack_peak > rt->stack_peak_prev ? rt->stack_peak : rt->stack_peak_prev;
    size_t used = in_use(rt);
    if (peak <= used + VEGA__STACK_WARM)
        return VEGA__STACK_WARM;
    return peak - used < VEGA__STACK_WARM_MAX ? peak - used : VEGA__STACK_WARM_MAX;
}

/* Cuts the warm list to its newest keep stacks and returns the older rest (stack_mu held). */
static struct vega__stack *warm_cut(struct vega_rt *rt, size_t keep)
{
    if (rt->stack_nwarm <= keep)
        return NULL;
    struct vega__stack **pp = &rt->stack_warm;
    for (size_t i = 0; i < keep; i++)
        pp = &(*pp)->next;
    struct vega__stack *rest = *pp;
    *pp = NULL;
    rt->stack_nwarm = keep;
    return rest;
}

/* Arms the window's end once the warm list holds more than its floor (stack_mu held). */
static void arm_decay(struct vega_rt *rt)
{
    if (rt->stack_nwarm > VEGA__STACK_WARM &&
        atomic_load_explicit(&rt->stack_decay_at, memory_order_relaxed) == 0)
        atomic_store_explicit(&rt->stack_decay_at, vega__rt_now_ns(rt) + VEGA__STACK_DECAY_NS,
                              memory_order_relaxed);
}
struct vega__region {
    struct vega__region *next, *prev;
    void *base;
    size_t len;
    unsigned ncold; /* its stacks on the cold list */
    /* The descriptors: here, not at the top of each stack, so that pool lists are walked
     * without touching stack pages and a cold stack has no page left at all. */
    struct vega__stack stacks[STACKS_PER_REGION];
};

static inline size_t slot_size(const struct vega_rt *rt)
{
    return rt->stack_size + rt->page;
}

static inline struct vega__stack *slot_stack(struct vega__region *r, unsigned i)
{
    return &r->stacks[i];
}

/* The end of s's slot: the next slot's guard page, and the top of s's usable bytes. */
static inline char *slot_end(const struct vega_rt *rt, const struct vega__stack *s)
{
    const struct vega__region *r = s->region;
    return (char *)r->base + (size_t)(s - r->stacks + 1) * slot_size(rt);
}

/*
 * madvise over n ranges: one process_madvise call per MADV_BATCH where the kernel takes our own
 * address space that way (Linux 6.15), which also batches the TLB flushes of MADV_DONTNEED; a
 * call per range elsewhere. Best effort: a failure leaves pages committed, never wrong.
 */
static void madvise_ranges(const struct vega_rt *rt, struct iovec *iov, size_t n, int advice)
{
    size_t done = 0;
    if (rt->vec_madvise) {
        while (done < n) {
            size_t k = n - done < MADV_BATCH ? n - done : MADV_BATCH;
            if (syscall(SYS_process_madvise, PIDFD_SELF_THREAD_, iov + done, k, advice, 0) < 0)
                break;
            done += k;
        }
    }
    for (; done < n; done++)
        (void)madvise(iov[done].iov_base, iov[done].iov_len, advice);
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
    rt->stack_peak = rt->stack_peak_prev = 0;
    atomic_store_explicit(&rt->stack_decay_at, 0, memory_order_relaxed);
    rt->regions = NULL;
    pthread_mutex_init(&rt->stack_mu, NULL);

    /* Probe MADV_GUARD_INSTALL once on a scratch mapping. */
    void *p = mmap(NULL, 2 * rt->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    rt->guard_madvise = madvise(p, rt->page, MADV_GUARD_INSTALL) == 0;
    /* and process_madvise on our own address space, for the advice used in batches */
    struct iovec v = {(char *)p + rt->page, rt->page};
    long pop = syscall(SYS_process_madvise, PIDFD_SELF_THREAD_, &v, 1, MADV_POPULATE_WRITE, 0);
    long drop = syscall(SYS_process_madvise, PIDFD_SELF_THREAD_, &v, 1, MADV_DONTNEED, 0);
    rt->vec_madvise = pop == (long)rt->page && drop == (long)rt->page;
    munmap(p, 2 * rt->page);
    return 0;
}

/* Unmaps a region. Under ASan its shadow is cleared first: frames that never returned (a
 * finished task's entry switches away for good) leave their redzones poisoned, and a later
 * mmap given the same addresses (a task chunk, a new runtime's stacks) would read as a stack
 * overflow. */
static void region_munmap(void *base, size_t len)
{
#if defined(VEGA_ASAN)
    __asan_unpoison_memory_region(base, len);
#endif
    munmap(base, len);
}

void vega__stack_pool_fini(struct vega_rt *rt)
{
    struct vega__region *r = rt->regions;
    while (r) {
        struct vega__region *next = r->next;
        region_munmap(r->base, r->len);
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
        cold_unlink(rt, slot_stack(r, i));
    if (r->prev)
        r->prev->next = r->next;
    else
        rt->regions = r->next;
    if (r->next)
        r->next->prev = r->prev;
    rt->stack_nregions--;
    region_munmap(r->base, r->len);
    free(r);
}

/* Maps a region of STACKS_PER_REGION stacks onto the warm list, their guards installed and
 * their top pages (where a task's first frames go) committed: two calls for the region, where
 * a first touch of each stack would cost a page fault each. */
static bool grow(struct vega_rt *rt)
{
    /* Each slot: [guard page][usable stack ....]. */
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

    bool all_guarded = false;
    struct iovec iov[STACKS_PER_REGION];
    if (rt->guard_madvise && rt->vec_madvise) {
        for (unsigned i = 0; i < STACKS_PER_REGION; i++)
            iov[i] = (struct iovec){base + i * slot, rt->page};
        all_guarded = syscall(SYS_process_madvise, PIDFD_SELF_THREAD_, iov, STACKS_PER_REGION,
                              MADV_GUARD_INSTALL, 0) == (long)(STACKS_PER_REGION * rt->page);
    }
    for (unsigned i = 0; i < STACKS_PER_REGION; i++) {
        char *guard = base + i * slot;
        bool g = all_guarded;
        if (!g && rt->guard_madvise)
            g = madvise(guard, rt->page, MADV_GUARD_INSTALL) == 0;
        if (!g && !rt->guard_madvise && rt->opts.stack_guard) /* splits the VMA: ARCHITECTURE.md */
            g = mprotect(guard, rt->page, PROT_NONE) == 0;
        struct vega__stack *s = slot_stack(r, i);
        memset(s, 0, sizeof *s);
        s->base = guard + rt->page;
        /* Usable bytes end at the slot's end; vary it by up to 7 cache lines so that the stacks'
         * tops do not all alias in the same L1 sets. */
        s->size = (slot - rt->page - 64 * (i % 8)) & ~(size_t)15;
        s->region = r;
        s->canary = !g;
        if (s->canary)
            *(volatile uint64_t *)s->base = CANARY;
        s->next = rt->stack_warm;
        rt->stack_warm = s;
        rt->stack_nwarm++;
        iov[i] = (struct iovec){slot_end(rt, s) - rt->page, rt->page};
    }
    madvise_ranges(rt, iov, STACKS_PER_REGION, MADV_POPULATE_WRITE);
    return true;
}

/* One stack off the shared lists, warm first, or NULL (stack_mu held). */
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

/* The top page of s, where a task's first frames go. */
static struct iovec top_page(const struct vega_rt *rt, const struct vega__stack *s)
{
    return (struct iovec){slot_end(rt, s) - rt->page, rt->page};
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
    bool cold = !rt->stack_warm;
    s = shared_take(rt);
    /* Take up to a quarter of a cache's worth more: warm ones as they are, cold ones with their
     * top pages committed in one call below (one fault each otherwise, when first used). */
    struct iovec iov[VEGA__STACK_CACHE / 4 + 1];
    size_t niov = 0;
    if (cold)
        iov[niov++] = top_page(rt, s);
    unsigned n = 0;
    while (n < VEGA__STACK_CACHE / 4 && (cold ? rt->stack_cold != NULL : rt->stack_warm != NULL)) {
        struct vega__stack *x = shared_take(rt);
        if (cold)
            iov[niov++] = top_page(rt, x);
        x->next = w->stack_cache;
        w->stack_cache = x;
        n++;
    }
    if (in_use(rt) > rt->stack_peak)
        rt->stack_peak = in_use(rt);
    pthread_mutex_unlock(&rt->stack_mu);
    set_cache_len(w, n);
    if (niov)
        madvise_ranges(rt, iov, niov, MADV_POPULATE_WRITE);
    return s;
}

/*
 * A free stack keeps at most its top VEGA__STACK_KEEP bytes committed. A task that went deeper
 * (a TLS handshake, a deep parser) leaves pages that no later shallow task would use: kept,
 * they would make the pool's memory creep up to (stacks pooled) x (stack size) as, one by one,
 * pooled stacks meet a deep task. Two signs tell, neither a system call:
 * - the lowest stack pointer the task switched out at (recorded at every switch, sched.c): a
 *   task that waits while deep, as a handshake waits for its peer, is seen every time;
 * - a probe, for a task that went deep and came back without switching out: the page just
 *   below the kept top reads as zeros until a task writes there (an untouched page maps the
 *   shared zero page, which is not resident memory) and again once given back, so a few word
 *   reads say whether a task went that deep. Not at the first free after the stack's pages were
 *   committed (a fresh or cold stack): the first read of a never-touched page is a page fault,
 *   which every short-lived burst of tasks paid once per stack; from the second free on, a
 *   stack that serves task after task (a server's) is probed every time, as before.
 * So a stack whose first task went deep without waiting there keeps its pages for one more
 * task (or until it goes cold), and the bound stays (stacks pooled) x (stack size). A soak of
 * vega-serve with TLS saw the pool creep by 1.5 MiB when the probe ran once in 64 frees. Under
 * ASan the probe would read poisoned stack memory: no trimming there.
 */
static void trim_deep(struct vega_rt *rt, struct vega__stack *s)
{
#if defined(VEGA_ASAN)
    (void)rt;
    (void)s;
#else
    uintptr_t top = (uintptr_t)slot_end(rt, s);
    uintptr_t keep = (top - VEGA__STACK_KEEP) & ~(uintptr_t)(rt->page - 1);
    bool deep = s->low && (uintptr_t)s->low < keep;
    s->low = NULL;
    if (s->size < VEGA__STACK_KEEP + 3 * rt->page)
        return;
    if (!deep) {
        if (s->frees++ == 0)
            return; /* its first task since its pages were committed: no probe (see above) */
        const volatile uint64_t *probe = (const volatile uint64_t *)(keep - rt->page);
        uint64_t any = 0;
        for (size_t i = 0; i < rt->page / sizeof *probe; i += 32) /* every 256 bytes */
            any |= probe[i];
        if (!any)
            return;
    }
    /* The canary's page (the lowest), if any, stays; everything above it to the kept top goes. */
    char *from = (char *)s->base + (s->canary ? rt->page : 0);
    if ((uintptr_t)from < keep)
        madvise(from, keep - (uintptr_t)from, MADV_DONTNEED);
#endif
}

/* Gives the pages of every stack on list back (one vectored call per MADV_BATCH), then puts
 * them on the cold list, unmapping regions left wholly cold beyond VEGA__STACK_COLD_KEEP. */
static void go_cold(struct vega_rt *rt, struct vega__stack *list)
{
    struct iovec iov[MADV_BATCH];
    size_t n = 0;
    for (struct vega__stack *x = list; x; x = x->next) {
        iov[n++] = (struct iovec){x->base, (size_t)(slot_end(rt, x) - (char *)x->base)};
        if (n == MADV_BATCH || !x->next) {
            madvise_ranges(rt, iov, n, MADV_DONTNEED);
            n = 0;
        }
    }
    pthread_mutex_lock(&rt->stack_mu);
    while (list) {
        struct vega__stack *x = list;
        list = x->next;
        x->frees = 0; /* fresh again: see trim_deep */
        cold_push(rt, x);
        struct vega__region *r = x->region;
        if (r->ncold == STACKS_PER_REGION && rt->stack_ncold > VEGA__STACK_COLD_KEEP)
            region_unmap(rt, r);
    }
    pthread_mutex_unlock(&rt->stack_mu);
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
    /* Full: keep the newest half, hand the rest to the warm list in one go. */
    struct vega__stack *last = s;
    for (unsigned i = 1; i < VEGA__STACK_CACHE / 2; i++)
        last = last->next;
    struct vega__stack *give = last->next;
    last->next = NULL;
    set_cache_len(w, VEGA__STACK_CACHE / 2);

    struct vega_rt *rt = w->rt;
    struct vega__stack *cold = NULL;
    pthread_mutex_lock(&rt->stack_mu);
    while (give) {
        struct vega__stack *x = give;
        give = x->next;
        x->next = rt->stack_warm;
        rt->stack_warm = x;
        rt->stack_nwarm++;
    }
    /* Over its bound by half: the newest (hot first) up to the bound stay, the older ones go
     * cold, in one vectored call per VEGA__STACK_WARM / 2 or more. */
    size_t bound = warm_bound(rt);
    if (rt->stack_nwarm > bound + bound / 2)
        cold = warm_cut(rt, bound);
    arm_decay(rt);
    pthread_mutex_unlock(&rt->stack_mu);
    if (cold)
        go_cold(rt, cold); /* the madvise calls are made outside the lock */
}

/* Turns the window of demand when its end has passed: the peak seen becomes the previous one,
 * the stacks in use now start the new one, and the warm list is cut to the new bound. Called
 * by every worker in its maintenance and after it parks; a relaxed load when nothing is due. */
void vega__stack_decay(struct vega_rt *rt)
{
    uint64_t at = atomic_load_explicit(&rt->stack_decay_at, memory_order_relaxed);
    if (vega__likely(at == 0) || vega__rt_now_ns(rt) < at)
        return;
    pthread_mutex_lock(&rt->stack_mu);
    struct vega__stack *cold = NULL;
    if (atomic_load_explicit(&rt->stack_decay_at, memory_order_relaxed) == at) {
        rt->stack_peak_prev = rt->stack_peak;
        rt->stack_peak = in_use(rt);
        cold = warm_cut(rt, warm_bound(rt));
        atomic_store_explicit(&rt->stack_decay_at, 0, memory_order_relaxed);
        arm_decay(rt);
    }
    pthread_mutex_unlock(&rt->stack_mu);
    if (cold)
        go_cold(rt, cold);
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
