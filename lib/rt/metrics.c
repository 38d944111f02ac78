/* SPDX-License-Identifier: MIT */
/* Runtime metrics: per-worker counters, Prometheus text export, and a task dump. */
#include <inttypes.h>

#include "sched_int.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

void vega_rt_get_metrics(const vega_rt *rt, vega_rt_metrics *m)
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
}

int vega_rt_get_worker_metrics(const vega_rt *rt, unsigned i, vega_worker_metrics *m)
{
    if (i >= rt->nworkers)
        return -EINVAL;
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
    return 0;
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
#undef C
    };
    vega_rt_metrics rm;
    vega_rt_get_metrics(rt, &rm);
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
            "# TYPE vega_rt_blocking_queue_depth gauge\nvega_rt_blocking_queue_depth %" PRIu64 "\n",
            rm.workers, rm.live_tasks, rm.inject_queue, rm.blocking_threads, rm.blocking_queue) < 0)
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
            vega_rt_get_worker_metrics(rt, i, &m);
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
