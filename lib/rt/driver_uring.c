/* SPDX-License-Identifier: MIT */
/* The io_uring driver: one ring per worker (SINGLE_ISSUER and DEFER_TASKRUN where the kernel
 * has them, probed at start), submissions batched until the worker parks or polls, an eventfd
 * watched by a multishot poll to wake a parked worker from other threads, multishot accept and
 * receives into a per-worker provided-buffer ring for watches. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>

#include "sched_int.h"

#define RING_ENTRIES 256
#define WAKE_TOKEN   1ull /* user_data of the eventfd poll */
#define IGNORE_TOKEN 2ull /* user_data of cancel requests */
#define WATCH_TAG    1ull /* low bits of a watch's user_data (ops are 8-aligned) */
#define REMOVE_TAG   2ull /* low bits of the user_data of a watch's removal request */

/* The provided-buffer ring of receive watches: shared by the worker's parked sockets, a buffer
 * is held only from the receive that filled it until its bytes were read. */
#define BR_ENTRIES 256
#define BR_SIZE    4096
#define BR_GROUP   0
/* Buffers one socket may hold before its multishot receive is stopped (its reader is slow: the
 * rest waits in the socket, under TCP's flow control, not in the ring). */
#define BR_HELD_MAX 4

struct uring_drv {
    struct io_uring ring;
    int evfd;
    uint64_t evbuf;
    bool wake_armed;
    bool multishot;
    bool ms_accept;   /* multishot accept (5.19, probed through IORING_OP_SOCKET of the same
                       * release: the flag itself cannot be probed) */
    int br_state;     /* provided-buffer ring: 0 not made yet, 1 made, -1 unavailable */
    bool ms_recv_off; /* the kernel refused a multishot receive: one-shot receives */
    struct io_uring_buf_ring *br;
    char *bufs;
    int32_t br_next[BR_ENTRIES]; /* held buffers: each socket's list, in arrival order */
    uint32_t br_len[BR_ENTRIES];
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
    struct io_uring_probe *probe = io_uring_get_probe_ring(&d->ring);
    if (probe) {
        d->ms_accept = io_uring_opcode_supported(probe, IORING_OP_SOCKET);
        io_uring_free_probe(probe);
    }
    if (vega__env()->uring_no_multishot_accept)
        d->ms_accept = false; /* tests and comparisons */
    if (vega__env()->uring_no_buf_ring)
        d->br_state = -1;
    vega__worker_set_driver_data(w, d);
    return 0;
}

/* Owner thread: the provided-buffer ring, made at the first receive watch (a runtime that
 * never parks a socket pays nothing). Returns false when the kernel has none (before 5.19). */
static bool ensure_buf_ring(struct uring_drv *d)
{
    if (d->br_state)
        return d->br_state > 0;
    d->br_state = -1;
    size_t ring_bytes = BR_ENTRIES * sizeof(struct io_uring_buf);
    void *mem = NULL;
    if (posix_memalign(&mem, 4096, ring_bytes) != 0)
        return false;
    memset(mem, 0, ring_bytes);
    char *bufs = malloc((size_t)BR_ENTRIES * BR_SIZE);
    if (!bufs) {
        free(mem);
        return false;
    }
    struct io_uring_buf_reg reg;
    memset(&reg, 0, sizeof reg);
    reg.ring_addr = (uint64_t)(uintptr_t)mem;
    reg.ring_entries = BR_ENTRIES;
    reg.bgid = BR_GROUP;
    if (io_uring_register_buf_ring(&d->ring, &reg, 0) < 0) {
        free(bufs);
        free(mem);
        return false;
    }
    d->br = mem;
    d->bufs = bufs;
    io_uring_buf_ring_init(d->br);
    for (unsigned i = 0; i < BR_ENTRIES; i++)
        io_uring_buf_ring_add(d->br, bufs + (size_t)i * BR_SIZE, BR_SIZE, (unsigned short)i,
                              io_uring_buf_ring_mask(BR_ENTRIES), (int)i);
    io_uring_buf_ring_advance(d->br, BR_ENTRIES);
    d->br_state = 1;
    return true;
}

