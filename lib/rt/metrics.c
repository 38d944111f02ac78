/* SPDX-License-Identifier: MIT */
/* Runtime metrics: per-worker counters, Prometheus text export, and a task dump. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* Each layout's size (API rules: ABI): index = version. */
static const size_t rt_metrics_layout[VEGA_RT_METRICS_VERSION + 1] = {
    [1] = sizeof(vega_rt_metrics),
};
static const size_t worker_metrics_layout[VEGA_WORKER_METRICS_VERSION + 1] = {
    [1] = sizeof(vega_worker_metrics),
};

/* A vega_rt_counters layout this library knows. Only the current one so far: when one grows,
 * the older layout's struct comes here and the functions below convert to it. */
static bool counters_layout_known(int v)
{
    return v == VEGA_RT_COUNTERS_VERSION;
}

static void get_metrics(const vega_rt *rt, vega_rt_metrics *m)
{
    struct vega_rt *r = (struct vega_rt *)rt;
    m->workers = r->nworkers;
    m->live_tasks = vega__rt_live(r);
    m->inject_queue = vega__inject_len(&r->inject);
    pthread_mutex_lock(&r->pool_mu);
    m->blocking_threads = r->pool_threads;
    m->blocking_queue = r->pool_queued;
    pthread_mutex_unlock(&r->pool_mu);
    vega__task_pool_stats(r, &m->task_chunks, &m->tasks_free_shared, &m->tasks_free_cached);
    m->task_chunk_bytes = m->task_chunks * vega__task_chunk_bytes();
    vega__stack_pool_stats(r, &m->stack_regions, &m->stacks_warm, &m->stacks_cold,
                           &m->stacks_cached);
    m->stack_region_bytes = m->stack_regions * vega__stack_region_bytes(r);
    pthread_mutex_lock(&r->pool_mu);
    m->blocking_jobs = r->pool_jobs;
    pthread_mutex_unlock(&r->pool_mu);
}

int vega_rt_get_metrics_versioned(const vega_rt *rt, vega_rt_metrics *m, int metrics_version)
{
    if (!rt || !m || metrics_version < 1 || metrics_version > VEGA_RT_METRICS_VERSION)
        return -EINVAL;
    vega_rt_metrics all;
    get_metrics(rt, &all);
    memcpy(m, &all, rt_metrics_layout[metrics_version]);
    return 0;
}

/* Worker i's counters (i < rt->nworkers), in the current layout. */
static void get_worker(const vega_rt *rt, unsigned i, vega_worker_metrics *m)
{
    struct vega__worker *w = &rt->workers[i];
    m->spawned = LOAD(w->m.spawned);
    m->polls = LOAD(w->m.polls);
    m->steals = LOAD(w->m.steals);
    m->steal_ops = LOAD(w->m.steal_ops);
    m->parks = LOAD(w->m.parks);
    m->unparks = LOAD(w->m.unparks);
    m->injects = LOAD(w->m.injects);
    m->budget_yields = LOAD(w->m.budget_yields);
    m->lifo_hits = LOAD(w->m.lifo_hits);
    m->overflows = LOAD(w->m.overflows);
    m->local_queue = vega__lqueue_len(&w->q);
    m->timers_fired = LOAD(w->m.timers_fired);
    m->io_ops = LOAD(w->m.io_ops);
    m->io_completions = LOAD(w->m.io_completions);
}

int vega_rt_get_worker_metrics_versioned(const vega_rt *rt, unsigned i, vega_worker_metrics *m,
                                         int metrics_version)
{
    if (!rt || !m || i >= rt->nworkers || metrics_version < 1 ||
        metrics_version > VEGA_WORKER_METRICS_VERSION)
        return -EINVAL;
    vega_worker_metrics all;
    get_worker(rt, i, &all);
    memcpy(m, &all, worker_metrics_layout[metrics_version]);
    return 0;
}

/* The counters of vega_worker_metrics (every field but local_queue, a gauge), for sums and
 * differences field by field. */
