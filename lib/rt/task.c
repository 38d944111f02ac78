/* SPDX-License-Identifier: MIT */
/* Tasks: spawn, the switch in and out of a task, park/wake, join/detach, cancel, yield, sleep,
 * cooperative budget and deadline scopes. */
#include <string.h>

#include "sched_int.h"

#if defined(VEGA_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(VEGA_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

static __thread struct vega__worker *tls_worker;

/* Out of line and opaque to the optimizer: a task may resume on another thread, so the address
 * of the thread-local must be computed afresh after every switch. */
__attribute__((noinline)) struct vega__worker *vega__worker_self(void)
{
    struct vega__worker *w = tls_worker;
    __asm__ __volatile__("" : "+r"(w));
    return w;
}

__attribute__((noinline)) void vega__worker_set_self(struct vega__worker *w)
{
    tls_worker = w;
}

struct vega_task *vega__task_self(void)
{
    struct vega__worker *w = vega__worker_self();
    return w ? w->current : NULL;
}

vega_task *vega_task_current(void) { return vega__task_self(); }

vega_rt *vega_rt_current(void)
{
    struct vega__worker *w = vega__worker_self();
    return w ? w->rt : NULL;
}

int vega_worker_index(void)
{
    struct vega__worker *w = vega__worker_self();
    return w && w->current ? (int)w->index : -1;
}

static inline bool is_cancelled(const struct vega_task *t)
{
    return (atomic_load_explicit(&t->flags, memory_order_acquire) & VEGA__TF_CANCELLED) ||
           atomic_load_explicit(&t->rt->cancel_all, memory_order_relaxed);
}

bool vega_task_is_cancelled(void)
{
    struct vega_task *t = vega__task_self();
    return t && is_cancelled(t);
}

/* ---- switching ------------------------------------------------------------------------------ */

static void task_entry(void *arg);

/* Scheduler side: runs t until it switches back. */
void vega__switch_to_task(struct vega__worker *w, struct vega_task *t)
{
    w->current = t;
#if defined(VEGA_ASAN)
    __sanitizer_start_switch_fiber(&w->asan_fake, t->stack->base, t->stack->size);
#endif
#if defined(VEGA_TSAN)
    __tsan_switch_to_fiber(t->tsan_fiber, 0);
#endif
    vega__ctx_switch(&w->sched_sp, t->sp);
#if defined(VEGA_ASAN)
    __sanitizer_finish_switch_fiber(w->asan_fake, NULL, NULL);
#endif
    w->current = NULL;
}

/* Task side: back to the scheduler of the worker running us. Returns when resumed, possibly on
 * another worker. */
static void switch_to_sched(struct vega_task *t, bool finishing)
{
    struct vega__worker *w = vega__worker_self();
#if defined(VEGA_ASAN)
    __sanitizer_start_switch_fiber(finishing ? NULL : &t->asan_fake, w->asan_stack_bottom,
                                   w->asan_stack_size);
#endif
#if defined(VEGA_TSAN)
    __tsan_switch_to_fiber(w->tsan_fiber, 0);
#endif
    (void)finishing;
    vega__ctx_switch(&t->sp, w->sched_sp);
#if defined(VEGA_ASAN)
    w = vega__worker_self();
    __sanitizer_finish_switch_fiber(t->asan_fake, &w->asan_stack_bottom, &w->asan_stack_size);
#endif
}

static void task_entry(void *arg)
{
    struct vega_task *t = arg;
#if defined(VEGA_ASAN)
    struct vega__worker *w0 = vega__worker_self();
    __sanitizer_finish_switch_fiber(NULL, &w0->asan_stack_bottom, &w0->asan_stack_size);
#endif
    t->result = t->fn(t->arg);
    struct vega__worker *w = vega__worker_self();
    w->after = VEGA__AFTER_FINISH;
    switch_to_sched(t, true);
    VEGA_PANIC("finished task %llu was resumed", (unsigned long long)t->id);
}

/* Gives t its stack the first time it runs. */
bool vega__task_prepare(struct vega__worker *w, struct vega_task *t)
{
    if (t->stack)
        return true;
    struct vega__stack *s = vega__stack_get(w);
    if (!s)
        return false;
    t->stack = s;
    t->sp = vega__ctx_make((char *)s->base + s->size, task_entry, t);
#if defined(VEGA_TSAN)
    t->tsan_fiber = __tsan_create_fiber(0);
#endif
    return true;
}

/* ---- allocation ----------------------------------------------------------------------------- */

/* Task structs come from chunks owned by the runtime and are recycled through per-worker free
 * lists (Go keeps its g structs the same way): a spawn costs no malloc once the runtime has
 * seen its peak number of tasks. The memory goes back when the runtime is freed. */
