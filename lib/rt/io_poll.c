/* SPDX-License-Identifier: MIT */
/* Readiness waits on the worker's driver, with deadlines and cancellation that wait for the
 * driver to let go of the operation before returning. */
#include <poll.h>

#include "sched_int.h"

enum {
    CANCEL_NONE = 0,
    CANCEL_ASKED,
    CANCEL_DONE
};

void vega__op_complete(struct vega__op *op, int res)
{
    if (atomic_load_explicit(&op->done, memory_order_relaxed))
        return;
    struct vega_task *t = op->task;
    op->res = res;
    atomic_store_explicit(&op->done, 1, memory_order_release);
    if (t)
        vega__task_wake(t);
    else
        vega__watch_event(op);
}

/* The owner's op lock (w->cancel_lock) is held around every completion and cancel answer; a
 * waiter takes it once before it leaves (see vega__op_wait). */

/* Owner thread: cancel every op other threads asked us to. */
void vega__worker_process_cancels(struct vega__worker *w)
{
    if (!__atomic_load_n(&w->cancel_head, __ATOMIC_ACQUIRE))
        return;
    vega__spin_lock(&w->cancel_lock);
    struct vega__op *list = w->cancel_head;
    w->cancel_head = NULL;
    while (list) {
        struct vega__op *op = list;
        list = op->cancel_next;
        if (!atomic_load_explicit(&op->done, memory_order_acquire))
            w->rt->driver->cancel(w, op);
        atomic_store_explicit(&op->cancel_state, CANCEL_DONE, memory_order_release);
        vega__task_wake(op->task);
    }
    vega__spin_unlock(&w->cancel_lock);
}

static void request_cancel(struct vega__op *op)
{
    struct vega__worker *self = vega__worker_self();
    struct vega__worker *owner = op->owner;
    if (self == owner) {
        vega__spin_lock(&owner->cancel_lock);
        if (!atomic_load_explicit(&op->done, memory_order_acquire))
            owner->rt->driver->cancel(owner, op);
        atomic_store_explicit(&op->cancel_state, CANCEL_DONE, memory_order_release);
        vega__spin_unlock(&owner->cancel_lock);
        return;
    }
    atomic_store_explicit(&op->cancel_state, CANCEL_ASKED, memory_order_release);
    vega__spin_lock(&owner->cancel_lock);
    op->cancel_next = owner->cancel_head;
    __atomic_store_n(&owner->cancel_head, op, __ATOMIC_RELEASE);
    vega__spin_unlock(&owner->cancel_lock);
    owner->rt->driver->unpark(owner);
}

int vega__op_wait(struct vega__op *op, vega_deadline dl, const char *reason)
{
    int err = 0;
    for (;;) {
        bool done = atomic_load_explicit(&op->done, memory_order_acquire);
        int cs = atomic_load_explicit(&op->cancel_state, memory_order_acquire);
        if (done && cs != CANCEL_ASKED)
            break;
        int r = vega__park(err ? VEGA_DEADLINE_NEVER : dl, err ? VEGA__PARK_NOCANCEL : 0, reason);
        if (r < 0 && !err && !atomic_load_explicit(&op->done, memory_order_acquire)) {
            err = r;
            request_cancel(op);
        }
    }
    /* Completions and cancel answers are published under the owner's op lock: taking it once
     * here means the owner no longer touches this op (on our stack) or this task. */
    vega__spin_lock(&op->owner->cancel_lock);
    vega__spin_unlock(&op->owner->cancel_lock);
    if (err && (op->res == -ECANCELED || op->res == -EINTR))
        return err;
    return op->res;
}

int vega__poll_fd(int fd, uint32_t events, vega_deadline dl)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    struct vega__op op = {.task = w->current, .owner = w, .fd = fd, .events = events};
    atomic_init(&op.done, 0);
    atomic_init(&op.cancel_state, CANCEL_NONE);
    vega_deadline eff = vega__deadline_eff(dl);
    if (eff == 0)
        return -ETIMEDOUT;
    int r = w->rt->driver->poll_start(w, &op);
    if (r < 0)
        return r;
    vega__worker_count_io(w);
    return vega__op_wait(&op, dl, "poll");
}

bool vega__driver_has_ops(void)
{
    struct vega__worker *w = vega__worker_self();
    return w && w->rt->driver->submit != NULL;
}

static int op_submit(void (*prep)(void *sqe, struct vega__op *op), void *arg, vega_deadline dl,
                     const char *reason, bool disk)
{
    struct vega__worker *w = vega__worker_self();
    if (!w || !w->current)
        return VEGA_ERR_NOTASK;
    if (!w->rt->driver->submit)
        return -ENOTSUP;
    struct vega__op op = {.task = w->current, .owner = w, .fd = -1, .prep = prep, .arg = arg};
    atomic_init(&op.done, 0);
    atomic_init(&op.cancel_state, CANCEL_NONE);
    if (vega__deadline_eff(dl) == 0)
        return -ETIMEDOUT;
    int r = w->rt->driver->submit(w, &op);
    if (r < 0)
        return r;
    vega__worker_count_io(w);
    /* A disk operation ends on its own, like a blocking-pool job: a paused clock waits for it
     * for real instead of jumping past it (the kernel may run it on an io-wq thread). The
     * task may resume on another worker: the runtime is kept, not the worker. */
    struct vega_rt *rt = w->rt;
    if (disk)
        atomic_fetch_add_explicit(&rt->pool_inflight, 1, memory_order_acq_rel);
    r = vega__op_wait(&op, dl, reason);
    if (disk)
        atomic_fetch_sub_explicit(&rt->pool_inflight, 1, memory_order_acq_rel);
    return r;
}

int vega__op_submit(void (*prep)(void *sqe, struct vega__op *op), void *arg, vega_deadline dl,
                    const char *reason)
{
    return op_submit(prep, arg, dl, reason, false);
}

int vega__op_submit_disk(void (*prep)(void *sqe, struct vega__op *op), void *arg, vega_deadline dl,
                         const char *reason)
{
    return op_submit(prep, arg, dl, reason, true);
}
