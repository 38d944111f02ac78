/* SPDX-License-Identifier: MIT */
/* The scheduler: workers with local run queues, a LIFO slot, stealing, the global inject queue,
 * parking in the I/O driver, and the runtime's life cycle (new, block_on, free). */
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#if defined(VEGA_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(VEGA_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#include "sched_int.h"

/* ---- clock ---------------------------------------------------------------------------------- */

uint64_t vega__rt_now_ns(const struct vega_rt *rt)
{
    if (rt->paused)
        return atomic_load_explicit(&((struct vega_rt *)rt)->mock_now, memory_order_acquire);
    return vega__clock_mono();
}

vega_tstamp vega_now(void)
{
    struct vega__worker *w = vega__worker_self();
    if (w && w->rt->paused)
        return vega__rt_now_ns(w->rt);
    return vega__clock_mono();
}

vega_deadline vega_deadline_in_ns(uint64_t ns)
{
    return vega__sat_add(vega_now(), ns);
}

vega_deadline vega_deadline_in_ms(uint64_t ms)
{
    if (ms > UINT64_MAX / VEGA_NS_PER_MS)
        return VEGA_DEADLINE_NEVER;
    return vega__sat_add(vega_now(), ms * VEGA_NS_PER_MS);
}

/* ---- metrics helpers ------------------------------------------------------------------------ */

static inline void bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* ---- live count ------------------------------------------------------------------------------
 * Each worker counts the tasks spawned and finished on it with plain owner-only stores. Reading
 * every finished counter first and every spawned counter after a fence gives F <= finished(A)
 * and S >= spawned(A) for the instant A between the two phases, so S == F proves no task was
 * live at A; with none live, none can spawn another (foreign spawns after shutdown are a
 * misuse). A non-zero answer may be stale, which only delays shutdown by a loop. */

uint64_t vega__rt_live(struct vega_rt *rt)
{
    uint64_t f = 0, sp = 0;
    for (unsigned i = 0; i < rt->nworkers; i++)
        f += atomic_load_explicit(&rt->workers[i].finished_here, memory_order_acquire);
    atomic_thread_fence(memory_order_seq_cst);
    for (unsigned i = 0; i < rt->nworkers; i++)
        sp += atomic_load_explicit(&rt->workers[i].spawned_here, memory_order_acquire);
    sp += atomic_load_explicit(&rt->foreign_spawned, memory_order_acquire);
    return sp > f ? sp - f : 0;
}

/* ---- idle workers --------------------------------------------------------------------------- */

/* Wakes one parked worker if nobody is searching for work already. */
void vega__notify_parked(struct vega_rt *rt)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&rt->num_searching, memory_order_relaxed) != 0 ||
        atomic_load_explicit(&rt->num_idle, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&rt->idle_mu);
    struct vega__worker *w = NULL;
    if (rt->nidle_list && atomic_load_explicit(&rt->num_searching, memory_order_relaxed) == 0) {
        w = &rt->workers[rt->idle_stack[--rt->nidle_list]];
        w->idle = false;
        w->handoff_search = true; /* it wakes up as a searcher (counted now) */
        atomic_fetch_sub_explicit(&rt->num_idle, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&rt->num_searching, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&rt->idle_mu);
    if (w) {
        bump(&w->m.unparks, 1);
        rt->driver->unpark(w);
    }
}

static void wake_all(struct vega_rt *rt)
{
    for (unsigned i = 0; i < rt->nworkers; i++)
        rt->driver->unpark(&rt->workers[i]);
}

/* ---- scheduling ----------------------------------------------------------------------------- */

void vega__schedule(struct vega_rt *rt, struct vega_task *t, bool yielded)
{
    struct vega__worker *w = vega__worker_self();
    if (w && w->rt == rt && w->current) {
        bool notify;
        if (yielded || !w->lifo_enabled) {
            vega__lqueue_push(w, t);
            notify = true;
        } else {
            struct vega_task *prev = w->lifo;
            w->lifo = t;
            notify = prev != NULL;
            if (prev)
                vega__lqueue_push(w, prev);
        }
        if (notify && rt->nworkers > 1)
            vega__notify_parked(rt);
        return;
    }
    if (w && w->rt == rt) {
        /* The scheduler itself (timers, driver completions): local queue. */
        vega__lqueue_push(w, t);
        if (rt->nworkers > 1)
            vega__notify_parked(rt);
        return;
    }
    vega__inject_push(&rt->inject, &t, 1);
    vega__notify_parked(rt);
}

