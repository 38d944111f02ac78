/* SPDX-License-Identifier: MIT */
/* Client connection migration (RFC 9000 §9): a new UDP socket (a new local port, or a given
 * local address) that the connection's datagrams may arrive on, the core told to probe the
 * new path with PATH_CHALLENGE, and the old socket kept until the new path is validated. The
 * send task settles the outcome (send.c): it moves the connection to the new socket, or closes
 * that socket when validation failed and the core went back to the old path. */
#include <string.h>

#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ep_int.h"

static bool same_addr(const vega_addr *a, const struct sockaddr_storage *ss, socklen_t len)
{
    return len == a->len && memcmp(&a->ss, ss, len) == 0;
}

vega_sock *vega__ep_migrate_via(struct ep_sock *home, struct vega_quic_ep_conn *c,
                                const vega_quic_path *p)
{
    if (c->mig && same_addr(&c->mig->local, &p->local, p->local_len))
        return c->mig->sock;
    return home->sock;
}

void vega__ep_migrate_abort(struct vega_quic_ep_conn *c)
{
    struct ep_sock *m = c->mig;
    if (!m)
        return;
    c->mig = NULL;
    atomic_store(&m->stop, true);
    vega_notify_one(&m->tx_wake);
}

/* The local address of a new socket: local, or the wildcard of the peer's family. */
static int local_for(const vega_addr *peer, const vega_addr *local, vega_addr *out)
{
    if (local) {
        if (local->ss.ss_family != peer->ss.ss_family)
            return -EINVAL;
        *out = *local;
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->ss.ss_family = peer->ss.ss_family;
    out->len =
        peer->ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    return 0;
}

int vega_quic_ep_conn_migrate(vega_quic_ep_conn *c, const vega_addr *local)
{
    if (!c || c->server)
        return -EINVAL;
    if (!c->qc || c->ended || c->close.closed)
        return VEGA_ERR_QUIC_EP_CLOSED;
    if (c->mig)
        return -EBUSY;
    if (c->home && c->home->relayed)
        return -EOPNOTSUPP; /* a new socket would leave the SOCKS5 relay behind */
    struct vega_quic_endpoint *ep = c->ep;
    if (atomic_load(&ep->shutting_down))
        return VEGA_ERR_CLOSED;
    vega_addr peer, la;
    vega_quic_ep_conn_peer(c, &peer);
    int rc = local_for(&peer, local, &la);
    if (rc < 0)
        return rc;
    struct ep_sock *s;
    if ((rc = vega__ep_sock_open(ep, &la, 0, false, -1, &s)) < 0)
        return rc;
    /* connected to the peer, as the first socket (client.c): ICMP errors, one source address */
    if (connect(vega_sock_fd(s->sock), (const struct sockaddr *)&peer.ss, peer.len) < 0 ||
        vega_sock_local_addr(s->sock, &s->local) < 0) {
        rc = -errno;
        vega__ep_sock_free(s);
        return rc;
    }
    s->wildcard = false;
    vega_quic_path path;
    memset(&path, 0, sizeof path);
    memcpy(&path.local, &s->local.ss, s->local.len);
    path.local_len = s->local.len;
    memcpy(&path.remote, &peer.ss, peer.len);
    path.remote_len = peer.len;
    /* the core checks what it must (handshake confirmed, the peer's disable_active_migration,
     * a spare connection ID of the peer's) before anything is started */
    if ((rc = vega_quic_conn_migrate(c->qc, &path)) < 0) {
        vega__ep_sock_free(s);
        return rc;
    }
    s->owner = c;
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); /* the socket's */
    atomic_init(&s->live_tasks, 2);
    atomic_fetch_add_explicit(&ep->client_socks, 1, memory_order_acq_rel);
    if ((rc = vega__ep_sock_start(s)) < 0) {
        /* the core probes a path nobody sends on: validation fails and the old path is back */
        atomic_fetch_sub_explicit(&ep->client_socks, 1, memory_order_acq_rel);
        vega_quic_ep_conn_release(c);
        vega__ep_sock_free(s);
        return rc;
    }
    vega_task_detach(s->tx_task);
    s->tx_task = NULL;
    c->mig = s;
    c->mig_outcome = 0;
    return 0;
}
