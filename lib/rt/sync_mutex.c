/* SPDX-License-Identifier: MIT */
/* Task mutex with FIFO hand-off: unlock passes ownership straight to the longest waiter. */
#include <string.h>

#include "sync_int.h"

void vega_mutex_init(vega_mutex *m)
{
    memset(m, 0, sizeof *m);
}

void vega_mutex_fini(vega_mutex *m)
{
    VEGA_ASSERT(!m->locked_ && vega__waitq_empty(&m->q_));
    (void)m;
}

/* Invariant: !locked_ implies an empty queue (unlock hands over instead of freeing m). */
int vega_mutex_lock(vega_mutex *m, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&m->q_.lock_);
    if (!m->locked_) {
        m->locked_ = true;
        vega__sync_unlock(&m->q_.lock_);
        return 0;
    }
    if (dl == 0) {
        vega__sync_unlock(&m->q_.lock_);
        return -ETIMEDOUT;
    }
    struct vega__waiter w;
    vega__waitq_push(&m->q_, &w);
    r = vega__waitq_wait(&m->q_.lock_, &m->q_, &w, dl, "mutex");
    vega__sync_unlock(&m->q_.lock_);
    return r; /* 0 when handed over */
}

bool vega_mutex_trylock(vega_mutex *m)
{
    bool ok = false;
    vega__sync_lock(&m->q_.lock_);
    if (!m->locked_)
        ok = m->locked_ = true;
    vega__sync_unlock(&m->q_.lock_);
    return ok;
}

void vega_mutex_unlock(vega_mutex *m)
{
    vega__sync_lock(&m->q_.lock_);
    VEGA_ASSERT(m->locked_);
    if (!vega__waitq_wake_one(&m->q_, 0))
        m->locked_ = false;
    vega__sync_unlock(&m->q_.lock_);
}
