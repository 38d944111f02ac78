/* SPDX-License-Identifier: MIT */
/* The epoll driver: one epoll instance per worker, an eventfd to wake it, one-shot readiness
 * registrations kept per fd (a reader and a writer may wait on the same fd). */
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sched_int.h"

#define MAX_EVENTS 256
#define WAKE_TOKEN UINT64_MAX

struct fdslot {
    struct vega__op *in, *out; /* waiting reader / writer (one-shot) */
    struct vega__op *watch;    /* persistent edge-triggered registration, or NULL */
    bool registered;
};

struct epoll_drv {
    int epfd;
    int evfd;
    struct fdslot *fds;
    size_t nfds;
    struct epoll_event events[MAX_EVENTS];
};

static int ep_init(struct vega__worker *w)
{
    struct epoll_drv *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (d->epfd < 0) {
        int e = -errno;
        free(d);
        return e;
    }
    d->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (d->evfd < 0) {
        int e = -errno;
        close(d->epfd);
        free(d);
        return e;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_TOKEN};
    if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->evfd, &ev) < 0) {
        int e = -errno;
        close(d->evfd);
        close(d->epfd);
        free(d);
        return e;
    }
    vega__worker_set_driver_data(w, d);
    return 0;
}

static void ep_fini(struct vega__worker *w)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    if (!d)
        return;
    close(d->evfd);
    close(d->epfd);
    free(d->fds);
    free(d);
    vega__worker_set_driver_data(w, NULL);
}

static struct fdslot *slot_for(struct epoll_drv *d, int fd)
{
    if ((size_t)fd >= d->nfds) {
        size_t n = d->nfds ? d->nfds : 64;
        while (n <= (size_t)fd)
            n *= 2;
        struct fdslot *p = realloc(d->fds, n * sizeof *p);
        if (!p)
            return NULL;
        memset(p + d->nfds, 0, (n - d->nfds) * sizeof *p);
        d->fds = p;
        d->nfds = n;
    }
    return &d->fds[fd];
}

/* (Re)arms fd for the union of what its waiters want: one-shot for plain waits; with a watch,
 * a persistent edge-triggered registration (a MOD re-reports current readiness, so a waiter
 * that registers after an edge still hears of it). */
static int arm(struct epoll_drv *d, int fd, struct fdslot *s)
{
    uint32_t want = 0;
    if (s->in)
        want |= s->in->events;
    if (s->out)
        want |= s->out->events;
    struct epoll_event ev = {.data.u64 = (uint64_t)fd};
    if (s->watch) {
        want |= s->watch->events;
        ev.events = EPOLLET | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
    } else {
        ev.events = EPOLLONESHOT | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
        /* With nothing wanted the fd stays registered, disarmed, to save a syscall next time. */
    }
    int op = s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(d->epfd, op, fd, &ev) < 0) {
        /* The fd was closed and its number reused (the kernel dropped the registration), or
         * registered behind our back. */
        if (errno == ENOENT && op == EPOLL_CTL_MOD)
            op = EPOLL_CTL_ADD;
        else if (errno == EEXIST && op == EPOLL_CTL_ADD)
            op = EPOLL_CTL_MOD;
        else
            return -errno;
        if (epoll_ctl(d->epfd, op, fd, &ev) < 0)
            return -errno;
    }
    s->registered = true;
    return 0;
}

static int ep_poll_start(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    if (op->kind != VEGA__WATCH_POLL)
        return -ENOTSUP;
    if (op->fd < 0)
        return -EBADF;
    struct fdslot *s = slot_for(d, op->fd);
    if (!s)
        return -ENOMEM;
    bool reader = op->events & (POLLIN | POLLPRI | POLLRDHUP);
    if (reader ? s->in != NULL : s->out != NULL)
        return -EBUSY; /* one reader and one writer per fd and worker */
    if (reader)
        s->in = op;
    else
        s->out = op;
    int r = arm(d, op->fd, s);
    if (r < 0) {
        if (reader)
            s->in = NULL;
        else
            s->out = NULL;
    }
    return r;
}

