/* SPDX-License-Identifier: MIT */
/* The wait queue under every sync primitive: FIFO of stack-allocated waiters, task parking and a
 * futex fallback for threads outside the runtime. */
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sync_int.h"

void vega__sync_lock_slow(unsigned *l)
{
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_load_n(l, __ATOMIC_RELAXED) && !__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE))
            return;
        /* The holder may have been preempted (more workers than CPUs): let it run. */
        if (spins >= 64)
            sched_yield();
        else
            vega__cpu_relax();
    }
}

void vega__waitq_push(vega_waitq *q, struct vega__waiter *w)
{
    w->task = vega__task_self();
    atomic_store_explicit(&w->futex, 0, memory_order_relaxed);
    w->done = false;
    w->res = 0;
    w->next = NULL;
    w->prev = (struct vega__waiter *)q->tail_;
    if (w->prev)
        w->prev->next = w;
    else
        q->head_ = w;
    q->tail_ = w;
}

void vega__waitq_remove(vega_waitq *q, struct vega__waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head_ = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail_ = w->prev;
    w->next = w->prev = NULL;
}

static void futex_wake(_Atomic uint32_t *f)
{
    atomic_store_explicit(f, 1, memory_order_release);
    syscall(SYS_futex, f, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void vega__waitq_wake(vega_waitq *q, struct vega__waiter *w, int res)
{
    vega__waitq_remove(q, w);
    w->res = res;
    w->done = true;
    /* Still under the primitive's lock: the waiter cannot have returned, so w and its task are
     * alive until we let go of the lock. */
    if (w->task)
        vega__task_wake(w->task);
    else
        futex_wake(&w->futex);
}

bool vega__waitq_wake_one(vega_waitq *q, int res)
{
    struct vega__waiter *w = vega__waitq_head(q);
    if (!w)
        return false;
    vega__waitq_wake(q, w, res);
    return true;
}

size_t vega__waitq_wake_all(vega_waitq *q, int res)
{
    size_t n = 0;
    while (vega__waitq_wake_one(q, res))
        n++;
    return n;
}

/* A thread outside any task sleeps on the node's futex word until woken or dl (monotonic). */
static int thread_sleep(struct vega__waiter *w, vega_deadline dl)
{
    struct timespec ts, *tsp = NULL;
    if (dl != VEGA_DEADLINE_NEVER) {
        ts.tv_sec = (time_t)(dl / VEGA_NS_PER_S);
        ts.tv_nsec = (long)(dl % VEGA_NS_PER_S);
        tsp = &ts;
    }
    while (!atomic_load_explicit(&w->futex, memory_order_acquire)) {
        /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
        long rc = syscall(SYS_futex, &w->futex, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, tsp,
                          NULL, FUTEX_BITSET_MATCH_ANY);
        if (rc < 0 && errno == ETIMEDOUT)
            return -ETIMEDOUT;
    }
    return 0;
}

int vega__waitq_wait(unsigned *lock, vega_waitq *q, struct vega__waiter *w, vega_deadline dl,
                     const char *reason)
{
    for (;;) {
        vega__sync_unlock(lock);
        int r = w->task ? vega__park(dl, 0, reason) : thread_sleep(w, dl);
        vega__sync_lock(lock);
        if (w->done)
            return w->res; /* completion wins over timeout and cancellation */
        if (r < 0) {
            vega__waitq_remove(q, w);
            return r;
        }
        /* woken spuriously: park again */
    }
}

int vega__sync_coop(vega_deadline dl)
{
    if (dl == 0 || !vega__task_self())
        return 0;
    return vega_coop();
}
