/* SPDX-License-Identifier: MIT */
/* Task read-write lock: one FIFO of readers and writers; a queued writer blocks later readers. */
#include <string.h>

#include "sync_int.h"

enum {
    RW_READ = 0,
    RW_WRITE = 1
};

void vega_rwlock_init(vega_rwlock *l)
{
    memset(l, 0, sizeof *l);
}

void vega_rwlock_fini(vega_rwlock *l)
{
    VEGA_ASSERT(l->state_ == 0 && vega__waitq_empty(&l->q_));
    (void)l;
}

/* Admits waiters from the head while they fit: one writer into a free lock, or every reader up
 * to the first writer while no writer holds it. Afterwards the head (if any) cannot enter, so
 * state_ == 0 implies an empty queue. */
static void dispatch(vega_rwlock *l)
{
    struct vega__waiter *w;
    while ((w = vega__waitq_head(&l->q_)) != NULL) {
        if (w->n == RW_WRITE) {
            if (l->state_ == 0) {
                l->state_ = -1;
                vega__waitq_wake(&l->q_, w, 0);
            }
            return;
        }
        if (l->state_ < 0)
            return;
        l->state_++;
        vega__waitq_wake(&l->q_, w, 0);
    }
}

static bool can_enter(const vega_rwlock *l, unsigned kind)
{
    if (kind == RW_WRITE)
        return l->state_ == 0;
    return l->state_ >= 0 && vega__waitq_empty(&l->q_);
}

static int lock_kind(vega_rwlock *l, unsigned kind, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&l->q_.lock_);
    if (can_enter(l, kind)) {
        l->state_ = kind == RW_WRITE ? -1 : l->state_ + 1;
        vega__sync_unlock(&l->q_.lock_);
        return 0;
    }
    if (dl == 0) {
        vega__sync_unlock(&l->q_.lock_);
        return -ETIMEDOUT;
    }
    struct vega__waiter w;
    w.n = kind;
    vega__waitq_push(&l->q_, &w);
    r = vega__waitq_wait(&l->q_.lock_, &l->q_, &w, dl,
                         kind == RW_WRITE ? "rwlock write" : "rwlock read");
    if (!w.done)
        dispatch(l); /* a writer that left the head may let the readers behind it in */
    vega__sync_unlock(&l->q_.lock_);
    return r;
}

int vega_rwlock_rdlock(vega_rwlock *l, vega_deadline dl)
{
    return lock_kind(l, RW_READ, dl);
}

int vega_rwlock_wrlock(vega_rwlock *l, vega_deadline dl)
{
    return lock_kind(l, RW_WRITE, dl);
}

static bool try_kind(vega_rwlock *l, unsigned kind)
{
    vega__sync_lock(&l->q_.lock_);
    bool ok = can_enter(l, kind);
    if (ok)
        l->state_ = kind == RW_WRITE ? -1 : l->state_ + 1;
    vega__sync_unlock(&l->q_.lock_);
    return ok;
}

bool vega_rwlock_tryrdlock(vega_rwlock *l)
{
    return try_kind(l, RW_READ);
}

bool vega_rwlock_trywrlock(vega_rwlock *l)
{
    return try_kind(l, RW_WRITE);
}

void vega_rwlock_rdunlock(vega_rwlock *l)
{
    vega__sync_lock(&l->q_.lock_);
    VEGA_ASSERT(l->state_ > 0);
    if (--l->state_ == 0)
        dispatch(l);
    vega__sync_unlock(&l->q_.lock_);
}

void vega_rwlock_wrunlock(vega_rwlock *l)
{
    vega__sync_lock(&l->q_.lock_);
    VEGA_ASSERT(l->state_ == -1);
    l->state_ = 0;
    dispatch(l);
    vega__sync_unlock(&l->q_.lock_);
}
