/* SPDX-License-Identifier: MIT */
/* Multishot accept for listeners on io_uring: one accept stays armed in the kernel and queues the
 * connections it takes on the listener (a bounded queue: at its high mark the multishot stops and
 * the backlog holds the rest until the queue drained); vega_tcp_accept takes from that queue. */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io_int.h"

#define AQ_HIGH 64 /* queued connections at which the multishot stops */
#define AQ_LOW  16 /* ... and at or below which a taker starts it again */
/* The hard bound: after the stop the kernel may still post what it accepted before it saw the
 * cancel (at most a completion queue's worth, 512 here); a connection beyond this is closed. */
#define AQ_CAP 1024

struct aq_waiter {
    struct aq_waiter *next, *prev;
    struct vega_task *task;
    bool done;
};

struct vega__accept_ms {
    struct vega__watch watch; /* the kernel's multishot; its home is where it started */
    vega__spin lock;          /* everything below; taken inside the home's op lock */
    vega_sock *sock;
    unsigned head, count;
    struct aq_waiter *waiters;
    bool active;              /* started, and its end (gone) not seen yet */
    bool stopping;            /* its end was asked (queue at the high mark) */
    bool closing;             /* the listener is closing: gone frees it */
    bool off;                 /* the driver or kernel has no multishot accept */
    bool fallback;            /* it ended with an error: the next take lets the caller meet it */
    struct vega_task *closer; /* a task closing the listener, woken when the multishot ended */
    struct vega__accept_ms_info info;
    int q[AQ_CAP];
};

static void wake_waiters(struct vega__accept_ms *a, bool all)
{
    while (a->waiters) {
        struct aq_waiter *n = a->waiters;
        a->waiters = n->next;
        if (a->waiters)
            a->waiters->prev = NULL;
        n->done = true;
        vega__task_wake(n->task);
        if (!all)
            return;
    }
}

/* Home thread, op lock held: one result of the multishot. */
static void on_result(struct vega__watch *w, int res)
{
    struct vega__accept_ms *a = VEGA__CONTAINER_OF(w, struct vega__accept_ms, watch);
    bool stop = false;
    vega__spin_lock(&a->lock);
    if (res >= 0) {
        if (a->count == AQ_CAP) {
            vega__spin_unlock(&a->lock);
            close(res);
            return;
        }
        a->q[(a->head + a->count) % AQ_CAP] = res;
        a->count++;
        a->info.accepted++;
        wake_waiters(a, false);
        if (a->count >= AQ_HIGH && !a->stopping && !a->closing) {
            stop = a->stopping = true;
            a->info.stops++;
        }
    } else {
        if (res == -EINVAL || res == -EOPNOTSUPP)
            a->off = true;
        a->fallback = true;
        wake_waiters(a, true);
    }
    vega__spin_unlock(&a->lock);
    if (stop)
        vega__watch_unregister_locked(w);
}

static void free_listener(struct vega__accept_ms *a)
{
    for (unsigned i = 0; i < a->count; i++)
        close(a->q[(a->head + i) % AQ_CAP]);
    a->count = 0;
    vega__sock_free(a->sock); /* frees a too */
}

/* Home thread, op lock held: the multishot ended. */
static void on_gone(struct vega__watch *w)
{
    struct vega__accept_ms *a = VEGA__CONTAINER_OF(w, struct vega__accept_ms, watch);
    vega__spin_lock(&a->lock);
    a->active = false;
    a->stopping = false;
    bool closing = a->closing, closer = a->closer != NULL;
    wake_waiters(a, true);
    if (a->closer)
        vega__task_wake(a->closer);
    vega__spin_unlock(&a->lock);
    if (closing && !closer)
        free_listener(a); /* closed from outside the runtime's tasks at shutdown */
}

/* Starts the multishot on the calling worker; a->active was set under the lock. */
static void start(struct vega__accept_ms *a)
{
    int r = vega__watch_start(&a->watch, a->sock->fd, VEGA__WATCH_ACCEPT, on_result, on_gone);
    if (r == 0) {
        vega__spin_lock(&a->lock);
        a->info.starts++;
        vega__spin_unlock(&a->lock);
        return;
    }
    vega__spin_lock(&a->lock);
    a->active = false;
    if (r == -ENOTSUP)
        a->off = true;
    else
        a->fallback = true;
    vega__spin_unlock(&a->lock);
}

