/* SPDX-License-Identifier: MIT */
/* Runtime internals shared by lib/rt's files and the layers above it (never installed). */
#ifndef VEGA_RT_INT_H
#define VEGA_RT_INT_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vega/rt.h>

#include "base.h"

/* ---- spin locks: short critical sections only (no syscalls, no suspension inside) --------- */

typedef struct vega__spin {
    atomic_uint v;
} vega__spin;

#define VEGA__SPIN_INIT                                                                            \
    {                                                                                              \
        0                                                                                          \
    }

static inline void vega__spin_init(vega__spin *s)
{
    atomic_init(&s->v, 0);
}

/* Spins a little, then yields the CPU: when the holder's thread was descheduled (more runnable
 * threads than CPUs, a VM whose vCPU is preempted), spinning on would burn the whole time slice
 * it needs to finish (measured: 42% of a loaded HTTP/3 server's CPU in one such spin). */
#define VEGA__SPIN_BEFORE_YIELD 128

static inline void vega__spin_lock(vega__spin *s)
{
    unsigned spins = 0;
    for (;;) {
        if (!atomic_exchange_explicit(&s->v, 1, memory_order_acquire))
            return;
        while (atomic_load_explicit(&s->v, memory_order_relaxed)) {
            if (++spins < VEGA__SPIN_BEFORE_YIELD) {
                vega__cpu_relax();
            } else {
                sched_yield();
                spins = 0;
            }
        }
    }
}

static inline bool vega__spin_trylock(vega__spin *s)
{
    return !atomic_exchange_explicit(&s->v, 1, memory_order_acquire);
}

static inline void vega__spin_unlock(vega__spin *s)
{
    atomic_store_explicit(&s->v, 0, memory_order_release);
}

/* ---- context switch (ctx_*.S) ------------------------------------------------------------- */

/* Saves callee-saved registers on the current stack, stores the stack pointer in *save,
 * loads `load` as the stack pointer and restores the registers saved there. */
void vega__ctx_switch(void **save, void *load);

/* Prepares a fresh stack so that the first switch into it calls entry(arg) on it. */
void *vega__ctx_make(void *stack_top, void (*entry)(void *), void *arg);

/* ---- timers -------------------------------------------------------------------------------- */

struct vega__wheel;

/* A timer entry lives inside whatever waits (a task), so arming one allocates nothing. */
struct vega__timer {
    struct vega__timer *next, *prev;
    struct vega__wheel *wheel; /* the wheel it is armed in, NULL when not armed */
    uint64_t when_ms;          /* expiry on the wheel's millisecond scale */
    union {
        struct vega_task *task;              /* !call: woken when it fires */
        void (*fire)(struct vega__timer *t); /* call: called (owner thread, wheel lock held) */
    };
    bool call;
    bool fired;
    uint8_t level, slot;
};

/* ---- tasks --------------------------------------------------------------------------------- */

enum vega__task_state {
    VEGA__T_RUNNABLE = 0, /* in a run queue (or about to be) */
    VEGA__T_RUNNING,      /* on a worker */
    VEGA__T_NOTIFIED,     /* on a worker, and woken while running: its next park returns at once */
    VEGA__T_PARKED,       /* suspended; a wake moves it to RUNNABLE and queues it */
    VEGA__T_DONE,
    VEGA__T_NEW, /* queued, never run, no stack: a joiner may claim it (task.c) */
};

enum {
    VEGA__TF_CANCELLED = 1u << 0,
};

/* jstate bits. */
enum {
    VEGA__J_FINISHED = 1u << 0, /* returned; set by the finisher as its last touch of the task */
    VEGA__J_DETACHED = 1u << 1, /* nobody will join: whoever sees both bits frees the task */
    VEGA__J_JOINER = 1u << 2,   /* `joiner` is set */
    VEGA__J_THREAD = 1u << 3,   /* ... and is a thread waiter, not a task */
};

/* Flags for vega__park. */
enum {
    VEGA__PARK_NOCANCEL = 1u << 0, /* ignore cancellation (waiting for the kernel's answer) */
};

