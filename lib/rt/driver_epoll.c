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

/*
 * One slot per fd and worker, so one per idle connection on every worker that ever waited on
 * it (with two workers an fd's number is often used on both): 8 bytes, a tagged word. Ops and
 * records are at least 4-byte aligned, so the two low bits are tags:
 *
 *   0                 empty: the fd is not registered with this epoll
 *   SLOT_REG          empty but registered, disarmed (kept to save a syscall next time)
 *   watch | SLOT_REG  a watch alone (an idle connection: its persistent edge-triggered
 *                     registration)
 *   rec | SLOT_REC    a struct fdrec {in, out, watch}, only while a one-shot reader or writer
 *   (| SLOT_REG)      waits; back to one of the forms above when the last of them leaves
 */
typedef uintptr_t fdslot;

#define SLOT_REG  ((uintptr_t)1)
#define SLOT_REC  ((uintptr_t)2)
#define SLOT_TAGS (SLOT_REG | SLOT_REC)

/* What waits on an fd while a one-shot reader or writer does. */
struct fdrec {
    struct vega__op *in, *out; /* waiting reader / writer (one-shot) */
    struct vega__op *watch;    /* the persistent edge-triggered registration, or NULL */
    struct fdrec *next;        /* in the worker's free list */
};

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(fdslot) <= 8, "fdslot grew: every idle connection on epoll has one");
_Static_assert(sizeof(struct fdrec) <= 32, "fdrec grew past a 32-byte malloc chunk");
#endif
_Static_assert(_Alignof(struct vega__op) >= 4 && _Alignof(struct fdrec) >= 4,
               "fdslot keeps two tag bits in an op or record pointer");

/* Records given back are kept per worker up to this many (the rest are freed): one park's
 * batch of events frees at most one record per event, so the tasks it wakes take theirs back
 * without a malloc when they wait again. */
#define REC_CACHE MAX_EVENTS

/* A slot decoded. */
struct fdview {
    struct vega__op *in, *out, *watch;
    bool reg; /* registered with epoll at all */
};

/* The slots come in pages of SLOT_PAGE, each allocated when an fd in its range is first used:
 * growing one array by doubling would copy and touch it all (a 10,000th connection made the
 * table 16,384 slots at once), and a table is never shrunk. */
#define SLOT_PAGE 1024u

struct epoll_drv {
    int epfd;
    int evfd;
    fdslot **pages;
    size_t npages;
    struct fdrec *free_recs;
    unsigned nfree;
    struct epoll_event events[MAX_EVENTS];
};

static struct fdrec *slot_rec(fdslot s)
{
    return (s & SLOT_REC) ? (struct fdrec *)(s & ~SLOT_TAGS) : NULL;
}

static struct fdview slot_view(fdslot s)
{
    struct fdview v = {.reg = s & SLOT_REG};
    struct fdrec *rec = slot_rec(s);
    if (rec) {
        v.in = rec->in;
        v.out = rec->out;
        v.watch = rec->watch;
    } else {
        v.watch = (struct vega__op *)(s & ~SLOT_TAGS);
    }
    return v;
}

/* A record from the free list, else from malloc; NULL when out of memory. */
static struct fdrec *rec_take(struct epoll_drv *d)
{
    struct fdrec *rec = d->free_recs;
    if (!rec)
        return malloc(sizeof *rec);
    d->free_recs = rec->next;
    d->nfree--;
    return rec;
}

static void rec_give(struct epoll_drv *d, struct fdrec *rec)
{
    if (d->nfree >= REC_CACHE) {
        free(rec);
        return;
    }
    rec->next = d->free_recs;
    d->free_recs = rec;
    d->nfree++;
}

/* Stores v in *s: in rec (the slot's own record or a fresh one) while a reader or writer
 * waits, else in the word itself, the slot's record going back to the free list. */