static const size_t worker_counters[] = {
#define F(f) offsetof(vega_worker_metrics, f)
    F(spawned),      F(polls),   F(steals),         F(steal_ops), F(parks),
    F(unparks),      F(injects), F(budget_yields),  F(lifo_hits), F(overflows),
    F(timers_fired), F(io_ops),  F(io_completions),
#undef F
};

static uint64_t *field(vega_worker_metrics *m, size_t off)
{
    return (uint64_t *)((char *)m + off);
}

static void counters_read(const vega_rt *rt, vega_rt_counters *out)
{
    memset(out, 0, sizeof *out);
    out->at_ns = vega_now();
    out->workers = rt->nworkers;
    for (unsigned i = 0; i < rt->nworkers; i++) {
        vega_worker_metrics m;
        get_worker(rt, i, &m);
        for (size_t k = 0; k < VEGA__ARRAY_LEN(worker_counters); k++)
            *field(&out->sum, worker_counters[k]) += *field(&m, worker_counters[k]);
        out->sum.local_queue += m.local_queue;
        if (i < VEGA_RT_COUNTERS_WORKERS)
            out->worker[i] = m;
    }
    struct vega_rt *r = (struct vega_rt *)rt;
    pthread_mutex_lock(&r->pool_mu);
    out->blocking_jobs = r->pool_jobs;
    pthread_mutex_unlock(&r->pool_mu);
    out->live_tasks = vega__rt_live(r);
}

int vega_rt_counters_read_versioned(const vega_rt *rt, vega_rt_counters *out, int counters_version)
{
    if (!rt || !out || !counters_layout_known(counters_version))
        return -EINVAL;
    counters_read(rt, out);
    return 0;
}

static uint64_t minus(uint64_t cur, uint64_t prev)
{
    return cur >= prev ? cur - prev : 0;
}

static void worker_delta(const vega_worker_metrics *prev, const vega_worker_metrics *cur,
                         vega_worker_metrics *d)
{
    vega_worker_metrics p = *prev, c = *cur;
    for (size_t k = 0; k < VEGA__ARRAY_LEN(worker_counters); k++)
        *field(d, worker_counters[k]) =
            minus(*field(&c, worker_counters[k]), *field(&p, worker_counters[k]));
    d->local_queue = c.local_queue;
}

static void counters_delta(const vega_rt_counters *prev, const vega_rt_counters *cur,
                           vega_rt_counters *delta)
{
    /* by value first: delta may be prev or cur */
    uint64_t at = minus(cur->at_ns, prev->at_ns),
             jobs = minus(cur->blocking_jobs, prev->blocking_jobs);
    uint64_t live = cur->live_tasks;
    unsigned workers = cur->workers;
    unsigned n = workers < VEGA_RT_COUNTERS_WORKERS ? workers : VEGA_RT_COUNTERS_WORKERS;
    worker_delta(&prev->sum, &cur->sum, &delta->sum);
    for (unsigned i = 0; i < n; i++)
        worker_delta(&prev->worker[i], &cur->worker[i], &delta->worker[i]);
    for (unsigned i = n; i < VEGA_RT_COUNTERS_WORKERS; i++)
        memset(&delta->worker[i], 0, sizeof delta->worker[i]);
    delta->at_ns = at;
    delta->blocking_jobs = jobs;
    delta->live_tasks = live;
    delta->workers = workers;
}

int vega_rt_counters_delta_versioned(const vega_rt_counters *prev, const vega_rt_counters *cur,
                                     vega_rt_counters *delta, int counters_version)
{
    if (!prev || !cur || !delta || !counters_layout_known(counters_version))
        return -EINVAL;
    counters_delta(prev, cur, delta);
    return 0;
}

static void metrics_sample(const vega_rt *rt, vega_rt_counters *prev, vega_rt_counters *delta)
{
    vega_rt_counters cur;
    counters_read(rt, &cur);
    counters_delta(prev, &cur, delta);
    *prev = cur;
}