struct vega__stack {
    void *base; /* lowest usable address (the canary sits there, if it has one) */
    size_t size;
    struct vega__stack *next, *prev; /* pool lists (prev: the cold list only) */
    struct vega__region *region;     /* the mapping it was carved from */
    bool cold;                       /* on the cold list: pages given back */
    bool canary;    /* no guard page below it: a canary at base is checked at every switch-out */
    unsigned frees; /* frees since its pages were committed: no probe at the first (stack.c) */
    void *low;      /* the lowest stack pointer its task switched out at (NULL: none yet) */
    /* While attached to a started task: the task, its place on the live list of the worker that
     * started it (for cancel-all and dumps) and what it waits on. */
    struct vega_task *task;
    struct vega__stack *live_next, *live_prev;
    struct vega__worker *live_owner;
    const char *wait_reason; /* static string for dumps: "sleep", "mutex", ... */
};

struct vega__worker;
struct vega_group;
struct vega__thread_waiter;
struct vega__group_node;

struct vega_task {
    void *sp;               /* saved stack pointer while switched out */
    atomic_uint state;      /* enum vega__task_state */
    atomic_uint flags;      /* VEGA__TF_* */
    struct vega_task *next; /* free-list link */
    struct vega_rt *rt;
    struct vega__stack *stack; /* attached when it first runs, released when it returns */
    vega_task_fn fn;
    void *arg_result;       /* fn's argument until it runs, then its result */
    vega_deadline deadline; /* task-wide cap (spawn option and scopes) */

    /* join/detach handshake (task.c): VEGA__J_* bits, and who waits for the task */
    atomic_uint jstate;
    /* Run-queue entries that point at this struct beyond the one a NEW or RUNNABLE task has:
     * left by joiners that claimed a task and ran it inline (task.c, "work-first join"). It
     * belongs to the struct, not to one task: it survives free and reuse, so the struct can be
     * reused at once while such an entry waits in a queue (sched.c, take_entry). */
    atomic_uint stale;
    void *joiner; /* the joining task, or a struct vega__thread_waiter (VEGA__J_THREAD) */

    struct vega__group_node *group; /* task group membership, NULL if none */
    uint64_t id;
    const char *name; /* borrowed from the spawner (a literal), or NULL */
#if defined(VEGA_ASAN)
    void *asan_fake;
#endif
#if defined(VEGA_TSAN)
    void *tsan_fiber;
#endif
};

/*
 * The calling task / worker / runtime. Not cached across suspension: a task may resume on
 * another thread, so these are out-of-line reads of a thread-local.
 */
struct vega__worker *vega__worker_self_slow(void);

/* The worker's thread-local, initial-exec so that reading it is one instruction. */
/* True on the runtime's worker threads, which keep SIGPIPE blocked for life. */
extern __thread bool vega__sigpipe_blocked __attribute__((tls_model("initial-exec")));
extern __thread struct vega__worker *vega__tls_worker
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline struct vega__worker *vega__worker_self(void)
{
#if defined(__x86_64__)
    /* A volatile asm is never merged with an earlier read, so a task that resumed on another
     * thread reads that thread's slot (a plain TLS read's address may be cached by the
     * compiler across the call that switched threads). */
    struct vega__worker *w;
    __asm__ __volatile__("movq vega__tls_worker@gottpoff(%%rip), %0\n\t"
                         "movq %%fs:(%0), %0"
                         : "=r"(w));
    return w;
#else
    return vega__worker_self_slow();
#endif
}

struct vega_task *vega__task_self(void);

/*
 * Suspends the calling task until vega__task_wake, the deadline (the earlier of dl and the
 * task's deadline scope), or cancellation.
 * Returns 0 when woken (possibly spuriously: callers re-check their condition in a loop),
 * -ETIMEDOUT, or -ECANCELED (sticky: once cancelled, every park returns it at once unless
 * VEGA__PARK_NOCANCEL). `reason` is a static string shown in task dumps.
 *
 * The waiter protocol every primitive follows (allocation-free, no lost or stale wake-ups):
 *   lock(prim); if (ready) { take; unlock; return 0; }
 *   link a waiter node that lives on the task's stack; loop {
 *       unlock(prim); r = vega__park(dl, 0, "why"); lock(prim);
 *       if (node.done) { unlock; return 0; }          // completion wins over timeout/cancel
 *       if (r < 0) { unlink node; unlock; return r; }
 *   }
 * and a waker does, under the same lock: unlink node; node.done = true; vega__task_wake(task).
 * Because the waker touches the node and the task only under the lock and the waiter leaves
 * only under the lock, nothing is touched after the waiter returned.
 */
