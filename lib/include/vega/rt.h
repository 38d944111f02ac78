/* SPDX-License-Identifier: MIT */
/* The runtime: stackful tasks on a work-stealing (or current-thread) scheduler, timers,
 * cancellation, deadlines, task groups, the blocking pool, signals and metrics. */
#ifndef VEGA_RT_H
#define VEGA_RT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#if defined(__GLIBC__) && !defined(__sigset_t_defined)
#include <bits/types/sigset_t.h> /* strict ISO C: glibc's <signal.h> leaves sigset_t out */
#endif

#include <vega/err.h>
#include <vega/export.h>
#include <vega/time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vega_rt vega_rt;
typedef struct vega_task vega_task;
typedef struct vega_group vega_group;

/* A task's body. Its return value is what vega_task_join hands back. */
typedef void *(*vega_task_fn)(void *arg);

typedef enum vega_rt_flavor {
    VEGA_RT_MULTI_THREAD = 0, /* N workers with work stealing */
    VEGA_RT_CURRENT_THREAD,   /* one worker: the thread that calls vega_rt_block_on */
} vega_rt_flavor;

typedef enum vega_driver_kind {
    VEGA_DRIVER_DEFAULT = 0, /* $VEGA_DRIVER if set ("uring" or "epoll"), else io_uring if the
                                kernel allows it, else epoll */
    VEGA_DRIVER_URING,
    VEGA_DRIVER_EPOLL,
} vega_driver_kind;

typedef struct vega_rt_opts {
    vega_rt_flavor flavor;
    unsigned workers;  /* multi-thread: 0 = the CPUs in the affinity mask */
    size_t stack_size; /* per task, virtual; 0 = 64 KiB; pages are committed on touch */
    bool stack_guard;  /* a guard page below every stack (see docs/ARCHITECTURE.md) */
    vega_driver_kind driver;
    unsigned blocking_threads; /* blocking pool: most threads; 0 = 64 */
    unsigned blocking_queue;   /* blocking pool: most queued jobs; 0 = 1024 */
    uint64_t seed;             /* seeds stealing victims; with `seeded` the whole schedule */
    bool seeded;               /* current-thread only: pick the next task by a PRNG seeded with
                                  `seed`, so the same seed gives the same interleaving */
    bool paused_clock;         /* current-thread only: mock clock that starts at 0 and jumps to
                                  the next timer when every task is idle */
} vega_rt_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_RT_OPTS_VERSION 1

/* Fills o with defaults. Since 0.1. */
VEGA_API void vega_rt_opts_init_versioned(vega_rt_opts *o, int opts_version);
#define vega_rt_opts_init(...) vega_rt_opts_init_versioned(__VA_ARGS__, VEGA_RT_OPTS_VERSION)
/* Deprecated (0.1), until 1.0: the names before the API rules (docs/ARCHITECTURE.md). */
typedef vega_rt_opts vega_rt_options;
#define vega_rt_options_init vega_rt_opts_init

/*
 * Creates a runtime. opts: borrowed; NULL means defaults. For the multi-thread flavour the
 * workers start at once and park until there is work.
 * Returns 0, -ENOMEM, -EINVAL (bad option), or an -errno from the driver's setup; -ENOTSUP (the
 * driver asked for is not built in or not supported by this kernel). Context: not from inside a
 * task. Since 0.1.
 */
VEGA_API int vega_rt_new_versioned(vega_rt **out, const vega_rt_opts *opts, int opts_version);
#define vega_rt_new(...) vega_rt_new_versioned(__VA_ARGS__, VEGA_RT_OPTS_VERSION)

/*
 * Runs fn(arg) as a task and waits until it returns; *result (if not NULL) receives its return
 * value. Other tasks keep running after it returns, until vega_rt_free.
 * Returns 0, -ENOMEM, -EBUSY (a block_on is already running on this runtime); -EDEADLK (called from
 * a thread of a runtime). Context: not from inside a task. Since 0.1.
 */
VEGA_API int vega_rt_block_on(vega_rt *rt, vega_task_fn fn, void *arg, void **result);

/*
 * Stops the runtime: every task still alive is cancelled and run until it returns, then the
 * workers exit and all memory is released.
 * Context: not from inside a task. Since 0.1.
 */
VEGA_API void vega_rt_free(vega_rt *rt);

/* The driver the runtime chose: "uring" or "epoll". Since 0.1. */
VEGA_API const char *vega_rt_driver_name(const vega_rt *rt);

/* Number of workers. Since 0.1. */
VEGA_API unsigned vega_rt_workers(const vega_rt *rt);