int vega_rt_metrics_sample_versioned(const vega_rt *rt, vega_rt_counters *prev,
                                     vega_rt_counters *delta, int counters_version)
{
    if (!rt || !prev || !delta || !counters_layout_known(counters_version))
        return -EINVAL;
    metrics_sample(rt, prev, delta);
    return 0;
}

struct sampler {
    uint64_t every_ns;
    vega_rt_sample_fn fn;
    void *user;
    vega_rt_counters prev, delta;
};

static void *sampler_task(void *arg)
{
    struct sampler *s = arg;
    const vega_rt *rt = vega_rt_current();
    counters_read(rt, &s->prev);
    vega_deadline next = s->prev.at_ns;
    for (;;) {
        next += s->every_ns;
        int r = vega_sleep_until(next);
        metrics_sample(rt, &s->prev, &s->delta);
        s->fn(s->user, &s->delta);
        if (r == -ECANCELED)
            break; /* that was the last, partial interval: the deltas add up to the whole */
        /* a tick missed (a slow fn, a busy worker): the next one on the schedule still ahead */
        uint64_t now = vega_now();
        if (next + s->every_ns <= now)
            next += (now - next) / s->every_ns * s->every_ns;
    }
    free(s);
    return NULL;
}

int vega_rt_metrics_sampler_spawn_versioned(vega_task **out, uint64_t every_ms,
                                            vega_rt_sample_fn fn, void *user, int counters_version)
{
    if (!out || !fn || !every_ms || every_ms > UINT64_MAX / VEGA_NS_PER_MS ||
        !counters_layout_known(counters_version))
        return -EINVAL;
    struct sampler *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->every_ns = every_ms * VEGA_NS_PER_MS;
    s->fn = fn;
    s->user = user;
    int r = vega_task_spawn(out, sampler_task, s);
    if (r < 0)
        free(s);
    return r;
}

