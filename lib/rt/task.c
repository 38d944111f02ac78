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

vega_task *vega_task_current(void)
{
    return vega__task_self();
}

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
 * seen its peak number of tasks.
 *
 * Every list is bounded. A worker holds a current list of at most VEGA__TASK_BATCH free
 * structs and one spare full batch; a free that fills the current list while the spare is
 * full moves the spare, as a whole, to the runtime's shared list of batches, and an
 * allocation that finds both empty takes a whole batch from there: O(1) either way, one lock
 * per VEGA__TASK_BATCH operations at worst. Work stealing makes tasks that are created on one
 * worker finish on another; without the bound one worker would hoard the freed structs while
 * the other kept mapping chunks, memory that grows with every request and that LeakSanitizer
 * cannot see (all of it is freed with the runtime).
 *
 * Chunks are never unmapped before vega_rt_free: task memory is type-stable (see Join below),
 * so what stays mapped is bounded by the peak of live tasks plus the workers' lists: a chunk is
 * mapped only when the allocating worker and the shared list have nothing, so
 * chunks <= (peak live + (workers - 1) x 2 x VEGA__TASK_BATCH) / TASK_CHUNK + 1. */
#define TASK_CHUNK 1169u /* (128 KiB - header) / 112 bytes: one mmap per chunk */

struct vega__task_chunk {
    struct vega__task_chunk *next;
    struct vega_task tasks[TASK_CHUNK];
};

/* A free batch on the shared list is its first struct; the batches are linked through that
 * struct's arg_result (unused while free) and the structs of a batch through `next`. */
static inline struct vega_task *batch_next(struct vega_task *b)
{
    return b->arg_result;
}

/* The owner writes the counts; metrics read them from any thread. */
static unsigned cur_len(struct vega__worker *w)
{
    return atomic_load_explicit(&w->task_cur_len, memory_order_relaxed);
}

static void set_cur_len(struct vega__worker *w, unsigned n)
{
    atomic_store_explicit(&w->task_cur_len, n, memory_order_relaxed);
}

static void set_spare(struct vega__worker *w, struct vega_task *spare)
{
    w->task_spare = spare;
    atomic_store_explicit(&w->task_spare_len, spare ? VEGA__TASK_BATCH : 0, memory_order_relaxed);
}

/* Puts one full batch on the shared list. Caller holds task_mu. */
static void shared_push_batch(struct vega_rt *rt, struct vega_task *b)
{
    b->arg_result = rt->task_batches;
    rt->task_batches = b;
    rt->task_free_len += VEGA__TASK_BATCH;
}

/* Maps one more chunk onto the shared list: full batches, and the rest as loose structs.
 * Caller holds task_mu. */
static bool grow_chunks(struct vega_rt *rt)
{
    /* Pre-faulted in one go: a fault per page would cost more than the zeroing. */
    struct vega__task_chunk *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (c == MAP_FAILED)
        return false;
    c->next = rt->task_chunks;
    rt->task_chunks = c;
    rt->task_nchunks++;
    unsigned i = 0;
    for (; i + VEGA__TASK_BATCH <= TASK_CHUNK; i += VEGA__TASK_BATCH) {
        for (unsigned j = 0; j < VEGA__TASK_BATCH; j++) {
            struct vega_task *t = &c->tasks[i + j];
            t->rt = rt; /* for good: the struct is this runtime's until it is unmapped */
            t->next = j + 1 < VEGA__TASK_BATCH ? t + 1 : NULL;
        }
        shared_push_batch(rt, &c->tasks[i]);
    }
    for (; i < TASK_CHUNK; i++) {
        c->tasks[i].rt = rt;
        c->tasks[i].next = rt->task_loose;
        rt->task_loose = &c->tasks[i];
        rt->task_free_len++;
    }
    return true;
}

/* Takes a batch (or, with no full batch, up to a batch of loose structs) off the shared list;
 * *n receives its length. Caller holds task_mu. */
static struct vega_task *shared_take(struct vega_rt *rt, unsigned *n)
{
    struct vega_task *b = rt->task_batches;
    if (b) {
        rt->task_batches = batch_next(b);
        rt->task_free_len -= VEGA__TASK_BATCH;
        *n = VEGA__TASK_BATCH;
        return b;
    }
    /* Loose structs come from frees outside any worker: rare, so a walk is fine. */
    b = rt->task_loose;
    struct vega_task *last = b;
    unsigned k = b ? 1 : 0;
    while (last && last->next && k < VEGA__TASK_BATCH) {
        last = last->next;
        k++;
    }
    if (last) {
        rt->task_loose = last->next;
        last->next = NULL;
    }
    rt->task_free_len -= k;
    *n = k;
    return b;
}