/*
 * Takes a popped queue entry for running. False when the entry is stale: its task was claimed
 * by a joiner before it ever ran and runs (or ran) inline on the joiner's stack (task.c,
 * "work-first join"); the entry is then let go. The entries pointing at a struct number one
 * while its task is NEW or RUNNABLE (none otherwise) plus its `stale` count, pushes still to
 * come included; so an entry whose task is in neither state is a stale one, and when a stale
 * and a live entry point at a runnable task either may run it (the other becomes the stale
 * one). Entries are interchangeable because the count is the struct's: a stale entry may even
 * run the next task made in the same struct.
 */
static inline bool take_entry(struct vega_task *t)
{
    unsigned s = atomic_load_explicit(&t->state, memory_order_acquire);
    /* Only a NEW task is ever claimed: a RUNNABLE one with no stale entry has the one entry. */
    if (vega__likely(s == VEGA__T_RUNNABLE) &&
        atomic_load_explicit(&t->stale, memory_order_acquire) == 0)
        return true;
    /* NEW: races a joiner's claim; RUNNABLE with a stale entry about: races the other entry. */
    if ((s == VEGA__T_NEW || s == VEGA__T_RUNNABLE) &&
        atomic_compare_exchange_strong_explicit(&t->state, &s, VEGA__T_RUNNING,
                                                memory_order_acq_rel, memory_order_acquire))
        return true;
    if (vega__unlikely(atomic_fetch_sub_explicit(&t->stale, 1, memory_order_acq_rel) == 0))
        VEGA_PANIC("run queue entry of task %llu counted nowhere", (unsigned long long)t->id);
    return false;
}

static struct vega_task *next_entry(struct vega__worker *w);

static struct vega_task *next_task(struct vega__worker *w)
{
    struct vega_task *t;
    /* Bounded: each stale entry is dropped once. */
    while ((t = next_entry(w)) && !take_entry(t)) {
    }
    return t;
}

static struct vega_task *next_entry(struct vega__worker *w)
{
    struct vega_rt *rt = w->rt;
    if (w->lifo) {
        struct vega_task *t = w->lifo;
        w->lifo = NULL;
        if (w->lifo_streak < VEGA__LIFO_MAX) {
            w->lifo_streak++;
            bump(&w->m.lifo_hits, 1);
            return t;
        }
        vega__lqueue_push(w, t);
    }
    w->lifo_streak = 0;
    struct vega_task *t;
    if (w->tick % VEGA__INJECT_INTERVAL == 0 && (t = vega__inject_pop(&rt->inject))) {
        bump(&w->m.injects, 1);
        return t;
    }
    if (rt->opts.seeded) {
        uint32_t n = vega__lqueue_len(&w->q);
        if (n)
            return vega__lqueue_take_at(&w->q, vega__rand_below(&w->rng, n));
    } else if ((t = vega__lqueue_pop(&w->q))) {
        return t;
    }
    if ((t = vega__inject_pop_batch(w, rt->opts.seeded ? UINT32_MAX : rt->nworkers))) {
        bump(&w->m.injects, 1);
        return t;
    }
    return NULL;
}

static void leave_searching(struct vega__worker *w)
{
    if (!w->searching)
        return;
    w->searching = false;
    if (atomic_fetch_sub_explicit(&w->rt->num_searching, 1, memory_order_acq_rel) == 1) {
        /* The last searcher found work: there may be more; wake the next one (Tokio's chain). */
        vega__notify_parked(w->rt);
    }
}

