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
    vega__task_publish(t);
    vega__schedule(on->rt, t, false);
}

/* Home thread: takes w off the home's list. */
static void unlink_watch(struct vega__worker *home, struct vega__watch *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        home->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->registered = false;
}

static void link_watch(struct vega__worker *home, struct vega__watch *w)
{
    w->registered = true;
    w->prev = NULL;
    w->next = home->watches;
    if (home->watches)
        home->watches->prev = w;
    home->watches = w;
}

/* Home thread, op lock held: a readiness event or a receive's result, or the last call after
 * unwatch. */
static void on_event(struct vega__op *op)
{
    struct vega__watch *w = VEGA__CONTAINER_OF(op, struct vega__watch, op);
    struct vega__worker *home = op->owner;
    if (op->res == VEGA__WATCH_GONE) {
        unlink_watch(home, w);
        w->gone(w);
        return;
    }
    unsigned revents = op->res > 0 ? (unsigned)op->res : POLLERR;
    if (op->rb_waiter) {
        /* A reader waits for this receive (vega__watch_read): it takes what came. */
        struct vega_task *t = op->rb_waiter;
        op->rb_waiter = NULL;
        vega__task_wake(t);
    }
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

/* Home thread, op lock held: a started watch's result, or its end. */
static void on_kernel_event(struct vega__op *op)
{
    struct vega__watch *w = VEGA__CONTAINER_OF(op, struct vega__watch, op);
    if (op->res == VEGA__WATCH_GONE) {
        unlink_watch(op->owner, w);
        w->gone(w);
        return;
    }
    w->fn(w, op->res);
}

void vega__watch_event(struct vega__op *op)
{
    if (op->kind == VEGA__WATCH_ACCEPT)
        on_kernel_event(op);
    else
        on_event(op);
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

/* Called with the home's op lock held: makes sure a receive watch has a receive in flight, or
 * marks it ready when it holds something already. From another worker the home is asked through
 * its mailbox; returns true when the home is to be woken for that (after the lock). */
static bool recv_rearm(struct vega__worker *me, struct vega__watch *w)
{
    struct vega__op *op = &w->op;
    struct vega__worker *home = op->owner;
    if (op->rb_bid >= 0 || op->rb_end) {
        atomic_fetch_or_explicit(&w->state, VEGA__W_READY, memory_order_acq_rel);
        return false;
    }
    if (op->recv_armed || op->unwatching)
        return false;
    if (me == home) {
        home->rt->driver->recv_arm(home, op);
        return false;
    }
    vega__spin_lock(&home->close_lock);
    bool queued = w->rearm_queued;
    if (!queued) {
        w->rearm_queued = true;
        w->rearm_next = home->rearm_head;
        __atomic_store_n(&home->rearm_head, w, __ATOMIC_RELEASE);
    }
    vega__spin_unlock(&home->close_lock);
    return !queued;
}

int vega__watch_arm(struct vega__watch *w, int fd, uint32_t events, vega_deadline dl,
                    unsigned flags, void (*fn)(struct vega__watch *w, int status))
{
    struct vega__worker *me = vega__worker_self();
    if (!me || !me->current)
        return VEGA_ERR_NOTASK;
    struct vega_rt *rt = me->rt;
    if (atomic_load_explicit(&rt->shutdown, memory_order_acquire))
        return -ECANCELED;
    w->fn = fn;
    if (!w->registered) {
        bool recv = (flags & VEGA__WATCH_ARM_RECV) && rt->driver->recv_arm;
        w->op = (struct vega__op){.task = NULL,
                                  .owner = me,
                                  .fd = fd,
                                  .events = events,
                                  .kind = recv ? VEGA__WATCH_RECV : VEGA__WATCH_POLL,
                                  .rb_bid = -1,
                                  .rb_tail = -1};
        atomic_init(&w->state, 0);
        atomic_init(&w->revents, 0);
        w->timer = (struct vega__timer){.fire = on_timeout, .call = true};
        w->rearm_queued = false;
        atomic_init(&w->close_posted, false);
        vega__spin_lock(&me->cancel_lock);
        int r = rt->driver->watch(me, &w->op);
        if (r == -ENOTSUP && recv) {
            /* No provided-buffer ring on this worker: a readiness watch instead. */
            w->op.kind = VEGA__WATCH_POLL;
            r = rt->driver->watch(me, &w->op);
        }
        vega__spin_unlock(&me->cancel_lock);
        if (r < 0)
            return r;
        link_watch(me, w);
        vega__worker_count_io(me);
    } else if (w->op.kind == VEGA__WATCH_RECV) {
        struct vega__worker *home = w->op.owner;
        vega__spin_lock(&home->cancel_lock);
        bool wake_home = recv_rearm(me, w);
        vega__spin_unlock(&home->cancel_lock);
        if (wake_home)
            home->rt->driver->unpark(home);
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
        } else if (atomic_compare_exchange_weak_explicit(
                       &w->state, &s, VEGA__W_ARMED, memory_order_acq_rel, memory_order_acquire)) {
            return 0;
        }
    }
}

void vega__watch_set_ready(struct vega__watch *w, unsigned revents)
{
    atomic_fetch_or_explicit(&w->revents, revents, memory_order_relaxed);
    atomic_fetch_or_explicit(&w->state, VEGA__W_READY, memory_order_acq_rel);
}

vega_ssize vega__watch_read(struct vega__watch *w, void *buf, size_t len, vega_deadline dl)
{
    if (!w->registered || w->op.kind != VEGA__WATCH_RECV)
        return -EAGAIN;
    struct vega__op *op = &w->op;
    struct vega__worker *home = op->owner;
    vega_ssize r;
    vega__spin_lock(&home->cancel_lock);
    for (;;) {
        if (op->rb_bid >= 0) {
            r = (vega_ssize)home->rt->driver->recv_take(home, op, buf, len);
            break;
        }
        if (op->rb_end) {
            r = op->rb_end > 0 ? 0 : op->rb_end;
            if (op->rb_end < 0)
                op->rb_end = 0; /* an error is reported once, as recv(2) does */
            break;
        }
        if (!op->recv_armed) {
            r = -EAGAIN;
            break;
        }
        /* A receive is in flight: nothing may overtake it, so wait for what it brings (or
         * for its end, after which the socket is read directly). */
        if (dl == 0) {
            r = -ETIMEDOUT;
            break;
        }
        op->rb_waiter = vega__task_self();
        vega__spin_unlock(&home->cancel_lock);
        int pr = vega__park(dl, 0, "recv");
        vega__spin_lock(&home->cancel_lock);
        if (op->rb_waiter == vega__task_self())
            op->rb_waiter = NULL;
        if (pr < 0 && op->recv_armed) {
            r = pr;
            break;
        }
    }
    vega__spin_unlock(&home->cancel_lock);
    return r;
}

bool vega__watch_holds(const struct vega__watch *w)
{
    if (!w->registered || w->op.kind != VEGA__WATCH_RECV)
        return false;
    struct vega__worker *home = w->op.owner;
    vega__spin_lock(&home->cancel_lock);
    bool holds = w->op.rb_bid >= 0 || w->op.recv_armed;
    vega__spin_unlock(&home->cancel_lock);
    return holds;
}

int vega__watch_start(struct vega__watch *w, int fd, unsigned kind,
                      void (*fn)(struct vega__watch *w, int res),
                      void (*gone)(struct vega__watch *w))
{
    struct vega__worker *me = vega__worker_self();
    if (!me || !me->current)
        return VEGA_ERR_NOTASK;
    struct vega_rt *rt = me->rt;
    if (atomic_load_explicit(&rt->shutdown, memory_order_acquire))
        return -ECANCELED;
    w->fn = fn;
    w->gone = gone;
    w->op = (struct vega__op){
        .task = NULL, .owner = me, .fd = fd, .kind = (uint8_t)kind, .rb_bid = -1, .rb_tail = -1};
    atomic_init(&w->state, 0);
    w->timer = (struct vega__timer){.fire = on_timeout, .call = true};
    w->rearm_queued = false;
    atomic_init(&w->close_posted, false);
    vega__spin_lock(&me->cancel_lock);
    int r = rt->driver->watch(me, &w->op);
    vega__spin_unlock(&me->cancel_lock);
    if (r < 0)
        return r;
    link_watch(me, w);
    vega__worker_count_io(me);
    return 0;
}

static void unwatch_here(struct vega__worker *home, struct vega__watch *w)
{
    vega__spin_lock(&home->cancel_lock);
    /* Before unwatch: gone may free w inside it. */
    atomic_store_explicit(&w->close_posted, false, memory_order_release);
    home->rt->driver->unwatch(home, &w->op);
    vega__spin_unlock(&home->cancel_lock);
}

void vega__watch_unregister_locked(struct vega__watch *w)
{
    struct vega__worker *home = w->op.owner;
    home->rt->driver->unwatch(home, &w->op);
}

bool vega__watch_closing(struct vega__watch *w)
{
    return atomic_load_explicit(&w->close_posted, memory_order_acquire);
}

void vega__watch_sync_home(struct vega__watch *w)
{
    vega__spin_lock(&w->op.owner->cancel_lock);
    vega__spin_unlock(&w->op.owner->cancel_lock);
}

bool vega__watch_on_home(const struct vega__watch *w)
{
    return vega__worker_self() == w->op.owner;
}

static void post_close(struct vega__worker *home, struct vega__watch *w)
{
    atomic_store_explicit(&w->close_posted, true, memory_order_relaxed);
    vega__spin_lock(&home->close_lock);
    w->close_next = home->close_head;
    __atomic_store_n(&home->close_head, w, __ATOMIC_RELEASE);
    vega__spin_unlock(&home->close_lock);
    home->rt->driver->unpark(home);
}

void vega__watch_unregister(struct vega__watch *w)
{
    struct vega__worker *home = w->op.owner;
    if (vega__worker_self() == home) {
        /* A re-arm still in the mailbox must be done before the watch may go: the close
         * then goes through the mailbox too, which handles re-arms first. */
        vega__spin_lock(&home->close_lock);
        bool queued = w->rearm_queued;
        vega__spin_unlock(&home->close_lock);
        if (!queued) {
            unwatch_here(home, w);
            return;
        }
    }
    post_close(home, w);
}

void vega__watch_close(struct vega__watch *w, void (*gone)(struct vega__watch *w))
{
    w->gone = gone;
    if (!w->registered) {
        gone(w);
        return;
    }
    vega__watch_unregister(w);
}

void vega__watch_process_closes(struct vega__worker *home)
{
    if (!__atomic_load_n(&home->close_head, __ATOMIC_ACQUIRE) &&
        !__atomic_load_n(&home->rearm_head, __ATOMIC_ACQUIRE))
        return;
    vega__spin_lock(&home->close_lock);
    struct vega__watch *list = home->close_head, *rearm = home->rearm_head;
    home->close_head = NULL;
    home->rearm_head = NULL;
    for (struct vega__watch *w = rearm; w; w = w->rearm_next)
        w->rearm_queued = false;
    vega__spin_unlock(&home->close_lock);
    while (rearm) {
        struct vega__watch *w = rearm;
        rearm = w->rearm_next;
        vega__spin_lock(&home->cancel_lock);
        (void)recv_rearm(home, w);
        vega__spin_unlock(&home->cancel_lock);
    }
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
     * unregistration the kernel will never answer now (the ring is going) ends at once. A
     * started watch ends too; a parked socket's watch is let go (with any held buffer: its
     * memory goes with the driver), so that closing the socket later frees it directly. */
    vega__watch_process_closes(home);
    struct vega__watch *w = home->watches;
    while (w) {
        struct vega__watch *next = w->next;
        if (w->op.unwatching || w->op.kind == VEGA__WATCH_ACCEPT) {
            w->op.unwatching = true;
            w->op.res = VEGA__WATCH_GONE;
            vega__watch_event(&w->op);
        } else {
            w->op.rb_bid = w->op.rb_tail = -1;
            w->op.rb_held = 0;
            w->op.recv_armed = false;
            unlink_watch(home, w);
        }
        w = next;
    }
}
