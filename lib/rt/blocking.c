/* SPDX-License-Identifier: MIT */
/* The blocking pool: runs blocking functions on pool threads while the calling task is parked.
 * Bounded in threads and in queued jobs; idle threads exit after 10 s. */
#include <string.h>
#include <time.h>

#include "sched_int.h"

#define DEFAULT_THREADS 64u
#define DEFAULT_QUEUE   1024u
#define IDLE_EXIT_S     10

enum {
    JOB_QUEUED,
    JOB_RUNNING,
    JOB_DONE
};

struct vega__job {
    struct vega__job *next, *prev;
    vega_blocking_fn fn;
    void *arg;
    void *result;
    struct vega_task *task;
    int state; /* guarded by pool_mu */
};

void vega__blocking_init(struct vega_rt *rt)
{
    pthread_mutex_init(&rt->pool_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->pool_cv, &ca);
    pthread_cond_init(&rt->pool_exit_cv, &ca);
    pthread_condattr_destroy(&ca);
    rt->pool_head = rt->pool_tail = NULL;
    rt->pool_threads = rt->pool_idle = rt->pool_queued = 0;
    atomic_init(&rt->pool_inflight, 0);
    rt->pool_stop = false;
}

void vega__blocking_fini(struct vega_rt *rt)
{
    pthread_mutex_lock(&rt->pool_mu);
    rt->pool_stop = true;
    pthread_cond_broadcast(&rt->pool_cv);
    while (rt->pool_threads)
        pthread_cond_wait(&rt->pool_exit_cv, &rt->pool_mu);
    pthread_mutex_unlock(&rt->pool_mu);
    pthread_cond_destroy(&rt->pool_cv);
    pthread_cond_destroy(&rt->pool_exit_cv);
    pthread_mutex_destroy(&rt->pool_mu);
}

static void unlink_job(struct vega_rt *rt, struct vega__job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        rt->pool_head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        rt->pool_tail = j->prev;
    rt->pool_queued--;
}

static void *pool_thread(void *arg)
{
    struct vega_rt *rt = arg;
    pthread_mutex_lock(&rt->pool_mu);
    for (;;) {
        while (!rt->pool_head && !rt->pool_stop) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += IDLE_EXIT_S;
            rt->pool_idle++;
            int r = pthread_cond_timedwait(&rt->pool_cv, &rt->pool_mu, &ts);
            rt->pool_idle--;
            if (r == ETIMEDOUT && !rt->pool_head)
                goto out;
        }
        if (!rt->pool_head)
            goto out; /* stopping */
        struct vega__job *j = rt->pool_head;
        unlink_job(rt, j);
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&rt->pool_mu);
        void *res = j->fn(j->arg);
        pthread_mutex_lock(&rt->pool_mu);
        j->result = res;
        j->state = JOB_DONE;
        rt->pool_jobs++;
        vega__task_wake(j->task); /* under pool_mu: the task leaves only under it */
    }
out:
    rt->pool_threads--;
    pthread_cond_broadcast(&rt->pool_exit_cv);
    pthread_mutex_unlock(&rt->pool_mu);
    return NULL;
}

static int submit(vega_blocking_fn fn, void *arg, void **result, vega_deadline dl, bool try_only)
{
    struct vega_task *t = vega__task_self();
    if (!t)
        return VEGA_ERR_NOTASK;
    struct vega_rt *rt = t->rt;
    unsigned max_threads = rt->opts.blocking_threads ? rt->opts.blocking_threads : DEFAULT_THREADS;
    unsigned max_queue = rt->opts.blocking_queue ? rt->opts.blocking_queue : DEFAULT_QUEUE;
    struct vega__job j = {.fn = fn, .arg = arg, .task = t, .state = JOB_QUEUED};

    pthread_mutex_lock(&rt->pool_mu);
    if (rt->pool_stop) {
        pthread_mutex_unlock(&rt->pool_mu);
        return VEGA_ERR_CLOSED;
    }
    bool free_thread = rt->pool_idle > rt->pool_queued;
    if (!free_thread) {
        if (rt->pool_threads < max_threads) {
            pthread_t th;
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
            int r = pthread_create(&th, &a, pool_thread, rt);
            pthread_attr_destroy(&a);
            if (r != 0) {
                pthread_mutex_unlock(&rt->pool_mu);
                return -r;
            }
            rt->pool_threads++;
        } else if (try_only || rt->pool_queued >= max_queue) {
            pthread_mutex_unlock(&rt->pool_mu);
            return VEGA_ERR_FULL;
        }
    }
    j.prev = rt->pool_tail;
    j.next = NULL;
    if (rt->pool_tail)
        rt->pool_tail->next = &j;
    else
        rt->pool_head = &j;
    rt->pool_tail = &j;
    rt->pool_queued++;
    atomic_fetch_add_explicit(&rt->pool_inflight, 1, memory_order_acq_rel);
    pthread_cond_signal(&rt->pool_cv);

    int err = 0;
    for (;;) {
        if (j.state == JOB_DONE)
            break;
        pthread_mutex_unlock(&rt->pool_mu);
        /* Once the job runs it cannot be interrupted: wait for it without limit. */
        int r =
            vega__park(err ? VEGA_DEADLINE_NEVER : dl, err ? VEGA__PARK_NOCANCEL : 0, "blocking");
        pthread_mutex_lock(&rt->pool_mu);
        if (j.state == JOB_DONE)
            break;
        if (r < 0 && !err) {
            err = r;
            if (j.state == JOB_QUEUED) {
                unlink_job(rt, &j);
                break;
            }
        }
    }
    pthread_mutex_unlock(&rt->pool_mu);
    atomic_fetch_sub_explicit(&rt->pool_inflight, 1, memory_order_acq_rel);
    if (err && j.state != JOB_DONE)
        return err;
    if (result)
        *result = j.result;
    return err;
}

int vega_blocking(vega_blocking_fn fn, void *arg, void **result, vega_deadline dl)
{
    return submit(fn, arg, result, dl, false);
}

int vega_blocking_try(vega_blocking_fn fn, void *arg, void **result, vega_deadline dl)
{
    return submit(fn, arg, result, dl, true);
}