static struct vega_task *steal_work(struct vega__worker *w)
{
    struct vega_rt *rt = w->rt;
    unsigned n = rt->nworkers;
    if (n == 1)
        return NULL;
    if (!w->searching) {
        unsigned s = atomic_load_explicit(&rt->num_searching, memory_order_relaxed);
        if (2 * s >= n)
            return NULL;
        atomic_fetch_add_explicit(&rt->num_searching, 1, memory_order_acq_rel);
        w->searching = true;
    }
    unsigned start = vega__rand_below(&w->rng, n);
    for (unsigned i = 0; i < n; i++) {
        unsigned v = (start + i) % n;
        if (v == w->index)
            continue;
        unsigned stolen = 0;
        struct vega_task *t = vega__lqueue_steal(&rt->workers[v].q, &w->q, &stolen);
        if (t) {
            bump(&w->m.steals, stolen);
            bump(&w->m.steal_ops, 1);
            return t;
        }
    }
    struct vega_task *t = vega__inject_pop(&rt->inject);
    if (t)
        bump(&w->m.injects, 1);
    return t;
}

static bool work_pending(struct vega_rt *rt)
{
    if (vega__inject_len(&rt->inject))
        return true;
    for (unsigned i = 0; i < rt->nworkers; i++)
        if (vega__lqueue_len(&rt->workers[i].q))
            return true;
    return false;
}

static void fire_timers(struct vega__worker *w)
{
    struct vega_rt *rt = w->rt;
    if (vega__wheel_next(&w->wheel) == UINT64_MAX)
        return;
    size_t n = vega__wheel_advance(&w->wheel, vega__ms_floor(rt, vega__rt_now_ns(rt)));
    if (n)
        bump(&w->m.timers_fired, n);
}

static void maintenance(struct vega__worker *w)
{
    w->rt->driver->park(w, 0);
    vega__worker_process_cancels(w);
    vega__watch_process_closes(w);
    fire_timers(w);
    vega__stack_decay(w->rt);
}

/* No work found: park in the driver until a wake-up, an I/O event or the next timer. */
static void park_worker(struct vega__worker *w)
{
    struct vega_rt *rt = w->rt;
    pthread_mutex_lock(&rt->idle_mu);
    rt->idle_stack[rt->nidle_list++] = w->index;
    w->idle = true;
    atomic_fetch_add_explicit(&rt->num_idle, 1, memory_order_relaxed);
    pthread_mutex_unlock(&rt->idle_mu);
    if (w->searching) {
        w->searching = false;
        atomic_fetch_sub_explicit(&rt->num_searching, 1, memory_order_acq_rel);
    }
    atomic_thread_fence(memory_order_seq_cst);

    bool skip = work_pending(rt) || (atomic_load_explicit(&rt->shutdown, memory_order_acquire) &&
                                     vega__rt_live(rt) == 0);
    if (!skip && rt->paused) {
        /* Paused clock: before time jumps, take what the kernel has already finished (a
         * loopback connect, bytes a peer wrote): a task that is about to be woken is not
         * idle, and jumping first would fire its deadline instead. */
        rt->driver->park(w, 0);
        skip = work_pending(rt);
    }
    if (!skip) {
        uint64_t next_ms = vega__wheel_next(&w->wheel);
        int64_t timeout = -1;
        if (next_ms != UINT64_MAX) {
            uint64_t now = vega__rt_now_ns(rt);
            uint64_t at = rt->t0 + next_ms * VEGA_NS_PER_MS;
            if (rt->paused) {
                /* Paused clock: nothing runs, so jump to the next timer (unless a blocking job
                 * may still wake someone; then wait for it for real). */
                if (atomic_load_explicit(&rt->pool_inflight, memory_order_acquire) == 0) {
                    if (at > now)
                        atomic_store_explicit(&rt->mock_now, at, memory_order_release);
                    timeout = 0;
                } else {
                    timeout = 1000000; /* poll every ms while blocking jobs run */
                }
            } else {
                timeout = at > now ? (int64_t)(at - now) : 0;
            }
        }
        /* A warm stack list above its floor shrinks when the window of demand turns: wake for
         * it (on the real clock; the paused one turns it when time jumps). */
        uint64_t decay = atomic_load_explicit(&rt->stack_decay_at, memory_order_relaxed);
        if (decay && !rt->paused) {
            uint64_t now = vega__rt_now_ns(rt);
            int64_t left = decay > now ? (int64_t)(decay - now) : 0;
            if (timeout < 0 || left < timeout)
                timeout = left;
        }
        bump(&w->m.parks, 1);
        atomic_store_explicit(&w->parked, true, memory_order_release);
        rt->driver->park(w, timeout);
        atomic_store_explicit(&w->parked, false, memory_order_release);
    }
    pthread_mutex_lock(&rt->idle_mu);
    if (w->idle) {
        for (unsigned i = 0; i < rt->nidle_list; i++) {
            if (rt->idle_stack[i] == w->index) {
                rt->idle_stack[i] = rt->idle_stack[--rt->nidle_list];
                break;
            }
        }
        w->idle = false;
        atomic_fetch_sub_explicit(&rt->num_idle, 1, memory_order_relaxed);
    }
    if (w->handoff_search) {
        w->handoff_search = false;
        w->searching = true;
    }
    pthread_mutex_unlock(&rt->idle_mu);
    vega__worker_process_cancels(w);
    vega__watch_process_closes(w);
    fire_timers(w);
    vega__stack_decay(rt);
}