static void slot_store(struct epoll_drv *d, fdslot *s, const struct fdview *v, struct fdrec *rec)
{
    uintptr_t reg = v->reg ? SLOT_REG : 0;
    struct fdrec *old = slot_rec(*s);
    if (v->in || v->out) {
        VEGA_ASSERT(rec && (!old || old == rec));
        rec->in = v->in;
        rec->out = v->out;
        rec->watch = v->watch;
        *s = (uintptr_t)rec | SLOT_REC | reg;
        return;
    }
    if (old)
        rec_give(d, old);
    *s = (uintptr_t)v->watch | reg;
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
    for (size_t i = 0; i < d->npages; i++) {
        if (!d->pages[i])
            continue;
        for (size_t j = 0; j < SLOT_PAGE; j++)
            free(slot_rec(d->pages[i][j]));
        free(d->pages[i]);
    }
    free(d->pages);
    while (d->free_recs) {
        struct fdrec *rec = d->free_recs;
        d->free_recs = rec->next;
        free(rec);
    }
    free(d);
    vega__worker_set_driver_data(w, NULL);
}

/* fd's slot, or NULL when it has none (never used). */
static fdslot *slot_get(struct epoll_drv *d, int fd)
{
    size_t p = (size_t)fd / SLOT_PAGE;
    if (fd < 0 || p >= d->npages || !d->pages[p])
        return NULL;
    return &d->pages[p][(size_t)fd % SLOT_PAGE];
}

/* fd's slot, made when missing; NULL when out of memory. fd >= 0. */
static fdslot *slot_for(struct epoll_drv *d, int fd)
{
    size_t p = (size_t)fd / SLOT_PAGE;
    if (p >= d->npages) {
        size_t n = d->npages ? d->npages : 16;
        while (n <= p)
            n *= 2;
        fdslot **pages = realloc(d->pages, n * sizeof *pages);
        if (!pages)
            return NULL;
        memset(pages + d->npages, 0, (n - d->npages) * sizeof *pages);
        d->pages = pages;
        d->npages = n;
    }
    if (!d->pages[p]) {
        d->pages[p] = calloc(SLOT_PAGE, sizeof(fdslot));
        if (!d->pages[p])
            return NULL;
    }
    return &d->pages[p][(size_t)fd % SLOT_PAGE];
}

/* (Re)arms fd for the union of what its waiters want: one-shot for plain waits; with a watch,
 * a persistent edge-triggered registration (a MOD re-reports current readiness, so a waiter
 * that registers after an edge still hears of it). Sets v->reg on success. */
static int arm(struct epoll_drv *d, int fd, struct fdview *v)
{
    uint32_t want = 0;
    if (v->in)
        want |= v->in->events;
    if (v->out)
        want |= v->out->events;
    struct epoll_event ev = {.data.u64 = (uint64_t)fd};
    if (v->watch) {
        want |= v->watch->events;
        ev.events = EPOLLET | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
    } else {
        ev.events = EPOLLONESHOT | (want & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP));
        /* With nothing wanted the fd stays registered, disarmed, to save a syscall next time. */
    }
    int op = v->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
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
    v->reg = true;
    return 0;
}

/* Re-arms fd for what *s holds now and stores the registration (no waiter added: never needs a
 * new record). On failure the slot stays as it was. */
static void rearm(struct epoll_drv *d, int fd, fdslot *s)
{
    struct fdview v = slot_view(*s);
    if (arm(d, fd, &v) == 0)
        slot_store(d, s, &v, slot_rec(*s));
}

static int ep_poll_start(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    if (op->kind != VEGA__WATCH_POLL)
        return -ENOTSUP;
    if (op->fd < 0)
        return -EBADF;
    fdslot *s = slot_for(d, op->fd);
    if (!s)
        return -ENOMEM;
    struct fdview v = slot_view(*s);
    bool reader = op->events & (POLLIN | POLLPRI | POLLRDHUP);
    if (reader ? v.in != NULL : v.out != NULL)
        return -EBUSY; /* one reader and one writer per fd and worker */
    struct fdrec *rec = slot_rec(*s);
    bool fresh = !rec;
    if (fresh && !(rec = rec_take(d)))
        return -ENOMEM;
    if (reader)
        v.in = op;
    else
        v.out = op;
    int r = arm(d, op->fd, &v);
    if (r < 0) {
        if (fresh)
            rec_give(d, rec);
        return r;
    }
    slot_store(d, s, &v, rec);
    return 0;
}

