/* SPDX-License-Identifier: MIT */
/* The runtime's counters as periodic deltas (vega_rt_metrics_sample, the sampler task): checked
 * by exact counts (K tasks spawned between two samples: a spawned delta of K) and on the paused
 * clock (the sampler's intervals are exactly its period), never by wall time. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <vega/rt.h>
#include <vega/sync.h>
#include <vega/test.h>

#include "vtest.h"

#define K 7

static void *ret_null(void *arg)
{
    (void)arg;
    return NULL;
}

static void *job(void *arg)
{
    return arg;
}

static void spawn_join(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        vega_task *t;
        VCHECK_EQ(vega_task_spawn(&t, ret_null, NULL), 0);
        VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    }
}

/* Between two samples: K tasks spawned (from this worker), 3 blocking jobs; then nothing. */
VTEST_MT(sample_exact_counts, 2)
{
    vega_rt *rt = vega_rt_current();
    vega_rt_counters prev, d;
    memset(&prev, 0, sizeof prev);
    vega_rt_metrics_sample(rt, &prev, &d); /* since the start */
    VCHECK_EQ(d.workers, 2);
    spawn_join(K);
    for (int i = 0; i < 3; i++) {
        void *res = NULL;
        VCHECK_EQ(vega_blocking(job, &prev, &res, VEGA_DEADLINE_NEVER), 0);
        VCHECK(res == &prev);
    }
    vega_rt_metrics_sample(rt, &prev, &d);
    VCHECK_EQ(d.sum.spawned, K);
    VCHECK_EQ(d.worker[0].spawned + d.worker[1].spawned, K);
    VCHECK(d.sum.polls >= K); /* each ran at least once */
    VCHECK_EQ(d.blocking_jobs, 3);
    VCHECK(d.live_tasks >= 1); /* a gauge: this task */
    vega_rt_metrics_sample(rt, &prev, &d);
    VCHECK_EQ(d.sum.spawned, 0);
    VCHECK_EQ(d.blocking_jobs, 0);
}

/* The difference is field by field, a counter that went down gives 0, the gauges are the
 * current reading's, and delta may be one of its inputs. */
VTEST(delta_pure)
{
    vega_rt_counters a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.at_ns = 1000;
    b.at_ns = 1500;
    a.workers = b.workers = 2;
    a.sum.spawned = 10, b.sum.spawned = 25;
    a.sum.io_completions = 4, b.sum.io_completions = 9;
    a.sum.parks = 9, b.sum.parks = 5; /* cannot happen: saturates */
    a.sum.local_queue = 100, b.sum.local_queue = 3;
    a.worker[1].unparks = 1, b.worker[1].unparks = 8;
    a.blocking_jobs = 2, b.blocking_jobs = 6;
    a.live_tasks = 50, b.live_tasks = 7;
    vega_rt_counters_delta(&a, &b, &a);
    VCHECK_EQ(a.at_ns, 500);
    VCHECK_EQ(a.workers, 2);
    VCHECK_EQ(a.sum.spawned, 15);
    VCHECK_EQ(a.sum.io_completions, 5);
    VCHECK_EQ(a.sum.parks, 0);
    VCHECK_EQ(a.sum.local_queue, 3);
    VCHECK_EQ(a.worker[1].unparks, 7);
    VCHECK_EQ(a.worker[0].unparks, 0);
    VCHECK_EQ(a.blocking_jobs, 4);
    VCHECK_EQ(a.live_tasks, 7);
}

struct seen {
    vega_notify tick;
    unsigned n;
    vega_rt_counters d[4];
};

static void on_sample(void *user, const vega_rt_counters *d)
{
    struct seen *s = user;
    if (s->n < 4)
        s->d[s->n] = *d;
    s->n++;
    vega_notify_one(&s->tick);
}

