/* SPDX-License-Identifier: MIT */
/* Notify (Tokio's): notify_one wakes a waiter or stores a single permit; notify_all wakes all. */
#include <string.h>

#include "sync_int.h"

void vega_notify_init(vega_notify *n)
{
    memset(n, 0, sizeof *n);
}

void vega_notify_fini(vega_notify *n)
{
    VEGA_ASSERT(vega__waitq_empty(&n->q_));
    (void)n;
}

int vega_notify_wait(vega_notify *n, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&n->q_.lock_);
    if (n->permit_) {
        n->permit_ = false;
        r = 0;
    } else if (dl == 0) {
        r = -ETIMEDOUT;
    } else {
        struct vega__waiter w;
        vega__waitq_push(&n->q_, &w);
        r = vega__waitq_wait(&n->q_.lock_, &n->q_, &w, dl, "notify");
    }
    vega__sync_unlock(&n->q_.lock_);
    return r;
}

void vega_notify_one(vega_notify *n)
{
    vega__sync_lock(&n->q_.lock_);
    if (!vega__waitq_wake_one(&n->q_, 0))
        n->permit_ = true;
    vega__sync_unlock(&n->q_.lock_);
}

void vega_notify_all(vega_notify *n)
{
    vega__sync_lock(&n->q_.lock_);
    vega__waitq_wake_all(&n->q_, 0);
    vega__sync_unlock(&n->q_.lock_);
}
