/* SPDX-License-Identifier: MIT */
/* The runtime's memory pools have bounds: task structs made on one worker and freed on another
 * do not make the runtime map memory without end, and a burst of stacks is given back. Every
 * check is on a count the runtime reports (vega_rt_get_metrics), never on RSS or time. */
#include <stdatomic.h>
#include <stdlib.h>

#include <vega/rt.h>

#include "sched_int.h"
#include "vtest.h"

static unsigned scale(void)
{
    const char *sc = getenv("VEGA_TEST_SCALE");
    return sc && atoi(sc) > 0 ? (unsigned)atoi(sc) : 1;
}

static vega_rt_metrics metrics(void)
{
    vega_rt_metrics m;
    vega_rt_get_metrics(vega_rt_current(), &m);
    return m;
}

/* The most task chunks a runtime may map for `peak` live tasks: a chunk is mapped only when
 * the spawning worker's cache and the shared list are empty, so every other worker's cache
 * (at most two batches) and the live tasks account for all the structs mapped before. */
static uint64_t chunk_bound(uint64_t peak, unsigned workers)
{
    uint64_t per_chunk = (vega__task_chunk_bytes() - sizeof(void *)) / sizeof(struct vega_task);
    return (peak + (workers - 1) * 2 * (uint64_t)VEGA__TASK_BATCH + per_chunk - 1) / per_chunk + 1;
}

/* ---- a million tasks created on one worker and finished on the other ------------------------ */

#define PEAK 1000u

static atomic_uint live;
static atomic_uint ran_elsewhere;
static unsigned home;

static void *child(void *arg)
{
    (void)arg;
    if (vega__worker_self()->index != home)
        atomic_fetch_add(&ran_elsewhere, 1);
    atomic_fetch_sub(&live, 1);
    return NULL;
}

/*
 * The parent never suspends while it spawns: it holds its worker, so every child it makes
 * (allocated from that worker's cache) can only run, finish and be freed on the other worker,
 * which steals them. No luck is involved: while the parent runs, its worker runs nothing else.
 * The one exception is the child left in the parent's LIFO slot at the end.
 */
static void cross_worker_body(void)
{
    const unsigned n = 1000000u / scale();
    home = vega__worker_self()->index;
    atomic_store(&live, 0);
    atomic_store(&ran_elsewhere, 0);
    for (unsigned i = 0; i < n; i++) {
        while (atomic_load(&live) >= PEAK)
            ; /* spin, never suspend: the other worker drains */
        atomic_fetch_add(&live, 1);
        VCHECK_EQ(vega_task_spawn(NULL, child, NULL), 0);
    }
    while (atomic_load(&live) > 1)
        ; /* all but the child in this worker's LIFO slot, which only this worker runs */
    while (atomic_load(&live) > 0)
        VCHECK_EQ(vega_yield(), 0);
    VCHECK(atomic_load(&ran_elsewhere) >= n - 1); /* the premise of the test holds */

    vega_rt_metrics m = metrics();
    uint64_t bound = chunk_bound(PEAK + 2, 2);
    printf("%u tasks, peak %u live: %" PRIu64 " chunks (bound %" PRIu64 "), %" PRIu64
           " shared, %" PRIu64 " cached\n",
           n, PEAK, m.task_chunks, bound, m.tasks_free_shared, m.tasks_free_cached);
    VCHECK(m.task_chunks <= bound);
    VCHECK(m.tasks_free_cached <= 2 * 2 * VEGA__TASK_BATCH);
    /* Every struct mapped is either free or the one running this. */
    uint64_t per_chunk = (vega__task_chunk_bytes() - sizeof(void *)) / sizeof(struct vega_task);
    VCHECK_EQ(m.tasks_free_shared + m.tasks_free_cached + m.live_tasks, m.task_chunks * per_chunk);
}

VTEST(tasks_made_here_freed_there)
{
    vtest_run(cross_worker_body, 2);
}

/* ---- the pool calls themselves, with the workers given explicitly --------------------------- */

/*
 * The test thread plays both workers of an idle two-worker runtime: no task ever runs on it, so
 * nothing else touches the workers' caches (which are otherwise the owners' alone). Structs and
 * stacks are taken from worker 0 and given back on worker 1, the shape work stealing makes.
 */
