/* SPDX-License-Identifier: MIT */
/* Wait queues shared by the sync primitives: a spin-locked FIFO of waiter nodes that live on the
 * waiting task's stack (or a plain thread's), following the waiter protocol in rt_int.h. */
#ifndef VEGA_SYNC_INT_H
#define VEGA_SYNC_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <vega/sync.h>

#include "rt_int.h"

/*
 * One waiting task (or thread). Lives on the waiter's stack between vega__waitq_push and the
 * return of vega__waitq_wait; only touched under the primitive's lock. A waker unlinks it, stores
 * `res` (and `val` where a value is handed over), sets `done` and wakes the owner, all under the
 * lock, so nothing touches the node after the waiter has left (see vega__park).
 */
struct vega__waiter {
    struct vega__waiter *next, *prev;
    struct vega_task *task; /* NULL: a thread outside any task, sleeping on `futex` */
    _Atomic uint32_t futex; /* thread waiters: 0 = sleeping, 1 = woken */
    bool done;              /* the waker completed this wait */
    int res;                /* what the waker hands over: 0 or an error (VEGA_ERR_CLOSED) */
    uint64_t n;             /* the request: permits (sem), reader or writer (rwlock) */
    void *val;              /* a value handed over (mpsc) */
};

/* ---- the lock word: a spin lock on a plain unsigned (public structs hold `unsigned lock_`) --- */

void vega__sync_lock_slow(unsigned *l);

static inline void vega__sync_lock(unsigned *l)
{
    if (vega__likely(!__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE)))
        return;
    vega__sync_lock_slow(l);
}

static inline void vega__sync_unlock(unsigned *l)
{
    __atomic_store_n(l, 0u, __ATOMIC_RELEASE);
}

/* ---- the FIFO (every call below needs the owning primitive's lock) ------------------------ */

static inline bool vega__waitq_empty(const vega_waitq *q)
{
    return q->head_ == NULL;
}

static inline struct vega__waiter *vega__waitq_head(const vega_waitq *q)
{
    return (struct vega__waiter *)q->head_;
}

static inline void vega__waitq_init(vega_waitq *q)
{
    q->lock_ = 0;
    q->head_ = q->tail_ = NULL;
}

/* Appends w for the calling task (or thread); w->n and w->val are left as the caller set them. */
void vega__waitq_push(vega_waitq *q, struct vega__waiter *w);

/* Unlinks w, which must be queued on q. */
void vega__waitq_remove(vega_waitq *q, struct vega__waiter *w);

/* Completes w (queued on q): unlinks it, stores res, sets done and wakes its owner. */
void vega__waitq_wake(vega_waitq *q, struct vega__waiter *w, int res);

/* Completes the head waiter with res. Returns false when q is empty. */
bool vega__waitq_wake_one(vega_waitq *q, int res);

/* Completes every waiter with res. Returns how many. */
size_t vega__waitq_wake_all(vega_waitq *q, int res);

/*
 * Waits for w (queued on q by the caller, under *lock) to be completed. Called and returns with
 * *lock held. Returns w->res when a waker completed w (completion wins over timeout and
 * cancellation; check w->done to tell it apart), otherwise -ETIMEDOUT or -ECANCELED with w
 * already unlinked. Tasks park with `reason`; plain threads sleep on a futex until dl
 * (CLOCK_MONOTONIC) and are never cancelled.
 */
int vega__waitq_wait(unsigned *lock, vega_waitq *q, struct vega__waiter *w, vega_deadline dl,
                     const char *reason);

/*
 * The cooperative budget for a call that may complete without suspending: spends one unit (and
 * may yield) inside a task when dl != 0. Returns 0 or -ECANCELED.
 */
int vega__sync_coop(vega_deadline dl);

#endif