int vega__accept_ms_take(vega_sock *l, vega_deadline dl)
{
    if (l->flags & VEGA__SOCK_SHARED)
        return -EAGAIN; /* accept4 and readiness: hold nothing a close would drop */
    struct vega__accept_ms *a = __atomic_load_n(&l->ams, __ATOMIC_ACQUIRE);
    if (!a) {
        if (!vega__driver_has_ops())
            return -EAGAIN; /* epoll: accept4 and readiness */
        struct vega__accept_ms *fresh = calloc(1, sizeof *fresh);
        if (!fresh)
            return -EAGAIN;
        fresh->sock = l;
        vega__spin_init(&fresh->lock);
        /* Two tasks may make their first accept on a listener at once: one state wins. */
        if (__atomic_compare_exchange_n(&l->ams, &a, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            a = fresh;
        else
            free(fresh);
    }
    vega__spin_lock(&a->lock);
    for (;;) {
        if (a->count) {
            int fd = a->q[a->head];
            a->head = (a->head + 1) % AQ_CAP;
            a->count--;
            bool restart = !a->active && !a->off && !a->closing && a->count <= AQ_LOW;
            if (restart)
                a->active = true;
            vega__spin_unlock(&a->lock);
            if (restart)
                start(a);
            return fd;
        }
        if (a->off || a->fallback || a->closing || a->stopping || dl == 0 ||
            !vega__driver_has_ops()) {
            /* The caller accepts by itself: an error the multishot met reaches it, a
             * multishot that is ending leaves connections in the backlog, and a call that may
             * not wait must not miss one the kernel has not handed over yet. */
            a->fallback = false;
            vega__spin_unlock(&a->lock);
            return -EAGAIN;
        }
        if (!a->active) {
            a->active = true;
            vega__spin_unlock(&a->lock);
            start(a);
            vega__spin_lock(&a->lock);
            continue;
        }
        struct aq_waiter node = {.task = vega__task_self(), .next = a->waiters};
        if (a->waiters)
            a->waiters->prev = &node;
        a->waiters = &node;
        for (;;) {
            vega__spin_unlock(&a->lock);
            int r = vega__park(dl, 0, "accept");
            vega__spin_lock(&a->lock);
            if (node.done)
                break;
            if (r < 0) {
                if (node.prev)
                    node.prev->next = node.next;
                else
                    a->waiters = node.next;
                if (node.next)
                    node.next->prev = node.prev;
                vega__spin_unlock(&a->lock);
                return r;
            }
        }
    }
}

void vega__accept_ms_get_info(vega_sock *l, struct vega__accept_ms_info *out)
{
    memset(out, 0, sizeof *out);
    struct vega__accept_ms *a = __atomic_load_n(&l->ams, __ATOMIC_ACQUIRE);
    if (!a)
        return;
    vega__spin_lock(&a->lock);
    *out = a->info;
    out->queued = a->count;
    out->active = a->active;
    vega__spin_unlock(&a->lock);
}

static void close_queued(struct vega__accept_ms *a)
{
    for (unsigned i = 0; i < a->count; i++)
        close(a->q[(a->head + i) % AQ_CAP]);
    a->count = 0;
}

bool vega__accept_ms_close(vega_sock *l)
{
    struct vega__accept_ms *a = __atomic_load_n(&l->ams, __ATOMIC_ACQUIRE);
    if (!a)
        return false;
    struct vega_task *task = vega__task_self();
    vega__spin_lock(&a->lock);
    a->closing = true;
    bool active = a->active, stopping = a->stopping;
    a->closer = task;
    vega__spin_unlock(&a->lock);
    if (!active) {
        close_queued(a);
        return false;
    }
    /*
     * The kernel holds the listener until the multishot ends, and a listener is expected to be
     * gone when close returns (its port or path free again): ask for the end and wait for it.
     * Only the home asks it directly (at most once: not while a stop is under way); from
     * elsewhere the home's mailbox does, and a's memory stays until the home took it from there.
     */
    if (!task) {
        /* Not in a task: nothing to wait with. Shutting a TCP listener down makes the kernel
         * end the multishot (its accept fails with EINVAL), and its end frees the listener;
         * otherwise that happens when the runtime is torn down. */
        shutdown(l->fd, SHUT_RDWR);
        return true;
    }
    if (!vega__watch_on_home(&a->watch) || !stopping)
        vega__watch_unregister(&a->watch);
    for (;;) {
        vega__spin_lock(&a->lock);
        bool ended = !a->active;
        vega__spin_unlock(&a->lock);
        if (ended && !vega__watch_closing(&a->watch))
            break;
        vega__park(vega_deadline_in_ms(1), VEGA__PARK_NOCANCEL, "close");
    }
    /* The home leaves its last touch of a under its op lock. */
    vega__watch_sync_home(&a->watch);
    close_queued(a);
    return false;
}