int vega__park(vega_deadline dl, unsigned flags, const char *reason);

/* Makes t runnable if parked; if it is running, its next park returns at once. Thread-safe;
 * t must be alive (see the waiter protocol above). */
void vega__task_wake(struct vega_task *t);

/* The effective deadline: the earlier of dl and the calling task's deadline scope. */
vega_deadline vega__deadline_eff(vega_deadline dl);

/* ---- I/O driver interface (drivers in driver_*.c) ----------------------------------------- */

/*
 * A readiness wait or kernel operation in flight on one worker's driver. Lives on the waiting
 * task's stack. Only the owning worker's thread touches the driver, so completion and
 * cancellation are sequenced there; a task woken for timeout or cancel asks the owner to cancel
 * and keeps waiting until `done`, so the kernel never writes into a stack that moved on.
 */
struct vega__op {
    struct vega_task *task; /* NULL: the op belongs to no task (a watch, see vega__watch_event) */
    struct vega__worker *owner;
    int res; /* revents for polls, the kernel's result otherwise */
    int fd;
    uint32_t events;
    uint8_t kind;    /* watches: VEGA__WATCH_POLL, _ACCEPT or _RECV; 0 for a task's op */
    bool unwatching; /* watches: unwatch was asked (driver-private) */
    bool poll_ended; /* watches: the kernel sent the registration's last event (driver-private) */
    uint8_t removes; /* watches: removal requests the kernel has not answered (driver-private) */
    /* A task's operation and a watch never share an op, so their own fields share the bytes: a
     * parked connection keeps its watch's op, and every byte of it counts. */
    union {
        struct {                          /* a task's operation (task != NULL) */
            struct vega__op *cancel_next; /* owner's cancel mailbox */
            atomic_int done;
            atomic_int cancel_state; /* a cancel asked of another worker, and its answer */
            /* Kernel operations (io_uring only): fills the SQE (a struct io_uring_sqe *). */
            void (*prep)(void *sqe, struct vega__op *op);
            void *arg; /* for prep */
        };
        struct { /* a watch (task == NULL) */
            /* Receive watches (io_uring): the one receive in flight, and what it brought that
             * nobody read yet. Guarded by the owner's op lock; read through vega__watch_read. */
            struct vega_task *rb_waiter; /* a reader waiting for the receive in flight */
            int32_t rb_bid;              /* first buffer held (a list in the driver), -1: none */
            int32_t rb_tail;             /* last buffer held, -1: none */
            uint32_t rb_off;             /* bytes of the first buffer read already */
            int rb_end;         /* after the bytes: 1 end of stream, < 0 an error, 0 neither */
            uint16_t rb_held;   /* buffers held */
            bool recv_armed;    /* a receive (or the poll standing in for it) is in flight */
            bool recv_poll;     /* what is in flight is a poll (the ring had no buffer) */
            bool recv_stopping; /* the multishot receive was asked to end (enough held) */
        };
    };
};

/* Watch kinds (op->kind). */
enum {
    VEGA__WATCH_POLL = 0, /* readiness: multishot poll (io_uring), edge-triggered (epoll) */
    VEGA__WATCH_ACCEPT,   /* io_uring multishot accept: fn gets each fd or error */
    VEGA__WATCH_RECV,     /* io_uring multishot receive into the worker's provided-buffer ring */
};

/*
 * A watch: a persistent readiness registration for an fd on one worker's driver (its home),
 * plus an arm/fire state machine, so that an idle connection waits with no task, no stack and
 * no per-wait syscall. While armed, the first readiness event (or the deadline, or shutdown)
 * fires it: a fresh task runs fn(w, status) with status > 0 (revents), -ETIMEDOUT or
 * -ECANCELED. Events that come while it is not armed are remembered (READY), and the next arm
 * fires at once. Arm from a task on any worker; the registration stays on the home worker.
 * Close hands the watch to its home, which unregisters it and then calls gone(w) on its own
 * thread; only then may the memory go (gone may run before vega__watch_close returns).
 */
enum {
    VEGA__W_ARMED = 1u << 0,
    VEGA__W_READY = 1u << 1,
};

