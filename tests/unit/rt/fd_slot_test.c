/* SPDX-License-Identifier: MIT */
/* One fd with a watch and one-shot waits beside it: a reader and a writer wait while the watch
 * is registered, complete, are cancelled or time out, and the watch still fires afterwards;
 * a closed fd's number reused finds no stale registration (epoll keeps these in an 8-byte
 * slot per fd and a record only while a reader or writer waits). */
#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vega/rt.h>

#include "sched_int.h"
#include "vtest.h"

struct watched {
    struct vega__watch w;
    atomic_int fired; /* status of the last fire, 0 before any */
    atomic_bool gone;
};

static void on_fire(struct vega__watch *w, int status)
{
    struct watched *x = VEGA__CONTAINER_OF(w, struct watched, w);
    atomic_store(&x->fired, status);
}

static void on_gone(struct vega__watch *w)
{
    struct watched *x = VEGA__CONTAINER_OF(w, struct watched, w);
    atomic_store(&x->gone, true);
}

struct wait_arg {
    int fd;
    uint32_t events;
    vega_deadline dl;
};

static void *waiter(void *arg)
{
    struct wait_arg *a = arg;
    return (void *)(intptr_t)vega__poll_fd(a->fd, a->events, a->dl);
}

static intptr_t join(vega_task *t)
{
    void *res = NULL;
    VCHECK_EQ(vega_task_join(t, &res, VEGA_DEADLINE_NEVER), 0);
    return (intptr_t)res;
}

/* Waits (bounded) until the watch fired, then clears the mark. */
static int wait_fired(struct watched *x)
{
    for (int i = 0; i < 5000 && !atomic_load(&x->fired); i++)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    return atomic_exchange(&x->fired, 0);
}

static void drain(int fd)
{
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    VCHECK(errno == EAGAIN);
}

/* Closes the watch and waits (bounded) until its home let go of it. */
static void close_watch(struct watched *x)
{
    vega__watch_close(&x->w, on_gone);
    for (int i = 0; i < 5000 && !atomic_load(&x->gone); i++)
        VCHECK_EQ(vega_sleep_ms(1), 0);
    VCHECK(atomic_load(&x->gone));
}

static void arm_watch(struct watched *x, int fd)
{
    VCHECK_EQ(vega__watch_arm(&x->w, fd, POLLIN | POLLRDHUP, VEGA_DEADLINE_NEVER, 0, on_fire), 0);
}

static void body_slot(void)
{
    int sv[2];
    VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    static struct watched x;
    memset(&x, 0, sizeof x);
    arm_watch(&x, sv[0]);

    /* A reader and a writer wait beside the watch. */
    static char fill[65536];
    while (write(sv[0], fill, sizeof fill) > 0)
        ;
    VCHECK(errno == EAGAIN);
    struct wait_arg ra = {sv[0], POLLIN, vega_deadline_in_ms(10000)};
    struct wait_arg wa = {sv[0], POLLOUT, vega_deadline_in_ms(10000)};
    vega_task *rt, *wt;
    VCHECK_EQ(vega_task_spawn(&rt, waiter, &ra), 0);
    VCHECK_EQ(vega_task_spawn(&wt, waiter, &wa), 0);
    VCHECK_EQ(write(sv[1], "x", 1), 1);
    VCHECK(join(rt) & POLLIN);
    VCHECK(wait_fired(&x) & POLLIN);
    drain(sv[1]); /* room to write again */
    VCHECK(join(wt) & POLLOUT);
    drain(sv[0]);

    /* Back to the watch alone: it still fires. The first arm may fire on what the watch kept
     * from before; the second can only fire on an event of its registration. */
    for (int i = 0; i < 2; i++) {
        arm_watch(&x, sv[0]);
        VCHECK_EQ(write(sv[1], "y", 1), 1);
        VCHECK(wait_fired(&x) & POLLIN);
        drain(sv[0]);
    }

    /* A cancelled reader and one that timed out leave no waiter behind: a third one waits and
     * is woken. */
    struct wait_arg never = {sv[0], POLLIN, VEGA_DEADLINE_NEVER};
    VCHECK_EQ(vega_task_spawn(&rt, waiter, &never), 0);
    vega_task_cancel(rt);
    VCHECK_EQ(join(rt), -ECANCELED);
    VCHECK_EQ(vega__poll_fd(sv[0], POLLIN, vega_deadline_in_ms(5)), -ETIMEDOUT);
    VCHECK_EQ(vega_task_spawn(&rt, waiter, &ra), 0);
    VCHECK_EQ(write(sv[1], "z", 1), 1);
    VCHECK(join(rt) & POLLIN);
    drain(sv[0]);

    /* The watch goes; the fd closes and its number comes back on a fresh socket. */
    close_watch(&x);
    int old = sv[0];
    VCHECK_EQ(close(sv[0]), 0);
    VCHECK_EQ(close(sv[1]), 0);
    VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    VCHECK_EQ(sv[0], old); /* the lowest free number */
    VCHECK(vega__poll_fd(sv[0], POLLOUT, vega_deadline_in_ms(10000)) & POLLOUT);
    /* Registered, disarmed, then closed under it: the next wait on the reused number too. */
    VCHECK_EQ(close(sv[0]), 0);
    VCHECK_EQ(close(sv[1]), 0);
    VCHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    VCHECK_EQ(sv[0], old);
    VCHECK(vega__poll_fd(sv[0], POLLOUT, vega_deadline_in_ms(10000)) & POLLOUT);
    memset(&x, 0, sizeof x);
    arm_watch(&x, sv[0]);
    VCHECK_EQ(write(sv[1], "w", 1), 1);
    VCHECK(wait_fired(&x) & POLLIN);
    close_watch(&x);
    close(sv[0]);
    close(sv[1]);
}

VTEST(watch_with_reader_and_writer)
{
    vtest_run(body_slot, 1);
}

VTEST(watch_with_reader_and_writer_two_workers)
{
    vtest_run(body_slot, 2);
}