struct vega_task *vega__task_alloc(struct vega_rt *rt, struct vega__worker *w)
{
    if (vega__likely(w != NULL)) {
        struct vega_task *t = w->task_cur;
        if (vega__likely(t)) {
            w->task_cur = t->next;
            set_cur_len(w, cur_len(w) - 1);
            return t;
        }
        if (w->task_spare) {
            t = w->task_spare;
            set_spare(w, NULL);
            w->task_cur = t->next;
            set_cur_len(w, VEGA__TASK_BATCH - 1);
            return t;
        }
    }
    pthread_mutex_lock(&rt->task_mu);
    if (!rt->task_batches && !rt->task_loose && !grow_chunks(rt)) {
        pthread_mutex_unlock(&rt->task_mu);
        return NULL;
    }
    unsigned n;
    struct vega_task *t = shared_take(rt, &n);
    if (!w && n > 1) { /* from outside: one struct, the rest goes back loose */
        struct vega_task *rest = t->next, *last = rest;
        while (last->next)
            last = last->next;
        last->next = rt->task_loose;
        rt->task_loose = rest;
        rt->task_free_len += n - 1;
    }
    pthread_mutex_unlock(&rt->task_mu);
    if (w) {
        w->task_cur = t->next;
        set_cur_len(w, n - 1);
    }
    return t;
}

void vega__task_free(struct vega__worker *w, struct vega_task *t)
{
    struct vega_rt *rt = t->rt;
    if (vega__unlikely(!w || w->rt != rt)) {
        pthread_mutex_lock(&rt->task_mu);
        t->next = rt->task_loose;
        rt->task_loose = t;
        rt->task_free_len++;
        pthread_mutex_unlock(&rt->task_mu);
        return;
    }
    unsigned n = cur_len(w);
    if (vega__likely(n < VEGA__TASK_BATCH)) {
        t->next = w->task_cur;
        w->task_cur = t;
        set_cur_len(w, n + 1);
        return;
    }
    /* The current list is a full batch: it becomes the spare, and a spare already there goes
     * to the shared list whole. */
    if (w->task_spare) {
        pthread_mutex_lock(&rt->task_mu);
        shared_push_batch(rt, w->task_spare);
        pthread_mutex_unlock(&rt->task_mu);
    }
    set_spare(w, w->task_cur);
    t->next = NULL;
    w->task_cur = t;
    set_cur_len(w, 1);
}

void vega__task_pool_stats(struct vega_rt *rt, uint64_t *chunks, uint64_t *shared, uint64_t *cached)
{
    pthread_mutex_lock(&rt->task_mu);
    *chunks = rt->task_nchunks;
    *shared = rt->task_free_len;
    pthread_mutex_unlock(&rt->task_mu);
    uint64_t c = 0;
    for (unsigned i = 0; i < rt->nworkers; i++) {
        struct vega__worker *w = &rt->workers[i];
        c += cur_len(w) + atomic_load_explicit(&w->task_spare_len, memory_order_relaxed);
    }
    *cached = c;
}