/* ---- switching ------------------------------------------------------------------------------ */

static void task_entry(void *arg);

/* Gives t its stack the first time it runs. */
static inline void prepare(struct vega__worker *w, struct vega_task *t)
{
    if (vega__likely(t->stack != NULL))
        return;
    struct vega__stack *s = vega__stack_get(w);
    if (vega__unlikely(!s))
        VEGA_PANIC("out of memory for a task stack");
    t->stack = s;
    t->sp = vega__ctx_make((char *)s->base + s->size, task_entry, t);
    s->task = t;
    s->live_owner = NULL;
#if defined(VEGA_TSAN)
    t->tsan_fiber = __tsan_create_fiber(0);
#endif
}

/* Makes t the worker's current task (it is about to be switched to). */
static inline void begin_run(struct vega__worker *w, struct vega_task *t)
{
    prepare(w, t);
    bump(&w->m.polls, 1);
    if (vega__unlikely(w->rt->opts.seeded))
        w->rt->trace_hash = (w->rt->trace_hash ^ t->id) * 0x100000001b3ull;
    atomic_store_explicit(&t->state, VEGA__T_RUNNING, memory_order_relaxed);
    w->budget = VEGA__BUDGET;
    w->current = t;
}

/* Handles the task that switched out last, now that its stack is free. Runs on whoever got the
 * CPU: the next task or the scheduler loop. */
static void post_switch(struct vega__worker *w)
{
    struct vega_task *t = w->prev;
    if (!t)
        return;
    w->prev = NULL;
    if ((char *)t->sp < (char *)t->stack->low)
        t->stack->low = t->sp; /* the deepest it switched out at: stack.c trims on it */
    if (vega__unlikely(!vega__stack_canary_ok(t->stack)))
        VEGA_PANIC("stack overflow in task %llu (%s): raise vega_rt_opts.stack_size",
                   (unsigned long long)t->id, t->name ? t->name : "unnamed");
    switch (w->after) {
    /* RUNNABLE with release: besides the queue push, a stale entry's pop (take_entry) may
     * see it and run the task, and must see its saved stack pointer and stack. */
    case VEGA__AFTER_YIELD:
        atomic_store_explicit(&t->state, VEGA__T_RUNNABLE, memory_order_release);
        vega__lqueue_push(w, t);
        break;
    case VEGA__AFTER_PARK: {
        unsigned expect = VEGA__T_RUNNING;
        if (!atomic_compare_exchange_strong_explicit(&t->state, &expect, VEGA__T_PARKED,
                                                     memory_order_acq_rel, memory_order_acquire)) {
            /* Woken while it was still running: run it again soon. */
            atomic_store_explicit(&t->state, VEGA__T_RUNNABLE, memory_order_release);
            vega__lqueue_push(w, t);
        }
        break;
    }
    case VEGA__AFTER_FINISH:
        vega__task_finish(w, t);
        break;
    default:
        VEGA_PANIC("task switched out without a reason");
    }
}