#define TASK_CHUNK 64u

struct vega__task_chunk {
    struct vega__task_chunk *next;
    struct vega_task tasks[TASK_CHUNK];
};

static struct vega_task *task_alloc(struct vega_rt *rt, struct vega__worker *w)
{
    struct vega_task *t = w ? w->task_cache : NULL;
    if (vega__likely(t)) {
        w->task_cache = t->next;
        return t;
    }
    pthread_mutex_lock(&rt->task_mu);
    if (!rt->task_free) {
        struct vega__task_chunk *c = malloc(sizeof *c);
        if (!c) {
            pthread_mutex_unlock(&rt->task_mu);
            return NULL;
        }
        c->next = rt->task_chunks;
        rt->task_chunks = c;
        for (unsigned i = 0; i < TASK_CHUNK; i++) {
            c->tasks[i].next = rt->task_free;
            rt->task_free = &c->tasks[i];
        }
    }
    t = rt->task_free;
    rt->task_free = t->next;
    if (w) {
        /* Take the rest of the global list's head with us (up to a chunk's worth). */
        for (unsigned i = 1; i < TASK_CHUNK && rt->task_free; i++) {
            struct vega_task *x = rt->task_free;
            rt->task_free = x->next;
            x->next = w->task_cache;
            w->task_cache = x;
        }
    }
    pthread_mutex_unlock(&rt->task_mu);
    return t;
}

void vega__task_free(struct vega__worker *w, struct vega_task *t)
{
    if (w && w->rt == t->rt) {
        t->next = w->task_cache;
        w->task_cache = t;
        return;
    }
    struct vega_rt *rt = t->rt;
    pthread_mutex_lock(&rt->task_mu);
    t->next = rt->task_free;
    rt->task_free = t;
    pthread_mutex_unlock(&rt->task_mu);
}

void vega__task_chunks_free(struct vega_rt *rt)
{
    struct vega__task_chunk *c = rt->task_chunks;
    while (c) {
        struct vega__task_chunk *next = c->next;
        free(c);
        c = next;
    }
    rt->task_chunks = NULL;
    rt->task_free = NULL;
}

static void live_add(struct vega__worker *w, struct vega_task *t)
{
    vega__spin_lock(&w->live_lock);
    t->live_owner = w;
    t->live_prev = NULL;
    t->live_next = w->live_head;
    if (w->live_head)
        w->live_head->live_prev = t;
    w->live_head = t;
    vega__spin_unlock(&w->live_lock);
}

static void live_remove(struct vega_task *t)
{
    struct vega__worker *o = t->live_owner;
    vega__spin_lock(&o->live_lock);
    if (t->live_prev)
        t->live_prev->live_next = t->live_next;
    else
        o->live_head = t->live_next;
    if (t->live_next)
        t->live_next->live_prev = t->live_prev;
    vega__spin_unlock(&o->live_lock);
}

