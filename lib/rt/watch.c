/* SPDX-License-Identifier: MIT */
/* Watches: persistent readiness registrations with an arm/fire state machine; an idle
 * connection waits on one with no task, no stack and no per-wait syscall. */
#include <poll.h>

#include "sched_int.h"

static void *watch_task(void *arg)
{
    struct vega__watch *w = arg;
    w->fn(w, w->status);
    return NULL;
}

/* Runs the watch's function in a fresh task, from worker `on` (scheduler or task context). */
static void fire(struct vega__worker *on, struct vega__watch *w, int status)
{
    vega__wheel_remove(&w->timer);
    w->status = status;
    struct vega_task *t = vega__task_create(on->rt, on, watch_task, w, NULL, true);
    if (vega__unlikely(!t))
        VEGA_PANIC("out of memory for a watch's task");
    vega__schedule(on->rt, t, false);
}

/* Home thread, op lock held: a readiness event, or the last call after unwatch. */
static void on_event(struct vega__op *op)
{
    struct vega__watch *w = VEGA__CONTAINER_OF(op, struct vega__watch, op);
    struct vega__worker *home = op->owner;
    if (op->res == VEGA__WATCH_GONE) {
        if (w->prev)
            w->prev->next = w->next;
        else
            home->watches = w->next;
        if (w->next)
            w->next->prev = w->prev;
        w->registered = false;
        w->gone(w);
        return;
    }
    unsigned revents = op->res > 0 ? (unsigned)op->res : POLLERR;
    unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);
    if (!(s & VEGA__W_ARMED))
        atomic_fetch_or_explicit(&w->revents, revents, memory_order_relaxed);
    for (;;) {
        unsigned next = (s & VEGA__W_ARMED) ? 0 : VEGA__W_READY;
        if (s == next)
            return;
        if (atomic_compare_exchange_weak_explicit(&w->state, &s, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            break;
    }
    if (s & VEGA__W_ARMED)
        fire(home, w, (int)revents);
}

/* The arming worker's thread, wheel lock held: the deadline passed. */
static void on_timeout(struct vega__timer *tm)
{
    struct vega__watch *w = VEGA__CONTAINER_OF(tm, struct vega__watch, timer);
    unsigned expect = VEGA__W_ARMED;
    if (atomic_compare_exchange_strong_explicit(&w->state, &expect, 0, memory_order_acq_rel,
                                                memory_order_acquire)) {
        /* tm is off the wheel already (fire's remove is a no-op). */
        struct vega__worker *me = vega__worker_self();
        fire(me, w, -ETIMEDOUT);
    }
}

int vega__watch_arm(struct vega__watch *w, int fd, uint32_t events, vega_deadline dl,
                    void (*fn)(struct vega__watch *w, int status))
{
    struct vega__worker *me = vega__worker_self();
    if (!me || !me->current)
        return VEGA_ERR_NOTASK;
    struct vega_rt *rt = me->rt;
    if (atomic_load_explicit(&rt->shutdown, memory_order_acquire))
        return -ECANCELED;
    w->fn = fn;
    if (!w->registered) {
        w->op = (struct vega__op){.task = NULL, .owner = me, .fd = fd, .events = events,
                                  .on_complete = on_event};
        atomic_init(&w->op.done, 0);
        atomic_init(&w->op.cancel_state, 0);
        atomic_init(&w->state, 0);
        atomic_init(&w->revents, 0);
        w->timer = (struct vega__timer){.task = NULL, .fire = on_timeout};
        vega__spin_lock(&me->cancel_lock);
        int r = rt->driver->watch(me, &w->op);
        vega__spin_unlock(&me->cancel_lock);
        if (r < 0)
            return r;
        w->registered = true;
        w->prev = NULL;
        w->next = me->watches;
        if (me->watches)
            me->watches->prev = w;
        me->watches = w;
        vega__worker_count_io(me);
    }
    if (dl != VEGA_DEADLINE_NEVER)
        vega__wheel_insert(&me->wheel, &w->timer,
                           dl ? vega__ns_to_ms_ceil(rt, dl) : vega__ms_floor(rt, rt->t0));
    unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);
    for (;;) {
        if (s & VEGA__W_READY) {
            /* It became ready while nobody waited: consume that and run now, with the events
             * that came meanwhile (a hang-up among them must not read as plain POLLIN). */
            if (atomic_compare_exchange_weak_explicit(&w->state, &s, 0, memory_order_acq_rel,
                                                      memory_order_acquire)) {
                unsigned ev = atomic_exchange_explicit(&w->revents, 0, memory_order_relaxed);
                fire(me, w, (int)(ev ? ev : POLLIN));
                return 0;
            }
        } else if (atomic_compare_exchange_weak_explicit(&w->state, &s, VEGA__W_ARMED,
                                                         memory_order_acq_rel,
                                                         memory_order_acquire)) {
            return 0;
        }
    }
}

void vega__watch_set_ready(struct vega__watch *w, unsigned revents)
{
    atomic_fetch_or_explicit(&w->revents, revents, memory_order_relaxed);
    atomic_fetch_or_explicit(&w->state, VEGA__W_READY, memory_order_acq_rel);
}

static void unwatch_here(struct vega__worker *home, struct vega__watch *w)
{
    vega__spin_lock(&home->cancel_lock);
    home->rt->driver->unwatch(home, &w->op);
    vega__spin_unlock(&home->cancel_lock);
}

void vega__watch_close(struct vega__watch *w, void (*gone)(struct vega__watch *w))
{
    w->gone = gone;
    if (!w->registered) {
        gone(w);
        return;
    }
    struct vega__worker *home = w->op.owner;
    if (vega__worker_self() == home) {
        unwatch_here(home, w);
        return;
    }
    vega__spin_lock(&home->close_lock);
    w->close_next = home->close_head;
    __atomic_store_n(&home->close_head, w, __ATOMIC_RELEASE);
    vega__spin_unlock(&home->close_lock);
    home->rt->driver->unpark(home);
}

void vega__watch_process_closes(struct vega__worker *home)
{
    if (!__atomic_load_n(&home->close_head, __ATOMIC_ACQUIRE))
        return;
    vega__spin_lock(&home->close_lock);
    struct vega__watch *list = home->close_head;
    home->close_head = NULL;
    vega__spin_unlock(&home->close_lock);
    while (list) {
        struct vega__watch *w = list;
        list = w->close_next;
        unwatch_here(home, w);
    }
}

void vega__watch_cancel_all(struct vega__worker *home)
{
    vega__watch_process_closes(home);
    for (struct vega__watch *w = home->watches; w; w = w->next) {
        unsigned expect = VEGA__W_ARMED;
        if (atomic_compare_exchange_strong_explicit(&w->state, &expect, 0, memory_order_acq_rel,
                                                    memory_order_acquire))
            fire(home, w, -ECANCELED);
    }
}

void vega__watch_fini(struct vega__worker *home)
{
    /* The workers have stopped: closes still queued are done here, and a close whose
     * unregistration the kernel will never answer now (the ring is going) ends at once. */
    vega__watch_process_closes(home);
    struct vega__watch *w = home->watches;
    while (w) {
        struct vega__watch *next = w->next;
        if (w->op.unwatching) {
            w->op.res = VEGA__WATCH_GONE;
            w->op.on_complete(&w->op);
        }
        w = next;
    }
}
