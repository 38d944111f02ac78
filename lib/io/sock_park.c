/* SPDX-License-Identifier: MIT */
/* Parked sockets: an idle connection waits on a watch (a persistent registration), with no task,
 * no buffer of its own and no syscall per wait. On io_uring the watch is a receive into the
 * worker's provided-buffer ring: the bytes that wake the connection are already read when its
 * task runs, and vega_sock_read takes them from there first. */
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "io_int.h"

struct vega__sock_park {
    struct vega__watch watch;
    vega_sock *sock;
    vega_sock_ready_fn fn;
    void *arg;
    bool parked;
    /* The peer hung up (or the socket failed) while we watched: no new readiness event will
     * ever say so again, so every later park fires at once. */
    unsigned hup;
};

static void on_ready(struct vega__watch *w, int status)
{
    struct vega__sock_park *p = VEGA__CONTAINER_OF(w, struct vega__sock_park, watch);
    p->parked = false;
    if (status > 0)
        p->hup |= (unsigned)status & (POLLRDHUP | POLLHUP | POLLERR);
    p->fn(p->sock, p->arg, status);
}

int vega_sock_park(vega_sock *s, vega_sock_ready_fn fn, void *arg, vega_deadline idle_dl)
{
    if (!s->park) {
        s->park = calloc(1, sizeof *s->park);
        if (!s->park)
            return -ENOMEM;
    }
    struct vega__sock_park *p = s->park;
    if (p->parked)
        return -EBUSY;
    p->sock = s;
    p->fn = fn;
    p->arg = arg;
    p->parked = true;
    if (p->hup && p->watch.registered)
        vega__watch_set_ready(&p->watch, POLLIN | p->hup);
    /* Datagram sockets are read with recvfrom and friends, which a receive would overtake. */
    bool ring = s->type == SOCK_STREAM && !(s->flags & VEGA__SOCK_NO_RING);
    int r = vega__watch_arm(&p->watch, s->fd, POLLIN | POLLRDHUP, idle_dl,
                            ring ? VEGA__WATCH_ARM_RECV : 0, on_ready);
    if (r < 0)
        p->parked = false;
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
    struct vega__sock_park *p = VEGA__CONTAINER_OF(w, struct vega__sock_park, watch);
    vega_sock *s = p->sock;
    vega__sock_free(s);
}

bool vega__sock_park_close(vega_sock *s)
{
    struct vega__sock_park *p = s->park;
    if (!p || !p->watch.registered)
        return false;
    p->sock = s;
    vega__watch_close(&p->watch, park_gone);
    return true;
}

vega_ssize vega__sock_park_read(vega_sock *s, void *buf, size_t len, vega_deadline dl)
{
    return vega__watch_read(&s->park->watch, buf, len, dl);
}

bool vega__sock_park_holds(const vega_sock *s)
{
    return s->park && vega__watch_holds(&s->park->watch);
}