/* The runtime of the calling task, or NULL outside a task. Since 0.1. */
VEGA_API vega_rt *vega_rt_current(void);

/* ---- tasks --------------------------------------------------------------------------------- */

typedef struct vega_spawn_opts {
    const char *name; /* retained: must outlive the task (a literal); for dumps; may be NULL */
    vega_deadline deadline; /* task-wide deadline capping every suspension; as every
                               deadline: VEGA_DEADLINE_NEVER = none, 0 = already due */
} vega_spawn_opts;
/* This struct's layout version (docs/ARCHITECTURE.md, API rules: ABI). */
#define VEGA_SPAWN_OPTS_VERSION 1

/* Sets the defaults: no name, deadline VEGA_DEADLINE_NEVER. Since 0.1. */
VEGA_API void vega_spawn_opts_init_versioned(vega_spawn_opts *o, int opts_version);
#define vega_spawn_opts_init(...)                                                                  \
    vega_spawn_opts_init_versioned(__VA_ARGS__, VEGA_SPAWN_OPTS_VERSION)
/* Deprecated (0.1), until 1.0. */
typedef vega_spawn_opts vega_spawn_options;

/*
 * Spawns a task that runs fn(arg). With out != NULL the caller owns a handle and must join or
 * detach it; with out == NULL the task is detached. The task is queued on the calling worker
 * (its LIFO slot) when called from a task, or through the inject queue otherwise.
 * Returns 0, -ENOMEM; -EINVAL (a bad argument, or options of a layout version this library does not
 * know); VEGA_ERR_NOTASK (not called from a task). Context: inside a task of rt (vega_task_spawn)
 * or any thread (vega_rt_spawn). Since 0.1.
 */
VEGA_API int vega_task_spawn(vega_task **out, vega_task_fn fn, void *arg);
VEGA_API int vega_task_spawn_ex_versioned(vega_task **out, vega_task_fn fn, void *arg,
                                          const vega_spawn_opts *opts, int opts_version);
#define vega_task_spawn_ex(...) vega_task_spawn_ex_versioned(__VA_ARGS__, VEGA_SPAWN_OPTS_VERSION)
VEGA_API int vega_rt_spawn(vega_rt *rt, vega_task **out, vega_task_fn fn, void *arg);

/*
 * Waits for t to return and frees its handle. result: receives fn's return value (may be NULL).
 * Returns 0 (t is gone), -ETIMEDOUT or -ECANCELED (t is still owned by the caller); -EDEADLK (t is
 * the calling task). Context: inside a task, or from a non-runtime thread for handles from
 * vega_rt_spawn (then it blocks the thread and the deadline is on the monotonic clock). Since 0.1.
 */
VEGA_API int vega_task_join(vega_task *t, void **result, vega_deadline dl);

/*
 * Joins t[0..n) in order, as vega_task_join each, writing t[i]'s return value to results[i]
 * (results may be NULL). Returns 0 when all are joined; else the first failure's code
 * (-ETIMEDOUT, -ECANCELED, -EDEADLK), and then t[0..*joined) are gone and the rest are still
 * the caller's. joined may be NULL. Context: as vega_task_join. Since 0.1.
 */
VEGA_API int vega_task_join_all(vega_task *const *t, size_t n, void **results, size_t *joined,
                                vega_deadline dl);

/* Gives up the handle: the task's memory is released when it returns. Since 0.1. */
VEGA_API void vega_task_detach(vega_task *t);

/*
 * Asks t to stop: its current or next suspension (and every later one) returns -ECANCELED.
 * An I/O operation in flight is cancelled in the kernel, and the task is resumed only after the
 * kernel answered, so no buffer is referenced after the interrupted call returned.
 * Cancelling a finished task is a no-op. Context: any thread holding the handle. Since 0.1.
 */
VEGA_API void vega_task_cancel(vega_task *t);

/* True once t returned (the handle stays valid until joined). Since 0.1. */
VEGA_API bool vega_task_is_finished(const vega_task *t);

/* The calling task, or NULL outside a task. Never cache it across a suspension. Since 0.1. */
VEGA_API vega_task *vega_task_current(void);

/* True when the calling task was cancelled. Since 0.1. */
VEGA_API bool vega_task_is_cancelled(void);

/* Index of the worker running the calling task (changes when the task is stolen), -1 outside. */
VEGA_API int vega_worker_index(void);

