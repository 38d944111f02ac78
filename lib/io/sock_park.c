/* SPDX-License-Identifier: MIT */
/* Parked sockets: an idle connection waits on a watch (a persistent registration), with no task,
 * no buffer of its own and no syscall per wait. On io_uring the watch is a receive into the
 * worker's provided-buffer ring: the bytes that wake the connection are already read when its
 * task runs, and vega_sock_read takes them from there first. */
#include <poll.h>
#include <unistd.h>

#include "io_int.h"

static vega_sock *park_sock(struct vega__watch *w)
{
    return VEGA__CONTAINER_OF(w, vega_sock, park.watch);
}

static void on_ready(struct vega__watch *w, int status)
{
    vega_sock *s = park_sock(w);
    s->flags &= ~(unsigned)VEGA__SOCK_PARKED;
    if (status > 0)
        s->hup |= (uint16_t)((unsigned)status & (POLLRDHUP | POLLHUP | POLLERR));
    s->park.fn(s, s->park.arg, status);
}

int vega_sock_park(vega_sock *s, vega_sock_ready_fn fn, void *arg, vega_deadline idle_dl)
{
    struct vega__sock_park *p = &s->park;
    if (s->flags & VEGA__SOCK_PARKED)
        return -EBUSY;
    s->flags |= VEGA__SOCK_WATCHED | VEGA__SOCK_PARKED;
    p->fn = fn;
    p->arg = arg;
    if (s->hup && p->watch.registered)
        vega__watch_set_ready(&p->watch, POLLIN | s->hup);
    /* Datagram sockets are read with recvfrom and friends, which a receive would overtake. */
    bool ring = s->type == SOCK_STREAM && !(s->flags & VEGA__SOCK_NO_RING);
    int r = vega__watch_arm(&p->watch, s->fd, POLLIN | POLLRDHUP, idle_dl,
                            ring ? VEGA__WATCH_ARM_RECV : 0, on_ready);
    if (r < 0)
        s->flags &= ~(unsigned)VEGA__SOCK_PARKED;
    return r;
}

void vega_sock_set_direct_read(vega_sock *s)
{
    if (s)
        vega__sock_park_no_ring(s);
}

/* The watch's home let go of it: now the fd may close and the memory go. */
static void park_gone(struct vega__watch *w)
{
    vega__sock_free(park_sock(w));
}

bool vega__sock_park_close(vega_sock *s)
{
    if (!(s->flags & VEGA__SOCK_WATCHED) || !s->park.watch.registered)
        return false;
    vega__watch_close(&s->park.watch, park_gone);
    return true;
}

vega_ssize vega__sock_park_read(vega_sock *s, void *buf, size_t len, vega_deadline dl)
{
    return vega__watch_read(&s->park.watch, buf, len, dl);
}

bool vega__sock_park_holds(const vega_sock *s)
{
    return (s->flags & VEGA__SOCK_WATCHED) && vega__watch_holds(&s->park.watch);
}