static int ep_watch(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    if (op->kind != VEGA__WATCH_POLL)
        return -ENOTSUP;
    if (op->fd < 0)
        return -EBADF;
    fdslot *s = slot_for(d, op->fd);
    if (!s)
        return -ENOMEM;
    struct fdview v = slot_view(*s);
    if (v.watch)
        return -EBUSY;
    v.watch = op;
    op->unwatching = false;
    int r = arm(d, op->fd, &v);
    if (r < 0)
        return r;
    slot_store(d, s, &v, slot_rec(*s));
    return 0;
}

static void ep_unwatch(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    fdslot *s = slot_get(d, op->fd);
    struct fdview v = s ? slot_view(*s) : (struct fdview){0};
    if (v.watch == op) {
        v.watch = NULL;
        if (v.in || v.out) {
            arm(d, op->fd, &v);
        } else if (v.reg) {
            epoll_ctl(d->epfd, EPOLL_CTL_DEL, op->fd, NULL);
            v.reg = false;
        }
        slot_store(d, s, &v, slot_rec(*s));
    }
    op->res = VEGA__WATCH_GONE;
    vega__watch_event(op);
}

static void ep_cancel(struct vega__worker *w, struct vega__op *op)
{
    struct epoll_drv *d = vega__worker_driver_data(w);
    fdslot *s = slot_get(d, op->fd);
    struct fdview v = s ? slot_view(*s) : (struct fdview){0};
    if (v.in == op || v.out == op) {
        if (v.in == op)
            v.in = NULL;
        else
            v.out = NULL;
        arm(d, op->fd, &v);
        slot_store(d, s, &v, slot_rec(*s));
    }
    vega__op_complete(op, -ECANCELED);
}

/* One event on fd: completes the waiters it satisfies. The slot is read again after each
 * completion (a watch's function may unwatch), never kept in a local across one. */
static uint64_t fd_event(struct epoll_drv *d, int fd, fdslot *s, uint32_t got)
{
    bool err = got & (EPOLLERR | EPOLLHUP);
    bool done_io = false;
    uint64_t ops = 0;
    struct fdview v = slot_view(*s);
    if (v.in && (err || (got & (v.in->events | EPOLLRDHUP)))) {
        struct vega__op *op = v.in;
        v.in = NULL;
        slot_store(d, s, &v, slot_rec(*s));
        done_io = true;
        ops++;
        vega__op_complete(op, (int)(got & (op->events | POLLERR | POLLHUP | POLLRDHUP)));
        v = slot_view(*s);
    }
    if (v.out && (err || (got & v.out->events))) {
        struct vega__op *op = v.out;
        v.out = NULL;
        slot_store(d, s, &v, slot_rec(*s));
        done_io = true;
        ops++;
        vega__op_complete(op, (int)(got & (op->events | POLLERR | POLLHUP)));
        v = slot_view(*s);
    }
    struct vega__op *wop = v.watch;
    if (wop && (err || (got & (wop->events | EPOLLRDHUP)))) {
        wop->res = (int)(got & (wop->events | POLLERR | POLLHUP | POLLRDHUP));
        ops++;
        vega__watch_event(wop);
        v = slot_view(*s);
    }
    /* One-shot waits left, or a watch whose registration still carries a finished wait's
     * interest: re-arm. A lone watch stays armed as it is (edge-triggered). */
    if (v.watch ? done_io : (v.in || v.out))
        rearm(d, fd, s);
    return ops;
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
        fdslot *s = slot_get(d, fd);
        if (!s)
            continue;
        /* the op lock per event, not per batch (see driver_uring.c) */
        vega__spin_lock(&w->cancel_lock);
        ops += fd_event(d, fd, s, ev->events);
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
