/* SPDX-License-Identifier: MIT */
/* Scheduler internals: runtime, workers, run queues, timer wheel, stack pool. */
#ifndef VEGA_SCHED_INT_H
#define VEGA_SCHED_INT_H

#include "rt_int.h"

/* ---- tuning (Tokio's proven constants; see docs/ARCHITECTURE.md) -------------------------- */
#define VEGA__LQ_CAP          256u /* local run queue slots */
#define VEGA__LQ_MASK         (VEGA__LQ_CAP - 1)
#define VEGA__BUDGET          128u /* cooperative budget per turn */
#define VEGA__LIFO_MAX        3u   /* LIFO polls in a row before the queue gets a turn */
#define VEGA__INJECT_INTERVAL 61u  /* ticks between looks at the inject queue (and driver) */
#define VEGA__STACK_CACHE     16u  /* free stacks kept per worker */
#define VEGA__STACK_WARM      64u /* free stacks the shared list keeps with their pages, at least */
#define VEGA__STACK_WARM_MAX  (1u << 17) /* ... and at most, however high the recent demand */
#define VEGA__STACK_DECAY_NS  (500u * 1000000u) /* a window of demand for the warm list */
#define VEGA__STACK_COLD_KEEP 256u /* cold stacks kept before fully free regions are unmapped */
#define VEGA__STACK_KEEP      (16u * 1024u) /* a free stack keeps at most its top 16 KiB committed */
#define VEGA__TASK_BATCH                                                                           \
    64u /* task structs move between a worker and the shared list in                               \
           batches; a worker keeps at most two */
#define VEGA__DEFAULT_STACK (64u * 1024u)

/* ---- local run queue: single producer (owner), many stealers (Tokio's design) ------------- */
struct vega__lqueue {
    _Atomic uint64_t head; /* steal (hi 32) | real (lo 32) */
    _Atomic uint32_t tail;
    bool single; /* the runtime has one worker: nobody steals */
    struct vega_task *_Atomic buf[VEGA__LQ_CAP];
};

/* ---- global inject queue -------------------------------------------------------------------- */
#define VEGA__INJECT_BLOCK 256u
struct vega__inject_block;
struct vega__inject {
    pthread_mutex_t mu;
    struct vega__inject_block *head, *tail, *spare;
    _Atomic size_t len;
};

/* ---- timer wheel: 6 levels x 64 slots, 1 ms resolution ------------------------------------ */
#define VEGA__WHEEL_LEVELS 6
struct vega__wheel {
    vega__spin lock;  /* the owner fires; any thread may remove an entry */
    uint64_t elapsed; /* ms processed up to */
    uint64_t occupied[VEGA__WHEEL_LEVELS];
    struct vega__timer *slots[VEGA__WHEEL_LEVELS][64];
    size_t count;
    _Atomic uint64_t next_ms; /* cached earliest expiry, UINT64_MAX when empty */
};

void vega__wheel_init(struct vega__wheel *wh, uint64_t now_ms);
/* Arms t to fire at when_ms on wh. Any thread; takes the lock. */
void vega__wheel_insert(struct vega__wheel *wh, struct vega__timer *t, uint64_t when_ms);
/* Disarms t wherever it is armed; a no-op when it already fired. Any thread. */
void vega__wheel_remove(struct vega__timer *t);
/* Fires every timer due at now_ms (waking tasks under the lock). Returns how many fired. */
size_t vega__wheel_advance(struct vega__wheel *wh, uint64_t now_ms);
/* Earliest expiry in ms, UINT64_MAX if none. */
uint64_t vega__wheel_next(struct vega__wheel *wh);

/* ---- workers -------------------------------------------------------------------------------- */

enum vega__after {
    VEGA__AFTER_NONE = 0,
    VEGA__AFTER_YIELD,
    VEGA__AFTER_PARK,
    VEGA__AFTER_FINISH,
};

struct vega__metrics {
    _Atomic uint64_t spawned, polls, steals, steal_ops, parks, unparks, injects, budget_yields,
        lifo_hits, overflows, timers_fired, io_ops, io_completions;
};

struct vega__worker {
    struct vega_rt *rt;
    unsigned index;
    pthread_t thread;

    void *sched_sp; /* the scheduler context while a task runs */
    struct vega_task *current;
    struct vega_task *prev; /* switched out, its `after` not yet handled */
    enum vega__after after;
    unsigned maint_tick; /* tick of the last maintenance (driver poll, timers) */

    struct vega__lqueue q;
    struct vega_task *lifo;
    unsigned lifo_streak;
    unsigned tick;
    uint64_t next_id;
    unsigned budget;
    uint64_t rng;
    bool searching;
    bool lifo_enabled;

    /* idle list link (guarded by rt->idle_mu) */
    bool idle;
    bool handoff_search; /* woken by notify_parked, which counted it as searching */
    _Atomic bool parked;

    struct vega__wheel wheel;

    /* live tasks spawned here (guarded by live_lock) */
    vega__spin live_lock;
    struct vega__stack *live_head;

