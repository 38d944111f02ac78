/* SPDX-License-Identifier: MIT */
/* Reusable barrier: the n-th arrival leads, releases the generation and resets the count. */
#include <string.h>

#include "sync_int.h"

void vega_barrier_init(vega_barrier *b, unsigned n)
{
    memset(b, 0, sizeof *b);
    b->n_ = n ? n : 1;
}

void vega_barrier_fini(vega_barrier *b)
{
    VEGA_ASSERT(vega__waitq_empty(&b->q_));
    (void)b;
}

int vega_barrier_wait(vega_barrier *b, vega_deadline dl)
{
    int r;
    vega__sync_lock(&b->q_.lock_);
    if (b->arrived_ + 1 >= b->n_) {
        vega__waitq_wake_all(&b->q_, 0);
        b->arrived_ = 0;
        b->generation_++;
        r = 1;
    } else if (dl == 0) {
        r = -ETIMEDOUT;
    } else {
        struct vega__waiter w;
        b->arrived_++;
        vega__waitq_push(&b->q_, &w);
        r = vega__waitq_wait(&b->q_.lock_, &b->q_, &w, dl, "barrier");
        if (!w.done)
            b->arrived_--; /* this generation is not complete: withdraw */
    }
    vega__sync_unlock(&b->q_.lock_);
    return r;
}