/*
 * Lets other tasks run; the caller goes to the back of its worker's queue. Returns 0 or
 * -ECANCELED; VEGA_ERR_NOTASK (not called from a task). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_yield(void);

/*
 * Spends one unit of the cooperative budget (128 per turn); when the budget is empty the task
 * yields first. Every libvega operation that completes without suspending calls it, so a task
 * that never waits still lets its neighbours run. Returns 0 or -ECANCELED. Since 0.1.
 */
VEGA_API int vega_coop(void);

/*
 * Sleeps until dl (or for ms / ns), at 1 ms resolution: it wakes at the first timer tick at or
 * after dl (vega/time.h), so vega_sleep_ns(1) sleeps until the next millisecond. Returns 0
 * (dl passed); -ETIMEDOUT (a deadline scope or the task's spawn deadline came first, see
 * vega_deadline_push); -ECANCELED (the task was cancelled); VEGA_ERR_NOTASK (not called from a
 * task). Context: inside a task. Since 0.1.
 */
VEGA_API int vega_sleep_until(vega_deadline dl);
VEGA_API int vega_sleep_ms(uint64_t ms);
VEGA_API int vega_sleep_ns(uint64_t ns);

/*
 * Deadline scopes: until the matching pop, every suspension of the calling task gives up at the
 * earlier of its own deadline and dl (scopes nest; the earliest wins). Returns the value to pass
 * to vega_deadline_pop. Context: inside a task. Since 0.1.
 */
VEGA_API vega_deadline vega_deadline_push(vega_deadline dl);
VEGA_API void vega_deadline_pop(vega_deadline saved);

/* ---- task groups (structured concurrency) ------------------------------------------------- */

/* Creates an empty group. Returns 0 or -ENOMEM. Context: inside a task. Since 0.1. */
VEGA_API int vega_group_new(vega_group **out);

/* Spawns fn(arg) as a member of g. Returns 0, -ENOMEM, VEGA_ERR_CLOSED (g is closing);
 * VEGA_ERR_NOTASK (not called from a task). */
VEGA_API int vega_group_spawn(vega_group *g, vega_task_fn fn, void *arg);

/*
 * Waits until every member returned. Returns 0, -ETIMEDOUT or -ECANCELED (members keep running).
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_group_wait(vega_group *g, vega_deadline dl);

/* Cancels every member still running. Since 0.1. */
VEGA_API void vega_group_cancel(vega_group *g);

/* Number of members that have not returned yet. Since 0.1. */
VEGA_API size_t vega_group_live(const vega_group *g);

/*
 * Closes the scope: cancels the members still running, waits for all of them (this wait cannot
 * be cancelled or time out), and frees g. Context: inside a task. Since 0.1.
 */
VEGA_API void vega_group_free(vega_group *g);

/* ---- blocking pool ------------------------------------------------------------------------- */

typedef void *(*vega_blocking_fn)(void *arg);

/*
 * Runs fn(arg) on a pool thread and suspends the task until it returns; *result gets its value.
 * The pool grows to blocking_threads threads and then queues up to blocking_queue jobs.
 * If the task is cancelled or the deadline passes while fn runs, the call still waits for fn
 * (a thread cannot be interrupted) and then returns -ECANCELED/-ETIMEDOUT; a job still queued
 * is withdrawn and never runs.
 * Returns 0, -ETIMEDOUT, -ECANCELED, VEGA_ERR_FULL (queue full), -ENOMEM.
 * vega_blocking_try fails with VEGA_ERR_FULL instead of queueing when no thread is free.
 * Context: inside a task. Since 0.1.
 */
VEGA_API int vega_blocking(vega_blocking_fn fn, void *arg, void **result, vega_deadline dl);
VEGA_API int vega_blocking_try(vega_blocking_fn fn, void *arg, void **result, vega_deadline dl);

/* ---- signals ------------------------------------------------------------------------------- */

/*
 * set: borrowed.
 * Waits for one of the signals in *set to be delivered to the process, through a signalfd.
 * The first call blocks those signals in every thread the runtime owns and in the caller's
 * thread; call vega_signal_block() early in main (before vega_rt_new) so that no other thread
 * receives them the default way. *signo receives the signal number.
 * Returns 0, -ETIMEDOUT, -ECANCELED, -errno; VEGA_ERR_NOTASK (not called from a task). Context:
 * inside a task. Since 0.1.
 */
VEGA_API int vega_signal_wait(const sigset_t *set, int *signo, vega_deadline dl);
VEGA_API int vega_signal_block(const sigset_t *set);

/* ---- metrics ------------------------------------------------------------------------------- */