static vega_rt *idle_rt(void)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.workers = 2;
    o.driver = vtest_driver();
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r == -ENOSYS || r == -EPERM)
        vtest_skip("driver not available here");
    VCHECK_EQ(r, 0);
    return rt;
}

VTEST(task_pool_direct)
{
    vega_rt *rt = idle_rt();
    struct vega__worker *a = &rt->workers[0], *b = &rt->workers[1];
    enum {
        LIVE = 300
    };
    struct vega_task *t[LIVE];
    const unsigned rounds = 1000000u / scale() / LIVE;
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < LIVE; i++) {
            t[i] = vega__task_alloc(rt, a);
            VCHECK(t[i] != NULL);
        }
        for (unsigned i = 0; i < LIVE; i++)
            vega__task_free(b, t[i]);
    }
    vega_rt_metrics m;
    vega_rt_get_metrics(rt, &m);
    printf("%u x %d structs: %" PRIu64 " chunks, %" PRIu64 " shared, %" PRIu64 " cached\n", rounds,
           LIVE, m.task_chunks, m.tasks_free_shared, m.tasks_free_cached);
    VCHECK(m.task_chunks <= chunk_bound(LIVE, 2));
    VCHECK(m.tasks_free_cached <= 2 * 2 * VEGA__TASK_BATCH);
    vega_rt_free(rt);
}

VTEST(stack_pool_direct)
{
    vega_rt *rt = idle_rt();
    struct vega__worker *a = &rt->workers[0], *b = &rt->workers[1];
    enum {
        LIVE = 300
    };
    struct vega__stack *s[LIVE];
    const unsigned rounds = 200000u / scale() / LIVE;
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < LIVE; i++) {
            s[i] = vega__stack_get(a);
            VCHECK(s[i] != NULL);
            VCHECK(vega__stack_canary_ok(s[i]));               /* cold ones get their canary back */
            ((volatile char *)s[i]->base)[s[i]->size - 1] = 1; /* touch the top */
        }
        for (unsigned i = 0; i < LIVE; i++)
            vega__stack_put(b, s[i]);
    }
    vega_rt_metrics m;
    vega_rt_get_metrics(rt, &m);
    printf("%u x %d stacks: %" PRIu64 " regions, %" PRIu64 " cached, %" PRIu64 " warm, %" PRIu64
           " cold\n",
           rounds, LIVE, m.stack_regions, m.stacks_cached, m.stacks_warm, m.stacks_cold);
    /* Every stack mapped is free now, and at most 16 per region beyond what was ever live. */
    VCHECK_EQ(m.stacks_cached + m.stacks_warm + m.stacks_cold, m.stack_regions * 16);
    VCHECK(m.stack_regions * 16 <= LIVE + 2 * VEGA__STACK_CACHE + 16);
    VCHECK(m.stacks_cached <= 2 * VEGA__STACK_CACHE);
    /* The warm list follows demand: at most the peak in use (the clock is not paused here, but
     * a window that turned could only have made it smaller). */
    VCHECK(m.stacks_warm <= LIVE + 16);
    vega_rt_free(rt);
}

/* A stack with a guard page below it carries no canary (its write would commit the lowest page
 * of every stack); one without a guard has one, checked at every switch-out. Both the fresh
 * stacks and the ones that come back from the cold list. */
static void guard_xor_canary(bool stack_guard)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.workers = 2;
    o.driver = vtest_driver();
    o.stack_guard = stack_guard;
    vega_rt *rt;
    int r = vega_rt_new(&rt, &o);
    if (r == -ENOSYS || r == -EPERM)
        vtest_skip("driver not available here");
    VCHECK_EQ(r, 0);
    bool guarded = stack_guard || rt->guard_madvise;
    struct vega__worker *a = &rt->workers[0], *b = &rt->workers[1];
    enum {
        LIVE = 2 * (VEGA__STACK_WARM + 2 * VEGA__STACK_CACHE) /* some come back cold */
    };
    struct vega__stack *s[LIVE];
    for (unsigned round = 0; round < 3; round++) {
        for (unsigned i = 0; i < LIVE; i++) {
            s[i] = vega__stack_get(a);
            VCHECK(s[i] != NULL);
            VCHECK_EQ(s[i]->canary, !guarded);
            VCHECK(vega__stack_canary_ok(s[i]));
        }
        for (unsigned i = 0; i < LIVE; i++)
            vega__stack_put(b, s[i]);
    }
    vega_rt_free(rt);
}

