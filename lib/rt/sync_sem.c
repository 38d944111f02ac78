/* SPDX-License-Identifier: MIT */
/* Counting semaphore with strict FIFO service, so a large acquire is not starved. */
#include <string.h>

#include "sync_int.h"

void vega_sem_init(vega_sem *s, uint64_t permits)
{
    memset(s, 0, sizeof *s);
    s->permits_ = permits;
}

void vega_sem_fini(vega_sem *s)
{
    VEGA_ASSERT(vega__waitq_empty(&s->q_));
    (void)s;
}

/* Serves waiters from the head while their request fits. Afterwards a non-empty queue means the
 * head needs more than permits_. */
static void dispatch(vega_sem *s)
{
    struct vega__waiter *w;
    while ((w = vega__waitq_head(&s->q_)) != NULL && w->n <= s->permits_) {
        s->permits_ -= w->n;
        vega__waitq_wake(&s->q_, w, 0);
    }
}

int vega_sem_acquire(vega_sem *s, uint64_t n, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&s->q_.lock_);
    if (s->closed_) {
        r = VEGA_ERR_CLOSED;
    } else if (vega__waitq_empty(&s->q_) && n <= s->permits_) {
        s->permits_ -= n;
        r = 0;
    } else if (dl == 0) {
        r = -ETIMEDOUT;
    } else {
        struct vega__waiter w;
        w.n = n;
        vega__waitq_push(&s->q_, &w);
        r = vega__waitq_wait(&s->q_.lock_, &s->q_, &w, dl, "semaphore");
        if (!w.done)
            dispatch(s); /* leaving the head may let the next waiter's smaller request fit */
    }
    vega__sync_unlock(&s->q_.lock_);
    return r;
}

bool vega_sem_try_acquire(vega_sem *s, uint64_t n)
{
    bool ok = false;
    vega__sync_lock(&s->q_.lock_);
    if (!s->closed_ && vega__waitq_empty(&s->q_) && n <= s->permits_) {
        s->permits_ -= n;
        ok = true;
    }
    vega__sync_unlock(&s->q_.lock_);
    return ok;
}

void vega_sem_release(vega_sem *s, uint64_t n)
{
    vega__sync_lock(&s->q_.lock_);
    s->permits_ = vega__sat_add(s->permits_, n);
    dispatch(s);
    vega__sync_unlock(&s->q_.lock_);
}

uint64_t vega_sem_available(vega_sem *s)
{
    vega__sync_lock(&s->q_.lock_);
    uint64_t n = s->permits_;
    vega__sync_unlock(&s->q_.lock_);
    return n;
}

void vega_sem_close(vega_sem *s)
{
    vega__sync_lock(&s->q_.lock_);
    s->closed_ = true;
    vega__waitq_wake_all(&s->q_, VEGA_ERR_CLOSED);
    vega__sync_unlock(&s->q_.lock_);
}
