/* SPDX-License-Identifier: MIT */
/* Broadcast channel: a ring of the last `capacity` messages; each receiver keeps its position
 * and skips ahead (VEGA_ERR_LAGGED) when the messages it had not seen were overwritten. */
#include <stdint.h>
#include <stdlib.h>

#include "sync_int.h"

struct vega_broadcast {
    unsigned lock;
    bool closed;
    size_t cap;
    uint64_t tail; /* position of the next message; message p sits in ring[p % cap] */
    size_t nrx;
    vega_waitq rxq; /* receivers waiting for tail to move */
    void **ring;
};

struct vega_broadcast_rx {
    vega_broadcast *b;
    uint64_t next; /* position of the next message this receiver reads */
};

int vega_broadcast_new(vega_broadcast **out, size_t capacity)
{
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(void *))
        return -EINVAL;
    vega_broadcast *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->ring = calloc(capacity, sizeof(void *));
    if (!b->ring) {
        free(b);
        return -ENOMEM;
    }
    b->cap = capacity;
    *out = b;
    return 0;
}

int vega_broadcast_send(vega_broadcast *b, void *v)
{
    int r;
    vega__sync_lock(&b->lock);
    if (b->closed) {
        r = VEGA_ERR_CLOSED;
    } else {
        b->ring[b->tail % b->cap] = v;
        b->tail++;
        vega__waitq_wake_all(&b->rxq, 0);
        r = b->nrx > INT32_MAX ? INT32_MAX : (int)b->nrx;
    }
    vega__sync_unlock(&b->lock);
    return r;
}

int vega_broadcast_subscribe(vega_broadcast *b, vega_broadcast_rx **out)
{
    vega_broadcast_rx *r = malloc(sizeof *r);
    if (!r)
        return -ENOMEM;
    r->b = b;
    vega__sync_lock(&b->lock);
    r->next = b->tail;
    b->nrx++;
    vega__sync_unlock(&b->lock);
    *out = r;
    return 0;
}

/* Under the lock: 0, VEGA_ERR_LAGGED, VEGA_ERR_CLOSED, or VEGA_ERR_EMPTY (nothing new yet). */
static int take(vega_broadcast *b, vega_broadcast_rx *r, void **v, uint64_t *missed)
{
    uint64_t oldest = b->tail > b->cap ? b->tail - b->cap : 0;
    if (r->next < oldest) {
        if (missed)
            *missed = oldest - r->next;
        r->next = oldest;
        return VEGA_ERR_LAGGED;
    }
    if (r->next < b->tail) {
        *v = b->ring[r->next % b->cap];
        r->next++;
        return 0;
    }
    return b->closed ? VEGA_ERR_CLOSED : VEGA_ERR_EMPTY;
}

int vega_broadcast_recv(vega_broadcast_rx *r, void **v, uint64_t *missed, vega_deadline dl)
{
    vega_broadcast *b = r->b;
    int rc = vega__sync_coop(dl);
    if (rc < 0)
        return rc;
    vega__sync_lock(&b->lock);
    for (;;) {
        rc = take(b, r, v, missed);
        if (rc != VEGA_ERR_EMPTY)
            break;
        if (dl == 0) {
            rc = -ETIMEDOUT;
            break;
        }
        struct vega__waiter w;
        vega__waitq_push(&b->rxq, &w);
        rc = vega__waitq_wait(&b->lock, &b->rxq, &w, dl, "broadcast");
        if (!w.done)
            break;
    }
    vega__sync_unlock(&b->lock);
    return rc;
}

void vega_broadcast_rx_free(vega_broadcast_rx *r)
{
    if (!r)
        return;
    vega__sync_lock(&r->b->lock);
    r->b->nrx--;
    vega__sync_unlock(&r->b->lock);
    free(r);
}

void vega_broadcast_close(vega_broadcast *b)
{
    vega__sync_lock(&b->lock);
    b->closed = true;
    vega__waitq_wake_all(&b->rxq, 0);
    vega__sync_unlock(&b->lock);
}

void vega_broadcast_free(vega_broadcast *b)
{
    if (!b)
        return;
    VEGA_ASSERT(b->nrx == 0 && vega__waitq_empty(&b->rxq));
    free(b->ring);
    free(b);
}