/* Gives buffer bid back to the kernel. Any thread, owner's op lock held (it guards the tail). */
static void put_buf(struct uring_drv *d, int bid)
{
    io_uring_buf_ring_add(d->br, d->bufs + (size_t)bid * BR_SIZE, BR_SIZE, (unsigned short)bid,
                          io_uring_buf_ring_mask(BR_ENTRIES), 0);
    io_uring_buf_ring_advance(d->br, 1);
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
    free(d->br);
    free(d->bufs);
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

static void recv_arm(struct vega__worker *w, struct vega__op *op);

/* A watch being removed ends when the kernel sent its registration's last CQE and no removal
 * request is still unanswered (a late answer must not find the op's memory reused). */
static void watch_maybe_gone(struct vega__op *op)
{
    if (op->poll_ended && op->removes == 0) {
        op->res = VEGA__WATCH_GONE;
        vega__watch_event(op);
    }
}

/* Gives back every buffer op holds (owner's op lock held). */
static void release_held(struct uring_drv *d, struct vega__op *op)
{
    for (int32_t b = op->rb_bid; b >= 0; b = d->br_next[b])
        put_buf(d, b);
    op->rb_bid = op->rb_tail = -1;
    op->rb_held = 0;
    op->rb_off = 0;
}

static void arm_poll_instead(struct uring_drv *d, struct vega__op *op)
{
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    io_uring_prep_poll_add(sqe, op->fd, POLLIN | POLLRDHUP);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
    op->recv_armed = true;
    op->recv_poll = true;
}

/* A receive watch's receive (or the poll standing in for it) answered. */
static void recv_event(struct uring_drv *d, struct vega__op *op, struct io_uring_cqe *cqe)
{
    int res = cqe->res;
    int bid =
        (cqe->flags & IORING_CQE_F_BUFFER) ? (int)(cqe->flags >> IORING_CQE_BUFFER_SHIFT) : -1;
    bool more = cqe->flags & IORING_CQE_F_MORE;
    bool was_poll = op->recv_poll;
    if (!more) {
        op->recv_armed = false;
        op->recv_poll = false;
        op->recv_stopping = false;
    }
    if (op->unwatching) {
        if (bid >= 0)
            put_buf(d, bid);
        if (!more) {
            release_held(d, op);
            op->poll_ended = true;
            watch_maybe_gone(op);
        }
        return;
    }
    if (was_poll) {
        op->res = res > 0 ? res : POLLIN; /* readable: the reader receives by itself */
    } else if (res > 0 && bid >= 0) {
        /* Bytes in arrival order: appended to what the socket holds. */
        d->br_next[bid] = -1;
        d->br_len[bid] = (uint32_t)res;
        if (op->rb_tail >= 0)
            d->br_next[op->rb_tail] = bid;
        else
            op->rb_bid = bid;
        op->rb_tail = bid;
        op->rb_held++;
        if (more && op->rb_held >= BR_HELD_MAX && !op->recv_stopping) {
            struct io_uring_sqe *sqe = get_sqe(d);
            if (sqe) {
                io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG, 0);
                io_uring_sqe_set_data64(sqe, IGNORE_TOKEN);
                op->recv_stopping = true;
            }
        }
        op->res = POLLIN;
    } else if (res == -ENOBUFS || (res == -EINVAL && !d->ms_recv_off)) {
        if (res == -EINVAL)
            d->ms_recv_off = true; /* a kernel before 6.0: one-shot receives from now on */
        /* Every buffer is held by sockets whose bytes wait to be read: this one waits for
         * readiness instead, and its reader receives by itself. What it holds stays first. */
        if (!more && !op->recv_armed) {
            arm_poll_instead(d, op);
            if (op->recv_armed)
                return;
        }
        op->res = POLLIN;
    } else {
        if (bid >= 0)
            put_buf(d, bid);
        if (res == 0) {
            op->rb_end = 1;
            op->res = POLLIN | POLLRDHUP;
        } else if (res == -ECANCELED || res == -EINTR || res == -EAGAIN) {
            op->res = POLLIN; /* stopped: the reader finds out by itself */
        } else {
            op->rb_end = res;
            op->res = POLLIN | POLLERR;
        }
    }
    vega__watch_event(op);
}

/* Multishot accept: every fd goes to the owner, errors too unless we asked for the end. */
static void accept_event(struct vega__op *op, struct io_uring_cqe *cqe)
{
    if (cqe->res >= 0 || (cqe->res != -ECANCELED && !op->unwatching)) {
        op->res = cqe->res;
        vega__watch_event(op);
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) {
        op->poll_ended = true;
        watch_maybe_gone(op);
    }
}

static void watch_event(struct uring_drv *d, struct vega__op *op, struct io_uring_cqe *cqe)
{
    if (op->kind == VEGA__WATCH_RECV) {
        recv_event(d, op, cqe);
        return;
    }
    if (op->kind == VEGA__WATCH_ACCEPT) {
        accept_event(op, cqe);
        return;
    }
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
        vega__watch_event(op);
    } else if (cqe->res < 0 && cqe->res != -ECANCELED) {
        op->res = POLLERR;
        vega__watch_event(op);
    }
    if (!more)
        arm_watch(d, op);
}

/* Asks the kernel to end a watch's multishot request (poll, receive or accept). Its answer
 * comes back tagged REMOVE_TAG: a request caught in the middle of posting an event answers
 * -EALREADY and stays armed, so the removal is asked again (see reap) until the request's last
 * CQE (no F_MORE) arrives. */
static void remove_watch(struct uring_drv *d, struct vega__op *op)
{
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    /* Receives and accepts are cancelled; a cancel meets the same -EALREADY. */
    if (op->kind == VEGA__WATCH_POLL)
        io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
    else
        io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG, 0);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | REMOVE_TAG);
    op->removes++;
}

