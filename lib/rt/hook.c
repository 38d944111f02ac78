/* SPDX-License-Identifier: MIT */
/* Readiness hooks: an fd waits on the worker's driver with no task and no stack; a fresh task
 * runs the hook's function when the fd is ready, the deadline passes or the runtime stops. */
#include <poll.h>

#include "sched_int.h"

static void *hook_task(void *arg)
{
    struct vega__hook *h = arg;
    h->fn(h, h->status);
    return NULL;
}

static void unlink_hook(struct vega__worker *w, struct vega__hook *h)
{
    if (h->prev)
        h->prev->next = h->next;
    else
        w->hooks = h->next;
    if (h->next)
        h->next->prev = h->prev;
    w->nhooks--;
}

/* Owner thread, op lock held: the fd is ready or the wait was cancelled. */
static void hook_done(struct vega__op *op)
{
    struct vega__hook *h = VEGA__CONTAINER_OF(op, struct vega__hook, op);
    struct vega__worker *w = op->owner;
    h->armed = false;
    unlink_hook(w, h);
    vega__wheel_remove(&h->timer);
    if (op->res == -ECANCELED)
        h->status = h->timed_out ? -ETIMEDOUT : -ECANCELED;
    else
        h->status = op->res;
    struct vega_task *t = vega__task_create(w->rt, w, hook_task, h, NULL, true);
    if (vega__unlikely(!t))
        VEGA_PANIC("out of memory for a hook's task");
    vega__schedule(w->rt, t, false);
}

/* Owner thread, wheel lock held: the deadline passed while the fd stayed idle. */
static void hook_timeout(struct vega__timer *tm)
{
    struct vega__hook *h = VEGA__CONTAINER_OF(tm, struct vega__hook, timer);
    struct vega__worker *w = h->op.owner;
    if (!h->armed || h->timed_out)
        return;
    h->timed_out = true;
    vega__spin_lock(&w->cancel_lock);
    if (!atomic_load_explicit(&h->op.done, memory_order_acquire))
        w->rt->driver->cancel(w, &h->op);
    vega__spin_unlock(&w->cancel_lock);
}

int vega__hook_arm(struct vega__hook *h, int fd, uint32_t events, vega_deadline dl,
                   void (*fn)(struct vega__hook *h, int status))
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega_rt *rt = w->rt;
    if (atomic_load_explicit(&rt->shutdown, memory_order_acquire))
        return -ECANCELED;
    h->op = (struct vega__op){.task = NULL, .owner = w, .fd = fd, .events = events,
                              .on_complete = hook_done};
    atomic_init(&h->op.done, 0);
    atomic_init(&h->op.cancel_state, 0);
    h->fn = fn;
    h->status = 0;
    h->timed_out = false;
    h->armed = true;
    h->timer.task = NULL;
    h->timer.fire = hook_timeout;
    h->timer.wheel = NULL;
    h->timer.fired = false;
    h->prev = NULL;
    h->next = w->hooks;
    if (w->hooks)
        w->hooks->prev = h;
    w->hooks = h;
    w->nhooks++;
    int r = rt->driver->poll_start(w, &h->op);
    if (r < 0) {
        h->armed = false;
        unlink_hook(w, h);
        return r;
    }
    vega__worker_count_io(w);
    if (dl != VEGA_DEADLINE_NEVER)
        vega__wheel_insert(&w->wheel, &h->timer,
                           dl ? vega__ns_to_ms_ceil(rt, dl) : vega__ms_floor(rt, rt->t0));
    return 0;
}

void vega__hooks_cancel_all(struct vega__worker *w)
{
    vega__spin_lock(&w->cancel_lock);
    for (struct vega__hook *h = w->hooks; h;) {
        struct vega__hook *next = h->next; /* epoll completes (and unlinks) synchronously */
        if (!atomic_load_explicit(&h->op.done, memory_order_acquire))
            w->rt->driver->cancel(w, &h->op);
        h = next;
    }
    vega__spin_unlock(&w->cancel_lock);
}