VTEST(guarded_stacks_have_no_canary)
{
    guard_xor_canary(true);
    guard_xor_canary(false);
}

/* ---- a burst of live tasks, then none: the stacks go back ----------------------------------- */

static void *sleeper(void *arg)
{
    (void)arg;
    VCHECK_EQ(vega_sleep_ms(1), 0);
    return NULL;
}

/* n sleepers alive at once, all joined. */
static void burst(unsigned n)
{
    vega_task **t = malloc(n * sizeof *t);
    VCHECK(t != NULL);
    for (unsigned i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], sleeper, NULL), 0);
    for (unsigned i = 0; i < n; i++)
        VCHECK_EQ(vega_task_join(t[i], NULL, VEGA_DEADLINE_NEVER), 0);
    free(t);
}

static void print_pool(const char *when, const vega_rt_metrics *m)
{
    printf("%s: %" PRIu64 " regions, %" PRIu64 " cached, %" PRIu64 " warm, %" PRIu64 " cold\n",
           when, m->stack_regions, m->stacks_cached, m->stacks_warm, m->stacks_cold);
}

/*
 * On the paused clock, so that the windows of demand turn only when this task sleeps past
 * them. Right after a burst its stacks stay warm (the recent peak allows it), a second burst
 * of the same size takes them back without mapping or faulting in anything, and two windows
 * after the demand is gone the warm list is down to its floor and the mappings are gone.
 */
static void *burst_root(void *arg)
{
    (void)arg;
    /* enough that what the lists keep is a small part of it, also at a sanitizer's scale */
    unsigned n = 20000u / scale();
    if (n < 8 * (VEGA__STACK_CACHE + VEGA__STACK_WARM + VEGA__STACK_COLD_KEEP))
        n = 8 * (VEGA__STACK_CACHE + VEGA__STACK_WARM + VEGA__STACK_COLD_KEEP);
    burst(n);
    vega_rt_metrics m = metrics();
    print_pool("after a burst", &m);
    /* Every stack but this task's is free; at most the peak is held, most of it warm. */
    VCHECK(m.stacks_cached <= VEGA__STACK_CACHE);
    VCHECK(m.stacks_warm >= n / 2);
    VCHECK(m.stacks_warm <= n);
    VCHECK_EQ(m.stacks_cached + m.stacks_warm + m.stacks_cold + 1, m.stack_regions * 16);

    uint64_t regions = m.stack_regions, cold = m.stacks_cold;
    burst(n);
    m = metrics();
    print_pool("after the same burst again", &m);
    VCHECK_EQ(m.stack_regions, regions); /* nothing mapped */
    VCHECK(m.stacks_cold <= cold);       /* nothing taken back from the cold list */

    for (int i = 0; i < 3; i++) /* each sleep jumps the clock past one window's end */
        VCHECK_EQ(vega_sleep_ms(VEGA__STACK_DECAY_NS / 1000000u + 1), 0);
    m = metrics();
    print_pool("three windows later", &m);
    /* One stack is in use (this task's). The rest: the cache, the warm list, the cold list up
     * to its keep, and regions that still hold a stack from one of those. */
    VCHECK(m.stacks_cached <= VEGA__STACK_CACHE);
    VCHECK(m.stacks_warm <= VEGA__STACK_WARM);
    uint64_t keep = VEGA__STACK_CACHE + VEGA__STACK_WARM + VEGA__STACK_COLD_KEEP;
    VCHECK(m.stack_regions <= keep / 16 + (VEGA__STACK_CACHE + VEGA__STACK_WARM) + 2);
    VCHECK(m.stack_regions < n / 16 / 4); /* most of the burst's mappings are gone */
    return NULL;
}

VTEST(burst_of_stacks_given_back)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.flavor = VEGA_RT_CURRENT_THREAD;
    o.driver = vtest_driver();
    o.paused_clock = true;
    vega_rt *rt;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    VCHECK_EQ(vega_rt_block_on(rt, burst_root, NULL, NULL), 0);
    vega_rt_free(rt);
}