typedef struct vega_worker_metrics {
    uint64_t spawned;       /* tasks spawned from this worker */
    uint64_t polls;         /* task resumptions */
    uint64_t steals;        /* tasks this worker stole from others */
    uint64_t steal_ops;     /* successful steal operations */
    uint64_t parks;         /* times the worker parked in the driver */
    uint64_t unparks;       /* times it was woken from another thread */
    uint64_t injects;       /* tasks taken from the global inject queue */
    uint64_t budget_yields; /* yields forced by an empty cooperative budget */
    uint64_t lifo_hits;     /* tasks run from the LIFO slot */
    uint64_t overflows;     /* tasks moved to the inject queue because the local queue was full */
    uint64_t local_queue;   /* tasks in the local queue now */
    uint64_t timers_fired;
    uint64_t io_ops;         /* I/O operations submitted to the driver */
    uint64_t io_completions; /* completions the driver delivered (io_uring CQEs for operations,
                                epoll readiness events) */
} vega_worker_metrics;

typedef struct vega_rt_metrics {
    unsigned workers;
    uint64_t live_tasks;
    uint64_t inject_queue;
    uint64_t blocking_threads;
    uint64_t blocking_queue;
    /* What the runtime's memory pools hold (each has a bound: docs/ARCHITECTURE.md, Pools). */
    uint64_t task_chunks;        /* chunks of task structs mapped (kept until vega_rt_free) */
    uint64_t task_chunk_bytes;   /* their size in bytes (committed) */
    uint64_t tasks_free_shared;  /* free task structs on the shared list */
    uint64_t tasks_free_cached;  /* free task structs in the workers' caches */
    uint64_t stack_regions;      /* stack mappings (16 stacks each) */
    uint64_t stack_region_bytes; /* their size in bytes (virtual: pages commit when touched) */
    uint64_t stacks_cached;      /* free stacks in the workers' caches (pages kept) */
    uint64_t stacks_warm;        /* free stacks on the shared list with their pages */
    uint64_t stacks_cold;        /* free stacks whose pages went back (one page kept each) */
    uint64_t blocking_jobs;      /* jobs the blocking pool ran to their end, since the start */
} vega_rt_metrics;

/* The layout versions of vega_rt_metrics and vega_worker_metrics (docs/ARCHITECTURE.md, API
 * rules: ABI, as for options): fields are only ever appended, and a caller built against an
 * older layout gets that layout's prefix filled, nothing past it. */
#define VEGA_RT_METRICS_VERSION     1
#define VEGA_WORKER_METRICS_VERSION 1

/* Reads the runtime-wide counters into m, up to the end of layout metrics_version (the macro
 * vega_rt_get_metrics passes VEGA_RT_METRICS_VERSION). Returns 0; -EINVAL (rt or m NULL, or a
 * layout this library does not know: m is left as it was). Context: any thread. Since 0.1
 * (versioned since 0.2). */
VEGA_API int vega_rt_get_metrics_versioned(const vega_rt *rt, vega_rt_metrics *m,
                                           int metrics_version);
#define vega_rt_get_metrics(...) vega_rt_get_metrics_versioned(__VA_ARGS__, VEGA_RT_METRICS_VERSION)

/* Reads worker i's counters (relaxed reads; each counter is exact, the set is not a snapshot)
 * into m, up to the end of layout metrics_version (the macro passes
 * VEGA_WORKER_METRICS_VERSION). Returns 0; -EINVAL (rt or m NULL, i not a worker, or a layout
 * this library does not know: m is left as it was). Context: any thread. Since 0.1 (versioned
 * since 0.2). */
VEGA_API int vega_rt_get_worker_metrics_versioned(const vega_rt *rt, unsigned i,
                                                  vega_worker_metrics *m, int metrics_version);
#define vega_rt_get_worker_metrics(...)                                                            \
    vega_rt_get_worker_metrics_versioned(__VA_ARGS__, VEGA_WORKER_METRICS_VERSION)

/* Writes every counter in Prometheus text exposition format. Returns 0 or -errno; -EIO (writing to
 * the FILE failed). */
VEGA_API int vega_rt_metrics_prometheus(const vega_rt *rt, FILE *out);

/* ---- metrics as periodic deltas ------------------------------------------------------------ */

/* Workers whose counters a vega_rt_counters holds one by one (more are in the sum alone). */
#define VEGA_RT_COUNTERS_WORKERS 64

/*
 * The runtime's cumulative counters at one moment, or (from vega_rt_metrics_sample) what they
 * did between two moments: plain data. A zeroed one is the runtime's start.
 */