int vega_rt_metrics_prometheus(const vega_rt *rt, FILE *out)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } counters[] = {
#define C(f, h) {#f, h, offsetof(vega_worker_metrics, f)}
        C(spawned, "Tasks spawned from this worker."),
        C(polls, "Task resumptions."),
        C(steals, "Tasks stolen from other workers."),
        C(steal_ops, "Successful steal operations."),
        C(parks, "Times the worker parked in the driver."),
        C(unparks, "Times the worker was woken by another thread."),
        C(injects, "Tasks taken from the global inject queue."),
        C(budget_yields, "Yields forced by an empty cooperative budget."),
        C(lifo_hits, "Tasks run from the LIFO slot."),
        C(overflows, "Tasks moved to the inject queue by a full local queue."),
        C(timers_fired, "Timers fired."),
        C(io_ops, "I/O operations submitted to the driver."),
        C(io_completions, "Completions the driver delivered."),
#undef C
    };
    vega_rt_metrics rm;
    get_metrics(rt, &rm);
    if (fprintf(
            out,
            "# HELP vega_rt_workers Worker threads.\n# TYPE vega_rt_workers gauge\n"
            "vega_rt_workers %u\n"
            "# HELP vega_rt_live_tasks Tasks spawned and not yet returned.\n"
            "# TYPE vega_rt_live_tasks gauge\nvega_rt_live_tasks %" PRIu64 "\n"
            "# HELP vega_rt_inject_queue_depth Tasks in the global inject queue.\n"
            "# TYPE vega_rt_inject_queue_depth gauge\nvega_rt_inject_queue_depth %" PRIu64 "\n"
            "# HELP vega_rt_blocking_threads Blocking pool threads.\n"
            "# TYPE vega_rt_blocking_threads gauge\nvega_rt_blocking_threads %" PRIu64 "\n"
            "# HELP vega_rt_blocking_queue_depth Jobs queued for the blocking pool.\n"
            "# TYPE vega_rt_blocking_queue_depth gauge\nvega_rt_blocking_queue_depth %" PRIu64 "\n"
            "# HELP vega_rt_blocking_jobs_total Jobs the blocking pool ran to their end.\n"
            "# TYPE vega_rt_blocking_jobs_total counter\nvega_rt_blocking_jobs_total %" PRIu64 "\n",
            rm.workers, rm.live_tasks, rm.inject_queue, rm.blocking_threads, rm.blocking_queue,
            rm.blocking_jobs) < 0)
        return -EIO;
    static const struct {
        const char *name, *help;
        size_t off;
    } gauges[] = {
#define G(n, f, h) {n, h, offsetof(vega_rt_metrics, f)}
        G("task_chunks", task_chunks, "Chunks of task structs mapped."),
        G("task_chunk_bytes", task_chunk_bytes, "Bytes of task struct chunks."),
        G("tasks_free_shared", tasks_free_shared, "Free task structs on the shared list."),
        G("tasks_free_cached", tasks_free_cached, "Free task structs in worker caches."),
        G("stack_regions", stack_regions, "Stack mappings."),
        G("stack_region_bytes", stack_region_bytes, "Virtual bytes of stack mappings."),
        G("stacks_cached", stacks_cached, "Free stacks in worker caches."),
        G("stacks_warm", stacks_warm, "Free stacks on the shared list, pages kept."),
        G("stacks_cold", stacks_cold, "Free stacks on the shared list, pages returned."),
#undef G
    };
    for (size_t g = 0; g < VEGA__ARRAY_LEN(gauges); g++) {
        uint64_t v = *(const uint64_t *)((const char *)&rm + gauges[g].off);
        fprintf(out, "# HELP vega_rt_%s %s\n# TYPE vega_rt_%s gauge\nvega_rt_%s %" PRIu64 "\n",
                gauges[g].name, gauges[g].help, gauges[g].name, gauges[g].name, v);
    }
    for (size_t c = 0; c < VEGA__ARRAY_LEN(counters); c++) {
        fprintf(out, "# HELP vega_worker_%s_total %s\n# TYPE vega_worker_%s_total counter\n",
                counters[c].name, counters[c].help, counters[c].name);
        for (unsigned i = 0; i < rt->nworkers; i++) {
            vega_worker_metrics m;
            get_worker(rt, i, &m);
            uint64_t v = *(const uint64_t *)((const char *)&m + counters[c].off);
            fprintf(out, "vega_worker_%s_total{worker=\"%u\"} %" PRIu64 "\n", counters[c].name, i,
                    v);
        }
    }
    fprintf(out, "# HELP vega_worker_local_queue_depth Tasks in the worker's local queue.\n"
                 "# TYPE vega_worker_local_queue_depth gauge\n");
    for (unsigned i = 0; i < rt->nworkers; i++)
        fprintf(out, "vega_worker_local_queue_depth{worker=\"%u\"} %u\n", i,
                vega__lqueue_len(&rt->workers[i].q));
    return ferror(out) ? -EIO : 0;
}

void vega_rt_dump_tasks(const vega_rt *rt, FILE *out)
{
    static const char *states[] = {"runnable", "running", "notified", "parked", "done", "new"};
    for (unsigned i = 0; i < rt->nworkers; i++) {
        struct vega__worker *w = &rt->workers[i];
        vega__spin_lock(&w->live_lock);
        for (struct vega__stack *st = w->live_head; st; st = st->live_next) {
            struct vega_task *t = __atomic_load_n(&st->task, __ATOMIC_ACQUIRE);
            unsigned s = atomic_load_explicit(&t->state, memory_order_relaxed);
            const char *reason = __atomic_load_n(&st->wait_reason, __ATOMIC_RELAXED);
            fprintf(out, "task %" PRIu64 " %-16s %-9s %s%s\n", t->id, t->name ? t->name : "-",
                    s < 6 ? states[s] : "?", reason ? "waiting on " : "", reason ? reason : "");
        }
        vega__spin_unlock(&w->live_lock);
    }
}