    /* caches (owner only) */
    struct vega_task *task_cur;   /* free task structs (owner only), < VEGA__TASK_BATCH ... */
    struct vega_task *task_spare; /* ... and one full batch or NULL */
    _Atomic unsigned task_cur_len, task_spare_len; /* owner-written, for metrics */
    struct vega__stack *stack_cache;
    _Atomic unsigned stack_cache_len; /* at most VEGA__STACK_CACHE; owner-written */

    /* I/O driver */
    void *drv;
    vega__spin cancel_lock;
    struct vega__op *cancel_head; /* ops other workers asked this one to cancel */
    struct vega__watch *watches;  /* registered here (owner thread only) */
    vega__spin close_lock;
    struct vega__watch *close_head; /* watches other threads closed: unregister them here */
    struct vega__watch *rearm_head; /* receive watches other threads armed: start receives */

    struct vega__metrics m;
    /* Tasks spawned and finished on this worker (owner-written, monotonic): the runtime's live
     * count is their difference summed; see vega__rt_live. */
    _Atomic uint64_t spawned_here, finished_here;

#if defined(VEGA_ASAN)
    void *asan_fake;
    const void *asan_stack_bottom;
    size_t asan_stack_size;
#endif
#if defined(VEGA_TSAN)
    void *tsan_fiber;
#endif
} __attribute__((aligned(64)));

struct vega_rt {
    vega_rt_opts opts;
    const struct vega__driver_ops *driver;
    unsigned nworkers;
    struct vega__worker *workers;

    struct vega__inject inject;

    /* idle workers */
    pthread_mutex_t idle_mu;
    unsigned *idle_stack; /* indices of idle workers */
    unsigned nidle_list;
    _Atomic unsigned num_idle;
    _Atomic unsigned num_searching;

    _Atomic bool shutdown; /* workers exit when set and no task is live */
    _Atomic bool cancel_all;
    _Atomic uint64_t foreign_spawned; /* tasks spawned from outside the workers */
    _Atomic uint64_t next_id;

    /* block_on */
    pthread_mutex_t block_mu;
    pthread_cond_t block_cv;
    bool block_busy;

    /* stack pool beyond the per-worker caches (stack.c; stack_mu) */
    pthread_mutex_t stack_mu;
    struct vega__stack *stack_warm; /* pages kept */
    struct vega__stack *stack_cold; /* pages given back; doubly linked */
    size_t stack_nwarm, stack_ncold, stack_nregions;
    size_t stack_peak, stack_peak_prev; /* most stacks in use this window and the one before */
    _Atomic uint64_t stack_decay_at;    /* when the window turns (0: the warm list is small) */
    struct vega__region *regions;
    size_t stack_size; /* usable size */
    size_t page;
    bool guard_madvise; /* MADV_GUARD_INSTALL works here */
    bool vec_madvise;   /* process_madvise on our own address space works here (Linux 6.15) */

    /* clock */
    bool paused;
    _Atomic uint64_t mock_now; /* paused clock, ns */
    uint64_t t0;               /* monotonic ns at creation (wheel's ms scale origin) */

    /* task structs: chunks, and the free list the workers' caches overflow into (task_mu) */
    pthread_mutex_t task_mu;
    struct vega__task_chunk *task_chunks;
    struct vega_task *task_batches; /* full batches (linked through arg_result) */
    struct vega_task *task_loose;   /* single structs freed outside the workers */
    size_t task_free_len;           /* structs on both */
    size_t task_nchunks;

    /* seeded schedule trace */
    uint64_t trace_hash;

    /* blocking pool */
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    struct vega__job *pool_head, *pool_tail;
    unsigned pool_threads, pool_idle, pool_queued;
    uint64_t pool_jobs;             /* jobs run to their end (the metrics) */
    _Atomic unsigned pool_inflight; /* blocking jobs and disk ring ops in flight (paused clock) */
    bool pool_stop;
    pthread_cond_t pool_exit_cv;
};

/* ---- internal calls between the scheduler's files ----------------------------------------- */
void vega__lqueue_init(struct vega__lqueue *q, bool single);
bool vega__lqueue_push(struct vega__worker *w, struct vega_task *t); /* false: went to inject */
struct vega_task *vega__lqueue_pop(struct vega__lqueue *q);
struct vega_task *vega__lqueue_steal(struct vega__lqueue *src, struct vega__lqueue *dst,
                                     unsigned *stolen);
uint32_t vega__lqueue_len(struct vega__lqueue *q);
/* Removes the i-th task (0 = head) by swapping it with the head; owner only, no stealers
 * (seeded current-thread runtime). */
struct vega_task *vega__lqueue_take_at(struct vega__lqueue *q, uint32_t i);

void vega__inject_init(struct vega__inject *in);
void vega__inject_fini(struct vega__inject *in);
void vega__inject_push(struct vega__inject *in, struct vega_task *const *tasks, size_t n);
struct vega_task *vega__inject_pop(struct vega__inject *in);
/* Takes a fair share of the inject queue: returns one task and moves more into w's local
 * queue (owner only). */
struct vega_task *vega__inject_pop_batch(struct vega__worker *w, unsigned nworkers);
size_t vega__inject_len(struct vega__inject *in);

