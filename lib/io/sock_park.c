/* SPDX-License-Identifier: MIT */
/* Parked sockets: an idle connection waits on a runtime hook, with no task and no buffer. */
#include <poll.h>
#include <stdlib.h>

#include "io_int.h"

struct vega__sock_park {
    struct vega__hook hook;
    vega_sock *sock;
    vega_sock_ready_fn fn;
    void *arg;
    bool parked;
};

static void on_ready(struct vega__hook *h, int status)
{
    struct vega__sock_park *p = VEGA__CONTAINER_OF(h, struct vega__sock_park, hook);
    p->parked = false;
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
    int r = vega__hook_arm(&p->hook, s->fd, POLLIN | POLLRDHUP, idle_dl, on_ready);
    if (r < 0)
        p->parked = false;
    return r;
}
