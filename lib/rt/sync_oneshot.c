/* SPDX-License-Identifier: MIT */
/* Oneshot channel: a single value from one sender to one receiver, either side may give up. */
#include <stdlib.h>

#include "sync_int.h"

struct vega_oneshot {
    unsigned lock;
    vega_waitq rxq; /* the receiver (a queue only to tolerate misuse by several) */
    void *val;
    bool sent, taken, tx_closed, rx_closed;
};

int vega_oneshot_new(vega_oneshot **out)
{
    vega_oneshot *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    *out = o;
    return 0;
}

int vega_oneshot_send(vega_oneshot *o, void *v)
{
    int r = 0;
    vega__sync_lock(&o->lock);
    if (o->sent || o->tx_closed || o->rx_closed) {
        r = VEGA_ERR_CLOSED;
    } else {
        o->val = v;
        o->sent = true;
        vega__waitq_wake_all(&o->rxq, 0);
    }
    /* The receiver may free o as soon as this store lands: nothing may follow it. */
    vega__sync_unlock(&o->lock);
    return r;
}

/* Under the lock: 0 (value taken), VEGA_ERR_CLOSED, or VEGA_ERR_EMPTY (nothing yet). */
static int take(vega_oneshot *o, void **v)
{
    if (o->sent && !o->taken) {
        o->taken = true;
        *v = o->val;
        return 0;
    }
    if (o->sent || o->tx_closed || o->rx_closed)
        return VEGA_ERR_CLOSED;
    return VEGA_ERR_EMPTY;
}

int vega_oneshot_recv(vega_oneshot *o, void **v, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&o->lock);
    for (;;) {
        r = take(o, v);
        if (r != VEGA_ERR_EMPTY)
            break;
        if (dl == 0) {
            r = -ETIMEDOUT;
            break;
        }
        struct vega__waiter w;
        vega__waitq_push(&o->rxq, &w);
        r = vega__waitq_wait(&o->lock, &o->rxq, &w, dl, "oneshot");
        if (!w.done)
            break;
    }
    vega__sync_unlock(&o->lock);
    return r;
}

int vega_oneshot_try_recv(vega_oneshot *o, void **v)
{
    vega__sync_lock(&o->lock);
    int r = take(o, v);
    vega__sync_unlock(&o->lock);
    return r;
}

void vega_oneshot_close(vega_oneshot *o)
{
    vega__sync_lock(&o->lock);
    o->tx_closed = true;
    vega__waitq_wake_all(&o->rxq, 0);
    vega__sync_unlock(&o->lock);
}

void vega_oneshot_rx_close(vega_oneshot *o)
{
    vega__sync_lock(&o->lock);
    o->rx_closed = true;
    vega__sync_unlock(&o->lock);
}

void vega_oneshot_free(vega_oneshot *o)
{
    if (!o)
        return;
    VEGA_ASSERT(vega__waitq_empty(&o->rxq));
    free(o);
}