struct vega__watch {
    struct vega__op op;       /* the driver registration; op.owner is the home worker */
    atomic_uint state;        /* VEGA__W_* */
    atomic_uint revents;      /* events remembered with READY, reported by the next arm */
    struct vega__timer timer; /* the deadline while armed, on the arming worker's wheel */
    void (*fn)(struct vega__watch *w, int status);
    void (*gone)(struct vega__watch *w);
    struct vega__watch *next, *prev; /* home worker's list (home thread only) */
    struct vega__watch *close_next;  /* home worker's close mailbox */
    struct vega__watch *rearm_next;  /* home worker's re-arm mailbox (receive watches) */
    int status;
    bool registered;
    bool rearm_queued;        /* in the re-arm mailbox (home's close_lock) */
    atomic_bool close_posted; /* in the close mailbox, not yet taken (see vega__watch_closing) */
};

/* flags: VEGA__WATCH_ARM_RECV asks for a receive watch (the bytes that wake it wait in a
 * provided buffer, taken with vega__watch_read) where the driver has them; otherwise, and on
 * epoll, the watch is a readiness one. Decided at the first arm. */
enum {
    VEGA__WATCH_ARM_RECV = 1u << 0
};
int vega__watch_arm(struct vega__watch *w, int fd, uint32_t events, vega_deadline dl,
                    unsigned flags, void (*fn)(struct vega__watch *w, int status));
void vega__watch_close(struct vega__watch *w, void (*gone)(struct vega__watch *w));
/* Marks a registered, unarmed watch ready, so that the next arm fires at once with revents
 * (for conditions that will raise no new event, such as a hang-up already reported). */
void vega__watch_set_ready(struct vega__watch *w, unsigned revents);

/*
 * Reads what a receive watch holds. Returns the bytes copied (> 0), 0 at the end of the
 * stream, a held error (once), -EAGAIN when the watch holds nothing and no receive is in flight
 * (the caller reads the socket itself: nothing can overtake it), or, when a receive is in
 * flight, waits for it up to dl: -ETIMEDOUT / -ECANCELED. Always -EAGAIN for other watches.
 * Context: inside a task, by the socket's one reader.
 */
vega_ssize vega__watch_read(struct vega__watch *w, void *buf, size_t len, vega_deadline dl);
/* True when a receive watch holds bytes or has a receive in flight (any thread). */
bool vega__watch_holds(const struct vega__watch *w);

/*
 * A kernel-side multishot registration without the arm/fire machine (kind VEGA__WATCH_ACCEPT):
 * registers on the calling worker, which becomes its home; fn(w, res) then runs on the home
 * thread, op lock held, for every result the kernel posts; when the kernel ends it (by itself
 * or after vega__watch_unregister) gone(w) runs, likewise, and the watch may start again.
 * Returns -ENOTSUP when the driver lacks the kind.
 */
int vega__watch_start(struct vega__watch *w, int fd, unsigned kind,
                      void (*fn)(struct vega__watch *w, int res),
                      void (*gone)(struct vega__watch *w));
/* Asks the home to end a started watch (from any thread; gone follows). The _locked variant is
 * for the home thread with its op lock held (inside fn). */
void vega__watch_unregister(struct vega__watch *w);
void vega__watch_unregister_locked(struct vega__watch *w);
/* True while an unregister asked from another thread has not been handled by the home yet:
 * the watch's memory must stay until this is false (then take the home's op lock once). */
bool vega__watch_closing(struct vega__watch *w);
/* Takes the home's op lock once: after it the home no longer touches what it handled. */
void vega__watch_sync_home(struct vega__watch *w);
/* True when the caller runs on w's home worker. */
bool vega__watch_on_home(const struct vega__watch *w);

/* Home thread, op lock held: what the driver calls for each event of a watch's op (a task-less
 * op): a started watch's result (kind VEGA__WATCH_ACCEPT) or an armed watch's readiness or
 * receive. Dispatched on op->kind rather than through a pointer in every op. */
void vega__watch_event(struct vega__op *op);

/* op->res of the last vega__watch_event of a watch, after unwatch. */
#define VEGA__WATCH_GONE INT32_MIN