/* Sanitizer bookkeeping around a switch from `from_fake` (NULL: the old fiber dies) to a stack. */
/* Always inlined: nothing instrumented may run between the TSan fiber switch and the real one. */
static inline __attribute__((always_inline)) void san_before(void **from_fake, const void *bottom,
                                                             size_t size, void *tsan_to)
{
#if defined(VEGA_ASAN)
    __sanitizer_start_switch_fiber(from_fake, bottom, size);
#else
    (void)from_fake, (void)bottom, (void)size;
#endif
#if defined(VEGA_TSAN)
    __tsan_switch_to_fiber(tsan_to, 0);
#else
    (void)tsan_to;
#endif
}

static inline __attribute__((always_inline)) void san_after(void *fake)
{
#if defined(VEGA_ASAN)
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    (void)fake;
#endif
}

#if defined(VEGA_ASAN)
#define TASK_FAKE(t)     (&(t)->asan_fake)
#define TASK_FAKE_VAL(t) ((t)->asan_fake)
#else
#define TASK_FAKE(t)     ((void **)NULL)
#define TASK_FAKE_VAL(t) NULL
#endif
#if defined(VEGA_TSAN)
#define TSAN_FIBER(x) ((x)->tsan_fiber)
#else
#define TSAN_FIBER(x) NULL
#endif

void vega__task_switch_out(struct vega__worker *w, struct vega_task *cur, enum vega__after why)
{
    bool finishing = why == VEGA__AFTER_FINISH;
    struct vega_task *next = NULL;
    w->tick++;
    if (w->tick - w->maint_tick < VEGA__INJECT_INTERVAL)
        next = next_task(w);
    w->prev = cur;
    w->after = why;
    if (next) {
        begin_run(w, next);
        san_before(finishing ? NULL : TASK_FAKE(cur), next->stack->base, next->stack->size,
                   TSAN_FIBER(next));
        vega__ctx_switch(&cur->sp, next->sp);
    } else {
        w->current = NULL;
#if defined(VEGA_ASAN)
        san_before(finishing ? NULL : TASK_FAKE(cur), w->asan_stack_bottom, w->asan_stack_size,
                   TSAN_FIBER(w));
#else
        san_before(NULL, NULL, 0, TSAN_FIBER(w));
#endif
        vega__ctx_switch(&cur->sp, w->sched_sp);
    }
    /* Resumed, maybe on another worker. */
    san_after(TASK_FAKE_VAL(cur));
    post_switch(vega__worker_self());
}

void vega__task_run_inline(struct vega__worker *w, struct vega_task *cur, struct vega_task *t)
{
    /* t was claimed (NEW -> RUNNING): it never ran, so it has no stack, no timer, no waiter.
     * It borrows cur's stack and fiber, and is the worker's current task while it runs: its
     * own identity, cancellation, deadline and budget checks. If it parks, cur's stack (with
     * cur's frames under t's) parks with it and resumes wherever t is resumed. */
    struct vega__stack *s = cur->stack;
    t->stack = s;
    /* Dumps and cancel-all at shutdown reach the innermost task (they read it under the live
     * list's lock while the stack may be listed: an atomic store). */
    __atomic_store_n(&s->task, t, __ATOMIC_RELEASE);
#if defined(VEGA_TSAN)
    t->tsan_fiber = cur->tsan_fiber;
#endif
    bump(&w->m.polls, 1);
    if (vega__unlikely(w->rt->opts.seeded))
        w->rt->trace_hash = (w->rt->trace_hash ^ t->id) * 0x100000001b3ull;
    w->current = t;
    void *res = t->fn(t->arg_result);
    w = vega__worker_self(); /* it may have parked and resumed on another worker */
    t->arg_result = res;
    __atomic_store_n(&s->task, cur, __ATOMIC_RELEASE);
    w->current = cur;
    vega__task_finish_inline(w, t);
}

