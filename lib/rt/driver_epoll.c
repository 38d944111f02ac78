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

/* One slot per fd, so one per idle connection: 24 bytes. */
struct fdslot {
    struct vega__op *in, *out; /* waiting reader / writer (one-shot) */
    /* The persistent edge-triggered registration (a watch) or NULL, and in bit 0 whether the fd
     * is registered with epoll at all (ops are 8-byte aligned). */
    uintptr_t watch_reg;
};

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct fdslot) <= 24, "fdslot grew: every idle connection on epoll has one");
#endif

/* The slots come in pages of SLOT_PAGE, each allocated when an fd in its range is first used:
 * growing one array by doubling would copy and touch it all (a 10,000th connection made the
 * table 16,384 slots at once), and a table is never shrunk. */
#define SLOT_PAGE 1024u

struct epoll_drv {
    int epfd;
    int evfd;
    struct fdslot **pages;
    size_t npages;
    struct epoll_event events[MAX_EVENTS];
};

static struct vega__op *slot_watch(const struct fdslot *s)
{
    return (struct vega__op *)(s->watch_reg & ~(uintptr_t)1);
}

static void slot_set_watch(struct fdslot *s, struct vega__op *op)
{
    s->watch_reg = (uintptr_t)op | (s->watch_reg & 1u);
}

static bool slot_registered(const struct fdslot *s)
{
    return s->watch_reg & 1u;
}

static void slot_set_registered(struct fdslot *s, bool on)
{
    s->watch_reg = (s->watch_reg & ~(uintptr_t)1) | (on ? 1u : 0u);
}

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
    for (size_t i = 0; i < d->npages; i++)
        free(d->pages[i]);
    free(d->pages);
    free(d);
    vega__worker_set_driver_data(w, NULL);
}

/* fd's slot, or NULL when it has none (never used). */
static struct fdslot *slot_get(struct epoll_drv *d, int fd)
{
    size_t p = (size_t)fd / SLOT_PAGE;
    if (fd < 0 || p >= d->npages || !d->pages[p])
        return NULL;
    return &d->pages[p][(size_t)fd % SLOT_PAGE];
}

/* fd's slot, made when missing; NULL when out of memory. fd >= 0. */
static struct fdslot *slot_for(struct epoll_drv *d, int fd)
{
    size_t p = (size_t)fd / SLOT_PAGE;
    if (p >= d->npages) {
        size_t n = d->npages ? d->npages : 16;
        while (n <= p)
            n *= 2;
        struct fdslot **pages = realloc(d->pages, n * sizeof *pages);
        if (!pages)
            return NULL;
        memset(pages + d->npages, 0, (n - d->npages) * sizeof *pages);
        d->pages = pages;
        d->npages = n;
    }
    if (!d->pages[p]) {
        d->pages[p] = calloc(SLOT_PAGE, sizeof(struct fdslot));
        if (!d->pages[p])
            return NULL;
    }
    return &d->pages[p][(size_t)fd % SLOT_PAGE];
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
    if (slot_watch(s)) {
        want |= slot_watch(s)->events;
        ev.events = EPOLLET | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
    } else {
        ev.events = EPOLLONESHOT | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
        /* With nothing wanted the fd stays registered, disarmed, to save a syscall next time. */
    }
    int op = slot_registered(s) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
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
    slot_set_registered(s, true);
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
    if (slot_watch(s))
        return -EBUSY;
    slot_set_watch(s, op);
    op->unwatching = false;
    int r = arm(d, op->fd, s);
    if (r < 0)
        slot_set_watch(s, NULL);
    return r;
}

static void ep_unwatch(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    struct fdslot *s = slot_get(d, op->fd);
    if (s && slot_watch(s) == op) {
        slot_set_watch(s, NULL);
        if (s->in || s->out) {
            arm(d, op->fd, s);
        } else if (slot_registered(s)) {
            epoll_ctl(d->epfd, EPOLL_CTL_DEL, op->fd, NULL);
            slot_set_registered(s, false);
        }
    }
    op->res = VEGA__WATCH_GONE;
    vega__watch_event(op);
}

static void ep_cancel(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    struct fdslot *s = slot_get(d, op->fd);
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
        struct fdslot *s = slot_get(d, fd);
        if (!s)
            continue;
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
        struct vega__op *wop = slot_watch(s);
        if (wop && (err || (got & (wop->events | EPOLLRDHUP)))) {
            struct vega__op *op = wop;
            op->res = (int)(got & (op->events | POLLERR | POLLHUP | POLLRDHUP));
            ops++;
            vega__watch_event(op);
        }
        /* One-shot waits left, or a watch whose registration still carries a finished wait's
         * interest: re-arm. A lone watch stays armed as it is (edge-triggered). */
        if (slot_watch(s) ? done_io : (s->in || s->out))
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
