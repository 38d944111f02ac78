/* SPDX-License-Identifier: MIT */
/* Task groups: a scope that owns its members, can cancel them, and waits for all of them. */
#include "sched_int.h"

/* A member's link in its group, allocated at group spawn. */
struct vega__group_node {
    struct vega_group *g;
    struct vega_task *task;
    struct vega__group_node *next, *prev;
};

struct vega_group {
    vega__spin lock;
    struct vega__group_node *head;
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
    struct vega__group_node *n = malloc(sizeof *n);
    if (!n)
        return -ENOMEM;
    vega__spin_lock(&g->lock);
    if (g->closing) {
        vega__spin_unlock(&g->lock);
        free(n);
        return VEGA_ERR_CLOSED;
    }
    struct vega_task *t = vega__task_create(w->rt, w, fn, arg, NULL, true);
    if (!t) {
        vega__spin_unlock(&g->lock);
        free(n);
        return -ENOMEM;
    }
    n->g = g;
    n->task = t;
    n->prev = NULL;
    n->next = g->head;
    if (g->head)
        g->head->prev = n;
    g->head = n;
    t->group = n;
    g->live++;
    vega__spin_unlock(&g->lock);
    vega__task_publish(t);
    vega__schedule(w->rt, t, false);
    return 0;
}

/* Called by the scheduler when a member returned, before the task is freed. */
void vega__group_member_done(struct vega_task *t)
{
    struct vega__group_node *n = t->group;
    struct vega_group *g = n->g;
    vega__spin_lock(&g->lock);
    if (n->prev)
        n->prev->next = n->next;
    else
        g->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    t->group = NULL;
    if (--g->live == 0 && g->waiter)
        vega__task_wake(g->waiter);
    vega__spin_unlock(&g->lock);
    free(n);
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

int vega_group_wait(vega_group *g, vega_deadline dl)
{
    return wait_all(g, dl, 0);
}

void vega_group_cancel(vega_group *g)
{
    vega__spin_lock(&g->lock);
    for (struct vega__group_node *n = g->head; n; n = n->next) {
        atomic_fetch_or_explicit(&n->task->flags, VEGA__TF_CANCELLED, memory_order_acq_rel);
        vega__task_wake(n->task);
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