/* On the paused clock: a tick every 10 ms exactly, each with what happened in its interval. */
VTEST_PAUSED(sampler_paused_clock)
{
    struct seen s = {.n = 0};
    vega_notify_init(&s.tick);
    vega_task *t;
    VCHECK_EQ(vega_rt_metrics_sampler_spawn(NULL, 10, on_sample, &s), -EINVAL);
    VCHECK_EQ(vega_rt_metrics_sampler_spawn(&t, 0, on_sample, &s), -EINVAL);
    VCHECK_EQ(vega_rt_metrics_sampler_spawn(&t, 10, NULL, &s), -EINVAL);
    uint64_t t0 = vega_now();
    VCHECK_EQ(vega_rt_metrics_sampler_spawn(&t, 10, on_sample, &s), 0);
    /* every task idle: the clock jumps to the first tick */
    VCHECK_EQ(vega_notify_wait(&s.tick, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 1);
    VCHECK_EQ(vega_now(), t0 + 10 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[0].at_ns, 10 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[0].sum.spawned, 0);
    spawn_join(K);
    VCHECK_EQ(vega_notify_wait(&s.tick, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 2);
    VCHECK_EQ(vega_now(), t0 + 20 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[1].at_ns, 10 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[1].sum.spawned, K);
    VCHECK_EQ(s.d[1].workers, 1);
    VCHECK_EQ(s.d[1].worker[0].spawned, K);
    /* cancelled mid-interval: a last call with the partial interval (5 ms, 3 spawns) */
    VCHECK_EQ(vega_test_advance(5 * VEGA_NS_PER_MS), 0);
    spawn_join(3);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 3);
    VCHECK_EQ(s.d[2].at_ns, 5 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[2].sum.spawned, 3);
    vega_notify_fini(&s.tick);
}

/* A tick that comes late (its fn took 25 ms of a 10 ms period) is not made up with a burst of
 * calls: the next call is at the next tick still ahead on the schedule from the start (40 ms,
 * not 45), and its delta covers everything since the late one, so nothing is lost. */
static void on_sample_slow(void *user, const vega_rt_counters *d)
{
    struct seen *s = user;
    if (s->n == 0)
        VCHECK_EQ(vega_test_advance(25 * VEGA_NS_PER_MS), 0);
    on_sample(user, d);
}

VTEST_PAUSED(sampler_missed_tick)
{
    struct seen s = {.n = 0};
    vega_notify_init(&s.tick);
    vega_task *t;
    uint64_t t0 = vega_now();
    VCHECK_EQ(vega_rt_metrics_sampler_spawn(&t, 10, on_sample_slow, &s), 0);
    VCHECK_EQ(vega_notify_wait(&s.tick, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 1);
    VCHECK_EQ(s.d[0].at_ns, 10 * VEGA_NS_PER_MS);
    VCHECK_EQ(vega_now(), t0 + 35 * VEGA_NS_PER_MS); /* the slow fn's 25 ms */
    spawn_join(2);
    VCHECK_EQ(vega_notify_wait(&s.tick, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 2);
    VCHECK_EQ(vega_now(), t0 + 40 * VEGA_NS_PER_MS);
    VCHECK_EQ(s.d[1].at_ns, 30 * VEGA_NS_PER_MS); /* from the late tick (10) to this one (40) */
    VCHECK_EQ(s.d[1].sum.spawned, 2);
    vega_task_cancel(t);
    VCHECK_EQ(vega_task_join(t, NULL, VEGA_DEADLINE_NEVER), 0);
    VCHECK_EQ(s.n, 3); /* the cancel's call, with the partial interval (none: 0 ns) */
    VCHECK_EQ(s.d[2].at_ns, 0);
    vega_notify_fini(&s.tick);
}

/* API rules, ABI: a layout the library does not know (one from newer headers, or 0) is refused
 * and leaves the caller's struct as it was; the current one is filled up to its end and not a
 * byte past it. */
VTEST_MT(layouts, 2)
{
    vega_rt *rt = vega_rt_current();
    struct layouts {
        vega_rt_metrics m;
        vega_worker_metrics w;
        vega_rt_counters c, d;
        unsigned char canary[64];
    } a;
    memset(&a, 0xa5, sizeof a);
    for (int v = 0; v <= 2; v += 2) { /* 0, and the version after the current one (1) */
        VCHECK_EQ(vega_rt_get_metrics_versioned(rt, &a.m, v), -EINVAL);
        VCHECK_EQ(vega_rt_get_worker_metrics_versioned(rt, 0, &a.w, v), -EINVAL);
        VCHECK_EQ(vega_rt_counters_read_versioned(rt, &a.c, v), -EINVAL);
        VCHECK_EQ(vega_rt_metrics_sample_versioned(rt, &a.c, &a.d, v), -EINVAL);
        VCHECK_EQ(vega_rt_counters_delta_versioned(&a.c, &a.c, &a.d, v), -EINVAL);
        vega_task *t;
        VCHECK_EQ(vega_rt_metrics_sampler_spawn_versioned(&t, 10, on_sample, NULL, v), -EINVAL);
    }
    VCHECK_EQ(vega_rt_get_metrics(NULL, &a.m), -EINVAL);
    VCHECK_EQ(vega_rt_get_worker_metrics(rt, 2, &a.w), -EINVAL); /* two workers: 0 and 1 */
    VCHECK_EQ(vega_rt_counters_read(rt, NULL), -EINVAL);
    VCHECK_EQ(vega_rt_counters_delta(&a.c, NULL, &a.d), -EINVAL);
    for (size_t i = 0; i < offsetof(struct layouts, canary); i++)
        VCHECK_EQ(((unsigned char *)&a)[i], 0xa5);
    VCHECK_EQ(vega_rt_get_metrics(rt, &a.m), 0);
    VCHECK_EQ(a.m.workers, 2);
    VCHECK_EQ(vega_rt_get_worker_metrics(rt, 1, &a.w), 0);
    VCHECK_EQ(vega_rt_counters_read(rt, &a.c), 0);
    VCHECK_EQ(a.c.workers, 2);
    VCHECK_EQ(vega_rt_metrics_sample(rt, &a.c, &a.d), 0);
    VCHECK_EQ(a.d.workers, 2);
    for (size_t i = 0; i < sizeof a.canary; i++)
        VCHECK_EQ(a.canary[i], 0xa5);
}
