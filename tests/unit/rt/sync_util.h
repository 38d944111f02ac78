/* SPDX-License-Identifier: MIT */
/* Helpers shared by the sync tests: running a body on a runtime, spawning and joining task sets,
 * the VEGA_TEST_SCALE divisor, and waiting for another task to reach a point. */
#ifndef VEGA_SYNC_UTIL_H
#define VEGA_SYNC_UTIL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <vega/rt.h>
#include <vega/sync.h>

#include "sync_int.h"
#include "vtest.h"

#define CT VEGA_RT_CURRENT_THREAD
#define MT VEGA_RT_MULTI_THREAD

#define RC(x)  ((void *)(intptr_t)(x)) /* an int result through a task's void * */
#define INT(p) ((int)(intptr_t)(p))

/* Loop counts are divided by $VEGA_TEST_SCALE (sanitizer runs set it), never below 1. */
static inline long scaled(long n)
{
    const char *s = getenv("VEGA_TEST_SCALE");
    long div = s ? atol(s) : 1;
    if (div < 1)
        div = 1;
    return n / div > 0 ? n / div : 1;
}

/* Runs fn(arg) as the root task of a fresh runtime and returns its result. */
static inline void *run_rt(vega_rt_flavor flavor, unsigned workers, vega_task_fn fn, void *arg)
{
    vega_rt_opts o;
    vega_rt_opts_init(&o);
    o.driver = vtest_driver();
    o.flavor = flavor;
    o.workers = workers;
    vega_rt *rt = NULL;
    VCHECK_EQ(vega_rt_new(&rt, &o), 0);
    void *res = RC(-1);
    VCHECK_EQ(vega_rt_block_on(rt, fn, arg, &res), 0);
    vega_rt_free(rt);
    return res;
}

/* Spawns n tasks running fn(arg) (the same arg for all) into t[]. */
static inline void spawn_n(vega_task **t, int n, vega_task_fn fn, void *arg)
{
    for (int i = 0; i < n; i++)
        VCHECK_EQ(vega_task_spawn(&t[i], fn, arg), 0);
}

/* Joins t (without limit) and returns its int result. */
static inline int join_rc(vega_task *t)
{
    void *res = RC(-1);
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    return INT(res);
}

static inline void join_n(vega_task **t, int n)
{
    for (int i = 0; i < n; i++)
        VCHECK_EQ(join_rc(t[i]), 0);
}

/* Sleeps in 1 ms steps until *v >= want, then a little more so that the other task, which
 * bumped *v just before it started waiting, is parked by the time this returns. On the
 * current-thread runtime that is certain (the other task ran until it suspended); on several
 * workers it is only likely: where a case needs the waiter queued, use await_waiters. */
static inline void await_count(atomic_int *v, int want)
{
    while (atomic_load(v) < want)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK_EQ(vega_sleep_ms(10), 0);
}

/* Waiters queued on a primitive's wait queue (q: its `q_`), counted under its lock. */
static inline size_t waiters_queued(vega_waitq *q)
{
    vega__sync_lock(&q->lock_);
    size_t n = 0;
    for (const struct vega__waiter *w = vega__waitq_head(q); w; w = w->next)
        n++;
    vega__sync_unlock(&q->lock_);
    return n;
}

/* Sleeps in 1 ms steps until at least n tasks wait on q: from then on a wake-up finds them,
 * on any number of workers. */
static inline void await_waiters(vega_waitq *q, size_t n)
{
    while (waiters_queued(q) < n)
        VCHECK_EQ(vega_sleep_ms(1), 0);
}

/* Milliseconds since t0 on the runtime clock. */
static inline uint64_t ms_since(vega_tstamp t0)
{
    return (vega_now() - t0) / VEGA_NS_PER_MS;
}

/* Checks that a wait with a 20 ms deadline gave up with -ETIMEDOUT no earlier than the deadline
 * (the timer wheel has 1 ms resolution, so allow 1 ms of rounding). */
#define CHECK_TIMED_OUT_20MS(expr)                                                                 \
    do {                                                                                           \
        vega_tstamp t0_ = vega_now();                                                              \
        VCHECK_EQ((expr), -ETIMEDOUT);                                                             \
        VCHECK(ms_since(t0_) >= 19);                                                               \
    } while (0)

#endif
