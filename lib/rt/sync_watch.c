/* SPDX-License-Identifier: MIT */
/* Watch channel: one current value with a version; receivers wait for the version to move. */
#include <stdlib.h>

#include "sync_int.h"

struct vega_watch {
    unsigned lock;
    bool closed;
    void *val;
    uint64_t version;
    vega_waitq q;
};

int vega_watch_new(vega_watch **out, void *initial)
{
    vega_watch *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->val = initial;
    *out = w;
    return 0;
}

int vega_watch_send(vega_watch *w, void *v)
{
    int r = 0;
    vega__sync_lock(&w->lock);
    if (w->closed) {
        r = VEGA_ERR_CLOSED;
    } else {
        w->val = v;
        w->version++;
        vega__waitq_wake_all(&w->q, 0);
    }
    vega__sync_unlock(&w->lock);
    return r;
}

void *vega_watch_get(vega_watch *w, uint64_t *version)
{
    vega__sync_lock(&w->lock);
    void *v = w->val;
    if (version)
        *version = w->version;
    vega__sync_unlock(&w->lock);
    return v;
}

int vega_watch_changed(vega_watch *w, uint64_t *seen, void **v, vega_deadline dl)
{
    int r = vega__sync_coop(dl);
    if (r < 0)
        return r;
    vega__sync_lock(&w->lock);
    for (;;) {
        if (w->version != *seen) {
            *seen = w->version;
            if (v)
                *v = w->val;
            r = 0;
            break;
        }
        if (w->closed) {
            r = VEGA_ERR_CLOSED;
            break;
        }
        if (dl == 0) {
            r = -ETIMEDOUT;
            break;
        }
        struct vega__waiter wt;
        vega__waitq_push(&w->q, &wt);
        r = vega__waitq_wait(&w->lock, &w->q, &wt, dl, "watch");
        if (!wt.done)
            break;
    }
    vega__sync_unlock(&w->lock);
    return r;
}

void vega_watch_close(vega_watch *w)
{
    vega__sync_lock(&w->lock);
    w->closed = true;
    vega__waitq_wake_all(&w->q, 0);
    vega__sync_unlock(&w->lock);
}

void vega_watch_free(vega_watch *w)
{
    if (!w)
        return;
    VEGA_ASSERT(vega__waitq_empty(&w->q));
    free(w);
}