/* Creates a task on runtime rt. w: the spawning worker (NULL from outside). */
struct vega_task *vega__task_create(struct vega_rt *rt, struct vega__worker *w, vega_task_fn fn,
                                    void *arg, const vega_spawn_options *opts, bool detached)
{
    struct vega_task *t = task_alloc(rt, w);
    if (!t)
        return NULL;
    t->sp = NULL;
    atomic_init(&t->state, VEGA__T_RUNNABLE);
    atomic_init(&t->flags, 0);
    t->next = NULL;
    t->rt = rt;
    t->stack = NULL;
    t->fn = fn;
    t->arg = arg;
    t->result = NULL;
    t->deadline = opts && opts->deadline ? opts->deadline : VEGA_DEADLINE_NEVER;
    memset(&t->timer, 0, sizeof t->timer);
    t->timer.task = t;
    vega__spin_init(&t->lock);
    t->finished = false;
    t->detached = detached;
    t->joiner = NULL;
    t->tjoiner = NULL;
    t->group = NULL;
    t->group_next = t->group_prev = NULL;
    t->wait_reason = NULL;
    t->name[0] = 0;
    if (opts && opts->name) {
        strncpy(t->name, opts->name, sizeof t->name - 1);
        t->name[sizeof t->name - 1] = 0;
    }
    struct vega__worker *owner = w ? w : &rt->workers[0];
    if (w) {
        t->id = ((uint64_t)(w->index + 1) << 40) | ++w->next_id;
    } else {
        t->id = atomic_fetch_add_explicit(&rt->next_id, 1, memory_order_relaxed) + 1;
    }
#if defined(VEGA_ASAN)
    t->asan_fake = NULL;
#endif
#if defined(VEGA_TSAN)
    t->tsan_fiber = NULL;
#endif
    atomic_fetch_add_explicit(&rt->live, 1, memory_order_relaxed);
    live_add(owner, t);
    if (w)
        atomic_store_explicit(&w->m.spawned,
                              atomic_load_explicit(&w->m.spawned, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    return t;
}

int vega_task_spawn_ex(vega_task **out, vega_task_fn fn, void *arg, const vega_spawn_options *opts)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_task *t = vega__task_create(w->rt, w, fn, arg, opts, out == NULL);
    if (!t)
        return -ENOMEM;
    if (out)
        *out = t;
    vega__schedule(w->rt, t, false);
    return 0;
}

int vega_task_spawn(vega_task **out, vega_task_fn fn, void *arg)
{
    return vega_task_spawn_ex(out, fn, arg, NULL);
}

int vega_rt_spawn(vega_rt *rt, vega_task **out, vega_task_fn fn, void *arg)
{
    struct vega__worker *w = vega__worker_self();
    if (w && w->rt != rt)
        w = NULL;
    if (w && !w->current)
        w = NULL;
    struct vega_task *t = vega__task_create(rt, w, fn, arg, NULL, out == NULL);
    if (!t)
        return -ENOMEM;
    if (out)
        *out = t;
    vega__schedule(rt, t, false);
    return 0;
}

/* ---- park / wake ---------------------------------------------------------------------------- */

vega_deadline vega__deadline_eff(vega_deadline dl)
{
    struct vega_task *t = vega__task_self();
    if (t && t->deadline < dl)
        return t->deadline;
    return dl;
}

int vega__park(vega_deadline dl, unsigned flags, const char *reason)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_task *t = w->current;
    bool cancellable = !(flags & VEGA__PARK_NOCANCEL);
    if (cancellable && is_cancelled(t))
        return -ECANCELED;
    vega_deadline eff = dl;
    if (cancellable && t->deadline < eff)
        eff = t->deadline;
    if (eff != VEGA_DEADLINE_NEVER) {
        struct vega_rt *rt = t->rt;
        uint64_t now = vega__rt_now_ns(rt);
        if (eff <= now)
            return -ETIMEDOUT;
        vega__wheel_insert(&w->wheel, &t->timer, vega__ns_to_ms_ceil(rt, eff));
    }
    t->wait_reason = reason;
    w->after = VEGA__AFTER_PARK;
    switch_to_sched(t, false);
    t->wait_reason = NULL;
    bool timed = false;
    if (eff != VEGA_DEADLINE_NEVER) {
        vega__wheel_remove(&t->timer);
        timed = t->timer.fired;
        t->timer.fired = false;
    }
    if (cancellable && is_cancelled(t))
        return -ECANCELED;
    return timed ? -ETIMEDOUT : 0;
}

void vega__task_wake(struct vega_task *t)
{
    unsigned s = atomic_load_explicit(&t->state, memory_order_acquire);
    for (;;) {
        if (s == VEGA__T_PARKED) {
            if (atomic_compare_exchange_weak_explicit(&t->state, &s, VEGA__T_RUNNABLE,
                                                      memory_order_acq_rel, memory_order_acquire)) {
                vega__schedule(t->rt, t, false);
                return;
            }
        } else if (s == VEGA__T_RUNNING) {
            if (atomic_compare_exchange_weak_explicit(&t->state, &s, VEGA__T_NOTIFIED,
                                                      memory_order_acq_rel, memory_order_acquire))
                return;
        } else {
            return;
        }
    }
}

/* ---- yield, budget, sleep, deadlines -------------------------------------------------------- */

int vega_yield(void)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_task *t = w->current;
    w->after = VEGA__AFTER_YIELD;
    switch_to_sched(t, false);
    return is_cancelled(t) ? -ECANCELED : 0;
}

