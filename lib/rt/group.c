/* SPDX-License-Identifier: MIT */
/* Task groups: a scope that owns its members, can cancel them, and waits for all of them. */
#include "sched_int.h"

struct vega_group {
    vega__spin lock;
    struct vega_task *head;
    size_t live;
    struct vega_task *waiter;
    bool closing;
};

int vega_group_new(vega_group **out)
{
    struct vega_group *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    vega__spin_init(&g->lock);
    *out = g;
    return 0;
}

int vega_group_spawn(vega_group *g, vega_task_fn fn, void *arg)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    vega__spin_lock(&g->lock);
    if (g->closing) {
        vega__spin_unlock(&g->lock);
        return VEGA_ERR_CLOSED;
    }
    struct vega_task *t = vega__task_create(w->rt, w, fn, arg, NULL, true);
    if (!t) {
        vega__spin_unlock(&g->lock);
        return -ENOMEM;
    }
    t->group = g;
    t->group_prev = NULL;
    t->group_next = g->head;
    if (g->head)
        g->head->group_prev = t;
    g->head = t;
    g->live++;
    vega__spin_unlock(&g->lock);
    vega__schedule(w->rt, t, false);
    return 0;
}

/* Called by the scheduler when a member returned, before the task is freed. */
void vega__group_member_done(struct vega_task *t)
{
    struct vega_group *g = t->group;
    vega__spin_lock(&g->lock);
    if (t->group_prev)
        t->group_prev->group_next = t->group_next;
    else
        g->head = t->group_next;
    if (t->group_next)
        t->group_next->group_prev = t->group_prev;
    t->group = NULL;
    if (--g->live == 0 && g->waiter)
        vega__task_wake(g->waiter);
    vega__spin_unlock(&g->lock);
}

static int wait_all(vega_group *g, vega_deadline dl, unsigned flags)
{
    struct vega_task *self = vega__task_self();
    if (!self)
        return VEGA_ERR_NOTASK;
    vega__spin_lock(&g->lock);
    while (g->live) {
        g->waiter = self;
        vega__spin_unlock(&g->lock);
        int r = vega__park(dl, flags, "group");
        vega__spin_lock(&g->lock);
        g->waiter = NULL;
        if (r < 0 && g->live) {
            vega__spin_unlock(&g->lock);
            return r;
        }
    }
    vega__spin_unlock(&g->lock);
    return 0;
}

int vega_group_wait(vega_group *g, vega_deadline dl) { return wait_all(g, dl, 0); }

void vega_group_cancel(vega_group *g)
{
    vega__spin_lock(&g->lock);
    for (struct vega_task *t = g->head; t; t = t->group_next) {
        atomic_fetch_or_explicit(&t->flags, VEGA__TF_CANCELLED, memory_order_acq_rel);
        vega__task_wake(t);
    }
    vega__spin_unlock(&g->lock);
}

size_t vega_group_live(const vega_group *g)
{
    vega__spin_lock((vega__spin *)&g->lock);
    size_t n = g->live;
    vega__spin_unlock((vega__spin *)&g->lock);
    return n;
}

void vega_group_free(vega_group *g)
{
    if (!g)
        return;
    vega__spin_lock(&g->lock);
    g->closing = true;
    vega__spin_unlock(&g->lock);
    vega_group_cancel(g);
    wait_all(g, VEGA_DEADLINE_NEVER, VEGA__PARK_NOCANCEL);
    free(g);
}