int vega__stack_pool_init(struct vega_rt *rt);
void vega__stack_pool_fini(struct vega_rt *rt);
struct vega__stack *vega__stack_get(struct vega__worker *w);
void vega__stack_put(struct vega__worker *w, struct vega__stack *s);
void vega__stack_decay(struct vega_rt *rt);
bool vega__stack_canary_ok(const struct vega__stack *s);
/* What the stack pool holds now: regions mapped, warm and cold stacks on the shared lists,
 * stacks in the workers' caches. Any thread. */
void vega__stack_pool_stats(struct vega_rt *rt, uint64_t *regions, uint64_t *warm, uint64_t *cold,
                            uint64_t *cached);
size_t vega__stack_region_bytes(const struct vega_rt *rt);

/* Scheduling a runnable task from the current thread. */
void vega__schedule(struct vega_rt *rt, struct vega_task *t, bool yielded);
void vega__notify_parked(struct vega_rt *rt);

/* Timer clock of a runtime (ms since creation, on the mock clock when paused). */
uint64_t vega__rt_now_ns(const struct vega_rt *rt);
static inline uint64_t vega__ns_to_ms_ceil(const struct vega_rt *rt, uint64_t ns)
{
    if (ns == UINT64_MAX)
        return UINT64_MAX;
    uint64_t rel = ns > rt->t0 ? ns - rt->t0 : 0;
    return (rel + VEGA_NS_PER_MS - 1) / VEGA_NS_PER_MS;
}
static inline uint64_t vega__ms_floor(const struct vega_rt *rt, uint64_t ns)
{
    uint64_t rel = ns > rt->t0 ? ns - rt->t0 : 0;
    return rel / VEGA_NS_PER_MS;
}

/* Task lifecycle pieces used by the worker loop. */
void vega__worker_set_self(struct vega__worker *w);
/* The calling task gives up its worker for `why`: the worker switches straight to the next
 * runnable task when there is one (one switch, not two), else to its scheduler loop. What
 * `why` asks (requeue, park, release the finished task) is done after the switch, by whoever
 * runs next, once the old stack is no longer in use. Returns when the task is resumed. */
void vega__task_switch_out(struct vega__worker *w, struct vega_task *cur, enum vega__after why);
struct vega_task *vega__task_create(struct vega_rt *rt, struct vega__worker *w, vega_task_fn fn,
                                    void *arg, const vega_spawn_opts *opts, bool detached);
void vega__task_finish(struct vega__worker *w, struct vega_task *t);
/* Runs t, which the calling task cur claimed before t ever ran, to its end on cur's stack
 * (task.c, "work-first join"); returns on whatever worker t finished on, with cur current. */
void vega__task_run_inline(struct vega__worker *w, struct vega_task *cur, struct vega_task *t);
/* The end of a task run by vega__task_run_inline: vega__task_finish without the stack. */
void vega__task_finish_inline(struct vega__worker *w, struct vega_task *t);
/* Makes a created task NEW, right before it is queued: its fields are all written by then, for
 * a stale entry's pop (see take_entry in sched.c) may run it from that moment on. */
static inline void vega__task_publish(struct vega_task *t)
{
    atomic_store_explicit(&t->state, VEGA__T_NEW, memory_order_release);
}
/* A task struct from w's cache (w: the calling worker, or NULL from outside), or NULL. */
struct vega_task *vega__task_alloc(struct vega_rt *rt, struct vega__worker *w);
/* Gives a struct back to w's cache (w: the calling worker, or NULL), which overflows into the
 * shared list. */
void vega__task_free(struct vega__worker *w, struct vega_task *t);
/* Tasks that have parked at least once are listed on the worker where they first parked, for
 * cancel-all at shutdown and for dumps; a task that never parked has nothing to wake. */
void vega__live_add(struct vega__worker *w, struct vega_task *t);
void vega__task_chunks_free(struct vega_rt *rt);
/* What the task-struct pool holds now: chunks mapped, structs on the shared list, structs in
 * the workers' caches. Any thread. */
void vega__task_pool_stats(struct vega_rt *rt, uint64_t *chunks, uint64_t *shared,
                           uint64_t *cached);
size_t vega__task_chunk_bytes(void);
void vega__group_member_done(struct vega_task *t);

/* Tasks spawned and not yet returned. Exact when it returns 0 (see sched.c). */
uint64_t vega__rt_live(struct vega_rt *rt);

/* Owner thread: unregisters the watches closed by other threads. */
void vega__watch_process_closes(struct vega__worker *w);
/* Runtime teardown (workers stopped): finishes closes that are still in flight. */
void vega__watch_fini(struct vega__worker *w);
/* Shutdown: fires every armed watch registered on w with -ECANCELED (owner thread). */
void vega__watch_cancel_all(struct vega__worker *w);

/* Blocking pool (blocking.c). */
void vega__blocking_init(struct vega_rt *rt);
void vega__blocking_fini(struct vega_rt *rt);

/* Cancel mailbox: other threads ask the owner worker to cancel an op in flight on its driver. */
void vega__worker_process_cancels(struct vega__worker *w);

#endif