int vega_coop(void)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return 0;
    if (vega__likely(--w->budget > 0))
        return 0;
    atomic_store_explicit(&w->m.budget_yields,
                          atomic_load_explicit(&w->m.budget_yields, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return vega_yield();
}

int vega_sleep_until(vega_deadline dl)
{
    for (;;) {
        int r = vega__park(dl, 0, "sleep");
        if (r == -ETIMEDOUT)
            return vega_now() >= dl ? 0 : -ETIMEDOUT; /* the scope's deadline came first */
        if (r < 0)
            return r;
    }
}

int vega_sleep_ns(uint64_t ns) { return vega_sleep_until(vega_deadline_in_ns(ns)); }

int vega_sleep_ms(uint64_t ms) { return vega_sleep_until(vega_deadline_in_ms(ms)); }

vega_deadline vega_deadline_push(vega_deadline dl)
{
    struct vega_task *t = vega__task_self();
    if (!t)
        return VEGA_DEADLINE_NEVER;
    vega_deadline saved = t->deadline;
    if (dl < t->deadline)
        t->deadline = dl;
    return saved;
}

void vega_deadline_pop(vega_deadline saved)
{
    struct vega_task *t = vega__task_self();
    if (t)
        t->deadline = saved;
}

/* ---- finish, join, detach, cancel ------------------------------------------------------------ */

struct vega__thread_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

void vega__task_finish(struct vega__worker *w, struct vega_task *t)
{
    struct vega_rt *rt = t->rt;
    vega__stack_put(w, t->stack);
    t->stack = NULL;
#if defined(VEGA_TSAN)
    __tsan_destroy_fiber(t->tsan_fiber);
    t->tsan_fiber = NULL;
#endif
    live_remove(t);
    if (t->group)
        vega__group_member_done(t);
    atomic_store_explicit(&t->state, VEGA__T_DONE, memory_order_release);

    vega__spin_lock(&t->lock);
    t->finished = true;
    if (t->joiner)
        vega__task_wake(t->joiner);
    if (t->tjoiner) {
        struct vega__thread_waiter *tw = t->tjoiner;
        pthread_mutex_lock(&tw->mu);
        tw->done = true;
        pthread_cond_signal(&tw->cv);
        pthread_mutex_unlock(&tw->mu);
    }
    bool detached = t->detached;
    vega__spin_unlock(&t->lock);
    if (detached)
        vega__task_free(w, t);
    if (atomic_fetch_sub_explicit(&rt->live, 1, memory_order_acq_rel) == 1 &&
        atomic_load_explicit(&rt->shutdown, memory_order_acquire)) {
        for (unsigned i = 0; i < rt->nworkers; i++)
            rt->driver->unpark(&rt->workers[i]);
    }
}

static int join_from_thread(struct vega_task *t, vega_deadline dl)
{
    struct vega__thread_waiter tw;
    pthread_mutex_init(&tw.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&tw.cv, &ca);
    pthread_condattr_destroy(&ca);
    tw.done = false;
    int r = 0;
    vega__spin_lock(&t->lock);
    if (!t->finished) {
        t->tjoiner = &tw;
        vega__spin_unlock(&t->lock);
        pthread_mutex_lock(&tw.mu);
        while (!tw.done && r == 0) {
            if (dl == VEGA_DEADLINE_NEVER) {
                pthread_cond_wait(&tw.cv, &tw.mu);
            } else {
                struct timespec ts = {(time_t)(dl / VEGA_NS_PER_S), (long)(dl % VEGA_NS_PER_S)};
                if (pthread_cond_timedwait(&tw.cv, &tw.mu, &ts) == ETIMEDOUT && !tw.done)
                    r = -ETIMEDOUT;
            }
        }
        pthread_mutex_unlock(&tw.mu);
        vega__spin_lock(&t->lock);
        t->tjoiner = NULL;
        if (t->finished)
            r = 0;
    }
    vega__spin_unlock(&t->lock);
    pthread_cond_destroy(&tw.cv);
    pthread_mutex_destroy(&tw.mu);
    return r;
}

int vega_task_join(vega_task *t, void **result, vega_deadline dl)
{
    struct vega_task *cur = vega__task_self();
    if (cur == t)
        return -EDEADLK;
    if (!cur || cur->rt != t->rt) {
        int r = join_from_thread(t, dl);
        if (r < 0)
            return r;
    } else {
        vega__spin_lock(&t->lock);
        if (!t->finished) {
            t->joiner = cur;
            for (;;) {
                vega__spin_unlock(&t->lock);
                int r = vega__park(dl, 0, "join");
                vega__spin_lock(&t->lock);
                if (t->finished)
                    break;
                if (r < 0) {
                    t->joiner = NULL;
                    vega__spin_unlock(&t->lock);
                    return r;
                }
            }
        }
        vega__spin_unlock(&t->lock);
    }
    if (result)
        *result = t->result;
    vega__task_free(vega__worker_self(), t);
    return 0;
}

void vega_task_detach(vega_task *t)
{
    vega__spin_lock(&t->lock);
    bool finished = t->finished;
    t->detached = true;
    vega__spin_unlock(&t->lock);
    if (finished)
        vega__task_free(vega__worker_self(), t);
}

void vega_task_cancel(vega_task *t)
{
    atomic_fetch_or_explicit(&t->flags, VEGA__TF_CANCELLED, memory_order_acq_rel);
    vega__task_wake(t);
}

bool vega_task_is_finished(const vega_task *t)
{
    return atomic_load_explicit(&t->state, memory_order_acquire) == VEGA__T_DONE;
}
