/* SPDX-License-Identifier: MIT */
/* Tasks: spawn, the switch in and out of a task, park/wake, join/detach, cancel, yield, sleep,
 * cooperative budget and deadline scopes. */
#include <string.h>
#include <sys/mman.h>

#if defined(VEGA_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#include "sched_int.h"


__thread struct vega__worker *vega__tls_worker __attribute__((tls_model("initial-exec")));

/* Out of line and opaque to the optimizer: a task may resume on another thread, so the address
 * of the thread-local must be computed afresh after every switch. */
__attribute__((noinline)) struct vega__worker *vega__worker_self_slow(void)
{
    struct vega__worker *w = vega__tls_worker;
    __asm__ __volatile__("" : "+r"(w));
    return w;
}

__attribute__((noinline)) void vega__worker_set_self(struct vega__worker *w)
{
    vega__tls_worker = w;
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

/* ---- allocation ----------------------------------------------------------------------------- */

/* Task structs come from chunks owned by the runtime and are recycled through per-worker free
 * lists (Go keeps its g structs the same way): a spawn costs no malloc once the runtime has
 * seen its peak number of tasks. The memory goes back when the runtime is freed. */
#define TASK_CHUNK 1169u /* (128 KiB - header) / 112 bytes: one mmap per chunk */

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
        /* Pre-faulted in one go: a fault per page would cost more than the zeroing. */
        struct vega__task_chunk *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (c == MAP_FAILED) {
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
        /* Take a batch of the global list with us. */
        for (unsigned i = 1; i < 64 && rt->task_free; i++) {
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
        munmap(c, sizeof *c);
        c = next;
    }
    rt->task_chunks = NULL;
    rt->task_free = NULL;
}

void vega__live_add(struct vega__worker *w, struct vega_task *t)
{
    struct vega__stack *s = t->stack;
    s->live_owner = w;
    s->live_prev = NULL;
    bool locked = w->rt->nworkers > 1; /* one worker: only its thread touches the list */
    if (locked)
        vega__spin_lock(&w->live_lock);
    s->live_next = w->live_head;
    if (w->live_head)
        w->live_head->live_prev = s;
    w->live_head = s;
    if (locked)
        vega__spin_unlock(&w->live_lock);
}

static void live_remove(struct vega__stack *s)
{
    struct vega__worker *o = s->live_owner;
    bool locked = o->rt->nworkers > 1;
    if (locked)
        vega__spin_lock(&o->live_lock);
    if (s->live_prev)
        s->live_prev->live_next = s->live_next;
    else
        o->live_head = s->live_next;
    if (s->live_next)
        s->live_next->live_prev = s->live_prev;
    if (locked)
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
    /* Plain atomic stores: a stale waker may still read a recycled struct (see task.c's join
     * notes), which is harmless but must not be a data race. */
    atomic_store_explicit(&t->state, VEGA__T_RUNNABLE, memory_order_relaxed);
    atomic_store_explicit(&t->flags, 0, memory_order_relaxed);
    t->next = NULL;
    t->rt = rt;
    t->stack = NULL;
    t->fn = fn;
    t->arg_result = arg;
    t->deadline = opts && opts->deadline ? opts->deadline : VEGA_DEADLINE_NEVER;
    atomic_store_explicit(&t->jstate, detached ? VEGA__J_DETACHED : 0, memory_order_relaxed);
    t->joiner = NULL;
    t->group = NULL;
    t->name = opts ? opts->name : NULL;
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
    if (w)
        atomic_store_explicit(&w->spawned_here,
                              atomic_load_explicit(&w->spawned_here, memory_order_relaxed) + 1,
                              memory_order_release);
    else
        atomic_fetch_add_explicit(&rt->foreign_spawned, 1, memory_order_acq_rel);
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
    /* The timer entry lives in this frame: the stack stays put while the task is parked. */
    struct vega__timer tm;
    if (eff != VEGA_DEADLINE_NEVER) {
        struct vega_rt *rt = t->rt;
        uint64_t now = vega__rt_now_ns(rt);
        if (eff <= now)
            return -ETIMEDOUT;
        tm.task = t;
        tm.wheel = NULL;
        vega__wheel_insert(&w->wheel, &tm, vega__ns_to_ms_ceil(rt, eff));
    }
    /* A task is listed (for cancel-all at shutdown and for dumps) from its first park on: one
     * that runs to completion without waiting costs no list update. */
    if (vega__unlikely(!t->stack->live_owner))
        vega__live_add(w, t);
    __atomic_store_n(&t->stack->wait_reason, reason, __ATOMIC_RELAXED);
    vega__task_switch_out(w, t, VEGA__AFTER_PARK);
    __atomic_store_n(&t->stack->wait_reason, NULL, __ATOMIC_RELAXED);
    bool timed = false;
    if (eff != VEGA_DEADLINE_NEVER) {
        vega__wheel_remove(&tm);
        timed = tm.fired;
    }
    if (cancellable && is_cancelled(t))
        return -ECANCELED;
    return timed ? -ETIMEDOUT : 0;
}

static void wake(struct vega_task *t, bool to_back)
{
    unsigned s = atomic_load_explicit(&t->state, memory_order_acquire);
    for (;;) {
        if (s == VEGA__T_PARKED) {
            if (atomic_compare_exchange_weak_explicit(&t->state, &s, VEGA__T_RUNNABLE,
                                                      memory_order_acq_rel, memory_order_acquire)) {
                vega__schedule(t->rt, t, to_back);
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

void vega__task_wake(struct vega_task *t) { wake(t, false); }

/* ---- yield, budget, sleep, deadlines -------------------------------------------------------- */

int vega_yield(void)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_task *t = w->current;
    vega__task_switch_out(w, t, VEGA__AFTER_YIELD);
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

/*
 * Join, detach and finish meet on one atomic word, jstate, with no lock:
 * - the finisher publishes VEGA__J_FINISHED with a CAS, reading `joiner` only when the JOINER
 *   bit is in the value the CAS replaced; that CAS is its last touch of the task, so a joiner
 *   that sees FINISHED may free it at once;
 * - after the CAS the finisher wakes the joiner it read. Task structs are type-stable (they are
 *   recycled within the runtime, never returned to malloc before vega_rt_free), so if that
 *   joiner has already moved on the wake is merely spurious, which every waiter tolerates. A
 *   thread waiter lives on a stack, so it does not leave before the finisher said `done`;
 * - exactly one of detach and finish sees the other's bit and frees the task.
 */
void vega__task_finish(struct vega__worker *w, struct vega_task *t)
{
    struct vega_rt *rt = t->rt;
    if (t->stack->live_owner)
        live_remove(t->stack);
    vega__stack_put(w, t->stack);
    t->stack = NULL;
#if defined(VEGA_TSAN)
    __tsan_destroy_fiber(t->tsan_fiber);
    t->tsan_fiber = NULL;
#endif
    if (t->group)
        vega__group_member_done(t);
    atomic_store_explicit(&t->state, VEGA__T_DONE, memory_order_release);
    /* Counted before a joiner can see it finished, so live counts read after a join agree. */
    atomic_store_explicit(&w->finished_here,
                          atomic_load_explicit(&w->finished_here, memory_order_relaxed) + 1,
                          memory_order_release);

    unsigned s = atomic_load_explicit(&t->jstate, memory_order_acquire);
    void *joiner;
    do {
        joiner = (s & VEGA__J_JOINER) ? t->joiner : NULL;
    } while (!atomic_compare_exchange_weak_explicit(&t->jstate, &s, s | VEGA__J_FINISHED,
                                                    memory_order_acq_rel, memory_order_acquire));
    if (joiner && !(s & VEGA__J_THREAD)) {
        /* To the back of the queue, not the LIFO slot: a task joining many others then finds
         * most of them finished when it runs, instead of waking once per task. */
        wake(joiner, true);
    } else if (joiner) {
        struct vega__thread_waiter *tw = joiner;
        pthread_mutex_lock(&tw->mu);
        tw->done = true;
        pthread_cond_signal(&tw->cv);
        pthread_mutex_unlock(&tw->mu);
    }
    if (s & VEGA__J_DETACHED)
        vega__task_free(w, t);
    if (vega__unlikely(atomic_load_explicit(&rt->shutdown, memory_order_acquire)) &&
        vega__rt_live(rt) == 0) {
        for (unsigned i = 0; i < rt->nworkers; i++)
            rt->driver->unpark(&rt->workers[i]);
    }
}

/* Registers `who` as t's joiner. Returns false when t already finished. */
static bool register_joiner(struct vega_task *t, void *who, unsigned bits)
{
    unsigned s = atomic_load_explicit(&t->jstate, memory_order_acquire);
    for (;;) {
        if (s & VEGA__J_FINISHED)
            return false;
        t->joiner = who;
        if (atomic_compare_exchange_weak_explicit(&t->jstate, &s, s | bits, memory_order_acq_rel,
                                                  memory_order_acquire))
            return true;
    }
}

/* Withdraws the joiner after a timeout. Returns false when t finished meanwhile (the finisher
 * then owns the wake-up and the join has succeeded after all). */
static bool unregister_joiner(struct vega_task *t)
{
    unsigned s = atomic_load_explicit(&t->jstate, memory_order_acquire);
    for (;;) {
        if (s & VEGA__J_FINISHED)
            return false;
        if (atomic_compare_exchange_weak_explicit(&t->jstate, &s,
                                                  s & ~(VEGA__J_JOINER | VEGA__J_THREAD),
                                                  memory_order_acq_rel, memory_order_acquire))
            return true;
    }
}

static bool finished(const struct vega_task *t)
{
    return atomic_load_explicit(&((struct vega_task *)t)->jstate, memory_order_acquire) &
           VEGA__J_FINISHED;
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
    if (register_joiner(t, &tw, VEGA__J_JOINER | VEGA__J_THREAD)) {
        pthread_mutex_lock(&tw.mu);
        while (!tw.done) {
            if (r == 0 && dl != VEGA_DEADLINE_NEVER) {
                struct timespec ts = {(time_t)(dl / VEGA_NS_PER_S), (long)(dl % VEGA_NS_PER_S)};
                if (pthread_cond_timedwait(&tw.cv, &tw.mu, &ts) == ETIMEDOUT && !tw.done) {
                    pthread_mutex_unlock(&tw.mu);
                    if (unregister_joiner(t)) {
                        r = -ETIMEDOUT;
                        pthread_mutex_lock(&tw.mu);
                        break;
                    }
                    /* Finished meanwhile: the finisher will say done; wait for it. */
                    pthread_mutex_lock(&tw.mu);
                    dl = VEGA_DEADLINE_NEVER;
                }
            } else {
                pthread_cond_wait(&tw.cv, &tw.mu);
            }
        }
        pthread_mutex_unlock(&tw.mu);
    }
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
    } else if (!finished(t) && register_joiner(t, cur, VEGA__J_JOINER)) {
        for (;;) {
            int r = vega__park(dl, 0, "join");
            if (finished(t))
                break;
            if (r < 0) {
                if (unregister_joiner(t))
                    return r;
                break; /* finished meanwhile */
            }
        }
    }
    if (result)
        *result = t->arg_result;
    vega__task_free(vega__worker_self(), t);
    return 0;
}

void vega_task_detach(vega_task *t)
{
    unsigned s = atomic_fetch_or_explicit(&t->jstate, VEGA__J_DETACHED, memory_order_acq_rel);
    if (s & VEGA__J_FINISHED)
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