static void reap(struct vega__worker *w, struct uring_drv *d)
{
    struct io_uring_cqe *cqe;
    unsigned head, n = 0, ops = 0;
    io_uring_for_each_cqe(&d->ring, head, cqe)
    {
        n++;
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        ops += ud != WAKE_TOKEN && ud != IGNORE_TOKEN && ud != 0;
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
        /* The op lock for this completion alone, not the whole batch: a task whose op is done
         * takes it once before returning (vega__op_wait), and must not spin while the rest of
         * the batch (each wake-up perhaps an eventfd write) is handled. */
        vega__spin_lock(&w->cancel_lock);
        if (ud & WATCH_TAG) {
            watch_event(d, (struct vega__op *)(uintptr_t)(ud & ~WATCH_TAG), cqe);
        } else if (ud & REMOVE_TAG) {
            struct vega__op *op = (struct vega__op *)(uintptr_t)(ud & ~REMOVE_TAG);
            op->removes--;
            if (cqe->res == -EALREADY && !op->poll_ended)
                remove_watch(d, op);
            else
                watch_maybe_gone(op);
        } else {
            vega__op_complete((struct vega__op *)(uintptr_t)ud, cqe->res);
        }
        vega__spin_unlock(&w->cancel_lock);
    }
    io_uring_cq_advance(&d->ring, n);
    if (ops)
        vega__worker_count_completions(w, ops);
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
    if (op->kind == VEGA__WATCH_RECV) {
        if (!ensure_buf_ring(d))
            return -ENOTSUP;
        op->rb_bid = op->rb_tail = -1;
        recv_arm(w, op);
        return 0;
    }
    if (op->kind == VEGA__WATCH_ACCEPT) {
        if (!d->ms_accept)
            return -ENOTSUP;
        struct io_uring_sqe *sqe = get_sqe(d);
        if (!sqe)
            return -EAGAIN;
        /* Multishot accept cannot write per-connection addresses: getpeername gives them. */
        io_uring_prep_multishot_accept(sqe, op->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
        return 0;
    }
    arm_watch(d, op);
    return 0;
}

static void cancel_watch(struct uring_drv *d, struct vega__op *op)
{
    remove_watch(d, op);
    io_uring_submit(&d->ring);
    d->pending = 0;
}

static void ur_unwatch(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    op->unwatching = true;
    if (op->kind == VEGA__WATCH_RECV) {
        if (op->recv_armed) {
            cancel_watch(d, op); /* its answer (with a buffer, perhaps) ends the watch */
            return;
        }
        release_held(d, op); /* closed with bytes nobody read */
        op->res = VEGA__WATCH_GONE;
        vega__watch_event(op);
        return;
    }
    if (op->kind == VEGA__WATCH_ACCEPT) {
        cancel_watch(d, op); /* the last CQE (no F_MORE) ends the watch */
        return;
    }
    /* The poll's last CQE (-ECANCELED, no F_MORE) ends the watch: see watch_event. */
    remove_watch(d, op);
    io_uring_submit(&d->ring);
    d->pending = 0;
}

/* Owner thread, op lock held: a multishot receive into ring buffers the kernel picks when bytes
 * come (a buffer is taken only then, so a waiting socket holds none). It stays armed across
 * wake-ups until the socket holds BR_HELD_MAX buffers, the ring is empty or the stream ended. */
static void recv_arm(struct vega__worker *w, struct vega__op *op)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    struct io_uring_sqe *sqe = get_sqe(d);
    if (!sqe)
        return;
    if (d->ms_recv_off)
        io_uring_prep_recv(sqe, op->fd, NULL, BR_SIZE, 0);
    else
        io_uring_prep_recv_multishot(sqe, op->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BR_GROUP;
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | WATCH_TAG);
    op->recv_armed = true;
    op->recv_poll = false;
    op->recv_stopping = false;
}

static size_t recv_take(struct vega__worker *w, struct vega__op *op, void *buf, size_t len)
{
    struct uring_drv *d = vega__worker_driver_data(w);
    size_t done = 0;
    while (done < len && op->rb_bid >= 0) {
        int32_t b = op->rb_bid;
        size_t n = d->br_len[b] - op->rb_off;
        if (n > len - done)
            n = len - done;
        memcpy((char *)buf + done, d->bufs + (size_t)b * BR_SIZE + op->rb_off, n);
        done += n;
        op->rb_off += (uint32_t)n;
        if (op->rb_off == d->br_len[b]) {
            put_buf(d, b);
            op->rb_bid = d->br_next[b];
            if (op->rb_bid < 0)
                op->rb_tail = -1;
            op->rb_held--;
            op->rb_off = 0;
        }
    }
    return done;
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
    .recv_arm = recv_arm,
    .recv_take = recv_take,
};