static void task_entry(void *arg)
{
    struct vega_task *t = arg;
    san_after(NULL);
    post_switch(vega__worker_self());
    t->arg_result = t->fn(t->arg_result);
    struct vega__worker *w = vega__worker_self();
    vega__task_switch_out(w, t, VEGA__AFTER_FINISH);
    VEGA_PANIC("finished task %llu was resumed", (unsigned long long)t->id);
}

/* Scheduler loop side: runs t until the worker comes back to the loop. */
static void run_task(struct vega__worker *w, struct vega_task *t)
{
    begin_run(w, t);
#if defined(VEGA_ASAN)
    san_before(&w->asan_fake, t->stack->base, t->stack->size, TSAN_FIBER(t));
#else
    san_before(NULL, NULL, 0, TSAN_FIBER(t));
#endif
    vega__ctx_switch(&w->sched_sp, t->sp);
#if defined(VEGA_ASAN)
    san_after(w->asan_fake);
#endif
    w->current = NULL;
    post_switch(w);
}

/* The worker loop. until: stop once this task finished (current-thread block_on); NULL: run
 * until the runtime shuts down. */
static void worker_loop(struct vega__worker *w, struct vega_task *until)
{
    struct vega_rt *rt = w->rt;
    vega__worker_set_self(w);
#if defined(VEGA_TSAN)
    w->tsan_fiber = __tsan_get_current_fiber();
#endif
#if defined(VEGA_ASAN)
    {
        /* The scheduler runs on this thread's own stack: tell ASan its bounds once. */
        pthread_attr_t a;
        void *addr = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            pthread_attr_getstack(&a, &addr, &size);
            pthread_attr_destroy(&a);
        }
        w->asan_stack_bottom = addr;
        w->asan_stack_size = size;
    }
#endif
    for (;;) {
        if (until) {
            if (atomic_load_explicit(&until->state, memory_order_acquire) == VEGA__T_DONE)
                break;
        } else if (atomic_load_explicit(&rt->shutdown, memory_order_acquire)) {
            /* Parked connections wake up with -ECANCELED and close themselves. Swept on every
             * turn: a park that raced the shutdown flag is caught by the next sweep. */
            vega__watch_cancel_all(w);
            if (vega__rt_live(rt) == 0)
                break;
        }
        if (w->tick - w->maint_tick >= VEGA__INJECT_INTERVAL) {
            w->maint_tick = w->tick;
            maintenance(w);
        }
        w->tick++;
        struct vega_task *t = next_task(w);
        if (!t && (t = steal_work(w)) && !take_entry(t))
            continue; /* a stale entry; what came with it is in the local queue now */
        if (t) {
            leave_searching(w);
            run_task(w, t);
            continue;
        }
        park_worker(w);
    }
    leave_searching(w);
    vega__worker_set_self(NULL);
}

__thread bool vega__sigpipe_blocked __attribute__((tls_model("initial-exec")));

static void *worker_main(void *arg)
{
    struct vega__worker *w = arg;
    /* A worker thread is the runtime's for life: SIGPIPE stays blocked on it, so a write to a
     * gone peer fails with EPIPE rather than killing the process, and sendfile/splice need no
     * signal-mask change per call (see lib/io/sendfile.c). */
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe, NULL) == 0)
        vega__sigpipe_blocked = true;
    worker_loop(w, NULL);
    return NULL;
}

/* ---- life cycle ----------------------------------------------------------------------------- */

void vega_rt_opts_init_versioned(vega_rt_opts *o, int opts_version)
{
    if (opts_version != VEGA_RT_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_rt_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof *o);
    o->flavor = VEGA_RT_MULTI_THREAD;
    o->driver = VEGA_DRIVER_DEFAULT;
}

static unsigned affinity_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return (unsigned)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static const struct vega__driver_ops *pick_driver(vega_driver_kind k)
{
    if (k == VEGA_DRIVER_DEFAULT && vega__env()->driver)
        k = (vega_driver_kind)vega__env()->driver;
#if defined(VEGA_HAVE_URING)
    if (k == VEGA_DRIVER_URING || k == VEGA_DRIVER_DEFAULT)
        return &vega__driver_uring;
#else
    if (k == VEGA_DRIVER_URING)
        return NULL;
#endif
    return &vega__driver_epoll;
}