struct vega__driver_ops {
    const char *name;
    int (*init)(struct vega__worker *w);
    void (*fini)(struct vega__worker *w);
    /* Submits pending work, waits up to timeout_ns (0 = don't block, -1 = forever) for events
     * or a wake-up, completes ops (under the op lock) and wakes their tasks. Owner only. */
    void (*park)(struct vega__worker *w, int64_t timeout_ns);
    /* Wakes w out of park; thread-safe, may be called while w is not parked. */
    void (*unpark)(struct vega__worker *w);
    /* Starts a readiness wait for fd on w (the calling worker). */
    int (*poll_start)(struct vega__worker *w, struct vega__op *op);
    /* Starts a kernel operation: op->prep fills an SQE. NULL when the driver has none (epoll). */
    int (*submit)(struct vega__worker *w, struct vega__op *op);
    /* Persistent readiness registration: vega__watch_event(op) runs (owner thread, op lock held)
     * for every readiness event with op->res = revents. After unwatch it runs once more with
     * op->res = VEGA__WATCH_GONE, and never again. Owner thread only. */
    int (*watch)(struct vega__worker *w, struct vega__op *op);
    void (*unwatch)(struct vega__worker *w, struct vega__op *op);
    /* Cancels op on w (owner thread, op lock held); the op then completes with done set. */
    void (*cancel)(struct vega__worker *w, struct vega__op *op);
    /* Receive watches (NULL when the driver has none): starts the next receive (owner thread,
     * op lock held); copies held bytes out and gives a used-up buffer back to the ring (any
     * thread, owner's op lock held). */
    void (*recv_arm)(struct vega__worker *w, struct vega__op *op);
    size_t (*recv_take)(struct vega__worker *w, struct vega__op *op, void *buf, size_t len);
};

extern const struct vega__driver_ops vega__driver_epoll;
#if defined(VEGA_HAVE_URING)
extern const struct vega__driver_ops vega__driver_uring;
#endif

/*
 * Waits until fd is ready for `events` (POLLIN/POLLOUT/...). Returns the revents (> 0),
 * -ETIMEDOUT or -ECANCELED (after the kernel let go of the wait). Context: inside a task.
 */
int vega__poll_fd(int fd, uint32_t events, vega_deadline dl);

/*
 * Runs a kernel operation on the calling worker's io_uring: prep(sqe, op) fills the SQE (set
 * op->arg and whatever prep needs first); the call returns the CQE's res, or -ETIMEDOUT /
 * -ECANCELED once the kernel answered the cancel (a result that raced the cancel wins).
 * Returns -ENOTSUP when the worker's driver is not io_uring (callers fall back, e.g. to the
 * blocking pool). Buffers the operation uses must stay valid until it returns, which they do
 * when they live on the task's stack. Context: inside a task.
 */
int vega__op_submit(void (*prep)(void *sqe, struct vega__op *op), void *arg, vega_deadline dl,
                    const char *reason);
/* vega__op_submit for an operation that ends on its own (a file's open, read, stat...): while
 * it is in flight a paused clock does not jump, as for a blocking-pool job. */
int vega__op_submit_disk(void (*prep)(void *sqe, struct vega__op *op), void *arg, vega_deadline dl,
                         const char *reason);

/* True when the calling worker's driver runs kernel operations (io_uring). */
bool vega__driver_has_ops(void);

/* Completes op on the owner thread, with the owner's op lock (cancel_lock) held: stores res,
 * marks done, wakes the task. */
void vega__op_complete(struct vega__op *op, int res);

/* Waits for a started op (task side): on timeout or cancel asks the owner to cancel it and
 * keeps waiting until the driver let go. Returns op->res, or -ETIMEDOUT/-ECANCELED when the op
 * was cancelled before completing. */
int vega__op_wait(struct vega__op *op, vega_deadline dl, const char *reason);

/* The per-worker driver state for drivers (opaque to the scheduler). */
void *vega__worker_driver_data(struct vega__worker *w);
void vega__worker_set_driver_data(struct vega__worker *w, void *p);
void vega__worker_count_io(struct vega__worker *w);
/* n completions delivered by the driver (the metrics). */
void vega__worker_count_completions(struct vega__worker *w, uint64_t n);

/* ---- environment switches (env.c; the table is in docs/ARCHITECTURE.md) ---------------- */
struct vega__env {
    int driver;      /* VEGA_DRIVER: VEGA_DRIVER_URING, VEGA_DRIVER_EPOLL, or 0 (unset/other) */
    bool driver_set; /* VEGA_DRIVER is set (whatever its value) */
    bool uring_no_multishot_accept, uring_no_buf_ring, uring_no_op_recv;
};
/* Read once per process; any thread. */
const struct vega__env *vega__env(void);

#endif
