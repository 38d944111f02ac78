/* SPDX-License-Identifier: MIT */
/* The io_uring driver: one ring per worker (SINGLE_ISSUER and DEFER_TASKRUN where the kernel
 * has them, probed at start), submissions batched until the worker parks or polls, an eventfd
 * watched by a multishot poll to wake a parked worker from other threads. */
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#include "sched_int.h"

#define RING_ENTRIES 256
#define WAKE_TOKEN 1ull   /* user_data of the eventfd poll */
#define IGNORE_TOKEN 2ull /* user_data of cancel requests */
#define WATCH_TAG 1ull    /* low bits of a watch's user_data (ops are 8-aligned) */
#define REMOVE_TAG 2ull   /* low bits of the user_data of a watch's removal request */

struct uring_drv {
    struct io_uring ring;
    int evfd;
    uint64_t evbuf;
    bool wake_armed;
    bool multishot;
    unsigned pending; /* SQEs not yet submitted */
};

static unsigned setup_flags_ladder[] = {
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
    IORING_SETUP_COOP_TASKRUN,
    0,
};

static struct io_uring_sqe *get_sqe(struct uring_drv *d)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&d->ring);
    if (!sqe) {
        io_uring_submit(&d->ring);
        d->pending = 0;
        sqe = io_uring_get_sqe(&d->ring);
    }
    if (sqe)
        d->pending++;
    return sqe;
}

static void arm_wake(struct uring_drv *d)
{
    if (d->wake_armed)
        return;
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    if (d->multishot)
        io_uring_prep_poll_multishot(sqe, d->evfd, POLLIN);
    else
        io_uring_prep_poll_add(sqe, d->evfd, POLLIN);
    io_uring_sqe_set_data64(sqe, WAKE_TOKEN);
    d->wake_armed = true;
}

static int ur_init(struct vega__worker *w)
{
    struct uring_drv *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    int r = -ENOSYS;
    /* A multi-thread worker owns its thread for life, so its ring can be SINGLE_ISSUER: created
     * disabled here, enabled (and so bound) on the worker thread. A current-thread runtime runs
     * on whichever thread calls block_on, so it starts lower on the ladder. */
    size_t first = w->rt->opts.flavor == VEGA_RT_CURRENT_THREAD ? 2 : 0;
    for (size_t i = first; i < VEGA__ARRAY_LEN(setup_flags_ladder); i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = setup_flags_ladder[i] | IORING_SETUP_CLAMP;
        if (p.flags & IORING_SETUP_SINGLE_ISSUER)
            p.flags |= IORING_SETUP_R_DISABLED;
        r = io_uring_queue_init_params(RING_ENTRIES, &d->ring, &p);
        if (r == 0)
            break;
        if (r != -EINVAL)
            break; /* EPERM/ENOSYS (seccomp, sysctl): no io_uring at all */
    }
    if (r < 0) {
        free(d);
        return r;
    }
    d->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (d->evfd < 0) {
        r = -errno;
        io_uring_queue_exit(&d->ring);
        free(d);
        return r;
    }
    d->multishot = true;
    vega__worker_set_driver_data(w, d);
    return 0;
}

/* The ring is created disabled when SINGLE_ISSUER is on; the first park on the owning thread
 * enables it, which makes that thread the ring's only submitter. */
static void ensure_enabled(struct uring_drv *d)
{
    if (d->ring.flags & IORING_SETUP_R_DISABLED) {
        /* liburing 2.3 declares io_uring_enable_rings but does not export it. */
        syscall(__NR_io_uring_register, d->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
        d->ring.flags &= ~IORING_SETUP_R_DISABLED;
    }
}

static void ur_fini(struct vega__worker *w)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    if (!d)
        return;
    io_uring_queue_exit(&d->ring);
    close(d->evfd);
    free(d);
    vega__worker_set_driver_data(w, NULL);
}

/* A watch is a multishot poll; it is re-armed whenever the kernel ends it (no F_MORE), until
 * unwatch asked for its removal. */
static void arm_watch(struct uring_drv *d, struct vega__op *op)
{
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    io_uring_prep_poll_multishot(sqe, op->fd, op->events);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
}

/* A watch being removed ends when its poll sent its last CQE and no removal request is still
 * unanswered (a late answer must not find the op's memory reused). */
static void watch_maybe_gone(struct vega__op *op)
{
    if (op->poll_ended && op->removes == 0) {
        op->res = VEGA__WATCH_GONE;
        op->on_complete(op);
    }
}

static void watch_event(struct uring_drv *d, struct vega__op *op, struct io_uring_cqe *cqe)
{
    bool more = cqe->flags & IORING_CQE_F_MORE;
    if (op->unwatching) {
        if (!more) {
            op->poll_ended = true;
            watch_maybe_gone(op);
        }
        return;
    }
    if (cqe->res > 0) {
        op->res = cqe->res;
        op->on_complete(op);
    } else if (cqe->res < 0 && cqe->res != -ECANCELED) {
        op->res = POLLERR;
        op->on_complete(op);
    }
    if (!more)
        arm_watch(d, op);
}