static void workers_fini(struct vega_rt *rt, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct vega__worker *w = &rt->workers[i];
        vega__watch_fini(w);
        rt->driver->fini(w);
        w->task_cur = w->task_spare = NULL;
    }
}

int vega_rt_new_versioned(vega_rt **out, const vega_rt_opts *opts, int opts_version)
{
    if (opts_version != VEGA_RT_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    vega_rt_opts def;
    if (!opts) {
        vega_rt_opts_init(&def);
        opts = &def;
    }
    if (opts->flavor != VEGA_RT_MULTI_THREAD && opts->flavor != VEGA_RT_CURRENT_THREAD)
        return -EINVAL;
    if ((opts->seeded || opts->paused_clock) && opts->flavor != VEGA_RT_CURRENT_THREAD)
        return -EINVAL;
    struct vega_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return -ENOMEM;
    rt->opts = *opts;
    rt->nworkers = opts->flavor == VEGA_RT_CURRENT_THREAD ? 1
                   : opts->workers                        ? opts->workers
                                                          : affinity_cpus();
    if (rt->nworkers > 1024) {
        free(rt);
        return -EINVAL;
    }
    const struct vega__driver_ops *drv = pick_driver(opts->driver);
    if (!drv) {
        free(rt);
        return -ENOTSUP;
    }
    rt->paused = opts->paused_clock;
    rt->t0 = rt->paused ? 0 : vega__clock_mono();
    atomic_init(&rt->mock_now, 0);
    vega__inject_init(&rt->inject);
    pthread_mutex_init(&rt->task_mu, NULL);
    pthread_mutex_init(&rt->idle_mu, NULL);
    pthread_mutex_init(&rt->block_mu, NULL);
    pthread_cond_init(&rt->block_cv, NULL);
    rt->idle_stack = calloc(rt->nworkers, sizeof *rt->idle_stack);
    rt->workers = aligned_alloc(64, sizeof *rt->workers * rt->nworkers);
    int r = -ENOMEM;
    if (!rt->idle_stack || !rt->workers)
        goto fail;
    r = vega__stack_pool_init(rt);
    if (r < 0)
        goto fail;
    vega__blocking_init(rt);
    uint64_t seed = opts->seed ? opts->seed : (vega__clock_mono() | 1);
    unsigned inited = 0;
    for (;;) {
        rt->driver = drv;
        inited = 0;
        r = 0;
        for (unsigned i = 0; i < rt->nworkers; i++) {
            struct vega__worker *w = &rt->workers[i];
            memset(w, 0, sizeof *w);
            w->rt = rt;
            w->index = i;
            w->rng = seed + 0x9E3779B97F4A7C15ull * (i + 1);
            w->lifo_enabled = !opts->seeded;
            vega__lqueue_init(&w->q, rt->nworkers == 1);
            vega__wheel_init(&w->wheel, 0);
            vega__spin_init(&w->live_lock);
            vega__spin_init(&w->cancel_lock);
            vega__spin_init(&w->close_lock);
            r = drv->init(w);
            if (r < 0)
                break;
            inited++;
        }
        if (r == 0)
            break;
        workers_fini(rt, inited);
        /* io_uring may be refused (seccomp, sysctl): fall back to epoll unless it was asked
         * for explicitly. */
        if (drv != &vega__driver_epoll && opts->driver == VEGA_DRIVER_DEFAULT &&
            !vega__env()->driver_set) {
            drv = &vega__driver_epoll;
            continue;
        }
        goto fail_pool;
    }
    if (opts->flavor == VEGA_RT_MULTI_THREAD) {
        for (unsigned i = 0; i < rt->nworkers; i++) {
            r = -pthread_create(&rt->workers[i].thread, NULL, worker_main, &rt->workers[i]);
            if (r < 0) {
                atomic_store(&rt->shutdown, true);
                wake_all(rt);
                for (unsigned j = 0; j < i; j++)
                    pthread_join(rt->workers[j].thread, NULL);
                workers_fini(rt, rt->nworkers);
                goto fail_pool;
            }
        }
    }
    *out = rt;
    return 0;
fail_pool:
    vega__blocking_fini(rt);
    vega__stack_pool_fini(rt);
fail:
    free(rt->idle_stack);
    free(rt->workers);
    free(rt);
    return r;
}

int vega_rt_block_on(vega_rt *rt, vega_task_fn fn, void *arg, void **result)
{
    if (vega__worker_self())
        return -EDEADLK;
    pthread_mutex_lock(&rt->block_mu);
    if (rt->block_busy) {
        pthread_mutex_unlock(&rt->block_mu);
        return -EBUSY;
    }
    rt->block_busy = true;
    pthread_mutex_unlock(&rt->block_mu);

    int r = 0;
    struct vega_task *t = vega__task_create(rt, NULL, fn, arg, NULL, false);
    if (!t) {
        r = -ENOMEM;
        goto out;
    }
    if (rt->opts.flavor == VEGA_RT_CURRENT_THREAD) {
        struct vega__worker *w = &rt->workers[0];
        vega__worker_set_self(w);
        vega__task_publish(t);
        vega__lqueue_push(w, t);
        vega__worker_set_self(NULL);
        worker_loop(w, t);
    } else {
        vega__task_publish(t);
        vega__inject_push(&rt->inject, &t, 1);
        vega__notify_parked(rt);
    }
    r = vega_task_join(t, result, VEGA_DEADLINE_NEVER);
out:
    pthread_mutex_lock(&rt->block_mu);
    rt->block_busy = false;
    pthread_mutex_unlock(&rt->block_mu);
    return r;
}

static void cancel_everything(struct vega_rt *rt)
{
    atomic_store_explicit(&rt->cancel_all, true, memory_order_release);
    for (unsigned i = 0; i < rt->nworkers; i++) {
        struct vega__worker *w = &rt->workers[i];
        vega__spin_lock(&w->live_lock);
        for (struct vega__stack *s = w->live_head; s; s = s->live_next)
            vega__task_wake(__atomic_load_n(&s->task, __ATOMIC_ACQUIRE));
        vega__spin_unlock(&w->live_lock);
    }
}

void vega_rt_free(vega_rt *rt)
{
    if (!rt)
        return;
    atomic_store_explicit(&rt->shutdown, true, memory_order_release);
    cancel_everything(rt);
    if (rt->opts.flavor == VEGA_RT_MULTI_THREAD) {
        wake_all(rt);
        for (unsigned i = 0; i < rt->nworkers; i++)
            pthread_join(rt->workers[i].thread, NULL);
    } else {
        worker_loop(&rt->workers[0], NULL);
    }
    vega__blocking_fini(rt);
    workers_fini(rt, rt->nworkers);
    vega__stack_pool_fini(rt);
    /* Handles never joined or detached die with the chunks. */
    vega__task_chunks_free(rt);
    pthread_mutex_destroy(&rt->task_mu);
    vega__inject_fini(&rt->inject);
    pthread_mutex_destroy(&rt->idle_mu);
    pthread_mutex_destroy(&rt->block_mu);
    pthread_cond_destroy(&rt->block_cv);
    free(rt->idle_stack);
    free(rt->workers);
    free(rt);
}

const char *vega_rt_driver_name(const vega_rt *rt)
{
    return rt->driver->name;
}

unsigned vega_rt_workers(const vega_rt *rt)
{
    return rt->nworkers;
}

/* ---- driver glue ---------------------------------------------------------------------------- */

void *vega__worker_driver_data(struct vega__worker *w)
{
    return w->drv;
}
void vega__worker_set_driver_data(struct vega__worker *w, void *p)
{
    w->drv = p;
}
void vega__worker_count_io(struct vega__worker *w)
{
    bump(&w->m.io_ops, 1);
}
void vega__worker_count_completions(struct vega__worker *w, uint64_t n)
{
    bump(&w->m.io_completions, n);
}