typedef struct vega_rt_counters {
    uint64_t at_ns;          /* vega_now() when read; in a delta, the interval's length */
    unsigned workers;        /* the runtime's workers */
    vega_worker_metrics sum; /* every worker's counters added (local_queue: the tasks queued
                                now, in a delta too: it is a gauge) */
    uint64_t blocking_jobs;  /* jobs the blocking pool ran to their end */
    uint64_t live_tasks;     /* a gauge: now (in a delta too) */
    vega_worker_metrics worker[VEGA_RT_COUNTERS_WORKERS]; /* the first workers' own */
} vega_rt_counters;

/* vega_rt_counters' layout version (API rules: ABI). It embeds vega_worker_metrics, in an
 * array too, so a prefix is not an older layout here: when either struct grows, this version
 * goes up, and the library keeps the older layouts and converts to the caller's (the functions
 * below take it; a layout it does not know is -EINVAL, the structs left as they were). */
#define VEGA_RT_COUNTERS_VERSION 1

/* Reads every counter into *out (relaxed reads: each value exact, the set not a snapshot).
 * Returns 0; -EINVAL (rt or out NULL, or an unknown layout). Context: any thread. Since 0.1
 * (versioned since 0.2). */
VEGA_API int vega_rt_counters_read_versioned(const vega_rt *rt, vega_rt_counters *out,
                                             int counters_version);
#define vega_rt_counters_read(...)                                                                 \
    vega_rt_counters_read_versioned(__VA_ARGS__, VEGA_RT_COUNTERS_VERSION)

/* *delta = cur - prev, counter by counter (a counter that went down, which they do not, gives
 * 0); the gauges (local_queue, live_tasks) and workers are cur's. A pure function: delta may
 * be prev or cur. Returns 0; -EINVAL (a pointer NULL, or an unknown layout). Since 0.1
 * (versioned since 0.2). */
VEGA_API int vega_rt_counters_delta_versioned(const vega_rt_counters *prev,
                                              const vega_rt_counters *cur, vega_rt_counters *delta,
                                              int counters_version);
#define vega_rt_counters_delta(...)                                                                \
    vega_rt_counters_delta_versioned(__VA_ARGS__, VEGA_RT_COUNTERS_VERSION)

/* Reads the counters, sets *delta to what they did since *prev and *prev to the new reading:
 * called every N ms, it gives the runtime's activity per interval (a zeroed *prev the first
 * time: since the start). Returns 0; -EINVAL (a pointer NULL, or an unknown layout). Context:
 * any thread. Since 0.1 (versioned since 0.2). */
VEGA_API int vega_rt_metrics_sample_versioned(const vega_rt *rt, vega_rt_counters *prev,
                                              vega_rt_counters *delta, int counters_version);
#define vega_rt_metrics_sample(...)                                                                \
    vega_rt_metrics_sample_versioned(__VA_ARGS__, VEGA_RT_COUNTERS_VERSION)

/* What vega_rt_metrics_sampler_spawn calls each interval, on the sampler's task: delta is
 * borrowed for the call, in the layout the caller was built with. */
typedef void (*vega_rt_sample_fn)(void *user, const vega_rt_counters *delta);

/*
 * Spawns a task that calls fn(user, delta) every every_ms (on a fixed schedule from its start:
 * a late tick does not push the next ones back) with what the counters did since the previous
 * call (the first: since the task started). It runs until cancelled: vega_task_cancel, then
 * vega_task_join (the runtime's shutdown cancels it too); cancelled, it calls fn a last time
 * with the partial interval, so the deltas add up to everything done while it ran. *out receives
 * its handle, owned by the caller. Returns 0; -EINVAL (out or fn NULL, every_ms 0, or an
 * unknown counters layout); -ENOMEM; the codes of vega_task_spawn. Context: inside a task.
 * Since 0.1 (versioned since 0.2: the macro passes VEGA_RT_COUNTERS_VERSION, the layout fn
 * receives).
 */
VEGA_API int vega_rt_metrics_sampler_spawn_versioned(vega_task **out, uint64_t every_ms,
                                                     vega_rt_sample_fn fn, void *user,
                                                     int counters_version);
#define vega_rt_metrics_sampler_spawn(...)                                                         \
    vega_rt_metrics_sampler_spawn_versioned(__VA_ARGS__, VEGA_RT_COUNTERS_VERSION)

/* Writes one line per live task (id, name, state, worker) for debugging. */
VEGA_API void vega_rt_dump_tasks(const vega_rt *rt, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