/* Asks the kernel to end a watch's multishot poll. Its answer comes back tagged REMOVE_TAG: a
 * poll caught in the middle of posting an event answers -EALREADY and stays armed, so the
 * removal is asked again (see reap) until the poll's last CQE (no F_MORE) arrives. */
static void remove_watch(struct uring_drv *d, struct vega__op *op)
{
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | REMOVE_TAG);
    op->removes++;
}

static void reap(struct vega__worker *w, struct uring_drv *d)
{
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    bool locked = false;
    io_uring_for_each_cqe(&d->ring, head, cqe)
    {
        n++;
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        if (ud == WAKE_TOKEN) {
            ssize_t rr = read(d->evfd, &d->evbuf, sizeof d->evbuf);
            (void)rr;
            if (cqe->res < 0)
                d->multishot = false; /* kernel without multishot poll: re-arm each time */
            if (!(cqe->flags & IORING_CQE_F_MORE))
                d->wake_armed = false;
            continue;
        }
        if (ud == IGNORE_TOKEN || ud == 0)
            continue;
        if (!locked) {
            vega__spin_lock(&w->cancel_lock);
            locked = true;
        }
        if (ud & WATCH_TAG) {
            watch_event(d, (struct vega__op *)(uintptr_t)(ud & ~WATCH_TAG), cqe);
            continue;
        }
        if (ud & REMOVE_TAG) {
            struct vega__op *op = (struct vega__op *)(uintptr_t)(ud & ~REMOVE_TAG);
            op->removes--;
            if (cqe->res == -EALREADY && !op->poll_ended)
                remove_watch(d, op);
            else
                watch_maybe_gone(op);
            continue;
        }
        vega__op_complete((struct vega__op *)(uintptr_t)ud, cqe->res);
    }
    if (locked)
        vega__spin_unlock(&w->cancel_lock);
    io_uring_cq_advance(&d->ring, n);
}

static void ur_park(struct vega__worker *w, int64_t timeout_ns)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    ensure_enabled(d);
    arm_wake(d);
    struct io_uring_cqe *cqe = NULL;
    if (timeout_ns == 0) {
        if (d->pending || (d->ring.flags & IORING_SETUP_DEFER_TASKRUN))
            io_uring_submit_and_get_events(&d->ring);
        d->pending = 0;
    } else if (timeout_ns < 0) {
        io_uring_submit_and_wait(&d->ring, 1);
        d->pending = 0;
    } else {
        struct __kernel_timespec ts = {.tv_sec = timeout_ns / (int64_t)VEGA_NS_PER_S,
                                       .tv_nsec = timeout_ns % (int64_t)VEGA_NS_PER_S};
        io_uring_submit_and_wait_timeout(&d->ring, &cqe, 1, &ts, NULL);
        d->pending = 0;
    }
    reap(w, d);
}

static void ur_unpark(struct vega__worker *w)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    uint64_t one = 1;
    ssize_t r = write(d->evfd, &one, sizeof one);
    (void)r;
}

static int ur_poll_start(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    ensure_enabled(d);
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return -EAGAIN;
    io_uring_prep_poll_add(sqe, op->fd, op->events);
    io_uring_sqe_set_data(sqe, op);
    return 0;
}

static int ur_submit(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    ensure_enabled(d);
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return -EAGAIN;
    op->prep(sqe, op);
    io_uring_sqe_set_data(sqe, op);
    return 0;
}

static int ur_watch(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    ensure_enabled(d);
    op->unwatching = false;
    op->poll_ended = false;
    op->removes = 0;
    arm_watch(d, op);
    return 0;
}

static void ur_unwatch(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    op->unwatching = true;
    /* The poll's last CQE (-ECANCELED, no F_MORE) ends the watch: see watch_event. */
    remove_watch(d, op);
    io_uring_submit(&d->ring);
    d->pending = 0;
}

static void ur_cancel(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    io_uring_prep_cancel(sqe, op, 0);
    io_uring_sqe_set_data64(sqe, IGNORE_TOKEN);
    /* Submit now: the op completes (with -ECANCELED) only when the kernel saw the cancel. */
    io_uring_submit(&d->ring);
    d->pending = 0;
}

const struct vega__driver_ops vega__driver_uring = {
    .name = "uring",
    .init = ur_init,
    .fini = ur_fini,
    .park = ur_park,
    .unpark = ur_unpark,
    .poll_start = ur_poll_start,
    .submit = ur_submit,
    .watch = ur_watch,
    .unwatch = ur_unwatch,
    .cancel = ur_cancel,
};