static int ep_watch(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    if (op->kind != VEGA__WATCH_POLL)
        return -ENOTSUP;
    if (op->fd < 0)
        return -EBADF;
    struct fdslot *s = slot_for(d, op->fd);
    if (!s)
        return -ENOMEM;
    if (s->watch)
        return -EBUSY;
    s->watch = op;
    op->unwatching = false;
    int r = arm(d, op->fd, s);
    if (r < 0)
        s->watch = NULL;
    return r;
}

static void ep_unwatch(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    struct fdslot *s = (size_t)op->fd < d->nfds ? &d->fds[op->fd] : NULL;
    if (s && s->watch == op) {
        s->watch = NULL;
        if (s->in || s->out) {
            arm(d, op->fd, s);
        } else if (s->registered) {
            epoll_ctl(d->epfd, EPOLL_CTL_DEL, op->fd, NULL);
            s->registered = false;
        }
    }
    op->res = VEGA__WATCH_GONE;
    vega__watch_event(op);
}

static void ep_cancel(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    struct fdslot *s = (size_t)op->fd < d->nfds ? &d->fds[op->fd] : NULL;
    if (s && (s->in == op || s->out == op)) {
        if (s->in == op)
            s->in = NULL;
        else
            s->out = NULL;
        arm(d, op->fd, s);
    }
    vega__op_complete(op, -ECANCELED);
}

static void ep_park(struct vega__worker *w, int64_t timeout_ns)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / (int64_t)VEGA_NS_PER_S;
        ts.tv_nsec = timeout_ns % (int64_t)VEGA_NS_PER_S;
        tsp = &ts;
    }
    int n = epoll_pwait2(d->epfd, d->events, MAX_EVENTS, tsp, NULL);
    if (n <= 0)
        return;
    uint64_t ops = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event *ev = &d->events[i];
        if (ev->data.u64 == WAKE_TOKEN) {
            uint64_t v;
            ssize_t rr = read(d->evfd, &v, sizeof v);
            (void)rr;
            continue;
        }
        int fd = (int)ev->data.u64;
        if ((size_t)fd >= d->nfds)
            continue;
        struct fdslot *s = &d->fds[fd];
        uint32_t got = ev->events;
        bool err = got & (EPOLLERR | EPOLLHUP);
        /* the op lock per event, not per batch (see driver_uring.c) */
        vega__spin_lock(&w->cancel_lock);
        bool done_io = false;
        if (s->in && (err || (got & (s->in->events | EPOLLRDHUP)))) {
            struct vega__op *op = s->in;
            s->in = NULL;
            done_io = true;
            ops++;
            vega__op_complete(op, (int)(got & (op->events | POLLERR | POLLHUP | POLLRDHUP)));
        }
        if (s->out && (err || (got & s->out->events))) {
            struct vega__op *op = s->out;
            s->out = NULL;
            done_io = true;
            ops++;
            vega__op_complete(op, (int)(got & (op->events | POLLERR | POLLHUP)));
        }
        if (s->watch && (err || (got & (s->watch->events | EPOLLRDHUP)))) {
            struct vega__op *op = s->watch;
            op->res = (int)(got & (op->events | POLLERR | POLLHUP | POLLRDHUP));
            ops++;
            vega__watch_event(op);
        }
        /* One-shot waits left, or a watch whose registration still carries a finished wait's
         * interest: re-arm. A lone watch stays armed as it is (edge-triggered). */
        if (s->watch ? done_io : (s->in || s->out))
            arm(d, fd, s);
        vega__spin_unlock(&w->cancel_lock);
    }
    if (ops)
        vega__worker_count_completions(w, ops);
}

static void ep_unpark(struct vega__worker *w)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    uint64_t one = 1;
    ssize_t r = write(d->evfd, &one, sizeof one);
    (void)r;
}

const struct vega__driver_ops vega__driver_epoll = {
    .name = "epoll",
    .init = ep_init,
    .fini = ep_fini,
    .park = ep_park,
    .unpark = ep_unpark,
    .poll_start = ep_poll_start,
    .watch = ep_watch,
    .unwatch = ep_unwatch,
    .cancel = ep_cancel,
};