size_t vega__task_chunk_bytes(void)
{
    return sizeof(struct vega__task_chunk);
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
    rt->task_batches = rt->task_loose = NULL;
    rt->task_free_len = 0;
    rt->task_nchunks = 0;
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
                                    void *arg, const vega_spawn_opts *opts, bool detached)
{
    struct vega_task *t = vega__task_alloc(rt, w);
    if (!t)
        return NULL;
    t->sp = NULL;
    /* Plain atomic stores: a stale waker may still read a recycled struct (see task.c's join
     * notes), which is harmless but must not be a data race. */
    /* DONE (as a freed struct is) until vega__task_publish: a stale queue entry's pop must not
     * run it before all is written (t->stale is left alone: see rt_int.h). */
    atomic_store_explicit(&t->state, VEGA__T_DONE, memory_order_relaxed);
    atomic_store_explicit(&t->flags, 0, memory_order_relaxed);
    t->next = NULL;
    /* t->rt is not written: it was set when the chunk was mapped, and a stale waker may read it. */
    t->stack = NULL;
    t->fn = fn;
    t->arg_result = arg;
    t->deadline = opts ? opts->deadline : VEGA_DEADLINE_NEVER;
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

void vega_spawn_opts_init_versioned(vega_spawn_opts *o, int opts_version)
{
    if (opts_version != VEGA_SPAWN_OPTS_VERSION)
        vega__panic(__FILE__, __LINE__,
                    "vega_spawn_opts_init: options of another libvega (version %d)", opts_version);
    memset(o, 0, sizeof *o);
    o->deadline = VEGA_DEADLINE_NEVER;
}

int vega_task_spawn_ex_versioned(vega_task **out, vega_task_fn fn, void *arg,
                                 const vega_spawn_opts *opts, int opts_version)
{
    if (opts_version != VEGA_SPAWN_OPTS_VERSION)
        return -EINVAL; /* a program built against another libvega's headers */
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_task *t = vega__task_create(w->rt, w, fn, arg, opts, out == NULL);
    if (!t)
        return -ENOMEM;
    if (out)
        *out = t;
    vega__task_publish(t);
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
    vega__task_publish(t);
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
        tm.call = false;
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

void vega__task_wake(struct vega_task *t)
{
    wake(t, false);
}

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

int vega_sleep_ns(uint64_t ns)
{
    return vega_sleep_until(vega_deadline_in_ns(ns));
}

int vega_sleep_ms(uint64_t ms)
{
    return vega_sleep_until(vega_deadline_in_ms(ms));
}

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
static void finish_common(struct vega__worker *w, struct vega_task *t);

void vega__task_finish(struct vega__worker *w, struct vega_task *t)
{
    if (t->stack->live_owner)
        live_remove(t->stack);
    vega__stack_put(w, t->stack);
    t->stack = NULL;
#if defined(VEGA_TSAN)
    __tsan_destroy_fiber(t->tsan_fiber);
    t->tsan_fiber = NULL;
#endif
    finish_common(w, t);
}

void vega__task_finish_inline(struct vega__worker *w, struct vega_task *t)
{
    t->stack = NULL; /* the joiner's: it stays with the joiner */
#if defined(VEGA_TSAN)
    t->tsan_fiber = NULL; /* likewise */
#endif
    finish_common(w, t);
}

static void finish_common(struct vega__worker *w, struct vega_task *t)
{
    struct vega_rt *rt = t->rt;
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
                                                  s & ~(unsigned)(VEGA__J_JOINER | VEGA__J_THREAD),
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

/*
 * Work-first join (Cilk, rayon): a task that joins, with no deadline, a child that has not
 * started yet claims it (NEW -> RUNNING, a CAS that the child's queue entry's pop also tries,
 * so exactly one of them runs it) and runs it inline on its own stack, which costs no stack,
 * no switch and no wake-up. The child keeps its own identity (it is the current task while it
 * runs: cancellation, deadline scopes, groups, dumps), and if it parks, the joiner's stack
 * parks with it: the joiner waits for that very child anyway.
 * - The queue entry still pointing at the child is stale: the struct's `stale` count holds it,
 *   and the pop that finds it lets it go (sched.c, take_entry). The count stays with the struct
 *   when it is freed and reused, so the join frees the child at once, as any join does.
 * - Only while the joiner has used at most an eighth of its stack: the child then has at least
 *   7/8 of stack_size, and nested inline joins stop at that depth (then the child runs on its
 *   own stack as before).
 * - Not when the joiner is already cancelled (its join returns -ECANCELED as before), nor for a
 *   join with a deadline (it must return at the deadline). A cancel of the joiner while the
 *   child runs inline takes effect after the child returned: the join cannot return while
 *   the child's frames sit on its stack; it returns 0 with the result, and the joiner's next
 *   wait sees the cancel.
 */
static bool join_inline(struct vega__worker *w, struct vega_task *cur, struct vega_task *t)
{
    if (atomic_load_explicit(&t->state, memory_order_relaxed) != VEGA__T_NEW)
        return false;
    const struct vega__stack *s = cur->stack;
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t top = (uintptr_t)s->base + s->size;
    if (sp + s->size / 8 < top || is_cancelled(cur))
        return false;
    /* Counted before the claim: a pop that loses the race to the claim must find it. */
    atomic_fetch_add_explicit(&t->stale, 1, memory_order_acq_rel);
    unsigned expect = VEGA__T_NEW;
    if (!atomic_compare_exchange_strong_explicit(&t->state, &expect, VEGA__T_RUNNING,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        atomic_fetch_sub_explicit(&t->stale, 1, memory_order_acq_rel);
        return false; /* a worker took it first */
    }
    vega__task_run_inline(w, cur, t);
    return true;
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
    } else if (dl == VEGA_DEADLINE_NEVER && join_inline(vega__worker_self(), cur, t)) {
        /* ran inline to its end */
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

int vega_task_join_all(vega_task *const *t, size_t n, void **results, size_t *joined,
                       vega_deadline dl)
{
    size_t i = 0;
    int r = 0;
    for (; i < n && r == 0; i++)
        r = vega_task_join(t[i], results ? &results[i] : NULL, dl);
    if (r < 0)
        i--; /* t[i] failed to join: still the caller's */
    if (joined)
        *joined = i;
    return r;
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
